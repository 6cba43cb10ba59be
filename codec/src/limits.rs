//! Limits on what a packet may make the decoder allocate, and what the
//! encoder will produce. Both peers should use the same values.

/// Caps derived from configuration, never from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// bounds the output of one decode and each [`Recall`](crate::Recall),
    /// so what a session client keeps: at most `history` snapshots and
    /// recalls of this size (recalls share most of their records).
    ///
    /// A recall counts its entities the same way plus 128 bytes for every
    /// group of 32 consecutive ids it holds any of (FORMAT.md 4.7): it
    /// stores each group as one chunk, which costs about 130 bytes of its
    /// own (measured on x86_64 with glibc). So sparse ids cannot make a
    /// recall much larger than it counts: a sender moving 32,768 entities
    /// with ids 32 apart and 1-byte records in and out of view every tick
    /// leaves a session client at the defaults 45 MB (snapshots and 32
    /// distinct recalls; `session/tests/decoder_memory.rs`).
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
