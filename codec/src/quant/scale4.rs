//! Codes to values of a fixed-step `f32` slot (fixed point and angles:
//! `value = code · step`, rounded to `f32`, for codes in `lo..=hi`), four
//! records at a time: element `e` of four consecutive records is one
//! vector.

use super::fours::in_fours;

/// Four codes scaled by `step` and rounded to `f32`, or `None` when one is
/// outside `lo..=hi`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn scale4(codes: [i32; 4], lo: i32, hi: i32, step: f64) -> Option<[f32; 4]> {
    portable(codes, lo, hi, step)
}

#[cfg(target_arch = "x86_64")]
use super::scale4_sse2::scale4;

/// [`scale4`] one lane at a time.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn portable(codes: [i32; 4], lo: i32, hi: i32, step: f64) -> Option<[f32; 4]> {
    if codes.iter().any(|&q| q < lo || q > hi) {
        return None;
    }
    Some(codes.map(|q| (f64::from(q) * step) as f32))
}

/// Replaces the `len` codes at `offset` of each record of `records` (`rs`
/// bytes each, `lo..=hi` within `i32`) by their values, in whole fours of
/// records; returns the records done (the rest are left to the caller).
/// `Err((record, element))` names the first code outside `lo..=hi` in
/// record order (within a record, element order).
pub(super) fn fours(
    offset: usize,
    len: usize,
    lo: i32,
    hi: i32,
    step: f64,
    records: &mut [u8],
    rs: usize,
) -> Result<usize, (usize, usize)> {
    in_fours(
        offset,
        len,
        records,
        rs,
        |w| scale4(w.map(|q| q as i32), lo, hi, step).map(|v| v.map(f32::to_bits)),
        |w| (lo..=hi).contains(&(w as i32)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_and_portable_agree() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let steps = [
            0.001,
            0.01,
            1.0 / 127.0,
            core::f64::consts::TAU / 65536.0,
            3.0,
        ];
        for _ in 0..100_000 {
            let pick = |v: u64| match v % 4 {
                0 => (v >> 8) as i32,
                1 => ((v >> 8) % 2001) as i32 - 1000,
                2 => ((v >> 8) % 8_192_001) as i32 - 4_096_000,
                _ => i32::MIN + (v >> 40) as i32 % 3,
            };
            let codes = [pick(next()), pick(next()), pick(next()), pick(next())];
            let (a, b) = (pick(next()), pick(next()));
            let (lo, hi) = if next() % 2 == 0 {
                (a.min(b), a.max(b))
            } else {
                (i32::MIN, i32::MAX)
            };
            let step = steps[next() as usize % steps.len()];
            let v = scale4(codes, lo, hi, step).map(|v| v.map(f32::to_bits));
            let p = portable(codes, lo, hi, step).map(|v| v.map(f32::to_bits));
            assert_eq!(v, p, "{codes:?} {lo} {hi} {step}");
        }
    }

    #[test]
    fn fours_convert_and_name_the_first_refused_code() {
        let (rs, offset, len) = (20usize, 4usize, 3usize);
        let n = 11;
        let mut records = vec![0u8; n * rs];
        for r in 0..n {
            for e in 0..len {
                let q = (r * 10 + e) as i32 - 50;
                let at = r * rs + offset + 4 * e;
                records[at..at + 4].copy_from_slice(&q.to_le_bytes());
            }
        }
        let mut got = records.clone();
        assert_eq!(fours(offset, len, -50, 60, 0.5, &mut got, rs), Ok(8));
        for r in 0..n {
            for e in 0..len {
                let q = (r * 10 + e) as i32 - 50;
                let at = r * rs + offset + 4 * e;
                let want = if r < 8 {
                    ((f64::from(q) * 0.5) as f32).to_le_bytes()
                } else {
                    q.to_le_bytes()
                };
                assert_eq!(got[at..at + 4], want, "record {r} element {e}");
            }
        }
        // Record 5 holds 0..2 (valid up to 1), record 6 10..12: the first
        // refused code is record 5's element 2, though record 6's element 0
        // is refused too and comes first in its vector's order.
        let mut got = records.clone();
        assert_eq!(fours(offset, len, -60, 1, 0.5, &mut got, rs), Err((5, 2)));
        let mut got = records;
        assert_eq!(fours(offset, len, -45, 100, 0.5, &mut got, rs), Err((0, 0)));
    }
}
