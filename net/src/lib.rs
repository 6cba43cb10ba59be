//! The front door of tickpack: a game server and its clients exchange
//! per-tick world snapshots over UDP through two sans-IO endpoints,
//! [`Server`] and [`Client`], that join authenticated connections
//! (`tickpack_transport::conn`, connect tokens), the connect snapshot
//! over a reliable chunk, fragments above the MTU, per-client pacing, the
//! codec session (acks, baselines, recall, shared encodes, resync,
//! dictionaries), a per-client [`Interest`] hook and, on the client, the
//! jitter buffer and the presented world.
//!
//! The shape of every program (`examples/hello.rs` runs it on sockets):
//!
//! ```
//! use std::net::SocketAddr;
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tickpack::{Primitive, Schema, Snapshot};
//! use tickpack_net::{Client, ClientConfig, EveryEntity, Server, ServerConfig};
//! use tickpack_transport::conn::{ConnectToken, Key};
//!
//! let schema = Schema::builder().entity("ball").field("x", Primitive::F32, 1).build()?;
//! let key = Key::generate()?; // shared by the backend and the game servers
//! let mut now = Duration::from_secs(1_700_000_000); // since the Unix epoch
//! let (server_addr, client_addr): (SocketAddr, SocketAddr) =
//!     ("127.0.0.1:4000".parse()?, "127.0.0.1:5000".parse()?);
//! let mut server = Server::new(schema.clone(), ServerConfig::new(7, key.clone()), EveryEntity)?;
//! // The backend issues user 42 a token; the client gets it over HTTPS.
//! let token = ConnectToken::issue(&key, 7, 42, now, Duration::from_secs(60), Duration::from_secs(5))?;
//! let mut client = Client::new(now, server_addr, token, schema.clone(), ClientConfig::default())?;
//! let mut buf = Vec::new();
//! for tick in 0..30u8 {
//!     let mut world = Snapshot::new(&schema);
//!     world.section_mut(0).unwrap().insert(1, &f32::from(tick).to_le_bytes())?;
//!     server.tick(now, Arc::new(world))?;
//!     // The socket driver (`udp::Driver`) does this part.
//!     while server.poll_transmit(now, &mut buf).is_some() {
//!         client.handle(now, server_addr, &mut buf);
//!     }
//!     client.handle_timeout(now);
//!     while client.poll_transmit(now, &mut buf).is_some() {
//!         server.handle(now, client_addr, &mut buf);
//!     }
//!     server.handle_timeout(now);
//!     now += Duration::from_millis(16);
//! }
//! // The client holds what the server sent it, and presents it.
//! let (seq, applied) = client.latest().unwrap();
//! let mut sent = Snapshot::default();
//! assert!(server.session().sent_state(0, seq, &mut sent));
//! assert_eq!(applied, &sent);
//! assert!(client.is_connected());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Events: the server reports [`ServerEvent::ClientConnected`],
//! [`ServerEvent::ClientReady`], [`ServerEvent::ClientMigrated`] and
//! [`ServerEvent::ClientDisconnected`] with a [`DisconnectReason`]; the
//! client [`ClientEvent::Connected`], [`ClientEvent::SnapshotApplied`]
//! and [`ClientEvent::Disconnected`]. A client's identity is its
//! authenticated connection slot ([`ClientId`], also its session id);
//! nothing in a payload names a client.
//!
//! Untrusted input: every datagram gives a typed [`Handled`] outcome, and
//! none changes another client's state; a client that keeps sending
//! malformed authenticated payloads is disconnected
//! ([`DisconnectReason::BadTraffic`]).
//!
//! The socket driver ([`udp`], feature `udp`, on by default) runs an
//! endpoint on a non-blocking `std::net::UdpSocket` with a fixed-tick
//! loop helper. There is no async driver: std sockets keep the default
//! build free of dependencies; a tokio driver can be added behind a
//! feature, since the endpoints do no IO.

#![forbid(unsafe_code)]

mod channel;
mod client;
mod config;
mod error;
mod interest;
mod peer;
mod server;
#[cfg(feature = "udp")]
pub mod udp;

pub use client::{Client, ClientEvent, ClientStats};
pub use config::{
    ClientConfig, ServerConfig, DEFAULT_MAX_ROUND_TRIP, DEFAULT_MTU, DEFAULT_TICK, UDP_IP_OVERHEAD,
    WIRE_OVERHEAD,
};
pub use error::{DisconnectReason, Handled, NetError, PayloadError};
pub use interest::{EveryEntity, Interest, Positions, Skipped, Tiered};
pub use peer::PeerStats;
pub use server::{Server, ServerEvent, ServerStats};

/// A client's id on a server: its connection slot, `0..max_clients`, also
/// its session id. A slot is reused after its client leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub(crate) u16);

impl ClientId {
    /// The slot (the session id, for [`tickpack_session::Server`] calls).
    pub fn index(self) -> u16 {
        self.0
    }
}

impl core::fmt::Display for ClientId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "client {}", self.0)
    }
}
