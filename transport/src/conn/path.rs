//! Path validation after an address change, as RFC 9000 §9 (9.3, 9.3.3):
//! an authenticated packet from a new address only starts a probe. The
//! server keeps sending to the last validated address and sends the new
//! one a random path token; the connection moves only when the token comes
//! back from there. A probe ends unvalidated after [`PATH_PROBE_TIMEOUT`]
//! (or three smoothed round trips, if longer), or at once when the
//! validated address sends an authentic packet newer than every before it
//! (the client is still there). Up to [`MAX_PATH_PROBES`] addresses are
//! probed at once, and a connection starts at most that many probes per
//! [`MIGRATION_INTERVAL`]: a copier that delivers every client packet
//! first from its own address holds one probe, and an authentic duplicate
//! from the client's real new address (which arrives second) still starts
//! another. Until it answers, a new address is sent at most
//! [`AMPLIFICATION_FACTOR`] times the bytes received from it (QUIC's rule).

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
/// How often a probed address is sent its token again while it does not
/// echo: at most this often, on the resend timer and in answer to its
/// packets, always within its [`AMPLIFICATION_FACTOR`] budget (at half the
/// datagrams lost each way, a token and its echo get through one time in
/// four, so the resends set how long a rebinding client waits).
pub const PATH_RESEND: Duration = Duration::from_millis(100);
/// Most addresses one connection probes at once.
pub const MAX_PATH_PROBES: usize = 2;
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
    timeout: Duration,
}

impl PathCheck {
    /// A probe of `addr` started at `now` by a `received`-byte datagram
    /// from it, given up after `timeout`.
    pub(crate) fn new(
        addr: SocketAddr,
        token: [u8; PATH_TOKEN_BYTES],
        received: usize,
        now: Duration,
        timeout: Duration,
    ) -> Self {
        Self {
            addr,
            token,
            started: now,
            sent_at: now,
            received: received as u64,
            sent: 0,
            timeout,
        }
    }

    /// Counts a datagram from the new address.
    pub(crate) fn received(&mut self, bytes: usize) {
        self.received = self.received.saturating_add(bytes as u64);
    }

    /// Whether the probe ran out of time at `now`.
    pub(crate) fn expired(&self, now: Duration) -> bool {
        now.saturating_sub(self.started) >= self.timeout
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

/// The probes of one connection, and when the last ones started.
#[derive(Debug, Clone, Default)]
pub(crate) struct Paths {
    probes: Vec<PathCheck>,
    started: [Option<Duration>; MAX_PATH_PROBES],
    /// The last probes that ran out of time (at most [`MAX_PATH_PROBES`]):
    /// their token went only to their address, so a late echo from there
    /// still validates it, and a new probe of that address reuses it.
    /// Otherwise, at round trips near the probe's timeout, each echo
    /// arrives for a token already replaced and the client never moves.
    expired: Vec<(SocketAddr, [u8; PATH_TOKEN_BYTES])>,
}

impl Paths {
    /// The probe of `addr`, if one is pending.
    pub(crate) fn get_mut(&mut self, addr: SocketAddr) -> Option<&mut PathCheck> {
        self.probes.iter_mut().find(|p| p.addr == addr)
    }

    /// Whether `addr` is being probed.
    pub(crate) fn probing(&self, addr: SocketAddr) -> bool {
        self.probes.iter().any(|p| p.addr == addr)
    }

    /// Whether a new probe may start at `now`.
    pub(crate) fn may_start(&self, now: Duration) -> bool {
        self.probes.len() < MAX_PATH_PROBES
            && self
                .started
                .iter()
                .any(|t| t.is_none_or(|t| now.saturating_sub(t) >= MIGRATION_INTERVAL))
    }

    /// Starts `probe` (the caller checked [`may_start`](Self::may_start)).
    pub(crate) fn start(&mut self, probe: PathCheck) {
        // The oldest start (or an unused entry, `None` sorting first).
        if let Some(oldest) = self.started.iter_mut().min_by_key(|t| **t) {
            *oldest = Some(probe.started);
        }
        self.probes.push(probe);
    }

    /// Ends every probe.
    pub(crate) fn clear(&mut self) {
        self.probes.clear();
        self.expired.clear();
    }

    /// Ends the probes that ran out of time.
    pub(crate) fn expire(&mut self, now: Duration) {
        let expired = &mut self.expired;
        self.probes.retain(|p| {
            if !p.expired(now) {
                return true;
            }
            expired.retain(|(a, _)| *a != p.addr);
            if expired.len() >= MAX_PATH_PROBES {
                expired.remove(0);
            }
            expired.push((p.addr, p.token));
            false
        });
    }

    /// The token of the last probe of `addr` that ran out of time.
    pub(crate) fn expired_token(&self, addr: SocketAddr) -> Option<[u8; PATH_TOKEN_BYTES]> {
        self.expired
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, t)| *t)
    }

    /// The probed addresses whose token was last sent `interval` ago.
    pub(crate) fn due(&self, now: Duration, interval: Duration) -> Vec<SocketAddr> {
        self.probes
            .iter()
            .filter(|p| now.saturating_sub(p.sent_at) >= interval)
            .map(|p| p.addr)
            .collect()
    }
}
