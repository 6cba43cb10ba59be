//! Chunk/slice reliable transfer (after Glenn Fiedler's "Sending Large
//! Blocks of Data"): a chunk of up to [`MAX_CHUNK_SIZE`] bytes is cut into
//! up to [`MAX_SLICES_PER_CHUNK`] slices of [`SLICE_SIZE`] bytes, which are
//! resent until the receiver acks them all. One chunk is in flight at a
//! time, with a send queue in front; the receiver holds one finished chunk
//! until it is read.
//!
//! Use it for large, infrequent, must-arrive data (the full state at
//! connect, a dictionary set for a client that lacks it), not for
//! snapshots: those go through [`fragment`](crate::fragment).
//!
//! Sans-IO: the [`ChunkSender`] takes acks with
//! [`handle_ack`](ChunkSender::handle_ack) and hands out slice packets from
//! [`poll_transmit`](ChunkSender::poll_transmit); the [`ChunkReceiver`]
//! takes slices with [`handle_slice`](ChunkReceiver::handle_slice), hands
//! out acks from [`poll_transmit`](ChunkReceiver::poll_transmit) and chunks
//! from [`poll_chunk`](ChunkReceiver::poll_chunk). Time is a [`Duration`]
//! since any fixed origin.
//!
//! # Wire format
//!
//! Slice packet, all integers little-endian:
//!
//! | bytes | field            | meaning                                  |
//! |-------|------------------|------------------------------------------|
//! | 0     | type             | [`SLICE_PACKET`]                          |
//! | 1..3  | `chunk_id`       | wrapping `u16`                           |
//! | 3..11 | `transfer`       | the sender's random id of this transfer  |
//! | 11    | `slice_id`       | `0..num_slices`                          |
//! | 12    | `num_slices - 1` | `num_slices` in `1..=256`                |
//! | 13..15| `slice_bytes - 1`| last slice only, `slice_bytes` in `1..=1024` |
//! | rest  | data             | exactly `SLICE_SIZE` bytes but in the last slice |
//!
//! Ack packet: type [`ACK_PACKET`], `chunk_id` (2 bytes), `transfer` (8
//! bytes, the acked transfer's), `num_slices - 1` (1 byte), then
//! `ceil(num_slices / 8)` bytes of bitfield, slice `i` in bit `i % 8` of
//! byte `i / 8`; bits past `num_slices` must be zero.
//!
//! # Forged packets
//!
//! Slices and acks carry no authentication: on the open internet, carry
//! them inside [`conn`](crate::conn) payloads, which are. On their own
//! they hold against a forger who does not see the transfer's packets (off
//! the path): a sender takes only acks that name its transfer's random
//! 64-bit id, and a receiver that started on a forged slice switches to the
//! real transfer once more conflicting slices than the forged transfer's
//! own have arrived since it last progressed. A forger who reads the
//! packets (on the path) can still ack slices that were lost or put its
//! own data in a transfer.
//!
//! The module is split by concern: `wire` parses and writes the two packet
//! kinds, `sender` and `receiver` hold the two state machines.

use core::fmt;
use std::time::Duration;

pub(crate) mod receiver;
pub(crate) mod sender;
pub(crate) mod wire;

pub use receiver::{ChunkReceiver, DEFAULT_STALL_TIMEOUT};
pub use sender::{ChunkSender, SenderStats};

/// Bytes per slice (all but the last slice of a chunk are this size).
pub const SLICE_SIZE: usize = 1024;
/// Most slices per chunk.
pub const MAX_SLICES_PER_CHUNK: usize = 256;
/// Largest chunk: `SLICE_SIZE * MAX_SLICES_PER_CHUNK` (256 KiB).
pub const MAX_CHUNK_SIZE: usize = SLICE_SIZE * MAX_SLICES_PER_CHUNK;
/// Type byte of a slice packet.
pub const SLICE_PACKET: u8 = 0x51;
/// Type byte of an ack packet.
pub const ACK_PACKET: u8 = 0xac;
/// Header bytes of a slice packet (two more on the last slice).
pub const SLICE_HEADER_LEN: usize = 13;
/// Largest slice packet: header, size field and a full slice (1039 bytes,
/// under a 1200-byte MTU).
pub const MAX_SLICE_PACKET: usize = SLICE_HEADER_LEN + 2 + SLICE_SIZE;
/// Header bytes of an ack packet (before its bitfield).
pub const ACK_HEADER_LEN: usize = 12;
/// Largest ack packet.
pub const MAX_ACK_PACKET: usize = ACK_HEADER_LEN + MAX_SLICES_PER_CHUNK / 8;

/// Settings of a [`ChunkSender`] (the receiver needs only a size limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkConfig {
    /// Target bandwidth in bytes per second; default 32 000 (256 kbps).
    pub bandwidth: u64,
    /// Bytes charged per packet on top of its payload (UDP/IP and the
    /// caller's own framing); default 28.
    pub packet_overhead: usize,
    /// How long a slice waits for its ack before it is resent.
    pub resend: ResendDelay,
    /// Send every slice once at the start of a chunk regardless of the
    /// budget, then pause for `burst_pause` (an "initial burst");
    /// default off.
    pub initial_burst: bool,
    /// Pause after the initial burst; default 100 ms.
    pub burst_pause: Duration,
    /// Unused budget is capped at this much time of bandwidth, so an idle
    /// sender does not save up a burst; default 250 ms.
    pub max_budget_time: Duration,
    /// Most chunks waiting behind the one in flight; default 8.
    pub max_queued: usize,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        Self {
            bandwidth: 32_000,
            packet_overhead: 28,
            resend: ResendDelay::Fixed(Duration::from_millis(100)),
            initial_burst: false,
            burst_pause: Duration::from_millis(100),
            max_budget_time: Duration::from_millis(250),
            max_queued: 8,
        }
    }
}

/// The minimum time between two sends of the same slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResendDelay {
    /// A fixed delay (100 ms is a good start).
    Fixed(Duration),
    /// 1.25 × the RTT given with [`ChunkSender::set_rtt`]; the fallback
    /// until an RTT is known.
    Rtt {
        /// Delay used before any RTT estimate.
        fallback: Duration,
    },
}

/// An error from the chunk system. Hostile or corrupt packets give one of
/// these, never a panic.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChunkError {
    /// A chunk to send is empty.
    EmptyChunk,
    /// A chunk is larger than the limit.
    ChunkTooLarge {
        /// Chunk size (for a received chunk, the least size its slice count
        /// implies).
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The send queue is full.
    QueueFull {
        /// [`ChunkConfig::max_queued`].
        limit: usize,
    },
    /// A packet is shorter than its header or bitfield.
    Truncated {
        /// Packet length.
        len: usize,
        /// Length needed.
        needed: usize,
    },
    /// The first byte is not the expected packet type.
    WrongType {
        /// The byte found.
        found: u8,
    },
    /// `slice_id` is not below `num_slices`.
    SliceOutOfRange {
        /// Slice id.
        slice_id: usize,
        /// Slice count.
        num_slices: usize,
    },
    /// A slice's data length is wrong (a non-last slice not `SLICE_SIZE`, a
    /// last slice not its announced size).
    SliceSize {
        /// Slice id.
        slice_id: usize,
        /// Length required.
        expected: usize,
        /// Length found.
        actual: usize,
    },
    /// A slice or ack names a slice count that disagrees with the chunk.
    NumSlicesMismatch {
        /// Chunk id.
        chunk_id: u16,
        /// Slice count of the chunk.
        expected: usize,
        /// Slice count in the packet.
        actual: usize,
    },
    /// A packet names a chunk ahead of the one this end is at.
    UnexpectedChunk {
        /// Chunk id in the packet.
        chunk_id: u16,
        /// Chunk id this end is at.
        expected: u16,
    },
    /// Trailing bytes after an ack bitfield, or bits set past `num_slices`.
    AckPadding {
        /// Chunk id.
        chunk_id: u16,
    },
    /// An ack or slice of the right chunk id but another transfer (forged,
    /// or of an earlier sender).
    OtherTransfer {
        /// Chunk id.
        chunk_id: u16,
    },
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyChunk => write!(f, "chunk is empty"),
            Self::ChunkTooLarge { size, limit } => {
                write!(f, "chunk of {size} bytes exceeds {limit}")
            }
            Self::QueueFull { limit } => write!(f, "chunk send queue is full ({limit} chunks)"),
            Self::Truncated { len, needed } => {
                write!(f, "chunk packet of {len} bytes, needs {needed}")
            }
            Self::WrongType { found } => write!(f, "unexpected chunk packet type {found:#04x}"),
            Self::SliceOutOfRange {
                slice_id,
                num_slices,
            } => write!(f, "slice {slice_id} is not below slice count {num_slices}"),
            Self::SliceSize {
                slice_id,
                expected,
                actual,
            } => write!(
                f,
                "slice {slice_id} has {actual} bytes, expected {expected}"
            ),
            Self::NumSlicesMismatch {
                chunk_id,
                expected,
                actual,
            } => write!(
                f,
                "chunk {chunk_id} has {expected} slices, packet says {actual}"
            ),
            Self::UnexpectedChunk { chunk_id, expected } => {
                write!(f, "packet for chunk {chunk_id}, expected chunk {expected}")
            }
            Self::OtherTransfer { chunk_id } => {
                write!(f, "packet of chunk {chunk_id} names another transfer")
            }
            Self::AckPadding { chunk_id } => {
                write!(
                    f,
                    "ack for chunk {chunk_id} has bits or bytes past its slices"
                )
            }
        }
    }
}

impl std::error::Error for ChunkError {}

/// A random transfer id from the operating system's generator, or, should
/// that fail, from std's randomly keyed SipHash (still unknown off the
/// path).
pub(crate) fn random_transfer() -> u64 {
    use chacha20poly1305::aead::rand_core::RngCore;
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 8];
    if chacha20poly1305::aead::OsRng
        .try_fill_bytes(&mut bytes)
        .is_ok()
    {
        return u64::from_le_bytes(bytes);
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x7472_616e_7366_6572);
    h.finish()
}
