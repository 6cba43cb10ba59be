//! Typed errors. Every variant carries the numbers involved so a log line is
//! enough to tell what went wrong.

use core::fmt;

mod decode;

pub use decode::DecodeError;

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
    /// A float grid (see [`SchemaBuilder::grid`](crate::SchemaBuilder::grid))
    /// on a field that is not a float, is quantised, or a step that is not
    /// a positive finite number.
    BadGrid {
        /// Field name.
        field: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// An [`Integrate`](crate::Integrate) declaration on a field that is
    /// not a float or is quantised, naming fields that are missing, the
    /// field itself, integrated themselves, quantised or of the wrong
    /// length, or a scale that is not a positive finite number.
    BadIntegrate {
        /// Field name.
        field: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// A unit declaration ([`SchemaBuilder::unit`](crate::SchemaBuilder::unit))
    /// on a field that is not a float array of at least two elements, is
    /// quantised, or belongs to an entity type with integrated fields.
    BadUnit {
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
            Self::BadGrid { field, reason } => write!(f, "grid of field `{field}`: {reason}"),
            Self::BadIntegrate { field, reason } => {
                write!(f, "integration of field `{field}`: {reason}")
            }
            Self::BadUnit { field, reason } => write!(f, "unit field `{field}`: {reason}"),
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
    /// The recall given is not the recall of the baseline given.
    RecallMismatch {
        /// Sequence of the baseline.
        baseline: u16,
        /// Sequence of the recall.
        recall: u16,
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
            Self::RecallMismatch { baseline, recall } => {
                write!(f, "recall of {recall} given with baseline {baseline}")
            }
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

/// An error preparing a dictionary.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DictionaryError {
    /// zstd could not digest the dictionary bytes.
    Rejected {
        /// The dictionary id.
        id: u32,
    },
    /// The dictionary's context-model table was trained for another
    /// schema (its shape differs from the one this schema gives its
    /// flags), so no packet could use it.
    ModelMismatch {
        /// The dictionary id.
        id: u32,
    },
}

impl fmt::Display for DictionaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rejected { id } => write!(f, "zstd rejected dictionary {id:#010x}"),
            Self::ModelMismatch { id } => write!(
                f,
                "the model table of dictionary {id:#010x} does not fit this schema"
            ),
        }
    }
}

impl std::error::Error for DictionaryError {}
