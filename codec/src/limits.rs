//! Limits on what a packet may make the decoder allocate, and what the
//! encoder will produce. Both peers should use the same values.

#![forbid(unsafe_code)]

/// Caps derived from configuration, never from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most entities one section may hold after decoding, and one section
    /// of a [`Recall`](crate::Recall). Default 65,536.
    pub max_entities_per_section: usize,
    /// Most bytes the blocks of one packet may regenerate. Default 256 KiB:
    /// a tick that changes 16,384 entities of 16 bytes, about 200 times
    /// what a 1,200-byte datagram carries compressed at a typical 5:1 and
    /// 40 times the racing lobby's keyframe.
    pub max_decoded_bytes: usize,
    /// Most bytes a decoded snapshot may hold, counted as entities times
    /// (record size + 4 id bytes) over all sections. Default 1 MiB. It
    /// bounds the output of one decode and each [`Recall`](crate::Recall)
    /// (counted the same way), so what a session client keeps: at most
    /// `history` snapshots and recalls of this size (recalls share most of
    /// their records).
    ///
    /// A recall keeps its records in chunks of 32 consecutive ids, and a
    /// chunk costs about 130 bytes of its own beside the counted bytes
    /// (measured on x86_64 with glibc). With dense ids that is 4 bytes an
    /// entity; with ids 32 apart, one entity per chunk, a sender can make
    /// each recall cost up to about 27 times its counted size (1-byte
    /// records): with the defaults about 9 MB per recall of one section's
    /// 65,536 entities, about 28 MB with this limit's 209,715 over several
    /// sections, and a session client keeps up to 32 distinct recalls.
    /// Lower this limit, or `max_entities_per_section`, or the client's
    /// history, where that matters.
    pub max_snapshot_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entities_per_section: 65_536,
            max_decoded_bytes: 256 << 10,
            max_snapshot_bytes: 1 << 20,
        }
    }
}
