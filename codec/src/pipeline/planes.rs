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
use crate::schema::DeltaOp;

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

/// An element's bytes as a little-endian integer (fixed widths, so no
/// call to `memcpy`).
#[inline]
fn load(bytes: &[u8]) -> u64 {
    match *bytes {
        [a] => u64::from(a),
        [a, b] => u64::from(u16::from_le_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => {
            let mut b = [0u8; 8];
            let n = bytes.len().min(8);
            b[..n].copy_from_slice(&bytes[..n]);
            u64::from_le_bytes(b)
        }
    }
}

/// Writes the low `out.len()` bytes of `v` little-endian into `out`.
#[inline]
fn store(v: u64, out: &mut [u8]) {
    match out.len() {
        1 => out[0] = v as u8,
        2 => out.copy_from_slice(&(v as u16).to_le_bytes()),
        4 => out.copy_from_slice(&(v as u32).to_le_bytes()),
        8 => out.copy_from_slice(&v.to_le_bytes()),
        n => {
            let k = n.min(8);
            out[..k].copy_from_slice(&v.to_le_bytes()[..k]);
        }
    }
}

#[inline]
fn mask(width: usize) -> u64 {
    if width == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width)) - 1
    }
}

/// Writes into `out` (a record's size) the delta of `cur` against
/// `reference`.
pub(crate) fn row_delta(elements: &[Element], cur: &[u8], reference: &[u8], out: &mut [u8]) {
    for e in elements {
        let (at, w) = (usize::from(e.offset), usize::from(e.width));
        let r = at..at + w;
        let (c, b, o) = (&cur[r.clone()], &reference[r.clone()], &mut out[r]);
        match e.op {
            DeltaOp::Int | DeltaOp::Predict => {
                let bits = 8 * w as u32;
                let d = load(c).wrapping_sub(load(b)) & mask(w);
                let s = ((d << (64 - bits)) as i64) >> (64 - bits);
                let z = (((s << 1) ^ (s >> 63)) as u64) & mask(w);
                store(z, o);
            }
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
pub(crate) fn row_apply(elements: &[Element], delta: &[u8], reference: &[u8], out: &mut [u8]) {
    for e in elements {
        let (at, w) = (usize::from(e.offset), usize::from(e.width));
        let r = at..at + w;
        let (d, b, o) = (&delta[r.clone()], &reference[r.clone()], &mut out[r]);
        match e.op {
            DeltaOp::Int | DeltaOp::Predict => {
                let z = load(d);
                let v = (z >> 1) ^ (z & 1).wrapping_neg();
                let x = load(b).wrapping_add(v) & mask(w);
                store(x, o);
            }
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

/// Inverse of [`split`]: writes the `n` row deltas held by `planes` (of
/// length `order.len() * n`) into `rows` (`n * rs` bytes; bytes no plane
/// covers are left as they are).
pub(crate) fn join(order: &[u16], planes: &[u8], n: usize, rs: usize, rows: &mut [u8]) {
    for (&at, plane) in order.iter().zip(planes.chunks_exact(n.max(1))) {
        let at = usize::from(at);
        for (src, row) in plane.iter().zip(rows.chunks_exact_mut(rs)) {
            row[at] = *src;
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

    #[test]
    fn rows_and_planes_roundtrip() {
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
        row_delta(&els, &cur, &reference, &mut d);
        let mut back = vec![0; rs];
        row_apply(&els, &d, &reference, &mut back);
        assert_eq!(back, cur);
        // Zigzag of a difference of -1 in the i32 is 1.
        let mut c = reference.clone();
        c[..4].copy_from_slice(
            &(u32::from_le_bytes([reference[0], reference[1], reference[2], reference[3]])
                .wrapping_sub(1))
            .to_le_bytes(),
        );
        row_delta(&els, &c, &reference, &mut d);
        assert_eq!(&d[..4], &[1, 0, 0, 0]);
        // Two rows through the planes.
        let rows: Vec<u8> = (0..2 * rs as u8).collect();
        let o = order(&els);
        let mut planes = Vec::new();
        split(&o, &rows, 2, rs, &mut planes);
        assert_eq!(planes.len(), 2 * rs);
        assert_eq!(&planes[..4], &[0, 16, 4, 20]);
        let mut again = vec![0; 2 * rs];
        join(&o, &planes, 2, rs, &mut again);
        assert_eq!(again, rows);
    }
}
