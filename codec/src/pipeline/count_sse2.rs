//! The zero bytes and runs of zero bytes of a byte-plane section's planes
//! ([`super::planes::zero_runs`], [`super::planes::nonzero_and_runs`])
//! sixty-four bytes at a time (x86_64): four SSE2 compares against zero
//! give one bit per zero byte, through `safe_arch`'s safe wrappers of the
//! intrinsics; a run starts at a zero bit whose lower neighbour (or the
//! last byte before the block) is not one.

use safe_arch::{cmp_eq_mask_i8_m128i, move_mask_i8_m128i, zeroed_m128i};

use super::sse2::load;

/// The zero bytes of `bytes` and its runs of zero bytes (a zero byte that
/// is first or follows a non-zero one starts one).
#[inline]
pub(super) fn zeros_and_runs(bytes: &[u8]) -> (usize, usize) {
    let zero = zeroed_m128i();
    let (mut zeros, mut runs) = (0usize, 0usize);
    // 1 when the byte before the block is zero.
    let mut before = 0u64;
    let mut blocks = bytes.chunks_exact(64);
    for b in &mut blocks {
        let mask = |at: usize| {
            let m = move_mask_i8_m128i(cmp_eq_mask_i8_m128i(load(b, at), zero));
            u64::from(m as u16)
        };
        let z = mask(0) | mask(16) << 16 | mask(32) << 32 | mask(48) << 48;
        zeros += z.count_ones() as usize;
        runs += (z & !((z << 1) | before)).count_ones() as usize;
        before = z >> 63;
    }
    let mut prev_zero = before != 0;
    for &b in blocks.remainder() {
        let zero = b == 0;
        zeros += usize::from(zero);
        runs += usize::from(zero && !prev_zero);
        prev_zero = zero;
    }
    (zeros, runs)
}
