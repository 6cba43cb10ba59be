//! The byte-plane row mode (FORMAT.md, "Byte planes"): a section's rows as
//! whole-record deltas, transposed into one plane per element byte so zstd
//! sees long runs of like bytes.
//!
//! Every row is the full record against its reference, element by element
//! (no mask, no kind bit): `Int`/`Predict` (floats included, by bit
//! pattern) the zigzag of the wrapping difference at the element's width,
//! `Sub` the per-byte difference, `Xor` the XOR, `None` the value itself,
//! each stored little-endian in the element's bytes. Changed rows are coded
//! against their baseline record; spawned rows against the spawned record
//! before them (in id order), the first against the type's default record,
//! so a regular grid of new entities becomes constant planes.
//!
//! The planes are significance-major: for byte position `b` from 0 to 7,
//! for every element wider than `b` in record order, one plane of one byte
//! per row (rows in wire order) holding byte `b` of that element's delta.

use super::transpose;
use super::values::Element;
use crate::schema::{DeltaOp, Span};

/// The record byte each plane holds, in plane order.
pub(crate) fn order(elements: &[Element]) -> Vec<u16> {
    let mut out = Vec::new();
    for b in 0..8u16 {
        for e in elements.iter().filter(|e| u16::from(e.width) > b) {
            out.push(e.offset + b);
        }
    }
    out
}

/// Zigzag of the wrapping difference of each `N`-byte little-endian
/// integer of `c` and `b` (and its inverse), one function per width.
macro_rules! int_ops {
    ($enc:ident, $dec:ident, $add:ident, $wide_enc:path, $wide_add:path, $u:ty, $i:ty, $n:expr) => {
        #[inline(always)]
        fn $enc(c: &[u8], b: &[u8], o: &mut [u8]) {
            let done = $wide_enc(c, b, o);
            for ((o, c), b) in o[done..]
                .chunks_exact_mut($n)
                .zip(c[done..].chunks_exact($n))
                .zip(b[done..].chunks_exact($n))
            {
                let mut cv = [0u8; $n];
                cv.copy_from_slice(c);
                let mut bv = [0u8; $n];
                bv.copy_from_slice(b);
                let d = <$u>::from_le_bytes(cv).wrapping_sub(<$u>::from_le_bytes(bv));
                let z = (d << 1) ^ (((d as $i) >> ($n * 8 - 1)) as $u);
                o.copy_from_slice(&z.to_le_bytes());
            }
        }

        #[inline(always)]
        fn $dec(d: &[u8], b: &[u8], o: &mut [u8]) {
            o.copy_from_slice(b);
            $add(d, o);
        }

        /// `$dec` with the reference in `o`.
        #[inline(always)]
        fn $add(d: &[u8], o: &mut [u8]) {
            let done = $wide_add(d, o);
            for (o, d) in o[done..].chunks_exact_mut($n).zip(d[done..].chunks_exact($n)) {
                let mut dv = [0u8; $n];
                dv.copy_from_slice(d);
                let mut ov = [0u8; $n];
                ov.copy_from_slice(o);
                let z = <$u>::from_le_bytes(dv);
                let v = (z >> 1) ^ (z & 1).wrapping_neg();
                o.copy_from_slice(&v.wrapping_add(<$u>::from_le_bytes(ov)).to_le_bytes());
            }
        }
    };
}

/// Lanes coded wide (SSE2 on x86_64) before the rest lane by lane: none.
#[inline(always)]
fn narrow_enc(_: &[u8], _: &[u8], _: &mut [u8]) -> usize {
    0
}

/// As [`narrow_enc`].
#[inline(always)]
fn narrow_add(_: &[u8], _: &mut [u8]) -> usize {
    0
}

#[cfg(target_arch = "x86_64")]
use super::zigzag_sse2 as wide;

/// Elsewhere every lane goes lane by lane.
#[cfg(not(target_arch = "x86_64"))]
mod wide {
    pub(super) use super::{
        narrow_add as add2, narrow_add as add4, narrow_add as add8, narrow_enc as enc2,
        narrow_enc as enc4, narrow_enc as enc8,
    };
}

int_ops!(enc1, dec1, add1, narrow_enc, narrow_add, u8, i8, 1);
int_ops!(enc2, dec2, add2, wide::enc2, wide::add2, u16, i16, 2);
int_ops!(enc4, dec4, add4, wide::enc4, wide::add4, u32, i32, 4);
int_ops!(enc8, dec8, add8, wide::enc8, wide::add8, u64, i64, 8);

/// Writes into `out` (a record's size) the delta of `cur` against
/// `reference`, span by span (runs of fields of one width and operator).
pub(crate) fn row_delta(spans: &[Span], cur: &[u8], reference: &[u8], out: &mut [u8]) {
    for s in spans {
        let r = s.offset..s.offset + s.len;
        let (c, b, o) = (&cur[r.clone()], &reference[r.clone()], &mut out[r]);
        match s.op {
            DeltaOp::Int | DeltaOp::Predict => match s.width {
                1 => enc1(c, b, o),
                2 => enc2(c, b, o),
                4 => enc4(c, b, o),
                _ => enc8(c, b, o),
            },
            DeltaOp::Sub => {
                for ((o, &c), &b) in o.iter_mut().zip(c).zip(b) {
                    *o = c.wrapping_sub(b);
                }
            }
            DeltaOp::Xor => {
                for ((o, &c), &b) in o.iter_mut().zip(c).zip(b) {
                    *o = c ^ b;
                }
            }
            DeltaOp::None => o.copy_from_slice(c),
        }
    }
}

/// Inverse of [`row_delta`]: writes into `out` the record whose delta
/// against `reference` is `delta`.
pub(crate) fn row_apply(spans: &[Span], delta: &[u8], reference: &[u8], out: &mut [u8]) {
    for s in spans {
        let r = s.offset..s.offset + s.len;
        let (d, b, o) = (&delta[r.clone()], &reference[r.clone()], &mut out[r]);
        match s.op {
            DeltaOp::Int | DeltaOp::Predict => match s.width {
                1 => dec1(d, b, o),
                2 => dec2(d, b, o),
                4 => dec4(d, b, o),
                _ => dec8(d, b, o),
            },
            DeltaOp::Sub => {
                for ((o, &d), &b) in o.iter_mut().zip(d).zip(b) {
                    *o = d.wrapping_add(b);
                }
            }
            DeltaOp::Xor => {
                for ((o, &d), &b) in o.iter_mut().zip(d).zip(b) {
                    *o = d ^ b;
                }
            }
            DeltaOp::None => o.copy_from_slice(d),
        }
    }
}

/// [`row_delta`] of many rows into `out` (rows of `rs` bytes, in `pairs`
/// order): row `k` is record `pairs[k].0` of `cur` against record
/// `pairs[k].1` of `reference` (both records of `rs` bytes). Span by span,
/// so each span's operator is matched once for all rows.
pub(crate) fn delta_rows(
    spans: &[Span],
    rs: usize,
    cur: &[u8],
    reference: &[u8],
    pairs: &[(u32, u32)],
    out: &mut [u8],
) {
    /// The rows' sources: a span, the record size, the records of both
    /// sides and the index pairs.
    type Rows<'a> = (&'a Span, usize, &'a [u8], &'a [u8], &'a [(u32, u32)]);
    #[inline(always)]
    fn each(
        (s, rs, cur, reference, pairs): Rows<'_>,
        out: &mut [u8],
        f: impl Fn(&[u8], &[u8], &mut [u8]),
    ) {
        let r = s.offset..s.offset + s.len;
        for (o, &(c, b)) in out.chunks_exact_mut(rs).zip(pairs) {
            let (c, b) = (c as usize * rs, b as usize * rs);
            f(
                &cur[c + r.start..c + r.end],
                &reference[b + r.start..b + r.end],
                &mut o[r.clone()],
            );
        }
    }
    for s in spans {
        let args = (s, rs, cur, reference, pairs);
        match s.op {
            DeltaOp::Int | DeltaOp::Predict => match s.width {
                1 => each(args, out, enc1),
                2 => each(args, out, enc2),
                4 => each(args, out, enc4),
                _ => each(args, out, enc8),
            },
            DeltaOp::Sub => each(args, out, |c, b, o| {
                for ((o, &c), &b) in o.iter_mut().zip(c).zip(b) {
                    *o = c.wrapping_sub(b);
                }
            }),
            DeltaOp::Xor => each(args, out, |c, b, o| {
                for ((o, &c), &b) in o.iter_mut().zip(c).zip(b) {
                    *o = c ^ b;
                }
            }),
            DeltaOp::None => each(args, out, |c, _, o| o.copy_from_slice(c)),
        }
    }
}

/// Transposes `rows` (`n` row deltas of `rs` bytes each) into planes in
/// `order`, appended to `out`, in one pass ([`transpose`]); `starts` is
/// scratch.
pub(crate) fn split(
    order: &[u16],
    rows: &[u8],
    n: usize,
    rs: usize,
    out: &mut Vec<u8>,
    starts: &mut Vec<usize>,
) {
    let start = out.len();
    out.resize(start + order.len() * n, 0);
    transpose::plane_starts(order, n, rs, starts);
    transpose::rows_to_planes(rows, n, rs, starts, &mut out[start..]);
}

/// The non-zero bytes of `bytes` (counted in byte lanes, 255 at a time).
pub(crate) fn count_nonzero(bytes: &[u8]) -> usize {
    bytes
        .chunks(255)
        .map(|c| usize::from(c.iter().fold(0u8, |n, &b| n + u8::from(b != 0))))
        .sum()
}

/// The runs of zero bytes in `bytes` (a zero byte that is first or
/// follows a non-zero one starts one): sixty-four bytes at a time on
/// x86_64 ([`super::count_sse2`]), else eight ([`zero_runs_words`]).
pub(crate) fn zero_runs(bytes: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    return super::count_sse2::zeros_and_runs(bytes).1;
    #[cfg(not(target_arch = "x86_64"))]
    return zero_runs_words(bytes);
}

/// The non-zero bytes of `bytes` and its runs of zero bytes, in one pass
/// on x86_64: ([`count_nonzero`], [`zero_runs`]).
pub(crate) fn nonzero_and_runs(bytes: &[u8]) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let (zeros, runs) = super::count_sse2::zeros_and_runs(bytes);
        (bytes.len() - zeros, runs)
    }
    #[cfg(not(target_arch = "x86_64"))]
    (count_nonzero(bytes), zero_runs(bytes))
}

/// [`zero_runs`] eight bytes at a time.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub(crate) fn zero_runs_words(bytes: &[u8]) -> usize {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut runs = 0usize;
    // The high bit of the word's first byte when the byte before it is zero.
    let mut before = 0u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = transpose::load8(w, 0);
        // High bit of every zero byte (no carry crosses a byte).
        let z = !(((w & LOW) + LOW) | w) & HIGH;
        // One high bit per run start; their count is the top byte of the
        // sum of the word's bytes (each 0 or 1), without a popcount.
        let starts = (z & !((z << 8) | before)) >> 7;
        runs += (starts.wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize;
        before = z >> 56;
    }
    let mut prev_zero = before != 0;
    for &b in words.remainder() {
        let zero = b == 0;
        runs += usize::from(zero && !prev_zero);
        prev_zero = zero;
    }
    runs
}

/// The zero runs of the planes of `rows` (`n` rows of `rs` bytes) in
/// `order`, counted byte by byte from the rows without building the
/// planes, plane by plane until there are at least `stop` (then the count
/// so far).
pub(crate) fn zero_runs_of_rows(
    order: &[u16],
    rows: &[u8],
    n: usize,
    rs: usize,
    stop: usize,
) -> usize {
    let mut runs = 0usize;
    let mut prev_zero = false;
    for &at in order {
        let at = usize::from(at);
        for row in rows.chunks_exact(rs).take(n) {
            let zero = row.get(at) == Some(&0);
            runs += usize::from(zero && !prev_zero);
            prev_zero = zero;
        }
        if runs >= stop {
            break;
        }
    }
    runs
}

/// Inverse of [`split`]: returns rows `skip..n` of the `n` rows of `rs`
/// bytes held by `planes` in `order` (bytes no plane covers, or missing
/// from a short `planes`, are zero), written into the front of `rows` in
/// one pass ([`transpose`]); `starts` is scratch.
pub(crate) fn unsplit<'a>(
    order: &[u16],
    planes: &[u8],
    n: usize,
    skip: usize,
    rs: usize,
    rows: &'a mut Vec<u8>,
    starts: &mut Vec<usize>,
) -> &'a [u8] {
    let skip = skip.min(n);
    let count = n - skip;
    // Every byte is written below: the buffer only grows (by zeros) and
    // keeps its length from one section to the next.
    if rows.len() < count * rs {
        rows.resize(count * rs, 0);
    }
    let rows = &mut rows[..count * rs];
    if count == 0 {
        return rows;
    }
    let len = order.len() * n;
    let whole = transpose::plane_starts(order, n, rs, starts) && planes.len() >= len;
    if whole {
        for s in starts.iter_mut() {
            *s += skip;
        }
        transpose::planes_to_rows(planes, count, rs, starts, rows);
        return rows;
    }
    // Missing planes (a short last one included) and bytes read as zeros:
    // from a copy of the whole planes with zero planes after them.
    let mut padded = planes[..planes.len().min(len) / n * n].to_vec();
    padded.resize(len + n, 0);
    for s in starts.iter_mut() {
        if *s == transpose::NO_PLANE {
            *s = len;
        }
        *s += skip;
    }
    transpose::planes_to_rows(&padded, count, rs, starts, rows);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(offset: u16, width: u8, op: DeltaOp) -> Element {
        Element {
            offset,
            width,
            op,
            float: false,
            grid: None,
        }
    }

    #[test]
    fn order_is_significance_major() {
        let els = [
            el(0, 4, DeltaOp::Int),
            el(4, 1, DeltaOp::Sub),
            el(5, 2, DeltaOp::Xor),
        ];
        assert_eq!(order(&els), vec![0, 4, 5, 1, 6, 2, 3]);
    }

    /// The zero runs of `bytes`, one byte at a time.
    fn zero_runs_slow(bytes: &[u8]) -> usize {
        let mut prev_zero = false;
        let mut runs = 0;
        for &b in bytes {
            runs += usize::from(b == 0 && !prev_zero);
            prev_zero = b == 0;
        }
        runs
    }

    /// Bytes with zeros in runs of every length, from a xorshift.
    fn sparse_bytes(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if x % 7 < 4 {
                    0
                } else {
                    (x >> 8) as u8
                }
            })
            .collect()
    }

    #[test]
    fn zero_runs_counts_runs_of_zeros() {
        let planes = [0, 0, 3, 0, 5, 5, 0, 0, 0, 1];
        assert_eq!(zero_runs(&planes), 3);
        assert_eq!(zero_runs(&[]), 0);
        assert_eq!(zero_runs(&[7, 7]), 0);
        assert_eq!(zero_runs(&[0; 17]), 1);
        // Runs across words and the tail, against a byte-by-byte count.
        for len in 0..70 {
            let bytes = sparse_bytes(len, len as u32 + 3);
            let mut want = 0;
            for (i, &b) in bytes.iter().enumerate() {
                want += usize::from(b == 0 && (i == 0 || bytes[i - 1] != 0));
            }
            assert_eq!(zero_runs(&bytes), want, "{len} bytes");
        }
        assert_eq!(count_nonzero(&planes), 4);
        let ones = vec![1u8; 1000];
        assert_eq!(count_nonzero(&ones), 1000);
        let long: Vec<u8> = (0..1000u32).map(|i| u8::from(i % 3 == 0)).collect();
        assert_eq!(zero_runs(&long), 333);
        // Runs crossing word and block boundaries, every alignment and
        // tail length; the non-zero bytes counted with them.
        for len in (0..80).chain([127, 128, 129, 200, 1000]) {
            let bytes = sparse_bytes(len, len as u32);
            for at in 0..len.min(9) {
                let b = &bytes[at..];
                assert_eq!(zero_runs(b), zero_runs_slow(b));
                assert_eq!(zero_runs_words(b), zero_runs_slow(b));
                let nonzero = b.iter().filter(|&&x| x != 0).count();
                assert_eq!(nonzero_and_runs(b), (nonzero, zero_runs_slow(b)));
                assert_eq!(count_nonzero(b), nonzero);
            }
        }
        let zeros = vec![0u8; 300];
        assert_eq!(nonzero_and_runs(&zeros), (0, 1));
        assert_eq!(nonzero_and_runs(&ones), (1000, 0));
    }

    #[test]
    fn zero_runs_of_rows_count_the_planes_runs_until_they_stop() {
        let els = [
            el(0, 4, DeltaOp::Int),
            el(4, 1, DeltaOp::Sub),
            el(5, 2, DeltaOp::Xor),
        ];
        let order = order(&els);
        for n in [0usize, 1, 3, 9, 17] {
            let rows = sparse_bytes(n * 7, n as u32 + 1);
            let mut planes = Vec::new();
            split(&order, &rows, n, 7, &mut planes, &mut Vec::new());
            let all = zero_runs(&planes);
            assert_eq!(zero_runs_of_rows(&order, &rows, n, 7, usize::MAX), all);
            for stop in 0..=all {
                let runs = zero_runs_of_rows(&order, &rows, n, 7, stop);
                assert!(runs >= stop && runs <= all, "{n} rows, stop {stop}: {runs}");
            }
        }
    }

    #[test]
    fn split_gathers_planes_in_order() {
        let els = [
            el(0, 4, DeltaOp::Int),
            el(4, 1, DeltaOp::Sub),
            el(5, 2, DeltaOp::Xor),
            el(7, 8, DeltaOp::Predict),
            el(15, 2, DeltaOp::Int),
        ];
        let rs = 17;
        let o = order(&els);
        for n in [1, 7, 8, 9, 40] {
            let rows = sparse_bytes(n * rs, n as u32);
            let mut planes = vec![9u8; 3];
            split(&o, &rows, n, rs, &mut planes, &mut Vec::new());
            assert_eq!(planes.len(), 3 + o.len() * n);
            for (p, &at) in o.iter().enumerate() {
                for r in 0..n {
                    assert_eq!(planes[3 + p * n + r], rows[r * rs + usize::from(at)]);
                }
            }
            let mut buf = vec![7u8; 5 * rs];
            let back = unsplit(&o, &planes[3..], n, 0, rs, &mut buf, &mut Vec::new());
            assert_eq!(back, rows);
            // The rows from `skip` on.
            for skip in [1, n / 2, n] {
                let back = unsplit(&o, &planes[3..], n, skip, rs, &mut buf, &mut Vec::new());
                assert_eq!(back, &rows[skip * rs..]);
            }
            // A short last plane is left out: its bytes are zero.
            let mut back = unsplit(
                &o,
                &planes[3..planes.len() - 1],
                n,
                0,
                rs,
                &mut buf,
                &mut Vec::new(),
            )
            .to_vec();
            let short = back.clone();
            let last = usize::from(o[o.len() - 1]);
            for r in 0..n {
                assert_eq!(back[r * rs + last], 0);
                back[r * rs + last] = rows[r * rs + last];
            }
            assert_eq!(back, rows);
            let skip = n / 3;
            let tail = unsplit(
                &o,
                &planes[3..planes.len() - 1],
                n,
                skip,
                rs,
                &mut buf,
                &mut Vec::new(),
            );
            assert_eq!(tail, &short[skip * rs..]);
        }
    }

    #[test]
    fn rows_and_planes_roundtrip() {
        let spans = [
            Span {
                offset: 0,
                len: 4,
                width: 4,
                op: DeltaOp::Int,
            },
            Span {
                offset: 4,
                len: 1,
                width: 1,
                op: DeltaOp::Sub,
            },
            Span {
                offset: 5,
                len: 2,
                width: 2,
                op: DeltaOp::Xor,
            },
            Span {
                offset: 7,
                len: 8,
                width: 8,
                op: DeltaOp::Predict,
            },
            Span {
                offset: 15,
                len: 1,
                width: 1,
                op: DeltaOp::None,
            },
        ];
        let els = [
            el(0, 4, DeltaOp::Int),
            el(4, 1, DeltaOp::Sub),
            el(5, 2, DeltaOp::Xor),
            el(7, 8, DeltaOp::Predict),
            el(15, 1, DeltaOp::None),
        ];
        let rs = 16;
        let cur: Vec<u8> = (0..rs as u8).map(|i| i.wrapping_mul(37)).collect();
        let reference: Vec<u8> = (0..rs as u8).map(|i| i.wrapping_mul(91) ^ 5).collect();
        let mut d = vec![0; rs];
        row_delta(&spans, &cur, &reference, &mut d);
        let mut back = vec![0; rs];
        row_apply(&spans, &d, &reference, &mut back);
        assert_eq!(back, cur);
        // Zigzag of a difference of -1 in the i32 is 1.
        let mut c = reference.clone();
        c[..4].copy_from_slice(
            &(u32::from_le_bytes([reference[0], reference[1], reference[2], reference[3]])
                .wrapping_sub(1))
            .to_le_bytes(),
        );
        row_delta(&spans, &c, &reference, &mut d);
        assert_eq!(&d[..4], &[1, 0, 0, 0]);
        // Two rows through the planes.
        let rows: Vec<u8> = (0..2 * rs as u8).collect();
        let o = order(&els);
        let mut planes = Vec::new();
        split(&o, &rows, 2, rs, &mut planes, &mut Vec::new());
        assert_eq!(planes.len(), 2 * rs);
        assert_eq!(&planes[..4], &[0, 16, 4, 20]);
        let mut back = Vec::new();
        assert_eq!(
            unsplit(&o, &planes, 2, 0, rs, &mut back, &mut Vec::new()),
            rows
        );
    }

    /// The integer delta of one lane, independently: the zigzag of the
    /// wrapping difference of `w`-byte little-endian integers.
    fn lane_zigzag(c: &[u8], b: &[u8]) -> Vec<u8> {
        let w = c.len();
        let bits = 8 * w as u32;
        let mask = if w == 8 { u64::MAX } else { (1u64 << bits) - 1 };
        let le = |x: &[u8]| x.iter().rev().fold(0u64, |v, &y| (v << 8) | u64::from(y));
        let d = le(c).wrapping_sub(le(b)) & mask;
        let negative = d >> (bits - 1) == 1;
        let z = ((d << 1) & mask) ^ if negative { mask } else { 0 };
        z.to_le_bytes()[..w].to_vec()
    }

    #[test]
    fn int_deltas_match_the_lane_model_at_every_length() {
        // Spans long enough for the wide (16-byte) path and its remainder,
        // with extreme lanes among hashed ones.
        for width in [1usize, 2, 4, 8] {
            for lanes in 0..=(80 / width) {
                let len = lanes * width;
                let span = [Span {
                    offset: 0,
                    len,
                    width,
                    op: DeltaOp::Int,
                }];
                let mut c = sparse_bytes(len, width as u32 + 11);
                let b = sparse_bytes(len, width as u32 + 29);
                for (k, lane) in c.chunks_exact_mut(width).enumerate() {
                    match k % 5 {
                        0 => lane.fill(0xff),
                        1 => lane.fill(0),
                        _ => {}
                    }
                }
                let mut delta = vec![0xaa; len];
                row_delta(&span, &c, &b, &mut delta);
                let want: Vec<u8> = c
                    .chunks_exact(width)
                    .zip(b.chunks_exact(width))
                    .flat_map(|(c, b)| lane_zigzag(c, b))
                    .collect();
                assert_eq!(delta, want, "width {width}, {lanes} lanes");
                let mut back = vec![0x55; len];
                row_apply(&span, &delta, &b, &mut back);
                assert_eq!(back, c, "width {width}, {lanes} lanes");
            }
        }
    }

    #[test]
    fn delta_rows_is_row_delta() {
        // Every operator and width, spans of several elements.
        let mut spans = Vec::new();
        let mut offset = 0;
        for (op, width) in [
            (DeltaOp::Int, 4),
            (DeltaOp::Sub, 1),
            (DeltaOp::Xor, 2),
            (DeltaOp::Predict, 8),
            (DeltaOp::None, 1),
            (DeltaOp::Int, 1),
            (DeltaOp::Int, 2),
            (DeltaOp::Sub, 2),
        ] {
            let len = width * 3;
            spans.push(Span {
                offset,
                len,
                width,
                op,
            });
            offset += len;
        }
        let rs = offset;
        let n = 9;
        let deltas = sparse_bytes(n * rs, 5);
        let reference = sparse_bytes(n * rs, 6);
        // Records at scattered places among others.
        let at: Vec<usize> = (0..n).map(|k| (2 * k + 1) * rs).collect();
        let mut records = sparse_bytes((2 * n + 1) * rs, 7);
        for (k, &a) in at.iter().enumerate() {
            records[a..a + rs].copy_from_slice(&reference[k * rs..(k + 1) * rs]);
        }
        // `delta_rows` of those records against the references gives the
        // deltas back (records from `cur` and `reference` by index pairs).
        let mut cur = vec![0; n * rs];
        for k in 0..n {
            row_apply(
                &spans,
                &deltas[k * rs..(k + 1) * rs],
                &reference[k * rs..(k + 1) * rs],
                &mut cur[k * rs..(k + 1) * rs],
            );
        }
        let pairs: Vec<(u32, u32)> = (0..n as u32).rev().map(|k| (k, k)).collect();
        let mut again = vec![0xaa; n * rs];
        delta_rows(&spans, rs, &cur, &reference, &pairs, &mut again);
        for (k, &(c, _)) in pairs.iter().enumerate() {
            let c = c as usize;
            let mut want = vec![0; rs];
            row_delta(
                &spans,
                &cur[c * rs..(c + 1) * rs],
                &reference[c * rs..(c + 1) * rs],
                &mut want,
            );
            assert_eq!(again[k * rs..(k + 1) * rs], want[..], "delta row {k}");
        }
    }
}
