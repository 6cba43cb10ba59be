//! The range coder of a format-3 model block: 32-bit range, carries added
//! to the bytes already written (the bytes of LZMA's construction), binary
//! decisions with 12-bit static probabilities and symbols over static
//! cumulative frequencies in the coded stream; raw bits in the block's
//! raw-bit stream ([`super::raw`]). The flush writes the fewest bytes whose
//! decoder window, continued by the raw stream's bytes, lies in the final
//! interval.

use super::classes::{ClassCdf, FREQ_BITS};
use super::raw::{check_end, Output, RawReader, RawTail};
use super::ModelError;

/// Precision of a probability: `p` is the chance of a 0 bit in units of
/// `1 / (1 << PROB_BITS)`, in `1..(1 << PROB_BITS)`.
pub const PROB_BITS: u32 = 12;
/// `1 << PROB_BITS`.
pub const PROB_ONE: u16 = 1 << PROB_BITS;
/// The range is renormalised (shifted a byte) when it falls below this.
const TOP: u32 = 1 << 24;

/// Encodes decisions and symbols into the coded bytes of a block and raw
/// bits into its raw-bit stream.
#[derive(Debug, Clone)]
pub(crate) struct RangeEncoder {
    /// Low end of the interval; bit 32 is a carry into the bytes written.
    low: u64,
    range: u32,
    /// The coded bytes shifted out of `low`, as one big-endian number that
    /// a carry adds one to, and the raw stream.
    out: Output,
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

    /// Appends the low `n` bits of `v` (`n <= 62`) to the raw-bit stream
    /// (the raw step of the reference of [`RangeEncoder::value`]).
    #[cfg(test)]
    pub(crate) fn raw(&mut self, v: u64, n: u32) {
        self.out.raw(v & ((1u64 << n) - 1), n);
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
    /// (to the raw-bit stream), then the sign. The interval stays in
    /// registers for the whole value.
    #[inline(always)]
    pub(crate) fn value(&mut self, cdf: &ClassCdf, v: u64, signed: bool) {
        let magnitude = if signed { (v >> 1) + (v & 1) } else { v };
        let class = 64 - magnitude.leading_zeros();
        let leaf = class.min(63);
        // `symbol(leaf, second)`: from class 2 the top two bits (`2 +
        // second`) plus `2 * leaf - 4`.
        // Both computed and one selected: the class varies unpredictably.
        let wide = ((magnitude >> class.saturating_sub(2)) as usize)
            .wrapping_add(2 * leaf as usize)
            .wrapping_sub(4);
        let head = core::hint::select_unpredictable(class < 2, class as usize, wide);
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
        out.raw(magnitude & ((1u64 << raw) - 1), raw);
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

    /// Ends the block and returns its bytes: the coded bytes, then the
    /// raw-bit stream. The coded stream ends with the fewest bytes `k`
    /// (0..=4) of the final 32-bit value `v` such that `v`, read with the
    /// raw stream's bytes after those `k` (and zeros past the block), lies
    /// in the final interval; the raw stream's partial last byte then
    /// takes its padding from `v` when the decoder's lookahead reads it.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        let tail = self.out.raw_tail();
        let (v, k) = final_value(self.low, self.range, tail);
        if v >= 1 << 32 {
            self.out.carry();
        }
        for i in 0..k {
            self.out.push((v >> (24 - 8 * i)) as u8);
        }
        if k < 4 && tail.bits > 0 {
            // The partial byte, read by the coded stream too: `v`'s byte.
            self.out.push((v >> (24 - 8 * k)) as u8);
        } else {
            self.out.raw_partial(tail);
        }
        self.out.into_block()
    }

    /// Ends the coded stream at `low` itself, without the raw stream
    /// (the bytes of the carry reference).
    #[cfg(test)]
    fn finish_at_low(mut self) -> Vec<u8> {
        for _ in 0..4 {
            self.shift_low();
        }
        self.out.into_block()
    }
}

/// The flush: the final value `v` (33 bits, bit 32 a carry) and the number
/// `k` of its bytes the coded stream writes. For `k` from 0 up, the 32-bit
/// window the decoder reads after the coded bytes already written is `k`
/// free bytes, then the raw stream's end `tail` in block order (its partial
/// byte's padding bits free while `k < 4`), then zeros; `v` is the least
/// such window at or above `low`, taken when below `low + range`. `k = 4`
/// (`v = low`) always fits.
#[inline]
pub(crate) fn final_value(low: u64, range: u32, tail: RawTail) -> (u64, u32) {
    let end = low + u64::from(range);
    let partial = tail.bits > 0;
    // The block's bytes from the raw stream's start on, big-endian.
    let mut fixed = [0u8; 4];
    fixed[0] = if partial { tail.partial } else { tail.next[0] };
    let rest = if partial {
        &tail.next[..3]
    } else {
        &tail.next[1..]
    };
    fixed[1..].copy_from_slice(rest);
    let fixed = u32::from_be_bytes(fixed);
    for k in 0..4u32 {
        let bytes = 4 - k;
        // Fixed low bits of the window: the raw bytes read, less the
        // partial byte's padding.
        let s = 8 * bytes - if partial { 8 - tail.bits } else { 0 };
        let x = u64::from(fixed >> (8 * k));
        let step = 1u64 << s;
        let f = low.saturating_sub(x).div_ceil(step);
        let v = f * step + x;
        if v < end {
            return (v, k);
        }
    }
    (low, 4)
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

/// Decodes decisions and symbols from a block's front and raw bits from
/// its back; reads zeros past either end (the end check rejects a stream
/// that needed them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeDecoder<'a> {
    input: &'a [u8],
    /// Coded bytes consumed, counting those read past the end.
    pos: usize,
    range: u32,
    /// The coded value minus the interval's low end; always below `range`.
    code: u32,
    raw: RawReader,
}

impl<'a> RangeDecoder<'a> {
    /// Starts decoding `input`.
    pub(crate) fn new(input: &'a [u8]) -> Result<Self, ModelError> {
        let mut d = Self {
            input,
            pos: 0,
            range: u32::MAX,
            code: 0,
            raw: RawReader::new(),
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

    /// [`RangeDecoder::normalize`] without a branch on the range, for
    /// steps whose shifts vary unpredictably (head symbols): every step
    /// leaves the range at least `2^8`, so two bytes are read and `n`
    /// (0..=2) of them taken.
    #[inline(always)]
    fn normalize_two(&mut self) {
        let n = u32::from(self.range < TOP) + u32::from(self.range < 1 << 16);
        let at = |i: usize| {
            self.pos
                .checked_add(i)
                .and_then(|p| self.input.get(p))
                .copied()
                .unwrap_or(0)
        };
        let next = (u64::from(at(0)) << 8 | u64::from(at(1))) >> (16 - 8 * n);
        self.code = (u64::from(self.code) << (8 * n) | next) as u32;
        self.range = (u64::from(self.range) << (8 * n)) as u32;
        self.pos = self.pos.saturating_add(n as usize);
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

    /// The next `n` raw bits (`n <= 62`) of the raw-bit stream.
    #[inline(always)]
    pub(crate) fn raw(&mut self, n: u32) -> Result<u64, ModelError> {
        Ok(self.raw.get(self.input, n))
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
        self.normalize_two();
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
        self.normalize_two();
        Ok(symbol)
    }

    /// Checks the block's end: every byte read by one of the two
    /// streams, the raw stream where the coded stream's flush puts it,
    /// its padding zero (FORMAT.md, "Model block", "End of a block").
    pub(crate) fn finish(&self) -> Result<(), ModelError> {
        check_end(self.input, self.pos, self.raw.used())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder with LZMA's carry handling (the last byte out of `low`
    /// kept back with a count of `0xff` bytes after it), the reference of
    /// [`RangeEncoder`]'s bytes (before its flush).
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

        /// Ends the stream at `low` itself and returns the bytes.
        fn finish(mut self) -> Vec<u8> {
            for _ in 0..5 {
                self.shift_low();
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
                        // Equiprobable digits of up to 16 bits.
                        let bits = 1 + (r >> 8) as u32 % 16;
                        let v = if skew & 8 == 0 { next() } else { u64::MAX };
                        let digit = (v & ((1 << bits) - 1)) as u32;
                        enc.symbol(bits, digit, 1);
                        reference.symbol(bits, digit, 1);
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
            let (got, want) = (enc.finish_at_low(), reference.finish());
            carried += usize::from(got.contains(&0xff));
            assert_eq!(got, want);
        }
        assert!(carried > 100);
    }
}
