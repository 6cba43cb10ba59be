//! A lossy datagram link on a virtual clock, in the style of quinn-proto's
//! test `Pair`: two endpoints exchange byte packets through two [`Link`]s
//! (one per direction) that drop, duplicate, delay and so reorder them,
//! decided by a seeded [`SplitMix64`]. Nothing sleeps: time is a
//! millisecond counter the test moves with [`Pair::advance`].
//!
//! A link can also be driven by hand (fuzz properties pick which packet in
//! flight to deliver, drop or duplicate): [`Link::in_flight`],
//! [`Link::take`], [`Link::drop_at`], [`Link::duplicate`].
//!
//! ```
//! use tickpack_testkit::link::{LinkConfig, Pair};
//!
//! let config = LinkConfig { loss_ppm: 0, dup_pct: 0, latency_ms: 30, jitter_ms: 0 };
//! let mut pair = Pair::new(config, 7);
//! pair.to_client.send(pair.now_ms, b"snapshot");
//! assert!(pair.to_client.recv(pair.now_ms).is_empty());
//! pair.advance(30);
//! assert_eq!(pair.to_client.recv(pair.now_ms), vec![b"snapshot".to_vec()]);
//! ```

use crate::rng::SplitMix64;

/// Parts per million in one percent, for [`LinkConfig::loss_ppm`].
pub const PPM_PER_PERCENT: u64 = 10_000;

/// How one direction of a link treats packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkConfig {
    /// Packets lost (while the link is lossy), in parts per million
    /// ([`PPM_PER_PERCENT`] per percent).
    pub loss_ppm: u64,
    /// Percent of packets delivered twice (each copy delayed on its own).
    pub dup_pct: u64,
    /// Fixed one-way delay.
    pub latency_ms: u64,
    /// Extra delay, uniform in `0..=jitter_ms`; reorders packets.
    pub jitter_ms: u64,
}

/// What a link did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Packets handed to [`Link::send`].
    pub sent: u64,
    /// Of those, dropped.
    pub lost: u64,
    /// Extra copies queued.
    pub duplicated: u64,
    /// Packets handed out by [`Link::recv`] or [`Link::take`].
    pub delivered: u64,
}

/// One direction: packets queued with their arrival time.
#[derive(Debug, Clone)]
pub struct Link {
    config: LinkConfig,
    lossy: bool,
    rng: SplitMix64,
    /// `(arrival ms, packet)` in send order.
    queue: Vec<(u64, Vec<u8>)>,
    stats: LinkStats,
}

impl Link {
    /// A lossy link whose decisions come from `seed`.
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        Self {
            config,
            lossy: true,
            rng: SplitMix64::new(seed),
            queue: Vec::new(),
            stats: LinkStats::default(),
        }
    }

    /// Turns loss on or off (a calm period keeps duplication and delay).
    pub fn set_lossy(&mut self, lossy: bool) {
        self.lossy = lossy;
    }

    /// Sends `bytes` at `now_ms`: lost, or queued once or twice with latency
    /// and jitter.
    pub fn send(&mut self, now_ms: u64, bytes: &[u8]) {
        self.stats.sent += 1;
        if self.lossy && self.rng.below(1_000_000) < self.config.loss_ppm {
            self.stats.lost += 1;
            return;
        }
        let copies = if self.rng.below(100) < self.config.dup_pct {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let jitter = if self.config.jitter_ms > 0 {
                self.rng.below(self.config.jitter_ms + 1)
            } else {
                0
            };
            self.queue
                .push((now_ms + self.config.latency_ms + jitter, bytes.to_vec()));
        }
    }

    /// Every packet arrived by `now_ms`, by arrival time (equal times in
    /// send order).
    pub fn recv(&mut self, now_ms: u64) -> Vec<Vec<u8>> {
        self.queue.sort_by_key(|p| p.0);
        let n = self.queue.iter().take_while(|p| p.0 <= now_ms).count();
        self.stats.delivered += n as u64;
        self.queue.drain(..n).map(|p| p.1).collect()
    }

    /// Packets in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// Delivers the `i`-th packet in flight now, whatever its arrival time.
    pub fn take(&mut self, i: usize) -> Option<Vec<u8>> {
        if i >= self.queue.len() {
            return None;
        }
        self.stats.delivered += 1;
        Some(self.queue.remove(i).1)
    }

    /// Drops the `i`-th packet in flight; false if there is none.
    pub fn drop_at(&mut self, i: usize) -> bool {
        if i >= self.queue.len() {
            return false;
        }
        self.queue.remove(i);
        self.stats.lost += 1;
        true
    }

    /// Queues a second copy of the `i`-th packet in flight, arriving with
    /// it; false if there is none.
    pub fn duplicate(&mut self, i: usize) -> bool {
        let Some(p) = self.queue.get(i).cloned() else {
            return false;
        };
        self.queue.push(p);
        self.stats.duplicated += 1;
        true
    }

    /// Counters so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }
}

/// A server and a client joined by two links, on one virtual clock.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The virtual clock, in milliseconds.
    pub now_ms: u64,
    /// Server to client.
    pub to_client: Link,
    /// Client to server.
    pub to_server: Link,
}

impl Pair {
    /// Both directions with `config`, decisions seeded from `seed` (each
    /// direction its own stream).
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        let mut s = SplitMix64::new(seed);
        Self {
            now_ms: 0,
            to_client: Link::new(config, s.next_u64()),
            to_server: Link::new(config, s.next_u64()),
        }
    }

    /// Moves the clock on by `ms`.
    pub fn advance(&mut self, ms: u64) {
        self.now_ms += ms;
    }

    /// Turns loss on or off in both directions.
    pub fn set_lossy(&mut self, lossy: bool) {
        self.to_client.set_lossy(lossy);
        self.to_server.set_lossy(lossy);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_duplication_and_reordering_happen_at_their_rates() {
        let config = LinkConfig {
            loss_ppm: 20 * PPM_PER_PERCENT,
            dup_pct: 10,
            latency_ms: 50,
            jitter_ms: 40,
        };
        let mut link = Link::new(config, 1);
        for t in 0..1000u32 {
            link.send(u64::from(t), &t.to_le_bytes());
        }
        let got: Vec<u32> = link
            .recv(u64::MAX)
            .iter()
            .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
            .collect();
        let s = link.stats();
        assert!((150..250).contains(&s.lost), "{s:?}");
        assert!((50..130).contains(&s.duplicated), "{s:?}");
        assert_eq!(got.len() as u64, 1000 - s.lost + s.duplicated);
        assert!(got.windows(2).any(|w| w[1] < w[0]), "never reordered");
        link.set_lossy(false);
        link.send(2000, b"x");
        assert!(link.recv(2049).is_empty());
        assert!(!link.recv(2090).is_empty());
    }

    #[test]
    fn manual_control() {
        let mut link = Link::new(LinkConfig::default(), 0);
        link.send(0, b"a");
        link.send(0, b"b");
        assert!(link.duplicate(0));
        assert_eq!(link.in_flight(), 3);
        assert!(link.drop_at(1));
        assert_eq!(link.take(1), Some(b"a".to_vec()));
        assert_eq!(link.take(5), None);
        assert_eq!(link.recv(0), vec![b"a".to_vec()]);
    }
}
