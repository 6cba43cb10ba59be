//! Interest management: which entities one client sees, and which of them
//! it gets fresh this tick.

use std::sync::Arc;

use tickpack::{Section, Snapshot};

/// The entities a client sees: everything, or per section a set of ids.
///
/// A filtered view has two sets per section:
///
/// * **sent** ids go into the client's snapshot with this tick's record;
/// * **held** ids stay in the client's snapshot with the record of the
///   packet's baseline. They are neither updated nor removed, cost nothing
///   on the wire (the server codes such packets without a prior, so they
///   are "unchanged"), and their next update is a delta, not a re-spawn. A
///   held id the baseline lacks is sent with this tick's record (the client
///   cannot keep what it does not have); a held id gone from the world is
///   removed.
///
/// **Hold only what may wait.** A held record is as old as the client's
/// chain of baselines makes it: when the round trip is longer than the
/// hold, it is older than a record the client already applied (a moving
/// entity steps back), and if the skip schedule keeps missing the ticks the
/// baselines come from it does not refresh at all. In the UDP lobby
/// (100 ms round trip, far cars held 3 ticks of 4) held car records were
/// 25 ticks old on average and up to 147. Hold parked, static or
/// unimportant entities; to send moving entities less often, leave them
/// out with [`View::filter`] and keep them on the client with
/// [`Persist`](super::Persist), which never steps back.
///
/// Ids in neither set are not in the client's snapshot at all (out of
/// interest: the client sees them disappear).
///
/// Cheap to clone (shared); two views compare equal when they select the
/// same ids, which is what lets clients share one encode.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct View(Option<Arc<Sets>>);

/// The id sets of a view, with a digest of them computed once: two sets
/// compare their digests first, so that a server comparing one client's
/// view with the views of many others (to share an encode) reads the ids
/// only of views that are likely equal.
#[derive(Debug, PartialEq, Eq, Hash, Default)]
struct Sets {
    digest: u64,
    send: Vec<Vec<u32>>,
    hold: Vec<Vec<u32>>,
}

impl Sets {
    fn new(send: Vec<Vec<u32>>, hold: Vec<Vec<u32>>) -> Self {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for sets in [&send, &hold] {
            h.update(&(sets.len() as u64).to_le_bytes());
            for ids in sets {
                h.update(&(ids.len() as u64).to_le_bytes());
                h.update(bytemuck::cast_slice(ids));
            }
        }
        Self {
            digest: h.digest(),
            send,
            hold,
        }
    }
}

fn normalize(sections: &mut [Vec<u32>]) {
    for s in sections {
        s.sort_unstable();
        s.dedup();
    }
}

impl View {
    /// Every entity of every section, fresh every tick.
    pub fn all() -> Self {
        Self(None)
    }

    /// Per section, the ids visible (any order; duplicates ignored), all
    /// sent fresh. Sections past the end of `sections` see nothing.
    pub fn filter(sections: Vec<Vec<u32>>) -> Self {
        Self::with_held(sections, Vec::new())
    }

    /// Per section, the ids sent fresh this tick (`send`) and the ids held
    /// at the client's baseline record (`hold`); see the [type docs](View).
    /// Any order, duplicates ignored; an id in both sets is sent.
    pub fn with_held(mut send: Vec<Vec<u32>>, mut hold: Vec<Vec<u32>>) -> Self {
        normalize(&mut send);
        normalize(&mut hold);
        for (i, h) in hold.iter_mut().enumerate() {
            if let Some(s) = send.get(i) {
                h.retain(|id| s.binary_search(id).is_err());
            }
        }
        while hold.last().is_some_and(Vec::is_empty) {
            hold.pop();
        }
        Self(Some(Arc::new(Sets::new(send, hold))))
    }

    /// Whether this is [`View::all`].
    pub fn is_all(&self) -> bool {
        self.0.is_none()
    }

    /// Whether any id is held.
    pub fn has_held(&self) -> bool {
        self.0.as_ref().is_some_and(|s| !s.hold.is_empty())
    }

    /// The ids of section `index` sent fresh (ascending); `None` for
    /// [`View::all`] (every id).
    pub fn sent_ids(&self, index: usize) -> Option<&[u32]> {
        self.0
            .as_ref()
            .map(|s| s.send.get(index).map_or(&[][..], Vec::as_slice))
    }

    /// The ids of section `index` held (ascending).
    pub fn held_ids(&self, index: usize) -> &[u32] {
        self.0
            .as_ref()
            .and_then(|s| s.hold.get(index))
            .map_or(&[], Vec::as_slice)
    }

    /// Writes the part of `world` this view sends fresh into `out`. For a
    /// view without held ids that is the client's whole snapshot; with held
    /// ids the server adds them from the baseline (see [`View`]).
    pub fn apply(&self, world: &Snapshot, out: &mut Snapshot) {
        let Some(sets) = &self.0 else {
            out.clone_from(world);
            return;
        };
        out.reset_like(world);
        for (i, (src, sec)) in world.sections().iter().zip(out.sections_mut()).enumerate() {
            let send: &[u32] = sets.send.get(i).map_or(&[], Vec::as_slice);
            compose_section(src, sec, send, &[], None, None);
        }
    }

    /// The client's snapshot: sent ids with `world`'s records, held ids
    /// with `held_from`'s record where it has one, else `world`'s. Held
    /// entities (with the records used) are also written to `held_out`.
    pub(crate) fn compose(
        &self,
        world: &Snapshot,
        held_from: Option<&Snapshot>,
        out: &mut Snapshot,
        mut held_out: Option<&mut Snapshot>,
    ) {
        let Some(sets) = &self.0 else {
            out.clone_from(world);
            return;
        };
        // Only what the view keeps is copied: a copy of the whole world
        // per send was most of the server's cache misses.
        out.reset_like(world);
        if let Some(h) = held_out.as_deref_mut() {
            h.reset_like(world);
        }
        for (i, (src, sec)) in world.sections().iter().zip(out.sections_mut()).enumerate() {
            let send: &[u32] = sets.send.get(i).map_or(&[], Vec::as_slice);
            let hold: &[u32] = sets.hold.get(i).map_or(&[], Vec::as_slice);
            let from = held_from.and_then(|h| h.sections().get(i));
            let held_sec = held_out
                .as_deref_mut()
                .and_then(|h| h.sections_mut().get_mut(i));
            compose_section(src, sec, send, hold, from, held_sec);
        }
    }

    /// How many of the ids this view sends a snapshot sent with `base`
    /// holds (sent or held there); `None` when either view is
    /// [`View::all`] (every id is in both).
    pub(crate) fn covered_by(&self, base: &View) -> Option<usize> {
        let (now, base) = (self.0.as_ref()?, base.0.as_ref()?);
        let empty = Vec::new();
        let n = now
            .send
            .iter()
            .enumerate()
            .map(|(i, send)| {
                let sent = base.send.get(i).unwrap_or(&empty);
                let held = base.hold.get(i).unwrap_or(&empty);
                common(send, sent) + common(send, held)
            })
            .sum();
        Some(n)
    }

    /// Ids this view sends.
    pub(crate) fn sent_len(&self) -> Option<usize> {
        self.0.as_ref().map(|s| s.send.iter().map(Vec::len).sum())
    }

    /// Heap bytes this view holds (shared between clones).
    pub fn heap_bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |s| {
            s.send
                .iter()
                .chain(&s.hold)
                .map(|v| v.capacity() * 4 + 24)
                .sum()
        })
    }
}

/// How many ids two ascending lists share, in one pass over both.
fn common(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            core::cmp::Ordering::Less => i += 1,
            core::cmp::Ordering::Greater => j += 1,
            core::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Writes into `out` (empty, for `src`'s records) the sent ids of `src`
/// with their records and the held ids with the record from `from` when it
/// has one (else `src`'s); `held` (empty too) gets the held entities. Runs
/// of sent records are copied at once.
fn compose_section(
    src: &Section,
    out: &mut Section,
    send: &[u32],
    hold: &[u32],
    from: Option<&Section>,
    held: Option<&mut Section>,
) {
    let rs = src.record_size();
    let (ids, records) = (src.ids(), src.records());
    let (out_ids, out_records) = out.parts_mut();
    let mut held = held.map(Section::parts_mut);
    let (mut s, mut h) = (0, 0);
    // The sent records from `run` up to the current one, not yet copied.
    let mut run = 0;
    let flush = |run: usize, end: usize, oi: &mut Vec<u32>, or: &mut Vec<u8>| {
        if run < end {
            oi.extend_from_slice(&ids[run..end]);
            or.extend_from_slice(&records[run * rs..end * rs]);
        }
    };
    for (r, &id) in ids.iter().enumerate() {
        while send.get(s).is_some_and(|&x| x < id) {
            s += 1;
        }
        if send.get(s) == Some(&id) {
            continue;
        }
        flush(run, r, out_ids, out_records);
        run = r + 1;
        while hold.get(h).is_some_and(|&x| x < id) {
            h += 1;
        }
        if hold.get(h) != Some(&id) {
            continue;
        }
        let record = from
            .and_then(|f| f.get(id))
            .filter(|rec| rec.len() == rs)
            .unwrap_or(&records[r * rs..(r + 1) * rs]);
        out_ids.push(id);
        out_records.extend_from_slice(record);
        if let Some((hi, hr)) = held.as_mut() {
            hi.push(id);
            hr.extend_from_slice(record);
        }
    }
    flush(run, ids.len(), out_ids, out_records);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack::{Primitive, Schema};

    #[test]
    fn coverage_counts_sent_ids_the_base_sent_or_held() {
        let now = View::filter(vec![vec![1, 2, 3, 9], vec![4, 5]]);
        let base = View::with_held(vec![vec![2, 7], vec![5]], vec![vec![3], vec![4, 6]]);
        // Section 0: 2 (sent) and 3 (held); section 1: 5 (sent), 4 (held).
        assert_eq!(now.covered_by(&base), Some(4));
        assert_eq!(now.sent_len(), Some(6));
        assert_eq!(now.covered_by(&View::filter(Vec::new())), Some(0));
        assert_eq!(now.covered_by(&View::all()), None);
        assert_eq!(View::all().covered_by(&base), None);
        assert_eq!(common(&[1, 3, 5, 7], &[0, 3, 4, 7, 8]), 2);
    }

    fn world(schema: &Schema, ids: &[u32], value: u8) -> Snapshot {
        let mut w = Snapshot::new(schema);
        for &id in ids {
            w.section_mut(0)
                .unwrap()
                .insert(id, &[value, id as u8])
                .unwrap();
        }
        w
    }

    #[test]
    fn held_ids_keep_the_baseline_record() {
        let schema = Schema::builder()
            .entity("e")
            .field("v", Primitive::U8, 2)
            .build()
            .unwrap();
        let now = world(&schema, &[1, 2, 3, 4, 6], 9);
        let base = world(&schema, &[1, 2, 3, 5], 1);
        // 1 sent, 2 held (in base), 4 held (not in base: sent fresh),
        // 5 held but gone from the world, 3 and 6 out of interest.
        let v = View::with_held(vec![vec![1, 2]], vec![vec![2, 4, 5]]);
        assert_eq!(v.held_ids(0), &[4, 5]);
        assert_eq!(v.sent_ids(0), Some(&[1, 2][..]));
        let v = View::with_held(vec![vec![1]], vec![vec![5, 4, 2, 2]]);
        assert!(v.has_held());
        let mut out = Snapshot::new(&schema);
        let mut held = Snapshot::new(&schema);
        v.compose(&now, Some(&base), &mut out, Some(&mut held));
        let s = &out.sections()[0];
        assert_eq!(s.ids(), &[1, 2, 4]);
        assert_eq!(s.records(), &[9, 1, 1, 2, 9, 4]);
        assert_eq!(held.sections()[0].ids(), &[2, 4]);
        assert_eq!(held.sections()[0].records(), &[1, 2, 9, 4]);
        // Re-composing from the held part reproduces the snapshot.
        let mut again = Snapshot::new(&schema);
        v.compose(&now, Some(&held), &mut again, None);
        assert_eq!(again, out);
        // Without a baseline, held ids are sent fresh.
        v.compose(&now, None, &mut out, None);
        assert_eq!(out.sections()[0].records(), &[9, 1, 9, 2, 9, 4]);
        // `apply` writes the sent part only.
        v.apply(&now, &mut out);
        assert_eq!(out.sections()[0].ids(), &[1]);
    }

    #[test]
    fn filter_and_all_hold_nothing() {
        assert!(!View::all().has_held());
        assert!(!View::filter(vec![vec![1]]).has_held());
        assert!(!View::with_held(vec![vec![1]], vec![vec![1], vec![]]).has_held());
        assert_eq!(
            View::with_held(vec![vec![2, 1]], vec![]),
            View::filter(vec![vec![1, 2]])
        );
    }

    #[test]
    fn views_are_equal_when_their_ids_are() {
        let long: Vec<u32> = (0..1000).collect();
        let mut last = long.clone();
        last[999] = 1000;
        let v = View::filter(vec![long.clone()]);
        // Built apart, in another order, with duplicates: equal.
        let mut shuffled = long.clone();
        shuffled.reverse();
        shuffled.push(7);
        assert_eq!(v, View::filter(vec![shuffled]));
        assert_eq!(
            View::with_held(vec![vec![1]], vec![vec![2, 3]]),
            View::with_held(vec![vec![1]], vec![vec![3, 2, 1]])
        );
        // One id apart, in another section or held instead of sent: not.
        assert_ne!(v, View::filter(vec![last]));
        assert_ne!(v, View::filter(vec![vec![], long.clone()]));
        assert_ne!(
            View::with_held(vec![vec![1]], vec![vec![2]]),
            View::filter(vec![vec![1, 2]])
        );
        assert_ne!(v, View::all());
    }
}
