//! [`super::scale4::scale4`] in SSE2 registers (x86_64), through
//! `safe_arch`'s safe wrappers of the intrinsics: the range test on four
//! `i32` lanes, then each pair of codes widened to `f64`, scaled and
//! rounded to `f32` (the same operations, in the same order, as the
//! portable version).

use safe_arch::{
    bitor_m128i, cmp_gt_mask_i32_m128i, convert_to_m128_from_m128d,
    convert_to_m128d_from_lower2_i32_m128i, m128i, move_low_high_m128, move_mask_i8_m128i,
    mul_m128d, set_splat_i32_m128i, set_splat_m128d, shuffle_ai_f32_all_m128i,
};

/// Four codes scaled by `step` and rounded to `f32`, or `None` when one is
/// outside `lo..=hi`.
#[inline(always)]
pub(super) fn scale4(codes: [i32; 4], lo: i32, hi: i32, step: f64) -> Option<[f32; 4]> {
    let q = m128i::from(codes);
    let out = bitor_m128i(
        cmp_gt_mask_i32_m128i(q, set_splat_i32_m128i(hi)),
        cmp_gt_mask_i32_m128i(set_splat_i32_m128i(lo), q),
    );
    if move_mask_i8_m128i(out) != 0 {
        return None;
    }
    let s = set_splat_m128d(step);
    let low = convert_to_m128_from_m128d(mul_m128d(convert_to_m128d_from_lower2_i32_m128i(q), s));
    let high = shuffle_ai_f32_all_m128i::<0b11_10_11_10>(q);
    let high =
        convert_to_m128_from_m128d(mul_m128d(convert_to_m128d_from_lower2_i32_m128i(high), s));
    Some(<[f32; 4]>::from(move_low_high_m128(low, high)))
}
