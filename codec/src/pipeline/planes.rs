//! Byte planes: a column of `n` values of `width` bytes becomes `width`
//! planes of `n` bytes (all first bytes, then all second bytes, ...).
//! Floats included: the sign/exponent bytes of nearby values repeat.

#![forbid(unsafe_code)]

/// Splits `col` (`n` values of `width` bytes) into planes in `out`.
pub(crate) fn split(col: &[u8], n: usize, width: usize, out: &mut [u8]) {
    if width == 1 {
        out.copy_from_slice(col);
        return;
    }
    for (i, v) in col.chunks_exact(width).enumerate() {
        for (b, &byte) in v.iter().enumerate() {
            out[b * n + i] = byte;
        }
    }
}

/// Inverse of [`split`].
pub(crate) fn join(planes: &[u8], n: usize, width: usize, col: &mut [u8]) {
    if width == 1 {
        col.copy_from_slice(planes);
        return;
    }
    for (i, v) in col.chunks_exact_mut(width).enumerate() {
        for (b, byte) in v.iter_mut().enumerate() {
            *byte = planes[b * n + i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn inverse(width in 1usize..17, n in 0usize..50, seed: u8) {
            let col: Vec<u8> = (0..n * width).map(|i| (i as u8).wrapping_mul(seed | 1)).collect();
            let mut p = vec![0; col.len()];
            split(&col, n, width, &mut p);
            let mut back = vec![0xff; col.len()];
            join(&p, n, width, &mut back);
            prop_assert_eq!(back, col);
        }
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
        split(&col, 2, 4, &mut p);
        assert_eq!(p, [0x17, 0xd3, 0xf9, 0x0d, 0xa5, 0xa5, 0x44, 0x44]);
    }
}
