//! The transposition's 16×16 byte blocks in SSE2 registers (x86_64, where
//! SSE2 is always present), through `safe_arch`'s safe wrappers of the
//! intrinsics: sixteen loads, four rounds of sixteen unpacks, sixteen
//! stores. Covers every byte when there are at least sixteen rows of at
//! least sixteen bytes (the last block along a side overlaps the one
//! before it), and leaves smaller sections to the word-wise code of
//! [`super::transpose`].

use safe_arch::{
    m128i, unpack_high_i16_m128i, unpack_high_i32_m128i, unpack_high_i64_m128i,
    unpack_high_i8_m128i, unpack_low_i16_m128i, unpack_low_i32_m128i, unpack_low_i64_m128i,
    unpack_low_i8_m128i,
};

use super::sse2::{load, store};
use super::transpose::NO_PLANE;

/// The starts of the blocks along a side of `len` bytes: every sixteenth
/// byte, and when `len` is not a multiple of sixteen one more block ending
/// at `len`, overlapping the one before (its bytes are moved twice, to
/// the same places). None when `len` is under sixteen.
pub(super) fn block_starts(len: usize) -> impl Iterator<Item = usize> {
    let whole = len & !15;
    let last = len.checked_sub(16).filter(|_| len > whole);
    (0..whole).step_by(16).chain(last)
}

/// The rows and record bytes this module covers, as `(r, c)` (rows `0..r`,
/// record bytes `0..c`): all of them when both sides are at least sixteen,
/// else none.
fn covered(n: usize, rs: usize) -> (usize, usize) {
    if n >= 16 && rs >= 16 {
        (n, rs)
    } else {
        (0, 0)
    }
}

/// [`super::transpose::rows_to_planes`] on rows `0..r` and record bytes
/// `0..c`, returned as `(r, c)`: everything when `n` and `rs` are at
/// least sixteen, else nothing.
pub(super) fn rows_to_planes(
    rows: &[u8],
    n: usize,
    rs: usize,
    starts: &[usize],
    planes: &mut [u8],
) -> (usize, usize) {
    let (rn, cn) = covered(n, rs);
    for c in block_starts(cn) {
        let cols = &starts[c..c + 16];
        for r in block_starts(rn) {
            let at = r * rs + c;
            let t = transpose16(core::array::from_fn(|i| load(rows, at + i * rs)));
            for (w, &s) in t.into_iter().zip(cols) {
                if s != NO_PLANE {
                    store(planes, s + r, w);
                }
            }
        }
    }
    (rn, cn)
}

/// [`super::transpose::planes_to_rows`] on rows `0..r` and record bytes
/// `0..c`, returned as `(r, c)`, as [`rows_to_planes`].
pub(super) fn planes_to_rows(
    planes: &[u8],
    n: usize,
    rs: usize,
    starts: &[usize],
    rows: &mut [u8],
) -> (usize, usize) {
    let (rn, cn) = covered(n, rs);
    for c in block_starts(cn) {
        // The sixteen planes of this block column, each `n` bytes long.
        let cols: [&[u8]; 16] = core::array::from_fn(|k| &planes[starts[c + k]..][..n]);
        for r in block_starts(rn) {
            let t = transpose16(core::array::from_fn(|k| load(cols[k], r)));
            for (i, w) in t.into_iter().enumerate() {
                store(rows, (r + i) * rs + c, w);
            }
        }
    }
    (rn, cn)
}

/// Transposes the 8×8 byte matrix whose row `i` is the little-endian
/// bytes of `a[i]`, as [`transpose16`] does with half the rounds.
#[inline(always)]
pub(super) fn transpose8(a: [u64; 8]) -> [u64; 8] {
    let x: [m128i; 8] = core::array::from_fn(|i| m128i::from([a[i], 0]));
    // b[k]: the columns of rows 2k and 2k + 1, two bytes per column.
    let b: [m128i; 4] = core::array::from_fn(|k| unpack_low_i8_m128i(x[2 * k], x[2 * k + 1]));
    // c[2h + q]: columns 4q..4q + 4 of rows 4h..4h + 4.
    let c: [m128i; 4] = core::array::from_fn(|i| {
        let (h, q) = (i / 2, i % 2);
        let (x, y) = (b[2 * h], b[2 * h + 1]);
        if q == 0 {
            unpack_low_i16_m128i(x, y)
        } else {
            unpack_high_i16_m128i(x, y)
        }
    });
    // d[2q + p]: columns 4q + 2p and 4q + 2p + 1 of all eight rows.
    let d: [m128i; 4] = core::array::from_fn(|i| {
        let (q, p) = (i / 2, i % 2);
        let (x, y) = (c[q], c[2 + q]);
        if p == 0 {
            unpack_low_i32_m128i(x, y)
        } else {
            unpack_high_i32_m128i(x, y)
        }
    });
    core::array::from_fn(|col| <[u64; 2]>::from(d[col / 2])[col % 2])
}

/// Both halves of interleaving `x` and `y` in units of one width: the low
/// units, then the high ones.
macro_rules! zip {
    ($lo:ident, $hi:ident, $x:expr, $y:expr) => {
        ($lo($x, $y), $hi($x, $y))
    };
}

/// Transposes the 16×16 byte matrix whose row `i` is `a[i]`: interleaves
/// pairs of rows byte by byte, then pairs of those 16-, 32- and 64-bit
/// units, each round doubling the rows a column's unit spans. Written out
/// in full, so that it stays in registers however it is inlined.
#[inline(always)]
pub(super) fn transpose16(a: [m128i; 16]) -> [m128i; 16] {
    // b[k]: columns 0..8 of rows 2k and 2k + 1, two bytes per column;
    // b[k + 8]: columns 8..16.
    let [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15] = a;
    let (b0, b8) = zip!(unpack_low_i8_m128i, unpack_high_i8_m128i, a0, a1);
    let (b1, b9) = zip!(unpack_low_i8_m128i, unpack_high_i8_m128i, a2, a3);
    let (b2, b10) = zip!(unpack_low_i8_m128i, unpack_high_i8_m128i, a4, a5);
    let (b3, b11) = zip!(unpack_low_i8_m128i, unpack_high_i8_m128i, a6, a7);
    let (b4, b12) = zip!(unpack_low_i8_m128i, unpack_high_i8_m128i, a8, a9);
    let (b5, b13) = zip!(unpack_low_i8_m128i, unpack_high_i8_m128i, a10, a11);
    let (b6, b14) = zip!(unpack_low_i8_m128i, unpack_high_i8_m128i, a12, a13);
    let (b7, b15) = zip!(unpack_low_i8_m128i, unpack_high_i8_m128i, a14, a15);
    // c[4q + j]: columns 4q..4q + 4 of rows 4j..4j + 4, four bytes each.
    let (c0, c4) = zip!(unpack_low_i16_m128i, unpack_high_i16_m128i, b0, b1);
    let (c1, c5) = zip!(unpack_low_i16_m128i, unpack_high_i16_m128i, b2, b3);
    let (c2, c6) = zip!(unpack_low_i16_m128i, unpack_high_i16_m128i, b4, b5);
    let (c3, c7) = zip!(unpack_low_i16_m128i, unpack_high_i16_m128i, b6, b7);
    let (c8, c12) = zip!(unpack_low_i16_m128i, unpack_high_i16_m128i, b8, b9);
    let (c9, c13) = zip!(unpack_low_i16_m128i, unpack_high_i16_m128i, b10, b11);
    let (c10, c14) = zip!(unpack_low_i16_m128i, unpack_high_i16_m128i, b12, b13);
    let (c11, c15) = zip!(unpack_low_i16_m128i, unpack_high_i16_m128i, b14, b15);
    // d[4q + 2h + p]: columns 4q + 2p, 4q + 2p + 1 of rows 8h..8h + 8.
    let (d0, d1) = zip!(unpack_low_i32_m128i, unpack_high_i32_m128i, c0, c1);
    let (d2, d3) = zip!(unpack_low_i32_m128i, unpack_high_i32_m128i, c2, c3);
    let (d4, d5) = zip!(unpack_low_i32_m128i, unpack_high_i32_m128i, c4, c5);
    let (d6, d7) = zip!(unpack_low_i32_m128i, unpack_high_i32_m128i, c6, c7);
    let (d8, d9) = zip!(unpack_low_i32_m128i, unpack_high_i32_m128i, c8, c9);
    let (d10, d11) = zip!(unpack_low_i32_m128i, unpack_high_i32_m128i, c10, c11);
    let (d12, d13) = zip!(unpack_low_i32_m128i, unpack_high_i32_m128i, c12, c13);
    let (d14, d15) = zip!(unpack_low_i32_m128i, unpack_high_i32_m128i, c14, c15);
    // Column 4q + 2p + s of all sixteen rows.
    let (e0, e1) = zip!(unpack_low_i64_m128i, unpack_high_i64_m128i, d0, d2);
    let (e2, e3) = zip!(unpack_low_i64_m128i, unpack_high_i64_m128i, d1, d3);
    let (e4, e5) = zip!(unpack_low_i64_m128i, unpack_high_i64_m128i, d4, d6);
    let (e6, e7) = zip!(unpack_low_i64_m128i, unpack_high_i64_m128i, d5, d7);
    let (e8, e9) = zip!(unpack_low_i64_m128i, unpack_high_i64_m128i, d8, d10);
    let (e10, e11) = zip!(unpack_low_i64_m128i, unpack_high_i64_m128i, d9, d11);
    let (e12, e13) = zip!(unpack_low_i64_m128i, unpack_high_i64_m128i, d12, d14);
    let (e14, e15) = zip!(unpack_low_i64_m128i, unpack_high_i64_m128i, d13, d15);
    [
        e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_blocks_transpose() {
        let a: [u64; 8] = core::array::from_fn(|i| {
            u64::from_le_bytes(core::array::from_fn(|j| (i * 8 + j) as u8))
        });
        let t = transpose8(a);
        for (col, w) in t.into_iter().enumerate() {
            for (row, b) in w.to_le_bytes().into_iter().enumerate() {
                assert_eq!(usize::from(b), row * 8 + col);
            }
        }
    }

    #[test]
    fn blocks_transpose() {
        let a: [m128i; 16] = core::array::from_fn(|i| {
            m128i::from(core::array::from_fn::<u8, 16, _>(|j| (i * 16 + j) as u8))
        });
        let t = transpose16(a);
        for (col, w) in t.into_iter().enumerate() {
            let bytes = <[u8; 16]>::from(w);
            for (row, &b) in bytes.iter().enumerate() {
                assert_eq!(usize::from(b), row * 16 + col);
            }
        }
    }
}
