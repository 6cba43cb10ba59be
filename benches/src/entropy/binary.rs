//! Design (b): a binary arithmetic coder whose interval split is a
//! multiply (`bound = (range >> 12) · p`, LZMA's rc, the shipped coder's
//! decision step) over binarised symbols: a value's head symbol is a walk
//! down its context's Huffman-shaped tree ([`Heads::nodes`]), one
//! decision per node, so decoding needs no division (`Binary<true>`).
//! `Binary<false>` is design (c), the shipped coder with only its raw
//! bits moved out: the head stays one symbol over `2^15` (one division
//! per value). Both put raw bits in the separate stream of
//! [`raw`](super::raw) at the block's end.
//!
//! The flush picks the final value so that any bytes after the last one
//! written decode the same (the interval holds every continuation), so
//! the raw stream may start where the coded bytes end and the decoder's
//! four-byte lookahead may read into it.

#![forbid(unsafe_code)]

use tickpack::model::ModelTable;

use super::heads::{Heads, FREQ_BITS, LEAF};
use super::raw::{RawReader, RawWriter};
use super::{assemble, raw_count, value_slots, Coder, Kind, Parts, ProtoError, Token};

const PROB_BITS: u32 = 12;
const TOP: u32 = 1 << 24;

/// The binary coder of a table: heads as tree walks (`TREE`) or as one
/// symbol each; with `SHARE`, the raw stream's last partial byte shares
/// the coded stream's last byte when it fits in that byte's free bits.
#[derive(Debug)]
pub struct Binary<const TREE: bool, const SHARE: bool = false> {
    bits: Vec<u16>,
    heads: Vec<Heads>,
    raw: RawWriter,
}

/// The encoder's interval and bytes.
struct Enc<'a> {
    low: u64,
    range: u32,
    out: &'a mut Vec<u8>,
}

impl Enc<'_> {
    #[inline(always)]
    fn bit(&mut self, p0: u16, bit: bool) {
        let bound = (self.range >> PROB_BITS) * u32::from(p0);
        let m = u32::from(bit).wrapping_neg();
        self.low += u64::from(bound & m);
        self.range = (bound & !m) | ((self.range - bound) & m);
        while self.range < TOP {
            self.range <<= 8;
            self.shift();
        }
    }

    /// A head symbol whose share of `2^15` is `start..start + freq`.
    #[inline(always)]
    fn symbol(&mut self, start: u32, freq: u32) {
        let r = self.range >> FREQ_BITS;
        self.low += u64::from(r * start);
        self.range = r * freq;
        while self.range < TOP {
            self.range <<= 8;
            self.shift();
        }
    }

    #[inline(always)]
    fn shift(&mut self) {
        if self.low >= 1 << 32 {
            carry(self.out);
        }
        self.out.push((self.low >> 24) as u8);
        self.low = (self.low & 0x00ff_ffff) << 8;
    }

    /// The value with most trailing zero bits whose every continuation
    /// stays in the interval; the bytes wholly below its last significant
    /// bit (don't-care: the raw stream may take their place) are not
    /// written, every other byte is, even a zero one (the decoder does
    /// not read zeros past it). Returns the free low bits of the last
    /// byte written (which the raw stream's last byte may share).
    fn finish(mut self) -> u32 {
        let end = self.low + u64::from(self.range);
        let before = self.out.len();
        let mut free = 0;
        for j in (0..=32u32).rev() {
            let step = 1u64 << j;
            let v = (self.low + step - 1) & !(step - 1);
            if v + step <= end {
                self.low = v;
                free = j;
                break;
            }
        }
        for _ in 0..5 {
            self.shift();
        }
        // The fifth byte out is below the interval's bits: never needed;
        // of the four before it, those wholly free.
        let len = self.out.len() - (free / 8) as usize - 1;
        self.out.truncate(len);
        if free < 32 && len > before {
            free % 8
        } else {
            0
        }
    }
}

/// Adds one to `out` read as a big-endian number.
#[cold]
fn carry(out: &mut [u8]) {
    for b in out.iter_mut().rev() {
        let (sum, over) = b.overflowing_add(1);
        *b = sum;
        if !over {
            return;
        }
    }
}

/// The decoder's interval; reads zeros past the block.
struct Dec<'a> {
    block: &'a [u8],
    pos: usize,
    range: u32,
    code: u32,
}

impl Dec<'_> {
    #[inline(always)]
    fn bit(&mut self, p0: u16) -> bool {
        let bound = (self.range >> PROB_BITS) * u32::from(p0);
        let bit = self.code >= bound;
        let m = u32::from(bit).wrapping_neg();
        self.code -= bound & m;
        self.range = (bound & !m) | ((self.range - bound) & m);
        while self.range < TOP {
            self.range <<= 8;
            self.code =
                (self.code << 8) | u32::from(self.block.get(self.pos).copied().unwrap_or(0));
            self.pos += 1;
        }
        bit
    }

    /// A head symbol over `2^15`: one division. A target past the total
    /// (no encoder writes one) is an error.
    #[inline(always)]
    fn symbol(&mut self, h: &Heads) -> Result<u8, ProtoError> {
        let r = self.range >> FREQ_BITS;
        let target = self.code / r;
        if target >> FREQ_BITS != 0 {
            return Err(ProtoError::Truncated);
        }
        let (s, start, freq) = h.find(target);
        self.code -= r * start;
        self.range = r * freq;
        while self.range < TOP {
            self.range <<= 8;
            self.code =
                (self.code << 8) | u32::from(self.block.get(self.pos).copied().unwrap_or(0));
            self.pos += 1;
        }
        Ok(s as u8)
    }

    /// A head symbol: the tree walk from the root. A walk is at most the
    /// tree's depth (the children point down, built from the table).
    #[inline(always)]
    fn head(&mut self, h: &Heads) -> Result<u8, ProtoError> {
        let mut node = 0u8;
        for _ in 0..h.nodes.len() {
            let Some(&(p0, kids)) = h.nodes.get(usize::from(node)) else {
                break;
            };
            let c = kids[usize::from(self.bit(p0))];
            if c & LEAF != 0 {
                return Ok(c & !LEAF);
            }
            node = c;
        }
        Err(ProtoError::Truncated)
    }
}

impl<const TREE: bool, const SHARE: bool> Binary<TREE, SHARE> {
    /// The coder of `table`.
    pub fn new(table: &ModelTable) -> Self {
        let b = table.shape().bit_contexts as usize;
        Self {
            bits: table.probabilities()[..b].to_vec(),
            heads: (0..table.shape().value_contexts)
                .filter_map(|c| value_slots(table, c).map(Heads::new))
                .collect(),
            raw: RawWriter::default(),
        }
    }
}

impl<const TREE: bool, const SHARE: bool> Coder for Binary<TREE, SHARE> {
    fn encode(&mut self, tokens: &[Token], out: &mut Vec<u8>) {
        out.clear();
        self.raw.clear();
        let mut e = Enc {
            low: 0,
            range: u32::MAX,
            out,
        };
        for t in tokens {
            match t.kind {
                Kind::Bit => {
                    let p0 = self.bits.get(t.ctx as usize).copied().unwrap_or(2048);
                    e.bit(p0, t.value != 0);
                }
                Kind::Uint | Kind::Sint => {
                    let Some(h) = self.heads.get(t.ctx as usize) else {
                        continue;
                    };
                    let p = Parts::of(t.value, t.kind == Kind::Sint);
                    if TREE {
                        let (path, len) = h.paths[usize::from(p.head)];
                        let mut node = 0u8;
                        for k in 0..u32::from(len) {
                            let b = (path >> k) & 1;
                            let (p0, kids) = h.nodes[usize::from(node)];
                            e.bit(p0, b == 1);
                            node = kids[b as usize];
                        }
                    } else {
                        let (start, freq) = h.range(usize::from(p.head));
                        e.symbol(start, freq);
                    }
                    if let Some(top) = p.top {
                        e.bit(h.top, top);
                    }
                    self.raw.put(p.raw.1, p.raw.0);
                    if let Some(neg) = p.sign {
                        e.bit(h.sign, neg);
                    }
                }
            }
        }
        let free = e.finish();
        self.raw.finish_shared(out, if SHARE { free } else { 0 });
    }

    fn decode(
        &mut self,
        tokens: &[Token],
        block: &[u8],
        values: &mut Vec<u64>,
    ) -> Result<(), ProtoError> {
        values.clear();
        let mut code = 0u32;
        for k in 0..4 {
            code = (code << 8) | u32::from(block.get(k).copied().unwrap_or(0));
        }
        let mut d = Dec {
            block,
            pos: 4,
            range: u32::MAX,
            code,
        };
        let mut raw = RawReader::new(block);
        for t in tokens {
            let v = match t.kind {
                Kind::Bit => {
                    let p0 = *self
                        .bits
                        .get(t.ctx as usize)
                        .ok_or(ProtoError::Context { ctx: t.ctx })?;
                    u64::from(d.bit(p0))
                }
                Kind::Uint | Kind::Sint => {
                    let h = self
                        .heads
                        .get(t.ctx as usize)
                        .ok_or(ProtoError::Context { ctx: t.ctx })?;
                    let head = if TREE { d.head(h)? } else { d.symbol(h)? };
                    let top = head >= 124 && d.bit(h.top);
                    let bits = raw.get(raw_count(head, top));
                    let signed = t.kind == Kind::Sint;
                    let neg = signed && head != 0 && d.bit(h.sign);
                    assemble(head, top, bits, signed, neg)
                }
            };
            values.push(v);
        }
        let raw_len = if SHARE {
            raw.bytes_used()
        } else {
            raw.finish()?
        };
        // Every byte before the raw stream was needed (the lookahead may
        // overlap the raw stream).
        if raw_len > block.len() || d.pos + raw_len < block.len() {
            return Err(ProtoError::Trailing {
                len: block.len(),
                used: d.pos + raw_len,
            });
        }
        Ok(())
    }
}
