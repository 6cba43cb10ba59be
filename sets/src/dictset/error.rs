//! The error of loading, saving or using a dictionary set.

use core::fmt;
use std::path::{Path, PathBuf};

use super::DictKind;
use tickpack::{DecodeError, DictionaryError, SchemaError};

/// An error loading, saving or using a dictionary set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DictSetError {
    /// A file could not be read or written.
    Io {
        /// The file.
        file: PathBuf,
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
    /// A file is larger than the configured limit.
    TooLarge {
        /// The file.
        file: String,
        /// The limit, bytes.
        limit: usize,
    },
    /// `manifest.json` is not valid JSON of the manifest's form.
    Manifest {
        /// The parser's message (with line and column).
        message: String,
    },
    /// The manifest format is not one this crate reads.
    UnsupportedFormat {
        /// Format found.
        format: u32,
    },
    /// A game or version name is empty, longer than 255 bytes, or holds a
    /// path separator.
    BadName {
        /// The name.
        name: String,
    },
    /// The manifest's schema does not load.
    Schema(SchemaError),
    /// A model table file does not load.
    Model {
        /// The file.
        file: String,
        /// Why.
        error: tickpack::model::ModelError,
    },
    /// The manifest's schema does not have the id the manifest states.
    SchemaIdMismatch {
        /// Id in the manifest.
        expected: u32,
        /// Id of the schema it holds.
        actual: u32,
    },
    /// The field list disagrees with the schema.
    FieldMismatch {
        /// Entity type.
        entity: String,
        /// Field.
        field: String,
    },
    /// A listed transform is not in the schema as listed.
    TransformMismatch {
        /// Entity type.
        entity: String,
        /// Field.
        field: String,
    },
    /// A dictionary file name is not a plain file name.
    BadFileName {
        /// The name.
        file: String,
    },
    /// Two dictionaries of the same kind.
    DuplicateKind {
        /// The kind.
        kind: DictKind,
    },
    /// A dictionary file does not have the size the manifest states.
    SizeMismatch {
        /// The file.
        file: String,
        /// Size in the manifest.
        expected: u64,
        /// Size of the file.
        actual: u64,
    },
    /// A dictionary file's SHA-256 differs from the manifest's: the file is
    /// damaged or not the one trained.
    Sha256Mismatch {
        /// The file.
        file: String,
        /// Hash in the manifest.
        expected: String,
        /// Hash of the file.
        actual: String,
    },
    /// A dictionary id does not match the dictionary's bytes and the set.
    IdMismatch {
        /// The file.
        file: String,
        /// Id in the manifest.
        expected: u32,
        /// Id computed.
        actual: u32,
    },
    /// The set id does not match the manifest's contents.
    SetIdMismatch {
        /// Id in the manifest.
        expected: u32,
        /// Id computed.
        actual: u32,
    },
    /// zstd rejected a dictionary.
    Dictionary(DictionaryError),
    /// No set held has this dictionary id.
    UnknownDictionary {
        /// The id the packet names.
        id: u32,
    },
    /// No set held has this schema id.
    UnknownSchema {
        /// The id the packet names.
        id: u32,
    },
    /// A set being added has a dictionary id already held by another set.
    IdCollision {
        /// The id.
        id: u32,
    },
    /// A set being added has the schema of a held set, and one of the two
    /// has no keyframe dictionary: its keyframes name only the schema id,
    /// which either set could have made, so the deltas after them could
    /// not be told apart.
    AmbiguousSchema {
        /// The schema id both sets have.
        id: u32,
    },
    /// A set for this game version is already held.
    DuplicateSet {
        /// Game.
        game: String,
        /// Version.
        version: String,
    },
    /// The set was trained for a schema with another layout.
    LayoutMismatch {
        /// What differs, in words.
        reason: String,
    },
    /// A packet did not decode.
    Decode(DecodeError),
}

impl DictSetError {
    pub(super) fn io(file: &Path, e: &std::io::Error) -> Self {
        Self::Io {
            file: file.to_path_buf(),
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl fmt::Display for DictSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, message, .. } => write!(f, "{}: {message}", file.display()),
            Self::TooLarge { file, limit } => write!(f, "{file} is larger than {limit} bytes"),
            Self::Manifest { message } => write!(f, "manifest: {message}"),
            Self::UnsupportedFormat { format } => {
                write!(f, "unsupported manifest format {format}")
            }
            Self::BadName { name } => write!(f, "bad game or version name {name:?}"),
            Self::Schema(e) => write!(f, "manifest schema: {e}"),
            Self::Model { file, error } => write!(f, "model table {file}: {error}"),
            Self::SchemaIdMismatch { expected, actual } => write!(
                f,
                "manifest schema has id {actual:#010x}, manifest says {expected:#010x}"
            ),
            Self::FieldMismatch { entity, field } => write!(
                f,
                "manifest field choice {entity}.{field} disagrees with its schema"
            ),
            Self::TransformMismatch { entity, field } => write!(
                f,
                "manifest transform of {entity}.{field} disagrees with its schema"
            ),
            Self::BadFileName { file } => write!(f, "bad dictionary file name {file:?}"),
            Self::DuplicateKind { kind } => {
                write!(f, "two {} dictionaries in one set", kind.name())
            }
            Self::SizeMismatch {
                file,
                expected,
                actual,
            } => write!(f, "{file} has {actual} bytes, manifest says {expected}"),
            Self::Sha256Mismatch {
                file,
                expected,
                actual,
            } => write!(
                f,
                "{file} is damaged: sha256 {actual}, manifest says {expected}"
            ),
            Self::IdMismatch {
                file,
                expected,
                actual,
            } => write!(
                f,
                "{file} has dictionary id {actual:#010x}, manifest says {expected:#010x}"
            ),
            Self::SetIdMismatch { expected, actual } => write!(
                f,
                "manifest contents give set id {actual:#010x}, manifest says {expected:#010x}"
            ),
            Self::Dictionary(e) => write!(f, "{e}"),
            Self::UnknownDictionary { id } => write!(f, "no set holds dictionary {id:#010x}"),
            Self::UnknownSchema { id } => write!(f, "no set has schema {id:#010x}"),
            Self::IdCollision { id } => {
                write!(f, "dictionary id {id:#010x} is already held by another set")
            }
            Self::AmbiguousSchema { id } => write!(
                f,
                "a held set has schema {id:#010x} too, and without a keyframe dictionary in both \
                 a keyframe cannot say which set made it"
            ),
            Self::DuplicateSet { game, version } => {
                write!(f, "a set for {game} {version} is already held")
            }
            Self::LayoutMismatch { reason } => write!(f, "set does not fit the schema: {reason}"),
            Self::Decode(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DictSetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Schema(e) => Some(e),
            Self::Model { error, .. } => Some(error),
            Self::Dictionary(e) => Some(e),
            Self::Decode(e) => Some(e),
            _ => None,
        }
    }
}
