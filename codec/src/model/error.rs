//! Why a model table or a model stream was refused.

use core::fmt;

/// An error loading a [`ModelTable`](super::ModelTable) or coding with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelError {
    /// A serialized table is shorter than its fixed header and trailer.
    TableTooShort {
        /// Bytes given.
        actual: usize,
        /// The least a table can be.
        min: usize,
    },
    /// The table does not start with the `TPCM` magic.
    BadMagic {
        /// The first four bytes, little-endian.
        found: u32,
    },
    /// A table version this decoder does not know.
    UnsupportedVersion {
        /// Version byte found.
        version: u8,
    },
    /// The table's probability precision is not the one this coder uses.
    BadPrecision {
        /// Bits declared.
        bits: u8,
        /// Bits supported.
        expected: u8,
    },
    /// A reserved header field is not zero.
    ReservedNonZero {
        /// Its value.
        value: u16,
    },
    /// The table declares more probability slots than the limit allows.
    TooManySlots {
        /// Slots declared (bit contexts plus value contexts times
        /// 80, the value slots).
        slots: u64,
        /// The limit.
        limit: u64,
    },
    /// The table's length does not match what its header and presence
    /// bitmap say.
    TableLength {
        /// Bytes the header and bitmap require.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// A probability list does not have one entry per slot.
    SlotCount {
        /// Slots of the shape.
        expected: usize,
        /// Probabilities given.
        actual: usize,
    },
    /// A stored probability is 0 or at least `1 << PROB_BITS`.
    BadProbability {
        /// Slot index.
        slot: usize,
        /// Stored value.
        value: u16,
    },
    /// A slot marked present holds the prior (2048), which a table writes
    /// absent: a second spelling of the same table.
    PresentPrior {
        /// Slot index.
        slot: usize,
    },
    /// Presence bits beyond the last slot are set.
    BitmapPadding,
    /// The table's trailing xxh3 checksum does not match its bytes.
    Checksum {
        /// Checksum stored in the table.
        stored: u64,
        /// Checksum of the bytes.
        computed: u64,
    },
    /// A bit context index at or above the table's count.
    BitContext {
        /// Index used.
        ctx: u32,
        /// Contexts in the table.
        count: u32,
    },
    /// A value context index at or above the table's count.
    ValueContext {
        /// Index used.
        ctx: u32,
        /// Contexts in the table.
        count: u32,
    },
    /// A payload-walk context number the schema's context map has no
    /// context for.
    WalkContext {
        /// The walk's context number.
        ctx: u32,
        /// Dense contexts of that kind in the map.
        count: u32,
    },
    /// Two shapes (a table and statistics) disagree.
    ShapeMismatch {
        /// Bit contexts on the left.
        bit_contexts: u32,
        /// Value contexts on the left.
        value_contexts: u32,
        /// Bit contexts on the right.
        other_bit_contexts: u32,
        /// Value contexts on the right.
        other_value_contexts: u32,
    },
    /// The stream's first four bytes are `ff ff ff ff`, a value no encoder
    /// produces.
    BadStart,
    /// A signed value's magnitude and sign do not form a 64-bit zigzag value.
    BadSign,
    /// The stream reached a state no encoder produces.
    Corrupt,
    /// The stream holds bytes after the last one the decoder needed.
    Trailing {
        /// Stream length.
        len: usize,
        /// Bytes the decoder consumed.
        consumed: usize,
    },
    /// The raw-bit stream reaches into the coded bytes the decoder read
    /// before its last four, or past the block's start.
    Overlap {
        /// Stream length.
        len: usize,
        /// Coded bytes the decoder consumed (its lookahead included).
        coded: usize,
        /// Bytes of the raw-bit stream.
        raw: usize,
    },
    /// The raw-bit stream's padding bits are not zero.
    Padding,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TableTooShort { actual, min } => {
                write!(f, "model table is {actual} bytes, at least {min} needed")
            }
            Self::BadMagic { found } => write!(f, "model table magic is {found:#010x}"),
            Self::UnsupportedVersion { version } => {
                write!(f, "model table version {version} is not supported")
            }
            Self::BadPrecision { bits, expected } => {
                write!(
                    f,
                    "model table has {bits}-bit probabilities, not {expected}"
                )
            }
            Self::ReservedNonZero { value } => {
                write!(f, "model table reserved field is {value:#06x}, not 0")
            }
            Self::TooManySlots { slots, limit } => {
                write!(f, "model table has {slots} slots, limit is {limit}")
            }
            Self::TableLength { expected, actual } => {
                write!(
                    f,
                    "model table is {actual} bytes, its header says {expected}"
                )
            }
            Self::SlotCount { expected, actual } => {
                write!(f, "{actual} probabilities for {expected} slots")
            }
            Self::BadProbability { slot, value } => {
                write!(f, "model slot {slot} has probability {value}")
            }
            Self::PresentPrior { slot } => {
                write!(f, "model slot {slot} is present with the prior 2048")
            }
            Self::BitmapPadding => write!(f, "model table bitmap padding is not zero"),
            Self::Checksum { stored, computed } => write!(
                f,
                "model table checksum {stored:#018x} does not match {computed:#018x}"
            ),
            Self::BitContext { ctx, count } => {
                write!(f, "bit context {ctx} used, table has {count}")
            }
            Self::ValueContext { ctx, count } => {
                write!(f, "value context {ctx} used, table has {count}")
            }
            Self::WalkContext { ctx, count } => {
                write!(
                    f,
                    "walk context {ctx:#010x} has no model context (map has {count})"
                )
            }
            Self::ShapeMismatch {
                bit_contexts,
                value_contexts,
                other_bit_contexts,
                other_value_contexts,
            } => write!(
                f,
                "model shapes differ: {bit_contexts}+{value_contexts} vs \
                 {other_bit_contexts}+{other_value_contexts} contexts"
            ),
            Self::BadStart => write!(f, "model stream starts with ff ff ff ff"),
            Self::BadSign => write!(f, "model stream decodes a signed value out of range"),
            Self::Corrupt => write!(f, "model stream is corrupt"),
            Self::Trailing { len, consumed } => write!(
                f,
                "model stream is {len} bytes, the decoder used {consumed}"
            ),
            Self::Overlap { len, coded, raw } => write!(
                f,
                "model stream of {len} bytes: {raw} raw bytes overlap {coded} coded bytes"
            ),
            Self::Padding => write!(f, "model stream's raw padding bits are not zero"),
        }
    }
}

impl std::error::Error for ModelError {}
