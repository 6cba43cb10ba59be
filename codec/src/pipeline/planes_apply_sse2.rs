//! The changed rows of a byte-plane section rebuilt straight from the
//! planes (x86_64): blocks of sixteen rows by sixteen record bytes
//! transposed in SSE2 registers ([`super::transpose_sse2`]) and decoded
//! against their references there ([`super::record_apply_sse2`]), chunk
//! by chunk of the section's [`ApplyPlan`], without the rows' deltas
//! going through memory; the plan's tail lanes then row by row, each
//! lane's bytes read from its planes.

use safe_arch::{m128i, zeroed_m128i};

use super::decode_planes::Places;
use super::record_apply::{read, ApplyPlan, Lane};
use super::record_apply_sse2::Masks;
use super::sse2::{load, store};
use super::transpose_sse2::{block_starts, transpose16};

/// Rebuilds the records of rows `0..rows` whose deltas are held by
/// `planes` (record byte `c` of row `k` at `planes[starts[c] + k]`, every
/// plane at least `rows` bytes), and sets `differs[k]` to whether row
/// `k`'s record differs from its reference. Returns `false` if `at` names
/// fewer rows (the records are then to be rebuilt another way).
#[inline(always)]
pub(super) fn changed_rows(
    plan: &ApplyPlan,
    planes: &[u8],
    starts: &[usize],
    rows: usize,
    at: Places<'_>,
    differs: &mut Vec<bool>,
) -> bool {
    differs.clear();
    differs.resize(rows, false);
    let Places {
        reference,
        refs,
        out,
        outs,
    } = at;
    let (Some(refs), Some(outs)) = (refs.get(..rows), outs.get(..rows)) else {
        return false;
    };
    for chunk in plan.chunks() {
        let c = chunk.at;
        let masks = Masks::new(chunk);
        // Row `i` of a block at column `c`: its record from delta `d`.
        let mut row = |d, ra: usize, oa: usize| {
            let (ra, oa) = (ra + c, oa + c);
            let (o, changed) = masks.decode(d, load(reference, ra), || load(out, oa));
            store(out, oa, o);
            changed
        };
        let Some(starts) = starts.get(c..c + 16) else {
            return false;
        };
        let mut a = [zeroed_m128i(); 16];
        if rows < 16 {
            // One block, its rows from `rows` on ignored.
            for (a, &s) in a.iter_mut().zip(starts) {
                *a = load_short(planes, s, rows);
            }
            let t = transpose16(a);
            for (i, ((&ra, &oa), d)) in refs.iter().zip(outs).zip(&mut *differs).enumerate() {
                *d |= row(t[i & 15], ra, oa);
            }
            continue;
        }
        // The sixteen planes of this chunk's record bytes.
        let mut cols: [&[u8]; 16] = [&[]; 16];
        for (col, &s) in cols.iter_mut().zip(starts) {
            let Some(p) = planes.get(s..).and_then(|p| p.get(..rows)) else {
                return false;
            };
            *col = p;
        }
        // Rows before `done` are rebuilt (the last block overlaps the
        // one before it).
        let mut done = 0usize;
        for r in block_starts(rows) {
            for (a, col) in a.iter_mut().zip(&cols) {
                *a = load(col, r);
            }
            let t = transpose16(a);
            let block = r..r + 16;
            let (Ok(refs), Ok(outs), Ok(differs)) = (
                <&[usize; 16]>::try_from(&refs[block.clone()]),
                <&[usize; 16]>::try_from(&outs[block.clone()]),
                <&mut [bool; 16]>::try_from(&mut differs[block]),
            ) else {
                return false;
            };
            for i in done.saturating_sub(r)..16 {
                differs[i] |= row(t[i], refs[i], outs[i]);
            }
            done = r + 16;
        }
    }
    for lane in plan.tail() {
        let at = (planes, starts, reference, refs, &mut *out, outs);
        let done = match lane.width {
            1 => tail_rows::<1>(lane, at, differs),
            2 => tail_rows::<2>(lane, at, differs),
            4 => tail_rows::<4>(lane, at, differs),
            _ => tail_rows::<8>(lane, at, differs),
        };
        if !done {
            return false;
        }
    }
    true
}

/// The planes, plane starts, references, their places, the records and
/// theirs, of [`changed_rows`].
type Rows<'a> = (
    &'a [u8],
    &'a [usize],
    &'a [u8],
    &'a [usize],
    &'a mut [u8],
    &'a [usize],
);

/// [`changed_rows`] for one tail lane of the plan, `W` bytes wide, row by
/// row; `false` if a plane or record is short.
#[inline(always)]
fn tail_rows<const W: usize>(
    lane: &Lane,
    (planes, starts, reference, refs, out, outs): Rows<'_>,
    differs: &mut [bool],
) -> bool {
    let rows = refs.len();
    let Some(starts) = starts.get(lane.at..lane.at + W) else {
        return false;
    };
    let mut cols: [&[u8]; W] = [&[]; W];
    for (col, &s) in cols.iter_mut().zip(starts) {
        let Some(p) = planes.get(s..).and_then(|p| p.get(..rows)) else {
            return false;
        };
        *col = p;
    }
    let mask = u64::MAX >> (64 - 8 * W);
    for (k, ((&ra, &oa), d)) in refs.iter().zip(outs).zip(differs).enumerate() {
        let mut delta = 0u64;
        for (j, col) in cols.iter().enumerate() {
            delta |= u64::from(col.get(k).copied().unwrap_or(0)) << (8 * j);
        }
        let (ra, oa) = (ra + lane.at, oa + lane.at);
        let (Some(r), Some(o)) = (
            reference
                .get(ra..ra + W)
                .and_then(|b| <&[u8; W]>::try_from(b).ok()),
            out.get_mut(oa..oa + W),
        ) else {
            return false;
        };
        let r = read(r);
        let v = lane.decode(delta, r);
        o.copy_from_slice(&v.to_le_bytes()[..W]);
        *d |= (v ^ r) & mask != 0;
    }
    true
}

/// Rebuilds the spawned records whose deltas are rows `skip..` of
/// `planes` (record byte `c` of spawned row `j` at
/// `planes[starts[c] + skip + j]`, every plane at least `skip + at.len()`
/// bytes) into `out` at `at` (ascending), each against the one before it,
/// the first against `reference` (the type's default record). Chunk by
/// chunk the record before is held in a register. Returns `false` if a
/// plane or record is short (the records are then to be rebuilt another
/// way).
#[inline(never)]
pub(super) fn spawned_rows(
    plan: &ApplyPlan,
    planes: &[u8],
    starts: &[usize],
    skip: usize,
    reference: &[u8],
    out: &mut [u8],
    at: &[usize],
) -> bool {
    let rows = at.len();
    if rows == 0 {
        return true;
    }
    for chunk in plan.chunks() {
        let c = chunk.at;
        let masks = Masks::new(chunk);
        let (Some(starts), Some(first)) = (starts.get(c..c + 16), reference.get(c..c + 16)) else {
            return false;
        };
        let mut prev = load(first, 0);
        // The record at `oa` from delta `d` and the record before, `prev`.
        let mut row = |d, prev: m128i, oa: usize| {
            let b = out.get_mut(oa + c..oa + c + 16)?;
            let (o, _) = masks.decode(d, prev, || load(b, 0));
            store(b, 0, o);
            Some(o)
        };
        let mut a = [zeroed_m128i(); 16];
        if rows < 16 {
            // One block, its rows from `rows` on ignored.
            for (a, &s) in a.iter_mut().zip(starts) {
                *a = load_short(planes, s + skip, rows);
            }
            let t = transpose16(a);
            for (&d, &oa) in t.iter().zip(at) {
                let Some(o) = row(d, prev, oa) else {
                    return false;
                };
                prev = o;
            }
            continue;
        }
        // The sixteen planes of this chunk's record bytes.
        let mut cols: [&[u8]; 16] = [&[]; 16];
        for (col, &s) in cols.iter_mut().zip(starts) {
            let Some(p) = planes.get(s + skip..).and_then(|p| p.get(..rows)) else {
                return false;
            };
            *col = p;
        }
        // Rows before `done` are rebuilt (the last block overlaps the
        // one before it).
        let mut done = 0usize;
        for r in block_starts(rows) {
            for (a, col) in a.iter_mut().zip(&cols) {
                *a = load(col, r);
            }
            let t = transpose16(a);
            let Some(at) = at.get(r..r + 16) else {
                return false;
            };
            let new = done.saturating_sub(r);
            for (&d, &oa) in t.iter().zip(at).skip(new) {
                let Some(o) = row(d, prev, oa) else {
                    return false;
                };
                prev = o;
            }
            done = r + 16;
        }
    }
    for lane in plan.tail() {
        let done = match lane.width {
            1 => spawned_tail::<1>(lane, planes, starts, skip, reference, out, at),
            2 => spawned_tail::<2>(lane, planes, starts, skip, reference, out, at),
            4 => spawned_tail::<4>(lane, planes, starts, skip, reference, out, at),
            _ => spawned_tail::<8>(lane, planes, starts, skip, reference, out, at),
        };
        if !done {
            return false;
        }
    }
    true
}

/// [`spawned_rows`] for one tail lane of the plan, `W` bytes wide, row by
/// row; `false` if a plane or record is short.
#[inline(always)]
fn spawned_tail<const W: usize>(
    lane: &Lane,
    planes: &[u8],
    starts: &[usize],
    skip: usize,
    reference: &[u8],
    out: &mut [u8],
    at: &[usize],
) -> bool {
    let rows = at.len();
    let (Some(starts), Some(first)) = (
        starts.get(lane.at..lane.at + W),
        reference
            .get(lane.at..lane.at + W)
            .and_then(|b| <&[u8; W]>::try_from(b).ok()),
    ) else {
        return false;
    };
    let mut cols: [&[u8]; W] = [&[]; W];
    for (col, &s) in cols.iter_mut().zip(starts) {
        let Some(p) = planes.get(s + skip..).and_then(|p| p.get(..rows)) else {
            return false;
        };
        *col = p;
    }
    let mask = u64::MAX >> (64 - 8 * W);
    let mut prev = read(first);
    for (k, &oa) in at.iter().enumerate() {
        let mut delta = 0u64;
        for (j, col) in cols.iter().enumerate() {
            delta |= u64::from(col.get(k).copied().unwrap_or(0)) << (8 * j);
        }
        let Some(o) = out.get_mut(oa + lane.at..oa + lane.at + W) else {
            return false;
        };
        let v = lane.decode(delta, prev);
        o.copy_from_slice(&v.to_le_bytes()[..W]);
        prev = v & mask;
    }
    true
}

/// The first `rows` bytes (under sixteen) of the plane at `at` in
/// `planes`, and bytes after them: the plane's own when `planes` has
/// sixteen from `at`, else zeros.
#[inline(always)]
fn load_short(planes: &[u8], at: usize, rows: usize) -> m128i {
    if let Some(b) = planes.get(at..at + 16) {
        return load(b, 0);
    }
    let mut b = [0u8; 16];
    if let Some(p) = planes.get(at..at + rows) {
        b[..rows].copy_from_slice(p);
    }
    m128i::from(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::planes::{order, row_apply};
    use crate::pipeline::record_apply::tests::{bytes, layouts};
    use crate::pipeline::transpose::plane_starts;
    use crate::pipeline::values::Element;

    #[test]
    fn changed_rows_match_row_apply() {
        let mut tried = 0;
        for (li, (spans, rs)) in layouts().into_iter().enumerate() {
            let Some(plan) = ApplyPlan::new(&spans, rs) else {
                continue;
            };
            // One element per lane, for the plane order.
            let els: Vec<Element> = spans
                .iter()
                .flat_map(|s| {
                    let w = if matches!(
                        s.op,
                        crate::schema::DeltaOp::Int | crate::schema::DeltaOp::Predict
                    ) {
                        s.width
                    } else {
                        1
                    };
                    (s.offset..s.offset + s.len)
                        .step_by(w)
                        .map(move |o| Element {
                            offset: o as u16,
                            width: w as u8,
                            op: s.op,
                            float: false,
                            grid: None,
                        })
                })
                .collect();
            let o = order(&els);
            for (rows, n) in [
                (1, 1),
                (5, 9),
                (15, 15),
                (15, 20),
                (16, 16),
                (17, 23),
                (33, 33),
                (40, 47),
            ] {
                tried += 1;
                let seed = (li * 100 + rows) as u32;
                let planes = bytes(o.len() * n, seed);
                let mut starts = Vec::new();
                assert!(plane_starts(&o, n, rs, &mut starts));
                // References and records at scattered places.
                let reference = bytes((2 * rows + 3) * rs, seed + 1);
                let refs: Vec<usize> = (0..rows).map(|k| (2 * k + 1) * rs).collect();
                let outs: Vec<usize> = (0..rows).map(|k| (rows + 1 - k) * rs).collect();
                let mut out = bytes((rows + 3) * rs, seed + 2);
                let mut differs = Vec::new();
                let done = changed_rows(
                    &plan,
                    &planes,
                    &starts,
                    rows,
                    Places {
                        reference: &reference,
                        refs: &refs,
                        out: &mut out,
                        outs: &outs,
                    },
                    &mut differs,
                );
                assert!(done);
                for k in 0..rows {
                    let delta: Vec<u8> = (0..rs).map(|c| planes[starts[c] + k]).collect();
                    let r = &reference[refs[k]..refs[k] + rs];
                    let mut want = vec![0; rs];
                    row_apply(&spans, &delta, r, &mut want);
                    assert_eq!(out[outs[k]..outs[k] + rs], want[..], "layout {li}, row {k}");
                    assert_eq!(differs[k], want != r, "layout {li}, row {k}");
                }
                // A row whose delta is zero does not differ (no `None` span).
                if spans.iter().all(|s| s.op != crate::schema::DeltaOp::None) {
                    let mut zero = planes.clone();
                    let z = rows / 2;
                    for &s in &starts {
                        zero[s + z] = 0;
                    }
                    changed_rows(
                        &plan,
                        &zero,
                        &starts,
                        rows,
                        Places {
                            reference: &reference,
                            refs: &refs,
                            out: &mut out,
                            outs: &outs,
                        },
                        &mut differs,
                    );
                    assert!(!differs[z]);
                    assert_eq!(out[outs[z]..outs[z] + rs], reference[refs[z]..refs[z] + rs]);
                }
            }
        }
        assert!(tried > 40, "{tried}");
    }

    #[test]
    fn spawned_rows_match_chained_row_apply() {
        let mut tried = 0;
        for (li, (spans, rs)) in layouts().into_iter().enumerate() {
            let Some(plan) = ApplyPlan::new(&spans, rs) else {
                continue;
            };
            // One plane per record byte, in record order.
            let o: Vec<u16> = (0..rs as u16).collect();
            for (rows, skip) in [(0, 3), (1, 0), (2, 5), (15, 0), (16, 1), (17, 0), (33, 7)] {
                tried += 1;
                let n = skip + rows;
                let seed = (li * 100 + rows) as u32;
                let planes = bytes(o.len() * n, seed);
                let mut starts = Vec::new();
                assert!(plane_starts(&o, n, rs, &mut starts));
                let default = bytes(rs, seed + 1);
                // Records at ascending, scattered places.
                let at: Vec<usize> = (0..rows).map(|j| (2 * j + 1) * rs).collect();
                let mut out = bytes((2 * rows + 2) * rs, seed + 2);
                let mut want = out.clone();
                assert!(spawned_rows(
                    &plan, &planes, &starts, skip, &default, &mut out, &at
                ));
                let mut prev = default.clone();
                for (j, &a) in at.iter().enumerate() {
                    let delta: Vec<u8> = (0..rs).map(|c| planes[starts[c] + skip + j]).collect();
                    row_apply(&spans, &delta, &prev, &mut want[a..a + rs]);
                    prev = want[a..a + rs].to_vec();
                }
                assert_eq!(out, want, "layout {li}, {rows} rows");
                // A record past the end is refused.
                let far = [out.len()];
                assert!(!spawned_rows(
                    &plan, &planes, &starts, skip, &default, &mut out, &far
                ));
            }
        }
        assert!(tried > 40, "{tried}");
    }
}
