//! Fixed point, bounded integers and angles: one value, one code.

use super::plan::Kind;
use super::{AngleUnit, OutOfRange, MAX_F32_ANGLE_BITS, MAX_F32_CODE, MAX_F64_CODE};
use crate::schema::Primitive;

/// Rounds an `f64` to the field type (exact for `f64`, round-to-nearest-even
/// for `f32`), returned widened back to `f64`.
pub(crate) fn to_ty(v: f64, ty: Primitive) -> f64 {
    if ty == Primitive::F32 {
        f64::from(v as f32)
    } else {
        v
    }
}

/// Largest code magnitude of a fixed-point field of type `ty`.
const fn code_limit(ty: Primitive) -> i64 {
    match ty {
        Primitive::F32 => MAX_F32_CODE,
        _ => MAX_F64_CODE,
    }
}

/// Validates a fixed-point declaration.
pub(crate) fn fixed(
    ty: Primitive,
    step: f64,
    range: Option<[f64; 2]>,
    policy: OutOfRange,
) -> Result<Kind, String> {
    // Steps outside these bounds would let `code · step` leave the normal
    // range of the type (subnormal steps lose precision, huge ones overflow).
    let (lo_step, hi_step) = match ty {
        Primitive::F32 => (2f64.powi(-100), 2f64.powi(100)),
        _ => (2f64.powi(-900), 2f64.powi(900)),
    };
    if !(step.is_finite() && step >= lo_step && step <= hi_step) {
        return Err(format!("step {step} is outside {lo_step:e}..={hi_step:e}"));
    }
    let limit = code_limit(ty);
    let (lo, hi) = match range {
        None => (-limit, limit),
        Some([min, max]) => {
            if !(min.is_finite() && max.is_finite() && min <= max) {
                return Err(format!("range [{min}, {max}] is not a finite interval"));
            }
            // A bound meant as a multiple of the step may divide to just
            // below it (0.3 / 0.1 = 2.9999999999999996): a millionth of a
            // step (2^-20) of slack keeps it.
            let slack = 2f64.powi(-20);
            let (lo, hi) = ((min / step - slack).ceil(), (max / step + slack).floor());
            if lo > hi {
                return Err(format!("range [{min}, {max}] holds no multiple of {step}"));
            }
            let l = limit as f64;
            if lo < -l || hi > l {
                return Err(format!(
                    "range [{min}, {max}] needs codes beyond ±{limit} at step {step}"
                ));
            }
            (lo as i64, hi as i64)
        }
    };
    Ok(Kind::Fixed {
        step,
        lo,
        hi,
        clamp: policy == OutOfRange::Clamp,
    })
}

/// Validates a bounded-integer declaration.
pub(crate) fn int_range(
    ty: Primitive,
    min: i64,
    max: i64,
    policy: OutOfRange,
) -> Result<Kind, String> {
    let (tmin, tmax): (i128, i128) = match ty {
        Primitive::U8 => (0, u8::MAX.into()),
        Primitive::I8 => (i8::MIN.into(), i8::MAX.into()),
        Primitive::U16 => (0, u16::MAX.into()),
        Primitive::I16 => (i16::MIN.into(), i16::MAX.into()),
        Primitive::U32 => (0, u32::MAX.into()),
        Primitive::I32 => (i32::MIN.into(), i32::MAX.into()),
        Primitive::U64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    };
    if min > max || i128::from(min) < tmin || i128::from(max) > tmax {
        return Err(format!(
            "range [{min}, {max}] is empty or does not fit {ty:?}"
        ));
    }
    Ok(Kind::Int {
        min,
        max,
        clamp: policy == OutOfRange::Clamp,
    })
}

/// The size of one angle step: a turn divided by `2^bits` (exact).
pub(crate) fn angle_step(bits: u8, unit: AngleUnit) -> f64 {
    unit.turn() * 2f64.powi(-i32::from(bits))
}

/// Validates an angle declaration.
pub(crate) fn angle(ty: Primitive, bits: u8, unit: AngleUnit) -> Result<Kind, String> {
    let most = if ty == Primitive::F32 {
        MAX_F32_ANGLE_BITS
    } else {
        50
    };
    if bits == 0 || bits > most {
        return Err(format!(
            "angle_bits {bits} is outside 1..={most} for {ty:?}"
        ));
    }
    Ok(Kind::Angle {
        bits,
        step: angle_step(bits, unit),
        turn: unit.turn(),
    })
}

/// `x.round_ties_even()`, bit for bit, without the library call it
/// compiles to on targets without a rounding instruction: below `2^52` in
/// magnitude, adding and subtracting `2^52` (with `x`'s sign) rounds to an
/// integer, ties to even (binary64 arithmetic rounds to nearest, ties to
/// even); larger magnitudes, infinities and NaN are returned as they are.
#[inline]
pub(crate) fn rne(x: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    if x.abs() < TWO_52 {
        let t = TWO_52.copysign(x);
        ((x + t) - t).copysign(x)
    } else {
        x
    }
}

/// `round_ties_even(x / step)`: the nearest code, as a float (may be far
/// outside any limit, or NaN for a NaN input).
pub(crate) fn fixed_code(x: f64, step: f64) -> f64 {
    rne(x / step)
}

/// The value of a fixed-point or angle code: `code · step` rounded to the
/// field type.
pub(crate) fn value(code: i64, step: f64, ty: Primitive) -> f64 {
    to_ty(code as f64 * step, ty)
}

/// The code of an angle: `t = x / turn`, `r = t − round_ties_even(t)` (in
/// `[-0.5, 0.5]`, exact), `code = round_ties_even(r · 2^bits)`, and
/// `2^(bits−1)` wraps to `−2^(bits−1)`. `x` must be finite.
pub(crate) fn angle_code(x: f64, bits: u8, turn: f64) -> i64 {
    let t = x / turn;
    let r = t - rne(t);
    let q = rne(r * 2f64.powi(i32::from(bits))) as i64;
    let half = 1i64 << (bits - 1);
    if q >= half {
        q - 2 * half
    } else {
        q
    }
}

/// Whether `code` is a valid angle code for `bits`.
pub(crate) fn angle_code_ok(code: i64, bits: u8) -> bool {
    let half = 1i64 << (bits - 1);
    (-half..half).contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rne_is_round_ties_even() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut edges = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            f64::MIN_POSITIVE,
            4_503_599_627_370_495.5,
            -4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_991.0,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            edges.push(f64::from_bits(x));
            // Magnitudes where rounding happens.
            edges.push(f64::from_bits(x) % 1e6);
            edges.push((x >> 11) as f64 / 4.0 - 1e15);
        }
        for v in edges {
            assert_eq!(rne(v).to_bits(), v.round_ties_even().to_bits(), "{v:e}");
        }
        assert!(rne(f64::NAN).is_nan());
    }

    #[test]
    fn angle_codes_wrap() {
        assert_eq!(angle_code(180.0, 8, 360.0), -128);
        assert_eq!(angle_code(-180.0, 8, 360.0), -128);
        assert_eq!(angle_code(359.0, 8, 360.0), -1);
        assert_eq!(angle_code(720.0 + 1.40625, 8, 360.0), 1);
        assert!(angle_code_ok(127, 8) && !angle_code_ok(128, 8));
    }

    #[test]
    fn fixed_declarations_are_checked() {
        assert!(fixed(Primitive::F32, 0.0, None, OutOfRange::Error).is_err());
        assert!(fixed(Primitive::F32, f64::NAN, None, OutOfRange::Error).is_err());
        assert!(fixed(Primitive::F32, 0.001, Some([0.0, 1e6]), OutOfRange::Error).is_err());
        assert!(fixed(Primitive::F32, 0.001, Some([1.0, 0.0]), OutOfRange::Error).is_err());
        assert!(fixed(Primitive::F64, 0.001, Some([0.0, 1e6]), OutOfRange::Error).is_ok());
        assert!(int_range(Primitive::U8, 0, 256, OutOfRange::Error).is_err());
        assert!(int_range(Primitive::U8, 0, 255, OutOfRange::Error).is_ok());
        // 0.3 / 0.1 divides to 2.9999999999999996: the bound still holds code 3.
        assert_eq!(
            fixed(Primitive::F32, 0.1, Some([-0.3, 0.3]), OutOfRange::Error),
            Ok(Kind::Fixed {
                step: 0.1,
                lo: -3,
                hi: 3,
                clamp: false
            })
        );
    }
}
