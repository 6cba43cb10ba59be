//! Moving bytes between rows and byte planes in one pass: `n` rows of `rs`
//! bytes on one side; on the other, per record byte `c` a plane of `n`
//! bytes starting at `starts[c]` (one byte per row). On x86_64 blocks of
//! sixteen rows by sixteen record bytes go through SSE2 registers
//! ([`super::transpose_sse2`]); the rest in blocks of eight by eight
//! through eight 64-bit words, the last rows byte by byte.

/// A record byte no plane holds ([`plane_starts`]).
pub(crate) const NO_PLANE: usize = usize::MAX;

/// Fills `starts` with the start of each of the `rs` record bytes' planes
/// when the planes of `n` bytes follow each other in `order`, and
/// [`NO_PLANE`] for a record byte `order` does not name. Returns whether
/// every record byte has a plane.
pub(crate) fn plane_starts(order: &[u16], n: usize, rs: usize, starts: &mut Vec<usize>) -> bool {
    starts.clear();
    starts.resize(rs, NO_PLANE);
    let mut covered = 0usize;
    for (p, &at) in order.iter().enumerate() {
        if let Some(s) = starts.get_mut(usize::from(at)) {
            covered += usize::from(*s == NO_PLANE);
            *s = p * n;
        }
    }
    covered == rs
}

/// Writes the planes of `rows` (`n` rows of `rs` bytes) into `planes`:
/// record byte `c` of row `r` to `planes[starts[c] + r]`, nothing for a
/// record byte at [`NO_PLANE`].
pub(crate) fn rows_to_planes(
    rows: &[u8],
    n: usize,
    rs: usize,
    starts: &[usize],
    planes: &mut [u8],
) {
    let rows = &rows[..n * rs];
    let (r0, c0) = wide_rows_to_planes(rows, n, rs, starts, planes);
    rows_to_planes_in(rows, rs, starts, planes, 0..r0, c0);
    rows_to_planes_in(rows, rs, starts, planes, r0..n, 0);
}

/// Inverse of [`rows_to_planes`]: writes `n` rows of `rs` bytes into
/// `rows`, record byte `c` of row `r` from `planes[starts[c] + r]`. Every
/// start must name a whole plane in `planes` (no [`NO_PLANE`]).
pub(crate) fn planes_to_rows(
    planes: &[u8],
    n: usize,
    rs: usize,
    starts: &[usize],
    rows: &mut [u8],
) {
    let rows = &mut rows[..n * rs];
    let (r0, c0) = wide_planes_to_rows(planes, n, rs, starts, rows);
    planes_to_rows_in(planes, rs, starts, rows, 0..r0, c0);
    planes_to_rows_in(planes, rs, starts, rows, r0..n, 0);
}

/// Sections of at least sixteen rows of at least sixteen bytes, whole:
/// SSE2 on x86_64.
#[cfg(target_arch = "x86_64")]
use super::transpose_sse2::{
    planes_to_rows as wide_planes_to_rows, rows_to_planes as wide_rows_to_planes,
};

/// Elsewhere the word-wise code does everything.
#[cfg(not(target_arch = "x86_64"))]
fn wide_rows_to_planes(_: &[u8], _: usize, _: usize, _: &[usize], _: &mut [u8]) -> (usize, usize) {
    (0, 0)
}

/// As above.
#[cfg(not(target_arch = "x86_64"))]
fn wide_planes_to_rows(_: &[u8], _: usize, _: usize, _: &[usize], _: &mut [u8]) -> (usize, usize) {
    (0, 0)
}

/// [`rows_to_planes`] on `rows` (a range of row indices) and the record
/// bytes from `c0`: blocks of eight rows by eight bytes, the last rows
/// byte by byte.
fn rows_to_planes_in(
    rows: &[u8],
    rs: usize,
    starts: &[usize],
    planes: &mut [u8],
    range: core::ops::Range<usize>,
    c0: usize,
) {
    let mut r = range.start;
    while r + 8 <= range.end {
        let mut c = c0;
        while c + 8 <= rs {
            let at = r * rs + c;
            let a = transpose8(core::array::from_fn(|i| load8(rows, at + i * rs)));
            for (w, &s) in a.iter().zip(&starts[c..c + 8]) {
                if s != NO_PLANE {
                    planes[s + r..s + r + 8].copy_from_slice(&w.to_le_bytes());
                }
            }
            c += 8;
        }
        // The last record bytes, fewer than eight, as one block read short.
        if c < rs {
            let rem = rs - c;
            let a = transpose8(core::array::from_fn(|i| {
                let at = (r + i) * rs + c;
                load_short(&rows[at..at + rem])
            }));
            for (w, &s) in a.iter().zip(&starts[c..]) {
                if s != NO_PLANE {
                    planes[s + r..s + r + 8].copy_from_slice(&w.to_le_bytes());
                }
            }
        }
        r += 8;
    }
    for r in r..range.end {
        for (&b, &s) in rows[r * rs + c0..(r + 1) * rs].iter().zip(&starts[c0..]) {
            if s != NO_PLANE {
                planes[s + r] = b;
            }
        }
    }
}

/// [`planes_to_rows`] on `rows` (a range of row indices) and the record
/// bytes from `c0`, as [`rows_to_planes_in`].
fn planes_to_rows_in(
    planes: &[u8],
    rs: usize,
    starts: &[usize],
    rows: &mut [u8],
    range: core::ops::Range<usize>,
    c0: usize,
) {
    let mut r = range.start;
    while r + 8 <= range.end {
        let mut c = c0;
        while c + 8 <= rs {
            let a = transpose8(core::array::from_fn(|k| load8(planes, starts[c + k] + r)));
            for (i, w) in a.iter().enumerate() {
                let at = (r + i) * rs + c;
                rows[at..at + 8].copy_from_slice(&w.to_le_bytes());
            }
            c += 8;
        }
        // The last record bytes, fewer than eight, as one block written
        // short (the missing columns read the last one again).
        if c < rs {
            let rem = rs - c;
            let a = transpose8(core::array::from_fn(|k| {
                load8(planes, starts[(c + k).min(rs - 1)] + r)
            }));
            for (i, w) in a.iter().enumerate() {
                let at = (r + i) * rs + c;
                rows[at..at + rem].copy_from_slice(&w.to_le_bytes()[..rem]);
            }
        }
        r += 8;
    }
    for r in r..range.end {
        for (o, &s) in rows[r * rs + c0..(r + 1) * rs]
            .iter_mut()
            .zip(&starts[c0..])
        {
            *o = planes[s + r];
        }
    }
}

#[inline]
pub(crate) fn load8(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// Up to eight bytes as the low bytes of a word.
#[inline]
fn load_short(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(b)
}

#[cfg(target_arch = "x86_64")]
use super::transpose_sse2::transpose8;

/// Transposes the 8×8 byte matrix whose row `i` is the little-endian
/// bytes of `a[i]`: swaps the off-diagonal 4×4, then 2×2, then 1×1 blocks.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn transpose8(a: [u64; 8]) -> [u64; 8] {
    #[inline(always)]
    fn swap(x: u64, y: u64, shift: u32, mask: u64) -> (u64, u64) {
        let t = ((x >> shift) ^ y) & mask;
        (x ^ (t << shift), y ^ t)
    }
    let [a0, a1, a2, a3, a4, a5, a6, a7] = a;
    const M4: u64 = 0x0000_0000_ffff_ffff;
    let (a0, a4) = swap(a0, a4, 32, M4);
    let (a1, a5) = swap(a1, a5, 32, M4);
    let (a2, a6) = swap(a2, a6, 32, M4);
    let (a3, a7) = swap(a3, a7, 32, M4);
    const M2: u64 = 0x0000_ffff_0000_ffff;
    let (a0, a2) = swap(a0, a2, 16, M2);
    let (a1, a3) = swap(a1, a3, 16, M2);
    let (a4, a6) = swap(a4, a6, 16, M2);
    let (a5, a7) = swap(a5, a7, 16, M2);
    const M1: u64 = 0x00ff_00ff_00ff_00ff;
    let (a0, a1) = swap(a0, a1, 8, M1);
    let (a2, a3) = swap(a2, a3, 8, M1);
    let (a4, a5) = swap(a4, a5, 8, M1);
    let (a6, a7) = swap(a6, a7, 8, M1);
    [a0, a1, a2, a3, a4, a5, a6, a7]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A permutation of `0..rs` with some record bytes left out.
    fn order(rs: usize, seed: usize, gaps: bool) -> Vec<u16> {
        let mut o: Vec<u16> = (0..rs as u16).collect();
        for i in (1..rs).rev() {
            o.swap(i, (i * 7919 + seed) % (i + 1));
        }
        if gaps {
            o.retain(|&c| usize::from(c) % 5 != 3);
        }
        o
    }

    #[test]
    fn every_byte_reaches_its_plane_and_back() {
        for (n, rs) in [
            (0, 5),
            (1, 1),
            (8, 8),
            (7, 9),
            (16, 24),
            (19, 37),
            (64, 3),
            (9, 16),
            (16, 16),
            (33, 50),
            (64, 17),
            (48, 200),
        ] {
            for gaps in [false, true] {
                let o = order(rs, n + rs, gaps);
                let rows: Vec<u8> = (0..n * rs).map(|i| (i * 31 + 7) as u8).collect();
                let mut starts = Vec::new();
                let whole = plane_starts(&o, n, rs, &mut starts);
                assert_eq!(whole, !gaps || rs < 4, "{n}x{rs}");
                let mut planes = vec![0xaa; o.len() * n];
                rows_to_planes(&rows, n, rs, &starts, &mut planes);
                for (p, &c) in o.iter().enumerate() {
                    for r in 0..n {
                        assert_eq!(planes[p * n + r], rows[r * rs + usize::from(c)], "{n}x{rs}");
                    }
                }
                if whole {
                    let mut back = vec![0x55; n * rs];
                    planes_to_rows(&planes, n, rs, &starts, &mut back);
                    assert_eq!(back, rows, "{n}x{rs}");
                }
            }
        }
    }
}
