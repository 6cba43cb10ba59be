//! Model tables: one quantised probability per slot, built from training
//! counts, and their serialized form.
//!
//! ```text
//! offset  size  field
//! 0       4     magic "TPCM"
//! 4       1     version (1)
//! 5       1     probability bits (12)
//! 6       2     flags (u16 LE): bit 0 changed-entity flags, bit 1
//!               element history, bit 2 previous value; other bits 0
//! 8       4     bit contexts B (u32 LE)
//! 12      4     value contexts V (u32 LE)
//! 16      ⌈S/8⌉ presence bitmap over the S = B + 80·V slots, LSB first;
//!               bits past S are 0
//! ...     2·k   one u16 LE probability (1..=4095) per present slot, in slot
//!               order; absent slots hold 2048
//! ...     8     xxh3-64 of every byte before it (u64 LE)
//! ```

use super::classes::ClassCdf;
use super::range::{PROB_BITS, PROB_ONE};
use super::value::VALUE_SLOTS;
use super::ModelError;
#[cfg(feature = "training")]
use super::ModelStats;

const MAGIC: [u8; 4] = *b"TPCM";
const VERSION: u8 = 1;
const HEADER_LEN: usize = 16;
const CHECKSUM_LEN: usize = 8;
/// The probability of a slot training never reached: one half.
pub const PRIOR: u16 = PROB_ONE / 2;
/// Default cap on a loaded table's slots (2 MiB of probabilities).
pub const DEFAULT_MAX_SLOTS: usize = 1 << 20;

/// How many contexts of each kind a model has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ModelShape {
    /// Contexts of single binary decisions.
    pub bit_contexts: u32,
    /// Contexts of multi-bit values, 80 probabilities (`VALUE_SLOTS`) each.
    pub value_contexts: u32,
}

impl ModelShape {
    /// Probability slots: bit contexts plus value contexts times 80
    /// (`VALUE_SLOTS`).
    pub fn slots(&self) -> u64 {
        u64::from(self.bit_contexts) + u64::from(self.value_contexts) * VALUE_SLOTS as u64
    }

    pub(crate) fn mismatch(&self, other: &ModelShape) -> ModelError {
        ModelError::ShapeMismatch {
            bit_contexts: self.bit_contexts,
            value_contexts: self.value_contexts,
            other_bit_contexts: other.bit_contexts,
            other_value_contexts: other.value_contexts,
        }
    }
}

/// Static probabilities for every slot of a [`ModelShape`]: bit contexts
/// first (slot `ctx`), then value contexts (slots from
/// `B + ctx · VALUE_SLOTS`).
#[derive(Clone, PartialEq, Eq)]
pub struct ModelTable {
    shape: ModelShape,
    /// The contexts the table is for ([`ModelTable::flags`]).
    flags: u16,
    /// Chance of a 0 per slot, in `1..PROB_ONE`.
    probs: Vec<u16>,
    /// Per value context, what the coder reads of it (derived from
    /// `probs`).
    values: Vec<ClassCdf>,
}

impl core::fmt::Debug for ModelTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ModelTable")
            .field("shape", &self.shape)
            .finish()
    }
}

/// Quantises counts with the Krichevsky–Trofimov estimate
/// `(n0 + 1/2) / (n0 + n1 + 1)`, rounded to the nearest `1 / PROB_ONE` and
/// clamped to `1..PROB_ONE`; no counts give [`PRIOR`].
pub fn quantise(n0: u64, n1: u64) -> u16 {
    let n0 = u128::from(n0);
    let n = n0 + u128::from(n1);
    // round(PROB_ONE * (2·n0 + 1) / (2·(n + 1)))
    let den = 2 * (n + 1);
    let p = ((2 * n0 + 1) * u128::from(PROB_ONE) + den / 2) / den;
    p.clamp(1, u128::from(PROB_ONE - 1)) as u16
}

impl ModelTable {
    /// A table with every slot at [`PRIOR`] (each decision costs one bit).
    #[cfg(feature = "training")]
    pub fn uniform(shape: ModelShape) -> Result<Self, ModelError> {
        check_slots(shape, DEFAULT_MAX_SLOTS)?;
        Ok(Self::build(shape, vec![PRIOR; shape.slots() as usize]))
    }

    /// A table with the given probability of a 0 for every slot (bit
    /// contexts first, then value contexts), each in `1..4096`.
    pub fn from_probabilities(shape: ModelShape, probs: Vec<u16>) -> Result<Self, ModelError> {
        let slots = check_slots(shape, DEFAULT_MAX_SLOTS)?;
        if probs.len() != slots {
            return Err(ModelError::SlotCount {
                expected: slots,
                actual: probs.len(),
            });
        }
        if let Some((slot, &value)) = probs
            .iter()
            .enumerate()
            .find(|(_, &p)| p == 0 || p >= PROB_ONE)
        {
            return Err(ModelError::BadProbability { slot, value });
        }
        Ok(Self::build(shape, probs))
    }

    /// Quantises training counts (see [`quantise`]).
    #[cfg(feature = "training")]
    pub fn from_stats(stats: &ModelStats) -> Self {
        Self::build(
            stats.shape(),
            stats
                .counts()
                .iter()
                .map(|&[n0, n1]| quantise(n0, n1))
                .collect(),
        )
    }

    /// The table of `probs` (one per slot of `shape`, each in
    /// `1..PROB_ONE`) with its head frequencies.
    fn build(shape: ModelShape, probs: Vec<u16>) -> Self {
        let bits = shape.bit_contexts as usize;
        let values = probs
            .get(bits..)
            .unwrap_or_default()
            .chunks_exact(VALUE_SLOTS)
            .map(ClassCdf::from_nodes)
            .collect();
        Self {
            shape,
            flags: 0,
            probs,
            values,
        }
    }

    /// The table's shape.
    pub fn shape(&self) -> ModelShape {
        self.shape
    }

    /// The contexts the table was trained for, beside its shape
    /// (`ContextConfig::FLAG_CHANGED`, feature `training`): a table codes
    /// packets with the context map of its flags, whose shape it must have.
    pub fn flags(&self) -> u16 {
        self.flags
    }

    /// The same table marked as trained for the contexts of `flags`;
    /// [`ModelError::ReservedNonZero`] for flags this version does not
    /// know.
    pub fn with_flags(self, flags: u16) -> Result<Self, ModelError> {
        if flags & !super::contexts::ContextConfig::KNOWN_FLAGS != 0 {
            return Err(ModelError::ReservedNonZero { value: flags });
        }
        Ok(Self { flags, ..self })
    }

    /// Every slot's probability of a 0, in `1..4096`.
    pub fn probabilities(&self) -> &[u16] {
        &self.probs
    }

    /// What the coder reads of value context `ctx`, if the table has it.
    #[inline]
    pub(crate) fn value_model(&self, ctx: u32) -> Option<&ClassCdf> {
        self.values.get(ctx as usize)
    }

    #[inline]
    pub(crate) fn prob(&self, slot: usize) -> u16 {
        self.probs[slot]
    }

    /// The serialized table (format in the module docs and FORMAT.md).
    pub fn to_bytes(&self) -> Vec<u8> {
        let slots = self.probs.len();
        let present = self.probs.iter().filter(|&&p| p != PRIOR).count();
        let mut out = Vec::with_capacity(HEADER_LEN + slots.div_ceil(8) + 2 * present + 8);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(PROB_BITS as u8);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.shape.bit_contexts.to_le_bytes());
        out.extend_from_slice(&self.shape.value_contexts.to_le_bytes());
        let bitmap_at = out.len();
        out.resize(bitmap_at + slots.div_ceil(8), 0);
        for (i, &p) in self.probs.iter().enumerate() {
            if p != PRIOR {
                out[bitmap_at + i / 8] |= 1 << (i % 8);
            }
        }
        for &p in self.probs.iter().filter(|&&p| p != PRIOR) {
            out.extend_from_slice(&p.to_le_bytes());
        }
        let sum = xxhash_rust::xxh3::xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Loads a serialized table of at most [`DEFAULT_MAX_SLOTS`] slots.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ModelError> {
        Self::from_bytes_limited(bytes, DEFAULT_MAX_SLOTS)
    }

    /// Loads a serialized table of at most `max_slots` slots. Every field is
    /// checked before anything is allocated; the table holds at most
    /// `2 · max_slots` bytes of probabilities plus 770 bytes of head
    /// frequencies, their lookup and two probabilities per value context
    /// (at most `max_slots / 80` of them).
    pub fn from_bytes_limited(bytes: &[u8], max_slots: usize) -> Result<Self, ModelError> {
        let min = HEADER_LEN + CHECKSUM_LEN;
        if bytes.len() < min {
            return Err(ModelError::TableTooShort {
                actual: bytes.len(),
                min,
            });
        }
        let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        let u32_at =
            |at: usize| u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
        if body[..4] != MAGIC {
            return Err(ModelError::BadMagic { found: u32_at(0) });
        }
        if body[4] != VERSION {
            return Err(ModelError::UnsupportedVersion { version: body[4] });
        }
        if u32::from(body[5]) != PROB_BITS {
            return Err(ModelError::BadPrecision {
                bits: body[5],
                expected: PROB_BITS as u8,
            });
        }
        let flags = u16::from_le_bytes([body[6], body[7]]);
        if flags & !super::contexts::ContextConfig::KNOWN_FLAGS != 0 {
            return Err(ModelError::ReservedNonZero { value: flags });
        }
        let shape = ModelShape {
            bit_contexts: u32_at(8),
            value_contexts: u32_at(12),
        };
        let slots = check_slots(shape, max_slots)?;
        let bitmap_len = slots.div_ceil(8);
        let Some(bitmap) = body.get(HEADER_LEN..HEADER_LEN + bitmap_len) else {
            return Err(ModelError::TableLength {
                expected: HEADER_LEN + bitmap_len + CHECKSUM_LEN,
                actual: bytes.len(),
            });
        };
        let present: usize = bitmap.iter().map(|b| b.count_ones() as usize).sum();
        let expected = HEADER_LEN + bitmap_len + 2 * present + CHECKSUM_LEN;
        if bytes.len() != expected {
            return Err(ModelError::TableLength {
                expected,
                actual: bytes.len(),
            });
        }
        if slots % 8 != 0 && bitmap[bitmap_len - 1] >> (slots % 8) != 0 {
            return Err(ModelError::BitmapPadding);
        }
        let stored = u64::from_le_bytes(sum.try_into().map_err(|_| ModelError::Corrupt)?);
        let computed = xxhash_rust::xxh3::xxh3_64(body);
        if stored != computed {
            return Err(ModelError::Checksum { stored, computed });
        }
        let mut values = body[HEADER_LEN + bitmap_len..]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]));
        let mut probs = vec![PRIOR; slots];
        for (slot, p) in probs.iter_mut().enumerate() {
            if bitmap[slot / 8] >> (slot % 8) & 1 == 1 {
                let value = values.next().ok_or(ModelError::Corrupt)?;
                if value == 0 || value >= PROB_ONE {
                    return Err(ModelError::BadProbability { slot, value });
                }
                // The prior is written absent: one byte form per table.
                if value == PRIOR {
                    return Err(ModelError::PresentPrior { slot });
                }
                *p = value;
            }
        }
        Self::build(shape, probs).with_flags(flags)
    }
}

/// The shape's slot count, or `TooManySlots` above `max_slots`.
pub(crate) fn check_slots(shape: ModelShape, max_slots: usize) -> Result<usize, ModelError> {
    let slots = shape.slots();
    if slots > max_slots as u64 {
        return Err(ModelError::TooManySlots {
            slots,
            limit: max_slots as u64,
        });
    }
    Ok(slots as usize)
}
