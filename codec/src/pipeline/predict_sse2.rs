//! The linear prediction of [`super::predict`] (`2·b0 − b1` per lane)
//! sixteen bytes at a time in SSE2 registers (x86_64), through
//! `safe_arch`'s safe wrappers of the intrinsics. Each function covers the
//! span's whole 16-byte chunks and returns the bytes it covered; the
//! caller does the rest lane by lane.

use safe_arch::{add_i32_m128i, add_i64_m128i, sub_i32_m128i, sub_i64_m128i};

use super::sse2::{load, store};

macro_rules! lanes {
    ($name:ident, $add:ident, $sub:ident) => {
        /// Turns `o` (a copy of `b0`) into `2·o − b1` per lane (both the
        /// same length); returns the bytes done.
        #[inline]
        pub(super) fn $name(b1: &[u8], o: &mut [u8]) -> usize {
            let n = o.len() & !15;
            for at in (0..n).step_by(16) {
                let a = load(o, at);
                store(o, at, $sub($add(a, a), load(b1, at)));
            }
            n
        }
    };
}

lanes!(predict_u32, add_i32_m128i, sub_i32_m128i);
lanes!(predict_u64, add_i64_m128i, sub_i64_m128i);
