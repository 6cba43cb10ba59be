//! A chunk of [`super::record_delta`] in one SSE2 register (x86_64),
//! through `safe_arch`'s safe wrappers of the intrinsics: the same word
//! arithmetic on both 64-bit halves at once, the sign of a lane's top byte
//! by a signed byte compare.

#![forbid(unsafe_code)]

use safe_arch::{
    bitand_m128i, bitandnot_m128i, bitor_m128i, bitxor_m128i, cmp_eq_mask_i8_m128i,
    cmp_lt_mask_i8_m128i, m128i, shl_imm_u64_m128i, shr_imm_u64_m128i, sub_i64_m128i, zeroed_m128i,
};

use super::record_delta::Chunk;
use super::sse2::{load, store};

/// The rows of [`super::record_delta::DeltaPlan::delta_rows`] in the
/// bytes the chunk `k` writes (records of `rs` bytes), the chunk's masks
/// in registers over the rows.
#[inline(always)]
pub(super) fn rows(
    k: &Chunk,
    rs: usize,
    cur: &[u8],
    reference: &[u8],
    pairs: &[(u32, u32)],
    out: &mut [u8],
) {
    let h = m128i::from(k.h);
    let z = m128i::from(k.z);
    let n = m128i::from(k.n);
    let t = m128i::from(k.t);
    let (s1, s2, s4) = (m128i::from(k.s1), m128i::from(k.s2), m128i::from(k.s4));
    let w = m128i::from(k.w);
    let not_h = bitxor_m128i(h, cmp_eq_mask_i8_m128i(h, h));
    let at = k.at;
    for (o, &(c, b)) in out.chunks_exact_mut(rs).zip(pairs) {
        let (c, b) = (c as usize * rs + at, b as usize * rs + at);
        let (Some(c), Some(r)) = (cur.get(c..c + 16), reference.get(b..b + 16)) else {
            continue;
        };
        let Some(o) = o.get_mut(at..at + 16) else {
            continue;
        };
        let c = load(c, 0);
        let r = bitandnot_m128i(n, load(r, 0));
        // `(c ^ !r) & h` as `!(c ^ r) & h`, and `r & !h`.
        let d = bitxor_m128i(
            sub_i64_m128i(bitor_m128i(c, h), bitand_m128i(r, not_h)),
            bitandnot_m128i(bitxor_m128i(c, r), h),
        );
        let mut m = bitand_m128i(cmp_lt_mask_i8_m128i(d, zeroed_m128i()), t);
        m = bitor_m128i(m, bitand_m128i(shr_imm_u64_m128i::<8>(m), s1));
        m = bitor_m128i(m, bitand_m128i(shr_imm_u64_m128i::<16>(m), s2));
        m = bitor_m128i(m, bitand_m128i(shr_imm_u64_m128i::<32>(m), s4));
        let zz = bitxor_m128i(shl_imm_u64_m128i::<1>(bitand_m128i(d, not_h)), m);
        let mut v = bitxor_m128i(d, bitand_m128i(bitxor_m128i(zz, d), z));
        if k.partial {
            v = bitor_m128i(bitand_m128i(v, w), bitandnot_m128i(w, load(o, 0)));
        }
        store(o, 0, v);
    }
}
