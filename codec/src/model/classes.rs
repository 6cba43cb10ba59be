//! The head alphabet: a value's bit-length leaf (0..=63) together with
//! the bit below its top bit, coded as one range-coder step over
//! cumulative frequencies derived, when a table is built, from the class
//! tree's node probabilities and the second-bit probabilities.
//!
//! Symbol `0` is leaf 0, `1` leaf 1, and `2 + 2·(l - 2) + s` leaf `l`
//! (2..=63) with second bit `s`: 126 symbols. A symbol's weight is the
//! product of the six node probabilities on its leaf's path (the chance of
//! a 0 at a node whose decision is 0, `4096 - p` otherwise) and, from
//! leaf 2, of the second bit's probability (the same rule; leaves 0 and 1
//! take 4096), out of `4096^7 = 2^84`. Its frequency is
//! `1 + floor(weight · (2^15 - 126) / 2^84)`; what is left of the total
//! `2^15` goes to the first symbol of largest weight.

use super::range::PROB_ONE;
use super::value::{second_slot, CLASS_BITS, SIGN_SLOT, TOP_SLOT};

/// Bits of the frequency total of the head alphabet.
pub(crate) const FREQ_BITS: u32 = 15;
/// The frequency total.
const FREQ_TOTAL: u32 = 1 << FREQ_BITS;
/// Leaves of the class tree.
const LEAVES: usize = 1 << CLASS_BITS;
/// Symbols of the head alphabet.
const SYMBOLS: usize = 2 + 2 * (LEAVES - 2);
/// The decoder's lookup has `2^BUCKET_BITS` buckets.
const BUCKET_BITS: u32 = 9;
const BUCKETS: usize = 1 << BUCKET_BITS;
/// Targets per bucket, as a shift.
const BUCKET_SHIFT: u32 = FREQ_BITS - BUCKET_BITS;
/// The flag of a bucket shared by more than one symbol (symbols fit in
/// the low 7 bits).
const SPLIT: u8 = 0x80;

/// The head symbol of leaf `leaf` (0..=63) and second bit `second`
/// (`false` below leaf 2).
#[inline]
pub(crate) fn symbol(leaf: u32, second: bool) -> usize {
    if leaf < 2 {
        leaf as usize
    } else {
        2 * leaf as usize - 2 + usize::from(second)
    }
}

/// What the coder reads of one value context: the cumulative frequencies
/// of its head symbols (`cum[s]..cum[s + 1]` is symbol `s`'s share of
/// [`FREQ_TOTAL`]) and the probabilities of the two decisions outside the
/// head. Laid out so that the probabilities and the shares of the small
/// classes share the first cache line.
#[derive(Clone, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct ClassCdf {
    /// Chance of class 63 rather than 64 (slot [`TOP_SLOT`]).
    pub(crate) top: u16,
    /// Chance of a positive sign (slot [`SIGN_SLOT`]).
    pub(crate) sign: u16,
    cum: [u16; SYMBOLS + 1],
    /// Per bucket of `2^BUCKET_SHIFT` targets, the symbol holding its
    /// first, plus [`SPLIT`] when another symbol holds one of the others.
    first: [u8; BUCKETS],
}

impl ClassCdf {
    /// The frequencies of the head symbols, and the top and sign
    /// probabilities, of a value context whose probabilities are `probs`
    /// (the context's slots, each in `1..PROB_ONE`; missing slots count as
    /// one half).
    pub(crate) fn from_nodes(probs: &[u16]) -> Self {
        let p = |slot: usize| u128::from(probs.get(slot).copied().unwrap_or(PROB_ONE / 2));
        let one = u128::from(PROB_ONE);
        let mut weight = [0u128; SYMBOLS];
        for leaf in 0..LEAVES {
            let mut node = 1usize;
            let mut product = 1u128;
            for i in (0..CLASS_BITS).rev() {
                let bit = (leaf >> i) & 1;
                product *= if bit == 1 {
                    one - p(node - 1)
                } else {
                    p(node - 1)
                };
                node = node * 2 + bit;
            }
            if leaf < 2 {
                weight[leaf] = product * one;
            } else {
                let p2 = p(second_slot(leaf as u32));
                weight[symbol(leaf as u32, false)] = product * p2;
                weight[symbol(leaf as u32, true)] = product * (one - p2);
            }
        }
        let shift = 12 * (CLASS_BITS + 1);
        let spread = u128::from(FREQ_TOTAL) - SYMBOLS as u128;
        let mut freq = [0u32; SYMBOLS];
        let mut sum = 0u32;
        for (f, &w) in freq.iter_mut().zip(&weight) {
            // w < 2^84 and spread < 2^15: the product fits.
            *f = 1 + ((w * spread) >> shift) as u32;
            sum += *f;
        }
        let mut top = 0;
        for (s, &w) in weight.iter().enumerate() {
            if w > weight[top] {
                top = s;
            }
        }
        freq[top] += FREQ_TOTAL - sum;
        let mut cum = [0u16; SYMBOLS + 1];
        let mut acc = 0u32;
        for (s, &f) in freq.iter().enumerate() {
            acc += f;
            cum[s + 1] = acc as u16;
        }
        let mut first = [0u8; BUCKETS];
        let mut s = 0usize;
        for (b, f) in first.iter_mut().enumerate() {
            while u32::from(cum[s + 1]) <= (b as u32) << BUCKET_SHIFT {
                s += 1;
            }
            let whole = u32::from(cum[s + 1]) >= (b as u32 + 1) << BUCKET_SHIFT;
            *f = s as u8 | if whole { 0 } else { SPLIT };
        }
        Self {
            top: p(TOP_SLOT) as u16,
            sign: p(SIGN_SLOT) as u16,
            cum,
            first,
        }
    }

    /// Symbol `s`'s start and frequency.
    #[inline(always)]
    pub(crate) fn range(&self, s: usize) -> (u32, u32) {
        let s = s.min(SYMBOLS - 1);
        let start = u32::from(self.cum[s]);
        (start, u32::from(self.cum[s + 1]) - start)
    }

    /// The symbol whose share holds `target` (below the total), with its
    /// start and frequency: the symbol of the target's bucket when it holds
    /// the whole bucket, else from that symbol on the first whose end is
    /// above `target` (measured against counting the symbol ends at or
    /// below `target`, vectorised: Quake 3 encode + decode 1-3% faster,
    /// racing decode 5%).
    #[inline(always)]
    pub(crate) fn find(&self, target: u32) -> (u32, u32, u32) {
        let entry = self.first[(target >> BUCKET_SHIFT) as usize & (BUCKETS - 1)];
        let mut s = usize::from(entry & !SPLIT);
        if entry & SPLIT != 0 {
            while s < SYMBOLS - 1 && u32::from(self.cum[s + 1]) <= target {
                s += 1;
            }
        }
        let (start, freq) = self.range(s);
        (s as u32, start, freq)
    }
}

/// Head symbols below this are leaves 0..=62, whose value needs no
/// decision after the head; leaf 63 (symbols 124 and 125) takes one more.
const PLAIN_SYMBOLS: usize = 2 * 63 - 2;

/// Per head symbol below [`PLAIN_SYMBOLS`]: the bits of its values above
/// their raw bits (the top bit and the bit below it), and how many raw
/// bits follow.
static PLAIN: [(u64, u32); PLAIN_SYMBOLS] = plain_table();

const fn plain_table() -> [(u64, u32); PLAIN_SYMBOLS] {
    let mut t = [(0u64, 0u32); PLAIN_SYMBOLS];
    t[1] = (1, 0);
    let mut s = 2;
    while s < PLAIN_SYMBOLS {
        // Leaf (= class) s / 2 + 1, second bit s & 1.
        let raw = s as u32 / 2 - 1;
        t[s] = ((2 | (s as u64 & 1)) << raw, raw);
        s += 1;
    }
    t
}

/// For head symbols of leaves 0..=62: the bits of the value above its raw
/// bits, and the count of raw bits (`None` for leaf 63).
#[inline(always)]
pub(crate) fn plain(s: u32) -> Option<(u64, u32)> {
    PLAIN.get(s as usize).copied()
}

/// The leaf and second bit of head symbol `s`.
#[inline(always)]
pub(crate) fn leaf_of(s: u32) -> (u32, bool) {
    if s < 2 {
        (s, false)
    } else {
        (s / 2 + 1, s & 1 == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_cover_the_total_with_every_symbol() {
        let mut probs = [0u16; 80];
        for (i, n) in probs.iter_mut().enumerate() {
            *n = (1 + (i as u32 * 977) % 4095) as u16;
        }
        for probs in [[2048u16; 80], [1; 80], [4095; 80], probs] {
            let cdf = ClassCdf::from_nodes(&probs);
            assert_eq!(cdf.cum[0], 0);
            assert_eq!(u32::from(cdf.cum[SYMBOLS]), FREQ_TOTAL);
            for s in 0..SYMBOLS {
                let (start, freq) = cdf.range(s);
                assert!(freq >= 1);
                for t in [start, start + freq - 1] {
                    assert_eq!(cdf.find(t), (s as u32, start, freq));
                }
            }
        }
    }

    #[test]
    fn lookup_finds_the_symbol_of_every_target() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut tables = vec![[2048u16; 80], [1; 80], [4095; 80]];
        for _ in 0..100 {
            let mut probs = [0u16; 80];
            for p in probs.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Skewed towards near-certain decisions, as trained tables are.
                *p = match x % 4 {
                    0 => 1 + (x >> 8) as u16 % 4095,
                    1 => 4095 - (x >> 8) as u16 % 64,
                    2 => 1 + (x >> 8) as u16 % 64,
                    _ => 2048,
                };
            }
            tables.push(probs);
        }
        for probs in tables {
            let cdf = ClassCdf::from_nodes(&probs);
            // Every target of every share.
            for s in 0..SYMBOLS {
                let (start, freq) = (
                    u32::from(cdf.cum[s]),
                    u32::from(cdf.cum[s + 1] - cdf.cum[s]),
                );
                for t in start..start + freq {
                    assert_eq!(cdf.find(t), (s as u32, start, freq), "target {t}");
                }
            }
        }
    }

    #[test]
    fn symbols_name_leaves_and_second_bits() {
        for leaf in 0..64 {
            for second in [false, true] {
                let second = second && leaf >= 2;
                let s = symbol(leaf, second);
                assert!(s < SYMBOLS);
                assert_eq!(leaf_of(s as u32), (leaf, second));
                // The value bits above the raw bits, as `get_uint` builds
                // them from the class and second bit.
                let want = match leaf {
                    63 => None,
                    0 | 1 => Some((u64::from(leaf), 0)),
                    c => Some(((1 << (c - 1)) | (u64::from(second) << (c - 2)), c - 2)),
                };
                assert_eq!(plain(s as u32), want, "leaf {leaf} second {second}");
            }
        }
    }

    #[test]
    fn a_value_context_takes_770_bytes() {
        // As `ModelTable::from_bytes_limited` documents.
        assert_eq!(core::mem::size_of::<ClassCdf>(), 770);
    }

    #[test]
    fn uniform_probabilities_give_near_equal_shares() {
        // 1 + floor(32642 / 64) = 511 for leaves 0 and 1, 1 + floor(32642 /
        // 128) = 256 for the others; the 2 left over go to symbol 0.
        let cdf = ClassCdf::from_nodes(&[2048; 80]);
        assert_eq!(cdf.range(0), (0, 513));
        assert_eq!(cdf.range(1), (513, 511));
        assert!((2..SYMBOLS).all(|s| cdf.range(s).1 == 256));
    }
}
