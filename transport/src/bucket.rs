//! A token bucket in RFC 2697 terms: tokens (bytes) accrue at
//! the committed information rate (CIR) up to the committed burst size
//! (CBS); a send larger than the tokens held may borrow up to the excess
//! burst size (EBS), leaving the balance negative until the rate repays it.
//!
//! This is a single-balance model ("available tokens" go down to
//! `-EBS`), not RFC 2697's two-bucket marker; the
//! colours follow the RFC: green is paid from committed tokens, yellow
//! borrowed from the excess allowance, red refused.
//!
//! Time is passed in as a [`Duration`] since any fixed origin. Tokens are
//! kept exactly, in units of 10^-9 byte, so fractional rates (131.25
//! tokens per 10 ms tick) come out without rounding.

use std::time::Duration;

/// Nano-tokens per token.
const SCALE: i128 = 1_000_000_000;

/// Rates and sizes of a [`TokenBucket`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBucketConfig {
    /// Committed information rate: bytes added per second.
    pub cir: u64,
    /// Committed burst size: most bytes the bucket holds.
    pub cbs: u64,
    /// Excess burst size: how far below zero a send may take the balance.
    pub ebs: u64,
    /// Tokens held at creation (capped at `cbs`).
    pub initial: u64,
}

impl TokenBucketConfig {
    /// A bucket for `cir` bytes per second: CBS of a quarter second (so a
    /// burst covers four ticks at the lowest rate tier, 1/4 of the tick
    /// rate), EBS twice the CBS (RFC 2697's "usually 2:1"), starting full.
    pub fn for_rate(cir: u64) -> Self {
        let cbs = cir / 4;
        Self {
            cir,
            cbs,
            ebs: cbs.saturating_mul(2),
            initial: cbs,
        }
    }

    /// Raises the committed burst to at least `bytes` (the largest datagram
    /// the bucket pays for), keeping the excess burst at least twice it and
    /// the initial tokens at least it. A bucket whose CBS is smaller than a
    /// datagram can never pay for that datagram from committed tokens: at
    /// low rates [`for_rate`](Self::for_rate)'s quarter second is smaller
    /// than one 1,200-byte datagram (below 4,800 bytes per second).
    pub fn with_min_burst(mut self, bytes: u64) -> Self {
        self.cbs = self.cbs.max(bytes);
        self.ebs = self.ebs.max(self.cbs.saturating_mul(2));
        self.initial = self.initial.max(bytes);
        self
    }
}

/// How a send conforms (RFC 2697 colours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conformance {
    /// Paid from committed tokens.
    Green,
    /// Paid partly by borrowing from the excess burst.
    Yellow,
    /// Refused: it would take the balance below `-EBS`. Nothing consumed.
    Red,
}

impl Conformance {
    /// Whether the bytes may be sent (green or yellow).
    pub fn allowed(self) -> bool {
        self != Self::Red
    }
}

/// A token bucket; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct TokenBucket {
    config: TokenBucketConfig,
    /// Balance in nano-tokens, in `-ebs..=cbs`.
    balance: i128,
    last: Option<Duration>,
}

impl TokenBucket {
    /// A bucket holding `config.initial` tokens (at most `cbs`).
    pub fn new(config: TokenBucketConfig) -> Self {
        let initial = config.initial.min(config.cbs);
        Self {
            config,
            balance: i128::from(initial) * SCALE,
            last: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TokenBucketConfig {
        &self.config
    }

    /// Tokens available now (negative while repaying borrowed excess).
    pub fn tokens(&self) -> f64 {
        // Exact for the balances of interest: whole nano-tokens / 10^9.
        self.balance as f64 / SCALE as f64
    }

    /// Adds the tokens accrued since the last call (none on the first call,
    /// none if time went backwards), up to CBS. Returns the tokens added.
    pub fn refill(&mut self, now: Duration) -> f64 {
        let elapsed = match self.last {
            Some(last) => now.saturating_sub(last),
            None => Duration::ZERO,
        };
        if self.last.is_none_or(|last| now > last) {
            self.last = Some(now);
        }
        let nanos = i128::try_from(elapsed.as_nanos()).unwrap_or(i128::MAX);
        let add = i128::from(self.config.cir).saturating_mul(nanos);
        let cap = i128::from(self.config.cbs) * SCALE;
        let before = self.balance;
        self.balance = self.balance.saturating_add(add).min(cap.max(before));
        (self.balance - before) as f64 / SCALE as f64
    }

    /// Whether `bytes` may be sent at `now`, consuming them if so (after
    /// refilling). Red consumes nothing.
    pub fn try_consume(&mut self, bytes: u64, now: Duration) -> Conformance {
        self.refill(now);
        let cost = i128::from(bytes) * SCALE;
        let floor = -(i128::from(self.config.ebs) * SCALE);
        if self.balance >= cost {
            self.balance -= cost;
            Conformance::Green
        } else if self.balance - cost >= floor {
            self.balance -= cost;
            Conformance::Yellow
        } else {
            Conformance::Red
        }
    }
}

impl TokenBucket {
    /// Consumes `bytes` at `now` only if committed tokens cover them
    /// (green), never borrowing from the excess burst. For background
    /// traffic such as chunk slices, which should use what the snapshots
    /// leave and never the excess they may need. Returns whether consumed.
    pub fn try_consume_committed(&mut self, bytes: u64, now: Duration) -> bool {
        self.refill(now);
        let cost = i128::from(bytes) * SCALE;
        if self.balance >= cost {
            self.balance -= cost;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_below_ebs_and_caps_at_cbs() {
        let mut b = TokenBucket::new(TokenBucketConfig {
            cir: 1000,
            cbs: 100,
            ebs: 50,
            initial: 100,
        });
        let t0 = Duration::ZERO;
        assert_eq!(b.try_consume(100, t0), Conformance::Green);
        assert_eq!(b.try_consume(50, t0), Conformance::Yellow);
        assert_eq!(b.try_consume(1, t0), Conformance::Red);
        assert_eq!(b.tokens(), -50.0);
        // 10 s later: capped at CBS.
        b.refill(Duration::from_secs(10));
        assert_eq!(b.tokens(), 100.0);
        // Time going backwards adds nothing.
        assert_eq!(b.refill(Duration::from_secs(1)), 0.0);
    }

    #[test]
    fn committed_only_never_borrows() {
        let mut b = TokenBucket::new(TokenBucketConfig {
            cir: 1000,
            cbs: 100,
            ebs: 50,
            initial: 100,
        });
        let t0 = Duration::ZERO;
        assert!(b.try_consume_committed(60, t0));
        assert!(!b.try_consume_committed(41, t0));
        assert_eq!(b.tokens(), 40.0);
        // A snapshot may still borrow; then background traffic waits for
        // the balance to come back above its size.
        assert_eq!(b.try_consume(80, t0), Conformance::Yellow);
        assert!(!b.try_consume_committed(1, Duration::from_millis(40)));
        assert!(b.try_consume_committed(10, Duration::from_millis(50)));
        assert_eq!(b.tokens(), 0.0);
    }
}
