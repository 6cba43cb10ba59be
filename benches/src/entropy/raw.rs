//! The raw-bit stream of a block: values' low bits, written in token order
//! and stored at the end of the block byte-reversed, so that the decoder
//! reads it backwards from the block's end while the entropy stream is
//! read forwards from its start; no length field between them.

#![forbid(unsafe_code)]

use super::ProtoError;

/// Collects raw bits, least significant first within each byte.
#[derive(Debug, Default)]
pub struct RawWriter {
    bytes: Vec<u8>,
    acc: u64,
    n: u32,
}

impl RawWriter {
    /// Drops everything written.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.acc = 0;
        self.n = 0;
    }

    /// Appends the low `n` bits of `v` (`n <= 62`).
    #[inline(always)]
    pub fn put(&mut self, v: u64, n: u32) {
        if n == 0 {
            return;
        }
        if self.n + n > 64 {
            let k = 32;
            self.put_small(v & 0xffff_ffff, k);
            self.put_small(v >> k, n - k);
        } else {
            self.put_small(v, n);
        }
    }

    #[inline(always)]
    fn put_small(&mut self, v: u64, n: u32) {
        if self.n + n > 64 {
            self.flush_bytes();
        }
        self.acc |= v << self.n;
        self.n += n;
        if self.n >= 32 {
            self.flush_bytes();
        }
    }

    #[inline(always)]
    fn flush_bytes(&mut self) {
        while self.n >= 8 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// Appends the stream, byte-reversed (padded with zero bits), to
    /// `out`.
    pub fn finish_into(&mut self, out: &mut Vec<u8>) {
        self.finish_shared(out, 0);
    }

    /// [`finish_into`](Self::finish_into), except that a last partial
    /// byte of at most `free` bits goes into the free (zero) low bits of
    /// `out`'s last byte instead of a byte of its own.
    pub fn finish_shared(&mut self, out: &mut Vec<u8>, free: u32) {
        self.flush_bytes();
        let partial = self.n > 0;
        let shared = partial && self.n <= free;
        match out.last_mut() {
            Some(last) if shared => *last |= self.acc as u8,
            _ => {
                if partial {
                    self.bytes.push(self.acc as u8);
                }
            }
        }
        out.extend(self.bytes.iter().rev());
        self.clear();
    }
}

/// Reads raw bits backwards from the end of a block; past the block's
/// start it reads zeros and remembers it.
#[derive(Debug)]
pub struct RawReader<'a> {
    block: &'a [u8],
    /// Bytes taken from the end.
    taken: usize,
    acc: u64,
    n: u32,
    /// Bits handed out.
    used: u64,
}

impl<'a> RawReader<'a> {
    /// A reader of `block`'s raw stream.
    pub fn new(block: &'a [u8]) -> Self {
        Self {
            block,
            taken: 0,
            acc: 0,
            n: 0,
            used: 0,
        }
    }

    /// The next `n` bits (`n <= 62`).
    #[inline(always)]
    pub fn get(&mut self, n: u32) -> u64 {
        if n > 32 {
            let lo = self.get_small(32);
            return lo | self.get_small(n - 32) << 32;
        }
        self.get_small(n)
    }

    #[inline(always)]
    fn get_small(&mut self, n: u32) -> u64 {
        if self.n < n {
            self.refill();
        }
        let v = self.acc & ((1u64 << n) - 1);
        self.acc >>= n;
        self.n -= n;
        self.used += u64::from(n);
        v
    }

    #[inline(always)]
    fn refill(&mut self) {
        while self.n <= 56 {
            let b = match self.block.len().checked_sub(self.taken + 1) {
                Some(i) => self.block[i],
                None => 0,
            };
            self.taken += 1;
            self.acc |= u64::from(b) << self.n;
            self.n += 8;
        }
    }

    /// Bytes the bits handed out occupy, padding unchecked (it may be
    /// another stream's bits).
    pub fn bytes_used(&self) -> usize {
        self.used.div_ceil(8) as usize
    }

    /// Bytes the bits handed out occupy; checks the padding bits are zero.
    pub fn finish(&self) -> Result<usize, ProtoError> {
        let bytes = self.used.div_ceil(8) as usize;
        let pad = (bytes as u64 * 8 - self.used) as u32;
        // The padding is the low `pad` bits of what is left in the last
        // byte read for the handed-out bits.
        if pad > 0 && self.acc & ((1u64 << pad) - 1) != 0 {
            return Err(ProtoError::Trailing {
                len: self.block.len(),
                used: bytes,
            });
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_come_back_in_order() {
        let mut w = RawWriter::default();
        let items: Vec<(u64, u32)> = (0..500u64)
            .map(|i| {
                let n = (i * 7 % 63) as u32;
                (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) & ((1u64 << n) - 1), n)
            })
            .collect();
        for &(v, n) in &items {
            w.put(v, n);
        }
        let mut block = vec![0xaa; 3];
        w.finish_into(&mut block);
        let mut r = RawReader::new(&block);
        for &(v, n) in &items {
            assert_eq!(r.get(n), v);
        }
        let total: u64 = items.iter().map(|i| u64::from(i.1)).sum();
        assert_eq!(r.finish(), Ok(total.div_ceil(8) as usize));
        assert_eq!(block.len(), 3 + total.div_ceil(8) as usize);
    }
}
