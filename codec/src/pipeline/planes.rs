//! Byte planes: a column of `n` values of `width` bytes becomes `width`
//! planes of `n` bytes (all first bytes, then all second bytes, ...).
//! Floats included: the sign/exponent bytes of nearby values repeat.
//!
//! A section's planes are emitted significance-major: every element's byte
//! 0 plane (fields in order), then every byte 1 plane, and so on, so the
//! high-order planes, which deltas leave mostly zero, sit next to each
//! other. (Measured against field-major order in FORMAT.md, 3.4.)

#![forbid(unsafe_code)]

/// One output plane: byte `byte` of each value in the column that starts at
/// `n * col` and holds values of `stride` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plane {
    pub(crate) col: usize,
    pub(crate) stride: usize,
    pub(crate) byte: usize,
}

/// The significance-major plane order of a record layout given as
/// `(field offset, field size, element width)`.
pub(crate) fn order(fields: &[(usize, usize, usize)]) -> Vec<Plane> {
    let mut out = Vec::new();
    for b in 0..8 {
        for &(col, stride, w) in fields {
            if b < w {
                out.extend(
                    (b..stride)
                        .step_by(w)
                        .map(|byte| Plane { col, stride, byte }),
                );
            }
        }
    }
    out
}

/// Writes the planes of all columns (`cols`, as [`soa`](super::soa) lays
/// them out for `n` rows) into `out`, in `order`.
pub(crate) fn split_all(order: &[Plane], cols: &[u8], n: usize, out: &mut [u8]) {
    for (p, dst) in order.iter().zip(out.chunks_exact_mut(n.max(1))) {
        let col = &cols[n * p.col..n * (p.col + p.stride)];
        if p.stride == 1 {
            dst.copy_from_slice(col);
        } else {
            for (d, v) in dst.iter_mut().zip(col.chunks_exact(p.stride)) {
                *d = v[p.byte];
            }
        }
    }
}

/// Inverse of [`split_all`].
pub(crate) fn join_all(order: &[Plane], planes: &[u8], n: usize, cols: &mut [u8]) {
    for (p, src) in order.iter().zip(planes.chunks_exact(n.max(1))) {
        let col = &mut cols[n * p.col..n * (p.col + p.stride)];
        if p.stride == 1 {
            col.copy_from_slice(src);
        } else {
            for (s, v) in src.iter().zip(col.chunks_exact_mut(p.stride)) {
                v[p.byte] = *s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn all_inverse(fields in proptest::collection::vec((prop_oneof![Just(1usize), Just(2), Just(4), Just(8)], 1usize..4), 1..6), n in 0usize..20, seed: u8) {
            let mut layout = Vec::new();
            let mut off = 0;
            for (w, len) in fields { layout.push((off, w * len, w)); off += w * len; }
            let ord = order(&layout);
            prop_assert_eq!(ord.len(), off);
            let cols: Vec<u8> = (0..n * off).map(|i| (i as u8).wrapping_mul(seed | 1)).collect();
            let mut p = vec![0; cols.len()];
            split_all(&ord, &cols, n, &mut p);
            let mut back = vec![0xff; cols.len()];
            join_all(&ord, &p, n, &mut back);
            prop_assert_eq!(back, cols);
        }
    }

    #[test]
    fn significance_major() {
        // (u16 a, [u8; 2] b, u32 c): byte-0 planes a0 b[0] b[1] c0, then a1 c1, then c2, c3.
        let ord = order(&[(0, 2, 2), (2, 2, 1), (4, 4, 4)]);
        let got: Vec<(usize, usize)> = ord.iter().map(|p| (p.col, p.byte)).collect();
        assert_eq!(
            got,
            [
                (0, 0),
                (2, 0),
                (2, 1),
                (4, 0),
                (0, 1),
                (4, 1),
                (4, 2),
                (4, 3)
            ]
        );
        // Two rows: columns a = [a0 a1], b = [b0 b1], c = [c0 c1] as soa lays them out.
        let cols = [
            0x10, 0x11, 0x20, 0x21, 1, 2, 3, 4, 0xc0, 0xc1, 0xc2, 0xc3, 0xd0, 0xd1, 0xd2, 0xd3,
        ];
        let mut out = [0; 16];
        split_all(&ord, &cols, 2, &mut out);
        assert_eq!(
            out,
            [0x10, 0x20, 1, 3, 2, 4, 0xc0, 0xd0, 0x11, 0x21, 0xc1, 0xd1, 0xc2, 0xd2, 0xc3, 0xd3]
        );
    }

    #[test]
    fn seed_example() {
        // The seed's x0 = 1327.784, x1 = 1320.432; as f32 they round to
        // 0x44A5F917 and 0x44A50DD3 (the seed shows ...18 and ...D4).
        let col: Vec<u8> = [1327.784f32, 1320.432]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let mut p = [0; 8];
        split_all(&order(&[(0, 4, 4)]), &col, 2, &mut p);
        assert_eq!(p, [0x17, 0xd3, 0xf9, 0x0d, 0xa5, 0xa5, 0x44, 0x44]);
    }
}
