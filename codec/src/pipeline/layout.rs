//! The byte layout of the payload that blocks compress (FORMAT.md,
//! "Payload bytes"): the token walk of [`super::tokens`] written as bytes
//! in three interleaved streams, so that zstd and its dictionaries see the
//! entity sets and masks of the rows next to each other, and the bits zstd
//! cannot shrink cost bits rather than bytes:
//!
//! - the *front* stream, from the start of the payload: meta integers (set
//!   heads and gaps, spawn counts and ids), the bit runs of set bitmaps,
//!   element masks and the kind bits of spawned rows, byte planes;
//! - *side bits*, packed densely into bytes of the front stream: every
//!   section's flags (3 to 5 bits) and the kind bits of changed rows;
//! - the *value* stream: the element values, written in walk order and
//!   stored byte-reversed at the end of the payload, so a reader takes
//!   them from the last byte down while it reads the front from the first
//!   byte up, and no length is sent.
//!
//! Integers are minimal LEB128 varints (`u64`, at most 10 bytes).
//!
//! Bits are packed least significant first into bytes that sit in the
//! front stream where their first bit was written. Side bits fill one
//! byte after another: the first side bit, and the first after a side byte
//! is full, takes a fresh byte at the current end of the front stream. Run
//! bits (set, group and element bits, kind bits of spawned rows) do the
//! same, except that a run also ends (the next bit takes a fresh byte) when: the context class changes
//! from the previous run bit's; a meta integer, section flags or a
//! section's byte planes were written since the previous run bit; or the
//! bit is the first of a mask group (group bit 0, or element bit of an
//! element index that is a multiple of 8). Unused bits of a byte are zero.

pub(crate) use super::byte_source::ByteSource;
use super::tokens::{ctx, TokenSink};
use crate::wire::put_varint64;

/// Whether the run bit starts a new byte, given the previous run bit's
/// class and whether a meta integer came between.
#[inline]
pub(super) fn starts_run(c: u32, prev_class: Option<u32>, meta_since: bool) -> bool {
    let class = ctx::class(c);
    meta_since
        || prev_class != Some(class)
        || (class == ctx::MASK_GROUP && ctx::index(c) == 0)
        || (class == ctx::MASK_ELEMENT && ctx::index(c).is_multiple_of(8))
}

/// Whether a bit of context `c` is a side bit: the kind bits of changed
/// rows. (A spawned row's kind bits stay a run of their own, next to its
/// mask: keyframes, all spawned rows, compress better that way.)
#[inline]
pub(super) fn is_side_bit(c: u32) -> bool {
    ctx::class(c) == ctx::KIND && ctx::row(c) == ctx::CHANGED
}

/// Whether an integer of context `c` goes to the front stream (a meta
/// integer) rather than the value stream.
#[inline]
pub(super) fn is_meta(c: u32) -> bool {
    ctx::class(c) <= ctx::SPAWN_GAP
}

/// The flag bits sent for section flags `v` (valid flags, 0..=31), in
/// order: bits 0-2 always, bit 3 when bit 2 is set, bit 4 when bit 1 or
/// bit 2 is set and bit 3 is not.
#[inline]
fn flag_bits(v: u64) -> impl Iterator<Item = u32> {
    let bit3 = v & 4 != 0;
    let bit4 = v & 6 != 0 && v & 8 == 0;
    (0..3).chain(bit3.then_some(3)).chain(bit4.then_some(4))
}

/// The payload being written, with its bit writers.
#[derive(Debug, Default)]
pub(crate) struct ByteSink {
    /// The front stream.
    bytes: Vec<u8>,
    /// The value stream, in walk order (appended to `bytes` reversed).
    values: Vec<u8>,
    /// Position of the byte run bits go into, and the next bit in it (8: full).
    bit_byte: usize,
    bit_pos: u8,
    prev_class: Option<u32>,
    meta_since: bool,
    /// Position of the byte side bits go into, and the next bit in it.
    side_byte: usize,
    side_pos: u8,
}

impl ByteSink {
    /// Starts a new payload.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.values.clear();
        self.bit_pos = 8;
        self.side_pos = 8;
        self.prev_class = None;
        self.meta_since = false;
    }

    /// The payload: the front stream, then the value stream reversed. Ends
    /// the payload: write nothing more before [`ByteSink::clear`].
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn bytes(&mut self) -> &[u8] {
        self.bytes.extend(self.values.iter().rev());
        self.values.clear();
        &self.bytes
    }

    /// Ends the payload as [`ByteSink::bytes`] does and swaps it into
    /// `out` without copying; the sink keeps `out`'s old buffer for the
    /// next payload (write nothing more before [`ByteSink::clear`]).
    pub(crate) fn finish_into(&mut self, out: &mut Vec<u8>) {
        self.bytes.extend(self.values.iter().rev());
        self.values.clear();
        core::mem::swap(&mut self.bytes, out);
    }

    /// Appends the byte planes of a section; like a meta integer, they end
    /// the current bit run.
    pub(crate) fn raw(&mut self, planes: &[u8]) {
        self.meta_since = true;
        self.bytes.extend_from_slice(planes);
    }

    /// `n` (1..=64) run bits of context `c`, bit `k` of `bits` the `k`-th,
    /// where no bit after the first starts a run (the same class, nothing
    /// written between them, none the first bit of a mask group): the
    /// first placed as [`TokenSink::bit`] places it, the others filling
    /// its byte and then fresh bytes, up to eight at a time.
    #[inline]
    fn run_bits(&mut self, c: u32, n: usize, bits: u64) {
        self.bit(c, bits & 1 == 1);
        let mut k = 1;
        while k < n {
            if self.bit_pos == 8 {
                self.bit_byte = self.bytes.len();
                self.bytes.push(0);
                self.bit_pos = 0;
            }
            let take = (n - k).min(8 - usize::from(self.bit_pos));
            self.bytes[self.bit_byte] |= low_bits(bits >> k, take) << self.bit_pos;
            self.bit_pos += take as u8;
            k += take;
        }
    }

    /// A meta integer of context `c` (section flags included).
    #[inline(never)]
    fn meta_uint(&mut self, c: u32, v: u64) {
        self.meta_since = true;
        if ctx::class(c) == ctx::SECTION {
            for k in flag_bits(v) {
                self.side((v >> k) & 1 == 1);
            }
        } else {
            put_varint64(&mut self.bytes, v);
        }
    }

    /// One side bit.
    #[inline]
    fn side(&mut self, b: bool) {
        if self.side_pos == 8 {
            self.side_byte = self.bytes.len();
            self.bytes.push(0);
            self.side_pos = 0;
        }
        self.bytes[self.side_byte] |= u8::from(b) << self.side_pos;
        self.side_pos += 1;
    }
}

impl TokenSink for ByteSink {
    #[inline]
    fn bit(&mut self, c: u32, b: bool) {
        if is_side_bit(c) {
            self.side(b);
            return;
        }
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

    #[inline(always)]
    fn uint(&mut self, c: u32, v: u64) {
        if is_meta(c) {
            self.meta_uint(c, v);
        } else if v < 0x80 {
            self.values.push(v as u8);
        } else {
            put_varint64(&mut self.values, v);
        }
    }

    #[inline]
    fn groups(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u64) {
        if first == 0 && n <= 8 {
            // Group bit 0 starts a fresh byte, which holds them all.
            self.prev_class = Some(ctx::MASK_GROUP);
            self.meta_since = false;
            self.bit_byte = self.bytes.len();
            self.bytes.push(low_bits(bits, n));
            self.bit_pos = n as u8;
            return;
        }
        self.run_bits(ctx::make(ctx::MASK_GROUP, section, row, first), n, bits);
    }

    #[inline]
    fn set_bits(&mut self, section: usize, which: usize, n: usize, bits: u64) {
        self.run_bits(ctx::make(ctx::SET_BIT, section, 0, which), n, bits);
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

/// The length of the payload a [`ByteSink`] would write for the same
/// walk, counted without writing it.
#[derive(Debug, Default)]
pub(crate) struct LenSink {
    /// Bytes of the front stream and of the value stream.
    front: usize,
    values: usize,
    /// The next bit in the current run byte and side byte (8: full).
    bit_pos: u8,
    side_pos: u8,
    prev_class: Option<u32>,
    meta_since: bool,
}

impl LenSink {
    /// Starts a new payload.
    pub(crate) fn new() -> Self {
        Self {
            bit_pos: 8,
            side_pos: 8,
            ..Self::default()
        }
    }

    /// The payload's length so far.
    pub(crate) fn len(&self) -> usize {
        self.front + self.values
    }

    /// Counts `n` bytes of byte planes, as [`ByteSink::raw`] writes them.
    pub(crate) fn raw(&mut self, n: usize) {
        self.meta_since = true;
        self.front += n;
    }

    /// Counts `n` run bits of context `c` as [`ByteSink::run_bits`] writes
    /// them.
    #[inline]
    fn run_bits(&mut self, c: u32, n: usize) {
        self.bit(c, false);
        let mut k = 1;
        while k < n {
            if self.bit_pos == 8 {
                self.front += 1;
                self.bit_pos = 0;
            }
            let take = (n - k).min(8 - usize::from(self.bit_pos));
            self.bit_pos += take as u8;
            k += take;
        }
    }

    #[inline]
    fn side(&mut self) {
        if self.side_pos == 8 {
            self.front += 1;
            self.side_pos = 0;
        }
        self.side_pos += 1;
    }
}

/// The low `n` (1..=8) bits of `v`.
#[inline]
pub(super) fn low_bits(v: u64, n: usize) -> u8 {
    (v & ((1u64 << n) - 1)) as u8
}

/// The bytes of `v` as a minimal LEB128 varint: one per started seven
/// bits, at least one (`⌈bits / 7⌉` as `(9·bits + 64) / 64` for 1 to 64
/// bits).
#[inline]
pub(crate) fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    (bits * 9 + 64) / 64
}

impl TokenSink for LenSink {
    #[inline]
    fn bit(&mut self, c: u32, _b: bool) {
        if is_side_bit(c) {
            self.side();
            return;
        }
        let fresh = starts_run(c, self.prev_class, self.meta_since);
        self.prev_class = Some(ctx::class(c));
        self.meta_since = false;
        if fresh || self.bit_pos == 8 {
            self.front += 1;
            self.bit_pos = 0;
        }
        self.bit_pos += 1;
    }

    #[inline]
    fn uint(&mut self, c: u32, v: u64) {
        if ctx::class(c) == ctx::SECTION {
            self.meta_since = true;
            for _ in flag_bits(v) {
                self.side();
            }
        } else if is_meta(c) {
            self.meta_since = true;
            self.front += varint_len(v);
        } else {
            self.values += varint_len(v);
        }
    }

    #[inline]
    fn groups(&mut self, section: usize, row: u32, first: usize, n: usize, _bits: u64) {
        self.run_bits(ctx::make(ctx::MASK_GROUP, section, row, first), n);
    }

    #[inline]
    fn set_bits(&mut self, section: usize, which: usize, n: usize, _bits: u64) {
        self.run_bits(ctx::make(ctx::SET_BIT, section, 0, which), n);
    }

    #[inline]
    fn group(&mut self, _section: usize, _row: u32, _first: usize, n: usize, _bits: u8) {
        self.prev_class = Some(ctx::MASK_ELEMENT);
        self.meta_since = false;
        self.front += 1;
        self.bit_pos = n as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DecodeError;
    use crate::pipeline::tokens::TokenSource;

    #[test]
    fn streams_roundtrip() {
        let mut s = ByteSink::default();
        s.clear();
        let m = |class, i| ctx::make(class, 0, 0, i);
        s.uint(m(ctx::SECTION, 0), 7);
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
        s.uint(m(ctx::VALUE, 2), 5);
        s.bit(m(ctx::KIND, 3), true);
        s.uint(m(ctx::VALUE, 3), u64::MAX);
        let out = s.bytes().to_vec();
        // Side byte: flags 7 as the five bits 11100 (bit 3 sent as bit 2 is
        // set, bit 4 as bit 3 is not), then both kind bits: 0x67. Front: head 0, bitmap
        // 0b1001001001 (two bytes), 300, group byte, element byte. Then the
        // values reversed: u64::MAX's 10 bytes last first, then 5.
        let mut want = vec![0x67, 0, 0x49, 0x02, 0xac, 0x02, 0x01, 0x04, 0x01];
        want.extend([0xff; 9]);
        want.push(0x05);
        assert_eq!(out, want);
        let mut r = ByteSource::new(&out);
        assert_eq!(r.uint(m(ctx::SECTION, 0)).unwrap(), 7);
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
        assert_eq!(r.uint(m(ctx::VALUE, 2)).unwrap(), 5);
        assert!(r.bit(m(ctx::KIND, 3)).unwrap());
        assert_eq!(r.uint(m(ctx::VALUE, 3)).unwrap(), u64::MAX);
        r.finish().unwrap();
    }

    #[test]
    fn spawned_rows_keep_kind_bits_in_runs() {
        let mut s = ByteSink::default();
        s.clear();
        let spawned = |class, i| ctx::make(class, 0, ctx::SPAWNED, i);
        s.uint(ctx::make(ctx::SECTION, 0, 0, 0), 4);
        s.bit(spawned(ctx::MASK_ELEMENT, 0), true);
        s.bit(spawned(ctx::KIND, 0), true);
        s.uint(spawned(ctx::VALUE, 0), 3);
        s.bit(spawned(ctx::MASK_ELEMENT, 0), true);
        s.bit(spawned(ctx::KIND, 0), false);
        s.uint(spawned(ctx::VALUE, 0), 4);
        let out = s.bytes().to_vec();
        // Side byte (flags 4), then per row its element byte and its kind
        // byte; the values reversed.
        assert_eq!(out, [0x04, 0x01, 0x01, 0x01, 0x00, 0x04, 0x03]);
        let mut r = ByteSource::new(&out);
        assert_eq!(r.uint(ctx::make(ctx::SECTION, 0, 0, 0)).unwrap(), 4);
        for (kind, value) in [(true, 3), (false, 4)] {
            assert!(r.bit(spawned(ctx::MASK_ELEMENT, 0)).unwrap());
            assert_eq!(r.bit(spawned(ctx::KIND, 0)).unwrap(), kind);
            assert_eq!(r.uint(spawned(ctx::VALUE, 0)).unwrap(), value);
        }
        r.finish().unwrap();
    }

    #[test]
    fn section_flags_take_3_to_5_bits() {
        let c = ctx::make(ctx::SECTION, 0, 0, 0);
        // Every flags value the walk can send, and its bits.
        for (flags, bits) in [
            (0, 3),
            (1, 3),
            (2, 4),
            (3, 4),
            (4, 5),
            (6, 5),
            (7, 5),
            (12, 4),
            (15, 4),
            (18, 4),
            (20, 5),
            (23, 5),
        ] {
            assert_eq!(flag_bits(flags).count(), bits, "flags {flags}");
            let mut s = ByteSink::default();
            s.clear();
            s.uint(c, flags);
            s.uint(c, flags);
            let out = s.bytes().to_vec();
            assert_eq!(out.len(), (2 * bits).div_ceil(8));
            let mut r = ByteSource::new(&out);
            assert_eq!(r.uint(c).unwrap(), flags);
            assert_eq!(r.uint(c).unwrap(), flags);
            r.finish().unwrap();
        }
    }

    #[test]
    fn streams_do_not_overlap() {
        let m = |class, i| ctx::make(class, 0, 0, i);
        // The front took the only byte: no value is left.
        let mut r = ByteSource::new(&[0x01]);
        assert!(r.bit(m(ctx::MASK_GROUP, 0)).unwrap());
        assert_eq!(
            r.uint(m(ctx::VALUE, 0)),
            Err(DecodeError::Truncated {
                offset: 1,
                needed: 1
            })
        );
        // The value took the only byte: no mask is left.
        let mut r = ByteSource::new(&[0x05]);
        assert_eq!(r.uint(m(ctx::VALUE, 0)).unwrap(), 5);
        assert!(r.bit(m(ctx::MASK_GROUP, 0)).is_err());
        // Side bits past their byte's end must be zero.
        let mut r = ByteSource::new(&[0x12]);
        assert_eq!(r.uint(m(ctx::SECTION, 0)).unwrap(), 2);
        assert_eq!(r.finish(), Err(DecodeError::NonZeroPadding { offset: 0 }));
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
