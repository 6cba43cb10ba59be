//! The recall and the history of each sent snapshot along a capture's
//! chain of baselines, as a session derives them (`tickpack::Recall`,
//! `tickpack::History`): `eval` and `train` pass every packet its
//! baseline's recall and history, so they measure and train on what the
//! encoder codes.

#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};

use tickpack::{Baseline, History, Limits, Recall, Schema, Snapshot};

use crate::captures::{snapshot_bytes, Scanned};
use crate::replay::Packet;
use crate::TrainerError;

/// Recalls by tick index. A tick sent more than once (several clients)
/// keeps the recall of its last packet; both ends of the replay use the
/// same one.
#[derive(Debug, Default)]
pub struct RecallChain {
    limits: Limits,
    recalls: HashMap<usize, Recall>,
    /// The schema histories are derived under (none: no histories).
    schema: Option<Schema>,
    histories: HashMap<usize, History>,
}

impl RecallChain {
    /// An empty chain; recalls are capped by the default [`Limits`], as the
    /// default encoder's.
    pub fn new() -> Self {
        Self::default()
    }

    /// A chain that keeps each sent tick's history too.
    pub fn with_histories(schema: &Schema) -> Self {
        Self {
            schema: Some(schema.clone()),
            ..Self::default()
        }
    }

    /// The history packet `p` is coded with: its baseline's, if that tick
    /// was sent against a baseline and is still kept.
    pub fn history_of(&self, p: &Packet) -> Option<&History> {
        self.histories.get(&p.baseline?)
    }

    /// The recall packet `p` is coded with: its baseline's, if that tick
    /// was sent and is still kept.
    pub fn of(&self, p: &Packet) -> Option<&Recall> {
        self.recalls.get(&p.baseline?)
    }

    /// Records the recall of tick `p.tick` (sent as `sequence`, holding
    /// `snapshot`) after packet `p` against `baseline` (a keyframe if
    /// `None`).
    pub fn sent(
        &mut self,
        p: &Packet,
        sequence: u16,
        baseline: Option<(u16, &Snapshot)>,
        snapshot: &Snapshot,
    ) {
        // A baseline whose recall is unknown (its packet was not replayed)
        // starts the chain from an empty recall.
        let history = match (&self.schema, baseline) {
            (Some(schema), Some((_, base))) => History::of(schema, snapshot, base),
            _ => None,
        };
        match history {
            Some(h) => self.histories.insert(p.tick, h),
            None => self.histories.remove(&p.tick),
        };
        let recall = match baseline {
            Some((b, base)) => {
                let empty = Recall::keyframe(b);
                self.of(p).unwrap_or(&empty).advance(
                    Baseline {
                        sequence: b,
                        snapshot: base,
                    },
                    snapshot,
                    sequence,
                    &self.limits,
                )
            }
            None => Recall::keyframe(sequence),
        };
        self.recalls.insert(p.tick, recall);
    }

    /// Drops the recall of tick `k`.
    pub fn forget(&mut self, k: usize) {
        self.recalls.remove(&k);
        self.histories.remove(&k);
    }
}

/// For each tick of a replay, the ticks whose snapshots (and recalls) are
/// no longer needed after it, so that the replay drops them there without
/// scanning everything it holds: with baselines far back it may hold tens
/// of thousands of snapshots, and a scan per tick made the replay
/// quadratic in the capture's length.
#[derive(Debug, Default)]
pub struct Expiry {
    by_tick: HashMap<usize, Vec<usize>>,
}

impl Expiry {
    /// From each held tick's last use: a tick `k` last used at `u` goes
    /// after tick `max(k, u)` (a tick is held from its own step on).
    pub fn new(last_use: &HashMap<usize, usize>) -> Self {
        let mut by_tick: HashMap<usize, Vec<usize>> = HashMap::new();
        for (&k, &u) in last_use {
            by_tick.entry(k.max(u)).or_default().push(k);
        }
        Self { by_tick }
    }

    /// The ticks no longer needed after tick `i`.
    pub fn after(&self, i: usize) -> &[usize] {
        self.by_tick.get(&i).map_or(&[], Vec::as_slice)
    }
}

/// A sent tick's recall and history, by tick index.
pub type SentState = HashMap<usize, (Recall, Option<History>)>;

/// Replays every packet of `sc` (`packets`, in tick order) and returns the
/// recall and the history of each tick in `wanted`. Holds only the snapshots and recalls a
/// later packet still needs, and refuses ([`TrainerError::TooMuchHeld`])
/// to hold more than `max_held_bytes` of snapshots.
pub fn recalls_for(
    sc: &Scanned,
    packets: &[Packet],
    wanted: &HashSet<usize>,
    max_held_bytes: u64,
) -> Result<SentState, TrainerError> {
    let mut last_use: HashMap<usize, usize> = HashMap::new();
    for p in packets {
        for i in [Some(p.tick), p.baseline].into_iter().flatten() {
            let e = last_use.entry(i).or_insert(p.tick);
            *e = (*e).max(p.tick);
        }
    }
    let expiry = Expiry::new(&last_use);
    let mut chain = RecallChain::with_histories(&sc.header.schema);
    let mut held: HashMap<usize, Snapshot> = HashMap::new();
    let mut held_bytes = 0u64;
    let mut out = HashMap::new();
    let mut next = 0usize;
    sc.stream(|i, snap| {
        if last_use.contains_key(&i) {
            held_bytes += snapshot_bytes(snap);
            if held_bytes > max_held_bytes {
                return Err(TrainerError::TooMuchHeld {
                    file: sc.path.display().to_string(),
                    tick: sc.ticks.get(i).map_or(0, |t| t.tick),
                    snapshots: held.len() + 1,
                    bytes: held_bytes,
                    limit: max_held_bytes,
                });
            }
            held.insert(i, snap.clone());
        }
        while let Some(p) = packets.get(next).filter(|p| p.tick <= i) {
            next += 1;
            let seq = |k: usize| sc.ticks.get(k).map_or(0, |t| t.tick as u16);
            let base = p.baseline.and_then(|b| held.get(&b).map(|s| (seq(b), s)));
            if let Some(s) = held.get(&p.tick) {
                chain.sent(p, seq(p.tick), base, s);
            }
        }
        if wanted.contains(&i) {
            if let Some(r) = chain.recalls.get(&i) {
                out.insert(i, (r.clone(), chain.histories.get(&i).cloned()));
            }
        }
        for &k in expiry.after(i) {
            if let Some(s) = held.remove(&k) {
                held_bytes -= snapshot_bytes(&s);
            }
            chain.forget(k);
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_held_tick_expires_once_after_its_last_use() {
        // Ticks 0..40,000, each a baseline 32,767 ticks later (the farthest
        // a packet can name): the replay holds 32,767 snapshots at a time,
        // and dropping them must visit each tick once, not every held tick
        // at every step.
        let n = 40_000usize;
        let mut last_use = HashMap::new();
        for k in 0..n {
            last_use.insert(k, (k + 32_767).min(n - 1));
        }
        // A tick needed only by an earlier packet (its last use before it)
        // goes after its own step, as it is held from there.
        last_use.insert(n, 5);
        let e = Expiry::new(&last_use);
        let visits: usize = (0..=n).map(|i| e.after(i).len()).sum();
        assert_eq!(visits, last_use.len());
        assert!(e.after(5).iter().all(|&k| k != n));
        assert!(e.after(n).contains(&n));
        assert_eq!(e.after(0), &[] as &[usize]);
        assert!(e.after(32_767).contains(&0));
    }
}
