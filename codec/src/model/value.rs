//! How a value becomes decisions: its bit-length class as a leaf of a
//! 6-level binary tree (classes 63 and 64 share a leaf and one more
//! decision) and the bit below the top bit with its own probability (the
//! head: training counts these decisions, the coder codes leaf and second
//! bit as one symbol, see [`classes`](super::classes)), the remaining bits
//! raw, and for signed (zigzag) values a modelled sign.
//!
//! The [`VALUE_SLOTS`] probabilities of one value context:
//!
//! | slots    | decision |
//! |----------|----------|
//! | 0..=62   | class tree node `n` (1..=63) at slot `n - 1`, leaf `min(c, 63)` |
//! | 63       | class 64 rather than 63 |
//! | 64..=78  | bit below the top bit, class `c` (2..) at `64 + min(c - 2, 14)` |
//! | 79       | sign of a non-zero signed value (1 = negative) |

use super::ModelError;

/// Probability slots per value context.
pub const VALUE_SLOTS: usize = 80;
/// Levels of the class tree: leaves 0..=63.
pub(crate) const CLASS_BITS: u32 = 6;
pub(crate) const TOP_SLOT: usize = 63;
const SECOND_SLOT: usize = 64;
const SECOND_SLOTS: u32 = 15;
pub(crate) const SIGN_SLOT: usize = 79;

/// Something binary decisions go to: the range coder, counters, a cost sum.
pub(crate) trait Decisions {
    /// One modelled decision in probability slot `slot`.
    fn decision(&mut self, slot: usize, bit: bool);
    /// The low `n` bits of `v`, raw.
    fn raw(&mut self, v: u64, n: u32);
    /// The class `class` (0..=64) of a value in the context starting at
    /// `base` and, for classes from 2, the bit below its top bit: here
    /// [`CLASS_BITS`] tree decisions from the root, each at its node's
    /// slot, for leaf 63 the decision between classes 63 and 64, then the
    /// second bit's decision (the coder codes leaf and second bit as one
    /// symbol instead).
    #[inline]
    fn head(&mut self, base: usize, class: u32, second: bool) {
        let leaf = class.min(63);
        let mut node = 1usize;
        for i in (0..CLASS_BITS).rev() {
            let b = (leaf >> i) & 1 == 1;
            self.decision(base + node - 1, b);
            node = node * 2 + usize::from(b);
        }
        if leaf == 63 {
            self.decision(base + TOP_SLOT, class == 64);
        }
        if class >= 2 {
            self.decision(base + second_slot(class), second);
        }
    }
}

/// Something binary decisions come from.
pub(crate) trait DecisionSource {
    /// One modelled decision from probability slot `slot`.
    fn decision(&mut self, slot: usize) -> bool;
    /// `n` raw bits, as one number.
    fn raw(&mut self, n: u32) -> Result<u64, ModelError>;
    /// The class and second bit [`Decisions::head`] emitted in the
    /// context starting at `base` (the second bit is `false` below
    /// class 2). The coder reads the head as one symbol, in its own
    /// value decoder; this is the reference its tests compare with.
    #[cfg(test)]
    fn head(&mut self, base: usize) -> Result<(u32, bool), ModelError> {
        let mut node = 1usize;
        for _ in 0..CLASS_BITS {
            let b = self.decision(base + node - 1);
            node = node * 2 + usize::from(b);
        }
        let mut class = (node - (1 << CLASS_BITS)) as u32;
        if class == 63 && self.decision(base + TOP_SLOT) {
            class = 64;
        }
        let second = class >= 2 && self.decision(base + second_slot(class));
        Ok((class, second))
    }
}

/// The bit-length class of `v`: 0 for 0, else the position of its top bit
/// plus one (1..=64).
#[inline]
pub fn class_of(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// The slot (from a context's base) of the second bit of class `class`
/// (2..=64).
#[inline]
pub(crate) fn second_slot(class: u32) -> usize {
    SECOND_SLOT + (class - 2).min(SECOND_SLOTS - 1) as usize
}

/// Emits the decisions of unsigned `v` into the context starting at `base`.
#[inline(always)]
pub(crate) fn put_uint<D: Decisions>(d: &mut D, base: usize, v: u64) {
    let class = class_of(v);
    let second = class >= 2 && (v >> (class - 2)) & 1 == 1;
    d.head(base, class, second);
    if class >= 2 {
        d.raw(v, class - 2);
    }
}

/// Emits the decisions of zigzag value `zz`: the magnitude as unsigned,
/// then the sign when the magnitude is not zero.
#[inline(always)]
pub(crate) fn put_sint<D: Decisions>(d: &mut D, base: usize, zz: u64) {
    let magnitude = (zz >> 1) + (zz & 1);
    put_uint(d, base, magnitude);
    if magnitude != 0 {
        d.decision(base + SIGN_SLOT, zz & 1 == 1);
    }
}

/// Reads an unsigned value from the context starting at `base` (the
/// reference of the coder's value decoder, which takes the value bits
/// above the raw bits from the head symbol).
#[cfg(test)]
pub(crate) fn get_uint<S: DecisionSource>(s: &mut S, base: usize) -> Result<u64, ModelError> {
    let (class, second) = s.head(base)?;
    get_rest(s, class, second)
}

/// Reads the raw bits of an unsigned value whose head is `class` and
/// `second`, and returns the value.
#[inline(always)]
pub(crate) fn get_rest<S: DecisionSource>(
    s: &mut S,
    class: u32,
    second: bool,
) -> Result<u64, ModelError> {
    match class {
        0 => Ok(0),
        1 => Ok(1),
        _ => {
            let second = u64::from(second);
            let rest = s.raw(class - 2)?;
            Ok((1u64 << (class - 1)) | (second << (class - 2)) | rest)
        }
    }
}

/// Reads a zigzag value from the context starting at `base` (the
/// reference of the coder's value decoder).
#[cfg(test)]
pub(crate) fn get_sint<S: DecisionSource>(s: &mut S, base: usize) -> Result<u64, ModelError> {
    let magnitude = get_uint(s, base)?;
    get_sign(s, base, magnitude)
}

/// Reads the sign of a zigzag value of magnitude `magnitude` from the
/// context starting at `base`, and returns the zigzag value.
#[inline(always)]
pub(crate) fn get_sign<S: DecisionSource>(
    s: &mut S,
    base: usize,
    magnitude: u64,
) -> Result<u64, ModelError> {
    if magnitude == 0 {
        return Ok(0);
    }
    let negative = s.decision(base + SIGN_SLOT);
    // Magnitudes reach 1 << 63 only for the zigzag value u64::MAX.
    if magnitude > 1 << 63 || (magnitude == 1 << 63 && !negative) {
        return Err(ModelError::BadSign);
    }
    Ok(magnitude.wrapping_mul(2).wrapping_sub(u64::from(negative)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(Vec<(usize, bool)>, Vec<bool>);

    impl Decisions for Log {
        fn decision(&mut self, slot: usize, bit: bool) {
            self.0.push((slot, bit));
        }
        fn raw(&mut self, v: u64, n: u32) {
            for i in (0..n).rev() {
                self.1.push((v >> i) & 1 == 1);
            }
        }
    }

    impl DecisionSource for Log {
        fn decision(&mut self, slot: usize) -> bool {
            let (s, b) = self.0.remove(0);
            assert_eq!(s, slot);
            b
        }
        fn raw(&mut self, n: u32) -> Result<u64, ModelError> {
            let mut v = 0;
            for _ in 0..n {
                v = (v << 1) | u64::from(self.1.remove(0));
            }
            Ok(v)
        }
    }

    #[test]
    fn values_round_trip_through_decisions() {
        let values = [0, 1, 2, 3, 4, 5, 255, 256, 1 << 40, u64::MAX - 1, u64::MAX];
        for &v in &values {
            let mut log = Log::default();
            put_uint(&mut log, 0, v);
            assert!(log.0.iter().all(|&(s, _)| s < VALUE_SLOTS));
            assert_eq!(get_uint(&mut log, 0), Ok(v));
            assert!(log.0.is_empty() && log.1.is_empty());
            put_sint(&mut log, 0, v);
            assert_eq!(get_sint(&mut log, 0), Ok(v));
            assert!(log.0.is_empty() && log.1.is_empty());
        }
    }

    #[test]
    fn bad_signs_are_errors() {
        // Magnitude 1 << 63 with a positive sign has no zigzag value.
        let mut log = Log::default();
        put_uint(&mut log, 0, 1 << 63);
        log.0.push((SIGN_SLOT, false));
        assert_eq!(get_sint(&mut log, 0), Err(ModelError::BadSign));
    }
}
