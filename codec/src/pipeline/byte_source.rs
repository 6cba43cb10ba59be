//! Reading the byte layout ([`super::layout`]) back: the front stream
//! from the first byte up, side bits and run bits from their bytes, the
//! value stream from the last byte down.

use super::layout::{is_meta, is_side_bit, low_bits, starts_run};
use super::tokens::{ctx, TokenSource};
use crate::error::DecodeError;
use crate::wire::read_varint64;

/// A bit byte being read: its offset, value and next bit (8: none left).
#[derive(Debug, Clone, Copy)]
struct BitByte {
    at: usize,
    byte: u8,
    pos: u8,
}

impl BitByte {
    const EMPTY: Self = Self {
        at: 0,
        byte: 0,
        pos: 8,
    };

    /// Ends the byte: its unused bits must be zero.
    fn close(&mut self) -> Result<(), DecodeError> {
        if self.pos < 8 && self.byte >> self.pos != 0 {
            return Err(DecodeError::NonZeroPadding { offset: self.at });
        }
        self.pos = 8;
        Ok(())
    }

    /// The next bit (the byte must have one left).
    #[inline]
    fn take(&mut self) -> bool {
        let b = (self.byte >> self.pos) & 1 == 1;
        self.pos += 1;
        b
    }
}

/// Reads the token walk back from payload bytes.
#[derive(Debug)]
pub(crate) struct ByteSource<'a> {
    data: &'a [u8],
    /// Next byte of the front stream.
    front: usize,
    /// End of the unread bytes: the value stream is read from here down.
    back: usize,
    run: BitByte,
    side: BitByte,
    prev_class: Option<u32>,
    meta_since: bool,
}

impl<'a> ByteSource<'a> {
    /// Reads `payload`.
    pub(crate) fn new(payload: &'a [u8]) -> Self {
        Self {
            data: payload,
            front: 0,
            back: payload.len(),
            run: BitByte::EMPTY,
            side: BitByte::EMPTY,
            prev_class: None,
            meta_since: false,
        }
    }

    /// The next byte of the front stream, as a bit byte.
    #[inline]
    fn front_bits(&mut self) -> Result<BitByte, DecodeError> {
        let at = self.front;
        Ok(BitByte {
            at,
            byte: self.front_u8()?,
            pos: 0,
        })
    }

    /// The next byte of the front stream.
    #[inline]
    fn front_u8(&mut self) -> Result<u8, DecodeError> {
        if self.front >= self.back {
            return Err(DecodeError::Truncated {
                offset: self.front,
                needed: 1,
            });
        }
        let b = self.data[self.front];
        self.front += 1;
        Ok(b)
    }

    /// The next byte of the value stream (read from the end down).
    #[inline]
    fn back_u8(&mut self) -> Result<u8, DecodeError> {
        if self.back <= self.front {
            return Err(DecodeError::Truncated {
                offset: self.back,
                needed: 1,
            });
        }
        self.back -= 1;
        Ok(self.data[self.back])
    }

    /// `n` (1..=64) run bits of context `c` as [`super::layout::ByteSink`]
    /// writes them in one call: bit `k` of the result the `k`-th. The first
    /// is read as [`TokenSource::bit`] reads it, the others from the rest
    /// of its byte and then from fresh bytes, up to eight at a time.
    #[inline]
    fn run_bits(&mut self, c: u32, n: usize) -> Result<u64, DecodeError> {
        let mut v = u64::from(self.bit(c)?);
        let mut k = 1;
        while k < n {
            if self.run.pos == 8 {
                self.run = self.front_bits()?;
            }
            let take = (n - k).min(8 - usize::from(self.run.pos));
            v |= u64::from(low_bits(u64::from(self.run.byte >> self.run.pos), take)) << k;
            self.run.pos += take as u8;
            k += take;
        }
        Ok(v)
    }

    /// A meta integer of context `c` (section flags included).
    #[inline(never)]
    fn meta_uint(&mut self, c: u32) -> Result<u64, DecodeError> {
        self.meta_since = true;
        if ctx::class(c) != ctx::SECTION {
            return read_varint64(self.front, || self.front_u8());
        }
        let mut v = 0u64;
        for k in 0..3 {
            v |= u64::from(self.side_bit()?) << k;
        }
        if v & 4 != 0 {
            v |= u64::from(self.side_bit()?) << 3;
        }
        if v & 6 != 0 && v & 8 == 0 {
            v |= u64::from(self.side_bit()?) << 4;
        }
        Ok(v)
    }

    /// A value of the value stream that [`TokenSource::uint`] does not take
    /// directly.
    #[inline(never)]
    fn long_value(&mut self) -> Result<u64, DecodeError> {
        read_varint64(self.back, || self.back_u8())
    }

    /// One side bit.
    #[inline]
    fn side_bit(&mut self) -> Result<bool, DecodeError> {
        if self.side.pos == 8 {
            self.side = self.front_bits()?;
        }
        Ok(self.side.take())
    }

    /// Ends the bits read so far (their padding must be zero) and returns
    /// the front bytes used.
    #[cfg(feature = "internals")]
    pub(crate) fn consumed(&mut self) -> Result<usize, DecodeError> {
        self.run.close()?;
        self.side.close()?;
        Ok(self.front)
    }

    /// Checks that every byte was used and every padding bit is zero.
    pub(crate) fn finish(&mut self) -> Result<(), DecodeError> {
        self.run.close()?;
        self.side.close()?;
        match self.back - self.front {
            0 => Ok(()),
            count => Err(DecodeError::PayloadTrailing { count }),
        }
    }
}

impl TokenSource for ByteSource<'_> {
    #[inline]
    fn bit(&mut self, c: u32) -> Result<bool, DecodeError> {
        if is_side_bit(c) {
            return self.side_bit();
        }
        let fresh = starts_run(c, self.prev_class, self.meta_since);
        self.prev_class = Some(ctx::class(c));
        self.meta_since = false;
        if fresh || self.run.pos == 8 {
            self.run.close()?;
            self.run = self.front_bits()?;
        }
        Ok(self.run.take())
    }

    #[inline(always)]
    fn uint(&mut self, c: u32) -> Result<u64, DecodeError> {
        if is_meta(c) {
            return self.meta_uint(c);
        }
        // Most values take one or two bytes: taken here when two bytes are
        // left (the last byte of a longer varint is not zero).
        if let Some(at) = self.back.checked_sub(2).filter(|&at| at >= self.front) {
            let (low, high) = (self.data[at + 1], self.data[at]);
            if low < 0x80 {
                self.back = at + 1;
                return Ok(u64::from(low));
            }
            if high < 0x80 && high != 0 {
                self.back = at;
                return Ok(u64::from(low & 0x7f) | u64::from(high) << 7);
            }
        }
        self.long_value()
    }

    #[inline]
    fn groups(
        &mut self,
        section: usize,
        row: u32,
        first: usize,
        n: usize,
    ) -> Result<u64, DecodeError> {
        if first == 0 && n <= 8 {
            // Group bit 0 starts a fresh byte, which holds them all.
            self.run.close()?;
            self.prev_class = Some(ctx::MASK_GROUP);
            self.meta_since = false;
            self.run = self.front_bits()?;
            self.run.pos = n as u8;
            return Ok(u64::from(low_bits(u64::from(self.run.byte), n)));
        }
        self.run_bits(ctx::make(ctx::MASK_GROUP, section, row, first), n)
    }

    #[inline]
    fn set_bits(&mut self, section: usize, which: usize, n: usize) -> Result<u64, DecodeError> {
        self.run_bits(ctx::make(ctx::SET_BIT, section, 0, which), n)
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
        self.run.close()?;
        self.prev_class = Some(ctx::MASK_ELEMENT);
        self.meta_since = false;
        self.run = self.front_bits()?;
        self.run.pos = n as u8;
        Ok(if n >= 8 {
            self.run.byte
        } else {
            self.run.byte & ((1u8 << n) - 1)
        })
    }

    #[inline]
    fn raw(&mut self, _section: usize, n: usize) -> Result<&[u8], DecodeError> {
        self.meta_since = true;
        let start = self.front;
        match start.checked_add(n).filter(|&e| e <= self.back) {
            Some(end) => {
                self.front = end;
                Ok(&self.data[start..end])
            }
            None => Err(DecodeError::Truncated {
                offset: start,
                needed: n - (self.back - start),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::layout::{ByteSink, LenSink};
    use crate::pipeline::tokens::TokenSink;

    /// One decision of a walk.
    #[derive(Debug, Clone, Copy)]
    enum Op {
        Uint(u32, u64),
        Bit(u32, bool),
        Groups(usize, usize, u64),
        SetBits(usize, usize, u64),
        Group(usize, usize, u8),
    }

    /// A sink that only has `bit` and `uint`: every bulk call takes the
    /// trait's bit-by-bit default.
    struct Bitwise<'a>(&'a mut ByteSink);

    impl TokenSink for Bitwise<'_> {
        fn bit(&mut self, c: u32, b: bool) {
            self.0.bit(c, b);
        }
        fn uint(&mut self, c: u32, v: u64) {
            self.0.uint(c, v);
        }
    }

    /// A source that only has `bit` and `uint`, as [`Bitwise`].
    struct BitwiseSource<'a, 'b>(&'a mut ByteSource<'b>);

    impl TokenSource for BitwiseSource<'_, '_> {
        fn bit(&mut self, c: u32) -> Result<bool, DecodeError> {
            self.0.bit(c)
        }
        fn uint(&mut self, c: u32) -> Result<u64, DecodeError> {
            self.0.uint(c)
        }
    }

    fn write(sink: &mut impl TokenSink, ops: &[Op]) {
        for &op in ops {
            match op {
                Op::Uint(c, v) => sink.uint(c, v),
                Op::Bit(c, b) => sink.bit(c, b),
                Op::Groups(first, n, bits) => sink.groups(1, 0, first, n, bits),
                Op::SetBits(which, n, bits) => sink.set_bits(1, which, n, bits),
                Op::Group(first, n, bits) => sink.group(1, 0, first, n, bits),
            }
        }
    }

    /// What reading `ops` back gives: every value, then the first error.
    fn read(src: &mut impl TokenSource, ops: &[Op]) -> (Vec<u64>, Option<DecodeError>) {
        let mut got = Vec::new();
        for &op in ops {
            let r = match op {
                Op::Uint(c, _) => src.uint(c),
                Op::Bit(c, _) => src.bit(c).map(u64::from),
                Op::Groups(first, n, _) => src.groups(1, 0, first, n),
                Op::SetBits(which, n, _) => src.set_bits(1, which, n),
                Op::Group(first, n, _) => src.group(1, 0, first, n).map(u64::from),
            };
            match r {
                Ok(v) => got.push(v),
                Err(e) => return (got, Some(e)),
            }
        }
        (got, None)
    }

    #[test]
    fn values_match_the_general_varint_reader() {
        let mut x = 0x9e37_79b9_u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let c = ctx::make(ctx::VALUE, 0, 0, 0);
        for _ in 0..20_000 {
            // Bytes that end varints (zero among them) and that continue them.
            let data: Vec<u8> = (0..next() % 14)
                .map(|_| match next() % 4 {
                    0 => 0,
                    1 => 0x80 | next() as u8,
                    _ => next() as u8,
                })
                .collect();
            let mut src = ByteSource::new(&data);
            let mut back = data.len();
            loop {
                let want = read_varint64(back, || match back.checked_sub(1) {
                    Some(b) => {
                        back = b;
                        Ok(data[b])
                    }
                    None => Err(DecodeError::Truncated {
                        offset: 0,
                        needed: 1,
                    }),
                });
                let got = src.uint(c);
                assert_eq!(got, want, "{data:x?}");
                if got.is_err() {
                    break;
                }
                assert_eq!(src.back, back, "{data:x?}");
            }
        }
    }

    #[test]
    fn bulk_bits_match_bit_by_bit() {
        let mut x = 0x2545_f491_u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let m = |class, row, i| ctx::make(class, 1, row, i);
        let flags = [0u64, 1, 2, 3, 4, 6, 7, 12, 15, 18, 20, 23];
        for _ in 0..3000 {
            let mut ops = Vec::new();
            for _ in 0..1 + next() % 12 {
                let n = 1 + next() as usize % 64;
                let bits = u64::from(next()) << 32 | u64::from(next());
                let bits = if n == 64 { bits } else { bits & ((1 << n) - 1) };
                ops.push(match next() % 8 {
                    0 => Op::Uint(m(ctx::SECTION, 0, 0), flags[next() as usize % flags.len()]),
                    1 => Op::Uint(m(ctx::SET_HEAD, 0, 0), u64::from(next() % 300)),
                    2 => Op::Uint(m(ctx::VALUE, 0, 3), bits >> (next() % 64)),
                    3 => Op::Bit(m(ctx::KIND, next() % 2, 5), next() % 2 == 0),
                    4 => Op::Groups(next() as usize % 3 * 64, n, bits),
                    5 => Op::SetBits(next() as usize % 2, n, bits),
                    6 => {
                        let n = 1 + next() as usize % 8;
                        Op::Group(8 * (next() as usize % 9), n, (bits & ((1 << n) - 1)) as u8)
                    }
                    _ => Op::Bit(
                        m(ctx::MASK_ELEMENT, 0, next() as usize % 20),
                        next() % 2 == 0,
                    ),
                });
            }
            let mut bulk = ByteSink::default();
            bulk.clear();
            write(&mut bulk, &ops);
            let mut bitwise = ByteSink::default();
            bitwise.clear();
            write(&mut Bitwise(&mut bitwise), &ops);
            let mut len = LenSink::new();
            write(&mut len, &ops);
            let out = bulk.bytes().to_vec();
            assert_eq!(out, bitwise.bytes(), "{ops:?}");
            assert_eq!(len.len(), out.len(), "{ops:?}");
            // Read back whole, cut short and with a byte flipped: the same
            // values and the same first error either way.
            let mut inputs = vec![out.clone()];
            if !out.is_empty() {
                inputs.push(out[..next() as usize % out.len()].to_vec());
                let mut flipped = out.clone();
                let at = next() as usize % out.len();
                flipped[at] ^= 1 << (next() % 8);
                inputs.push(flipped);
            }
            for input in &inputs {
                let mut a = ByteSource::new(input);
                let mut b = ByteSource::new(input);
                let got = read(&mut a, &ops);
                let done = got.1.is_none();
                assert_eq!(got, read(&mut BitwiseSource(&mut b), &ops), "{ops:?}");
                if done {
                    assert_eq!(a.finish(), b.finish());
                }
            }
            let mut src = ByteSource::new(&out);
            let (got, err) = read(&mut src, &ops);
            assert_eq!(err, None);
            assert_eq!(src.finish(), Ok(()));
            for (op, v) in ops.iter().zip(got) {
                match *op {
                    Op::Uint(_, w) | Op::Groups(_, _, w) | Op::SetBits(_, _, w) => assert_eq!(v, w),
                    Op::Bit(_, b) => assert_eq!(v, u64::from(b)),
                    Op::Group(_, _, b) => assert_eq!(v, u64::from(b)),
                }
            }
        }
    }
}
