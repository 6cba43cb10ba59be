//! Limits on what a packet may make the decoder allocate, and what the
//! encoder will produce. Both peers should use the same values.

#![forbid(unsafe_code)]

/// Caps derived from configuration, never from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most entities one section may hold after decoding. Default 65,536.
    pub max_entities_per_section: usize,
    /// Most bytes the blocks of one packet may regenerate. Default 1 MiB.
    pub max_decoded_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entities_per_section: 65_536,
            max_decoded_bytes: 1 << 20,
        }
    }
}
