//! [`super::code4`] in SSE2 registers (x86_64), through
//! `safe_arch`'s safe wrappers of the intrinsics: each pair of values
//! widened to `f64` and divided, rounded to the nearest `i32`, ties to even
//! (`cvtpd2dq` under the default rounding mode; out of range or NaN gives
//! `i32::MIN`, which every limit refuses), then the range test on four
//! `i32` lanes and the value each code gives back, rounded to `f32`,
//! compared with the value's bits.

use super::Code;
use safe_arch::{
    add_m128d, bitand_m128d, bitand_m128i, bitor_m128d, bitor_m128i, cast_to_m128_from_m128i,
    cast_to_m128i_from_m128, cmp_eq_mask_i32_m128i, cmp_gt_mask_i32_m128i,
    convert_to_i32_m128i_from_m128d, convert_to_m128_from_m128d,
    convert_to_m128d_from_lower2_i32_m128i, convert_to_m128d_from_lower2_m128, div_m128d, m128,
    m128d, m128i, move_high_low_m128, move_low_high_m128, move_mask_i8_m128i, mul_m128d,
    set_splat_i32_m128i, set_splat_m128d, sub_i32_m128i, sub_m128d, unpack_low_i64_m128i,
};

/// The codes of a pair of values (low two lanes, as `f64`) of a slot.
#[inline(always)]
fn pair(x: m128d, c: Code) -> m128i {
    match c {
        Code::Fixed { step, .. } => {
            convert_to_i32_m128i_from_m128d(div_m128d(x, set_splat_m128d(step)))
        }
        Code::Angle { bits, turn, .. } => {
            // `t − round_ties_even(t)` by adding and subtracting 2^52 with
            // `t`'s sign (exact below 2^52; larger `t` are refused by the
            // value test whatever comes out).
            let t = div_m128d(x, set_splat_m128d(turn));
            let sign = bitand_m128d(t, set_splat_m128d(-0.0));
            let c = bitor_m128d(sign, set_splat_m128d(4_503_599_627_370_496.0));
            let r = sub_m128d(t, sub_m128d(add_m128d(t, c), c));
            let scaled = mul_m128d(r, set_splat_m128d(2f64.powi(i32::from(bits))));
            convert_to_i32_m128i_from_m128d(scaled)
        }
    }
}

/// A pair of codes (low two lanes) scaled by `step` and rounded to `f32`
/// (low two lanes).
#[inline(always)]
fn value(q: m128i, step: f64) -> m128 {
    convert_to_m128_from_m128d(mul_m128d(
        convert_to_m128d_from_lower2_i32_m128i(q),
        set_splat_m128d(step),
    ))
}

/// The codes of four values (`f32` bits), or `None` when one is refused.
#[inline(always)]
pub(super) fn code4(x: [u32; 4], c: Code) -> Option<[i32; 4]> {
    let bits = m128i::from(x);
    let xf = cast_to_m128_from_m128i(bits);
    let low = convert_to_m128d_from_lower2_m128(xf);
    let high = convert_to_m128d_from_lower2_m128(move_high_low_m128(xf, xf));
    let (mut q_low, mut q_high) = (pair(low, c), pair(high, c));
    let (lo, hi, step) = match c {
        Code::Fixed { step, lo, hi } => (lo, hi, step),
        Code::Angle { bits, step, .. } => {
            // Codes from `2^(bits−1)` on wrap down by a turn.
            let half = 1i32 << (bits - 1);
            let wrap = |q: m128i| {
                let over = cmp_gt_mask_i32_m128i(q, set_splat_i32_m128i(half - 1));
                sub_i32_m128i(
                    q,
                    bitand_m128i(over, set_splat_i32_m128i(half.wrapping_mul(2))),
                )
            };
            q_low = wrap(q_low);
            q_high = wrap(q_high);
            (i32::MIN + 1, i32::MAX, step)
        }
    };
    let q = unpack_low_i64_m128i(q_low, q_high);
    let out = bitor_m128i(
        cmp_gt_mask_i32_m128i(q, set_splat_i32_m128i(hi)),
        cmp_gt_mask_i32_m128i(set_splat_i32_m128i(lo), q),
    );
    let v = move_low_high_m128(value(q_low, step), value(q_high, step));
    let same = cmp_eq_mask_i32_m128i(cast_to_m128i_from_m128(v), bits);
    if move_mask_i8_m128i(out) != 0 || move_mask_i8_m128i(same) != 0xffff {
        return None;
    }
    Some(<[i32; 4]>::from(q))
}
