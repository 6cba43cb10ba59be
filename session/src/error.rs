//! The session layer's error.

use core::fmt;

use tickpack::{DecodeError, DictionaryError, EncodeError};

/// Errors of the session layer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionError {
    /// No client with this id is connected.
    UnknownClient {
        /// The id.
        id: u16,
    },
    /// `send` before the first `begin_tick`.
    NoTick,
    /// Encoding failed (the world does not fit the schema or the limits).
    Encode(EncodeError),
    /// A client message could not be parsed.
    Message(DecodeError),
    /// The dictionary could not be prepared.
    Dictionary(DictionaryError),
    /// `history` must be 1..=32767.
    BadHistory {
        /// The value given.
        history: usize,
    },
    /// The two ends of a connection disagree on the schema, the
    /// dictionaries or the limits (handshake).
    HandshakeMismatch {
        /// What this end uses.
        ours: super::Hello,
        /// What the other end sent.
        theirs: super::Hello,
    },
    /// The server compresses with a dictionary this client does not hold.
    MissingDictionary {
        /// The dictionary id.
        id: u32,
    },
    /// A handshake message could not be parsed.
    Handshake(DecodeError),
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownClient { id } => write!(f, "no client with id {id}"),
            Self::NoTick => write!(f, "send called before begin_tick"),
            Self::Encode(e) => write!(f, "encode: {e}"),
            Self::Message(e) => write!(f, "client message: {e}"),
            Self::Dictionary(e) => write!(f, "dictionary: {e}"),
            Self::BadHistory { history } => write!(f, "history of {history} is not 1..=32767"),
            Self::HandshakeMismatch { ours, theirs } => {
                let side = |h: &super::Hello| {
                    let l = &h.limits;
                    format!(
                        "schema {:#010x}, dictionaries {:?}/{:?}, limits {}/{}/{}",
                        h.schema_id,
                        h.dictionary,
                        h.keyframe_dictionary,
                        l.max_entities_per_section,
                        l.max_decoded_bytes,
                        l.max_snapshot_bytes
                    )
                };
                write!(
                    f,
                    "handshake mismatch: {} here; {} there",
                    side(ours),
                    side(theirs)
                )
            }
            Self::MissingDictionary { id } => write!(f, "dictionary {id:#010x} is not held"),
            Self::Handshake(e) => write!(f, "handshake message: {e}"),
        }
    }
}

impl std::error::Error for SessionError {}
