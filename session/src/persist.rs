//! Client-side persistence of entities a snapshot omits.

use tickpack::{Section, Snapshot};

/// The client's presented world: every applied snapshot updates the
/// entities it holds; entities it omits keep their last record for up to
/// `linger` ticks, then are dropped (gone, or out of interest).
///
/// This is the client half of distance-based rates with
/// [`View::filter`](super::View::filter): the server leaves a far entity
/// out of 1 to 3 ticks of 4, the protocol state (what later packets are
/// coded against) simply lacks it on those ticks, and the presented world
/// keeps showing it at its newest record, which never goes back in time
/// because snapshots are applied in order. Set `linger` to the longest
/// rate interval plus what loss may add (e.g. 4 + 8 ticks); a despawned
/// entity lingers that long.
///
/// Memory: the entities of the last `linger + 1` applied snapshots, each
/// at most [`Limits::max_snapshot_bytes`](tickpack::Limits) of records and
/// ids; a server that sends new ids every tick fills that (65,536 new ids
/// a tick with `linger` 48 holds 3.2 million entities). Keep `linger` to
/// what the rate tiers need.
#[derive(Debug, Clone)]
pub struct Persist {
    linger: u32,
    state: Snapshot,
    /// Per section, per entity (in id order): the tick of its record.
    seen: Vec<Vec<u32>>,
    newest: Option<u32>,
    scratch: Section,
}

impl Persist {
    /// An empty presented world shaped like `template` (use
    /// `Snapshot::new(&schema)`), keeping omitted entities `linger` ticks.
    pub fn new(template: &Snapshot, linger: u32) -> Self {
        let mut state = template.clone();
        state.reset_like(template);
        Self {
            linger,
            seen: vec![Vec::new(); state.sections().len()],
            state,
            newest: None,
            scratch: Section::default(),
        }
    }

    /// Applies the snapshot of `tick` (ticks count up and may skip; wrap is
    /// the caller's to unroll). A tick not newer than the last applied one
    /// is ignored (returns `false`), as is a snapshot shaped unlike the
    /// template.
    pub fn apply(&mut self, tick: u32, snapshot: &Snapshot) -> bool {
        if self.newest.is_some_and(|n| tick <= n)
            || snapshot.sections().len() != self.state.sections().len()
            || snapshot
                .sections()
                .iter()
                .zip(self.state.sections())
                .any(|(a, b)| a.record_size() != b.record_size())
        {
            return false;
        }
        self.newest = Some(tick);
        let linger = self.linger;
        for ((cur, seen), new) in self
            .state
            .sections_mut()
            .iter_mut()
            .zip(&mut self.seen)
            .zip(snapshot.sections())
        {
            merge(cur, seen, new, tick, linger, &mut self.scratch);
        }
        true
    }

    /// The presented world.
    pub fn state(&self) -> &Snapshot {
        &self.state
    }

    /// The newest tick applied.
    pub fn newest(&self) -> Option<u32> {
        self.newest
    }

    /// Ticks since entity `id` of section `section` was last updated, as of
    /// the newest applied tick (0: updated by it).
    pub fn age(&self, section: usize, id: u32) -> Option<u32> {
        let sec = self.state.sections().get(section)?;
        let i = sec.ids().binary_search(&id).ok()?;
        let seen = self.seen.get(section)?.get(i)?;
        Some(self.newest?.saturating_sub(*seen))
    }
}

/// Merges `new` (the snapshot of `tick`) into `cur`: its entities updated,
/// `cur`'s others kept while younger than `linger` ticks.
fn merge(
    cur: &mut Section,
    seen: &mut Vec<u32>,
    new: &Section,
    tick: u32,
    linger: u32,
    out: &mut Section,
) {
    let rs = cur.record_size();
    out.clear_for(rs);
    let mut out_seen = Vec::with_capacity(cur.len().max(new.len()));
    {
        let (ids, records) = out.parts_mut();
        let mut old = cur.iter().zip(seen.iter().copied()).peekable();
        let mut fresh = new.iter().peekable();
        loop {
            let take_new = match (old.peek(), fresh.peek()) {
                (None, None) => break,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(((a, _), _)), Some((b, _))) => b <= a,
            };
            if take_new {
                let Some((id, rec)) = fresh.next() else { break };
                if old.peek().is_some_and(|((a, _), _)| *a == id) {
                    old.next();
                }
                ids.push(id);
                records.extend_from_slice(rec);
                out_seen.push(tick);
            } else {
                let Some(((id, rec), at)) = old.next() else {
                    break;
                };
                if tick.saturating_sub(at) <= linger {
                    ids.push(id);
                    records.extend_from_slice(rec);
                    out_seen.push(at);
                }
            }
        }
    }
    core::mem::swap(cur, out);
    *seen = out_seen;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack::{Primitive, Schema};

    fn snap(schema: &Schema, cars: &[(u32, u8)]) -> Snapshot {
        let mut s = Snapshot::new(schema);
        for &(id, v) in cars {
            s.section_mut(0).unwrap().insert(id, &[v]).unwrap();
        }
        s
    }

    #[test]
    fn omitted_entities_linger_then_go() {
        let schema = Schema::builder()
            .entity("car")
            .field("x", Primitive::U8, 1)
            .build()
            .unwrap();
        let mut p = Persist::new(&Snapshot::new(&schema), 3);
        assert!(p.apply(10, &snap(&schema, &[(1, 1), (2, 1), (3, 1)])));
        // Tick 11 updates car 1 only; 2 and 3 keep their records.
        assert!(p.apply(11, &snap(&schema, &[(1, 2)])));
        assert_eq!(p.state(), &snap(&schema, &[(1, 2), (2, 1), (3, 1)]));
        assert_eq!((p.age(0, 1), p.age(0, 2)), (Some(0), Some(1)));
        // Old or repeated ticks are ignored.
        assert!(!p.apply(11, &snap(&schema, &[(1, 9)])));
        assert!(!p.apply(5, &snap(&schema, &[])));
        // Car 2 updated at 13 (skipping 12); car 3 last seen at 10 is kept
        // through tick 13 (3 ticks) and dropped at 14.
        assert!(p.apply(13, &snap(&schema, &[(2, 3), (4, 4)])));
        assert_eq!(p.state(), &snap(&schema, &[(1, 2), (2, 3), (3, 1), (4, 4)]));
        assert!(p.apply(14, &snap(&schema, &[(2, 4)])));
        assert_eq!(p.state(), &snap(&schema, &[(1, 2), (2, 4), (4, 4)]));
        assert_eq!(p.age(0, 3), None);
        assert_eq!(p.age(0, 1), Some(3));
        // A snapshot of another shape is refused.
        let other = Schema::builder()
            .entity("car")
            .field("x", Primitive::U16, 1)
            .build()
            .unwrap();
        assert!(!p.apply(20, &Snapshot::new(&other)));
    }
}
