//! [`super::planes::row_delta`] of a whole record sixteen bytes at a time,
//! whatever its spans: each 16-byte chunk is two 64-bit words whose lanes
//! (an `Int`/`Predict` element, or one byte of a `Sub`, `Xor` or `None`
//! span) are coded together with per-byte masks, borrows kept inside each
//! lane (SWAR). On x86_64 a chunk is one SSE2 register
//! ([`super::record_delta_sse2`]); elsewhere two `u64`s, with the same
//! result. The chunks and the bytes each writes are those of
//! [`ApplyPlan`].
//!
//! Per chunk, with `h` the top bit of every lane (all eight bits of a
//! `Xor` or `None` byte), `n` the `None` bytes, `z` the zigzag bytes, `t`
//! the top byte of every zigzag lane and `s1`, `s2`, `s4` the zigzag bytes
//! at least one, two and four bytes below their lane's top byte:
//!
//! - the reference `r` with its `None` bytes cleared;
//! - the lane-wise difference `d = ((c | h) - (r & !h)) ^ ((c ^ !r) & h)`:
//!   no borrow leaves a lane, and a lane whose bits are all in `h` (`Xor`,
//!   `None`) gets `c ^ r`;
//! - the sign `m` of every zigzag lane: `0xff` in the top byte of a lane
//!   whose top bit is set, smeared down the lane by shifts of one, two and
//!   four bytes masked by `s1`, `s2`, `s4`;
//! - the zigzag `((d & !h) << 1) ^ m` (the bit shifted in from the lane
//!   below cleared) in the zigzag bytes, `d` elsewhere.

use super::record_apply::ApplyPlan;
use crate::schema::{DeltaOp, Span};

/// The masks of one 16-byte chunk, as two little-endian words each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Where the chunk starts in the record.
    pub(crate) at: usize,
    pub(crate) h: [u64; 2],
    pub(crate) n: [u64; 2],
    pub(crate) z: [u64; 2],
    pub(crate) t: [u64; 2],
    pub(crate) s1: [u64; 2],
    pub(crate) s2: [u64; 2],
    pub(crate) s4: [u64; 2],
    /// The bytes the chunk writes.
    pub(crate) w: [u64; 2],
    /// Whether `w` leaves bytes out.
    pub(crate) partial: bool,
}

/// The chunks covering a record, as [`ApplyPlan`]'s, and the lanes they
/// leave out (only with [`DeltaPlan::with_tail`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeltaPlan {
    rs: usize,
    chunks: Vec<Chunk>,
    /// The lanes no chunk writes, each as a span of one lane.
    tail: Vec<Span>,
}

impl DeltaPlan {
    /// The plan of records of `rs` bytes with `spans`, when they have an
    /// [`ApplyPlan`], with its tail lanes ([`DeltaPlan::tail`]).
    pub(crate) fn with_tail(spans: &[Span], rs: usize) -> Option<Self> {
        let apply = ApplyPlan::new(spans, rs)?;
        let tail = apply
            .tail()
            .iter()
            .map(|l| Span {
                offset: l.at,
                len: l.width,
                width: l.width,
                op: l.op,
            })
            .collect();
        let chunks = apply
            .chunks()
            .iter()
            .map(|c| {
                let mut out = Chunk {
                    at: c.at,
                    h: c.h,
                    n: c.n,
                    z: c.z,
                    w: c.w,
                    partial: c.partial,
                    ..Chunk::default()
                };
                for i in 0..2 {
                    let (h, z) = (c.h[i].to_le_bytes(), c.z[i].to_le_bytes());
                    let top = |b: usize| z[b] == 0xff && h[b] == 0x80;
                    let (mut t, mut s1, mut s2, mut s4) = ([0u8; 8], [0u8; 8], [0u8; 8], [0u8; 8]);
                    for b in 0..8 {
                        if z[b] != 0xff {
                            continue;
                        }
                        // The bytes above `b` up to its lane's top byte
                        // (within the word; a lane leaving the word is in
                        // bytes the chunk does not write).
                        let mut above = 0;
                        while !top(b + above) && b + above + 1 < 8 && z[b + above + 1] == 0xff {
                            above += 1;
                        }
                        if above == 0 {
                            t[b] = 0xff;
                        }
                        for (k, s) in [(1, &mut s1), (2, &mut s2), (4, &mut s4)] {
                            if above >= k {
                                s[b] = 0xff;
                            }
                        }
                    }
                    out.t[i] = u64::from_le_bytes(t);
                    out.s1[i] = u64::from_le_bytes(s1);
                    out.s2[i] = u64::from_le_bytes(s2);
                    out.s4[i] = u64::from_le_bytes(s4);
                }
                out
            })
            .collect();
        Some(Self { rs, chunks, tail })
    }

    /// The record size the plan is for.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn rs(&self) -> usize {
        self.rs
    }

    /// The lanes the chunks leave out, each a span of one lane (none when
    /// the [`ApplyPlan`]'s chunks cover every lane).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn tail(&self) -> &[Span] {
        &self.tail
    }

    /// The plan's chunks, in record order.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// Whether the plan takes fewer instructions than span by span for
    /// records with `spans`: span by span costs about a chunk per span and
    /// per element left over after a span's sixteen-byte blocks (coded
    /// one at a time), the plan two chunks' worth per chunk.
    pub(crate) fn pays(&self, spans: &[Span]) -> bool {
        let left: usize = spans
            .iter()
            .map(|s| match s.op {
                DeltaOp::Int | DeltaOp::Predict if s.width > 1 => s.len % 16 / s.width,
                DeltaOp::Int | DeltaOp::Predict => s.len,
                _ => 0,
            })
            .sum();
        spans.len() + left > 2 * self.chunks.len()
    }

    /// [`super::planes::delta_rows`]: row `k` of `out` (rows of the plan's
    /// record size) is the delta of record `pairs[k].0` of `cur` against
    /// record `pairs[k].1` of `reference`.
    pub(crate) fn delta_rows(
        &self,
        cur: &[u8],
        reference: &[u8],
        pairs: &[(u32, u32)],
        out: &mut [u8],
    ) {
        // Chunk by chunk, so its masks stay in registers over the rows.
        for k in &self.chunks {
            wide::rows(k, self.rs, cur, reference, pairs, out);
        }
    }
}

/// One word of a chunk: the delta of record word `c` against `r`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn word(c: u64, r: u64, h: u64, n: u64, z: u64, t: u64, s: [u64; 3]) -> u64 {
    let r = r & !n;
    let d = ((c | h).wrapping_sub(r & !h)) ^ ((c ^ !r) & h);
    let mut m = ((d & t & 0x8080_8080_8080_8080) >> 7).wrapping_mul(0xff);
    m |= (m >> 8) & s[0];
    m |= (m >> 16) & s[1];
    m |= (m >> 32) & s[2];
    let zz = ((d & !h) << 1) ^ m;
    d ^ ((zz ^ d) & z)
}

/// One chunk as two words: writes into `out` the delta of `cur` against
/// `reference` in the bytes the chunk writes.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
pub(crate) fn chunk_words(k: &Chunk, cur: &[u8], reference: &[u8], out: &mut [u8]) {
    for i in 0..2 {
        let at = k.at + 8 * i;
        let load = |b: &[u8]| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(x)
        };
        let s = [k.s1[i], k.s2[i], k.s4[i]];
        let o = word(
            load(cur),
            load(reference),
            k.h[i],
            k.n[i],
            k.z[i],
            k.t[i],
            s,
        );
        let o = (o & k.w[i]) | (load(out) & !k.w[i]);
        out[at..at + 8].copy_from_slice(&o.to_le_bytes());
    }
}

/// The rows of [`DeltaPlan::delta_rows`] in the bytes the chunk `k`
/// writes, as two words each.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
pub(crate) fn rows_words(
    k: &Chunk,
    rs: usize,
    cur: &[u8],
    reference: &[u8],
    pairs: &[(u32, u32)],
    out: &mut [u8],
) {
    for (o, &(c, b)) in out.chunks_exact_mut(rs).zip(pairs) {
        let (c, b) = (c as usize * rs, b as usize * rs);
        let (Some(c), Some(b)) = (cur.get(c..c + rs), reference.get(b..b + rs)) else {
            continue;
        };
        chunk_words(k, c, b, o);
    }
}

#[cfg(target_arch = "x86_64")]
use super::record_delta_sse2 as wide;

/// Elsewhere a chunk is two words.
#[cfg(not(target_arch = "x86_64"))]
mod wide {
    pub(super) use super::rows_words as rows;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::planes::{delta_rows, row_delta};
    use crate::pipeline::record_apply::tests::{bytes, layouts};

    #[test]
    fn plans_match_row_delta() {
        let mut planned = 0;
        for (k, (spans, rs)) in layouts().into_iter().enumerate() {
            let Some(plan) = DeltaPlan::with_tail(&spans, rs).filter(|p| p.tail.is_empty()) else {
                continue;
            };
            planned += 1;
            let records = 50;
            let cur = bytes(records * rs, k as u32 * 13 + 1);
            let mut reference = bytes(records * rs, k as u32 * 7 + 2);
            // Some records equal, some one element off.
            reference[..rs].copy_from_slice(&cur[..rs]);
            for n in 1..48usize {
                let pairs: Vec<(u32, u32)> = (0..n as u32)
                    .map(|i| ((i * 7 + n as u32) % 50, (i * 3 + 1) % 50))
                    .chain([(0, 0)])
                    .take(n)
                    .collect();
                let mut want = vec![0xaa; n * rs];
                delta_rows(&spans, rs, &cur, &reference, &pairs, &mut want);
                let mut got = vec![0x55; n * rs];
                plan.delta_rows(&cur, &reference, &pairs, &mut got);
                assert_eq!(got, want, "layout {k}, {n} rows");
                let mut words = vec![0x33; n * rs];
                for (o, &(c, b)) in words.chunks_exact_mut(rs).zip(&pairs) {
                    let (c, b) = (c as usize * rs, b as usize * rs);
                    for ch in &plan.chunks {
                        chunk_words(ch, &cur[c..c + rs], &reference[b..b + rs], o);
                    }
                }
                assert_eq!(words, want, "layout {k}, {n} rows, words");
            }
            // Extreme lanes: all ones against zero and the reverse.
            for (c, r) in [(0xffu8, 0u8), (0, 0xff), (0x80, 0), (0, 0x80), (0x7f, 0x80)] {
                let (cur, reference) = (vec![c; rs], vec![r; rs]);
                let mut want = vec![0; rs];
                row_delta(&spans, &cur, &reference, &mut want);
                let mut got = vec![0; rs];
                plan.delta_rows(&cur, &reference, &[(0, 0)], &mut got);
                assert_eq!(got, want, "layout {k}, {c:#x} against {r:#x}");
            }
        }
        assert!(planned >= 10, "{planned} layouts planned");
    }
}
