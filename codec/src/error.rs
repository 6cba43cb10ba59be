//! Typed errors. Every variant carries the numbers involved so a log line is
//! enough to tell what went wrong.

#![forbid(unsafe_code)]

use core::fmt;

/// An error building or loading a [`Schema`](crate::Schema).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema has no entity types.
    NoSections,
    /// More entity types than [`MAX_SECTIONS`](crate::schema::MAX_SECTIONS).
    TooManySections {
        /// Number declared.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// An entity type has no fields.
    NoFields {
        /// Entity type name.
        entity: String,
    },
    /// A record would be larger than [`MAX_RECORD_SIZE`](crate::schema::MAX_RECORD_SIZE).
    RecordTooLarge {
        /// Entity type name.
        entity: String,
        /// Size the fields add up to.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// An array field with length 0 or above the limit.
    BadArrayLength {
        /// Field name.
        field: String,
        /// Declared length.
        len: usize,
    },
    /// Two fields (or two entity types) share a name.
    DuplicateName {
        /// The repeated name.
        name: String,
    },
    /// A name is empty or longer than 255 bytes.
    BadName {
        /// The offending name.
        name: String,
    },
    /// The default record does not have the record size.
    DefaultRecordSize {
        /// Entity type name.
        entity: String,
        /// Expected size.
        expected: usize,
        /// Given size.
        actual: usize,
    },
    /// A `#[repr(C)]` struct does not match the entity type.
    PodMismatch {
        /// What differs, in words.
        reason: String,
    },
    /// The JSON or TOML text could not be parsed.
    Parse {
        /// The parser's message.
        message: String,
    },
    /// A quantisation that does not fit its field (wrong type or length,
    /// a step or range the field's type cannot represent).
    BadQuantize {
        /// Field name.
        field: String,
        /// What is wrong, in words.
        reason: String,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSections => write!(f, "schema has no entity types"),
            Self::TooManySections { count, limit } => {
                write!(f, "schema has {count} entity types, limit is {limit}")
            }
            Self::NoFields { entity } => write!(f, "entity type `{entity}` has no fields"),
            Self::RecordTooLarge {
                entity,
                size,
                limit,
            } => write!(
                f,
                "entity type `{entity}` has a {size}-byte record, limit is {limit}"
            ),
            Self::BadArrayLength { field, len } => {
                write!(f, "field `{field}` has array length {len}")
            }
            Self::DuplicateName { name } => write!(f, "name `{name}` is used twice"),
            Self::BadName { name } => write!(f, "name {name:?} is empty or too long"),
            Self::DefaultRecordSize {
                entity,
                expected,
                actual,
            } => write!(
                f,
                "default record of `{entity}` has {actual} bytes, record size is {expected}"
            ),
            Self::PodMismatch { reason } => write!(f, "struct does not match schema: {reason}"),
            Self::Parse { message } => write!(f, "schema text: {message}"),
            Self::BadQuantize { field, reason } => {
                write!(f, "quantisation of field `{field}`: {reason}")
            }
        }
    }
}

impl std::error::Error for SchemaError {}

/// An error building a [`Snapshot`](crate::Snapshot) or section.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Entity ids are not strictly ascending at `index`.
    UnsortedIds {
        /// Position of the first id that is not above its predecessor.
        index: usize,
        /// That id.
        id: u32,
    },
    /// The record bytes are not `ids.len() * record_size` long.
    RecordBytes {
        /// Expected byte count.
        expected: usize,
        /// Given byte count.
        actual: usize,
    },
    /// A record of the wrong size was pushed.
    RecordSize {
        /// Expected size.
        expected: usize,
        /// Given size.
        actual: usize,
    },
    /// The snapshot has a different number of sections than the schema.
    SectionCount {
        /// Sections in the schema.
        expected: usize,
        /// Sections given.
        actual: usize,
    },
    /// A quantised field holds a value that is not exactly a quantised
    /// value: the snapshot was not passed through
    /// [`Schema::quantize`](crate::Schema::quantize).
    NotQuantized {
        /// Entity type index.
        section: usize,
        /// Entity id.
        id: u32,
        /// Field index.
        field: usize,
        /// Array element (for quaternions, 0).
        element: usize,
    },
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsortedIds { index, id } => {
                write!(
                    f,
                    "entity id {id} at index {index} is not above the previous id"
                )
            }
            Self::RecordBytes { expected, actual } => {
                write!(f, "records have {actual} bytes, expected {expected}")
            }
            Self::RecordSize { expected, actual } => {
                write!(f, "record has {actual} bytes, expected {expected}")
            }
            Self::SectionCount { expected, actual } => {
                write!(f, "snapshot has {actual} sections, schema has {expected}")
            }
            Self::NotQuantized {
                section,
                id,
                field,
                element,
            } => write!(
                f,
                "section {section} entity {id} field {field}[{element}] is not a quantised value"
            ),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// An error encoding a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The snapshot does not fit the encoder's schema.
    Snapshot(SnapshotError),
    /// A section's record size differs from the schema's.
    RecordSize {
        /// Section index.
        section: usize,
        /// Record size in the schema.
        expected: usize,
        /// Record size of the section given.
        actual: usize,
    },
    /// A section holds more entities than the configured limit.
    TooManyEntities {
        /// Section index.
        section: usize,
        /// Entities in the section.
        count: usize,
        /// Configured limit.
        limit: usize,
    },
    /// The snapshot would hold more bytes (entities times record size plus
    /// 4) than [`Limits::max_snapshot_bytes`](crate::Limits::max_snapshot_bytes).
    SnapshotTooLarge {
        /// The snapshot's bytes.
        bytes: usize,
        /// Configured limit.
        limit: usize,
    },
    /// The uncompressed payload, or the records the packet spawns, would
    /// exceed [`Limits::max_decoded_bytes`](crate::Limits::max_decoded_bytes).
    PayloadTooLarge {
        /// Payload size.
        size: usize,
        /// Configured limit.
        limit: usize,
    },
    /// The output slice is too small; [`Encoder::max_encoded_len`](crate::Encoder::max_encoded_len) tells the size to give.
    OutputTooSmall {
        /// Bytes needed at least.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// The baseline is 0 or more than 32767 sequences before the packet.
    BaselineDistance {
        /// Sequence of the packet.
        sequence: u16,
        /// Sequence of the baseline.
        baseline: u16,
    },
    /// zstd reported an error (only on allocation failure in practice).
    Zstd {
        /// zstd's error name.
        message: &'static str,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Snapshot(e) => write!(f, "invalid snapshot: {e}"),
            Self::RecordSize {
                section,
                expected,
                actual,
            } => write!(
                f,
                "section {section} has {actual}-byte records, schema says {expected}"
            ),
            Self::TooManyEntities {
                section,
                count,
                limit,
            } => write!(
                f,
                "section {section} has {count} entities, limit is {limit}"
            ),
            Self::SnapshotTooLarge { bytes, limit } => {
                write!(f, "snapshot of {bytes} bytes exceeds the limit of {limit}")
            }
            Self::PayloadTooLarge { size, limit } => {
                write!(f, "payload of {size} bytes exceeds the limit of {limit}")
            }
            Self::OutputTooSmall { needed, available } => {
                write!(f, "output needs {needed} bytes, {available} available")
            }
            Self::BaselineDistance { sequence, baseline } => write!(
                f,
                "baseline {baseline} is not 1..=32767 sequences before {sequence}"
            ),
            Self::Zstd { message } => write!(f, "zstd: {message}"),
        }
    }
}

impl std::error::Error for EncodeError {}

impl From<SnapshotError> for EncodeError {
    fn from(e: SnapshotError) -> Self {
        Self::Snapshot(e)
    }
}

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
    /// The packet names a dictionary the decoder does not hold.
    UnknownDictionary {
        /// Dictionary id in the packet.
        id: u32,
    },
    /// A model block that is not the packet's first and last block.
    ModelBlockNotAlone {
        /// Byte offset of the block header.
        offset: usize,
    },
    /// A model block, but the packet's dictionary has no model table for
    /// this schema (none, or one of another shape).
    MissingModelTable {
        /// Byte offset of the block header.
        offset: usize,
    },
    /// A model block is malformed.
    Model {
        /// Byte offset of the block body.
        offset: usize,
        /// What the model decoder found.
        error: crate::model::ModelError,
    },
    /// A Huffman block, but the packet's dictionary has no Huffman table
    /// (or the packet names no dictionary).
    MissingHuffmanTable {
        /// Byte offset of the block header.
        offset: usize,
    },
    /// A Huffman block is malformed: its length is 0 or above 8192, its
    /// stream ends early, or bytes follow the last code.
    Huffman {
        /// Byte offset of the block header.
        offset: usize,
        /// What is wrong.
        error: crate::HuffmanError,
    },
    /// A block size is 0 or above 8192 (or a last block's body is).
    BadBlockSize {
        /// Byte offset of the size field.
        offset: usize,
    },
    /// A block header sits past the end of the packet, or no block had the last bit.
    MissingLastBlock,
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
            Self::MissingPrior { sequence } => {
                write!(f, "packet predicts from prior {sequence}, none given")
            }
            Self::PriorMismatch { expected, actual } => write!(
                f,
                "packet predicts from prior {expected}, prior given is {actual}"
            ),
            Self::UnknownDictionary { id } => write!(f, "unknown dictionary {id:#010x}"),
            Self::ModelBlockNotAlone { offset } => {
                write!(
                    f,
                    "model block at offset {offset} is not the packet's only block"
                )
            }
            Self::MissingModelTable { offset } => {
                write!(f, "model block at offset {offset} without a model table")
            }
            Self::Model { offset, error } => {
                write!(f, "model block at offset {offset}: {error}")
            }
            Self::MissingHuffmanTable { offset } => {
                write!(
                    f,
                    "Huffman block at offset {offset} without a Huffman table"
                )
            }
            Self::Huffman { offset, error } => {
                write!(f, "Huffman block at offset {offset}: {error}")
            }
            Self::BadBlockSize { offset } => write!(f, "bad block size at offset {offset}"),
            Self::MissingLastBlock => write!(f, "no block is marked last"),
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

/// An error preparing a dictionary.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DictionaryError {
    /// zstd could not digest the dictionary bytes.
    Rejected {
        /// The dictionary id.
        id: u32,
    },
}

impl fmt::Display for DictionaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rejected { id } => write!(f, "zstd rejected dictionary {id:#010x}"),
        }
    }
}

impl std::error::Error for DictionaryError {}
