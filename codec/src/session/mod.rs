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
//! use tickpack::session::{Client, ClientConfig, Received, Server, ServerConfig, View};
//! use tickpack::{Primitive, Schema, Snapshot};
//!
//! let schema = Schema::builder().entity("car").field("x", Primitive::F32, 1).build()?;
//! let mut server = Server::new(schema.clone(), ServerConfig::default())?;
//! let mut client = Client::new(schema.clone(), ClientConfig::default())?;
//! // The handshake: both ends agree on the schema and the dictionaries.
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
//!     server.handle_message(&client.message(1).to_bytes())?;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod client;
mod error;
mod handshake;
mod message;
mod persist;
mod rate;
mod server;
mod view;

pub use client::{Client, ClientConfig, ClientStats, DropReason, Received};
pub use error::SessionError;
pub use handshake::Hello;
pub use message::ClientMessage;
pub use persist::Persist;
pub use rate::RateTiers;
pub use server::{AckOutcome, Server, ServerConfig, ServerStats};
pub use tickpack_seq::{seq_distance, seq_newer};
pub use view::View;

/// Default number of snapshots kept per client, as in Quake 3.
pub const DEFAULT_HISTORY: usize = 32;
