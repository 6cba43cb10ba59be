//! Which packets to replay: each tick of a capture against which baseline.

#![forbid(unsafe_code)]

use tickpack::MAX_BASELINE_DISTANCE;
use tickpack_scenarios::rng::SplitMix64;

use crate::captures::TickMeta;

/// The simulated ack delay used when a capture has no recorded sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rtt {
    /// Round-trip time, milliseconds: the baseline is the newest tick at
    /// least this old. Default 100.
    pub rtt_ms: u32,
    /// Up to this many extra ticks of delay, varying per tick
    /// (deterministically). Default 2.
    pub jitter_ticks: u32,
}

impl Default for Rtt {
    fn default() -> Self {
        Self {
            rtt_ms: 100,
            jitter_ticks: 2,
        }
    }
}

/// How each packet picks its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaselineModel {
    /// Tick `t` against tick `t - N`; ticks without one are not sent (the
    /// 2015 challenge uses 6).
    Distance(u32),
    /// The sends recorded in the capture, if it has any; else one client
    /// acking with the [`Rtt`] delay (its first packets are keyframes, as
    /// for a client that just joined).
    Auto(Rtt),
}

/// One packet: the snapshot of tick index `tick`, against tick index
/// `baseline` (a keyframe if `None`), with tick index `prior` as the older
/// baseline for predicted fields (used only by schemas with `predict`
/// fields). Indices are into the capture's ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Packet {
    /// Index of the tick sent.
    pub tick: usize,
    /// Index of its baseline tick.
    pub baseline: Option<usize>,
    /// Index of the prior baseline tick (older than the baseline).
    pub prior: Option<usize>,
}

impl Packet {
    /// A keyframe of tick index `tick`.
    pub fn keyframe(tick: usize) -> Self {
        Self {
            tick,
            baseline: None,
            prior: None,
        }
    }
}

/// The packets `model` sends for a capture's `ticks` (recorded at
/// `tick_rate` Hz, 0 if unknown), in tick order, and a short description of
/// where the baselines came from.
pub fn plan(ticks: &[TickMeta], tick_rate: u32, model: BaselineModel) -> (Vec<Packet>, String) {
    match model {
        BaselineModel::Distance(n) => {
            let back = |i: usize| -> Option<usize> {
                let want = ticks[i].tick.checked_sub(u64::from(n))?;
                ticks[..i].binary_search_by_key(&want, |t| t.tick).ok()
            };
            let out = (0..ticks.len())
                .filter_map(|i| {
                    let j = back(i)?;
                    let prior = back(j).filter(|&k| close_enough(ticks, i, k));
                    Some(Packet {
                        tick: i,
                        baseline: Some(j),
                        prior,
                    })
                })
                .collect();
            (
                out,
                format!("baseline distance {n} (prior {})", 2 * u64::from(n)),
            )
        }
        BaselineModel::Auto(rtt) => {
            if ticks.iter().any(|t| !t.sent.is_empty()) {
                (recorded(ticks), "recorded sends".into())
            } else {
                let rate = if tick_rate == 0 { 60 } else { tick_rate };
                let delay = (u64::from(rtt.rtt_ms) * u64::from(rate))
                    .div_ceil(1000)
                    .max(1);
                (
                    simulated(ticks, delay, rtt.jitter_ticks),
                    format!(
                        "simulated acks: {} ms RTT (+0..{} ticks) at {rate} Hz",
                        rtt.rtt_ms, rtt.jitter_ticks
                    ),
                )
            }
        }
    }
}

/// Adds `why` (a [`plan`] description) to `all`, the descriptions of
/// several captures' plans joined with "; ", each once.
pub fn describe_all(all: &mut String, why: &str) {
    if !all.split("; ").any(|w| w == why) {
        if !all.is_empty() {
            all.push_str("; ");
        }
        all.push_str(why);
    }
}

fn close_enough(ticks: &[TickMeta], i: usize, j: usize) -> bool {
    ticks[i].tick - ticks[j].tick <= u64::from(MAX_BASELINE_DISTANCE)
}

/// One packet per recorded send (identical ones once per tick). A send's
/// baseline (and prior) sequence is resolved to the tick in which the same
/// client was sent that sequence; failing that, to the newest earlier tick
/// whose number has those low 16 bits (captures imported from JSON lines).
///
/// Time and memory are linear in the ticks and sends (hash lookups, not
/// scans), whatever sequences a hostile capture names.
fn recorded(ticks: &[TickMeta]) -> Vec<Packet> {
    use std::collections::{HashMap, HashSet};
    let mut out: Vec<Packet> = Vec::new();
    let mut last_sent: HashMap<(u32, u16), usize> = HashMap::new();
    // The newest tick index so far whose tick number has these low 16 bits.
    let mut by_low_bits: HashMap<u16, usize> = HashMap::new();
    let mut this_tick: HashSet<Packet> = HashSet::new();
    for (i, t) in ticks.iter().enumerate() {
        this_tick.clear();
        for s in &t.sent {
            let resolve = |seq: u16| -> Option<usize> {
                let near = |j: &usize| close_enough(ticks, i, *j);
                let by_client = last_sent.get(&(s.client, seq)).copied().filter(near);
                by_client.or_else(|| by_low_bits.get(&seq).copied().filter(near))
            };
            let baseline = match s.baseline {
                None => None,
                Some(seq) => match resolve(seq) {
                    Some(j) => Some(j),
                    None => continue,
                },
            };
            let prior = s
                .prior
                .and_then(resolve)
                .filter(|&k| baseline.is_some_and(|j| k < j));
            let p = Packet {
                tick: i,
                baseline,
                prior,
            };
            if this_tick.insert(p) {
                out.push(p);
            }
        }
        for s in &t.sent {
            last_sent.insert((s.client, s.sequence), i);
        }
        by_low_bits.insert(t.tick as u16, i);
    }
    out
}

/// One client: the packet of tick `s` is acked `delay + jitter(s)` ticks
/// after it was sent, and each packet is coded against the newest tick
/// whose ack has arrived (so baselines never move backwards), with as its
/// prior the acked tick before the baseline whose spacing is closest to the
/// baseline's distance (the nearer on a tie), among the ticks of the last
/// `2 · (delay + jitter) + 8` (the ring `tickpack_session::history_for`
/// keeps), as the session server does.
///
/// Time is `O(ticks × (log ticks + jitter))` whatever the delay (a capture's
/// header sets its tick rate): ticks too recent to be acked are skipped by
/// a binary search, not scanned.
fn simulated(ticks: &[TickMeta], delay: u64, jitter: u32) -> Vec<Packet> {
    // `None`: after the largest tick number, never.
    let arrives = |s: u64| {
        s.checked_add(delay)?
            .checked_add(SplitMix64::new(s).below(u64::from(jitter) + 1))
    };
    let ring = delay
        .saturating_add(u64::from(jitter))
        .saturating_mul(2)
        .saturating_add(8);
    let mut out = Vec::with_capacity(ticks.len());
    // Every tick index acked so far, in tick order (the last is the baseline).
    let mut acks: Vec<usize> = Vec::new();
    for (i, t) in ticks.iter().enumerate() {
        let from = acks.last().map_or(0, |a| a + 1);
        // Ticks sent after `t.tick - delay` cannot be acked by now (jitter
        // only adds to the delay); the tick numbers increase.
        let recent = ticks.get(from..i).unwrap_or_default();
        let old_enough = t
            .tick
            .checked_sub(delay)
            .map_or(0, |last| recent.partition_point(|x| x.tick <= last));
        if let Some(k) = (from..from + old_enough)
            .rev()
            .find(|&k| arrives(ticks[k].tick).is_some_and(|a| a <= t.tick))
        {
            acks.push(k);
        }
        let baseline = acks.last().copied().filter(|&a| close_enough(ticks, i, a));
        let prior = baseline.and_then(|b| {
            let older = acks.get(..acks.len() - 1).unwrap_or_default();
            prior_for(ticks, older, t.tick, ticks[b].tick, ring)
        });
        out.push(Packet {
            tick: i,
            baseline,
            prior,
        });
    }
    out
}

/// Of the acked tick indices `older` (in tick order, all before the
/// baseline tick `b`), the one whose spacing before `b` is closest to
/// `now - b` (the nearer on a tie), not older than `ring` ticks before
/// `now` nor further than [`MAX_BASELINE_DISTANCE`].
fn prior_for(ticks: &[TickMeta], older: &[usize], now: u64, b: u64, ring: u64) -> Option<usize> {
    let oldest = now
        .saturating_sub(ring.saturating_sub(1))
        .max(now.saturating_sub(u64::from(MAX_BASELINE_DISTANCE)));
    let want = b.saturating_sub(now - b);
    let at = older.partition_point(|&k| ticks[k].tick <= want);
    // The nearest candidates around `want`: the last at or before it and the
    // first after it.
    [at.checked_sub(1), Some(at)]
        .into_iter()
        .flatten()
        .filter_map(|j| older.get(j).copied())
        .filter(|&k| ticks[k].tick >= oldest)
        .min_by_key(|&k| {
            let spacing = b - ticks[k].tick;
            (spacing.abs_diff(now - b), spacing)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_sets::capture::SentRecord;

    struct Capture {
        ticks: Vec<TickMeta>,
    }

    fn capture(ticks: &[u64]) -> Capture {
        Capture {
            ticks: ticks
                .iter()
                .map(|&tick| TickMeta {
                    tick,
                    sent: Vec::new(),
                    bytes: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn distance_skips_ticks_without_a_baseline() {
        let (p, _) = plan(
            &capture(&[0, 1, 2, 3, 5, 9]).ticks,
            60,
            BaselineModel::Distance(2),
        );
        let pairs: Vec<_> = p.iter().map(|p| (p.tick, p.baseline, p.prior)).collect();
        assert_eq!(
            pairs,
            vec![
                (2, Some(0), None),
                (3, Some(1), None),
                (4, Some(3), Some(1))
            ]
        );
    }

    #[test]
    fn simulated_acks_start_with_keyframes() {
        let c = capture(&(0..40).collect::<Vec<_>>());
        let (p, _) = plan(&c.ticks, 60, BaselineModel::Auto(Rtt::default()));
        assert_eq!(p.len(), 40);
        assert_eq!(p[0].baseline, None);
        for q in &p {
            if let Some(b) = q.baseline {
                let d = q.tick - b;
                assert!((6..=8).contains(&d), "{q:?}");
                if let Some(r) = q.prior {
                    assert!(r < b, "{q:?}");
                }
            }
        }
        assert!(p.windows(2).all(|w| w[0].baseline <= w[1].baseline));
        assert!(p[20..].iter().all(|q| q.prior.is_some()));
        assert!(p[20..].iter().all(|q| q.baseline.is_some()));
    }

    #[test]
    fn simulated_priors_are_spaced_like_the_baseline_as_the_session_picks() {
        // 600 ms at 60 Hz: the baseline is about 36 ticks old, and the
        // prior about 36 ticks before it (the ring holds 2 · 38 + 8), not
        // the ack before the baseline (1 tick, whose difference
        // extrapolated 36 times is mostly quantisation noise).
        let c = capture(&(0..400).collect::<Vec<_>>());
        let rtt = Rtt {
            rtt_ms: 600,
            jitter_ticks: 2,
        };
        let (p, _) = plan(&c.ticks, 60, BaselineModel::Auto(rtt));
        let late: Vec<_> = p[200..].iter().collect();
        assert!(late.iter().all(|q| q.prior.is_some()), "{late:?}");
        for q in late {
            let (b, r) = (q.baseline.unwrap(), q.prior.unwrap());
            let (d, spacing) = (q.tick - b, b - r);
            assert!((36..=38).contains(&d), "{q:?}");
            assert!(spacing.abs_diff(d) <= 2, "{q:?}");
            assert!(q.tick - r < 2 * 38 + 8, "{q:?}");
        }
    }

    #[test]
    fn the_largest_ticks_of_sends_after_a_long_capture_are_planned() {
        // A hostile capture (about 1 MB on disk): 40,000 ticks, then two
        // ticks of 65,536 sends (the most a tick may hold). The first
        // tick's sends name a baseline sequence no tick has; the second's
        // all resolve, each to a different baseline and prior. (Planning
        // by scanning earlier ticks took 38 s here; by hash maps 0.2 s.)
        let n = 40_000u64;
        let mut c = capture(&(0..n + 2).collect::<Vec<_>>());
        let limit = crate::captures::MAX_SENT_PER_TICK as u32;
        let send = |client: u32, baseline: u16, prior: u16| SentRecord {
            client,
            sequence: 0,
            baseline: Some(baseline),
            prior: Some(prior),
            bytes: 0,
        };
        c.ticks[n as usize].sent = (0..limit).map(|k| send(k, 65_000, 64_000)).collect();
        c.ticks[n as usize + 1].sent = (0..limit)
            .map(|k| {
                let (b, q) = (u64::from(k % 256), u64::from(k / 256));
                send(k, (n - 1 - b) as u16, (n - 300 - q) as u16)
            })
            .collect();
        let (p, _) = plan(&c.ticks, 60, BaselineModel::Auto(Rtt::default()));
        assert_eq!(p.len(), limit as usize, "one packet per distinct send");
        assert!(p.iter().all(|q| q.tick == n as usize + 1));
    }

    #[test]
    fn a_tick_rate_so_high_that_no_ack_arrives_plans_keyframes() {
        // A capture's header sets its tick rate: at u32::MAX Hz a 100 ms
        // round trip is 429 million ticks, so no ack ever arrives. (A
        // scan of every unacked tick per tick took 8 s here.)
        let n = 30_000u64;
        let c = capture(&(0..n).collect::<Vec<_>>());
        let (p, _) = plan(&c.ticks, u32::MAX, BaselineModel::Auto(Rtt::default()));
        assert_eq!(p.len(), n as usize);
        assert!(p.iter().all(|q| q.baseline.is_none()));
    }

    #[test]
    fn simulated_acks_near_the_largest_tick_number_do_not_overflow() {
        let c = capture(&[u64::MAX - 9, u64::MAX - 1, u64::MAX]);
        // At 60 Hz (6 ticks, +0..2) tick u64::MAX - 9 is acked by the last
        // two ticks.
        let (p, _) = plan(&c.ticks, 60, BaselineModel::Auto(Rtt::default()));
        let pairs: Vec<_> = p.iter().map(|q| (q.tick, q.baseline)).collect();
        assert_eq!(pairs, vec![(0, None), (1, Some(0)), (2, Some(0))]);
        // An ack due after the largest tick number never arrives.
        let (p, _) = plan(&c.ticks, u32::MAX, BaselineModel::Auto(Rtt::default()));
        assert_eq!(p.len(), 3);
        assert!(p.iter().all(|q| q.baseline.is_none()), "{p:?}");
        let j = Rtt {
            jitter_ticks: 10_000,
            ..Rtt::default()
        };
        let (p, _) = plan(&c.ticks, 60, BaselineModel::Auto(j));
        assert_eq!(p.len(), 3);
    }

    #[test]
    fn a_send_too_old_to_be_a_baseline_does_not_hide_the_tick_with_that_number() {
        // Tick 1,000 was sent as sequence 1,000; tick 66,536 has the same
        // low 16 bits and was not sent; tick 66,540 is sent against it.
        let mut c = capture(&(0..66_600).collect::<Vec<_>>());
        let s = |sequence, baseline| SentRecord {
            client: 0,
            sequence,
            baseline,
            prior: None,
            bytes: 0,
        };
        c.ticks[1_000].sent = vec![s(1_000, None)];
        c.ticks[66_540].sent = vec![s(1_004, Some(1_000))];
        let (p, _) = plan(&c.ticks, 60, BaselineModel::Auto(Rtt::default()));
        let pairs: Vec<_> = p.iter().map(|p| (p.tick, p.baseline)).collect();
        assert_eq!(pairs, vec![(1_000, None), (66_540, Some(66_536))]);
    }

    #[test]
    fn recorded_sends_resolve_by_client_then_by_tick() {
        let mut c = capture(&[10, 11, 12]);
        let s = |client, sequence, baseline| SentRecord {
            client,
            sequence,
            baseline,
            prior: None,
            bytes: 0,
        };
        c.ticks[0].sent = vec![s(1, 500, None), s(2, 10, None)];
        c.ticks[1].sent = vec![s(1, 501, Some(500)), s(2, 11, Some(10))];
        c.ticks[2].sent = vec![s(1, 502, Some(500)), s(2, 12, Some(10)), s(3, 12, Some(99))];
        c.ticks[2].sent[1].prior = Some(10);
        c.ticks[2].sent[0].baseline = Some(501);
        c.ticks[2].sent[0].prior = Some(500);
        let (p, why) = plan(&c.ticks, 60, BaselineModel::Auto(Rtt::default()));
        assert_eq!(why, "recorded sends");
        let pairs: Vec<_> = p.iter().map(|p| (p.tick, p.baseline, p.prior)).collect();
        assert_eq!(
            pairs,
            vec![
                (0, None, None),
                (1, Some(0), None),
                (2, Some(1), Some(0)),
                (2, Some(0), None)
            ],
            "duplicates merged, a prior not older than its baseline dropped, \
             unresolvable send 99 dropped"
        );
    }
}
