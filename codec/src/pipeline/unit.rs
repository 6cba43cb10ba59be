//! The implied element of a unit field (FORMAT.md 4.10): the last element
//! of a float array declared a unit vector is coded against
//!
//! `p = ±sqrt(1 − (x₀² + x₁² + … ))`
//!
//! from the row's other elements of the field (final before it: they come
//! first in element order), in binary64 left to right, `+0` when the sum
//! is not below 1 or not a number, rounded to the element's type, with the
//! sign bit of the baseline's element. Whether the element changed is still
//! judged against the baseline.

use crate::schema::{Primitive, Unit};

/// The implied value's bytes (the element's width of them) for unit `u`,
/// from the other elements in `row` and the sign of the element in
/// `base`; `None` past either record.
#[inline]
fn implied(u: &Unit, row: &[u8], base: &[u8]) -> Option<[u8; 8]> {
    let w = u.ty.size();
    let mut sum = 0.0f64;
    for k in 0..u.len - 1 {
        let x = u.ty.to_f64(row.get(u.offset + k * w..)?)?;
        sum += x * x;
    }
    let t = 1.0 - sum;
    let m = if t > 0.0 { t.sqrt() } else { 0.0 };
    let at = u.implied_offset();
    let mut out = [0u8; 8];
    if u.ty == Primitive::F32 {
        let sign = u32::from_le_bytes(base.get(at..at + 4)?.try_into().ok()?) & 0x8000_0000;
        let bits = (m as f32).to_bits() | sign;
        out[..4].copy_from_slice(&bits.to_le_bytes());
    } else {
        let sign = u64::from_le_bytes(base.get(at..at + 8)?.try_into().ok()?) & (1 << 63);
        out.copy_from_slice(&(m.to_bits() | sign).to_le_bytes());
    }
    Some(out)
}

/// Writes the implied value of unit `u` into `reference` (a row's
/// reference record), from the other elements of `row` and the sign in
/// `base`.
#[inline]
pub(crate) fn apply(u: &Unit, row: &[u8], base: &[u8], reference: &mut [u8]) {
    let (at, w) = (u.implied_offset(), u.ty.size());
    if let (Some(p), Some(dst)) = (implied(u, row, base), reference.get_mut(at..at + w)) {
        dst.copy_from_slice(&p[..w]);
    }
}

/// [`apply`] for every unit field of a row's type: `reference` (a copy of
/// the row's reference record) gets the implied values computed from the
/// current record `row`.
pub(crate) fn reference(units: &[Unit], row: &[u8], base: &[u8], reference: &mut [u8]) {
    for u in units {
        apply(u, row, base, reference);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quat(v: [f32; 4]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn implied_takes_the_baselines_sign_and_clamps_to_zero() {
        let u = Unit {
            element: 3,
            offset: 0,
            len: 4,
            ty: Primitive::F32,
        };
        let (x, y, z) = (0.1f32, -0.2f32, 0.3f32);
        let s =
            f64::from(x) * f64::from(x) + f64::from(y) * f64::from(y) + f64::from(z) * f64::from(z);
        let w = (1.0 - s).sqrt() as f32;
        let row = quat([x, y, z, 0.5]);
        let mut r = quat([0.0; 4]);
        reference(&[u], &row, &quat([0.0, 0.0, 0.0, -1.0]), &mut r);
        assert_eq!(r, quat([0.0, 0.0, 0.0, -w]));
        reference(&[u], &row, &quat([0.0, 0.0, 0.0, 1.0]), &mut r);
        assert_eq!(r, quat([0.0, 0.0, 0.0, w]));
        // Not a unit vector, or not numbers: +0 (with the baseline's sign).
        reference(&[u], &quat([1.0, 1.0, 0.0, 0.0]), &quat([0.0; 4]), &mut r);
        assert_eq!(r, quat([0.0; 4]));
        reference(
            &[u],
            &quat([f32::NAN, 0.0, 0.0, 0.0]),
            &quat([0.0, 0.0, 0.0, -0.0]),
            &mut r,
        );
        assert_eq!(r, quat([0.0, 0.0, 0.0, -0.0]));
    }
}
