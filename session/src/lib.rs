//! Last-acked baselines, the Quake 3 way, sans-IO.
//!
//! The [`Server`] keeps, per client, a ring of the last snapshots it sent
//! (default 32) and the newest sequence that client acknowledged. Every tick
//! it sends each client a delta against that newest acked snapshot, or a full
//! snapshot when there is none; it never waits for an ack. The [`Client`]
//! drops anything older than what it has applied, decodes the rest against
//! the baseline the packet names, and always knows the ack to send next.
//! Lost packets, lost acks, reordering and duplicates need no special case:
//! the next packet is simply coded against an older baseline.
//!
//! No sockets and no clocks: packets go in and out as byte slices.
//!
//! ```
//! use std::sync::Arc;
//! use tickpack_session::{Client, ClientConfig, Received, Server, ServerConfig, View};
//! use tickpack::{Primitive, Schema, Snapshot};
//!
//! let schema = Schema::builder().entity("car").field("x", Primitive::F32, 1).build()?;
//! let mut server = Server::new(schema.clone(), ServerConfig::default())?;
//! let mut client = Client::new(schema.clone(), ClientConfig::default())?;
//! // The handshake: both ends agree on the schema, the dictionaries and
//! // the limits.
//! let answer = client.answer(&server.hello().to_bytes())?;
//! server.accept(1, &answer)?;
//! for tick in 0..3u8 {
//!     let mut world = Snapshot::new(&schema);
//!     world.section_mut(0).unwrap().insert(0, &f32::from(tick).to_le_bytes())?;
//!     let world = Arc::new(world);
//!     server.begin_tick(world.clone());
//!     let packet = server.send(1, &View::all())?;
//!     assert!(matches!(client.receive(&packet), Received::Applied { .. }));
//!     assert_eq!(client.latest().map(|(_, s)| s), Some(&*world));
//!     server.handle_message(1, &client.message().to_bytes())?;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! `test-knobs` (off by default) adds [`ServerConfig`]'s
//! `first_sequence` (start near the sequence wrap) and `share_encodes`
//! (turn encode sharing off to measure it), for tests and benches; not a
//! stable API.

#![forbid(unsafe_code)]

mod client;
mod error;
mod handshake;
mod message;
mod persist;
mod rate;
mod ring;
mod server;
mod view;

pub use client::{
    Client, ClientConfig, ClientStats, DropReason, Received, DEFAULT_MAX_JUMP, DEFAULT_RESYNC_AFTER,
};
pub use error::SessionError;
pub use handshake::Hello;
pub use message::ClientMessage;
pub use persist::Persist;
pub use rate::RateTiers;
pub use server::{AckOutcome, Server, ServerConfig, ServerStats, DEFAULT_BASELINE_WINDOW};
pub use tickpack_seq::{seq_distance, seq_newer};
pub use view::View;

/// Default number of snapshots kept per client, as in Quake 3: enough for
/// round trips up to 200 ms at 60 Hz by [`history_for`]'s rule (twice the
/// round trip in ticks, plus 8). Longer round trips need [`history_for`].
pub const DEFAULT_HISTORY: usize = 32;

/// The history (for [`ServerConfig::history`] and [`ClientConfig::history`])
/// that serves round trips up to `max_round_trip` at one snapshot per
/// `tick`: twice the round trip in ticks (an ack is itself late, and with
/// loss the newest ack that arrived is older still) plus 8, at least
/// [`DEFAULT_HISTORY`], at most 32,767.
///
/// A history shorter than the round trip evicts every snapshot before its
/// ack arrives, and every packet becomes a full snapshot.
///
/// ```
/// use std::time::Duration;
/// use tickpack_session::history_for;
///
/// let tick = Duration::from_micros(16_667); // 60 Hz
/// assert_eq!(history_for(tick, Duration::from_millis(100)), 32);
/// assert_eq!(history_for(tick, Duration::from_millis(800)), 104);
/// ```
pub fn history_for(tick: core::time::Duration, max_round_trip: core::time::Duration) -> usize {
    let tick_ns = tick.as_nanos().max(1);
    let ticks = max_round_trip.as_nanos().div_ceil(tick_ns);
    let history = ticks.saturating_mul(2).saturating_add(8);
    usize::try_from(history).unwrap_or(usize::MAX).clamp(
        DEFAULT_HISTORY,
        usize::from(tickpack::MAX_BASELINE_DISTANCE),
    )
}
