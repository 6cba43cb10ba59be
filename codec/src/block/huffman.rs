//! Trained static Huffman codes for block type 3 (the Quake 3 way).
//!
//! A table is a canonical prefix code over all 256 byte values with code
//! lengths 1..=15, complete (Kraft sum exactly 1), so every byte stays
//! encodable and every bit pattern decodes. It is stored as 256 four-bit
//! lengths (128 bytes) and attached to a [`Dictionary`](crate::Dictionary):
//! a packet's dictionary id names the table too.
//!
//! Block body: a varint with the regenerated length `n` (1..=32768), then the
//! codes of the `n` bytes, most significant bit first, zero-padded to a byte.
//! Decoding goes through an 11-bit lookup table, with a canonical decode for
//! longer codes.

use core::cmp::Reverse;
use std::collections::BinaryHeap;

/// Longest code.
pub(crate) const MAX_CODE_LEN: u8 = 15;
/// Bytes of a serialized table.
pub(crate) const TABLE_BYTES: usize = 128;
const LUT_BITS: u32 = 12;

/// Why a table or a Huffman block was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HuffmanError {
    /// A serialized table is not 128 bytes.
    TableSize {
        /// Bytes given.
        actual: usize,
    },
    /// A code length is 0 or above 15.
    BadLength {
        /// The byte value.
        symbol: u8,
        /// Its length.
        length: u8,
    },
    /// The lengths do not form a complete prefix code (Kraft sum ≠ 1).
    Incomplete,
    /// The bitstream ended before `n` symbols were decoded.
    Truncated,
    /// A block claims 0 symbols, more than 32768, or more than its bits
    /// could hold (every code is at least one bit).
    BadCount {
        /// Symbols claimed.
        count: usize,
    },
    /// Bytes (or non-zero padding bits) follow the last code.
    Trailing,
}

impl core::fmt::Display for HuffmanError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::TableSize { actual } => {
                write!(f, "Huffman table is {actual} bytes, not {TABLE_BYTES}")
            }
            Self::BadLength { symbol, length } => {
                write!(
                    f,
                    "byte {symbol} has code length {length}, not 1..={MAX_CODE_LEN}"
                )
            }
            Self::Incomplete => write!(f, "code lengths do not form a complete prefix code"),
            Self::Truncated => write!(f, "Huffman stream ends early"),
            Self::BadCount { count } => write!(f, "Huffman block claims {count} symbols"),
            Self::Trailing => write!(f, "data after the last Huffman code"),
        }
    }
}

impl std::error::Error for HuffmanError {}

/// A canonical Huffman code over bytes, ready to encode and decode.
#[derive(Clone, PartialEq, Eq)]
pub struct HuffmanTable {
    lengths: [u8; 256],
    codes: [u16; 256],
    /// Per `LUT_BITS`-bit window: `sym1 | sym2 << 8 | bits << 16 | count << 24`,
    /// two symbols when both codes fit the window, 0 where the first code
    /// is longer than the window.
    lut: Vec<u32>,
    /// Per length: first canonical code, index of its first symbol, count.
    first_code: [u32; 16],
    first_index: [u16; 16],
    count: [u16; 16],
    /// Symbols ordered by (length, value).
    sorted: [u8; 256],
}

impl core::fmt::Debug for HuffmanTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let max = self.lengths.iter().max().copied().unwrap_or(0);
        f.debug_struct("HuffmanTable")
            .field("max_len", &max)
            .finish()
    }
}

impl HuffmanTable {
    /// Bytes of a serialized table ([`HuffmanTable::to_bytes`]).
    pub const SERIALIZED_LEN: usize = TABLE_BYTES;
    /// Longest code, in bits.
    pub const MAX_CODE_LEN: u8 = MAX_CODE_LEN;

    /// Builds a length-limited code from byte counts. Every count is raised
    /// by one first, so byte values unseen in training stay encodable.
    pub fn from_counts(counts: &[u64; 256]) -> Self {
        let mut freq: Vec<u64> = counts.iter().map(|&c| c.saturating_add(1)).collect();
        loop {
            let lengths = huffman_lengths(&freq);
            if lengths.iter().all(|&l| l <= MAX_CODE_LEN) {
                // Huffman lengths over 256 positive weights form a complete code.
                if let Ok(t) = Self::from_lengths(&lengths) {
                    return t;
                }
            }
            // Flatten the distribution until the longest code fits.
            for f in &mut freq {
                *f = (*f >> 1) | 1;
            }
        }
    }

    /// Builds the canonical code from 256 lengths (1..=15, complete).
    pub fn from_lengths(lengths: &[u8; 256]) -> Result<Self, HuffmanError> {
        let mut count = [0u16; 16];
        for (s, &l) in lengths.iter().enumerate() {
            if l == 0 || l > MAX_CODE_LEN {
                return Err(HuffmanError::BadLength {
                    symbol: s as u8,
                    length: l,
                });
            }
            count[usize::from(l)] += 1;
        }
        let kraft: u32 = (1..=15).map(|l| u32::from(count[l]) << (15 - l)).sum();
        if kraft != 1 << 15 {
            return Err(HuffmanError::Incomplete);
        }
        let mut first_code = [0u32; 16];
        let mut first_index = [0u16; 16];
        let (mut code, mut index) = (0u32, 0u16);
        for l in 1..=15 {
            code <<= 1;
            first_code[l] = code;
            first_index[l] = index;
            code += u32::from(count[l]);
            index += count[l];
        }
        let mut sorted = [0u8; 256];
        let mut next = first_index;
        let mut codes = [0u16; 256];
        let mut next_code = first_code;
        for l in 1..=15u8 {
            for s in 0..=255u8 {
                if lengths[usize::from(s)] == l {
                    sorted[usize::from(next[usize::from(l)])] = s;
                    next[usize::from(l)] += 1;
                    codes[usize::from(s)] = next_code[usize::from(l)] as u16;
                    next_code[usize::from(l)] += 1;
                }
            }
        }
        let mut t = Self {
            lengths: *lengths,
            codes,
            lut: Vec::new(),
            first_code,
            first_index,
            count,
            sorted,
        };
        t.lut = (0..1u64 << LUT_BITS)
            .map(|w| {
                let top = w << (64 - LUT_BITS);
                let (s1, l1) = t.slow(top);
                if l1 > LUT_BITS {
                    return 0;
                }
                let (s2, l2) = t.slow(top << l1);
                if l1 + l2 <= LUT_BITS {
                    u32::from(s1) | u32::from(s2) << 8 | (l1 + l2) << 16 | 2 << 24
                } else {
                    u32::from(s1) | l1 << 16 | 1 << 24
                }
            })
            .collect();
        Ok(t)
    }

    /// Reads a serialized table: 256 lengths, two per byte, low nibble first.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, HuffmanError> {
        if bytes.len() != TABLE_BYTES {
            return Err(HuffmanError::TableSize {
                actual: bytes.len(),
            });
        }
        let mut lengths = [0u8; 256];
        for (i, &b) in bytes.iter().enumerate() {
            lengths[2 * i] = b & 0x0f;
            lengths[2 * i + 1] = b >> 4;
        }
        Self::from_lengths(&lengths)
    }

    /// The serialized table.
    pub fn to_bytes(&self) -> [u8; TABLE_BYTES] {
        let mut out = [0u8; TABLE_BYTES];
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.lengths[2 * i] | self.lengths[2 * i + 1] << 4;
        }
        out
    }

    /// Code length of each byte value.
    pub fn lengths(&self) -> &[u8; 256] {
        &self.lengths
    }

    /// Exact size of the block body for `data` (varint length + codes).
    pub fn encoded_len(&self, data: &[u8]) -> usize {
        let bits: usize = data
            .iter()
            .map(|&b| usize::from(self.lengths[usize::from(b)]))
            .sum();
        crate::wire::varint_len(data.len() as u32) + bits.div_ceil(8)
    }

    /// Appends the block body for `data` (1..=32768 bytes) to `out`.
    pub(crate) fn encode(&self, data: &[u8], out: &mut Vec<u8>) {
        crate::wire::put_varint(out, data.len() as u32);
        let (mut acc, mut n) = (0u64, 0u32);
        for &b in data {
            let l = u32::from(self.lengths[usize::from(b)]);
            acc = (acc << l) | u64::from(self.codes[usize::from(b)]);
            n += l;
            while n >= 8 {
                n -= 8;
                out.push((acc >> n) as u8);
            }
        }
        if n > 0 {
            out.push((acc << (8 - n)) as u8);
        }
    }

    /// Decodes exactly `n` bytes from `src` (the bitstream after the
    /// varint) onto `out`. The stream must end within the last byte, with
    /// zero padding.
    pub(crate) fn decode(
        &self,
        src: &[u8],
        n: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), HuffmanError> {
        let start = out.len();
        out.resize(start + n, 0);
        let r = self.decode_into(src, &mut out[start..]);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    fn decode_into(&self, src: &[u8], dst: &mut [u8]) -> Result<(), HuffmanError> {
        // `buf` holds `have` unread bits at its top. A fast refill ORs in 8
        // bytes but counts only whole bytes that fit; the extra bits it
        // loads are the next bytes of the stream, which the next refill
        // ORs in again at the same place, so they do no harm.
        let (mut buf, mut have, mut pos) = (0u64, 0u32, 0usize);
        let mut out = dst.iter_mut().peekable();
        while out.peek().is_some() {
            if let Some(chunk) = src.get(pos..pos + 8) {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                buf |= u64::from_be_bytes(b) >> have;
                let take = (63 - have) >> 3;
                pos += take as usize;
                have += take << 3;
            } else {
                while have <= 56 {
                    let Some(&b) = src.get(pos) else { break };
                    buf |= u64::from(b) << (56 - have);
                    have += 8;
                    pos += 1;
                }
            }
            // Decode while a longest code surely fits, or the stream is spent.
            while have >= u32::from(MAX_CODE_LEN) || pos == src.len() {
                let Some(slot) = out.next() else { break };
                let e = self.lut[(buf >> (64 - LUT_BITS)) as usize];
                let both = (e >> 16) & 0xff;
                let (sym, len) = if e >> 24 == 2 && both <= have {
                    match out.next() {
                        Some(second) => {
                            *second = (e >> 8) as u8;
                            (e as u8, both)
                        }
                        None => (e as u8, u32::from(self.lengths[usize::from(e as u8)])),
                    }
                } else if e != 0 {
                    (e as u8, u32::from(self.lengths[usize::from(e as u8)]))
                } else {
                    self.slow(buf)
                };
                if len > have {
                    return Err(HuffmanError::Truncated);
                }
                *slot = sym;
                buf <<= len;
                have -= len;
            }
        }
        // Whatever is left must be the zero padding of the last byte.
        if pos != src.len() || have >= 8 || buf != 0 {
            return Err(HuffmanError::Trailing);
        }
        Ok(())
    }

    /// Canonical decode of the code at the top of `buf` (complete code: always found).
    fn slow(&self, buf: u64) -> (u8, u32) {
        for l in 1..=15usize {
            let code = (buf >> (64 - l)) as u32;
            let offset = code.wrapping_sub(self.first_code[l]);
            if offset < u32::from(self.count[l]) {
                let i = usize::from(self.first_index[l]) + offset as usize;
                return (self.sorted[i], l as u32);
            }
        }
        // Unreachable for a complete code; a 15-bit symbol-0 fallback keeps
        // this total without a panic.
        (self.sorted[255], 15)
    }
}

/// Plain Huffman code lengths for positive weights (ties broken by symbol).
fn huffman_lengths(freq: &[u64]) -> [u8; 256] {
    // Nodes: leaves 0..256, internal nodes after; parent links give depths.
    let mut parent = vec![usize::MAX; 2 * freq.len()];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = freq
        .iter()
        .enumerate()
        .map(|(i, &f)| Reverse((f, i)))
        .collect();
    let mut next = freq.len();
    while heap.len() > 1 {
        let (Some(Reverse((fa, a))), Some(Reverse((fb, b)))) = (heap.pop(), heap.pop()) else {
            break;
        };
        parent[a] = next;
        parent[b] = next;
        heap.push(Reverse((fa.saturating_add(fb), next)));
        next += 1;
    }
    let mut lengths = [0u8; 256];
    for (s, len) in lengths.iter_mut().enumerate() {
        let (mut d, mut p) = (0u32, s);
        while parent[p] != usize::MAX {
            d += 1;
            p = parent[p];
        }
        *len = d.min(255) as u8;
    }
    lengths
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn skewed() -> HuffmanTable {
        let mut c = [0u64; 256];
        c[0] = 100_000;
        c[1] = 20_000;
        c[2] = 5_000;
        c[255] = 3_000;
        HuffmanTable::from_counts(&c)
    }

    #[test]
    fn limits_and_completeness() {
        let mut c = [0u64; 256];
        // Fibonacci-like counts force deep trees without the length limit.
        let mut a = 1u64;
        let mut b = 1u64;
        for x in c.iter_mut().take(40) {
            *x = a;
            (a, b) = (b, a.saturating_add(b));
        }
        let t = HuffmanTable::from_counts(&c);
        assert!(t.lengths().iter().all(|&l| (1..=MAX_CODE_LEN).contains(&l)));
        assert_eq!(HuffmanTable::from_bytes(&t.to_bytes()).unwrap(), t);
        assert!(skewed().lengths()[0] <= 2);
    }

    proptest! {
        #[test]
        fn roundtrip(data in proptest::collection::vec(any::<u8>(), 1..3000), seed: u64) {
            let mut c = [0u64; 256];
            let mut x = seed | 1;
            for v in c.iter_mut() { x ^= x << 13; x ^= x >> 7; x ^= x << 17; *v = x % 1000; }
            for t in [HuffmanTable::from_counts(&c), skewed()] {
                let mut body = Vec::new();
                t.encode(&data, &mut body);
                prop_assert_eq!(body.len(), t.encoded_len(&data));
                let mut r = crate::wire::Reader::new(&body);
                let n = r.varint().unwrap() as usize;
                let mut out = Vec::new();
                t.decode(&body[r.pos()..], n, &mut out).unwrap();
                prop_assert_eq!(&out, &data);
            }
        }

        #[test]
        fn hostile_streams_never_panic(src in proptest::collection::vec(any::<u8>(), 0..64), n in 0usize..200) {
            let mut out = Vec::new();
            let _ = skewed().decode(&src, n, &mut out);
            prop_assert!(out.len() <= n);
        }
    }

    #[test]
    fn rejects_bad_tables_and_streams() {
        assert_eq!(
            HuffmanTable::from_bytes(&[0; 10]),
            Err(HuffmanError::TableSize { actual: 10 })
        );
        assert_eq!(
            HuffmanTable::from_bytes(&[0; 128]),
            Err(HuffmanError::BadLength {
                symbol: 0,
                length: 0
            })
        );
        // All lengths 8: complete. All 9: incomplete.
        assert!(HuffmanTable::from_bytes(&[0x88; 128]).is_ok());
        assert_eq!(
            HuffmanTable::from_bytes(&[0x99; 128]),
            Err(HuffmanError::Incomplete)
        );
        // All 7: oversubscribed.
        assert_eq!(
            HuffmanTable::from_bytes(&[0x77; 128]),
            Err(HuffmanError::Incomplete)
        );
        let flat = HuffmanTable::from_bytes(&[0x88; 128]).unwrap();
        let mut out = Vec::new();
        // 3 symbols claimed, 2 bytes of stream.
        assert_eq!(
            flat.decode(&[1, 2], 3, &mut out),
            Err(HuffmanError::Truncated)
        );
        out.clear();
        assert_eq!(
            flat.decode(&[1, 2, 3], 2, &mut out),
            Err(HuffmanError::Trailing)
        );
        out.clear();
        assert_eq!(flat.decode(&[7, 9], 2, &mut out), Ok(()));
        assert_eq!(out, [7, 9]);
    }
}
