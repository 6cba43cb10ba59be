//! Sixteen bytes of a slice into and out of an SSE2 register (x86_64),
//! for the wide byte-plane code ([`super::transpose_sse2`],
//! [`super::zigzag_sse2`]).

use safe_arch::m128i;

/// The sixteen bytes of `bytes` from `at`.
#[inline(always)]
pub(super) fn load(bytes: &[u8], at: usize) -> m128i {
    let mut b = [0u8; 16];
    b.copy_from_slice(&bytes[at..at + 16]);
    m128i::from(b)
}

/// Writes `w` to the sixteen bytes of `bytes` from `at`.
#[inline(always)]
pub(super) fn store(bytes: &mut [u8], at: usize, w: m128i) {
    bytes[at..at + 16].copy_from_slice(&<[u8; 16]>::from(w));
}
