//! The two ends of a format-3 model block: the coded bytes grow from the
//! front, the raw-bit stream (values' low bits, least significant bit
//! first within a byte, in token order) grows from the back, byte-reversed.
//! The encoder writes both into one buffer, so a packet allocates nothing
//! once the buffer has grown; the decoder reads the raw stream backwards
//! from the block's end with a 64-bit bit buffer, off the coder's
//! dependency chain.

use super::ModelError;

/// The encoder's bytes: coded bytes in `buf[..pos]`, raw bytes in the last
/// `raw_len` bytes of `buf` (the first raw byte last), and up to 31 raw
/// bits not yet stored in `acc`.
#[derive(Debug, Clone)]
pub(super) struct Output {
    buf: Vec<u8>,
    pos: usize,
    raw_len: usize,
    acc: u64,
    /// Bits in `acc` (below 32 between calls).
    nacc: u32,
}

/// The raw stream's end as the encoder's flush sees it: the last partial
/// byte (its `bits` low bits, 0 when the stream ends on a byte) and the
/// block's bytes that follow it (zeros past the block's end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RawTail {
    pub(super) bits: u32,
    pub(super) partial: u8,
    pub(super) next: [u8; 4],
}

impl Output {
    /// Smallest buffer length.
    const MIN_LEN: usize = 64;

    /// Output into `buf` (its bytes dropped, its capacity kept).
    pub(super) fn new(mut buf: Vec<u8>) -> Self {
        buf.clear();
        let len = buf.capacity().max(Self::MIN_LEN);
        buf.resize(len, 0);
        Self {
            buf,
            pos: 0,
            raw_len: 0,
            acc: 0,
            nacc: 0,
        }
    }

    /// Appends a coded byte.
    #[inline(always)]
    pub(super) fn push(&mut self, byte: u8) {
        if self.pos + self.raw_len >= self.buf.len() {
            self.grow();
        }
        if let Some(b) = self.buf.get_mut(self.pos) {
            *b = byte;
        }
        self.pos += 1;
    }

    /// Adds one to the coded bytes read as a big-endian number: trailing
    /// `0xff` bytes become 0 and the byte before them grows by one (a
    /// carry past the first byte cannot happen: the interval starts below
    /// 1).
    #[cold]
    #[inline(never)]
    pub(super) fn carry(&mut self) {
        for b in self.buf[..self.pos].iter_mut().rev() {
            let (sum, over) = b.overflowing_add(1);
            *b = sum;
            if !over {
                return;
            }
        }
    }

    /// Appends the low `n` bits of `v` (`n <= 62`, higher bits of `v`
    /// zero) to the raw stream.
    #[inline(always)]
    pub(super) fn raw(&mut self, v: u64, n: u32) {
        if n > 32 {
            self.raw_small(v & 0xffff_ffff, 32);
            self.raw_small(v >> 32, n - 32);
        } else {
            self.raw_small(v, n);
        }
    }

    /// [`Output::raw`] of at most 32 bits: stored four bytes at a time.
    #[inline(always)]
    fn raw_small(&mut self, v: u64, n: u32) {
        self.acc |= v << self.nacc;
        self.nacc += n;
        if self.nacc >= 32 {
            self.raw_word(self.acc as u32);
            self.acc >>= 32;
            self.nacc -= 32;
        }
    }

    /// Stores four raw bytes (the low byte of `w` first in the stream,
    /// so last in the block).
    #[inline(always)]
    fn raw_word(&mut self, w: u32) {
        if self.pos + self.raw_len + 4 > self.buf.len() {
            self.grow();
        }
        let end = self.buf.len() - self.raw_len;
        if let Some(b) = self.buf.get_mut(end - 4..end) {
            b.copy_from_slice(&w.to_be_bytes());
        }
        self.raw_len += 4;
    }

    /// Stores one raw byte.
    fn raw_byte(&mut self, byte: u8) {
        if self.pos + self.raw_len >= self.buf.len() {
            self.grow();
        }
        let at = self.buf.len() - self.raw_len - 1;
        self.buf[at] = byte;
        self.raw_len += 1;
    }

    /// Doubles the buffer, moving the raw bytes to its new end.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let old = self.buf.len();
        let len = old.max(Self::MIN_LEN) * 2;
        self.buf.resize(len, 0);
        self.buf
            .copy_within(old - self.raw_len..old, len - self.raw_len);
    }

    /// Stores the raw stream's whole bytes and returns its end: the
    /// partial byte and the 4 block bytes after it.
    pub(super) fn raw_tail(&mut self) -> RawTail {
        while self.nacc >= 8 {
            self.raw_byte(self.acc as u8);
            self.acc >>= 8;
            self.nacc -= 8;
        }
        let end = self.buf.len();
        let mut next = [0u8; 4];
        for (i, b) in next.iter_mut().enumerate().take(self.raw_len) {
            *b = self.buf[end - self.raw_len + i];
        }
        RawTail {
            bits: self.nacc,
            partial: self.acc as u8,
            next,
        }
    }

    /// Ends the raw stream with its partial byte, zero-padded (after
    /// [`Output::raw_tail`]).
    pub(super) fn raw_partial(&mut self, tail: RawTail) {
        if tail.bits > 0 {
            self.raw_byte(tail.partial);
        }
    }

    /// The block: the coded bytes, then the raw stream.
    pub(super) fn into_block(mut self) -> Vec<u8> {
        let len = self.buf.len();
        self.buf.copy_within(len - self.raw_len..len, self.pos);
        self.buf.truncate(self.pos + self.raw_len);
        self.buf
    }
}

/// Reads the raw stream backwards from the end of `block`; past the
/// block's start it reads zeros (the end check rejects that).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawReader {
    /// Bytes taken from the end, counting those past the start.
    taken: usize,
    acc: u64,
    /// Bits in `acc`.
    nacc: u32,
}

impl RawReader {
    /// A reader at the block's end.
    pub(super) fn new() -> Self {
        Self {
            taken: 0,
            acc: 0,
            nacc: 0,
        }
    }

    /// The next `n` bits of `block`'s raw stream (`n <= 62`).
    #[inline(always)]
    pub(super) fn get(&mut self, block: &[u8], n: u32) -> u64 {
        if n > 32 {
            let lo = self.get_small(block, 32);
            return lo | self.get_small(block, n - 32) << 32;
        }
        self.get_small(block, n)
    }

    /// [`RawReader::get`] of at most 32 bits.
    #[inline(always)]
    fn get_small(&mut self, block: &[u8], n: u32) -> u64 {
        if self.nacc < n {
            self.refill(block);
        }
        let v = self.acc & ((1u64 << n) - 1);
        self.acc >>= n;
        self.nacc -= n;
        v
    }

    /// Fills the bit buffer to at least 56 bits.
    #[inline(always)]
    fn refill(&mut self, block: &[u8]) {
        let k = ((63 - self.nacc) / 8) as usize;
        let end = block.len().wrapping_sub(self.taken);
        if let Some(w) = end
            .checked_sub(8)
            .and_then(|start| block.get(start..end))
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
        {
            // The 8 bytes before `end`, the last first.
            let word = u64::from_be_bytes(w) & ((1u64 << (8 * k)) - 1);
            self.acc |= word << self.nacc;
            self.taken += k;
            self.nacc += 8 * k as u32;
        } else {
            self.refill_slow(block);
        }
    }

    /// [`RawReader::refill`] near the block's start, a byte at a time.
    #[cold]
    #[inline(never)]
    fn refill_slow(&mut self, block: &[u8]) {
        while self.nacc <= 56 {
            let b = block
                .len()
                .checked_sub(self.taken + 1)
                .and_then(|i| block.get(i))
                .copied()
                .unwrap_or(0);
            self.taken = self.taken.saturating_add(1);
            self.acc |= u64::from(b) << self.nacc;
            self.nacc += 8;
        }
    }

    /// Bits handed out.
    pub(super) fn used(&self) -> u64 {
        self.taken as u64 * 8 - u64::from(self.nacc)
    }
}

/// The end check of a format-3 block of `len` bytes whose coded stream
/// the decoder consumed `coded` bytes of (its 4-byte lookahead included,
/// bytes past the end counted) and whose raw stream `raw` handed out
/// `raw_bits` bits: the raw stream lies within the block, starts inside
/// the coded stream's last 4 bytes read or right after them (no byte
/// between: `Trailing`; further in: `Overlap`), and its padding bits are
/// zero unless the coded stream read that byte (`Padding`).
pub(super) fn check_end(block: &[u8], coded: usize, raw_bits: u64) -> Result<(), ModelError> {
    let len = block.len();
    let raw = usize::try_from(raw_bits.div_ceil(8)).unwrap_or(usize::MAX);
    let Some(start) = len.checked_sub(raw) else {
        return Err(ModelError::Overlap {
            len,
            coded,
            raw: raw.min(u32::MAX as usize),
        });
    };
    if start > coded {
        return Err(ModelError::Trailing {
            len,
            consumed: coded + raw,
        });
    }
    if start + 4 < coded {
        return Err(ModelError::Overlap { len, coded, raw });
    }
    let pad = (raw_bits % 8) as u32;
    if pad > 0 && start >= coded && block.get(start).is_some_and(|b| b >> pad != 0) {
        return Err(ModelError::Padding);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_bits_come_back_in_order_across_growth() {
        let items: Vec<(u64, u32)> = (0..700u64)
            .map(|i| {
                let n = (i * 7 % 63) as u32;
                (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) & ((1u64 << n) - 1), n)
            })
            .collect();
        let mut out = Output::new(Vec::new());
        for (i, &(v, n)) in items.iter().enumerate() {
            out.raw(v, n);
            if i % 3 == 0 {
                out.push(i as u8);
            }
        }
        let tail = out.raw_tail();
        out.raw_partial(tail);
        let coded = items.len().div_ceil(3);
        let block = out.into_block();
        let total: u64 = items.iter().map(|i| u64::from(i.1)).sum();
        assert_eq!(block.len(), coded + total.div_ceil(8) as usize);
        for (i, b) in block[..coded].iter().enumerate() {
            assert_eq!(*b, (i * 3) as u8);
        }
        let mut r = RawReader::new();
        for &(v, n) in &items {
            assert_eq!(r.get(&block, n), v);
        }
        assert_eq!(r.used(), total);
        assert_eq!(check_end(&block, coded, total), Ok(()));
    }

    #[test]
    fn the_end_check_rejects_gaps_overlaps_and_padding() {
        // 6 bytes: the coded decoder read 4, the raw stream 11 bits (2
        // bytes from the end, byte 4 holds its last 3 bits).
        let block = [1, 2, 3, 4, 0b0000_0101, 9];
        assert_eq!(check_end(&block, 4, 11), Ok(()));
        assert_eq!(
            check_end(&block, 3, 11),
            Err(ModelError::Trailing {
                len: 6,
                consumed: 5
            })
        );
        assert_eq!(
            check_end(&block, 9, 11),
            Err(ModelError::Overlap {
                len: 6,
                coded: 9,
                raw: 2
            })
        );
        assert_eq!(check_end(&block, 8, 11), Ok(()));
        // Padding read by the coded stream is free; otherwise zero.
        let block = [1, 2, 3, 4, 0b1000_0101, 9];
        assert_eq!(check_end(&block, 4, 11), Err(ModelError::Padding));
        assert_eq!(check_end(&block, 5, 11), Ok(()));
        assert_eq!(
            check_end(&block, 0, 56),
            Err(ModelError::Overlap {
                len: 6,
                coded: 0,
                raw: 7
            })
        );
    }
}
