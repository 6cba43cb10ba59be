//! A chunk of [`super::record_apply`] in one SSE2 register (x86_64),
//! through `safe_arch`'s safe wrappers of the intrinsics: the same word
//! arithmetic on both 64-bit halves at once.

use safe_arch::{
    add_i64_m128i, bitand_m128i, bitandnot_m128i, bitor_m128i, bitxor_m128i, cmp_eq_mask_i8_m128i,
    m128i, move_mask_i8_m128i, shr_imm_u64_m128i, sub_i64_m128i, zeroed_m128i,
};

use super::record_apply::Chunk;
use super::sse2::{load, store};

/// A chunk's masks in registers.
#[derive(Clone, Copy)]
pub(super) struct Masks {
    h: m128i,
    l: m128i,
    z: m128i,
    n: m128i,
    w: m128i,
    partial: bool,
}

impl Masks {
    #[inline(always)]
    pub(super) fn new(c: &Chunk) -> Self {
        Self {
            h: m128i::from(c.h),
            l: m128i::from(c.l),
            z: m128i::from(c.z),
            n: m128i::from(c.n),
            w: m128i::from(c.w),
            partial: c.partial,
        }
    }

    /// The chunk of the record from delta `d` and reference `r0`, and
    /// whether it differs from the reference in the bytes the chunk
    /// writes; `old` gives the bytes it keeps.
    #[inline(always)]
    pub(super) fn decode(&self, d: m128i, r0: m128i, old: impl FnOnce() -> m128i) -> (m128i, bool) {
        let Self { h, l, z, n, w, .. } = *self;
        // The zigzag decode of every lane (`!h & (d >> 1)`: the bit shifted
        // in from the next lane cleared).
        let odd = bitxor_m128i(sub_i64_m128i(h, bitand_m128i(d, l)), h);
        let zz = bitxor_m128i(bitandnot_m128i(h, shr_imm_u64_m128i::<1>(d)), odd);
        let v = bitxor_m128i(d, bitand_m128i(bitxor_m128i(zz, d), z));
        let r = bitandnot_m128i(n, r0);
        let sum = add_i64_m128i(bitandnot_m128i(h, r), bitandnot_m128i(h, v));
        let o = bitxor_m128i(sum, bitand_m128i(bitxor_m128i(r, v), h));
        if self.partial {
            // Only the bytes the chunk writes count.
            let changed = bitand_m128i(bitxor_m128i(o, r0), w);
            let o = bitor_m128i(bitand_m128i(o, w), bitandnot_m128i(w, old()));
            return (
                o,
                move_mask_i8_m128i(cmp_eq_mask_i8_m128i(changed, zeroed_m128i())) != 0xffff,
            );
        }
        (o, move_mask_i8_m128i(cmp_eq_mask_i8_m128i(o, r0)) != 0xffff)
    }
}

/// Writes the chunk `c` of the record from `delta` and `reference` into
/// `out`; returns whether it differs from the reference.
#[inline(always)]
pub(super) fn chunk(c: &Chunk, delta: &[u8], reference: &[u8], out: &mut [u8]) -> bool {
    let (o, differs) =
        Masks::new(c).decode(load(delta, c.at), load(reference, c.at), || load(out, c.at));
    store(out, c.at, o);
    differs
}
