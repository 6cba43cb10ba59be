//! Unit quaternions, "smallest three": the index `k` of the largest
//! component, then the other three, each in `[-1/√2, 1/√2]`, as integers in
//! `[-m, m]` with `m = 2^(bits−1) − 1`. The largest component is rebuilt as
//! `√(1 − Σ others²)`, so the quaternion is normalised with its largest
//! component positive (`q` and `−q` are the same rotation).

use super::plan::Kind;
use super::scalar::{rne, to_ty};
use super::SMALLEST_THREE_BITS;
use crate::schema::Primitive;

/// Validates a `smallest_three` declaration.
pub(crate) fn check(bits: u8) -> Result<Kind, String> {
    let (lo, hi) = SMALLEST_THREE_BITS;
    if !(lo..=hi).contains(&bits) {
        return Err(format!("smallest_three {bits} is outside {lo}..={hi}"));
    }
    let m = (1i64 << (bits - 1)) - 1;
    Ok(Kind::Quat { m, s: scale(m) })
}

/// The value of one component step: `(1/√2) / m`, with `1/√2` the binary64
/// constant `0x3FE6A09E667F3BCD`.
fn scale(m: i64) -> f64 {
    core::f64::consts::FRAC_1_SQRT_2 / m as f64
}

/// The indices of the three sent components around each index `k`.
pub(super) const OTHERS: [[usize; 3]; 4] = [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]];

/// The quaternion of codes `(k, q)`: the three sent components
/// `q_j · s` rounded to the field type, in index order around `k`, and
/// `v_k = √max(0, 1 − Σ v_j²)` (the sum in index order, in binary64)
/// rounded to the field type. `k` is below 4.
pub(crate) fn value(k: usize, q: [i64; 3], s: f64, ty: Primitive) -> [f64; 4] {
    let c = q.map(|q| to_ty(q as f64 * s, ty));
    let sum = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
    let l = to_ty((1.0 - sum).max(0.0).sqrt(), ty);
    match k {
        0 => [l, c[0], c[1], c[2]],
        1 => [c[0], l, c[1], c[2]],
        2 => [c[0], c[1], l, c[2]],
        _ => [c[0], c[1], c[2], l],
    }
}

/// The codes with largest index `k` that reproduce `x` bit for bit, if any:
/// `x_k` has its sign bit clear, each other component is `q_j · s` for an
/// integer `|q_j| ≤ m`, and [`value`] gives `x` back.
fn codes_at(x: &[f64; 4], k: usize, m: i64, s: f64, ty: Primitive) -> Option<[i64; 3]> {
    if x[k].is_sign_negative() {
        return None;
    }
    let mut q = [0i64; 3];
    for (qj, &i) in q.iter_mut().zip(OTHERS.get(k)?) {
        let c = x[i];
        let r = rne(c / s);
        // Each of the three must come back as `value` rebuilds it (the
        // same product: `r` is a whole number within `m`), which most
        // wrong `k` fail before the square root.
        if r.is_nan() || r.abs() > m as f64 || to_ty(r * s, ty).to_bits() != c.to_bits() {
            return None;
        }
        *qj = r as i64;
    }
    let v = value(k, q, s, ty);
    v.iter()
        .zip(x)
        .all(|(a, b)| a.to_bits() == b.to_bits())
        .then_some(q)
}

/// The canonical codes of a quaternion value: the smallest `k` whose codes
/// reproduce it (see [`codes_at`]), or `None` if it is not a quantised value.
pub(crate) fn code_of(x: &[f64; 4], m: i64, s: f64, ty: Primitive) -> Option<(usize, [i64; 3])> {
    match x.iter().position(|&c| beyond_codes(c, m, s)) {
        Some(k) => codes_at(x, k, m, s, ty).map(|q| (k, q)),
        None => (0..4).find_map(|k| codes_at(x, k, m, s, ty).map(|q| (k, q))),
    }
}

/// Whether component `c` is too large to be one of the three sent:
/// `|c / s| > m + 1/2`, so that its nearest code is beyond `m` and
/// [`codes_at`] refuses every index but its own.
fn beyond_codes(c: f64, m: i64, s: f64) -> bool {
    (c / s).abs() > m as f64 + 0.5
}

/// The value of `(k, q)` if they are canonical codes: no smaller index
/// reproduces their value. Only canonical codes are sent; their value
/// codes back to them.
pub(crate) fn canonical_value(
    k: usize,
    q: [i64; 3],
    m: i64,
    s: f64,
    ty: Primitive,
) -> Option<[f64; 4]> {
    let v = value(k, q, s, ty);
    (beyond_codes(v[k], m, s) || (0..k).all(|k2| codes_at(&v, k2, m, s, ty).is_none())).then_some(v)
}

/// The index of the largest magnitude, the lowest index on ties.
fn largest(x: &[f64; 4]) -> usize {
    let mut k = 0;
    for i in 1..4 {
        if x[i].abs() > x[k].abs() {
            k = i;
        }
    }
    k
}

/// The value of the nearest codes of a finite quaternion, or `None` if it
/// is zero. A quantised value is returned as it is (so quantising twice
/// changes nothing, even where the rebuilt component came out below
/// another). Otherwise the quaternion is divided by its largest magnitude,
/// normalised (binary64), its sign chosen so the largest component `k` is
/// positive, and the other three rounded to the nearest step.
pub(crate) fn quantize(x: &[f64; 4], m: i64, s: f64, ty: Primitive) -> Option<[f64; 4]> {
    if code_of(x, m, s, ty).is_some() {
        return Some(*x);
    }
    let k = largest(x);
    let a = x[k].abs();
    if a == 0.0 {
        return None;
    }
    let y = x.map(|c| c / a);
    let n = (y[0] * y[0] + y[1] * y[1] + y[2] * y[2] + y[3] * y[3]).sqrt();
    let sign = if y[k] < 0.0 { -1.0 } else { 1.0 };
    let mut q = [0i64; 3];
    let mut j = 0;
    for (i, c) in y.iter().enumerate() {
        if i == k {
            continue;
        }
        let r = rne(sign * c / n / s);
        q[j] = r.clamp(-(m as f64), m as f64) as i64;
        j += 1;
    }
    Some(value(k, q, s, ty))
}

/// The bound on the rotation angle (radians) between a unit quaternion and
/// its quantised value, for `bits` bits per component and field type `ty`.
///
/// The three sent components are each off by at most `s/2 + ε` (rounding
/// to the step `s`, then to `ty`, `ε = 2^-25` for `f32`), so by
/// `e ≤ √3·(s/2 + ε)` together. The largest component `L ≥ 1/2` is rebuilt
/// from `L² = 1 − Σc²`: `|ΔL|·(L + L̂) ≤ e·(‖c‖ + ‖v‖)` with
/// `‖c‖ ≤ √3/2`, hence `|ΔL| − |ΔL|² ≤ e·(√3 + e)`, plus `ε` for its own
/// rounding. The quaternions are `d = √(e² + ΔL²)` apart and the rotations
/// `4·asin(d/2)` radians.
pub(crate) fn max_angle(bits: u8, ty: Primitive) -> f64 {
    let m = (1i64 << (bits.clamp(2, 62) - 1)) - 1;
    let eps = if ty == Primitive::F32 {
        2f64.powi(-25)
    } else {
        2f64.powi(-53)
    };
    let e = 3f64.sqrt() * (0.5 * scale(m) + eps);
    let a = e * (3f64.sqrt() + e);
    if a >= 0.25 {
        return core::f64::consts::PI;
    }
    let dl = (1.0 - (1.0 - 4.0 * a).sqrt()) / 2.0 + eps;
    let d = (e * e + dl * dl).sqrt();
    4.0 * (d / 2.0).min(1.0).asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_and_ties() {
        let m = 511;
        let s = scale(m);
        let f = Primitive::F32;
        assert_eq!(
            quantize(&[0.0, 0.0, 0.0, 1.0], m, s, f),
            Some([0.0, 0.0, 0.0, 1.0])
        );
        assert_eq!(
            code_of(&[0.0, 0.0, 0.0, 1.0], m, s, f),
            Some((3, [0, 0, 0]))
        );
        assert_eq!(
            quantize(&[0.0, 0.0, -2.0, 0.0], m, s, f),
            Some([0.0, 0.0, 1.0, 0.0])
        );
        // Two equal largest components: whichever index rebuilds the value
        // first is canonical, and the value codes back to those codes.
        let h = core::f64::consts::FRAC_1_SQRT_2;
        for x in [[h, -h, 0.0, 0.0], [0.0, h, 0.0, h], [0.5, -0.5, 0.5, -0.5]] {
            let v = quantize(&x, m, s, f).unwrap_or([9.0; 4]);
            let (k, q) = code_of(&v, m, s, f).unwrap_or((9, [0; 3]));
            assert!(
                k < 4 && canonical_value(k, q, m, s, f) == Some(v),
                "{x:?} {v:?}"
            );
            assert_eq!(value(k, q, s, f), v);
        }
        assert_eq!(quantize(&[0.0; 4], m, s, f), None);
    }

    #[test]
    fn shortcuts_agree_with_every_index_tried() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        for (bits, ty) in [
            (4, Primitive::F32),
            (10, Primitive::F32),
            (20, Primitive::F64),
        ] {
            let m = (1i64 << (bits - 1)) - 1;
            let s = scale(m);
            for i in 0..20_000 {
                let mut r = [next(), next(), next(), next()];
                // Near-ties between components, where several indices may
                // rebuild the value.
                if i % 4 == 0 {
                    r[1] = r[0].abs().copysign(r[1]);
                }
                let Some(v) = quantize(&r, m, s, ty) else {
                    continue;
                };
                for x in [v, r] {
                    let full = (0..4).find_map(|k| codes_at(&x, k, m, s, ty).map(|q| (k, q)));
                    assert_eq!(code_of(&x, m, s, ty), full, "{x:?}");
                }
                let q = [next(), next(), next()].map(|c| (c * m as f64) as i64);
                for k in 0..4 {
                    let v = value(k, q, s, ty);
                    let full = (0..k).all(|k2| codes_at(&v, k2, m, s, ty).is_none());
                    assert_eq!(
                        canonical_value(k, q, m, s, ty),
                        full.then_some(v),
                        "{k} {q:?}"
                    );
                }
            }
        }
    }
}
