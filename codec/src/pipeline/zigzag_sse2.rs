//! The integer deltas of byte planes ([`super::planes`]: the zigzag of the
//! wrapping difference per little-endian lane of 2, 4 or 8 bytes) sixteen
//! bytes at a time in SSE2 registers (x86_64), through `safe_arch`'s safe
//! wrappers of the intrinsics. Each function covers the span's whole
//! 16-byte chunks and returns the bytes it covered; the caller does the
//! rest lane by lane.

use safe_arch::{
    add_i16_m128i, add_i32_m128i, add_i64_m128i, bitxor_m128i, shl_imm_u16_m128i,
    shl_imm_u32_m128i, shl_imm_u64_m128i, shr_imm_u16_m128i, shr_imm_u32_m128i, shr_imm_u64_m128i,
    sub_i16_m128i, sub_i32_m128i, sub_i64_m128i, zeroed_m128i,
};

use super::sse2::{load, store};

macro_rules! lanes {
    ($enc:ident, $add:ident, $addl:ident, $subl:ident, $shl:ident, $shr:ident, $bits:literal) => {
        /// Writes into `o` the zigzag of `c − b` per lane (all three the
        /// same length); returns the bytes written.
        #[inline]
        pub(super) fn $enc(c: &[u8], b: &[u8], o: &mut [u8]) -> usize {
            let n = o.len() & !15;
            for at in (0..n).step_by(16) {
                let d = $subl(load(c, at), load(b, at));
                // All ones in a lane whose difference is negative.
                let sign = $subl(zeroed_m128i(), $shr::<{ $bits - 1 }>(d));
                store(o, at, bitxor_m128i($shl::<1>(d), sign));
            }
            n
        }

        /// Adds to `o` the value whose zigzag is `d` per lane (both the
        /// same length); returns the bytes done.
        #[inline]
        pub(super) fn $add(d: &[u8], o: &mut [u8]) -> usize {
            let n = o.len() & !15;
            for at in (0..n).step_by(16) {
                let z = load(d, at);
                // All ones in a lane whose zigzag is odd (a negative value).
                let odd = $subl(
                    zeroed_m128i(),
                    $shr::<{ $bits - 1 }>($shl::<{ $bits - 1 }>(z)),
                );
                let v = bitxor_m128i($shr::<1>(z), odd);
                store(o, at, $addl(load(o, at), v));
            }
            n
        }
    };
}

lanes!(
    enc2,
    add2,
    add_i16_m128i,
    sub_i16_m128i,
    shl_imm_u16_m128i,
    shr_imm_u16_m128i,
    16
);
lanes!(
    enc4,
    add4,
    add_i32_m128i,
    sub_i32_m128i,
    shl_imm_u32_m128i,
    shr_imm_u32_m128i,
    32
);
lanes!(
    enc8,
    add8,
    add_i64_m128i,
    sub_i64_m128i,
    shl_imm_u64_m128i,
    shr_imm_u64_m128i,
    64
);
