//! Values to codes of a fixed-step `f32` slot (fixed point: `code =
//! round_ties_even(x / step)` within `lo..=hi`; angles: the wrapped code of
//! [`scalar::angle_code`]), refusing a value that `code · step` rounded to
//! `f32` does not give back bit for bit, four records at a time: element
//! `e` of four consecutive records is one vector. The same codes and the
//! same refusals as [`plan::fixed_to_code`] and [`plan::angle_to_code`].
//!
//! [`scalar::angle_code`]: super::scalar::angle_code

use super::float::F32;
use super::fours::in_fours;
use super::plan;

/// What one slot's values are coded as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Code {
    /// Fixed point, codes `lo..=hi` (`lo` above `i32::MIN`).
    Fixed { step: f64, lo: i32, hi: i32 },
    /// Angle of `bits` (1 to 31) bits per turn.
    Angle { bits: u8, step: f64, turn: f64 },
}

/// The codes of four values (`f32` bits), or `None` when one is refused.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn code4(x: [u32; 4], c: Code) -> Option<[i32; 4]> {
    portable(x, c)
}

#[cfg(target_arch = "x86_64")]
#[path = "code4_sse2.rs"]
mod sse2;
#[cfg(target_arch = "x86_64")]
use sse2::code4;

/// One value's code, as the scalar transform gives it.
#[inline(always)]
fn one(x: u32, c: Code) -> Option<i32> {
    let x = f64::from(f32::from_bits(x));
    let q = match c {
        Code::Fixed { step, lo, hi } => {
            plan::fixed_to_code::<F32>(x, step, f64::from(lo), f64::from(hi))
        }
        Code::Angle { bits, step, turn } => plan::angle_to_code::<F32>(x, bits, step, turn),
    };
    // Codes of `f32` slots fit an `i32` (their limits do).
    q.map(|q| q as i32)
}

/// [`code4`] one lane at a time.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn portable(x: [u32; 4], c: Code) -> Option<[i32; 4]> {
    let [a, b, d, e] = x;
    Some([one(a, c)?, one(b, c)?, one(d, c)?, one(e, c)?])
}

/// Replaces the `len` values at `offset` of each record of `records` (`rs`
/// bytes each) by their codes, in whole fours of records; returns the
/// records done (the rest are left to the caller). `Err((record,
/// element))` names the first refused value in record order (within a
/// record, element order).
pub(super) fn fours(
    offset: usize,
    len: usize,
    c: Code,
    records: &mut [u8],
    rs: usize,
) -> Result<usize, (usize, usize)> {
    in_fours(
        offset,
        len,
        records,
        rs,
        |x| code4(x, c).map(|q| q.map(|q| q as u32)),
        |x| one(x, c).is_some(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::fours::word;
    use super::*;
    use crate::quant::scalar;

    /// Values around the codes of `step`: exact, one ulp off, halves,
    /// zeros, infinities, NaNs, huge and tiny values.
    fn values(next: &mut impl FnMut() -> u64, step: f64, hi: i32) -> u32 {
        let v = next();
        let q = (v >> 8) as i64 % (2 * i64::from(hi) + 7) - i64::from(hi) - 3;
        let exact = (q as f64 * step) as f32;
        match v % 12 {
            0..=2 => exact.to_bits(),
            3 => exact.to_bits().wrapping_add(1),
            4 => exact.to_bits().wrapping_sub(1),
            5 => (((q as f64 + 0.5) * step) as f32).to_bits(),
            6 => (((q as f64 + 0.5) * step) as f32).to_bits() ^ 0x8000_0000,
            7 => [
                0u32,
                0x8000_0000,
                0x7f80_0000,
                0xff80_0000,
                0x7fc0_0000,
                0xffc0_0001,
            ][(v >> 8) as usize % 6],
            8 => [
                0x7f7f_ffff,
                0xff7f_ffff,
                1,
                0x8000_0001,
                0x0080_0000,
                0x4f00_0000,
            ][(v >> 8) as usize % 6],
            9 => (v >> 32) as u32,
            10 => ((q as f64 * step) as f32 * 1024.0).to_bits(),
            _ => (((v >> 16) as f64 / 65536.0 - 32768.0) as f32).to_bits(),
        }
    }

    fn rng() -> impl FnMut() -> u64 {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn vector_and_portable_agree() {
        let mut next = rng();
        let fixed = [
            (0.001, -4_096_000, 4_096_000),
            (0.01, -20_000, 20_000),
            (1.0 / 127.0, -127, 127),
            (3.0, -5, 9),
            (0.5, -(1 << 22), 1 << 22),
            (1e-30, -(1 << 22), 1 << 22),
        ];
        let angles = [
            (
                16u8,
                scalar::angle_step(16, crate::quant::AngleUnit::Radians),
                core::f64::consts::TAU,
            ),
            (
                8,
                scalar::angle_step(8, crate::quant::AngleUnit::Degrees),
                360.0,
            ),
            (1, 0.5, 1.0),
            (22, 2f64.powi(-22), 1.0),
        ];
        let (mut accepted, mut refused) = (0, 0);
        for i in 0..200_000 {
            let c = if i % 2 == 0 {
                let (step, lo, hi) = fixed[next() as usize % fixed.len()];
                Code::Fixed { step, lo, hi }
            } else {
                let (bits, step, turn) = angles[next() as usize % angles.len()];
                Code::Angle { bits, step, turn }
            };
            let (step, hi) = match c {
                Code::Fixed { step, hi, .. } => (step, hi),
                Code::Angle { bits, step, .. } => (step, 1 << bits),
            };
            let mut x = [(); 4].map(|()| values(&mut next, step, hi));
            if i % 3 != 0 {
                // Mostly representable values, so that whole fours pass.
                for v in &mut x {
                    if !next().is_multiple_of(16) {
                        let q = (next() % (2 * hi as u64 + 1)) as i64 - i64::from(hi);
                        *v = ((q as f64 * step) as f32).to_bits();
                    }
                }
            }
            let v = code4(x, c);
            assert_eq!(v, portable(x, c), "{x:x?} {c:?}");
            if v.is_some() {
                accepted += 1;
            } else {
                refused += 1;
            }
        }
        // Both outcomes are exercised.
        assert!(
            accepted > 10_000 && refused > 10_000,
            "{accepted} {refused}"
        );
    }

    /// Four records of `len` values each at `offset` through `fours` and
    /// one value at a time agree (codes and the first refusal).
    #[test]
    fn fours_agree_with_one_value_at_a_time() {
        let mut next = rng();
        let c = Code::Fixed {
            step: 0.25,
            lo: -100,
            hi: 100,
        };
        for n in [0usize, 1, 3, 4, 5, 8, 15, 16, 17] {
            for (rs, offset, len) in [(20usize, 4usize, 3usize), (13, 1, 3), (4, 0, 1)] {
                for bad in [None, Some(0), Some(1), Some(2)] {
                    let mut records = vec![0u8; n * rs];
                    for r in 0..n {
                        for e in 0..len {
                            let q = (next() % 201) as i32 - 100;
                            let at = r * rs + offset + 4 * e;
                            let v = (f64::from(q) * 0.25) as f32;
                            records[at..at + 4].copy_from_slice(&v.to_le_bytes());
                        }
                    }
                    if let (Some(k), true) = (bad, n > 0) {
                        // A few refused values: off the grid, or beyond the range.
                        for _ in 0..=k {
                            let r = next() as usize % n;
                            let e = next() as usize % len;
                            let at = r * rs + offset + 4 * e;
                            let v: f32 = if k == 1 { 26.0 } else { 0.1 };
                            records[at..at + 4].copy_from_slice(&v.to_le_bytes());
                        }
                    }
                    let mut want = records.clone();
                    let mut first = None;
                    'r: for r in 0..n {
                        for e in 0..len {
                            let at = r * rs + offset + 4 * e;
                            match one(word(&want[at..at + 4]), c) {
                                Some(q) => want[at..at + 4].copy_from_slice(&q.to_le_bytes()),
                                None => {
                                    first = Some((r, e));
                                    break 'r;
                                }
                            }
                        }
                    }
                    let mut got = records.clone();
                    let out = fours(offset, len, c, &mut got, rs);
                    match first {
                        Some((r, e)) if r < n / 4 * 4 => assert_eq!(out, Err((r, e))),
                        _ => {
                            assert_eq!(out, Ok(n / 4 * 4), "{n} {rs} {bad:?}");
                            let end = n / 4 * 4 * rs;
                            assert_eq!(got[..end], want[..end], "{n} {rs} {bad:?}");
                            assert_eq!(got[end..], records[end..]);
                        }
                    }
                }
            }
        }
    }
}
