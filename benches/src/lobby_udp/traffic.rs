//! Bytes exchanged per address, for the lobby's check that the server
//! never sent an unverified address more than it received from it. The
//! table is capped: spoofed source addresses cannot grow it without end.
//! Addresses beyond the cap share one aggregate entry, so the check still
//! covers them (in sum).

use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};

/// Most addresses tracked one by one.
pub(crate) const MAX_TRACKED: usize = 4096;

/// Bytes exchanged with one address.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Traffic {
    pub(crate) received: u64,
    pub(crate) sent: u64,
}

/// Per-address traffic, at most [`MAX_TRACKED`] addresses, the rest in one
/// aggregate.
#[derive(Debug, Default)]
pub(crate) struct TrafficTable {
    by_address: HashMap<SocketAddr, Traffic>,
    untracked: Traffic,
}

impl TrafficTable {
    fn entry(&mut self, addr: SocketAddr) -> &mut Traffic {
        if self.by_address.len() < MAX_TRACKED || self.by_address.contains_key(&addr) {
            self.by_address.entry(addr).or_default()
        } else {
            &mut self.untracked
        }
    }

    /// Counts `bytes` received from `from`.
    pub(crate) fn received(&mut self, from: SocketAddr, bytes: usize) {
        self.entry(from).received += bytes as u64;
    }

    /// Counts `bytes` sent to `to`.
    pub(crate) fn sent(&mut self, to: SocketAddr, bytes: usize) {
        self.entry(to).sent += bytes as u64;
    }

    /// Addresses not in `verified` that were sent more than they sent; the
    /// addresses beyond the cap count as one, `0.0.0.0:0`, when together
    /// they were.
    pub(crate) fn amplified(&self, verified: &HashSet<SocketAddr>) -> Vec<(SocketAddr, Traffic)> {
        let mut out: Vec<_> = self
            .by_address
            .iter()
            .filter(|(a, t)| !verified.contains(a) && t.sent > t.received)
            .map(|(a, t)| (*a, *t))
            .collect();
        if self.untracked.sent > self.untracked.received {
            out.push((SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)), self.untracked));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(i: u32) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::from(0x0a00_0000 + i), 5000))
    }

    #[test]
    fn spoofed_addresses_beyond_the_cap_share_one_entry() {
        let mut t = TrafficTable::default();
        for i in 0..3 * MAX_TRACKED as u32 {
            t.received(addr(i), 100);
        }
        assert_eq!(t.by_address.len(), MAX_TRACKED);
        // Answers to the untracked addresses stay within what they sent.
        for i in MAX_TRACKED as u32..3 * MAX_TRACKED as u32 {
            t.sent(addr(i), 100);
        }
        assert!(t.amplified(&HashSet::new()).is_empty());
        // One byte more to any of them is amplification, in sum.
        t.sent(addr(3 * MAX_TRACKED as u32 - 1), 1);
        let amplified = t.amplified(&HashSet::new());
        assert_eq!(amplified.len(), 1);
        assert_eq!(amplified[0].0.port(), 0);
    }

    #[test]
    fn tracked_addresses_are_checked_one_by_one() {
        let mut t = TrafficTable::default();
        t.received(addr(1), 10);
        t.sent(addr(1), 11);
        t.received(addr(2), 10);
        t.sent(addr(2), 10);
        let amplified = t.amplified(&HashSet::new());
        assert_eq!(amplified.len(), 1);
        assert_eq!(amplified[0].0, addr(1));
        assert!(t.amplified(&HashSet::from([addr(1)])).is_empty());
    }
}
