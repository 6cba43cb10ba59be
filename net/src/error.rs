//! The endpoints' errors, datagram outcomes and disconnect reasons.

use core::fmt;

use tickpack_session::SessionError;
use tickpack_transport::conn::ConnError;
use tickpack_transport::{ChunkError, FragmentError};

/// Errors of the endpoints' own calls (never of a peer's datagram: those
/// are [`Handled`] outcomes).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NetError {
    /// 1: the session layer refused (a world that does not fit the
    /// schema, a bad history, a dictionary that does not load).
    Session(SessionError),
    /// 2: the connection layer refused (a bad configuration).
    Conn(ConnError),
    /// 3: the configured MTU leaves no room for a fragment.
    MtuTooSmall {
        /// The MTU given.
        mtu: usize,
        /// The least that works.
        min: usize,
    },
    /// 4: `max_clients` must be 1..=32767.
    BadMaxClients {
        /// The value given.
        max_clients: u16,
    },
    /// 5: the connect snapshot does not fit a chunk (the world is too
    /// large for any client).
    Chunk(ChunkError),
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Session(e) => write!(f, "session: {e}"),
            Self::Conn(e) => write!(f, "connection: {e}"),
            Self::MtuTooSmall { mtu, min } => write!(f, "mtu of {mtu} bytes is below {min}"),
            Self::BadMaxClients { max_clients } => {
                write!(f, "max_clients of {max_clients} is not 1..=32767")
            }
            Self::Chunk(e) => write!(f, "connect snapshot: {e}"),
        }
    }
}

impl std::error::Error for NetError {}

impl From<SessionError> for NetError {
    fn from(e: SessionError) -> Self {
        Self::Session(e)
    }
}

impl From<ConnError> for NetError {
    fn from(e: ConnError) -> Self {
        Self::Conn(e)
    }
}

/// What an authenticated payload did wrong (counted against its sender's
/// connection; enough of them disconnect it, [`DisconnectReason::BadTraffic`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PayloadError {
    /// 1: empty, or an unknown channel byte.
    UnknownChannel,
    /// 2: a channel this side never receives.
    WrongDirection,
    /// 3: a fragment the reassembler refused.
    Fragment(FragmentError),
    /// 4: a chunk slice or ack refused.
    Chunk(ChunkError),
    /// 5: a session message refused.
    Session(SessionError),
    /// 6: a connect chunk without a well-formed hello.
    BadConnectChunk,
    /// 7: an answer to the hello that is not the server's hello.
    HelloMismatch,
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownChannel => write!(f, "unknown channel"),
            Self::WrongDirection => write!(f, "channel not accepted in this direction"),
            Self::Fragment(e) => write!(f, "fragment: {e}"),
            Self::Chunk(e) => write!(f, "chunk: {e}"),
            Self::Session(e) => write!(f, "session: {e}"),
            Self::BadConnectChunk => write!(f, "malformed connect chunk"),
            Self::HelloMismatch => write!(f, "answer differs from the hello"),
        }
    }
}

impl std::error::Error for PayloadError {}

/// What one datagram did to an endpoint. Nothing a datagram does changes
/// another client's state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Handled {
    /// An authenticated payload, taken in.
    Payload,
    /// A handshake or control packet of the connection layer.
    Control,
    /// Refused by the connection layer (forged, replayed, foreign,
    /// malformed); nothing changed.
    Rejected(ConnError),
    /// Authenticated but malformed; counted against the sender.
    Malformed(PayloadError),
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// 1: the peer fell silent for the connect token's timeout, or the
    /// handshake did not finish in time.
    TimedOut,
    /// 2: refused: the server is full or the token expired or was used
    /// (connection layer), or the two ends disagree on the schema,
    /// dictionaries or limits (session hello).
    Refused,
    /// 3: the other end ended it (a kick seen from the client).
    Kicked,
    /// 4: the peer sent more malformed authenticated payloads than
    /// allowed.
    BadTraffic,
    /// 5: the peer said goodbye (seen from the server), or this end
    /// disconnected (seen from the client).
    Left,
}

impl fmt::Display for DisconnectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::TimedOut => "timed out",
            Self::Refused => "refused",
            Self::Kicked => "kicked",
            Self::BadTraffic => "bad traffic",
            Self::Left => "left",
        })
    }
}
