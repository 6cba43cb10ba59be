//! Wrapping `u16` sequence arithmetic, shared by `tickpack_session`
//! (snapshot sequences and acks) and `tickpack-transport` (fragment
//! sequences, chunk ids).
//!
//! It is its own crate because the transport must not depend on the codec
//! and the codec's core should not carry the transport: both depend on this
//! one file instead.
//!
//! ```
//! use tickpack_seq::{seq_distance, seq_newer};
//! assert!(seq_newer(2, 65534));
//! assert_eq!(seq_distance(2, 65534), 4);
//! ```

#![forbid(unsafe_code)]

/// Whether `a` comes after `b`, modulo 2^16 (at most 32767 ahead).
#[inline]
pub fn seq_newer(a: u16, b: u16) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000
}

/// How far `newer` is ahead of `older`, modulo 2^16.
#[inline]
pub fn seq_distance(newer: u16, older: u16) -> u16 {
    newer.wrapping_sub(older)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn across_the_wrap() {
        assert!(seq_newer(1, 0));
        assert!(seq_newer(0, 65535));
        assert!(seq_newer(5, 65530));
        assert!(!seq_newer(65530, 5));
        assert!(!seq_newer(7, 7));
        assert!(seq_newer(0x7fff, 0));
        assert!(!seq_newer(0x8000, 0));
        assert_eq!(seq_distance(3, 65533), 6);
    }
}
