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

#![forbid(unsafe_code)]

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
    ($enc:ident, $dec:ident, $u:ty, $i:ty, $n:expr) => {
        #[inline]
        fn $enc(c: &[u8], b: &[u8], o: &mut [u8]) {
            for ((o, c), b) in o
                .chunks_exact_mut($n)
                .zip(c.chunks_exact($n))
                .zip(b.chunks_exact($n))
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

        #[inline]
        fn $dec(d: &[u8], b: &[u8], o: &mut [u8]) {
            for ((o, d), b) in o
                .chunks_exact_mut($n)
                .zip(d.chunks_exact($n))
                .zip(b.chunks_exact($n))
            {
                let mut dv = [0u8; $n];
                dv.copy_from_slice(d);
                let mut bv = [0u8; $n];
                bv.copy_from_slice(b);
                let z = <$u>::from_le_bytes(dv);
                let v = (z >> 1) ^ (z & 1).wrapping_neg();
                o.copy_from_slice(&v.wrapping_add(<$u>::from_le_bytes(bv)).to_le_bytes());
            }
        }
    };
}

int_ops!(enc1, dec1, u8, i8, 1);
int_ops!(enc2, dec2, u16, i16, 2);
int_ops!(enc4, dec4, u32, i32, 4);
int_ops!(enc8, dec8, u64, i64, 8);

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

/// Transposes `rows` (`n` row deltas of `rs` bytes each) into planes in
/// `order`, appended to `out`.
pub(crate) fn split(order: &[u16], rows: &[u8], n: usize, rs: usize, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + order.len() * n, 0);
    for (&at, plane) in order.iter().zip(out[start..].chunks_exact_mut(n.max(1))) {
        let at = usize::from(at);
        for (dst, row) in plane.iter_mut().zip(rows.chunks_exact(rs)) {
            *dst = row[at];
        }
    }
}

/// The non-zero bytes of `bytes` (counted in byte lanes, 255 at a time).
pub(crate) fn count_nonzero(bytes: &[u8]) -> usize {
    bytes
        .chunks(255)
        .map(|c| usize::from(c.iter().fold(0u8, |n, &b| n + u8::from(b != 0))))
        .sum()
}

/// The runs of zero bytes (a zero byte that is first or follows a
/// non-zero one starts one) in the planes [`split`] makes of the same
/// arguments, counted from the rows without building the planes: exact
/// below `stop`, at least `stop` otherwise.
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
            let zero = row[at] == 0;
            runs += usize::from(zero && !prev_zero);
            prev_zero = zero;
        }
        if runs >= stop {
            break;
        }
    }
    runs
}

/// Inverse of [`split`]: replaces `rows` with the `n` rows of `rs` bytes
/// held by `planes` in `order` (bytes no plane covers, or missing from a
/// short `planes`, are zero).
pub(crate) fn unsplit(order: &[u16], planes: &[u8], n: usize, rs: usize, rows: &mut Vec<u8>) {
    rows.clear();
    rows.resize(n * rs, 0);
    if n == 0 {
        return;
    }
    for (&at, plane) in order.iter().zip(planes.chunks_exact(n)) {
        let at = usize::from(at);
        for (row, &b) in rows.chunks_exact_mut(rs).zip(plane) {
            row[at] = b;
        }
    }
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

    /// The zero runs of a byte sequence: one plane of single-byte rows.
    fn zero_runs(bytes: &[u8], stop: usize) -> usize {
        zero_runs_of_rows(&[0], bytes, bytes.len(), 1, stop)
    }

    #[test]
    fn zero_runs_counts_runs_of_zeros() {
        let planes = [0, 0, 3, 0, 5, 5, 0, 0, 0, 1];
        assert_eq!(zero_runs(&planes, usize::MAX), 3);
        assert_eq!(zero_runs(&[], usize::MAX), 0);
        assert_eq!(zero_runs(&[7, 7], usize::MAX), 0);
        assert_eq!(count_nonzero(&planes), 4);
        let ones = vec![1u8; 1000];
        assert_eq!(count_nonzero(&ones), 1000);
        // Stopped early: at least `stop`, at most the whole count.
        let long: Vec<u8> = (0..1000u32).map(|i| u8::from(i % 3 == 0)).collect();
        let all = zero_runs(&long, usize::MAX);
        assert_eq!(all, 333);
        let stopped = zero_runs(&long, 5);
        assert!((5..=all).contains(&stopped));
        // Counted from the rows: as from their planes.
        let els = [
            el(0, 4, DeltaOp::Int),
            el(4, 1, DeltaOp::Sub),
            el(5, 2, DeltaOp::Xor),
        ];
        let o = order(&els);
        for (n, stop) in [(1, usize::MAX), (7, usize::MAX), (40, usize::MAX), (40, 9)] {
            let rows: Vec<u8> = (0..n * 7u32)
                .map(|i| u8::from(i % 5 == 0 || i % 11 == 3))
                .collect();
            let mut planes = Vec::new();
            split(&o, &rows, n as usize, 7, &mut planes);
            let want = zero_runs(&planes, usize::MAX);
            let got = zero_runs_of_rows(&o, &rows, n as usize, 7, stop);
            if want < stop {
                assert_eq!(got, want);
            } else {
                assert!(got >= stop);
            }
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
        split(&o, &rows, 2, rs, &mut planes);
        assert_eq!(planes.len(), 2 * rs);
        assert_eq!(&planes[..4], &[0, 16, 4, 20]);
        let mut back = Vec::new();
        unsplit(&o, &planes, 2, rs, &mut back);
        assert_eq!(back, rows);
    }
}
