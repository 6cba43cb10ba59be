//! Design (a): rANS with lookup tables. Decisions are 2-symbol alphabets
//! over `2^12` (the table's 12-bit probabilities unchanged), head symbols
//! the table's `2^15` frequencies found through a bucket table; decoding
//! is a mask, a lookup, a multiply and a shift. `N` states (1 or 2) take
//! the symbols in turn; a state lives in `[2^LB, 2^(LB+8))` and is
//! renormalised a byte at a time. Raw bits go to the separate stream of
//! [`raw`](super::raw) at the block's end.
//!
//! Block: the `N` final encoder states (big-endian, `(LB + 8) / 8` bytes
//! each, state 0 first), the renormalisation bytes in decoding order,
//! then the raw stream reversed. The decoder checks each state read lies
//! in its interval, that the streams use exactly the block's bytes and
//! that every state ends where the encoder started (`2^LB`).

#![forbid(unsafe_code)]

use tickpack::model::ModelTable;

use super::heads::{Heads, FREQ_BITS};
use super::raw::{RawReader, RawWriter};
use super::{assemble, raw_count, value_slots, Coder, Kind, Parts, ProtoError, Token};

const PROB_BITS: u32 = 12;
const PROB_ONE: u32 = 1 << PROB_BITS;

/// rANS with `N` interleaved states in `[2^LB, 2^(LB + 8))`.
#[derive(Debug)]
pub struct Rans<const N: usize, const LB: u32> {
    bits: Vec<u16>,
    heads: Vec<Heads>,
    /// Per symbol of the packet, in coding order: start, frequency and
    /// the total's bits.
    ops: Vec<(u16, u16, u8)>,
    raw: RawWriter,
    rev: Vec<u8>,
}

impl<const N: usize, const LB: u32> Rans<N, LB> {
    const L: u32 = 1 << LB;
    /// Bytes of a flushed state.
    const STATE_BYTES: usize = (LB as usize + 8).div_ceil(8);

    /// The coder of `table`.
    pub fn new(table: &ModelTable) -> Self {
        assert!((1..=2).contains(&N) && (FREQ_BITS..=23).contains(&LB));
        let b = table.shape().bit_contexts as usize;
        Self {
            bits: table.probabilities()[..b].to_vec(),
            heads: (0..table.shape().value_contexts)
                .filter_map(|c| value_slots(table, c).map(Heads::new))
                .collect(),
            ops: Vec::new(),
            raw: RawWriter::default(),
            rev: Vec::new(),
        }
    }

    #[inline(always)]
    fn push_bit(ops: &mut Vec<(u16, u16, u8)>, p0: u16, bit: bool) {
        let p = u32::from(p0);
        let (start, freq) = if bit { (p, PROB_ONE - p) } else { (0, p) };
        ops.push((start as u16, freq as u16, PROB_BITS as u8));
    }

    /// Decodes a decision with chance `p0` of a 0 from `x`.
    #[inline(always)]
    fn get_bit(x: &mut u32, p0: u16, block: &[u8], pos: &mut usize) -> bool {
        let p = u32::from(p0);
        let slot = *x & (PROB_ONE - 1);
        let bit = slot >= p;
        let (start, freq) = if bit { (p, PROB_ONE - p) } else { (0, p) };
        *x = freq * (*x >> PROB_BITS) + slot - start;
        Self::refill(x, block, pos);
        bit
    }

    /// Decodes a head symbol of `h` from `x`.
    #[inline(always)]
    fn get_head(x: &mut u32, h: &Heads, block: &[u8], pos: &mut usize) -> u8 {
        let slot = *x & ((1 << FREQ_BITS) - 1);
        let (s, start, freq) = h.find(slot);
        *x = freq * (*x >> FREQ_BITS) + slot - start;
        Self::refill(x, block, pos);
        s as u8
    }

    /// Brings `x` back to at least `2^LB`, a byte at a time (zeros past
    /// the block; the end check catches them). Every step leaves `x` at
    /// least `2^(LB - 15)`, so at most two bytes.
    #[inline(always)]
    fn refill(x: &mut u32, block: &[u8], pos: &mut usize) {
        while *x < Self::L {
            *x = (*x << 8) | u32::from(block.get(*pos).copied().unwrap_or(0));
            *pos += 1;
        }
    }

    /// Takes the next state (the other of two, or the same one).
    #[inline(always)]
    fn turn(x: &mut [u32; 2]) {
        if N == 2 {
            x.swap(0, 1);
        }
    }
}

impl<const N: usize, const LB: u32> Coder for Rans<N, LB> {
    fn encode(&mut self, tokens: &[Token], out: &mut Vec<u8>) {
        self.ops.clear();
        self.raw.clear();
        for t in tokens {
            match t.kind {
                Kind::Bit => {
                    let p0 = self.bits.get(t.ctx as usize).copied().unwrap_or(2048);
                    Self::push_bit(&mut self.ops, p0, t.value != 0);
                }
                Kind::Uint | Kind::Sint => {
                    let Some(h) = self.heads.get(t.ctx as usize) else {
                        continue;
                    };
                    let p = Parts::of(t.value, t.kind == Kind::Sint);
                    let (start, freq) = h.range(usize::from(p.head));
                    self.ops.push((start as u16, freq as u16, FREQ_BITS as u8));
                    if let Some(top) = p.top {
                        Self::push_bit(&mut self.ops, h.top, top);
                    }
                    self.raw.put(p.raw.1, p.raw.0);
                    if let Some(neg) = p.sign {
                        Self::push_bit(&mut self.ops, h.sign, neg);
                    }
                }
            }
        }
        self.rev.clear();
        let mut x = [Self::L; N];
        for (i, &(start, freq, bits)) in self.ops.iter().enumerate().rev() {
            let x = &mut x[i % N];
            let (start, freq, bits) = (u32::from(start), u32::from(freq), u32::from(bits));
            let max = ((Self::L >> bits) << 8) * freq;
            while *x >= max {
                self.rev.push(*x as u8);
                *x >>= 8;
            }
            *x = ((*x / freq) << bits) + *x % freq + start;
        }
        for s in x.iter().rev() {
            for k in 0..Self::STATE_BYTES {
                self.rev.push((s >> (8 * k)) as u8);
            }
        }
        out.clear();
        out.extend(self.rev.iter().rev());
        self.raw.finish_into(out);
    }

    fn decode(
        &mut self,
        tokens: &[Token],
        block: &[u8],
        values: &mut Vec<u64>,
    ) -> Result<(), ProtoError> {
        values.clear();
        let mut pos = 0usize;
        let mut x = [Self::L; 2];
        for s in x.iter_mut().take(N) {
            let mut v = 0u32;
            for _ in 0..Self::STATE_BYTES {
                v = (v << 8) | u32::from(block.get(pos).copied().unwrap_or(0));
                pos += 1;
            }
            if !(Self::L..Self::L << 8).contains(&v) {
                return Err(ProtoError::State { state: v });
            }
            *s = v;
        }
        let mut raw = RawReader::new(block);
        for t in tokens {
            let v = match t.kind {
                Kind::Bit => {
                    let p0 = *self
                        .bits
                        .get(t.ctx as usize)
                        .ok_or(ProtoError::Context { ctx: t.ctx })?;
                    let bit = Self::get_bit(&mut x[0], p0, block, &mut pos);
                    Self::turn(&mut x);
                    u64::from(bit)
                }
                Kind::Uint | Kind::Sint => {
                    let h = self
                        .heads
                        .get(t.ctx as usize)
                        .ok_or(ProtoError::Context { ctx: t.ctx })?;
                    let head = Self::get_head(&mut x[0], h, block, &mut pos);
                    Self::turn(&mut x);
                    let top = head >= 124 && {
                        let b = Self::get_bit(&mut x[0], h.top, block, &mut pos);
                        Self::turn(&mut x);
                        b
                    };
                    let bits = raw.get(raw_count(head, top));
                    let signed = t.kind == Kind::Sint;
                    let neg = signed && (head != 0 || top) && {
                        let b = Self::get_bit(&mut x[0], h.sign, block, &mut pos);
                        Self::turn(&mut x);
                        b
                    };
                    assemble(head, top, bits, signed, neg)
                }
            };
            values.push(v);
        }
        let used = pos + raw.finish()?;
        if used != block.len() || x.iter().take(N).any(|&s| s != Self::L) {
            return Err(ProtoError::Trailing {
                len: block.len(),
                used,
            });
        }
        Ok(())
    }
}
