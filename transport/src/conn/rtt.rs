//! The smoothed round-trip estimate of a connection (RFC 6298's SRTT and
//! RTTVAR, as RFC 9002 §5 keeps them), from its ping/pong exchanges.

use std::time::Duration;

/// A connection's round-trip time, from [`Server::rtt`](super::Server::rtt)
/// and [`Client::rtt`](super::Client::rtt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rtt {
    smoothed: Duration,
    variance: Duration,
    latest: Duration,
    min: Duration,
}

impl Rtt {
    /// The estimate after its first sample: SRTT = R, RTTVAR = R / 2.
    pub(crate) fn first(sample: Duration) -> Self {
        Self {
            smoothed: sample,
            variance: sample / 2,
            latest: sample,
            min: sample,
        }
    }

    /// Folds in a sample: RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, then
    /// SRTT = 7/8 SRTT + 1/8 R.
    pub(crate) fn update(&mut self, sample: Duration) {
        let deviation = self.smoothed.abs_diff(sample);
        self.variance = (self.variance * 3 + deviation) / 4;
        self.smoothed = (self.smoothed * 7 + sample) / 8;
        self.latest = sample;
        self.min = self.min.min(sample);
    }

    /// The smoothed round-trip time (SRTT).
    pub fn smoothed(&self) -> Duration {
        self.smoothed
    }

    /// The round-trip variation (RTTVAR).
    pub fn variance(&self) -> Duration {
        self.variance
    }

    /// The latest sample.
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// The smallest sample so far.
    pub fn min(&self) -> Duration {
        self.min
    }

    /// SRTT + 4 RTTVAR (RFC 6298's retransmission timeout before its
    /// one-second floor): a round trip takes longer than this rarely.
    pub fn timeout(&self) -> Duration {
        self.smoothed + (self.variance * 4).max(Duration::from_millis(1))
    }
}

/// Pings awaiting their pong at once: with one ping per
/// [`PING_INTERVAL`](super::PING_INTERVAL) (500 ms), round trips up to 4 s
/// still give samples (with a single ping in flight, a round trip longer
/// than the interval never did).
const PINGS_IN_FLIGHT: usize = 8;

/// One side's ping state: the pings in flight and the estimate.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pinger {
    /// Id (the ping packet's sequence) and send time of the last pings
    /// not answered yet; a new ping replaces the oldest.
    in_flight: [Option<(u64, Duration)>; PINGS_IN_FLIGHT],
    /// Where the next ping goes in `in_flight`.
    next: usize,
    pub(crate) last_ping: Option<Duration>,
    pub(crate) rtt: Option<Rtt>,
}

impl Pinger {
    /// Whether a ping is due at `now`.
    pub(crate) fn due(&self, now: Duration, interval: Duration) -> bool {
        self.last_ping
            .is_none_or(|t| now.saturating_sub(t) >= interval)
    }

    /// Records a ping with `id` sent at `now` (it replaces the oldest of
    /// the pings in flight: that one's pong, if it still comes, gives no
    /// sample).
    pub(crate) fn sent(&mut self, id: u64, now: Duration) {
        if let Some(slot) = self.in_flight.get_mut(self.next) {
            *slot = Some((id, now));
        }
        self.next = (self.next + 1) % PINGS_IN_FLIGHT;
        self.last_ping = Some(now);
    }

    /// Takes a pong's id: a sample if it answers a ping in flight (once).
    pub(crate) fn pong(&mut self, body: &[u8], now: Duration) {
        let Ok(id) = <[u8; 8]>::try_from(body) else {
            return;
        };
        let id = u64::from_le_bytes(id);
        let Some(entry) = self
            .in_flight
            .iter_mut()
            .find(|e| e.is_some_and(|(e, _)| e == id))
        else {
            return;
        };
        let Some((_, sent)) = entry.take() else {
            return;
        };
        let sample = now.saturating_sub(sent);
        match self.rtt.as_mut() {
            Some(rtt) => rtt.update(sample),
            None => self.rtt = Some(Rtt::first(sample)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc_6298() {
        let ms = Duration::from_millis;
        let mut rtt = Rtt::first(ms(100));
        assert_eq!((rtt.smoothed(), rtt.variance()), (ms(100), ms(50)));
        rtt.update(ms(200));
        // RTTVAR = 3/4 * 50 + 1/4 * 100 = 62.5; SRTT = 7/8 * 100 + 1/8 * 200.
        assert_eq!(rtt.variance(), Duration::from_micros(62_500));
        assert_eq!(rtt.smoothed(), Duration::from_micros(112_500));
        assert_eq!((rtt.latest(), rtt.min()), (ms(200), ms(100)));
        assert_eq!(rtt.timeout(), ms(362) + Duration::from_micros(500));
    }

    #[test]
    fn only_the_outstanding_ping_gives_a_sample() {
        let ms = Duration::from_millis;
        let mut p = Pinger::default();
        p.sent(5, ms(0));
        p.pong(&4u64.to_le_bytes(), ms(10));
        p.pong(&[1, 2], ms(10));
        assert_eq!(p.rtt, None);
        p.pong(&5u64.to_le_bytes(), ms(30));
        assert_eq!(p.rtt.map(|r| r.latest()), Some(ms(30)));
        p.pong(&5u64.to_le_bytes(), ms(90));
        assert_eq!(p.rtt.map(|r| r.latest()), Some(ms(30)));
    }

    /// Failed before the pings in flight: a round trip longer than the
    /// ping interval never gave a sample (each ping replaced the last).
    #[test]
    fn round_trips_longer_than_the_ping_interval_give_samples() {
        let ms = Duration::from_millis;
        let mut p = Pinger::default();
        for i in 0..4u64 {
            p.sent(i, ms(500 * i));
        }
        // A 1.2 s round trip: ping 0's pong arrives after ping 2 went out.
        p.pong(&0u64.to_le_bytes(), ms(1200));
        assert_eq!(p.rtt.map(|r| r.latest()), Some(ms(1200)));
        p.pong(&1u64.to_le_bytes(), ms(1750));
        assert_eq!(p.rtt.map(|r| r.latest()), Some(ms(1250)));
        // Only the last PINGS_IN_FLIGHT pings are remembered.
        for i in 4..4 + PINGS_IN_FLIGHT as u64 {
            p.sent(i, ms(500 * i));
        }
        p.pong(&2u64.to_le_bytes(), ms(9000));
        assert_eq!(p.rtt.map(|r| r.latest()), Some(ms(1250)));
    }
}
