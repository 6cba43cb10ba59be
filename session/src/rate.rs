//! Distance-based rate reduction, the interest-management half of pacing: entities far from a client's
//! viewpoint are sent to it every 2nd or every 4th tick instead of every
//! tick, never less often than a quarter of the tick rate (so a token
//! bucket whose committed burst covers four ticks absorbs the regular
//! "send to all" ticks; see `tickpack_transport::bucket`).
//!
//! The helper only decides *which* entities go into a client's packet this
//! tick. The caller turns that into the client's view in the baselines
//! layer: leave the skipped ones out ([`View::filter`]) and keep them on the
//! client with [`Persist`], which shows an omitted entity at its newest
//! record (it never steps back), or hold them at the baseline's record
//! ([`View::with_held`], only for entities that may wait; see there why).
//! [`RateTiers::select_due`] decides by each entity's last actual send, so
//! a packet held back by the token bucket does not delay it an interval.
//!
//! ```
//! use tickpack_session::View;
//! use tickpack_session::RateTiers;
//!
//! let cars = [(0, [0.0, 0.0, 0.0]), (1, [150.0, 0.0, 0.0]), (2, [500.0, 0.0, 0.0])];
//! let (mut send, mut skip) = (Vec::new(), Vec::new());
//! RateTiers::default().select(1, [0.0; 3], cars, &mut send, &mut skip);
//! assert_eq!((send.as_slice(), skip.as_slice()), (&[0][..], &[1, 2][..]));
//! let view = View::filter(vec![send]);
//! # let _ = view;
//! ```
//!
//! [`View::filter`]: crate::View::filter
//! [`View::with_held`]: crate::View::with_held
//! [`Persist`]: crate::Persist

/// Distance thresholds of the tiers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateTiers {
    /// Up to this distance: every tick. Default 100.
    pub near: f32,
    /// Up to this distance: every 2nd tick; beyond: every 4th. Default 200.
    pub far: f32,
    /// Spread reduced-rate entities over the ticks by id (`(tick + id) %
    /// n`) instead of sending all of them on the same tick (`tick % n`).
    /// Default off.
    pub stagger: bool,
}

impl Default for RateTiers {
    fn default() -> Self {
        Self {
            near: 100.0,
            far: 200.0,
            stagger: false,
        }
    }
}

/// The longest interval: a quarter of the tick rate.
pub(crate) const MAX_INTERVAL: u32 = 4;

impl RateTiers {
    /// Ticks between updates for an entity at `distance`: 1, 2 or 4. A NaN
    /// distance counts as near (sending too often is the safe error).
    pub fn interval(&self, distance: f32) -> u32 {
        if distance.is_nan() || distance <= self.near {
            1
        } else if distance <= self.far {
            2
        } else {
            MAX_INTERVAL
        }
    }

    /// Whether entity `id` at `distance` is sent on `tick`.
    pub fn should_send(&self, tick: u32, id: u32, distance: f32) -> bool {
        let n = self.interval(distance);
        let phase = if self.stagger {
            tick.wrapping_add(id)
        } else {
            tick
        };
        phase % n == 0
    }

    /// Sorts `entities` (id and position) for a client viewing from
    /// `viewer` on `tick`: ids to send are appended to `send`, ids skipped
    /// this tick (to hold at the client's baseline) to `skip`.
    pub fn select(
        &self,
        tick: u32,
        viewer: [f32; 3],
        entities: impl IntoIterator<Item = (u32, [f32; 3])>,
        send: &mut Vec<u32>,
        skip: &mut Vec<u32>,
    ) {
        for (id, pos) in entities {
            if self.should_send(tick, id, distance(viewer, pos)) {
                send.push(id);
            } else {
                skip.push(id);
            }
        }
    }
}

impl RateTiers {
    /// Like [`select`](Self::select), but by the ticks since each entity was
    /// last *sent* to this client (`None`: never) instead of the tick's
    /// phase: an entity goes out once `tick − last_sent ≥ interval`. Use it
    /// when packets can be held back (a token bucket) or lost before the
    /// send: a missed update is then made up on the next tick instead of an
    /// interval later. Record `tick` as sent for the `send` ids only once
    /// their packet actually goes out.
    pub fn select_due(
        &self,
        tick: u32,
        viewer: [f32; 3],
        entities: impl IntoIterator<Item = (u32, [f32; 3], Option<u32>)>,
        send: &mut Vec<u32>,
        skip: &mut Vec<u32>,
    ) {
        for (id, pos, last) in entities {
            let n = self.interval(distance(viewer, pos));
            if last.is_none_or(|l| tick.wrapping_sub(l) >= n) {
                send.push(id);
            } else {
                skip.push(id);
            }
        }
    }
}

/// Euclidean distance between two points.
pub(crate) fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    let [dx, dy, dz] = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    (dx * dx + dy * dy + dz * dz).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_tiers() {
        let t = RateTiers::default();
        assert_eq!(t.interval(0.0), 1);
        assert_eq!(t.interval(100.0), 1);
        assert_eq!(t.interval(150.0), 2);
        assert_eq!(t.interval(200.0), 2);
        assert_eq!(t.interval(1e30), 4);
        assert_eq!(t.interval(f32::INFINITY), 4);
        assert_eq!(t.interval(f32::NAN), 1);
        let sent: Vec<bool> = (0..8).map(|k| t.should_send(k, 9, 300.0)).collect();
        assert_eq!(sent, [true, false, false, false, true, false, false, false]);
    }

    #[test]
    fn every_entity_sent_at_least_every_4th_tick() {
        for stagger in [false, true] {
            let t = RateTiers {
                stagger,
                ..RateTiers::default()
            };
            let ents: Vec<(u32, [f32; 3])> =
                (0..64).map(|i| (i, [i as f32 * 10.0, 0.0, 0.0])).collect();
            let mut last = [0u32; 64];
            for tick in 0..40 {
                let (mut out, mut skipped) = (Vec::new(), Vec::new());
                t.select(tick, [0.0; 3], ents.iter().copied(), &mut out, &mut skipped);
                assert_eq!(out.len() + skipped.len(), 64);
                for id in out {
                    last[id as usize] = tick;
                }
                for &l in &last {
                    assert!(tick < 4 || tick - l < MAX_INTERVAL);
                }
            }
        }
    }

    #[test]
    fn due_selection_makes_up_missed_sends() {
        let t = RateTiers::default();
        let mut last: Option<u32> = None;
        let mut sent_at = Vec::new();
        for tick in 0..16 {
            let (mut send, mut skip) = (Vec::new(), Vec::new());
            t.select_due(
                tick,
                [0.0; 3],
                [(7, [500.0, 0.0, 0.0], last)],
                &mut send,
                &mut skip,
            );
            assert_eq!(send.len() + skip.len(), 1);
            // Ticks 4-6: the packet is held back, so nothing is recorded.
            if !send.is_empty() && !(4..7).contains(&tick) {
                last = Some(tick);
                sent_at.push(tick);
            }
        }
        assert_eq!(sent_at, [0, 7, 11, 15]);
    }

    #[test]
    fn stagger_spreads_the_load() {
        let t = RateTiers {
            stagger: true,
            ..RateTiers::default()
        };
        let far: Vec<(u32, [f32; 3])> = (0..64).map(|i| (i, [1000.0, 0.0, 0.0])).collect();
        for tick in 0..8 {
            let (mut out, mut skipped) = (Vec::new(), Vec::new());
            t.select(tick, [0.0; 3], far.iter().copied(), &mut out, &mut skipped);
            assert_eq!(out.len(), 16);
        }
    }

    #[test]
    fn distance_rates_save_bandwidth_on_a_spread_out_lobby() {
        // 64 cars spread around a 1 km loop: the viewer sends near cars every
        // tick, the rest at 1/2 or 1/4.
        let tiers = RateTiers::default();
        let cars: Vec<(u32, [f32; 3])> = (0..64u32)
            .map(|i| {
                let a = i as f32 / 64.0 * std::f32::consts::TAU;
                (i, [160.0 * a.cos(), 0.0, 160.0 * a.sin()])
            })
            .collect();
        let viewer = cars[0].1;
        let mut sent = 0;
        for tick in 0..60 {
            let (mut out, mut skipped) = (Vec::new(), Vec::new());
            tiers.select(tick, viewer, cars.iter().copied(), &mut out, &mut skipped);
            assert_eq!(out.len() + skipped.len(), 64);
            sent += out.len();
        }
        let full = 64 * 60;
        eprintln!(
            "distance rates: {sent} of {full} entity updates sent ({:.0} % saved)",
            100.0 * (1.0 - sent as f64 / full as f64)
        );
        assert!(sent < full * 3 / 4 && sent >= full / 4);
    }
}
