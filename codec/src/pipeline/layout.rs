//! The byte layout of the payload that blocks compress (FORMAT.md,
//! "Payload bytes"): the token walk of [`super::tokens`] written as bytes
//! in two streams, so zstd and its dictionaries see like with like:
//!
//! ```text
//! payload = meta  varint(len(rows))  rows
//! ```
//!
//! - `meta`: the entity-set and spawn-list integers of every section, as
//!   LEB128 varints (`u64`, minimal), and the bitmap bits of bitmap-mode sets.
//! - `rows`: per row, its mask bits and kind bits and its values, in walk
//!   order; values are minimal LEB128 varints.
//!
//! Bits are packed least significant first into bytes that sit in the
//! stream where their first bit was written: the first bit of a run takes
//! a fresh byte at the current end of the stream, and later bits of the run
//! fill that byte before another is taken. A run ends (the next bit takes a
//! fresh byte) when: the context class changes from the previous bit's, a
//! meta integer was written since the previous bit, or the bit is the first
//! of a mask group (group bit 0, or element bit of an element index that
//! is a multiple of 8). Unused bits of a byte are zero.

#![forbid(unsafe_code)]

use super::tokens::{ctx, TokenSink, TokenSource};
use crate::error::DecodeError;
use crate::wire::{put_varint, put_varint64, Reader};

/// Whether the bit starts a new byte, given the previous bit's class and
/// whether a meta integer came between.
#[inline]
fn starts_run(c: u32, prev_class: Option<u32>, meta_since: bool) -> bool {
    let class = ctx::class(c);
    meta_since
        || prev_class != Some(class)
        || (class == ctx::MASK_GROUP && ctx::index(c) == 0)
        || (class == ctx::MASK_ELEMENT && ctx::index(c) % 8 == 0)
}

/// One output stream with its bit writer.
#[derive(Debug, Default)]
struct Stream {
    bytes: Vec<u8>,
    /// Position of the byte bits go into, and the next bit in it.
    bit_byte: usize,
    bit_pos: u8,
}

impl Stream {
    fn clear(&mut self) {
        self.bytes.clear();
        self.bit_pos = 8;
    }

    fn bit(&mut self, fresh: bool, b: bool) {
        if fresh || self.bit_pos == 8 {
            self.bit_byte = self.bytes.len();
            self.bytes.push(0);
            self.bit_pos = 0;
        }
        self.bytes[self.bit_byte] |= u8::from(b) << self.bit_pos;
        self.bit_pos += 1;
    }
}

/// Writes the token walk as payload bytes.
#[derive(Debug, Default)]
pub(crate) struct ByteSink {
    meta: Stream,
    rows: Stream,
    prev_class: Option<u32>,
    meta_since: bool,
}

impl ByteSink {
    /// Starts a new payload.
    pub(crate) fn clear(&mut self) {
        self.meta.clear();
        self.rows.clear();
        self.prev_class = None;
        self.meta_since = false;
    }

    /// Appends the payload to `out`.
    pub(crate) fn finish(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.meta.bytes);
        put_varint(out, self.rows.bytes.len() as u32);
        out.extend_from_slice(&self.rows.bytes);
    }
}

fn is_meta(c: u32) -> bool {
    ctx::class(c) <= ctx::SPAWN_GAP
}

impl TokenSink for ByteSink {
    #[inline]
    fn bit(&mut self, c: u32, b: bool) {
        let fresh = starts_run(c, self.prev_class, self.meta_since);
        self.prev_class = Some(ctx::class(c));
        self.meta_since = false;
        let s = if is_meta(c) {
            &mut self.meta
        } else {
            &mut self.rows
        };
        s.bit(fresh, b);
    }

    #[inline]
    fn uint(&mut self, c: u32, v: u64) {
        if is_meta(c) {
            self.meta_since = true;
            put_varint64(&mut self.meta.bytes, v);
        } else {
            put_varint64(&mut self.rows.bytes, v);
        }
    }
}

/// A stream being read back, with its bit reader.
#[derive(Debug)]
struct In<'a> {
    r: Reader<'a>,
    /// The byte bits come from and the next bit in it (8: none left).
    bit_byte: u8,
    bit_pos: u8,
    /// Payload offset of the stream's start, for error offsets.
    base: usize,
}

impl<'a> In<'a> {
    fn new(data: &'a [u8], base: usize) -> Self {
        Self {
            r: Reader::new(data),
            bit_byte: 0,
            bit_pos: 8,
            base,
        }
    }

    fn shift(&self, e: DecodeError) -> DecodeError {
        match e {
            DecodeError::Truncated { offset, needed } => DecodeError::Truncated {
                offset: offset + self.base,
                needed,
            },
            DecodeError::BadVarint { offset } => DecodeError::BadVarint {
                offset: offset + self.base,
            },
            e => e,
        }
    }

    /// Ends the current bit byte: its unused bits must be zero.
    fn close_bits(&mut self) -> Result<(), DecodeError> {
        if self.bit_pos < 8 && self.bit_byte >> self.bit_pos != 0 {
            return Err(DecodeError::NonZeroPadding {
                offset: self.base + self.r.pos(),
            });
        }
        self.bit_pos = 8;
        Ok(())
    }

    fn bit(&mut self, fresh: bool) -> Result<bool, DecodeError> {
        if fresh || self.bit_pos == 8 {
            self.close_bits()?;
            self.bit_byte = self.r.u8().map_err(|e| self.shift(e))?;
            self.bit_pos = 0;
        }
        let b = (self.bit_byte >> self.bit_pos) & 1 == 1;
        self.bit_pos += 1;
        Ok(b)
    }

    fn uint(&mut self) -> Result<u64, DecodeError> {
        self.r.varint64().map_err(|e| self.shift(e))
    }
}

/// Reads the token walk back from payload bytes.
#[derive(Debug)]
pub(crate) struct ByteSource<'a> {
    payload: &'a [u8],
    meta: In<'a>,
    rows: Option<In<'a>>,
    prev_class: Option<u32>,
    meta_since: bool,
}

impl<'a> ByteSource<'a> {
    /// Reads `payload`.
    pub(crate) fn new(payload: &'a [u8]) -> Self {
        Self {
            payload,
            meta: In::new(payload, 0),
            rows: None,
            prev_class: None,
            meta_since: false,
        }
    }

    /// Checks that every byte was used and every padding bit is zero.
    pub(crate) fn finish(&mut self) -> Result<(), DecodeError> {
        let Some(rows) = &mut self.rows else {
            return Err(DecodeError::Truncated {
                offset: self.payload.len(),
                needed: 1,
            });
        };
        rows.close_bits()?;
        match rows.r.remaining() {
            0 => Ok(()),
            count => Err(DecodeError::PayloadTrailing { count }),
        }
    }

    fn stream(&mut self, c: u32) -> Result<&mut In<'a>, DecodeError> {
        if is_meta(c) {
            Ok(&mut self.meta)
        } else {
            self.rows.as_mut().ok_or(DecodeError::Truncated {
                offset: 0,
                needed: 1,
            })
        }
    }
}

impl TokenSource for ByteSource<'_> {
    #[inline]
    fn bit(&mut self, c: u32) -> Result<bool, DecodeError> {
        let fresh = starts_run(c, self.prev_class, self.meta_since);
        self.prev_class = Some(ctx::class(c));
        self.meta_since = false;
        self.stream(c)?.bit(fresh)
    }

    #[inline]
    fn uint(&mut self, c: u32) -> Result<u64, DecodeError> {
        if is_meta(c) {
            self.meta_since = true;
        }
        self.stream(c)?.uint()
    }

    fn end_meta(&mut self) -> Result<(), DecodeError> {
        self.meta.close_bits()?;
        let len = self.meta.r.varint().map_err(|e| self.meta.shift(e))? as usize;
        let start = self.meta.r.pos();
        let rest = &self.payload[start..];
        if rest.len() < len {
            return Err(DecodeError::Truncated {
                offset: self.payload.len(),
                needed: len - rest.len(),
            });
        }
        if rest.len() > len {
            return Err(DecodeError::PayloadTrailing {
                count: rest.len() - len,
            });
        }
        self.rows = Some(In::new(rest, start));
        self.prev_class = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_and_values_roundtrip() {
        let mut s = ByteSink::default();
        s.clear();
        let m = |class, i| ctx::make(class, 0, false, i);
        s.uint(m(ctx::SET_MODE, 0), 1);
        for i in 0..10 {
            s.bit(m(ctx::SET_BIT, 0), i % 3 == 0);
        }
        s.uint(m(ctx::SPAWN_COUNT, 0), 300);
        s.bit(m(ctx::MASK_GROUP, 0), true);
        s.bit(m(ctx::MASK_GROUP, 1), false);
        for e in 0..8 {
            s.bit(m(ctx::MASK_ELEMENT, e), e == 2);
        }
        s.bit(m(ctx::KIND, 2), true);
        s.uint(m(ctx::VALUE, 2), u64::MAX);
        let mut out = Vec::new();
        s.finish(&mut out);
        // meta: mode 1, bitmap 0b1001001001 (two bytes), 300; rows length 13;
        // rows: group byte, element byte, kind byte, 10-byte varint.
        assert_eq!(&out[..6], &[1, 0x49, 0x02, 0xac, 0x02, 13]);
        assert_eq!(&out[6..9], &[0x01, 0x04, 0x01]);
        let mut r = ByteSource::new(&out);
        assert_eq!(r.uint(m(ctx::SET_MODE, 0)).unwrap(), 1);
        for i in 0..10 {
            assert_eq!(r.bit(m(ctx::SET_BIT, 0)).unwrap(), i % 3 == 0);
        }
        assert_eq!(r.uint(m(ctx::SPAWN_COUNT, 0)).unwrap(), 300);
        r.end_meta().unwrap();
        assert!(r.bit(m(ctx::MASK_GROUP, 0)).unwrap());
        assert!(!r.bit(m(ctx::MASK_GROUP, 1)).unwrap());
        for e in 0..8 {
            assert_eq!(r.bit(m(ctx::MASK_ELEMENT, e)).unwrap(), e == 2);
        }
        assert!(r.bit(m(ctx::KIND, 2)).unwrap());
        assert_eq!(r.uint(m(ctx::VALUE, 2)).unwrap(), u64::MAX);
        r.finish().unwrap();
    }

    #[test]
    fn padding_bits_must_be_zero() {
        let m = |class, i| ctx::make(class, 0, false, i);
        let mut r = ByteSource::new(&[0, 2, 0x03, 0x00]);
        r.end_meta().unwrap_err();
        let mut r = ByteSource::new(&[2, 0x03, 0x00]);
        r.end_meta().unwrap();
        assert!(r.bit(m(ctx::MASK_GROUP, 0)).unwrap());
        assert_eq!(
            r.bit(m(ctx::MASK_ELEMENT, 0)),
            Err(DecodeError::NonZeroPadding { offset: 2 })
        );
    }
}
