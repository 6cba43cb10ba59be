//! The recall: per section, the last record the receiver saw of every
//! entity that is not in a snapshot (FORMAT.md, "Recall").
//!
//! A spawned entity (in the snapshot, not in its baseline) is usually one
//! the receiver has seen before: an item re-entering view, a player
//! respawning. Its row is coded against its recalled record instead of the
//! type's default record, and is often identical to it.
//!
//! The recall of a snapshot follows the chain of baselines, so sender and
//! receiver compute the same one from what they both hold:
//!
//! ```text
//! recall(keyframe) = empty
//! recall(S)        = (recall(B) ∪ rows(B)) without the ids of S,   B = S's baseline
//! ```
//!
//! then evicted down to the [`Limits`] (oldest departures first); entities
//! gone for more than 4,096 steps are forgotten. Records
//! are stored in chunks of 32 ids, each behind an [`Arc`]: a recall derived
//! from another shares every chunk the step did not touch, so keeping one
//! recall per sent snapshot costs little more than the chunks that changed.

#![forbid(unsafe_code)]

use std::sync::Arc;

use crate::limits::Limits;
use crate::snapshot::{Baseline, SectionRef, Snapshot};

/// Steps after which a departed entity is forgotten: an entry added by
/// the step of generation `g` is dropped by the first step whose generation
/// is a multiple of [`SWEEP_EVERY`] and at least `g + MAX_AGE`.
pub(crate) const MAX_AGE: u64 = 4096;
/// How often (in steps) entries older than [`MAX_AGE`] are swept out.
pub(crate) const SWEEP_EVERY: u64 = 256;

/// Ids per chunk: small enough that a chunk copied by a step costs little
/// (32 Quake 3 entities are 6.6 KB), large enough that a chunk list stays
/// short.
const CHUNK_IDS: u32 = 32;

/// One chunk: the recalled entities among 32 consecutive ids.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Chunk {
    /// Bit `k` set when id `key · 32 + k` is recalled.
    present: u64,
    /// Their records, in id order.
    records: Vec<u8>,
    /// Their departure stamps (the recall generation that added them), in
    /// id order.
    stamps: Vec<u64>,
}

impl Chunk {
    fn rank(&self, bit: u32) -> usize {
        (self.present & ((1u64 << bit) - 1)).count_ones() as usize
    }
}

/// The recalled entities of one section, chunks sorted by key (`id / 32`).
#[derive(Debug, Clone, Default)]
struct RecallSection {
    record_size: usize,
    chunks: Vec<(u32, Arc<Chunk>)>,
    len: usize,
}

impl RecallSection {
    fn get(&self, id: u32) -> Option<&[u8]> {
        let (key, bit) = (id / CHUNK_IDS, id % CHUNK_IDS);
        let i = self.chunks.binary_search_by_key(&key, |c| c.0).ok()?;
        let c = &self.chunks[i].1;
        if c.present & (1u64 << bit) == 0 {
            return None;
        }
        let at = c.rank(bit) * self.record_size;
        c.records.get(at..at + self.record_size)
    }

    /// Inserts or replaces the record of `id`.
    fn insert(&mut self, id: u32, record: &[u8], stamp: u64) {
        let (key, bit) = (id / CHUNK_IDS, id % CHUNK_IDS);
        let rs = self.record_size;
        let i = match self.chunks.binary_search_by_key(&key, |c| c.0) {
            Ok(i) => i,
            Err(i) => {
                self.chunks.insert(i, (key, Arc::new(Chunk::default())));
                i
            }
        };
        let chunk = &mut self.chunks[i].1;
        let r = chunk.rank(bit);
        if chunk.present & (1u64 << bit) != 0 {
            let c = Arc::make_mut(chunk);
            c.records[r * rs..(r + 1) * rs].copy_from_slice(record);
            c.stamps[r] = stamp;
            return;
        }
        self.len += 1;
        let at = r * rs;
        match Arc::get_mut(chunk) {
            // Not shared: the records after `at` move up in place.
            Some(c) => {
                let end = c.records.len();
                c.records.resize(end + rs, 0);
                c.records.copy_within(at..end, at + rs);
                c.records[at..at + rs].copy_from_slice(record);
                c.stamps.insert(r, stamp);
                c.present |= 1u64 << bit;
            }
            // Shared with another recall: the new chunk is the old one
            // with the record merged in, built in one pass.
            None => {
                let old = &**chunk;
                let mut records = Vec::with_capacity(old.records.len() + rs);
                records.extend_from_slice(&old.records[..at]);
                records.extend_from_slice(record);
                records.extend_from_slice(&old.records[at..]);
                let mut stamps = Vec::with_capacity(old.stamps.len() + 1);
                stamps.extend_from_slice(&old.stamps[..r]);
                stamps.push(stamp);
                stamps.extend_from_slice(&old.stamps[r..]);
                *chunk = Arc::new(Chunk {
                    present: old.present | 1u64 << bit,
                    records,
                    stamps,
                });
            }
        }
    }

    /// Removes `id`, if recalled.
    fn remove(&mut self, id: u32) {
        let (key, bit) = (id / CHUNK_IDS, id % CHUNK_IDS);
        let Ok(i) = self.chunks.binary_search_by_key(&key, |c| c.0) else {
            return;
        };
        if self.chunks[i].1.present & (1u64 << bit) == 0 {
            return;
        }
        let rs = self.record_size;
        let c = Arc::make_mut(&mut self.chunks[i].1);
        let r = c.rank(bit);
        c.present &= !(1u64 << bit);
        c.records.drain(r * rs..(r + 1) * rs);
        c.stamps.remove(r);
        self.len -= 1;
        if c.present == 0 {
            self.chunks.remove(i);
        }
    }

    /// Removes every entry whose stamp is below `oldest`.
    fn forget_before(&mut self, oldest: u64) {
        let rs = self.record_size;
        let mut removed = 0;
        self.chunks.retain_mut(|(_, c)| {
            if c.stamps.iter().all(|&s| s >= oldest) {
                return true;
            }
            let c = Arc::make_mut(c);
            let (mut bits, mut r) = (c.present, 0usize);
            while bits != 0 {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                if c.stamps[r] < oldest {
                    c.present &= !(1u64 << b);
                    c.records.drain(r * rs..(r + 1) * rs);
                    c.stamps.remove(r);
                    removed += 1;
                } else {
                    r += 1;
                }
            }
            c.present != 0
        });
        self.len -= removed;
    }

    /// Every (stamp, id), in no particular order.
    fn entries(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.chunks.iter().flat_map(|(key, c)| {
            let mut bits = c.present;
            c.stamps.iter().map(move |&s| {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                (s, key * CHUNK_IDS + b)
            })
        })
    }
}

/// Per section, the last known record of the entities a snapshot does not
/// hold, derived along the chain of baselines (FORMAT.md 4.7):
///
/// ```text
/// recall(keyframe) = empty
/// recall(S)        = (recall(B) ∪ rows(B)) without the ids of S,   B = S's baseline
/// ```
///
/// capped by the [`Limits`] (oldest departures evicted first) and
/// forgetting entities gone for more than 4,096 steps. Pass the baseline's
/// recall in [`Reference::recall`] to code spawned entities against it:
/// an entity coming back into view is then coded against the last record
/// the receiver saw of it. Both ends must use the same one, which
/// [`Recall::advance`] guarantees when each applies it to the packets it
/// sent or decoded (the session layer does this for you).
///
/// Cheap to clone: records live in chunks of 32 ids shared between recalls
/// until one side changes them, so a step copies only the chunks it
/// touches.
///
/// ```
/// use tickpack::{Baseline, Decoder, Encoder, Limits, Primitive, Recall, Reference, Schema, Snapshot};
/// let schema = Schema::builder().entity("item").field("pos", Primitive::I32, 3).build()?;
/// let limits = Limits::default();
/// let mut with = Snapshot::new(&schema);
/// with.section_mut(0).unwrap().insert(9, &[7; 12])?;
/// let without = Snapshot::new(&schema);
///
/// let (mut enc, mut dec) = (Encoder::new(schema.clone()), Decoder::new(schema));
/// // Tick 0: a keyframe with the item; tick 1: the item leaves view.
/// let r0 = Recall::keyframe(0);
/// let key = enc.encode(&with, 0, Reference::KEYFRAME)?;
/// let (_, got0) = dec.decode(&key, Reference::KEYFRAME)?;
/// let b0 = Baseline { sequence: 0, snapshot: &got0 };
/// let p1 = enc.encode(&without, 1, Reference::delta(b0).with_recall(&r0))?;
/// let (_, got1) = dec.decode(&p1, Reference::delta(b0).with_recall(&r0))?;
/// let r1 = r0.advance(b0, &got1, 1, &limits);
/// assert_eq!(r1.get(0, 9), Some(&[7u8; 12][..]));
/// // Tick 2: it is back, coded against what tick 0 said of it.
/// let b1 = Baseline { sequence: 1, snapshot: &got1 };
/// let p2 = enc.encode(&with, 2, Reference::delta(b1).with_recall(&r1))?;
/// let (_, got2) = dec.decode(&p2, Reference::delta(b1).with_recall(&r1))?;
/// assert_eq!(got2, with);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`Reference::recall`]: crate::Reference::recall
#[derive(Debug, Clone, Default)]
pub struct Recall {
    /// The sequence of the snapshot this is the recall of.
    sequence: u16,
    /// Steps since the keyframe that started the chain.
    generation: u64,
    sections: Vec<RecallSection>,
}

impl Recall {
    /// The recall of a keyframe (a snapshot sent without baseline) sent as
    /// `sequence`: empty.
    pub fn keyframe(sequence: u16) -> Self {
        Self {
            sequence,
            generation: 0,
            sections: Vec::new(),
        }
    }

    /// The sequence of the snapshot this is the recall of.
    pub fn sequence(&self) -> u16 {
        self.sequence
    }

    /// Entities recalled, over all sections.
    pub fn len(&self) -> usize {
        self.sections.iter().map(|s| s.len).sum()
    }

    /// Whether nothing is recalled.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The recalled record of entity `id` of section `section`.
    pub fn get(&self, section: usize, id: u32) -> Option<&[u8]> {
        self.sections.get(section)?.get(id)
    }

    /// Bytes the recall counts against [`Limits::max_snapshot_bytes`]:
    /// entities times (record size + 4), over all sections.
    pub fn counted_bytes(&self) -> usize {
        self.sections
            .iter()
            .map(|s| s.len.saturating_mul(s.record_size + 4))
            .fold(0, usize::saturating_add)
    }

    /// Whether both hold the same entities with the same records (and the
    /// same sequence). Chunks both share are not compared byte by byte.
    pub fn same_as(&self, other: &Recall) -> bool {
        if self.sequence != other.sequence || self.len() != other.len() {
            return false;
        }
        let nonempty = |r: &Recall| -> Vec<usize> {
            (0..r.sections.len())
                .filter(|&i| r.sections[i].len > 0)
                .collect()
        };
        if nonempty(self) != nonempty(other) {
            return false;
        }
        self.sections.iter().zip(&other.sections).all(|(a, b)| {
            a.len == 0
                || (a.record_size == b.record_size
                    && a.chunks.len() == b.chunks.len()
                    && a.chunks.iter().zip(&b.chunks).all(|(x, y)| {
                        x.0 == y.0
                            && (Arc::ptr_eq(&x.1, &y.1)
                                || (x.1.present == y.1.present && x.1.records == y.1.records))
                    }))
        })
    }

    /// Heap bytes held by chunks not in `seen` (each chunk counted once),
    /// adding those chunks to `seen`: the memory a set of recalls holds
    /// together.
    pub(crate) fn heap_bytes(&self, seen: &mut std::collections::HashSet<*const ()>) -> usize {
        let mut total = 0;
        for s in &self.sections {
            total += s.chunks.capacity() * core::mem::size_of::<(u32, Arc<Chunk>)>();
            for (_, c) in &s.chunks {
                if seen.insert(Arc::as_ptr(c).cast::<()>()) {
                    total += c.records.capacity()
                        + 8 * c.stamps.capacity()
                        + core::mem::size_of::<Chunk>();
                }
            }
        }
        total
    }

    /// The recall of `current`, sent as `sequence` against `baseline`,
    /// whose recall is `self`: `self` and the entities of `baseline` that
    /// `current` does not hold, evicted down to `limits` (FORMAT.md,
    /// "Recall"). Shares every chunk of `self` the step leaves alone.
    pub fn advance(
        &self,
        baseline: Baseline<'_>,
        current: &Snapshot,
        sequence: u16,
        limits: &Limits,
    ) -> Recall {
        let mut out = Recall::default();
        self.advance_into(baseline, current, sequence, limits, &mut out);
        out
    }

    /// [`Recall::advance`] into `out`, reusing its buffers.
    pub fn advance_into(
        &self,
        baseline: Baseline<'_>,
        current: &Snapshot,
        sequence: u16,
        limits: &Limits,
        out: &mut Recall,
    ) {
        let stamp = self.generation + 1;
        out.sequence = sequence;
        out.generation = stamp;
        let n = baseline
            .snapshot
            .sections()
            .len()
            .min(current.sections().len());
        out.sections.resize_with(n, RecallSection::default);
        for (i, o) in out.sections.iter_mut().enumerate() {
            let (b, c) = (
                baseline.snapshot.sections()[i].as_ref(),
                current.sections()[i].as_ref(),
            );
            o.chunks.clear();
            o.len = 0;
            o.record_size = b.record_size();
            if let Some(s) = self
                .sections
                .get(i)
                .filter(|s| s.record_size == b.record_size() && s.len > 0)
            {
                o.chunks.extend(s.chunks.iter().cloned());
                o.len = s.len;
            }
            if c.record_size() != b.record_size() {
                continue;
            }
            step(o, &b, &c, stamp);
            if stamp.is_multiple_of(SWEEP_EVERY) && stamp >= MAX_AGE {
                o.forget_before(stamp - MAX_AGE + 1);
            }
        }
        out.evict(limits);
    }

    /// Evicts entries until every section holds at most
    /// `max_entities_per_section` and [`Recall::counted_bytes`] is at most
    /// `max_snapshot_bytes`: oldest departure first, then the larger id,
    /// then the later section.
    fn evict(&mut self, limits: &Limits) {
        let over_count = self
            .sections
            .iter()
            .any(|s| s.len > limits.max_entities_per_section);
        if !over_count && self.counted_bytes() <= limits.max_snapshot_bytes {
            return;
        }
        let mut order: Vec<(u64, u32, usize)> = Vec::with_capacity(self.len());
        for (i, s) in self.sections.iter().enumerate() {
            order.extend(s.entries().map(|(stamp, id)| (stamp, id, i)));
        }
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
        for &(_, id, i) in &order {
            if self.sections[i].len > limits.max_entities_per_section {
                self.sections[i].remove(id);
            }
        }
        let mut bytes = self.counted_bytes();
        for &(_, id, i) in &order {
            if bytes <= limits.max_snapshot_bytes {
                break;
            }
            let s = &mut self.sections[i];
            if s.get(id).is_some() {
                s.remove(id);
                bytes -= s.record_size + 4;
            }
        }
    }
}

/// One section's step: the entities of `b` missing from `c` are added (with
/// their records in `b`), the entities of `c` are removed.
fn step(o: &mut RecallSection, b: &SectionRef<'_>, c: &SectionRef<'_>, stamp: u64) {
    let (bi, ci) = (b.ids(), c.ids());
    let (mut i, mut j) = (0usize, 0usize);
    while i < bi.len() || j < ci.len() {
        let (x, y) = (bi.get(i).copied(), ci.get(j).copied());
        match (x, y) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(x), y) if y.is_none_or(|y| x < y) => {
                o.insert(x, b.record(i), stamp);
                i += 1;
            }
            (_, Some(y)) => {
                // Only an entity new to `c` can be recalled (the recall of
                // `b` holds none of `b`'s ids).
                if o.len > 0 {
                    o.remove(y);
                }
                j += 1;
            }
            (_, None) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Primitive, Schema};

    fn schema() -> Schema {
        Schema::builder()
            .entity("a")
            .field("x", Primitive::U8, 2)
            .build()
            .unwrap()
    }

    fn snap(s: &Schema, ids: &[(u32, u8)]) -> Snapshot {
        let mut out = Snapshot::new(s);
        for &(id, v) in ids {
            out.section_mut(0).unwrap().insert(id, &[v, v]).unwrap();
        }
        out
    }

    #[test]
    fn follows_the_chain() {
        let s = schema();
        let l = Limits::default();
        let s0 = snap(&s, &[(1, 1), (2, 2), (100, 3)]);
        let s1 = snap(&s, &[(2, 5)]);
        let s2 = snap(&s, &[(1, 9), (3, 3)]);
        let r0 = Recall::keyframe(0);
        let r1 = r0.advance(
            Baseline {
                sequence: 0,
                snapshot: &s0,
            },
            &s1,
            1,
            &l,
        );
        assert_eq!(r1.sequence(), 1);
        assert_eq!(r1.len(), 2);
        assert_eq!(r1.get(0, 1), Some(&[1u8, 1][..]));
        assert_eq!(r1.get(0, 100), Some(&[3u8, 3][..]));
        assert_eq!(r1.get(0, 2), None);
        let r2 = r1.advance(
            Baseline {
                sequence: 1,
                snapshot: &s1,
            },
            &s2,
            2,
            &l,
        );
        // 1 is back (no longer recalled), 2 left with its record of s1.
        assert_eq!(r2.get(0, 1), None);
        assert_eq!(r2.get(0, 2), Some(&[5u8, 5][..]));
        assert_eq!(r2.get(0, 100), Some(&[3u8, 3][..]));
        assert_eq!(r2.len(), 2);
        // The chunk of 100 was not touched: still shared with r1.
        let c = |r: &Recall| {
            r.sections[0]
                .chunks
                .iter()
                .find(|c| c.0 == 100 / CHUNK_IDS)
                .unwrap()
                .1
                .clone()
        };
        assert!(Arc::ptr_eq(&c(&r1), &c(&r2)));
        assert!(!r1.same_as(&r2));
        assert!(r2.same_as(&r2.clone()));
    }

    #[test]
    fn forgets_old_departures() {
        let s = schema();
        let l = Limits::default();
        let with = snap(&s, &[(3, 1)]);
        let without = snap(&s, &[]);
        let base = |snapshot| Baseline {
            sequence: 0,
            snapshot,
        };
        let mut r = Recall::keyframe(0).advance(base(&with), &without, 1, &l);
        let mut steps = 1;
        while r.get(0, 3).is_some() {
            r = r.advance(base(&without), &without, 0, &l);
            steps += 1;
        }
        // Added by step 1, dropped by the first sweep at least MAX_AGE later.
        assert_eq!(steps, (1 + MAX_AGE).next_multiple_of(SWEEP_EVERY));
        assert!(r.is_empty());
    }

    #[test]
    fn evicts_oldest_departures_first() {
        let s = schema();
        let l = Limits {
            max_entities_per_section: 2,
            ..Limits::default()
        };
        let a = snap(&s, &[(5, 1), (6, 1)]);
        let b = snap(&s, &[(7, 2)]);
        let c = snap(&s, &[]);
        let base = |snapshot| Baseline {
            sequence: 0,
            snapshot,
        };
        let r1 = Recall::keyframe(0).advance(base(&a), &b, 1, &l);
        assert_eq!(r1.len(), 2);
        // 7 departs later than 5 and 6: of those, the larger id goes first.
        let r2 = r1.advance(base(&b), &c, 2, &l);
        assert_eq!(r2.len(), 2);
        assert!(r2.get(0, 7).is_some() && r2.get(0, 5).is_some());
        let bytes = Limits {
            max_snapshot_bytes: 6,
            ..Limits::default()
        };
        let r3 = r1.advance(base(&b), &c, 2, &bytes);
        assert_eq!(r3.len(), 1);
        assert!(r3.get(0, 7).is_some());
        assert!(r3.counted_bytes() <= 6);
    }
}
