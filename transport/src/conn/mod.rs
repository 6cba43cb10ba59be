//! Authenticated connections on netcode.io's model, sans-IO.
//!
//! A backend that authenticated a player issues a [`ConnectToken`] sealed
//! with a private key it shares with the game servers. The client sends the
//! token's sealed part in a connection request; the server opens it, and
//! replies with a challenge (smaller than the request, so a spoofed source
//! address gains an attacker nothing) that only the token's holder can
//! read. The client echoes the challenge token from the address the
//! challenge went to (the token is bound to it); only then does the server
//! give it a slot. From there every packet is sealed with
//! ChaCha20-Poly1305 under a per-direction key from the token, with the
//! packet's sequence as nonce, and accepted once (a [`REPLAY_WINDOW`]). A
//! client's address changes only when an authenticated packet newer than
//! all before it arrives from a new address, and until the client echoes a
//! token from there the server sends it at most [`AMPLIFICATION_FACTOR`]
//! times what it received from there.
//!
//! The cryptography is RustCrypto's `chacha20poly1305`; this module only
//! frames packets and keeps state. The byte layouts are in the `packet`
//! module's documentation.
//!
//! ```
//! use std::net::SocketAddr;
//! use std::time::Duration;
//! use tickpack_transport::conn::{Client, ConnectToken, Key, Server, ServerConfig};
//!
//! let key = Key::generate()?;
//! let now = Duration::from_secs(1_700_000_000);
//! let server_addr: SocketAddr = "127.0.0.1:4000".parse()?;
//! let client_addr: SocketAddr = "127.0.0.1:5000".parse()?;
//! let mut server = Server::new(ServerConfig::new(7, key.clone()))?;
//! // The backend issues the token; the client gets it over HTTPS.
//! let token = ConnectToken::issue(&key, 7, 42, now, Duration::from_secs(30), Duration::from_secs(5))?;
//! let mut client = Client::new(now, server_addr, token, 1200);
//! // Request, challenge, response, welcome.
//! while !client.is_connected() {
//!     if let Some(mut d) = client.poll_transmit(now + Duration::from_secs(1)) {
//!         server.handle_datagram(now, client_addr, &mut d)?;
//!     }
//!     while let Some(mut t) = server.poll_transmit() {
//!         client.handle_datagram(now, server_addr, &mut t.datagram)?;
//!     }
//! }
//! let mut datagram = Vec::new();
//! client.send(now, b"hello", &mut datagram)?;
//! assert_eq!(server.handle_datagram(now, client_addr, &mut datagram)?, Some((0, &b"hello"[..])));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod client;
mod crypto;
mod packet;
mod path;
mod replay;
mod server;
mod token;

use std::time::Duration;

pub use client::{Client, ClientState, HANDSHAKE_RESEND};
pub use crypto::{Key, KEY_BYTES, TAG_BYTES};
pub use packet::{
    CHALLENGE_BYTES, CLIENT_OVERHEAD, DENIED_BYTES, REQUEST_BYTES, RESPONSE_BYTES, SERVER_OVERHEAD,
};
pub use path::AMPLIFICATION_FACTOR;
pub use replay::REPLAY_WINDOW;
pub use server::{Server, ServerConfig, ServerEvent, Transmit};
pub use token::{ConnectToken, CONNECT_TOKEN_BYTES, PRIVATE_TOKEN_BYTES};

/// Protocol version, in every request, token and sealed packet's
/// additional data.
pub const VERSION: [u8; 8] = *b"TPCONN01";

/// A connected side sends a keep-alive after this long without sending.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_millis(250);

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// No authenticated packet for the token's timeout.
    TimedOut,
    /// The peer sent a disconnect packet.
    ByPeer,
    /// This side called `disconnect`.
    ByLocal,
    /// The server refused the connection (full, or the connect token was
    /// used for a connection before).
    Denied,
    /// The connect token expired before the client connected.
    TokenExpired,
}

/// Why a datagram was refused or a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnError {
    /// Shorter than its kind's header and tag.
    Truncated {
        /// Bytes received.
        len: usize,
        /// Fewest bytes of a packet of that kind.
        min: usize,
    },
    /// Not the fixed length of its kind.
    BadLength {
        /// Bytes received.
        len: usize,
        /// The kind's length.
        expected: usize,
    },
    /// Longer than any packet the receiver accepts.
    Oversized {
        /// Bytes received.
        len: usize,
        /// Most bytes accepted.
        max: usize,
    },
    /// A packet kind that is unknown or not expected here.
    UnexpectedKind {
        /// The kind (byte 0's low four bits).
        kind: u8,
    },
    /// A sequence byte count outside 1-8.
    BadSequenceLength {
        /// The count.
        bytes: usize,
    },
    /// Not this protocol version.
    Version,
    /// A connect token of another game.
    WrongProtocol {
        /// This server's protocol id.
        expected: u64,
        /// The token's.
        actual: u64,
    },
    /// A connect token or challenge past its expiry.
    Expired {
        /// Expiry, seconds since the Unix epoch.
        expires_at: u64,
        /// Now, seconds since the Unix epoch.
        now: u64,
    },
    /// Authentication failed: forged, damaged, or sealed under another key.
    Forged,
    /// A sequence accepted before.
    Replayed {
        /// The sequence.
        sequence: u64,
    },
    /// A sequence older than the replay window.
    TooOld {
        /// The sequence.
        sequence: u64,
        /// The newest accepted sequence.
        newest: u64,
    },
    /// A packet for a slot no client holds.
    UnknownSlot {
        /// The slot.
        slot: u16,
    },
    /// A datagram from another address than the server.
    WrongSource,
    /// Not connected (yet, or any more).
    NotConnected,
    /// Every slot is taken.
    ServerFull {
        /// The server's slot count.
        max_clients: u16,
    },
    /// A request or response for a client id connected from another address.
    AlreadyConnected {
        /// The client id.
        client_id: u64,
    },
    /// A request or response with a connect token that already got a
    /// connection: each token connects once (reconnect with a new one).
    TokenUsed {
        /// The client id.
        client_id: u64,
    },
    /// A payload packet with no payload.
    EmptyPayload,
    /// A payload longer than the configured maximum.
    PayloadTooLarge {
        /// Its length.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// The operating system's random number generator failed.
    Random,
    /// Encryption failed (a message too long for the cipher).
    Seal,
    /// The client's new address has not echoed its path token yet, and the
    /// packet would exceed what may be sent there until it does.
    PathNotValidated {
        /// Bytes sent there so far.
        sent: u64,
        /// Bytes that may be sent there until it answers.
        limit: u64,
    },
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated { len, min } => {
                write!(f, "packet of {len} bytes is shorter than {min}")
            }
            Self::BadLength { len, expected } => {
                write!(f, "packet of {len} bytes, its kind has {expected}")
            }
            Self::Oversized { len, max } => write!(f, "packet of {len} bytes exceeds {max}"),
            Self::UnexpectedKind { kind } => write!(f, "unexpected packet kind {kind}"),
            Self::BadSequenceLength { bytes } => {
                write!(f, "sequence length {bytes} outside 1-8")
            }
            Self::Version => f.write_str("not a tickpack connection packet of this version"),
            Self::WrongProtocol { expected, actual } => {
                write!(f, "protocol id {actual:#x}, expected {expected:#x}")
            }
            Self::Expired { expires_at, now } => {
                write!(f, "token expired at {expires_at}, now {now}")
            }
            Self::Forged => f.write_str("packet failed authentication"),
            Self::Replayed { sequence } => write!(f, "sequence {sequence} already received"),
            Self::TooOld { sequence, newest } => {
                write!(f, "sequence {sequence} too far behind {newest}")
            }
            Self::UnknownSlot { slot } => write!(f, "no client in slot {slot}"),
            Self::WrongSource => f.write_str("datagram not from the server's address"),
            Self::NotConnected => f.write_str("not connected"),
            Self::ServerFull { max_clients } => write!(f, "server full ({max_clients} clients)"),
            Self::AlreadyConnected { client_id } => {
                write!(f, "client {client_id} is connected from another address")
            }
            Self::TokenUsed { client_id } => {
                write!(
                    f,
                    "the connect token of client {client_id} was used already"
                )
            }
            Self::EmptyPayload => f.write_str("empty payload"),
            Self::PayloadTooLarge { len, max } => {
                write!(f, "payload of {len} bytes exceeds {max}")
            }
            Self::Random => f.write_str("the operating system's random number generator failed"),
            Self::Seal => f.write_str("encryption failed"),
            Self::PathNotValidated { sent, limit } => write!(
                f,
                "new address not validated: {sent} bytes sent, {limit} allowed until it answers"
            ),
        }
    }
}

impl std::error::Error for ConnError {}
