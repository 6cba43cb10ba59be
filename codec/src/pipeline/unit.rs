//! The implied element of a unit field (FORMAT.md 4.10): the last element
//! of a float array declared a unit vector is coded against
//!
//! `p = ±sqrt(1 − (x₀² + x₁² + … ))`
//!
//! from the row's other elements of the field (final before it: they come
//! first in element order), in binary64 left to right, `+0` when the sum
//! is not below 1 or not a number, rounded to the element's type, with the
//! sign bit of the baseline's element. Whether the element changed is still
//! judged against the baseline. Its value is the zigzag of the bit-pattern
//! difference, never a kind bit: the coder reads it without waiting for
//! the square root.

use super::values::{mask, unzigzag_add, zigzag_diff, BadValue};
use crate::schema::{Primitive, Unit};

/// `w` (4 or 8) little-endian bytes of `r` at `at` as an integer.
#[inline(always)]
fn load(r: &[u8], at: usize, w: usize) -> Option<u64> {
    if w == 4 {
        Some(u64::from(u32::from_le_bytes(
            r.get(at..at + 4)?.try_into().ok()?,
        )))
    } else {
        Some(u64::from_le_bytes(r.get(at..at + 8)?.try_into().ok()?))
    }
}

/// The implied value's bits for unit `u`, from the other elements in `row`
/// and the sign of the element in `base`; `None` past either record.
#[inline]
fn implied(u: &Unit, row: &[u8], base: &[u8]) -> Option<u64> {
    let w = u.ty.size();
    let mut sum = 0.0f64;
    for k in 0..u.len - 1 {
        let x = load(row, u.offset + k * w, w)?;
        let x = if w == 4 {
            f64::from(f32::from_bits(x as u32))
        } else {
            f64::from_bits(x)
        };
        sum += x * x;
    }
    let t = 1.0 - sum;
    let m = if t > 0.0 { t.sqrt() } else { 0.0 };
    let b = load(base, u.implied_offset(), w)?;
    Some(if u.ty == Primitive::F32 {
        u64::from((m as f32).to_bits()) | (b & 0x8000_0000)
    } else {
        m.to_bits() | (b & (1 << 63))
    })
}

/// The value of unit `u`'s implied element in the changed row `cur` (it
/// differs from the baseline record `base`): the zigzag of its bits'
/// difference from the implied value's.
#[inline]
pub(crate) fn encode_value(u: &Unit, cur: &[u8], base: &[u8]) -> Option<u64> {
    let w = u.ty.size();
    let p = implied(u, cur, base)?;
    Some(zigzag_diff(load(cur, u.implied_offset(), w)?, p, w as u8))
}

/// Applies value `v` of unit `u`'s implied element to `out` (the row being
/// decoded, the field's other elements final) against the implied value;
/// a value too wide, or one that leaves the element as the baseline record
/// `base` has it, is refused.
#[inline]
pub(crate) fn decode_value(u: &Unit, v: u64, base: &[u8], out: &mut [u8]) -> Result<(), BadValue> {
    let (at, w) = (u.implied_offset(), u.ty.size());
    if v & !mask(w as u8) != 0 {
        return Err(BadValue);
    }
    let p = implied(u, out, base).ok_or(BadValue)?;
    let c = unzigzag_add(v, p, w as u8);
    if Some(c) == load(base, at, w) {
        return Err(BadValue);
    }
    let dst = out.get_mut(at..at + w).ok_or(BadValue)?;
    dst.copy_from_slice(&c.to_le_bytes()[..w]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quat(v: [f32; 4]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    const U: Unit = Unit {
        element: 3,
        offset: 0,
        len: 4,
        ty: Primitive::F32,
    };

    #[test]
    fn implied_takes_the_baselines_sign_and_clamps_to_zero() {
        let (x, y, z) = (0.1f32, -0.2f32, 0.3f32);
        let sq = |v: f32| f64::from(v) * f64::from(v);
        let w = (1.0 - (sq(x) + sq(y) + sq(z))).sqrt() as f32;
        let row = quat([x, y, z, 0.5]);
        let bits = |v: f32| Some(u64::from(v.to_bits()));
        assert_eq!(implied(&U, &row, &quat([0.0, 0.0, 0.0, -1.0])), bits(-w));
        assert_eq!(implied(&U, &row, &quat([0.0, 0.0, 0.0, 1.0])), bits(w));
        // Not a unit vector, or not numbers: +0 (with the baseline's sign).
        let zero = quat([0.0; 4]);
        assert_eq!(implied(&U, &quat([1.0, 1.0, 0.0, 0.0]), &zero), bits(0.0));
        let nan = quat([f32::NAN, 0.0, 0.0, 0.0]);
        assert_eq!(implied(&U, &nan, &quat([0.0, 0.0, 0.0, -0.0])), bits(-0.0));
    }

    #[test]
    fn values_round_trip_and_one_that_changes_nothing_is_refused() {
        let base = quat([0.0, 0.0, 0.6, 0.8]);
        for w in [0.96f32, 0.5, -0.96, f32::NAN, 0.0] {
            let cur = quat([0.0, 0.0, 0.28, w]);
            let v = encode_value(&U, &cur, &base).unwrap();
            let mut out = quat([0.0, 0.0, 0.28, 0.8]);
            decode_value(&U, v, &base, &mut out).unwrap();
            assert_eq!(out, cur);
        }
        // 0.96 is exactly what 0.28 implies.
        assert_eq!(
            encode_value(&U, &quat([0.0, 0.0, 0.28, 0.96]), &base),
            Some(0)
        );
        // A value giving back the baseline's 0.8, or wider than the element.
        let cur = quat([0.0, 0.0, 0.28, 0.8]);
        let v = encode_value(&U, &cur, &base).unwrap();
        let mut out = cur.clone();
        assert_eq!(decode_value(&U, v, &base, &mut out), Err(BadValue));
        assert_eq!(decode_value(&U, 1 << 40, &base, &mut out), Err(BadValue));
    }
}
