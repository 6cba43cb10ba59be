//! Structure of arrays: `n` records of `record_size` bytes become one column
//! per field, each `n * field_size` bytes, in field order.

#![forbid(unsafe_code)]

/// Transposes `rows` (`n` records) into `out`, column after column.
/// `fields` are `(offset, size)` pairs covering the record in order.
pub(crate) fn to_columns(
    rows: &[u8],
    n: usize,
    record_size: usize,
    fields: &[(usize, usize)],
    out: &mut [u8],
) {
    let mut pos = 0;
    for &(off, size) in fields {
        let col = &mut out[pos..pos + n * size];
        for (dst, row) in col
            .chunks_exact_mut(size)
            .zip(rows.chunks_exact(record_size))
        {
            dst.copy_from_slice(&row[off..off + size]);
        }
        pos += n * size;
    }
}

/// Inverse of [`to_columns`].
pub(crate) fn from_columns(
    cols: &[u8],
    n: usize,
    record_size: usize,
    fields: &[(usize, usize)],
    rows: &mut [u8],
) {
    let mut pos = 0;
    for &(off, size) in fields {
        let col = &cols[pos..pos + n * size];
        for (src, row) in col
            .chunks_exact(size)
            .zip(rows.chunks_exact_mut(record_size))
        {
            row[off..off + size].copy_from_slice(src);
        }
        pos += n * size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn inverse(sizes in proptest::collection::vec(1usize..9, 1..5), n in 0usize..20, seed: u8) {
            let mut fields = Vec::new();
            let mut off = 0;
            for s in sizes { fields.push((off, s)); off += s; }
            let rows: Vec<u8> = (0..n * off).map(|i| (i as u8).wrapping_mul(seed)).collect();
            let mut cols = vec![0; rows.len()];
            to_columns(&rows, n, off, &fields, &mut cols);
            let mut back = vec![0xff; rows.len()];
            from_columns(&cols, n, off, &fields, &mut back);
            prop_assert_eq!(back, rows);
        }
    }

    #[test]
    fn example() {
        // two records of (u8 a, u16 b)
        let rows = [1, 2, 3, 4, 5, 6];
        let mut cols = [0; 6];
        to_columns(&rows, 2, 3, &[(0, 1), (1, 2)], &mut cols);
        assert_eq!(cols, [1, 4, 2, 3, 5, 6]);
    }
}
