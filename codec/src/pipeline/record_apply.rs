//! [`super::planes::row_apply`] on a whole record sixteen bytes at a time,
//! whatever its spans: each 16-byte chunk is two 64-bit words whose lanes
//! (an `Int`/`Predict` element, or one byte of a `Sub`, `Xor` or `None`
//! span) are decoded and added together with per-byte masks, carries kept
//! inside each lane (SWAR). On x86_64 a chunk is one SSE2 register
//! ([`super::record_apply_sse2`]); elsewhere two `u64`s, with the same
//! result.
//!
//! Per chunk, with `h` the top bit of every lane (all eight bits of a
//! `Xor` or `None` byte), `l` the low bit of every zigzag lane, `z` the
//! zigzag bytes and `n` the `None` bytes:
//!
//! - the zigzag decode of the delta `d`: `((d >> 1) & !h) ^ ((h - (d & l)) ^ h)`
//!   (the shift's bit from the next lane cleared; `h - (d & l)` borrows
//!   only inside a lane and, XORed with `h`, is all ones in a lane whose
//!   zigzag is odd); `v` is that in the zigzag bytes, `d` elsewhere;
//! - the reference `r` with its `None` bytes cleared;
//! - the lane-wise sum `((r & !h) + (v & !h)) ^ ((r ^ v) & h)`: no carry
//!   leaves a lane, and a lane whose bits are all in `h` (`Xor`, `None`)
//!   gets `r ^ v`.
//!
//! A chunk writes only the bytes of the lanes that lie inside one of its
//! words (`w`), keeping what the chunks before it wrote in the others
//! (where the last chunk overlaps the one before it mid-lane). When at
//! most [`TAIL_LANES`] lanes lie inside no word of the chunks at every
//! sixteenth byte, those lanes are decoded one by one ([`Lane`]) instead
//! of by a last chunk. A layout where some lane lies inside no chunk's
//! word and is not such a lane (or a record under sixteen bytes) has no
//! plan, and the caller goes span by span.

use crate::schema::{DeltaOp, Span};

/// The masks of one 16-byte chunk, as two little-endian words each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Where the chunk starts in the record.
    pub(crate) at: usize,
    pub(crate) h: [u64; 2],
    pub(crate) l: [u64; 2],
    pub(crate) z: [u64; 2],
    pub(crate) n: [u64; 2],
    /// The bytes the chunk writes.
    pub(crate) w: [u64; 2],
    /// Whether `w` leaves bytes out.
    pub(crate) partial: bool,
}

/// The most lanes decoded one by one after the chunks at every sixteenth
/// byte, rather than by a last chunk ending at the record's end.
const TAIL_LANES: usize = 2;

/// A lane of a record decoded by itself: `width` bytes from `at`, one
/// element of an `Int`/`Predict` span or one byte of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lane {
    pub(crate) at: usize,
    pub(crate) width: usize,
    pub(crate) op: DeltaOp,
}

impl Lane {
    /// The lane's value from its delta `d` and reference `r` (both
    /// little-endian, zero above the lane); the bits above the lane are
    /// not meaningful.
    #[inline(always)]
    pub(crate) fn decode(&self, d: u64, r: u64) -> u64 {
        match self.op {
            DeltaOp::Int | DeltaOp::Predict => r.wrapping_add((d >> 1) ^ (d & 1).wrapping_neg()),
            DeltaOp::Sub => r.wrapping_add(d),
            DeltaOp::Xor => r ^ d,
            DeltaOp::None => d,
        }
    }
}

/// The first `W` bytes of `b` as a little-endian number.
#[inline(always)]
pub(crate) fn read<const W: usize>(b: &[u8; W]) -> u64 {
    let mut x = [0u8; 8];
    x[..W].copy_from_slice(b);
    u64::from_le_bytes(x)
}

/// The chunks covering a record: every sixteenth byte, and when the size
/// is not a multiple of sixteen either one more ending at the record's
/// end, overlapping the one before (its bytes are written twice, the
/// same), or the few lanes those chunks leave out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ApplyPlan {
    rs: usize,
    chunks: Vec<Chunk>,
    tail: Vec<Lane>,
}

impl ApplyPlan {
    /// The plan of records of `rs` bytes with `spans`, if every record
    /// byte is in exactly one span and every lane fits the chunks' words.
    pub(crate) fn new(spans: &[Span], rs: usize) -> Option<Self> {
        if rs < 16 {
            return None;
        }
        // Per record byte: its lane (first byte, end, operator) and masks.
        let mut lane = vec![(usize::MAX, 0usize, DeltaOp::None); rs];
        let (mut h, mut l, mut z, mut n) =
            (vec![0u8; rs], vec![0u8; rs], vec![0u8; rs], vec![0u8; rs]);
        for s in spans {
            let end = s.offset.checked_add(s.len).filter(|&e| e <= rs)?;
            let zigzag = matches!(s.op, DeltaOp::Int | DeltaOp::Predict);
            let width = if zigzag { s.width } else { 1 };
            if !matches!(width, 1 | 2 | 4 | 8) || s.len % width != 0 {
                return None;
            }
            for start in (s.offset..end).step_by(width) {
                for b in &mut lane[start..start + width] {
                    if b.0 != usize::MAX {
                        return None;
                    }
                    *b = (start, start + width, s.op);
                }
                let last = start + width - 1;
                match s.op {
                    DeltaOp::Int | DeltaOp::Predict => {
                        h[last] = 0x80;
                        l[start] = 0x01;
                        z[start..=last].fill(0xff);
                    }
                    DeltaOp::Sub => h[start] = 0x80,
                    DeltaOp::Xor => h[start] = 0xff,
                    DeltaOp::None => {
                        h[start] = 0xff;
                        n[start] = 0xff;
                    }
                }
            }
        }
        let mut chunks = Vec::new();
        let mut written = vec![false; rs];
        let mut chunk = |at: usize, written: &mut [bool]| {
            let mut w = [0u8; 16];
            for (b, w) in (at..at + 16).zip(&mut w) {
                // The word of the chunk the byte is in, and its lane.
                let half = at + (b - at) / 8 * 8;
                let (s, e, _) = lane[b];
                if s != usize::MAX && s >= half && e <= half + 8 {
                    *w = 0xff;
                    written[b] = true;
                }
            }
            let words = |m: &[u8]| -> [u64; 2] {
                core::array::from_fn(|i| {
                    let mut x = [0u8; 8];
                    x.copy_from_slice(&m[8 * i..8 * i + 8]);
                    u64::from_le_bytes(x)
                })
            };
            let w = words(&w);
            let r = at..at + 16;
            chunks.push(Chunk {
                at,
                h: words(&h[r.clone()]),
                l: words(&l[r.clone()]),
                z: words(&z[r.clone()]),
                n: words(&n[r]),
                w,
                partial: w != [u64::MAX; 2],
            });
        };
        let whole = rs & !15;
        for at in (0..whole).step_by(16) {
            chunk(at, &mut written);
        }
        // The lanes the chunks so far leave out, each by its first byte.
        let mut tail: Vec<Lane> = (0..rs)
            .filter(|&b| !written[b] && lane[b].0 == b)
            .map(|b| Lane {
                at: b,
                width: lane[b].1 - b,
                op: lane[b].2,
            })
            .collect();
        if tail.len() > TAIL_LANES {
            tail.clear();
            if rs > whole {
                chunk(rs - 16, &mut written);
            }
        }
        for t in &tail {
            written[t.at..t.at + t.width].fill(true);
        }
        if !written.iter().all(|&w| w) {
            return None;
        }
        Some(Self { rs, chunks, tail })
    }

    /// The chunks, in order (a partial one after the chunks it keeps
    /// bytes of).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// The lanes decoded one by one after the chunks.
    pub(crate) fn tail(&self) -> &[Lane] {
        &self.tail
    }

    /// Writes into `out` the record whose delta against `reference` is
    /// `delta` (each at least a record long; [`super::planes::row_apply`]),
    /// and returns whether it differs from `reference`.
    #[inline(always)]
    pub(crate) fn apply(&self, delta: &[u8], reference: &[u8], out: &mut [u8]) -> bool {
        let rs = self.rs;
        let (delta, reference, out) = (&delta[..rs], &reference[..rs], &mut out[..rs]);
        let mut differs = false;
        for c in &self.chunks {
            differs |= wide::chunk(c, delta, reference, out);
        }
        if self.tail.is_empty() {
            return differs;
        }
        differs | self.apply_tail(delta, reference, out)
    }

    /// The tail lanes of [`Self::apply`]; returns whether they differ from
    /// `reference`.
    #[inline(never)]
    fn apply_tail(&self, delta: &[u8], reference: &[u8], out: &mut [u8]) -> bool {
        let mut differs = false;
        for lane in &self.tail {
            differs |= match lane.width {
                1 => tail_lane::<1>(lane, delta, reference, out),
                2 => tail_lane::<2>(lane, delta, reference, out),
                4 => tail_lane::<4>(lane, delta, reference, out),
                _ => tail_lane::<8>(lane, delta, reference, out),
            };
        }
        differs
    }
}

/// Writes `lane` (`W` bytes wide) of the record from `delta` and
/// `reference` into `out`; returns whether it differs from the reference.
#[inline(always)]
fn tail_lane<const W: usize>(lane: &Lane, delta: &[u8], reference: &[u8], out: &mut [u8]) -> bool {
    let at = lane.at..lane.at + W;
    let (Some(d), Some(r), Some(o)) = (
        delta
            .get(at.clone())
            .and_then(|b| <&[u8; W]>::try_from(b).ok()),
        reference
            .get(at.clone())
            .and_then(|b| <&[u8; W]>::try_from(b).ok()),
        out.get_mut(at),
    ) else {
        return false;
    };
    let (d, r) = (read(d), read(r));
    let v = lane.decode(d, r);
    o.copy_from_slice(&v.to_le_bytes()[..W]);
    (v ^ r) & (u64::MAX >> (64 - 8 * W)) != 0
}

/// One word of a chunk: the record word from delta `d` and reference `r`.
#[inline(always)]
pub(crate) fn word(d: u64, r: u64, h: u64, l: u64, z: u64, n: u64) -> u64 {
    let zz = ((d >> 1) & !h) ^ (h.wrapping_sub(d & l) ^ h);
    let v = d ^ ((zz ^ d) & z);
    let r = r & !n;
    (r & !h).wrapping_add(v & !h) ^ ((r ^ v) & h)
}

/// One chunk as two words; returns whether it differs from the reference.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
pub(crate) fn chunk_words(c: &Chunk, delta: &[u8], reference: &[u8], out: &mut [u8]) -> bool {
    let mut differs = 0u64;
    for i in 0..2 {
        let at = c.at + 8 * i;
        let load = |b: &[u8]| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(x)
        };
        let r = load(reference);
        let o = word(load(delta), r, c.h[i], c.l[i], c.z[i], c.n[i]);
        // Only the bytes the chunk writes count.
        differs |= (o ^ r) & c.w[i];
        let o = (o & c.w[i]) | (load(out) & !c.w[i]);
        out[at..at + 8].copy_from_slice(&o.to_le_bytes());
    }
    differs != 0
}

#[cfg(target_arch = "x86_64")]
use super::record_apply_sse2 as wide;

/// Elsewhere a chunk is two words.
#[cfg(not(target_arch = "x86_64"))]
mod wide {
    pub(super) use super::chunk_words as chunk;
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::pipeline::planes::row_apply;

    /// Hashed bytes with many zeros, ones and `0xff`s.
    pub(crate) fn bytes(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                match x % 9 {
                    0 => 0,
                    1 => 0xff,
                    2 => 1,
                    _ => (x >> 8) as u8,
                }
            })
            .collect()
    }

    fn span(offset: usize, len: usize, width: usize, op: DeltaOp) -> Span {
        Span {
            offset,
            len,
            width,
            op,
        }
    }

    /// Layouts of every operator and width, records of odd sizes.
    pub(crate) fn layouts() -> Vec<(Vec<Span>, usize)> {
        let mut out = Vec::new();
        let ops = [
            DeltaOp::Int,
            DeltaOp::Sub,
            DeltaOp::Xor,
            DeltaOp::None,
            DeltaOp::Predict,
        ];
        for seed in 0..40usize {
            let mut spans = Vec::new();
            let mut at = 0;
            let mut x = seed * 7 + 3;
            while at < 16 + seed {
                x = x * 1103515245 % 2147483647 + 12345;
                let width = [1, 2, 4, 8][x % 4];
                let op = ops[(x / 4) % 5];
                let count = 1 + (x / 20) % 3;
                spans.push(span(at, width * count, width, op));
                at += width * count;
            }
            out.push((spans, at));
        }
        // The racing car: one lane after the whole chunks.
        out.push((
            vec![span(0, 48, 4, DeltaOp::Int), span(48, 2, 2, DeltaOp::Int)],
            50,
        ));
        // The arena's player and projectile.
        out.push((
            vec![
                span(0, 32, 4, DeltaOp::Int),
                span(32, 4, 1, DeltaOp::Int),
                span(36, 4, 2, DeltaOp::Int),
            ],
            40,
        ));
        out.push((
            vec![
                span(0, 24, 4, DeltaOp::Int),
                span(24, 2, 2, DeltaOp::Int),
                span(26, 2, 1, DeltaOp::Int),
            ],
            28,
        ));
        out
    }

    #[test]
    fn plans_match_row_apply() {
        let mut planned = 0;
        for (k, (spans, rs)) in layouts().into_iter().enumerate() {
            let Some(plan) = ApplyPlan::new(&spans, rs) else {
                continue;
            };
            planned += 1;
            for t in 0..20u32 {
                let delta = bytes(rs, t * 31 + k as u32);
                let reference = bytes(rs, t * 17 + 5 + k as u32);
                let mut want = vec![0; rs];
                row_apply(&spans, &delta, &reference, &mut want);
                let mut got = vec![0xaa; rs];
                let differs = plan.apply(&delta, &reference, &mut got);
                assert_eq!(got, want, "layout {k}, try {t}");
                assert_eq!(differs, want != reference);
                let mut words = vec![0x55; rs];
                let mut w_differs = false;
                for c in &plan.chunks {
                    w_differs |= chunk_words(c, &delta, &reference, &mut words);
                }
                w_differs |= plan.apply_tail(&delta, &reference, &mut words);
                assert_eq!(words, want);
                assert_eq!(w_differs, differs);
            }
            // A zero delta leaves the record as it was, but for `None`.
            let zero = vec![0; rs];
            let reference = bytes(rs, 99);
            let mut got = vec![0; rs];
            let differs = plan.apply(&zero, &reference, &mut got);
            let has_none = spans.iter().any(|s| s.op == DeltaOp::None);
            assert_eq!(differs, has_none && got != reference);
        }
        assert!(planned >= 10, "{planned} layouts planned");
    }

    #[test]
    fn layouts_without_a_plan() {
        // Under sixteen bytes.
        assert!(ApplyPlan::new(&[span(0, 8, 4, DeltaOp::Int)], 8).is_none());
        // A byte in no span.
        assert!(ApplyPlan::new(&[span(0, 16, 4, DeltaOp::Int)], 17).is_none());
        // Lanes across a word of their only chunk: a few decoded by
        // themselves, more not.
        let spans = [
            span(0, 4, 4, DeltaOp::Int),
            span(4, 8, 8, DeltaOp::Int),
            span(12, 4, 4, DeltaOp::Int),
        ];
        assert_eq!(ApplyPlan::new(&spans, 16).map(|p| p.tail.len()), Some(1));
        let spans = [
            span(0, 4, 4, DeltaOp::Int),
            span(4, 8, 8, DeltaOp::Int),
            span(12, 4, 4, DeltaOp::Int),
            span(16, 2, 1, DeltaOp::Int),
            span(18, 8, 8, DeltaOp::Int),
            span(26, 2, 2, DeltaOp::Int),
            span(28, 8, 8, DeltaOp::Int),
            span(36, 12, 4, DeltaOp::Int),
        ];
        assert!(ApplyPlan::new(&spans, 48).is_none());
        // One inside a word of the last chunk only.
        let spans = [
            span(0, 2, 1, DeltaOp::Int),
            span(2, 8, 8, DeltaOp::Int),
            span(10, 8, 4, DeltaOp::Int),
        ];
        assert!(ApplyPlan::new(&spans, 18).is_some());
        // Overlapping spans.
        let spans = [span(0, 16, 4, DeltaOp::Int), span(12, 4, 1, DeltaOp::Int)];
        assert!(ApplyPlan::new(&spans, 16).is_none());
    }
}
