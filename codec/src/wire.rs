//! Wire primitives: a bounds-checked reader and LEB128 varints.
//!
//! Varints are unsigned LEB128, at most 5 bytes for a `u32`, and must be
//! minimal (no trailing `0x80 0x00` padding), so each value has exactly one
//! encoding and golden vectors stay stable.

use crate::error::DecodeError;

/// Largest encoded size of a `u32` varint.
pub(crate) const MAX_VARINT_LEN: usize = 5;

/// Appends `v` as a minimal LEB128 varint.
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` as a minimal LEB128 varint of at most 10 bytes.
#[inline]
pub(crate) fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a minimal LEB128 varint of at most 10 bytes (as
/// [`put_varint64`] writes) from the bytes `next` gives one at a time;
/// `at` is where it starts, for the error.
#[inline]
pub(crate) fn read_varint64(
    at: usize,
    mut next: impl FnMut() -> Result<u8, DecodeError>,
) -> Result<u64, DecodeError> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = next()?;
        let bits = u64::from(b & 0x7f);
        if i == 9 && bits > 1 {
            return Err(DecodeError::BadVarint { offset: at });
        }
        v |= bits << (7 * i);
        if b & 0x80 == 0 {
            if i > 0 && bits == 0 {
                return Err(DecodeError::BadVarint { offset: at });
            }
            return Ok(v);
        }
    }
    Err(DecodeError::BadVarint { offset: at })
}

/// Number of bytes `put_varint` writes for `v`.
#[cfg(test)]
fn varint_len(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

/// A cursor over untrusted bytes. Every read is bounds-checked and returns a
/// [`DecodeError`] naming the offset from the start of the data.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// Bytes read so far: the offset of the next read.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left to read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Reads one byte.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = *self.data.get(self.pos).ok_or(DecodeError::Truncated {
            offset: self.pos,
            needed: 1,
        })?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads the next `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(DecodeError::Truncated {
                offset: self.pos,
                needed: n - self.remaining(),
            }),
        }
    }

    /// Reads a little-endian `u16`.
    #[inline]
    pub fn u16_le(&mut self) -> Result<u16, DecodeError> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// Reads a little-endian `u32`.
    #[inline]
    pub fn u32_le(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a little-endian `u64`.
    #[inline]
    pub fn u64_le(&mut self) -> Result<u64, DecodeError> {
        let lo = self.u32_le()?;
        let hi = self.u32_le()?;
        Ok(u64::from(lo) | u64::from(hi) << 32)
    }

    /// Reads a minimal LEB128 `u32`.
    #[inline]
    pub fn varint(&mut self) -> Result<u32, DecodeError> {
        let start = self.pos;
        let mut v: u32 = 0;
        for i in 0..MAX_VARINT_LEN {
            let b = self.u8()?;
            let bits = u32::from(b & 0x7f);
            if i == 4 && bits > 0x0f {
                return Err(DecodeError::BadVarint { offset: start });
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                // Minimal: a multi-byte varint may not end in a zero group.
                if i > 0 && bits == 0 {
                    return Err(DecodeError::BadVarint { offset: start });
                }
                return Ok(v);
            }
        }
        Err(DecodeError::BadVarint { offset: start })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varint_roundtrip(v: u32) {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            prop_assert_eq!(out.len(), varint_len(v));
            let mut r = Reader::new(&out);
            prop_assert_eq!(r.varint().unwrap(), v);
            prop_assert_eq!(r.remaining(), 0);
        }
    }

    proptest! {
        #[test]
        fn varint64_roundtrip(v: u64) {
            let mut out = Vec::new();
            put_varint64(&mut out, v);
            let mut r = Reader::new(&out);
            prop_assert_eq!(read_varint64(0, || r.u8()).unwrap(), v);
            prop_assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn varint64_rejects_bad_forms() {
        for bad in [
            &[0x80, 0x00][..],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02][..],
            &[
                0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
            ][..],
        ] {
            let mut r = Reader::new(bad);
            assert_eq!(
                read_varint64(0, || r.u8()),
                Err(DecodeError::BadVarint { offset: 0 })
            );
        }
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let mut r = Reader::new(&max);
        assert_eq!(read_varint64(0, || r.u8()), Ok(u64::MAX));
    }

    #[test]
    fn varint_rejects_bad_forms() {
        for bad in [
            &[0x80, 0x00][..],                   // not minimal
            &[0xff, 0xff, 0xff, 0xff, 0x1f][..], // > u32::MAX
            &[0x80, 0x80, 0x80, 0x80, 0x80, 0x01][..],
        ] {
            assert_eq!(
                Reader::new(bad).varint(),
                Err(DecodeError::BadVarint { offset: 0 })
            );
        }
        assert_eq!(
            Reader::new(&[0x80]).varint(),
            Err(DecodeError::Truncated {
                offset: 1,
                needed: 1
            })
        );
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]).varint(),
            Ok(u32::MAX)
        );
    }
}
