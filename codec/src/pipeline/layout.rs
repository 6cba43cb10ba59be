//! The byte layout of the payload that blocks compress (FORMAT.md,
//! "Payload bytes"): the token walk of [`super::tokens`] written as bytes
//! in walk order, so zstd and its dictionaries see like with like: first
//! the entity sets of every section, then the rows, each row's mask bytes
//! before its values. Integers are minimal LEB128 varints (`u64`, at most
//! 10 bytes).
//!
//! Bits are packed least significant first into bytes that sit in the
//! stream where their first bit was written: the first bit of a run takes
//! a fresh byte at the current end of the stream, and later bits of the run
//! fill that byte before another is taken. A run ends (the next bit takes a
//! fresh byte) when: the context class changes from the previous bit's, a
//! meta integer or a section's byte planes were written since the previous
//! bit, or the bit is the first
//! of a mask group (group bit 0, or element bit of an element index that
//! is a multiple of 8). Unused bits of a byte are zero.

#![forbid(unsafe_code)]

use super::tokens::{ctx, TokenSink, TokenSource};
use crate::error::DecodeError;
use crate::wire::{put_varint64, Reader};

/// Whether the bit starts a new byte, given the previous bit's class and
/// whether a meta integer came between.
#[inline]
fn starts_run(c: u32, prev_class: Option<u32>, meta_since: bool) -> bool {
    let class = ctx::class(c);
    meta_since
        || prev_class != Some(class)
        || (class == ctx::MASK_GROUP && ctx::index(c) == 0)
        || (class == ctx::MASK_ELEMENT && ctx::index(c).is_multiple_of(8))
}

/// The payload being written, with its bit writer.
#[derive(Debug, Default)]
pub(crate) struct ByteSink {
    bytes: Vec<u8>,
    /// Position of the byte bits go into, and the next bit in it (8: full).
    bit_byte: usize,
    bit_pos: u8,
    prev_class: Option<u32>,
    meta_since: bool,
}

impl ByteSink {
    /// Starts a new payload.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.bit_pos = 8;
        self.prev_class = None;
        self.meta_since = false;
    }

    /// The payload written so far.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Appends the byte planes of a section; like a meta integer, they end
    /// the current bit run.
    pub(crate) fn raw(&mut self, planes: &[u8]) {
        self.meta_since = true;
        self.bytes.extend_from_slice(planes);
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
        if fresh || self.bit_pos == 8 {
            self.bit_byte = self.bytes.len();
            self.bytes.push(0);
            self.bit_pos = 0;
        }
        self.bytes[self.bit_byte] |= u8::from(b) << self.bit_pos;
        self.bit_pos += 1;
    }

    #[inline]
    fn uint(&mut self, c: u32, v: u64) {
        if is_meta(c) {
            self.meta_since = true;
        }
        put_varint64(&mut self.bytes, v);
    }

    #[inline]
    fn group(&mut self, _section: usize, _row: u32, _first: usize, n: usize, bits: u8) {
        // Element bits at a multiple of 8 always start a fresh byte.
        self.prev_class = Some(ctx::MASK_ELEMENT);
        self.meta_since = false;
        self.bit_byte = self.bytes.len();
        self.bytes.push(bits);
        self.bit_pos = n as u8;
    }
}

/// Reads the token walk back from payload bytes.
#[derive(Debug)]
pub(crate) struct ByteSource<'a> {
    r: Reader<'a>,
    /// The byte bits come from, its offset, and the next bit in it (8: none left).
    bit_byte: u8,
    bit_at: usize,
    bit_pos: u8,
    prev_class: Option<u32>,
    meta_since: bool,
}

impl<'a> ByteSource<'a> {
    /// Reads `payload`.
    pub(crate) fn new(payload: &'a [u8]) -> Self {
        Self {
            r: Reader::new(payload),
            bit_byte: 0,
            bit_at: 0,
            bit_pos: 8,
            prev_class: None,
            meta_since: false,
        }
    }

    /// Ends the current bit byte: its unused bits must be zero.
    fn close_bits(&mut self) -> Result<(), DecodeError> {
        if self.bit_pos < 8 && self.bit_byte >> self.bit_pos != 0 {
            return Err(DecodeError::NonZeroPadding {
                offset: self.bit_at,
            });
        }
        self.bit_pos = 8;
        Ok(())
    }

    /// Ends the bits read so far (their padding must be zero) and returns
    /// the bytes used.
    #[cfg(feature = "internals")]
    pub(crate) fn consumed(&mut self) -> Result<usize, DecodeError> {
        self.close_bits()?;
        Ok(self.r.pos())
    }

    /// Checks that every byte was used and every padding bit is zero.
    pub(crate) fn finish(&mut self) -> Result<(), DecodeError> {
        self.close_bits()?;
        match self.r.remaining() {
            0 => Ok(()),
            count => Err(DecodeError::PayloadTrailing { count }),
        }
    }
}

impl TokenSource for ByteSource<'_> {
    #[inline]
    fn bit(&mut self, c: u32) -> Result<bool, DecodeError> {
        let fresh = starts_run(c, self.prev_class, self.meta_since);
        self.prev_class = Some(ctx::class(c));
        self.meta_since = false;
        if fresh || self.bit_pos == 8 {
            self.close_bits()?;
            self.bit_at = self.r.pos();
            self.bit_byte = self.r.u8()?;
            self.bit_pos = 0;
        }
        let b = (self.bit_byte >> self.bit_pos) & 1 == 1;
        self.bit_pos += 1;
        Ok(b)
    }

    #[inline]
    fn uint(&mut self, c: u32) -> Result<u64, DecodeError> {
        if is_meta(c) {
            self.meta_since = true;
        }
        self.r.varint64()
    }

    #[inline]
    fn group(
        &mut self,
        _section: usize,
        _row: u32,
        _first: usize,
        n: usize,
    ) -> Result<u8, DecodeError> {
        // Element bits at a multiple of 8 always start a fresh byte; its
        // unused bits are checked when the next run starts.
        self.close_bits()?;
        self.prev_class = Some(ctx::MASK_ELEMENT);
        self.meta_since = false;
        self.bit_at = self.r.pos();
        self.bit_byte = self.r.u8()?;
        self.bit_pos = n as u8;
        Ok(if n >= 8 {
            self.bit_byte
        } else {
            self.bit_byte & ((1u8 << n) - 1)
        })
    }

    #[inline]
    fn raw(&mut self, _section: usize, n: usize) -> Result<&[u8], DecodeError> {
        self.meta_since = true;
        self.r.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_and_values_roundtrip() {
        let mut s = ByteSink::default();
        s.clear();
        let m = |class, i| ctx::make(class, 0, 0, i);
        s.uint(m(ctx::SET_HEAD, 0), 0);
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
        s.bit(m(ctx::KIND, 3), true);
        let out = s.bytes().to_vec();
        // Head 0, bitmap 0b1001001001 (two bytes), 300, group byte, element
        // byte, kind byte (both kind bits: the value between does not end
        // the run), the 10-byte value.
        assert_eq!(&out[..8], &[0, 0x49, 0x02, 0xac, 0x02, 0x01, 0x04, 0x03]);
        assert_eq!(out.len(), 18);
        let mut r = ByteSource::new(&out);
        assert_eq!(r.uint(m(ctx::SET_HEAD, 0)).unwrap(), 0);
        for i in 0..10 {
            assert_eq!(r.bit(m(ctx::SET_BIT, 0)).unwrap(), i % 3 == 0);
        }
        assert_eq!(r.uint(m(ctx::SPAWN_COUNT, 0)).unwrap(), 300);
        assert!(r.bit(m(ctx::MASK_GROUP, 0)).unwrap());
        assert!(!r.bit(m(ctx::MASK_GROUP, 1)).unwrap());
        for e in 0..8 {
            assert_eq!(r.bit(m(ctx::MASK_ELEMENT, e)).unwrap(), e == 2);
        }
        assert!(r.bit(m(ctx::KIND, 2)).unwrap());
        assert_eq!(r.uint(m(ctx::VALUE, 2)).unwrap(), u64::MAX);
        assert!(r.bit(m(ctx::KIND, 3)).unwrap());
        r.finish().unwrap();
    }

    #[test]
    fn padding_bits_must_be_zero() {
        let m = |class, i| ctx::make(class, 0, 0, i);
        let mut r = ByteSource::new(&[0x03, 0x00]);
        assert!(r.bit(m(ctx::MASK_GROUP, 0)).unwrap());
        assert_eq!(
            r.bit(m(ctx::MASK_ELEMENT, 0)),
            Err(DecodeError::NonZeroPadding { offset: 0 })
        );
        let mut r = ByteSource::new(&[0x01, 0x00]);
        assert!(r.bit(m(ctx::MASK_GROUP, 0)).unwrap());
        assert_eq!(r.finish(), Err(DecodeError::PayloadTrailing { count: 1 }));
    }
}
