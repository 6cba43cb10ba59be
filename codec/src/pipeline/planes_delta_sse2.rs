//! A byte-plane section's rows written straight into its planes (x86_64):
//! per block of sixteen rows, per chunk of the section's
//! [`DeltaPlan`], the sixteen rows' deltas are computed in SSE2 registers
//! ([`super::record_delta_sse2`]) and transposed there
//! ([`super::transpose_sse2`]) into sixteen bytes of each of the chunk's
//! planes, without the rows going through memory. The last block of rows
//! overlaps the one before it when the row count is not a multiple of
//! sixteen (its rows are written twice, the same). Each of the plan's
//! tail lanes goes as one more chunk ending with the lane (so that the
//! lane sits at the top of the register, at an offset that is a multiple
//! of its width), coded by the lane's own operator and width, of which
//! only the lane's bytes are kept.

use safe_arch::{m128i, zeroed_m128i};

use super::record_delta::{Chunk, DeltaPlan};
use super::record_delta_sse2::{
    copy1, sub1, xor1, zigzag1, zigzag2, zigzag4, zigzag8, Lanes, Masks,
};
use super::sse2::{load, store};
use super::transpose::NO_PLANE;
use super::transpose_sse2::{block_starts, transpose16};

/// The first rows of [`delta_planes`] as index pairs: row `k` is record
/// `pairs[k].0` of `cur` against record `pairs[k].1` of `reference`.
#[derive(Clone, Copy)]
pub(super) struct Pairs<'a> {
    pub(super) pairs: &'a [(u32, u32)],
    pub(super) cur: &'a [u8],
    pub(super) reference: &'a [u8],
}

/// Writes into `planes` the deltas of `n` rows: row `k` is the delta of
/// the record `row(k).0` against the record `row(k).1` (records of the
/// plan's size), or for `k` under `first.pairs.len()` of the records
/// `first` names, and its record byte `c` goes to `planes[starts[c] + k]`
/// (nothing for a record byte at [`NO_PLANE`]; every other start names a
/// plane of `n` bytes). Returns `false`, with `planes` partly written,
/// when there are fewer than sixteen rows, a row has no record or a short
/// one, or a start does not fit `planes`.
pub(super) fn delta_planes<'a>(
    plan: &DeltaPlan,
    n: usize,
    first: Pairs<'a>,
    row: impl Fn(usize) -> Option<(&'a [u8], &'a [u8])>,
    starts: &[usize],
    planes: &mut [u8],
) -> bool {
    let rs = plan.rs();
    if n < 16 || starts.len() != rs {
        return false;
    }
    // Per chunk: its masks, where each of its sixteen record bytes'
    // planes start (`NO_PLANE` for a byte it does not write) and whether
    // it writes all sixteen. A byte two chunks write gets the same delta
    // from both.
    let mut chunks = Vec::with_capacity(plan.chunks().len());
    for k in plan.chunks() {
        let Some(cols) = starts.get(k.at..k.at + 16) else {
            return false;
        };
        let w = <[u8; 16]>::from(m128i::from(k.w));
        let mut dest = [NO_PLANE; 16];
        for ((d, &s), &w) in dest.iter_mut().zip(cols).zip(&w) {
            if w == 0 || s == NO_PLANE {
                continue;
            }
            if s.checked_add(n).is_none_or(|end| end > planes.len()) {
                return false;
            }
            *d = s;
        }
        let all = dest.iter().all(|&d| d != NO_PLANE);
        chunks.push((k.at, Masks::new(k), dest, all));
    }
    // Per tail lane: a chunk ending with the lane, writing only its bytes.
    for lane in plan.tail() {
        let end = lane.offset + lane.len;
        let at = end.checked_sub(16).filter(|_| lane.len <= 8);
        let (Some(at), Some(cols)) = (at, starts.get(lane.offset..end)) else {
            return false;
        };
        let mut dest = [NO_PLANE; 16];
        for (d, &s) in dest[16 - lane.len..].iter_mut().zip(cols) {
            if s != NO_PLANE && s.checked_add(n).is_none_or(|end| end > planes.len()) {
                return false;
            }
            *d = s;
        }
        let masks = Masks::new(&Chunk::default()).with_lanes(Lanes::of_lane(lane));
        chunks.push((at, masks, dest, false));
    }
    for r in block_starts(n) {
        // The block's records, each checked once for all chunks.
        let mut cur: [&[u8]; 16] = [&[]; 16];
        let mut reference: [&[u8]; 16] = [&[]; 16];
        if let Some(pairs) = first.pairs.get(r..r + 16) {
            for ((c, b), &(i, j)) in cur.iter_mut().zip(&mut reference).zip(pairs) {
                let (i, j) = (i as usize * rs, j as usize * rs);
                let (Some(x), Some(y)) = (first.cur.get(i..i + rs), first.reference.get(j..j + rs))
                else {
                    return false;
                };
                (*c, *b) = (x, y);
            }
        } else {
            for (i, (c, b)) in cur.iter_mut().zip(&mut reference).enumerate() {
                let Some((x, y)) = row(r + i).filter(|(x, y)| x.len() >= rs && y.len() >= rs)
                else {
                    return false;
                };
                (*c, *b) = (x, y);
            }
        }
        for (at, masks, dest, all) in &chunks {
            let block = (&cur, &reference, *at);
            let a = match masks.lanes {
                Lanes::Zigzag1 => deltas(block, zigzag1),
                Lanes::Zigzag2 => deltas(block, zigzag2),
                Lanes::Zigzag4 => deltas(block, zigzag4),
                Lanes::Zigzag8 => deltas(block, zigzag8),
                Lanes::Sub => deltas(block, sub1),
                Lanes::Xor => deltas(block, xor1),
                Lanes::Copy => deltas(block, copy1),
                Lanes::Mixed => deltas(block, |c, r| masks.delta(c, r)),
            };
            let t = transpose16(a);
            if *all {
                for (w, &d) in t.into_iter().zip(dest) {
                    store(planes, d + r, w);
                }
            } else {
                for (w, &d) in t.into_iter().zip(dest) {
                    if d != NO_PLANE {
                        store(planes, d + r, w);
                    }
                }
            }
        }
    }
    true
}

/// The records of a block's sixteen rows on both sides, and the chunk's
/// place in them.
type Block<'a, 'b> = (&'b [&'a [u8]; 16], &'b [&'a [u8]; 16], usize);

/// The sixteen rows' deltas of the chunk at `at`, `delta` of sixteen
/// record bytes each.
#[inline(always)]
fn deltas(
    (cur, reference, at): Block<'_, '_>,
    delta: impl Fn(m128i, m128i) -> m128i,
) -> [m128i; 16] {
    let mut a = [zeroed_m128i(); 16];
    for ((a, c), b) in a.iter_mut().zip(cur).zip(reference) {
        *a = delta(load(c, at), load(b, at));
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::planes::{delta_rows, row_delta, split};
    use crate::pipeline::record_apply::tests::{bytes, layouts};
    use crate::pipeline::transpose::plane_starts;
    use crate::schema::{DeltaOp, Span};

    /// The test layouts, and records of one operator and width throughout
    /// (chunks of one zigzag width), sizes multiples of sixteen or not.
    fn all_layouts() -> Vec<(Vec<Span>, usize)> {
        let mut out = layouts();
        for (width, rs) in [
            (1, 17),
            (1, 32),
            (2, 32),
            (2, 46),
            (4, 28),
            (4, 32),
            (8, 48),
        ] {
            for op in [DeltaOp::Int, DeltaOp::Predict] {
                let span = Span {
                    offset: 0,
                    len: rs,
                    width,
                    op,
                };
                out.push((vec![span], rs));
            }
        }
        out
    }

    /// No rows as index pairs.
    const NONE: Pairs<'static> = Pairs {
        pairs: &[],
        cur: &[],
        reference: &[],
    };

    /// A permutation of `0..rs`.
    fn order(rs: usize, seed: usize) -> Vec<u16> {
        let mut o: Vec<u16> = (0..rs as u16).collect();
        for i in (1..rs).rev() {
            o.swap(i, (i * 7919 + seed) % (i + 1));
        }
        o
    }

    #[test]
    fn planes_hold_the_split_rows() {
        let (mut planned, mut tailed, mut tails_written) = (0, 0, 0);
        let mut seen = [false; 8];
        for (k, (spans, rs)) in all_layouts().into_iter().enumerate() {
            let Some(plan) = DeltaPlan::with_tail(&spans, rs) else {
                continue;
            };
            planned += 1;
            tailed += usize::from(!plan.tail().is_empty());
            // Tail lanes ending before the sixteenth byte are refused.
            let fits = plan.tail().iter().all(|l| l.offset + l.len >= 16);
            for c in plan.chunks() {
                seen[Masks::new(c).lanes as usize] = true;
            }
            let records = 60;
            let cur = bytes(records * rs, k as u32 * 13 + 1);
            let mut reference = bytes(records * rs, k as u32 * 7 + 2);
            reference[..rs].copy_from_slice(&cur[..rs]);
            let o = order(rs, k);
            for n in [0usize, 1, 15, 16, 17, 31, 32, 33, 47, 60] {
                let pairs: Vec<(u32, u32)> = (0..n as u32)
                    .map(|i| ((i * 7 + n as u32) % 60, (i * 3 + 1) % 60))
                    .collect();
                let mut rows = vec![0; n * rs];
                delta_rows(&spans, rs, &cur, &reference, &pairs, &mut rows);
                let mut want = Vec::new();
                split(&o, &rows, n, rs, &mut want, &mut Vec::new());
                let mut starts = Vec::new();
                assert!(plane_starts(&o, n, rs, &mut starts));
                let mut got = vec![0x5a; n * rs];
                let row = |i: usize| {
                    let (c, b) = pairs.get(i)?;
                    let (c, b) = (*c as usize * rs, *b as usize * rs);
                    Some((&cur[c..c + rs], &reference[b..b + rs]))
                };
                // The pairs for all rows, or for none (the rows by `row`).
                let first = Pairs {
                    pairs: &pairs,
                    cur: &cur,
                    reference: &reference,
                };
                let none = Pairs {
                    pairs: &[],
                    ..first
                };
                let mut by_row = vec![0x33; n * rs];
                let by_rows = delta_planes(&plan, n, none, row, &starts, &mut by_row);
                let done = delta_planes(&plan, n, first, row, &starts, &mut got);
                assert_eq!(by_rows, done);
                let half = Pairs {
                    pairs: &pairs[..n / 2],
                    ..first
                };
                let mut by_half = vec![0x44; n * rs];
                assert_eq!(
                    delta_planes(&plan, n, half, row, &starts, &mut by_half),
                    done
                );
                if done {
                    assert_eq!(by_row, want, "layout {k}, {n} rows by row");
                    assert_eq!(by_half, want, "layout {k}, {n} rows, half by pairs");
                }
                assert_eq!(done, n >= 16 && fits, "layout {k}, {n} rows");
                tails_written += usize::from(done && !plan.tail().is_empty());
                if done {
                    assert_eq!(got, want, "layout {k}, {n} rows");
                }
            }
            if !fits {
                continue;
            }
            // Rows against the row before them (spawned rows), the first
            // against zeros; extreme lanes.
            for n in [16usize, 23] {
                let mut recs = bytes(n * rs, k as u32 + 99);
                recs[rs..2 * rs].fill(0xff);
                recs[2 * rs..3 * rs].fill(0x80);
                recs[3 * rs..4 * rs].fill(0x7f);
                let zero = vec![0u8; rs];
                let mut rows = vec![0; n * rs];
                for (i, out) in rows.chunks_exact_mut(rs).enumerate() {
                    let prev = if i == 0 {
                        &zero[..]
                    } else {
                        &recs[(i - 1) * rs..i * rs]
                    };
                    row_delta(&spans, &recs[i * rs..(i + 1) * rs], prev, out);
                }
                let mut want = Vec::new();
                split(&o, &rows, n, rs, &mut want, &mut Vec::new());
                let mut starts = Vec::new();
                plane_starts(&o, n, rs, &mut starts);
                let mut got = vec![0; n * rs];
                let row = |i: usize| {
                    let prev = if i == 0 {
                        &zero[..]
                    } else {
                        recs.get((i - 1) * rs..i * rs)?
                    };
                    Some((recs.get(i * rs..(i + 1) * rs)?, prev))
                };
                assert!(delta_planes(&plan, n, NONE, row, &starts, &mut got));
                assert_eq!(got, want, "layout {k}, {n} rows against the row before");
            }
            // A missing record or a short plane buffer is refused.
            let mut starts = Vec::new();
            plane_starts(&o, 16, rs, &mut starts);
            let short = |i: usize| (i < 15).then_some((&cur[..rs], &reference[..rs]));
            assert!(!delta_planes(
                &plan,
                16,
                NONE,
                short,
                &starts,
                &mut vec![0; 16 * rs]
            ));
            let whole = |_: usize| Some((&cur[..rs], &reference[..rs]));
            assert!(!delta_planes(
                &plan,
                16,
                NONE,
                whole,
                &starts,
                &mut vec![0; 16 * rs - 1]
            ));
        }
        assert!(planned >= 20, "{planned} layouts planned");
        assert!(tailed >= 3, "{tailed} layouts with tail lanes");
        assert!(
            tails_written >= 10,
            "{tails_written} sections with tail lanes"
        );
        // Every kind of chunk a plan has (the one-operator kinds are for
        // tail lanes only).
        let kinds = [
            Lanes::Zigzag1,
            Lanes::Zigzag2,
            Lanes::Zigzag4,
            Lanes::Zigzag8,
            Lanes::Mixed,
        ];
        for k in kinds {
            assert!(seen[k as usize], "no {k:?} chunk");
        }
    }
}
