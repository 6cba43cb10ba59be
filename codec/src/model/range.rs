//! The range coder: 32-bit range, carries added to the bytes already
//! written (the bytes of LZMA's construction), binary decisions with 12-bit static
//! probabilities, symbols over static cumulative frequencies, raw bits, and a
//! shortest-tail flush whose trailing zero bytes are dropped (the decoder
//! reads zeros past the end).

use super::classes::{ClassCdf, FREQ_BITS};
use super::ModelError;

/// Precision of a probability: `p` is the chance of a 0 bit in units of
/// `1 / (1 << PROB_BITS)`, in `1..(1 << PROB_BITS)`.
pub const PROB_BITS: u32 = 12;
/// `1 << PROB_BITS`.
pub const PROB_ONE: u16 = 1 << PROB_BITS;
/// The range is renormalised (shifted a byte) when it falls below this.
const TOP: u32 = 1 << 24;
/// Most raw bits coded in one step (the range stays at least `2^8`).
pub(crate) const RAW_CHUNK: u32 = 16;

/// Encodes decisions, symbols and raw bits into bytes.
#[derive(Debug, Clone)]
pub(crate) struct RangeEncoder {
    /// Low end of the interval; bit 32 is a carry into the bytes written.
    low: u64,
    range: u32,
    /// The bytes shifted out of `low`, as one big-endian number that a
    /// carry adds one to. The number's byte above them is always 0 (the
    /// interval starts below `1 << 32`); it is not written.
    out: Output,
}

/// The encoder's bytes: the first `pos` bytes of `buf`, whose length is
/// its capacity (grown by doubling), so that a byte is stored without
/// updating the vector's length.
#[derive(Debug, Clone)]
struct Output {
    buf: Vec<u8>,
    pos: usize,
}

impl Output {
    /// Smallest buffer length.
    const MIN_LEN: usize = 64;

    /// Output into `buf` (its bytes dropped, its capacity kept).
    fn new(mut buf: Vec<u8>) -> Self {
        buf.clear();
        let len = buf.capacity().max(Self::MIN_LEN);
        buf.resize(len, 0);
        Self { buf, pos: 0 }
    }

    /// Appends `byte`.
    #[inline(always)]
    fn push(&mut self, byte: u8) {
        match self.buf.get_mut(self.pos) {
            Some(b) => *b = byte,
            None => self.grow_push(byte),
        }
        self.pos += 1;
    }

    /// Doubles the buffer, then stores `byte` at `pos`.
    #[cold]
    #[inline(never)]
    fn grow_push(&mut self, byte: u8) {
        let len = self.buf.len().max(Self::MIN_LEN) * 2;
        self.buf.resize(len, 0);
        self.buf[self.pos] = byte;
    }

    /// Adds one to the bytes written (see [`carry`]).
    #[cold]
    #[inline(never)]
    fn carry(&mut self) {
        carry(&mut self.buf[..self.pos]);
    }

    /// The bytes written, without trailing zero bytes.
    fn into_trimmed(mut self) -> Vec<u8> {
        let mut end = self.pos;
        while end > 0 && self.buf[end - 1] == 0 {
            end -= 1;
        }
        self.buf.truncate(end);
        self.buf
    }
}

impl RangeEncoder {
    /// An encoder that appends to `out` (cleared first).
    pub(crate) fn new(out: Vec<u8>) -> Self {
        Self {
            low: 0,
            range: u32::MAX,
            out: Output::new(out),
        }
    }

    /// Codes `bit` where `p0` (in `1..PROB_ONE`) is the chance of a 0.
    #[inline(always)]
    pub(crate) fn bit(&mut self, p0: u16, bit: bool) {
        let bound = (self.range >> PROB_BITS) * u32::from(p0);
        // Without a branch on `bit` (which the processor cannot predict):
        // `m` is all ones for a 1.
        let m = u32::from(bit).wrapping_neg();
        self.low += u64::from(bound & m);
        self.range = (bound & !m) | ((self.range - bound) & m);
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    /// Codes the low `n` bits of `bits` (`n <= 64`), bit `k` as
    /// [`RangeEncoder::bit`] with the probability `p0(k, bit k - 1)` (bit
    /// −1 being `prev`). The interval stays in registers between the bits.
    #[inline]
    pub(crate) fn bit_seq(
        &mut self,
        n: u32,
        bits: u64,
        prev: bool,
        mut p0: impl FnMut(u32, bool) -> u16,
    ) {
        let (mut low, mut range) = (self.low, self.range);
        let mut prev = prev;
        for k in 0..n {
            let bit = (bits >> k) & 1 == 1;
            self.run_step(&mut low, &mut range, p0(k, prev), bit);
            prev = bit;
        }
        (self.low, self.range) = (low, range);
    }

    /// [`RangeEncoder::bit_seq`] of `pairs.len() / 2` bits (at most 64)
    /// whose probabilities lie in pairs: bit `k`'s chance of a 0 is
    /// `pairs[2k]` after a 0 bit (bit −1 being `prev`), `pairs[2k + 1]`
    /// after a 1.
    #[inline]
    pub(crate) fn bit_pairs(&mut self, bits: u64, prev: bool, pairs: &[u16]) {
        let (mut low, mut range) = (self.low, self.range);
        let mut prev = prev;
        for (k, p) in pairs.chunks_exact(2).enumerate() {
            let bit = (bits >> k) & 1 == 1;
            self.run_step(&mut low, &mut range, if prev { p[1] } else { p[0] }, bit);
            prev = bit;
        }
        (self.low, self.range) = (low, range);
    }

    /// One decision of a run, `bit` with the chance of a 0 `p0`, on the
    /// interval `low`/`range` held by the caller.
    #[inline(always)]
    fn run_step(&mut self, low: &mut u64, range: &mut u32, p0: u16, bit: bool) {
        let bound = (*range >> PROB_BITS) * u32::from(p0);
        let m = u32::from(bit).wrapping_neg();
        *low += u64::from(bound & m);
        *range = (bound & !m) | ((*range - bound) & m);
        if *range < TOP {
            (self.low, self.range) = (*low, *range);
            self.normalize();
            (*low, *range) = (self.low, self.range);
        }
    }

    /// Shifts bytes out until the range is at least [`TOP`].
    #[inline(never)]
    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    /// Codes the low `n` bits of `v` (`n <= 64`), most significant first,
    /// each with probability one half, in chunks of at most
    /// [`RAW_CHUNK`] bits: the range is divided by `2^k` and the chunk's
    /// value picks the part (the raw step of the reference of
    /// [`RangeEncoder::value`]).
    #[cfg(test)]
    pub(crate) fn raw(&mut self, v: u64, n: u32) {
        let mut left = n;
        while left > 0 {
            let k = left.min(RAW_CHUNK);
            left -= k;
            let digit = ((v >> left) & ((1u64 << k) - 1)) as u32;
            self.range >>= k;
            self.low += u64::from(digit) * u64::from(self.range);
            while self.range < TOP {
                self.range <<= 8;
                self.shift_low();
            }
        }
    }

    /// Codes the symbol whose share of a frequency total `2^bits` is
    /// `start..start + freq` (`bits <= 16`, `freq >= 1`): the range is
    /// divided by `2^bits` and the share picks the part (the head step of
    /// the reference of [`RangeEncoder::value`]).
    #[cfg(test)]
    pub(crate) fn symbol(&mut self, bits: u32, start: u32, freq: u32) {
        let r = self.range >> bits;
        self.low += u64::from(r * start);
        self.range = r * freq;
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    /// Codes value `v` (zigzag when `signed`) in the value context `cdf`:
    /// the decisions of [`put_uint`](super::value::put_uint) (or
    /// [`put_sint`](super::value::put_sint)) with the head as one symbol,
    /// that is the head symbol, for leaf 63 the top decision, the raw bits
    /// in [`RAW_CHUNK`]-bit chunks (one or two without a loop), then the
    /// sign. The interval stays in registers for the
    /// whole value.
    #[inline(always)]
    pub(crate) fn value(&mut self, cdf: &ClassCdf, v: u64, signed: bool) {
        let magnitude = if signed { (v >> 1) + (v & 1) } else { v };
        let class = 64 - magnitude.leading_zeros();
        let leaf = class.min(63);
        // `symbol(leaf, second)`: from class 2 the top two bits (`2 +
        // second`) plus `2 * leaf - 4`.
        let head = if class < 2 {
            class as usize
        } else {
            (magnitude >> (class - 2)) as usize + 2 * leaf as usize - 4
        };
        let (start, freq) = cdf.range(head);
        let out = &mut self.out;
        let (mut low, mut range) = (self.low, self.range);
        let r = range >> FREQ_BITS;
        low += u64::from(r * start);
        range = r * freq;
        renormalize(&mut low, &mut range, out);
        if leaf == 63 {
            code_bit(&mut low, &mut range, out, cdf.top, class == 64);
        }
        let raw = class.saturating_sub(2);
        if (1..=RAW_CHUNK).contains(&raw) {
            let digit = (magnitude & ((1u64 << raw) - 1)) as u32;
            range >>= raw;
            low += u64::from(digit) * u64::from(range);
            renormalize(&mut low, &mut range, out);
        } else if (RAW_CHUNK + 1..=2 * RAW_CHUNK).contains(&raw) {
            // A full chunk, then the rest.
            let rest = raw - RAW_CHUNK;
            let digit = ((magnitude >> rest) & ((1u64 << RAW_CHUNK) - 1)) as u32;
            range >>= RAW_CHUNK;
            low += u64::from(digit) * u64::from(range);
            renormalize(&mut low, &mut range, out);
            let digit = (magnitude & ((1u64 << rest) - 1)) as u32;
            range >>= rest;
            low += u64::from(digit) * u64::from(range);
            renormalize(&mut low, &mut range, out);
        } else if raw > RAW_CHUNK {
            let mut left = raw;
            while left > 0 {
                let k = left.min(RAW_CHUNK);
                left -= k;
                let digit = ((magnitude >> left) & ((1u64 << k) - 1)) as u32;
                range >>= k;
                low += u64::from(digit) * u64::from(range);
                renormalize(&mut low, &mut range, out);
            }
        }
        if signed && magnitude != 0 {
            code_bit(&mut low, &mut range, out, cdf.sign, v & 1 == 1);
        }
        (self.low, self.range) = (low, range);
    }

    /// Moves the top byte of `low` (bits 24..32) to the output, after
    /// adding its carry (bit 32) to the bytes already written.
    #[inline(always)]
    fn shift_low(&mut self) {
        if self.low >= 1 << 32 {
            self.out.carry();
        }
        self.out.push((self.low >> 24) as u8);
        self.low = (self.low & 0x00ff_ffff) << 8;
    }

    /// Ends the stream and returns the bytes. The final value is the one in
    /// the interval with the most trailing zero bits; zero bytes at the end
    /// are then dropped.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        let end = self.low + u64::from(self.range);
        for k in (0..=32u32).rev() {
            let mask = (1u64 << k) - 1;
            let v = (self.low + mask) & !mask;
            if v < end {
                self.low = v;
                break;
            }
        }
        for _ in 0..5 {
            self.shift_low();
        }
        self.out.into_trimmed()
    }
}

/// [`RangeEncoder::bit`] on an interval held in locals.
#[inline(always)]
fn code_bit(low: &mut u64, range: &mut u32, out: &mut Output, p0: u16, bit: bool) {
    let bound = (*range >> PROB_BITS) * u32::from(p0);
    let m = u32::from(bit).wrapping_neg();
    *low += u64::from(bound & m);
    *range = (bound & !m) | ((*range - bound) & m);
    renormalize(low, range, out);
}

/// Shifts bytes of an interval held in locals out to `out` (as
/// [`RangeEncoder::shift_low`]) until the range is at least [`TOP`].
#[inline(always)]
fn renormalize(low: &mut u64, range: &mut u32, out: &mut Output) {
    // Every step leaves the range at least `2^8`: two shifts at most.
    if *range < TOP {
        shift(low, range, out);
        if *range < TOP {
            shift(low, range, out);
        }
    }
}

/// One byte of [`renormalize`].
#[inline(always)]
fn shift(low: &mut u64, range: &mut u32, out: &mut Output) {
    *range <<= 8;
    if *low >= 1 << 32 {
        out.carry();
    }
    out.push((*low >> 24) as u8);
    *low = (*low & 0x00ff_ffff) << 8;
}

/// Adds one to `out` read as a big-endian number: trailing `0xff` bytes
/// become 0 and the byte before them grows by one (past the first byte,
/// the carry goes to the unwritten byte above).
#[inline(always)]
fn carry(out: &mut [u8]) {
    for b in out.iter_mut().rev() {
        let (sum, over) = b.overflowing_add(1);
        *b = sum;
        if !over {
            return;
        }
    }
}

/// Decodes decisions, symbols and raw bits; reads zeros past the end of
/// the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeDecoder<'a> {
    input: &'a [u8],
    /// Bytes consumed, counting those read past the end.
    pos: usize,
    range: u32,
    /// The coded value minus the interval's low end; always below `range`.
    code: u32,
}

impl<'a> RangeDecoder<'a> {
    /// Starts decoding `input`.
    pub(crate) fn new(input: &'a [u8]) -> Result<Self, ModelError> {
        let mut d = Self {
            input,
            pos: 0,
            range: u32::MAX,
            code: 0,
        };
        for _ in 0..4 {
            d.code = (d.code << 8) | u32::from(d.next_byte());
        }
        if d.code == u32::MAX {
            return Err(ModelError::BadStart);
        }
        Ok(d)
    }

    #[inline(always)]
    fn next_byte(&mut self) -> u8 {
        let b = self.input.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }

    #[inline(always)]
    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(self.next_byte());
        }
    }

    /// Decodes one decision where `p0` is the chance of a 0.
    #[inline(always)]
    pub(crate) fn bit(&mut self, p0: u16) -> bool {
        let bound = (self.range >> PROB_BITS) * u32::from(p0);
        // Without a branch on the decoded bit: `m` is all ones for a 1.
        let bit = self.code >= bound;
        let m = u32::from(bit).wrapping_neg();
        self.code -= bound & m;
        self.range = (bound & !m) | ((self.range - bound) & m);
        self.normalize();
        bit
    }

    /// Decodes `n` bits (`n <= 64`) into the low bits of the result, bit `k`
    /// as [`RangeDecoder::bit`] with the chance of a 0 `p0[k]` when bit
    /// `k - 1` (bit −1 being `prev`) is 0, else `p1[k]` (both probabilities
    /// are read before the bit they depend on is known). The interval
    /// stays in registers between the bits.
    #[inline]
    pub(crate) fn bit_seq(
        &mut self,
        n: u32,
        prev: bool,
        mut probs: impl FnMut(u32) -> (u16, u16),
    ) -> u64 {
        let (mut code, mut range) = (self.code, self.range);
        let mut prev = prev;
        let mut bits = 0u64;
        for k in 0..n {
            let (p0, p1) = probs(k);
            let bit = self.run_step(&mut code, &mut range, prev, p0, p1);
            bits |= u64::from(bit) << k;
            prev = bit;
        }
        (self.code, self.range) = (code, range);
        bits
    }

    /// [`RangeDecoder::bit_seq`] of `pairs.len() / 2` bits (at most 64)
    /// whose probabilities lie in pairs: bit `k`'s chance of a 0 is
    /// `pairs[2k]` after a 0 bit (bit −1 being `prev`), `pairs[2k + 1]`
    /// after a 1.
    #[inline]
    pub(crate) fn bit_pairs(&mut self, prev: bool, pairs: &[u16]) -> u64 {
        let (mut code, mut range) = (self.code, self.range);
        let mut prev = prev;
        let mut bits = 0u64;
        for (k, p) in pairs.chunks_exact(2).enumerate() {
            let bit = self.run_step(&mut code, &mut range, prev, p[0], p[1]);
            bits |= u64::from(bit) << k;
            prev = bit;
        }
        (self.code, self.range) = (code, range);
        bits
    }

    /// One decision of a run on the interval `code`/`range` held by the
    /// caller: the chance of a 0 is `p1` after a 1 bit (`prev`), else
    /// `p0` (both products taken before the choice).
    #[inline(always)]
    fn run_step(&mut self, code: &mut u32, range: &mut u32, prev: bool, p0: u16, p1: u16) -> bool {
        let r = *range >> PROB_BITS;
        let (b0, b1) = (r * u32::from(p0), r * u32::from(p1));
        let bound = if prev { b1 } else { b0 };
        let bit = *code >= bound;
        let m = u32::from(bit).wrapping_neg();
        *code -= bound & m;
        *range = (bound & !m) | ((*range - bound) & m);
        if *range < TOP {
            (self.code, self.range) = (*code, *range);
            self.normalize_cold();
            (*code, *range) = (self.code, self.range);
        }
        bit
    }

    #[inline(never)]
    fn normalize_cold(&mut self) {
        self.normalize();
    }

    /// Decodes `n` raw bits (`n <= 64`), most significant first, in the
    /// encoder's chunks: full chunks of [`RAW_CHUNK`] bits, then the rest.
    #[inline(always)]
    pub(crate) fn raw(&mut self, n: u32) -> Result<u64, ModelError> {
        let mut v = 0u64;
        let mut left = n;
        while left > RAW_CHUNK {
            left -= RAW_CHUNK;
            v = (v << RAW_CHUNK) | u64::from(self.raw_chunk(RAW_CHUNK)?);
        }
        if left > 0 {
            v = (v << left) | u64::from(self.raw_chunk(left)?);
        }
        Ok(v)
    }

    /// Decodes one chunk of `k` raw bits (`1..=RAW_CHUNK`).
    #[inline(always)]
    fn raw_chunk(&mut self, k: u32) -> Result<u32, ModelError> {
        self.range >>= k;
        let digit = self.code / self.range;
        // `range` shrank by truncation: values past `2^k` parts are unused
        // by any encoder.
        if digit >> k != 0 {
            return Err(ModelError::Corrupt);
        }
        self.code -= digit * self.range;
        self.normalize();
        Ok(digit)
    }

    /// Decodes one symbol over a frequency total of `2^bits` (`bits <= 16`):
    /// `find` maps the target (below `2^bits`) to the symbol, its start and
    /// its frequency. A target at or past the total (which no encoder
    /// produces) is `Corrupt`. The reference of
    /// [`RangeDecoder::head_symbol`].
    #[cfg(test)]
    pub(crate) fn symbol<F: FnOnce(u32) -> (u32, u32, u32)>(
        &mut self,
        bits: u32,
        find: F,
    ) -> Result<u32, ModelError> {
        let r = self.range >> bits;
        let target = self.code / r;
        if target >> bits != 0 {
            return Err(ModelError::Corrupt);
        }
        let (symbol, start, freq) = find(target);
        self.code -= r * start;
        self.range = r * freq;
        self.normalize();
        Ok(symbol)
    }

    /// [`RangeDecoder::symbol`] of a value context's head symbol, looked
    /// up in `cdf` (a method rather than a closure, so that the lookup is
    /// inlined).
    #[inline(always)]
    pub(crate) fn head_symbol(&mut self, cdf: &ClassCdf) -> Result<u32, ModelError> {
        let r = self.range >> FREQ_BITS;
        let target = self.code / r;
        if target >> FREQ_BITS != 0 {
            return Err(ModelError::Corrupt);
        }
        let (symbol, start, freq) = cdf.find(target);
        self.code -= r * start;
        self.range = r * freq;
        self.normalize();
        Ok(symbol)
    }

    /// Checks that the decoder read every byte of the input.
    pub(crate) fn finish(&self) -> Result<(), ModelError> {
        if self.pos < self.input.len() {
            return Err(ModelError::Trailing {
                len: self.input.len(),
                consumed: self.pos,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder with LZMA's carry handling (the last byte out of `low`
    /// kept back with a count of `0xff` bytes after it), the reference of
    /// [`RangeEncoder`]'s bytes.
    /// Encodes decisions, symbols and raw bits into bytes.
    struct CacheEncoder {
        /// Low end of the interval; bit 32 is a pending carry.
        low: u64,
        range: u32,
        /// The last byte shifted out of `low` and not yet written, because a
        /// carry may still change it.
        cache: u8,
        /// Bytes pending: `cache` plus `pending - 1` bytes of `0xff`.
        pending: u64,
        /// The first byte out of `low` is always 0 (the interval starts below
        /// `1 << 32`); it is never written.
        skip_first: bool,
        out: Vec<u8>,
    }

    impl CacheEncoder {
        /// An encoder that appends to `out` (cleared first).
        fn new(mut out: Vec<u8>) -> Self {
            out.clear();
            Self {
                low: 0,
                range: u32::MAX,
                cache: 0,
                pending: 1,
                skip_first: true,
                out,
            }
        }

        /// Codes `bit` where `p0` (in `1..PROB_ONE`) is the chance of a 0.
        #[inline]
        fn bit(&mut self, p0: u16, bit: bool) {
            let bound = (self.range >> PROB_BITS) * u32::from(p0);
            // Without a branch on `bit` (which the processor cannot predict):
            // `m` is all ones for a 1.
            let m = u32::from(bit).wrapping_neg();
            self.low += u64::from(bound & m);
            self.range = (bound & !m) | ((self.range - bound) & m);
            while self.range < TOP {
                self.range <<= 8;
                self.shift_low();
            }
        }

        /// Codes the low `n` bits of `v` (`n <= 64`), most significant first,
        /// each with probability one half, in chunks of at most
        /// [`RAW_CHUNK`] bits: the range is divided by `2^k` and the chunk's
        /// value picks the part.
        #[inline]
        fn raw(&mut self, v: u64, n: u32) {
            let mut left = n;
            while left > 0 {
                let k = left.min(RAW_CHUNK);
                left -= k;
                let digit = ((v >> left) & ((1u64 << k) - 1)) as u32;
                self.range >>= k;
                self.low += u64::from(digit) * u64::from(self.range);
                while self.range < TOP {
                    self.range <<= 8;
                    self.shift_low();
                }
            }
        }

        /// Codes the symbol whose share of a frequency total `2^bits` is
        /// `start..start + freq` (`bits <= 16`, `freq >= 1`): the range is
        /// divided by `2^bits` and the share picks the part.
        #[inline]
        fn symbol(&mut self, bits: u32, start: u32, freq: u32) {
            let r = self.range >> bits;
            self.low += u64::from(r * start);
            self.range = r * freq;
            while self.range < TOP {
                self.range <<= 8;
                self.shift_low();
            }
        }

        fn shift_low(&mut self) {
            if self.low < 0xff00_0000 || self.low >= 1 << 32 {
                let carry = (self.low >> 32) as u8;
                let mut byte = self.cache;
                loop {
                    if self.skip_first {
                        self.skip_first = false;
                    } else {
                        self.out.push(byte.wrapping_add(carry));
                    }
                    byte = 0xff;
                    self.pending -= 1;
                    if self.pending == 0 {
                        break;
                    }
                }
                self.cache = (self.low >> 24) as u8;
            }
            self.pending += 1;
            self.low = (self.low & 0x00ff_ffff) << 8;
        }

        /// Ends the stream and returns the bytes. The final value is the one in
        /// the interval with the most trailing zero bits; zero bytes at the end
        /// are then dropped.
        fn finish(mut self) -> Vec<u8> {
            let end = self.low + u64::from(self.range);
            for k in (0..=32u32).rev() {
                let mask = (1u64 << k) - 1;
                let v = (self.low + mask) & !mask;
                if v < end {
                    self.low = v;
                    break;
                }
            }
            for _ in 0..5 {
                self.shift_low();
            }
            while self.out.last() == Some(&0) {
                self.out.pop();
            }
            self.out
        }
    }

    #[test]
    fn encoder_bytes_match_the_carry_cache_reference() {
        let mut x = 0x0123_4567_89ab_cdef_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut carried = 0;
        for _ in 0..3000 {
            let (mut enc, mut reference) =
                (RangeEncoder::new(Vec::new()), CacheEncoder::new(Vec::new()));
            // Runs of near-certain decisions and all-ones raw bits make long
            // runs of 0xff bytes and carries through them.
            let skew = next();
            for _ in 0..next() % 200 {
                let r = next();
                match r % 4 {
                    0 | 1 => {
                        let p0 = match skew % 3 {
                            0 => 1 + (r >> 8) as u16 % 4095,
                            1 => 1 + (r >> 8) as u16 % 8,
                            _ => 4095 - (r >> 8) as u16 % 8,
                        };
                        let bit = (r >> 32) & 1 == 1;
                        enc.bit(p0, bit);
                        reference.bit(p0, bit);
                    }
                    2 => {
                        let n = (r >> 8) as u32 % 65;
                        let v = if skew & 8 == 0 { next() } else { u64::MAX };
                        enc.raw(v, n);
                        reference.raw(v, n);
                    }
                    _ => {
                        let bits = 1 + (r >> 8) as u32 % 16;
                        let start = (r >> 16) as u32 % (1 << bits);
                        let freq = 1 + (r >> 40) as u32 % ((1 << bits) - start);
                        enc.symbol(bits, start, freq);
                        reference.symbol(bits, start, freq);
                    }
                }
            }
            let (got, want) = (enc.finish(), reference.finish());
            carried += usize::from(got.contains(&0xff));
            assert_eq!(got, want);
        }
        assert!(carried > 100);
    }
}
