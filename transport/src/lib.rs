//! Sans-IO transport pieces for game-state packets: authenticated
//! connections, fragmentation and reassembly, chunk/slice reliable transfer, the token bucket and the
//! jitter buffer. They carry bytes and know nothing of snapshots;
//! packets and time are passed in (time as a [`Duration`](std::time::Duration)
//! since any fixed origin).
//!
//! | piece | use it for |
//! |-------|------------|
//! | [`conn`] | the UDP path on the open internet: connect tokens, challenge/response, every packet sealed and replay-checked |
//! | [`fragment`] | snapshots above the MTU: dropped whole if a part is lost |
//! | [`chunk`] | large must-arrive blocks (full state at connect, a dictionary set): resent until acked |
//! | [`bucket`] | the per-client byte budget (CIR, CBS, EBS) paying for snapshots ([`Fragmenter::split_paced`]) and chunk slices ([`ChunkSender::poll_transmit_paced`]) |
//! | [`jitter`] | client-side playout at the tick rate, late and gap counts |
//! | [`seq`] | wrapping `u16` sequence comparison (re-exported from `tickpack-seq`) |
//!
//! Which entities a client gets each tick (distance-based rate tiers) is
//! interest management and lives beside `tickpack_session::View`.
//!
//! ```
//! use std::time::Duration;
//! use tickpack_transport::{FragmentConfig, Fragmenter, Reassembler};
//!
//! let config = FragmentConfig::default(); // 1200-byte datagrams
//! let mut tx = Fragmenter::new(config);
//! let mut rx = Reassembler::new(config);
//! let packet = vec![7u8; 5000];
//! let mut parts = tx.split(&packet)?;
//! assert_eq!(parts.len(), 5);
//! parts.reverse(); // any order, duplicates ignored
//! let mut out = None;
//! for part in &parts {
//!     out = out.or(rx.handle(part, Duration::ZERO)?);
//! }
//! assert_eq!(out, Some(packet));
//! # Ok::<(), tickpack_transport::FragmentError>(())
//! ```

// Crate-wide: no module here needs `unsafe`.
#![forbid(unsafe_code)]

pub mod bucket;
pub mod chunk;
pub mod conn;
pub mod fragment;
pub mod jitter;

/// Wrapping `u16` sequence arithmetic (the `tickpack-seq` crate).
pub mod seq {
    pub use tickpack_seq::{seq_distance, seq_newer};
}

pub use bucket::{Conformance, TokenBucket, TokenBucketConfig};
pub use chunk::{
    ChunkConfig, ChunkError, ChunkReceiver, ChunkSender, ResendDelay, SenderStats, MAX_CHUNK_SIZE,
    MAX_SLICES_PER_CHUNK, SLICE_SIZE,
};
pub use fragment::{
    FragmentConfig, FragmentError, FragmentHeader, Fragmenter, Paced, Reassembler, ReassemblyStats,
    DEFAULT_MTU, FRAGMENT_HEADER_LEN,
};
pub use jitter::{JitterBuffer, JitterConfig, JitterStats, Playout, Pushed};
