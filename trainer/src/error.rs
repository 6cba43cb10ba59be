//! [`TrainerError`]: what a trainer command can fail with.

#![forbid(unsafe_code)]

use core::fmt;

use tickpack::model::ModelError;
use tickpack::{DecodeError, EncodeError, SchemaError};
use tickpack_sets::capture::CaptureError;
use tickpack_sets::dictset::DictSetError;

/// An error of a trainer command. `Display` gives the one line the binary prints.
#[derive(Debug)]
#[non_exhaustive]
pub enum TrainerError {
    /// Bad command line; the binary prints it once and exits with 2.
    Usage(String),
    /// A file could not be opened, read or written.
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A capture is damaged or could not be written.
    Capture {
        /// The capture file.
        file: String,
        /// What went wrong, with the byte offset.
        error: CaptureError,
    },
    /// An import input is malformed.
    Import {
        /// The input file.
        file: String,
        /// Where: `line N` or `byte N`.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// Captures given together have different schemas.
    SchemaMismatch {
        /// The capture that differs.
        file: String,
        /// What differs.
        reason: String,
    },
    /// A schema could not be built or loaded.
    Schema(SchemaError),
    /// A dictionary set could not be loaded, built or saved.
    DictSet(DictSetError),
    /// A model table file does not load.
    Model {
        /// The file.
        file: String,
        /// Why the loader refused it.
        error: ModelError,
    },
    /// The codec refused to encode a snapshot.
    Encode(EncodeError),
    /// The codec refused a packet it had just made.
    Decode(DecodeError),
    /// zstd failed (training or plain frames).
    Zstd(String),
    /// The input has nothing to work on (no ticks, no packets).
    Empty(String),
    /// An output was refused (it is an input, it exists, it is a
    /// directory), or could not be moved into place.
    Output(String),
    /// `inspect` found damage; its report was printed.
    Damaged {
        /// The file or directory inspected.
        file: String,
    },
    /// Replaying a capture would hold more snapshots than allowed: its
    /// packets' baselines reach too far back.
    TooMuchHeld {
        /// The capture file.
        file: String,
        /// The tick at which the limit was passed.
        tick: u64,
        /// Snapshots held then.
        snapshots: usize,
        /// Their bytes (ids and records).
        bytes: u64,
        /// The limit, bytes.
        limit: u64,
    },
    /// `train`'s sample needs more snapshot bytes than the memory cap
    /// (`--max-held-bytes`); a smaller `--sample-bytes` samples fewer ticks.
    SampleTooLarge {
        /// Bytes of snapshots the sampled packets need.
        bytes: u64,
        /// The cap, bytes.
        limit: u64,
    },
    /// `suggest` was given more candidate steps than [`MAX_STEPS`](crate::suggest::MAX_STEPS)
    /// (each costs a column and a pass over every field's samples).
    TooManySteps {
        /// Steps given.
        given: usize,
        /// The most allowed.
        max: usize,
    },
    /// A tick of a capture records more sent packets than allowed.
    TooManySent {
        /// The capture file.
        file: String,
        /// The tick.
        tick: u64,
        /// The most sent records a tick may hold.
        limit: usize,
    },
    /// A capture read again is not what it was at its first reading.
    Changed {
        /// The capture file.
        file: String,
    },
}

impl TrainerError {
    pub(crate) fn io(file: impl AsRef<std::path::Path>, error: std::io::Error) -> Self {
        Self::Io {
            file: file.as_ref().display().to_string(),
            error,
        }
    }
}

impl fmt::Display for TrainerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(m) => write!(f, "{m}"),
            Self::Io { file, error } => write!(f, "{file}: {error}"),
            Self::Capture { file, error } => write!(f, "{file}: {error}"),
            Self::Import { file, at, message } => write!(f, "{file}, {at}: {message}"),
            Self::SchemaMismatch { file, reason } => {
                write!(
                    f,
                    "{file}: schema differs from the first capture's: {reason}"
                )
            }
            Self::Schema(e) => write!(f, "schema: {e}"),
            Self::DictSet(e) => write!(f, "dictionary set: {e}"),
            Self::Model { file, error } => write!(f, "{file}: {error}"),
            Self::Encode(e) => write!(f, "encode: {e}"),
            Self::Decode(e) => write!(f, "decode: {e}"),
            Self::Zstd(m) => write!(f, "zstd: {m}"),
            Self::Empty(m) => write!(f, "{m}"),
            Self::Output(m) => write!(f, "{m}"),
            Self::Damaged { file } => write!(f, "{file} is damaged (report above)"),
            Self::TooMuchHeld {
                file,
                tick,
                snapshots,
                bytes,
                limit,
            } => write!(
                f,
                "{file}: at tick {tick}, {snapshots} snapshots ({bytes} bytes) are still needed \
                 as baselines, over the {limit}-byte limit: the packets' baselines reach too far back"
            ),
            Self::SampleTooLarge { bytes, limit } => write!(
                f,
                "the sampled packets need {bytes} bytes of snapshots, over the {limit}-byte \
                 --max-held-bytes: raise it, or lower --sample-bytes to sample fewer ticks"
            ),
            Self::TooManySteps { given, max } => {
                write!(f, "--steps: at most {max} steps, got {given}")
            }
            Self::TooManySent { file, tick, limit } => write!(
                f,
                "{file}: tick {tick} records more than {limit} sent packets"
            ),
            Self::Changed { file } => {
                write!(f, "{file}: the capture changed while it was being read")
            }
        }
    }
}

impl std::error::Error for TrainerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { error, .. } => Some(error),
            Self::Capture { error, .. } => Some(error),
            Self::Schema(e) => Some(e),
            Self::DictSet(e) => Some(e),
            Self::Model { error, .. } => Some(error),
            Self::Encode(e) => Some(e),
            Self::Decode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DictSetError> for TrainerError {
    fn from(e: DictSetError) -> Self {
        Self::DictSet(e)
    }
}

impl From<EncodeError> for TrainerError {
    fn from(e: EncodeError) -> Self {
        Self::Encode(e)
    }
}

impl From<DecodeError> for TrainerError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl From<SchemaError> for TrainerError {
    fn from(e: SchemaError) -> Self {
        Self::Schema(e)
    }
}
