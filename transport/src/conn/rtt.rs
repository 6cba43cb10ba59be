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

/// One side's ping state: the outstanding ping and the estimate.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pinger {
    /// Id (the ping packet's sequence) and send time of the last ping.
    outstanding: Option<(u64, Duration)>,
    pub(crate) last_ping: Option<Duration>,
    pub(crate) rtt: Option<Rtt>,
}

impl Pinger {
    /// Whether a ping is due at `now`.
    pub(crate) fn due(&self, now: Duration, interval: Duration) -> bool {
        self.last_ping
            .is_none_or(|t| now.saturating_sub(t) >= interval)
    }

    /// Records a ping with `id` sent at `now` (an earlier unanswered ping
    /// is forgotten: its pong, if late, gives no sample).
    pub(crate) fn sent(&mut self, id: u64, now: Duration) {
        self.outstanding = Some((id, now));
        self.last_ping = Some(now);
    }

    /// Takes a pong's id: a sample if it answers the outstanding ping.
    pub(crate) fn pong(&mut self, body: &[u8], now: Duration) {
        let Ok(id) = <[u8; 8]>::try_from(body) else {
            return;
        };
        let id = u64::from_le_bytes(id);
        if let Some((_, sent)) = self.outstanding.filter(|&(e, _)| e == id) {
            self.outstanding = None;
            let sample = now.saturating_sub(sent);
            match self.rtt.as_mut() {
                Some(rtt) => rtt.update(sample),
                None => self.rtt = Some(Rtt::first(sample)),
            }
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
}
