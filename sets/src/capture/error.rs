//! [`CaptureError`]: everything reading or writing a capture can report.

use core::fmt;

use tickpack::{DecodeError, EncodeError, SchemaError};

/// An error reading or writing a capture. Reading errors name the byte
/// offset of the damaged part: every tick before it was read intact.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CaptureError {
    /// The underlying reader or writer failed.
    Io {
        /// Bytes of the capture read or written before the failure.
        offset: u64,
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
    /// The input does not start with the capture magic.
    BadMagic,
    /// The capture format version is not one this reader reads.
    UnsupportedVersion {
        /// Version found.
        version: u8,
    },
    /// Reserved flag bits of the file header are set.
    ReservedBits {
        /// The flags byte.
        flags: u8,
    },
    /// The header body is longer than [`CaptureLimits::max_header_bytes`](super::CaptureLimits::max_header_bytes).
    HeaderTooLarge {
        /// Length the file declares.
        len: u64,
        /// Configured limit.
        limit: usize,
    },
    /// The header body is malformed.
    BadHeader {
        /// Byte offset (from the start of the file) of the bad field.
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// The schema text in the header does not load.
    Schema(SchemaError),
    /// The schema loaded from the header does not have the id it declares.
    SchemaIdMismatch {
        /// Id the header declares.
        expected: u32,
        /// Id of the schema the header describes.
        actual: u32,
    },
    /// The input ends inside the header or a record, or before the end
    /// record. Everything before `offset` is intact.
    Truncated {
        /// Byte offset of the incomplete header or record.
        offset: u64,
        /// Bytes the input still had from there.
        available: u64,
    },
    /// A header or record checksum does not match its bytes.
    ChecksumMismatch {
        /// Byte offset of the header (0) or record.
        offset: u64,
        /// Checksum stored in the file.
        expected: u32,
        /// Checksum of the bytes read.
        actual: u32,
    },
    /// A record's length field is malformed or above
    /// [`CaptureLimits::max_record_bytes`](super::CaptureLimits::max_record_bytes).
    RecordTooLarge {
        /// Byte offset of the record.
        offset: u64,
        /// Length declared (0 when the length field itself is malformed).
        len: u64,
        /// Configured limit.
        limit: usize,
    },
    /// A record kind this version neither reads nor may skip.
    UnknownRecord {
        /// Byte offset of the record.
        offset: u64,
        /// The kind byte.
        kind: u8,
    },
    /// A record's body is malformed (its checksum matched: the writer
    /// produced it, or the damage was crafted).
    BadRecord {
        /// Byte offset of the record.
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A tick record's packet does not decode.
    Packet {
        /// Byte offset of the record.
        offset: u64,
        /// The decoder's error.
        error: DecodeError,
    },
    /// The end record counts a different number of ticks than were read.
    TickCount {
        /// Byte offset of the end record.
        offset: u64,
        /// Ticks the end record counts.
        expected: u64,
        /// Tick records read.
        actual: u64,
    },
    /// Bytes follow the end record.
    TrailingBytes {
        /// Byte offset of the first byte after the end record.
        offset: u64,
    },
    /// Writing: tick numbers must strictly increase.
    TickOrder {
        /// The previous tick written.
        previous: u64,
        /// The tick given.
        tick: u64,
    },
    /// Writing: a sent record before any tick, or after a tick that
    /// could not be recorded.
    NoTick,
    /// Writing: the snapshot could not be encoded.
    Encode(EncodeError),
    /// Writing: the game or version name is empty or longer than 255 bytes.
    BadName {
        /// The name given.
        name: String,
    },
}

impl CaptureError {
    pub(crate) fn io(offset: u64, e: &std::io::Error) -> Self {
        Self::Io {
            offset,
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    /// The byte offset of the damage, for errors found while reading.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Self::Io { offset, .. }
            | Self::BadHeader { offset, .. }
            | Self::Truncated { offset, .. }
            | Self::ChecksumMismatch { offset, .. }
            | Self::RecordTooLarge { offset, .. }
            | Self::UnknownRecord { offset, .. }
            | Self::BadRecord { offset, .. }
            | Self::Packet { offset, .. }
            | Self::TickCount { offset, .. }
            | Self::TrailingBytes { offset } => Some(*offset),
            Self::BadMagic
            | Self::UnsupportedVersion { .. }
            | Self::ReservedBits { .. }
            | Self::HeaderTooLarge { .. }
            | Self::Schema(_)
            | Self::SchemaIdMismatch { .. } => Some(0),
            Self::TickOrder { .. } | Self::NoTick | Self::Encode(_) | Self::BadName { .. } => None,
        }
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io {
                offset, message, ..
            } => write!(f, "i/o error at byte {offset}: {message}"),
            Self::BadMagic => write!(f, "not a tickpack capture (bad magic)"),
            Self::UnsupportedVersion { version } => {
                write!(f, "unsupported capture format version {version}")
            }
            Self::ReservedBits { flags } => {
                write!(f, "reserved header flags set: {flags:#04x}")
            }
            Self::HeaderTooLarge { len, limit } => {
                write!(
                    f,
                    "capture header of {len} bytes exceeds the limit of {limit}"
                )
            }
            Self::BadHeader { offset, reason } => {
                write!(f, "bad capture header at byte {offset}: {reason}")
            }
            Self::Schema(e) => write!(f, "capture schema: {e}"),
            Self::SchemaIdMismatch { expected, actual } => write!(
                f,
                "capture schema has id {actual:#010x}, header says {expected:#010x}"
            ),
            Self::Truncated { offset, available } => write!(
                f,
                "capture truncated: the record at byte {offset} is incomplete \
                 ({available} bytes left, no end record)"
            ),
            Self::ChecksumMismatch {
                offset,
                expected,
                actual,
            } => write!(
                f,
                "corrupt capture: checksum of the record at byte {offset} is \
                 {actual:#010x}, stored {expected:#010x}"
            ),
            Self::RecordTooLarge { offset, len, limit } => write!(
                f,
                "record at byte {offset} declares {len} bytes, limit is {limit}"
            ),
            Self::UnknownRecord { offset, kind } => {
                write!(f, "unknown record kind {kind} at byte {offset}")
            }
            Self::BadRecord { offset, reason } => {
                write!(f, "malformed record at byte {offset}: {reason}")
            }
            Self::Packet { offset, error } => {
                write!(f, "tick record at byte {offset} does not decode: {error}")
            }
            Self::TickCount {
                offset,
                expected,
                actual,
            } => write!(
                f,
                "end record at byte {offset} counts {expected} ticks, {actual} were read"
            ),
            Self::TrailingBytes { offset } => {
                write!(f, "bytes after the end record, from byte {offset}")
            }
            Self::TickOrder { previous, tick } => {
                write!(f, "tick {tick} written after tick {previous}")
            }
            Self::NoTick => write!(
                f,
                "sent record written before any tick or after a failed one"
            ),
            Self::Encode(e) => write!(f, "cannot encode tick: {e}"),
            Self::BadName { name } => {
                write!(f, "name {name:?} is empty or longer than 255 bytes")
            }
        }
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Schema(e) => Some(e),
            Self::Packet { error, .. } => Some(error),
            Self::Encode(e) => Some(e),
            _ => None,
        }
    }
}
