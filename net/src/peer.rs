//! The server's side of one connected client.

use tickpack_transport::{ChunkSender, TokenBucket};

/// What one client cost and did, as the server saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerStats {
    /// Ticks it was due a regular snapshot.
    pub ticks: u64,
    /// Session packet bytes of the regular snapshots sent (fragment and
    /// connection framing not counted).
    pub bytes: u64,
    /// Regular snapshots that were full (a resync).
    pub full: u64,
    /// Snapshots paid from committed tokens.
    pub green: u64,
    /// Snapshots paid from the excess burst.
    pub yellow: u64,
    /// Snapshots held back: over its budget.
    pub held_back: u64,
    /// Snapshots not sent: more fragments than allowed.
    pub too_large: u64,
    /// Malformed authenticated payloads it sent.
    pub malformed: u64,
    /// Address changes followed.
    pub migrations: u64,
}

#[derive(Debug)]
pub(crate) struct Peer {
    /// The user id of its connect token.
    pub(crate) user: u64,
    pub(crate) chunk: ChunkSender,
    /// The connect snapshot is in the chunk.
    pub(crate) chunk_started: bool,
    /// Every slice acked: the client holds the connect snapshot.
    pub(crate) chunk_acked: bool,
    /// Sequence of the connect snapshot.
    pub(crate) chunk_seq: u16,
    /// The client agreed to the session hello.
    pub(crate) answered: bool,
    /// Regular snapshots flow.
    pub(crate) live: bool,
    /// The next fragment sequence.
    pub(crate) frag_seq: u16,
    pub(crate) bucket: TokenBucket,
    pub(crate) stats: PeerStats,
}

impl Peer {
    pub(crate) fn new(user: u64, chunk: ChunkSender, bucket: TokenBucket) -> Self {
        Self {
            user,
            chunk,
            chunk_started: false,
            chunk_acked: false,
            chunk_seq: 0,
            answered: false,
            live: false,
            frag_seq: 0,
            bucket,
            stats: PeerStats::default(),
        }
    }
}
