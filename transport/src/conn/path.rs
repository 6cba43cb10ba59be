//! Path validation after an address change: until the client echoes a
//! random token from its new address, the server sends there at most
//! [`AMPLIFICATION_FACTOR`] times the bytes it received from there (QUIC's
//! rule), so a copied packet resent from a victim's address cannot turn
//! the client's stream into a flood at the victim.

use std::time::Duration;

use super::ConnError;

/// Most bytes sent to an unvalidated address per byte received from it.
pub const AMPLIFICATION_FACTOR: u64 = 3;
/// Bytes of a path token.
pub(crate) const PATH_TOKEN_BYTES: usize = 8;

/// A new address waiting for its echo.
#[derive(Debug, Clone)]
pub(crate) struct PathCheck {
    pub(crate) token: [u8; PATH_TOKEN_BYTES],
    /// When the token was last sent.
    pub(crate) sent_at: Duration,
    received: u64,
    sent: u64,
}

impl PathCheck {
    /// A check started at `now` by a `received`-byte datagram from the new
    /// address.
    pub(crate) fn new(token: [u8; PATH_TOKEN_BYTES], received: usize, now: Duration) -> Self {
        Self {
            token,
            sent_at: now,
            received: received as u64,
            sent: 0,
        }
    }

    /// Counts a datagram from the new address.
    pub(crate) fn received(&mut self, bytes: usize) {
        self.received = self.received.saturating_add(bytes as u64);
    }

    /// Charges `bytes` to the budget, or refuses them.
    pub(crate) fn charge(&mut self, bytes: usize) -> Result<(), ConnError> {
        let limit = self.received.saturating_mul(AMPLIFICATION_FACTOR);
        let sent = self.sent.saturating_add(bytes as u64);
        if sent > limit {
            return Err(ConnError::PathNotValidated {
                sent: self.sent,
                limit,
            });
        }
        self.sent = sent;
        Ok(())
    }
}
