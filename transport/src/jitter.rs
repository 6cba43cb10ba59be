//! A client-side jitter buffer:
//! snapshots are accepted as they arrive and released at the tick rate
//! after a playout delay, so uneven arrival does not become uneven motion.
//! Late snapshots (their tick already played out) are counted and dropped;
//! a tick with no snapshot at its playout time is reported as a gap so the
//! game can extrapolate (replay the last steering and throttle).
//! The delay can adapt to the measured jitter.
//!
//! Sans-IO: [`push`](JitterBuffer::push) takes a snapshot with its tick
//! number and the arrival time, [`poll`](JitterBuffer::poll) hands out what
//! is due at a given time. Time is a [`Duration`] since any fixed origin.
//! Memory is capped by [`JitterConfig::capacity`].
//!
//! Tick numbers wrap: after `u32::MAX` comes 0 (at 60 Hz, after 2.3
//! years). A tick is placed on the nearest side of the next tick to play,
//! as serial numbers are (RFC 1982): up to 2^31 - 1 ahead, otherwise
//! behind and so late.

use std::collections::BTreeMap;
use std::time::Duration;

/// Settings of a [`JitterBuffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitterConfig {
    /// Time between ticks; default 1/60 s.
    pub tick: Duration,
    /// Playout delay at start (and fixed if not adaptive); default 50 ms.
    pub delay: Duration,
    /// Most snapshots held; a snapshot this many ticks or more ahead of the
    /// next one to play is refused. Default 64.
    pub capacity: u32,
    /// Adapt the delay to measured jitter; default off.
    pub adaptive: bool,
    /// Bounds of the adaptive delay; default 16 ms and 250 ms.
    pub min_delay: Duration,
    /// Upper bound of the adaptive delay.
    pub max_delay: Duration,
}

impl Default for JitterConfig {
    fn default() -> Self {
        Self {
            tick: Duration::from_micros(16_667),
            delay: Duration::from_millis(50),
            capacity: 64,
            adaptive: false,
            min_delay: Duration::from_millis(16),
            max_delay: Duration::from_millis(250),
        }
    }
}

/// What [`JitterBuffer::push`] did with a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Held until its playout time.
    Accepted,
    /// Its tick was already played out (or reported as a gap), that is,
    /// it is behind the next tick to play in wrapping order: dropped and
    /// counted as late.
    Late,
    /// A snapshot for this tick is already held: dropped.
    Duplicate,
    /// Too far ahead of the playout point for the capacity: dropped.
    TooFarAhead,
}

/// What [`JitterBuffer::poll`] releases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Playout<T> {
    /// The snapshot for `tick`, at its playout time.
    Snapshot {
        /// Tick number.
        tick: u32,
        /// The snapshot.
        item: T,
    },
    /// No snapshot arrived for `tick` by its playout time: extrapolate.
    Gap {
        /// Tick number.
        tick: u32,
    },
}

/// Counters a [`JitterBuffer`] keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JitterStats {
    /// Snapshots released.
    pub released: u64,
    /// Snapshots that arrived after their playout time.
    pub late: u64,
    /// Ticks reported as gaps.
    pub gaps: u64,
    /// Duplicate snapshots dropped.
    pub duplicates: u64,
    /// Snapshots refused for being too far ahead.
    pub too_far_ahead: u64,
}

/// A jitter buffer of `T` snapshots; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct JitterBuffer<T> {
    config: JitterConfig,
    /// Held snapshots by unwrapped tick (see `next`).
    held: BTreeMap<u64, T>,
    /// Unwrapped tick and arrival time of the first snapshot: tick `n`
    /// plays at `origin + (n - origin_tick) * tick + delay`.
    origin: Option<(u64, Duration)>,
    /// The next tick to play, unwrapped: its low 32 bits are the tick
    /// number, and it starts at 2^32 + the first tick so that a tick behind
    /// it never goes below zero.
    next: u64,
    delay: Duration,
    /// Smallest transit offset seen (arrival minus nominal send time), and
    /// the smoothed deviation from it (RFC 3550-style jitter).
    min_offset: Option<Duration>,
    jitter: Duration,
    stats: JitterStats,
}

impl<T> JitterBuffer<T> {
    /// An empty buffer; the playout clock starts at the first snapshot.
    pub fn new(config: JitterConfig) -> Self {
        Self {
            config,
            held: BTreeMap::new(),
            origin: None,
            next: 0,
            delay: config.delay,
            min_offset: None,
            jitter: Duration::ZERO,
            stats: JitterStats::default(),
        }
    }

    /// The current playout delay.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The smoothed jitter estimate.
    pub fn jitter(&self) -> Duration {
        self.jitter
    }

    /// Snapshots held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether no snapshot is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The counters.
    pub fn stats(&self) -> JitterStats {
        self.stats
    }

    /// The tick number that plays next.
    pub fn next_tick(&self) -> u32 {
        self.next as u32
    }

    fn nominal(&self, tick: u64) -> Option<Duration> {
        let (t0, at) = self.origin?;
        let n = tick.checked_sub(t0)?;
        let nanos = self.config.tick.as_nanos().saturating_mul(u128::from(n));
        let after = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        Some(at.saturating_add(after))
    }

    /// Takes in the snapshot for `tick`, arrived at `now`.
    pub fn push(&mut self, tick: u32, item: T, now: Duration) -> Pushed {
        if self.origin.is_none() {
            self.next = (1 << 32) + u64::from(tick);
            self.origin = Some((self.next, now));
        }
        // Serial-number distance from the next tick to play.
        let ahead = tick.wrapping_sub(self.next as u32);
        if ahead >= 1 << 31 {
            self.stats.late += 1;
            return Pushed::Late;
        }
        if ahead >= self.config.capacity {
            self.stats.too_far_ahead += 1;
            return Pushed::TooFarAhead;
        }
        let tick = self.next + u64::from(ahead);
        if self.held.contains_key(&tick) {
            self.stats.duplicates += 1;
            return Pushed::Duplicate;
        }
        self.measure(tick, now);
        self.held.insert(tick, item);
        Pushed::Accepted
    }

    fn measure(&mut self, tick: u64, now: Duration) {
        let Some(nominal) = self.nominal(tick) else {
            return;
        };
        // Offsets relative to the first snapshot's arrival, shifted so they
        // stay non-negative for snapshots that arrive early.
        let offset = now
            .saturating_add(self.config.max_delay)
            .saturating_sub(nominal);
        let min = *self.min_offset.get_or_insert(offset);
        let min = min.min(offset);
        self.min_offset = Some(min);
        let d = offset - min;
        // J += (|D| - J) / 16
        if d > self.jitter {
            self.jitter += (d - self.jitter) / 16;
        } else {
            self.jitter -= (self.jitter - d) / 16;
        }
        if self.config.adaptive {
            let target = (self
                .jitter
                .saturating_mul(3)
                .saturating_add(self.config.tick))
            .clamp(self.config.min_delay, self.config.max_delay);
            // Move at most an eighth of a tick per snapshot so motion
            // speeds up or slows down slightly instead of jumping.
            let step = self.config.tick / 8;
            self.delay = if target > self.delay {
                self.delay.saturating_add(step).min(target)
            } else {
                self.delay.saturating_sub(step).max(target)
            };
        }
    }

    /// The time the next tick plays out, if the clock has started.
    pub fn next_playout(&self) -> Option<Duration> {
        Some(self.nominal(self.next)?.saturating_add(self.delay))
    }

    /// The next snapshot or gap due at `now`, in tick order. Call until it
    /// returns `None`.
    pub fn poll(&mut self, now: Duration) -> Option<Playout<T>> {
        let due = self.next_playout()?;
        if now < due {
            return None;
        }
        let unwrapped = self.next;
        // 2^64 ticks do not pass; saturating keeps this panic-free.
        self.next = self.next.saturating_add(1);
        let tick = unwrapped as u32;
        match self.held.remove(&unwrapped) {
            Some(item) => {
                self.stats.released += 1;
                Some(Playout::Snapshot { tick, item })
            }
            None => {
                self.stats.gaps += 1;
                Some(Playout::Gap { tick })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_in_order_after_delay_with_gaps_and_late() {
        let cfg = JitterConfig {
            tick: Duration::from_millis(10),
            delay: Duration::from_millis(30),
            ..JitterConfig::default()
        };
        let mut b = JitterBuffer::new(cfg);
        let ms = Duration::from_millis;
        assert_eq!(b.push(100, "a", ms(0)), Pushed::Accepted);
        assert_eq!(b.push(102, "c", ms(15)), Pushed::Accepted);
        assert_eq!(b.push(102, "c", ms(16)), Pushed::Duplicate);
        assert_eq!(b.poll(ms(29)), None);
        assert_eq!(
            b.poll(ms(30)),
            Some(Playout::Snapshot {
                tick: 100,
                item: "a"
            })
        );
        assert_eq!(b.poll(ms(39)), None);
        assert_eq!(b.poll(ms(40)), Some(Playout::Gap { tick: 101 }));
        assert_eq!(b.push(101, "b", ms(41)), Pushed::Late);
        assert_eq!(
            b.poll(ms(50)),
            Some(Playout::Snapshot {
                tick: 102,
                item: "c"
            })
        );
        assert_eq!(b.push(500, "z", ms(51)), Pushed::TooFarAhead);
        let s = b.stats();
        assert_eq!((s.released, s.gaps, s.late, s.duplicates), (2, 1, 1, 1));
    }
}
