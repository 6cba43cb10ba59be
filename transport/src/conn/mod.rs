//! Authenticated connections on netcode.io's model, sans-IO.
//!
//! A backend that authenticated a player issues a [`ConnectToken`] sealed
//! with a private key it shares with the game servers, naming the servers
//! it is for ([`ConnectToken::issue_for`]). The client sends the token's
//! sealed part in a connection request with a random request nonce; the
//! server opens it, checks that it names one of its
//! [`public_addresses`](ServerConfig::public_addresses), and replies with
//! a challenge (smaller than the request, so a spoofed source address gains
//! an attacker nothing) that only the token's holder can read and that
//! repeats the request nonce. The challenge carries a fresh random server
//! nonce; both sides derive the connection's two packet keys from the
//! token's keys and that nonce (HKDF-SHA256), so no two connections, on two
//! servers or one after the other under one token, share a key. The client
//! echoes the challenge token from the address the challenge went to (the
//! token is bound to it); only then does the server give it a slot. From
//! there every packet is sealed with ChaCha20-Poly1305 under the
//! connection's key for its direction, with the packet's sequence as nonce,
//! and accepted once (a [`REPLAY_WINDOW`]). A token connects once until it
//! expires; a token has a few handshake replies queued at most, and each
//! source address gets a few per window.
//!
//! A client's address changes as RFC 9000 §9 has it: an authenticated
//! packet newer than all before it from a new address makes the server
//! probe that address with a path token, sent there at most
//! [`AMPLIFICATION_FACTOR`] times what it received from there; the server
//! keeps sending to the last validated address until the token comes back
//! from the new one, gives the probe up after [`PATH_PROBE_TIMEOUT`] or when
//! the validated address sends a newer packet, and probes at most once per
//! [`MIGRATION_INTERVAL`]. Each side pings the other every
//! [`PING_INTERVAL`] and keeps a smoothed round-trip estimate ([`Rtt`],
//! [`Server::rtt`], [`Client::rtt`]).
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

mod challenge;
mod client;
mod crypto;
mod limit;
mod packet;
mod path;
mod replay;
mod rtt;
mod server;
mod token;
mod used;

use std::time::Duration;

pub use client::{Client, ClientState, HANDSHAKE_RESEND};
pub use crypto::{Key, KEY_BYTES, TAG_BYTES};
pub use packet::{
    CHALLENGE_BYTES, CLIENT_OVERHEAD, DENIED_BYTES, REQUEST_BYTES, RESPONSE_BYTES, SERVER_OVERHEAD,
};
pub use path::{
    AMPLIFICATION_FACTOR, MAX_PATH_PROBES, MIGRATION_INTERVAL, PATH_PROBE_TIMEOUT, PATH_RESEND,
};
pub use replay::REPLAY_WINDOW;
pub use rtt::Rtt;
pub use server::{Server, ServerConfig, ServerEvent, Transmit, WELCOME_RESEND};
pub use token::{ConnectToken, CONNECT_TOKEN_BYTES, MAX_SERVER_ADDRESSES, PRIVATE_TOKEN_BYTES};

/// Protocol version, in every request, token and sealed packet's
/// additional data.
pub const VERSION: [u8; 8] = *b"TPCONN01";

/// A connected side sends a keep-alive after this long without sending.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_millis(250);

/// Each side of a connection pings the other this often, and times the
/// answer for its round-trip estimate ([`Rtt`]).
pub const PING_INTERVAL: Duration = Duration::from_millis(500);

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
    /// used for a connection before), in answer to this client's request
    /// or challenge.
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
    /// A path token to a client's new address would exceed what may be
    /// sent there until it echoes one (internal: the server then waits;
    /// payloads go to the validated address and never get this).
    PathNotValidated {
        /// Bytes sent there so far.
        sent: u64,
        /// Bytes that may be sent there until it answers.
        limit: u64,
    },
    /// More server addresses than a connect token holds.
    TooManyAddresses {
        /// Addresses given.
        count: usize,
        /// Most a token holds.
        max: usize,
    },
    /// A connect token that names none of this server's public addresses.
    WrongServer,
    /// A challenge or denial that answers another request or challenge
    /// than this client's (an old one, replayed).
    Stale,
    /// A handshake packet whose token has its share of replies queued
    /// already, whose source address used its rate, or that would start
    /// more connections within a challenge's lifetime than the used-token
    /// memory holds; it gets no reply (the client resends).
    RateLimited,
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
            Self::TooManyAddresses { count, max } => {
                write!(f, "{count} server addresses, a token holds {max}")
            }
            Self::WrongServer => f.write_str("connect token names none of this server's addresses"),
            Self::Stale => f.write_str("reply to another request or challenge"),
            Self::RateLimited => f.write_str("handshake limit reached, no reply"),
        }
    }
}

impl std::error::Error for ConnError {}
