//! The two float element types of quantised fields, so that the record
//! transforms can run one loop per slot specialised to its type: an
//! element's width, its bits read as a value or as a code, and writes.

/// One float element type. Every method takes exactly
/// [`WIDTH`](Float::WIDTH) bytes (the elements of a slot split with
/// `chunks_exact`).
pub(crate) trait Float {
    /// Bytes per element.
    const WIDTH: usize;
    /// The element's value, widened to `f64`.
    fn read(b: &[u8]) -> f64;
    /// Writes `v` rounded to the type (round-to-nearest-even for `f32`).
    fn write(b: &mut [u8], v: f64);
    /// The code held in the element's bytes: `i32` for `f32`, `i64` for
    /// `f64`.
    fn read_code(b: &[u8]) -> i64;
    /// Writes a code that fits the element (checked by the callers' limits).
    fn write_code(b: &mut [u8], q: i64);
    /// `v` rounded to the type, widened back to `f64`.
    fn round(v: f64) -> f64;
}

/// `f32` elements.
pub(crate) struct F32;
/// `f64` elements.
pub(crate) struct F64;

impl Float for F32 {
    const WIDTH: usize = 4;
    #[inline]
    fn read(b: &[u8]) -> f64 {
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        f64::from(f32::from_le_bytes(a))
    }
    #[inline]
    fn write(b: &mut [u8], v: f64) {
        b.copy_from_slice(&(v as f32).to_le_bytes());
    }
    #[inline]
    fn read_code(b: &[u8]) -> i64 {
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        i64::from(i32::from_le_bytes(a))
    }
    #[inline]
    fn write_code(b: &mut [u8], q: i64) {
        b.copy_from_slice(&(q as i32).to_le_bytes());
    }
    #[inline]
    fn round(v: f64) -> f64 {
        f64::from(v as f32)
    }
}

impl Float for F64 {
    const WIDTH: usize = 8;
    #[inline]
    fn read(b: &[u8]) -> f64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        f64::from_le_bytes(a)
    }
    #[inline]
    fn write(b: &mut [u8], v: f64) {
        b.copy_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn read_code(b: &[u8]) -> i64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        i64::from_le_bytes(a)
    }
    #[inline]
    fn write_code(b: &mut [u8], q: i64) {
        b.copy_from_slice(&q.to_le_bytes());
    }
    #[inline]
    fn round(v: f64) -> f64 {
        v
    }
}
