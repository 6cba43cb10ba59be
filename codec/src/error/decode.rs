//! The decoder's error: one variant per rejection rule of the wire format.

use core::fmt;

use super::SnapshotError;

/// An error decoding a packet. Whatever the bytes, decoding returns one of
/// these rather than panicking, and the output is left empty.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended at `offset` while `needed` more bytes were expected.
    Truncated {
        /// Byte offset within the packet (or decoded payload) where data ran out.
        offset: usize,
        /// Bytes still needed.
        needed: usize,
    },
    /// The packet's format version is not one this decoder reads.
    UnsupportedVersion {
        /// Version found.
        version: u8,
    },
    /// Reserved header bits are set.
    ReservedBits {
        /// The flags byte.
        flags: u8,
    },
    /// A varint is longer than 5 bytes, overflows 32 bits, or is not minimal.
    BadVarint {
        /// Offset of its first byte.
        offset: usize,
    },
    /// The packet was made with a different schema.
    SchemaMismatch {
        /// Schema id of the decoder.
        expected: u32,
        /// Schema id in the packet.
        actual: u32,
    },
    /// The packet is a delta, but no baseline was supplied.
    MissingBaseline {
        /// Baseline sequence the packet names.
        sequence: u16,
    },
    /// The supplied baseline is not the one the packet names.
    BaselineMismatch {
        /// Sequence the packet names.
        expected: u16,
        /// Sequence of the baseline supplied.
        actual: u16,
    },
    /// A baseline distance of zero.
    BadBaselineDistance,
    /// The packet predicts from a prior baseline, but none was supplied.
    MissingPrior {
        /// Prior sequence the packet names.
        sequence: u16,
    },
    /// The supplied prior is not the one the packet names.
    PriorMismatch {
        /// Sequence the packet names.
        expected: u16,
        /// Sequence of the prior supplied.
        actual: u16,
    },
    /// A section's spawned rows are coded against the baseline's recall,
    /// but none was supplied.
    MissingRecall {
        /// The section.
        section: usize,
        /// Baseline sequence the packet names.
        sequence: u16,
    },
    /// The supplied recall is not the recall of the baseline the packet
    /// names.
    RecallMismatch {
        /// Baseline sequence the packet names.
        expected: u16,
        /// Sequence of the supplied recall.
        actual: u16,
    },
    /// The packet names a dictionary the decoder does not hold.
    UnknownDictionary {
        /// Dictionary id in the packet.
        id: u32,
    },
    /// A model block, but the packet's dictionary has no model table for
    /// this schema (none, or one of another shape).
    MissingModelTable {
        /// Byte offset of the model block (its body: the header has its flag).
        offset: usize,
    },
    /// A model block is malformed.
    Model {
        /// Byte offset of the block body.
        offset: usize,
        /// What the model decoder found.
        error: crate::model::ModelError,
    },
    /// A block size is 0 or above 32768 (or a last block's body is).
    BadBlockSize {
        /// Byte offset of the size field.
        offset: usize,
    },
    /// A block header sits past the end of the packet, or no block had the last bit.
    MissingLastBlock,
    /// Blocks whose payload leaves every section unchanged: a second
    /// spelling of the empty payload (no blocks), which an encoder must send
    /// instead (FORMAT.md 3.4).
    NonCanonical,
    /// Bytes follow the last block.
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// A zstd block regenerated more than its limit, or the payload grew past
    /// [`Limits::max_decoded_bytes`](crate::Limits::max_decoded_bytes).
    DecodedTooLarge {
        /// Configured limit.
        limit: usize,
    },
    /// zstd rejected a compressed block.
    Zstd {
        /// Byte offset of the block header.
        offset: usize,
        /// zstd's error name.
        message: &'static str,
    },
    /// The snapshot would hold more bytes (entities times record size plus
    /// 4) than [`Limits::max_snapshot_bytes`](crate::Limits::max_snapshot_bytes).
    SnapshotTooLarge {
        /// The snapshot's bytes.
        bytes: usize,
        /// Configured limit.
        limit: usize,
    },
    /// A section announces more entities than the configured limit.
    TooManyEntities {
        /// Section index.
        section: usize,
        /// Entities announced.
        count: usize,
        /// Configured limit.
        limit: usize,
    },
    /// An entity set (despawned or changed) is malformed: unknown mode, an
    /// index out of range, or a count that disagrees with the universe.
    BadEntitySet {
        /// Section index.
        section: usize,
    },
    /// A row's element mask is malformed: a group marked changed with no
    /// changed element, or a changed entity whose mask changes nothing.
    BadMask {
        /// Section index.
        section: usize,
        /// Row within the section (changed rows, then spawned rows).
        row: usize,
    },
    /// An element value does not fit: wider than the element, an integral
    /// float out of range, or a value that leaves the element equal to its
    /// reference although the mask says it changed.
    BadValue {
        /// Section index.
        section: usize,
        /// Row within the section.
        row: usize,
        /// Element index in the record.
        element: usize,
    },
    /// Unused bits of a bit-packed payload byte are not zero.
    NonZeroPadding {
        /// Offset within the decoded payload.
        offset: usize,
    },
    /// The packet says it was compressed with the dictionary agreed for its
    /// kind (keyframe or delta), and the decoder has none agreed.
    NoAgreedDictionary {
        /// Whether the packet is a keyframe.
        keyframe: bool,
    },
    /// The packet names a dictionary other than the one agreed.
    DictionaryMismatch {
        /// The dictionary the decoder agreed to.
        expected: u32,
        /// The dictionary the packet names.
        actual: u32,
    },
    /// An entity id would exceed `u32::MAX`.
    IdOverflow {
        /// Section index.
        section: usize,
    },
    /// A spawned entity id is already present.
    DuplicateEntity {
        /// Section index.
        section: usize,
        /// The repeated id.
        id: u32,
    },
    /// The decoded payload has bytes left after the last section.
    PayloadTrailing {
        /// How many.
        count: usize,
    },
    /// The baseline snapshot does not fit the decoder's schema.
    BadBaseline(SnapshotError),
    /// The decoded snapshot does not match the packet's checksum: the
    /// baseline held is not the one the sender used. Resynchronise.
    ChecksumMismatch {
        /// Checksum in the packet.
        expected: u16,
        /// Checksum of what was decoded.
        actual: u16,
    },
    /// A quantised field decoded to a code outside its limits (or to
    /// quaternion codes that are not canonical).
    BadQuantCode {
        /// Entity type index.
        section: usize,
        /// Entity id.
        id: u32,
        /// Field index.
        field: usize,
        /// Array element.
        element: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { offset, needed } => {
                write!(
                    f,
                    "input ends at offset {offset}, {needed} more bytes needed"
                )
            }
            Self::UnsupportedVersion { version } => {
                write!(f, "unsupported format version {version}")
            }
            Self::ReservedBits { flags } => write!(f, "reserved bits set in flags {flags:#04x}"),
            Self::BadVarint { offset } => write!(f, "malformed varint at offset {offset}"),
            Self::SchemaMismatch { expected, actual } => write!(
                f,
                "packet schema {actual:#010x} differs from decoder schema {expected:#010x}"
            ),
            Self::MissingBaseline { sequence } => {
                write!(f, "packet is a delta against {sequence}, no baseline given")
            }
            Self::BaselineMismatch { expected, actual } => write!(
                f,
                "packet is a delta against {expected}, baseline given is {actual}"
            ),
            Self::BadBaselineDistance => write!(f, "baseline distance of zero"),
            Self::MissingRecall { section, sequence } => write!(
                f,
                "section {section} is coded against the recall of baseline {sequence}, which was not supplied"
            ),
            Self::RecallMismatch { expected, actual } => write!(
                f,
                "packet needs the recall of baseline {expected}, got the recall of {actual}"
            ),
            Self::MissingPrior { sequence } => {
                write!(f, "packet predicts from prior {sequence}, none given")
            }
            Self::PriorMismatch { expected, actual } => write!(
                f,
                "packet predicts from prior {expected}, prior given is {actual}"
            ),
            Self::UnknownDictionary { id } => write!(f, "unknown dictionary {id:#010x}"),
            Self::MissingModelTable { offset } => {
                write!(f, "model block at offset {offset} without a model table")
            }
            Self::Model { offset, error } => {
                write!(f, "model block at offset {offset}: {error}")
            }
            Self::BadBlockSize { offset } => write!(f, "bad block size at offset {offset}"),
            Self::MissingLastBlock => write!(f, "no block is marked last"),
            Self::NonCanonical => write!(
                f,
                "blocks that change nothing: the empty payload has no blocks"
            ),
            Self::TrailingBytes { count } => write!(f, "{count} bytes after the last block"),
            Self::SnapshotTooLarge { bytes, limit } => {
                write!(f, "snapshot of {bytes} bytes exceeds the limit of {limit}")
            }
            Self::DecodedTooLarge { limit } => {
                write!(f, "decoded data exceeds the limit of {limit} bytes")
            }
            Self::Zstd { offset, message } => {
                write!(f, "zstd block at offset {offset}: {message}")
            }
            Self::TooManyEntities {
                section,
                count,
                limit,
            } => write!(
                f,
                "section {section} announces {count} entities, limit is {limit}"
            ),
            Self::BadEntitySet { section } => {
                write!(f, "malformed entity set in section {section}")
            }
            Self::BadMask { section, row } => {
                write!(f, "malformed element mask in section {section}, row {row}")
            }
            Self::BadValue {
                section,
                row,
                element,
            } => write!(
                f,
                "bad value for element {element} in section {section}, row {row}"
            ),
            Self::NonZeroPadding { offset } => {
                write!(f, "non-zero padding bits at payload offset {offset}")
            }
            Self::NoAgreedDictionary { keyframe } => write!(
                f,
                "packet uses the agreed {} dictionary, none is agreed",
                if *keyframe { "keyframe" } else { "delta" }
            ),
            Self::DictionaryMismatch { expected, actual } => write!(
                f,
                "packet names dictionary {actual:#010x}, agreed is {expected:#010x}"
            ),
            Self::IdOverflow { section } => write!(f, "entity id overflow in section {section}"),
            Self::DuplicateEntity { section, id } => {
                write!(f, "entity {id} spawned twice in section {section}")
            }
            Self::PayloadTrailing { count } => {
                write!(f, "{count} payload bytes after the last section")
            }
            Self::BadBaseline(e) => write!(f, "baseline does not fit the schema: {e}"),
            Self::ChecksumMismatch { expected, actual } => write!(
                f,
                "decoded snapshot has checksum {actual:#06x}, packet says {expected:#06x}"
            ),
            Self::BadQuantCode {
                section,
                id,
                field,
                element,
            } => write!(
                f,
                "section {section} entity {id} field {field}[{element}] has an invalid quantisation code"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}
