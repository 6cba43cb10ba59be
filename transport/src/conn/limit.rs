//! Handshake limits: how many handshake replies of one connect token may
//! wait in the server's queue at once, and how many one source address
//! gets per window, so that one valid request replayed from many (spoofed)
//! addresses, or one address sending many tokens, cannot fill the server's
//! handshake queue and crowd out other clients. The per-token bound counts
//! queued replies, not a rate, so copies of a client's request sent at a
//! lower rate than the server drains its queue never starve the client.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

/// The window the per-token and per-address counts are kept over.
pub(crate) const WINDOW: Duration = Duration::from_millis(250);
/// Handshake replies of one token queued at once (until
/// `Server::poll_transmit` takes them).
pub(crate) const PER_TOKEN_QUEUED: usize = 4;
/// Handshake replies per source address (IP and port) per window.
pub(crate) const PER_ADDRESS: u32 = 32;
/// Most keys counted at once; past it, keys whose window ended are
/// dropped, and if all are current the reply is refused.
pub(crate) const MAX_KEYS: usize = 4096;

/// Least time between two sweeps of ended windows.
pub(crate) const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Fixed-window counters per key.
#[derive(Debug)]
pub(crate) struct RateLimit<K> {
    per_window: u32,
    counts: HashMap<K, (Duration, u32)>,
    last_sweep: Duration,
}

impl<K: Hash + Eq + Copy> RateLimit<K> {
    pub(crate) fn new(per_window: u32) -> Self {
        Self {
            per_window,
            counts: HashMap::new(),
            last_sweep: Duration::ZERO,
        }
    }

    /// Forgets the keys whose window ended, at most once per
    /// [`SWEEP_INTERVAL`]: the table holds the addresses of the last
    /// moments, not every one seen until it reaches [`MAX_KEYS`].
    pub(crate) fn sweep(&mut self, now: Duration) {
        if now.saturating_sub(self.last_sweep) < SWEEP_INTERVAL {
            return;
        }
        self.last_sweep = now;
        self.counts
            .retain(|_, (start, _)| now.saturating_sub(*start) < WINDOW);
    }

    /// Whether `key` may be answered once more at `now`; counts it if so.
    pub(crate) fn allow(&mut self, key: K, now: Duration) -> bool {
        let current = |start: Duration| now.saturating_sub(start) < WINDOW;
        if !self.counts.contains_key(&key) && self.counts.len() >= MAX_KEYS {
            self.counts.retain(|_, (start, _)| current(*start));
            if self.counts.len() >= MAX_KEYS {
                return false;
            }
        }
        let entry = self.counts.entry(key).or_insert((now, 0));
        if !current(entry.0) {
            *entry = (now, 0);
        }
        if entry.1 >= self.per_window {
            return false;
        }
        entry.1 += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_key_and_window_and_stays_bounded() {
        let mut l = RateLimit::new(2);
        let t = Duration::from_secs(1);
        assert!(l.allow(1u32, t) && l.allow(1, t));
        assert!(!l.allow(1, t));
        assert!(l.allow(2, t));
        assert!(l.allow(1, t + WINDOW));
        for k in 0..MAX_KEYS as u32 {
            l.allow(10 + k, t + WINDOW);
        }
        assert!(l.counts.len() <= MAX_KEYS);
        assert!(!l.allow(u32::MAX, t + WINDOW));
        assert!(l.allow(u32::MAX, t + WINDOW * 2));
        assert!(l.counts.len() <= MAX_KEYS);
    }

    /// Failed before the sweep: every key stayed until `MAX_KEYS` were
    /// counted (the load soak's heap rose with each new address).
    #[test]
    fn ended_windows_are_forgotten_before_the_table_fills() {
        let mut l = RateLimit::new(2);
        let t = Duration::from_secs(10);
        for k in 0..100u32 {
            assert!(l.allow(k, t));
        }
        l.sweep(t + WINDOW);
        assert!(l.allow(1000, t + WINDOW));
        assert_eq!(l.counts.len(), 1);
    }
}
