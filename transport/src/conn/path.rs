//! Path validation after an address change, as RFC 9000 §9 (9.3, 9.3.3):
//! an authenticated packet from a new address only starts a probe. The
//! server keeps sending to the last validated address and sends the new
//! one a random path token; the connection moves only when the token comes
//! back from there. A probe ends unvalidated after [`PATH_PROBE_TIMEOUT`],
//! or at once when the validated address sends an authentic packet newer
//! than every before it (the client is still there), and a connection
//! starts at most one probe per [`MIGRATION_INTERVAL`]. Until it answers,
//! the new address is sent at most [`AMPLIFICATION_FACTOR`] times the
//! bytes received from it (QUIC's rule).

use std::net::SocketAddr;
use std::time::Duration;

use super::ConnError;

/// Most bytes sent to an unvalidated address per byte received from it.
pub const AMPLIFICATION_FACTOR: u64 = 3;
/// How long a new address has to echo its path token.
pub const PATH_PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Least time between two probes of one connection: a faster copy of the
/// client's packets can make the server probe the copier's address at most
/// this often.
pub const MIGRATION_INTERVAL: Duration = Duration::from_secs(1);
/// Bytes of a path token.
pub(crate) const PATH_TOKEN_BYTES: usize = 8;

/// A new address waiting for its echo.
#[derive(Debug, Clone)]
pub(crate) struct PathCheck {
    /// The address probed.
    pub(crate) addr: SocketAddr,
    pub(crate) token: [u8; PATH_TOKEN_BYTES],
    /// When the probe started.
    pub(crate) started: Duration,
    /// When the token was last sent.
    pub(crate) sent_at: Duration,
    received: u64,
    sent: u64,
}

impl PathCheck {
    /// A probe of `addr` started at `now` by a `received`-byte datagram
    /// from it.
    pub(crate) fn new(
        addr: SocketAddr,
        token: [u8; PATH_TOKEN_BYTES],
        received: usize,
        now: Duration,
    ) -> Self {
        Self {
            addr,
            token,
            started: now,
            sent_at: now,
            received: received as u64,
            sent: 0,
        }
    }

    /// Counts a datagram from the new address.
    pub(crate) fn received(&mut self, bytes: usize) {
        self.received = self.received.saturating_add(bytes as u64);
    }

    /// Whether the probe ran out of time at `now`.
    pub(crate) fn expired(&self, now: Duration) -> bool {
        now.saturating_sub(self.started) >= PATH_PROBE_TIMEOUT
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
