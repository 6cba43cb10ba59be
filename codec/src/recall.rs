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
/// short. Also the size of an id group in the counted bytes (FORMAT.md
/// 4.7).
const CHUNK_IDS: u32 = 32;

/// Most entries of a recall section's prefix of the order kept beside it.
const RECENT: usize = 32;

/// Bytes a recall counts for each group of 32 ids it holds any of (FORMAT.md
/// 4.7): about what the group's chunk costs beside its records and stamps,
/// so that sparse ids cannot make a recall hold many times the memory it
/// counts.
pub(crate) const GROUP_BYTES: usize = 128;

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
    /// The largest of `stamps` (0 for none): ranks skip chunks whose
    /// entities all left before the one they look for.
    newest: u64,
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
    /// A prefix of the recall's order (4.7: the latest departure first,
    /// then the smaller id), at most [`RECENT`] (stamp, id) entries: the
    /// ranks most packets send, found without a scan of every entry.
    recent: Vec<(u64, u32)>,
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

    /// Applies `changes` (ids ascending, each at most once) in one pass
    /// over `src`, the chunks (sorted by key) of a recall of the same
    /// record size holding `src_len` entities: the result replaces
    /// `self`'s entities. A chunk that is also another recall's is copied
    /// before a change touches it.
    fn merge<'a>(
        &mut self,
        src: impl Iterator<Item = (u32, Arc<Chunk>)>,
        src_len: usize,
        changes: impl Iterator<Item = Change<'a>>,
        stamp: u64,
    ) {
        let rs = self.record_size;
        self.chunks.clear();
        self.len = src_len;
        let mut old = src.peekable();
        let mut changes = changes.peekable();
        while let Some(first) = changes.peek() {
            let key = first.id() / CHUNK_IDS;
            while let Some(c) = old.next_if(|c| c.0 < key) {
                self.chunks.push(c);
            }
            let mut chunk = old.next_if(|c| c.0 == key).map(|c| c.1);
            while let Some(change) = changes.next_if(|c| c.id() / CHUNK_IDS == key) {
                let bit = change.id() % CHUNK_IDS;
                match change {
                    Change::Insert(id, record) => {
                        let c = chunk.get_or_insert_with(Default::default);
                        if insert(c, bit, record, stamp, rs) {
                            self.len += 1;
                        }
                        // Departures of this step, in id order: the front
                        // of the order (all of them, cut to `RECENT` once
                        // the step is done).
                        self.recent.push((stamp, id));
                    }
                    Change::Remove(_) => {
                        if chunk.as_mut().is_some_and(|c| remove(c, bit, rs)) {
                            self.len -= 1;
                        }
                    }
                }
            }
            if let Some(c) = chunk.filter(|c| c.present != 0) {
                self.chunks.push((key, c));
            }
        }
        self.chunks.extend(old);
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
            c.newest = c.stamps.iter().copied().max().unwrap_or(0);
            c.present != 0
        });
        self.len -= removed;
    }

    /// The departure stamp of `id`, if recalled.
    fn stamp(&self, id: u32) -> Option<u64> {
        let (key, bit) = (id / CHUNK_IDS, id % CHUNK_IDS);
        let i = self.chunks.binary_search_by_key(&key, |c| c.0).ok()?;
        let c = &self.chunks[i].1;
        if c.present & (1u64 << bit) == 0 {
            return None;
        }
        c.stamps.get(c.rank(bit)).copied()
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

/// One change a step makes to a section's recall.
#[derive(Debug, Clone, Copy)]
enum Change<'a> {
    /// Recall `id` with this record (replacing one it has).
    Insert(u32, &'a [u8]),
    /// Forget `id`, if recalled.
    Remove(u32),
}

impl Change<'_> {
    fn id(&self) -> u32 {
        match *self {
            Change::Insert(id, _) | Change::Remove(id) => id,
        }
    }
}

/// Sets the record of bit `bit` of `chunk` (records of `rs` bytes) and its
/// stamp; returns whether the bit is new. A chunk shared with another
/// recall is copied first.
fn insert(chunk: &mut Arc<Chunk>, bit: u32, record: &[u8], stamp: u64, rs: usize) -> bool {
    let r = chunk.rank(bit);
    let at = r * rs;
    if chunk.present & (1u64 << bit) != 0 {
        let c = Arc::make_mut(chunk);
        c.records[at..at + rs].copy_from_slice(record);
        c.stamps[r] = stamp;
        c.newest = c.newest.max(stamp);
        return false;
    }
    match Arc::get_mut(chunk) {
        // Not shared: the records after `at` move up in place.
        Some(c) => {
            let end = c.records.len();
            c.records.resize(end + rs, 0);
            c.records.copy_within(at..end, at + rs);
            c.records[at..at + rs].copy_from_slice(record);
            c.stamps.insert(r, stamp);
            c.newest = c.newest.max(stamp);
            c.present |= 1u64 << bit;
        }
        // Shared with another recall: the new chunk is the old one with the
        // record merged in, built in one pass.
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
                newest: old.newest.max(stamp),
            });
        }
    }
    true
}

/// Clears bit `bit` of `chunk` (records of `rs` bytes) with its record and
/// stamp; returns whether it was set. A chunk shared with another recall
/// is copied first.
fn remove(chunk: &mut Arc<Chunk>, bit: u32, rs: usize) -> bool {
    if chunk.present & (1u64 << bit) == 0 {
        return false;
    }
    let c = Arc::make_mut(chunk);
    let r = c.rank(bit);
    c.present &= !(1u64 << bit);
    c.records.drain(r * rs..(r + 1) * rs);
    c.stamps.remove(r);
    c.newest = c.stamps.iter().copied().max().unwrap_or(0);
    true
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

    /// The rank of entity `id` of section `section` in the recall's order
    /// (FORMAT.md 4.7: the latest departure first, then the smaller id), if
    /// recalled: what a packet that brings it back sends instead of its id,
    /// so two recalls give one packet only when their ranks agree too.
    pub fn rank_of(&self, section: usize, id: u32) -> Option<u32> {
        let s = self.sections.get(section)?;
        if let Some(k) = s.recent.iter().position(|&(_, i)| i == id) {
            return Some(k as u32);
        }
        let stamp = s.stamp(id)?;
        // Ages are below 2^32 (entries are forgotten after 4,096 steps), so
        // "younger" is "larger stamp", as [`Recall::ids_at_ranks`] orders.
        let mut before = 0usize;
        for (key, c) in &s.chunks {
            // Every entity of the chunk left before this one.
            if c.newest < stamp {
                continue;
            }
            let (mut later, mut same) = (0usize, false);
            for &t in &c.stamps {
                later += usize::from(t > stamp);
                same |= t == stamp;
            }
            before += later;
            // Ids only where one left on the same step.
            if same {
                let mut bits = c.present;
                for &t in &c.stamps {
                    let b = bits.trailing_zeros();
                    bits &= bits.wrapping_sub(1);
                    before += usize::from(t == stamp && key * CHUNK_IDS + b < id);
                }
            }
        }
        Some(before as u32)
    }

    /// How many steps before this recall's an entry of departure stamp
    /// `stamp` left: at most the 4,096 steps after which it is forgotten
    /// (4.7), so the cap never changes the order.
    #[inline]
    fn age(&self, stamp: u64) -> u32 {
        self.generation
            .saturating_sub(stamp)
            .min(u64::from(u32::MAX)) as u32
    }

    /// Appends to `out` the ids of section `section` at `ranks` (ascending)
    /// in the recall's order ([`Recall::rank_of`]); `false` when a rank is
    /// past the section's entries. Ranks within the section's prefix of the
    /// order are read from it; past it, `scratch` holds 8 bytes per entry
    /// (fewer than a recalled entity counts against the limits): linear in
    /// the recall's size, then a sort of the entries at most as old as the
    /// highest rank's.
    pub(crate) fn ids_at_ranks(
        &self,
        section: usize,
        ranks: &[u32],
        scratch: &mut Vec<u64>,
        out: &mut Vec<u32>,
    ) -> bool {
        let Some(&last) = ranks.last() else {
            return true;
        };
        let Some(s) = self.sections.get(section) else {
            return false;
        };
        let need = last as usize + 1;
        if need > s.len {
            return false;
        }
        if need <= s.recent.len() {
            out.extend(
                ranks
                    .iter()
                    .filter_map(|&r| s.recent.get(r as usize))
                    .map(|e| e.1),
            );
            return true;
        }
        // Past the prefix (rare): the `need`-th smallest age; the entries
        // up to the highest rank are those at most that old.
        scratch.clear();
        for (_, c) in &s.chunks {
            scratch.extend(c.stamps.iter().map(|&t| u64::from(self.age(t))));
        }
        if need > scratch.len() {
            return false;
        }
        let (_, &mut oldest, _) = scratch.select_nth_unstable(need - 1);
        let oldest = oldest as u32;
        // Their keys (age, then id), sorted.
        scratch.clear();
        for (key, c) in &s.chunks {
            if self.age(c.newest) > oldest {
                continue;
            }
            let mut bits = c.present;
            for &t in &c.stamps {
                let b = bits.trailing_zeros();
                bits &= bits.wrapping_sub(1);
                let a = self.age(t);
                if a <= oldest {
                    scratch.push(u64::from(a) << 32 | u64::from(key * CHUNK_IDS + b));
                }
            }
        }
        scratch.sort_unstable();
        for &r in ranks {
            match scratch.get(r as usize) {
                Some(&k) => out.push(k as u32),
                None => return false,
            }
        }
        true
    }

    /// Bytes the recall counts against [`Limits::max_snapshot_bytes`]:
    /// entities times (record size + 4) plus 128 per group of 32 ids
    /// (`id / 32`) holding any, over all sections (FORMAT.md 4.7).
    pub fn counted_bytes(&self) -> usize {
        self.sections
            .iter()
            .map(|s| {
                s.len
                    .saturating_mul(s.record_size + 4)
                    .saturating_add(s.chunks.len().saturating_mul(GROUP_BYTES))
            })
            .fold(0, usize::saturating_add)
    }

    /// Whether both are the same recall: the same sequence, the same
    /// entities with the same records, and the same steps counted since
    /// their keyframes with the same departure stamps, so that every recall
    /// derived from one equals the one derived from the other (entities
    /// are forgotten and evicted by their stamps). Chunks both share are
    /// not compared byte by byte.
    pub fn same_as(&self, other: &Recall) -> bool {
        self.generation == other.generation && self.same_chunks(other, |x, y| x == y)
    }

    /// Whether both hold the same entities with the same records for the
    /// same sequence, whatever their step counts and departure stamps: an
    /// encoder given either writes the same bytes, though the recalls
    /// derived from the two may forget and evict differently.
    pub fn same_content(&self, other: &Recall) -> bool {
        self.same_chunks(other, |x, y| {
            x.present == y.present && x.records == y.records
        })
    }

    /// Whether both have the same sequence and size and their chunks pair
    /// up by key with `eq` true of every pair (chunks both share are
    /// equal without a call).
    fn same_chunks(&self, other: &Recall, eq: impl Fn(&Chunk, &Chunk) -> bool) -> bool {
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
                    && a.chunks
                        .iter()
                        .zip(&b.chunks)
                        .all(|(x, y)| x.0 == y.0 && (Arc::ptr_eq(&x.1, &y.1) || eq(&x.1, &y.1))))
        })
    }

    /// Heap bytes held by chunks not in `seen` (each chunk counted once),
    /// adding those chunks to `seen`: the memory a set of recalls holds
    /// together (recalls derived from one another share chunks).
    pub fn heap_bytes(&self, seen: &mut std::collections::HashSet<*const ()>) -> usize {
        let mut total = 0;
        for s in &self.sections {
            total += s.chunks.capacity() * core::mem::size_of::<(u32, Arc<Chunk>)>()
                + s.recent.capacity() * core::mem::size_of::<(u64, u32)>();
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
            o.record_size = b.record_size();
            let (src, src_len) = match self
                .sections
                .get(i)
                .filter(|s| s.record_size == b.record_size() && s.len > 0)
            {
                Some(s) => (&s.chunks[..], s.len),
                None => (&[][..], 0),
            };
            let src = src.iter().cloned();
            o.recent.clear();
            if c.record_size() == b.record_size() {
                o.merge(src, src_len, StepChanges::new(&b, &c, src_len > 0), stamp);
            } else {
                o.merge(src, src_len, core::iter::empty(), stamp);
            }
            if stamp.is_multiple_of(SWEEP_EVERY) && stamp >= MAX_AGE {
                o.forget_before(stamp - MAX_AGE + 1);
            }
        }
        out.evict(limits);
        // Each section's prefix of the order: this step's departures, then
        // the baseline recall's prefix, less what returned, departed again
        // or was evicted or forgotten (every other entry comes after them).
        for (i, o) in out.sections.iter_mut().enumerate() {
            let old = self
                .sections
                .get(i)
                .filter(|s| s.record_size == o.record_size && s.len > 0)
                .map_or(&[][..], |s| &s.recent[..]);
            let fresh = o.recent.len();
            o.recent.extend_from_slice(old);
            let mut kept = 0;
            for k in 0..o.recent.len() {
                let (t, id) = o.recent[k];
                // Present with the same stamp: not returned, not departed
                // again (that is a fresh entry), not evicted or forgotten.
                let present = o.stamp(id) == Some(t) && (k < fresh || t < stamp);
                if present && kept < RECENT {
                    o.recent[kept] = (t, id);
                    kept += 1;
                }
            }
            o.recent.truncate(kept);
            // A step that sent many away leaves no large buffer behind.
            o.recent.shrink_to(RECENT);
        }
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
        // Which entries go is settled on counts first, then each section's
        // are removed in one pass over its chunks.
        let mut left: Vec<usize> = self.sections.iter().map(|s| s.len).collect();
        let mut gone = vec![false; order.len()];
        for (&(_, _, i), g) in order.iter().zip(&mut gone) {
            if left[i] > limits.max_entities_per_section {
                left[i] -= 1;
                *g = true;
            }
        }
        // Entries left per chunk (each section's chunks in key order), so
        // that a group's bytes go with its last entry.
        let mut in_chunk: Vec<Vec<u32>> = self
            .sections
            .iter()
            .map(|s| s.chunks.iter().map(|c| c.1.present.count_ones()).collect())
            .collect();
        let chunk_of = |sections: &[RecallSection], i: usize, id: u32| {
            sections[i]
                .chunks
                .binary_search_by_key(&(id / CHUNK_IDS), |c| c.0)
                .ok()
        };
        for (&(_, id, i), _) in order.iter().zip(&gone).filter(|(_, &g)| g) {
            if let Some(k) = chunk_of(&self.sections, i, id) {
                in_chunk[i][k] -= 1;
            }
        }
        let mut bytes = self
            .sections
            .iter()
            .zip(&left)
            .zip(&in_chunk)
            .map(|((s, &n), counts)| {
                let groups = counts.iter().filter(|&&c| c > 0).count();
                n.saturating_mul(s.record_size + 4)
                    .saturating_add(groups.saturating_mul(GROUP_BYTES))
            })
            .fold(0, usize::saturating_add);
        for (&(_, id, i), g) in order.iter().zip(&mut gone) {
            if bytes <= limits.max_snapshot_bytes {
                break;
            }
            if !*g {
                *g = true;
                bytes -= self.sections[i].record_size + 4;
                if let Some(k) = chunk_of(&self.sections, i, id) {
                    in_chunk[i][k] -= 1;
                    if in_chunk[i][k] == 0 {
                        bytes -= GROUP_BYTES;
                    }
                }
            }
        }
        let mut ids: Vec<(usize, u32)> = order
            .iter()
            .zip(&gone)
            .filter(|&(_, &g)| g)
            .map(|(&(_, id, i), _)| (i, id))
            .collect();
        ids.sort_unstable();
        for (i, s) in self.sections.iter_mut().enumerate() {
            let from = ids.partition_point(|&(j, _)| j < i);
            let to = ids.partition_point(|&(j, _)| j <= i);
            let Some(mine) = ids.get(from..to).filter(|m| !m.is_empty()) else {
                continue;
            };
            let src = core::mem::take(&mut s.chunks).into_iter();
            s.merge(
                src,
                s.len,
                mine.iter().map(|&(_, id)| Change::Remove(id)),
                0,
            );
        }
    }
}

/// One section's step as changes in id order: the entities of `b` missing
/// from `c` are recalled with their records in `b`; the entities of `c`
/// missing from `b` are forgotten (only those can be recalled: the recall
/// of `b` holds none of `b`'s ids) when the recall of `b` holds any.
struct StepChanges<'a, 's> {
    b: &'a SectionRef<'s>,
    c: &'a SectionRef<'s>,
    i: usize,
    j: usize,
    /// Whether the recall of `b` holds anything to forget.
    forget: bool,
}

impl<'a, 's> StepChanges<'a, 's> {
    fn new(b: &'a SectionRef<'s>, c: &'a SectionRef<'s>, forget: bool) -> Self {
        Self {
            b,
            c,
            i: 0,
            j: 0,
            forget,
        }
    }
}

impl<'a> Iterator for StepChanges<'a, '_> {
    type Item = Change<'a>;

    fn next(&mut self) -> Option<Change<'a>> {
        let (bi, ci) = (self.b.ids(), self.c.ids());
        loop {
            match (bi.get(self.i).copied(), ci.get(self.j).copied()) {
                (Some(x), Some(y)) if x == y => {
                    self.i += 1;
                    self.j += 1;
                }
                (Some(x), y) if y.is_none_or(|y| x < y) => {
                    let record = self.b.record(self.i);
                    self.i += 1;
                    return Some(Change::Insert(x, record));
                }
                (_, Some(y)) => {
                    self.j += 1;
                    if self.forget {
                        return Some(Change::Remove(y));
                    }
                }
                (_, None) => return None,
            }
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

    fn base_of(snapshot: &Snapshot) -> Baseline<'_> {
        Baseline {
            sequence: 0,
            snapshot,
        }
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
        // The same entities and records, one step further from the
        // keyframe: not the same recall (they forget at other steps).
        let later = Recall::keyframe(0)
            .advance(base_of(&s0), &s0, 1, &l)
            .advance(base_of(&s0), &s1, 1, &l);
        assert_eq!(later.len(), r1.len());
        assert_eq!(later.get(0, 1), r1.get(0, 1));
        assert!(!later.same_as(&r1));
        // But an encoder given either writes the same bytes.
        assert!(later.same_content(&r1));
        assert!(!r1.same_content(&r2));
        assert!(r2.same_content(&r2.clone()));
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
        // One entry (2-byte record, 4-byte id) and its group of 32 ids.
        let bytes = Limits {
            max_snapshot_bytes: 6 + GROUP_BYTES,
            ..Limits::default()
        };
        let r3 = r1.advance(base(&b), &c, 2, &bytes);
        assert_eq!(r3.len(), 1);
        assert!(r3.get(0, 7).is_some());
        assert_eq!(r3.counted_bytes(), 6 + GROUP_BYTES);
        // Entries in another group cost that group too: 5 and 6 share one,
        // 40 has its own.
        let d = snap(&s, &[(5, 1), (6, 1), (40, 1)]);
        let r4 = Recall::keyframe(0).advance(base(&d), &c, 1, &Limits::default());
        assert_eq!(r4.counted_bytes(), 3 * 6 + 2 * GROUP_BYTES);
        let two_groups = Limits {
            max_snapshot_bytes: 3 * 6 + 2 * GROUP_BYTES - 1,
            ..Limits::default()
        };
        // Over by one byte: 40 (the larger id) goes, and its group with it.
        let r5 = Recall::keyframe(0).advance(base(&d), &c, 1, &two_groups);
        assert_eq!(r5.len(), 2);
        assert!(r5.get(0, 40).is_none());
        assert_eq!(r5.counted_bytes(), 2 * 6 + GROUP_BYTES);
    }

    /// The recall's rules on plain maps: per section, id → (record, stamp).
    #[derive(Clone, Default)]
    struct Reference {
        generation: u64,
        sections: Vec<std::collections::BTreeMap<u32, (Vec<u8>, u64)>>,
    }

    impl Reference {
        fn advance(&self, b: &Snapshot, c: &Snapshot, limits: &Limits) -> Self {
            let stamp = self.generation + 1;
            let mut out = Reference {
                generation: stamp,
                sections: Vec::new(),
            };
            for (i, (bs, cs)) in b.sections().iter().zip(c.sections()).enumerate() {
                let (b, c) = (bs.as_ref(), cs.as_ref());
                let mut m = self.sections.get(i).cloned().unwrap_or_default();
                for (k, &id) in b.ids().iter().enumerate() {
                    if !c.ids().contains(&id) {
                        m.insert(id, (b.record(k).to_vec(), stamp));
                    }
                }
                for id in c.ids() {
                    m.remove(id);
                }
                if stamp.is_multiple_of(SWEEP_EVERY) && stamp >= MAX_AGE {
                    m.retain(|_, e| e.1 > stamp - MAX_AGE);
                }
                out.sections.push(m);
            }
            let sizes: Vec<usize> = b
                .sections()
                .iter()
                .map(|s| s.as_ref().record_size())
                .collect();
            let mut order: Vec<(u64, u32, usize)> = Vec::new();
            for (i, m) in out.sections.iter().enumerate() {
                order.extend(m.iter().map(|(&id, e)| (e.1, id, i)));
            }
            order.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
            for &(_, id, i) in &order {
                if out.sections[i].len() > limits.max_entities_per_section {
                    out.sections[i].remove(&id);
                }
            }
            let bytes = |r: &Reference| -> usize {
                r.sections
                    .iter()
                    .zip(&sizes)
                    .map(|(m, rs)| {
                        let groups: std::collections::BTreeSet<u32> =
                            m.keys().map(|id| id / 32).collect();
                        m.len() * (rs + 4) + groups.len() * 128
                    })
                    .sum()
            };
            for &(_, id, i) in &order {
                if bytes(&out) <= limits.max_snapshot_bytes {
                    break;
                }
                out.sections[i].remove(&id);
            }
            out
        }

        /// `r` holds exactly this reference's entries: as many, each
        /// with its record.
        fn check(&self, r: &Recall) {
            let len: usize = self.sections.iter().map(|m| m.len()).sum();
            assert_eq!(r.len(), len);
            let mut scratch = Vec::new();
            for (i, m) in self.sections.iter().enumerate() {
                for (&id, e) in m {
                    assert_eq!(r.get(i, id), Some(&e.0[..]), "{i} {id}");
                }
                // Ranks: the latest departure first, then the smaller id.
                let mut order: Vec<(u64, u32)> = m.iter().map(|(&id, e)| (e.1, id)).collect();
                order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                for (k, &(_, id)) in order.iter().enumerate() {
                    assert_eq!(r.rank_of(i, id), Some(k as u32), "{i} {id}");
                }
                let ranks: Vec<u32> = (0..order.len() as u32).filter(|k| k % 3 != 1).collect();
                let mut ids = Vec::new();
                assert!(r.ids_at_ranks(i, &ranks, &mut scratch, &mut ids));
                let want: Vec<u32> = ranks.iter().map(|&k| order[k as usize].1).collect();
                assert_eq!(ids, want, "{i}");
                // The first few ranks, which the recall's prefix answers.
                let few: Vec<u32> = (0..order.len().min(6) as u32).collect();
                ids.clear();
                assert!(r.ids_at_ranks(i, &few, &mut scratch, &mut ids));
                let want: Vec<u32> = few.iter().map(|&k| order[k as usize].1).collect();
                assert_eq!(ids, want, "{i}");
                ids.clear();
                assert!(!r.ids_at_ranks(i, &[order.len() as u32], &mut scratch, &mut ids));
            }
        }
    }

    /// A xorshift generator.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Chains of `steps` recall steps against the rules on plain maps, one
    /// per round, each round under `limits` and each step to a snapshot
    /// from `snapshot` (both given the round and the generator). The
    /// baseline is mostly the last snapshot, sometimes an older one whose
    /// recall shares chunks with later ones. Every recall holds exactly
    /// the reference's entries within the byte limit, and no step changes
    /// a recall it started from.
    fn check_chains(
        rounds: usize,
        steps: u16,
        next: &mut impl FnMut() -> u64,
        mut limits: impl FnMut(usize, &mut dyn FnMut() -> u64) -> Limits,
        mut snapshot: impl FnMut(usize, &mut dyn FnMut() -> u64) -> Snapshot,
        empty: &Snapshot,
    ) {
        for round in 0..rounds {
            let limits = limits(round, next);
            let mut chain: Vec<(Snapshot, Recall, Reference)> =
                vec![(empty.clone(), Recall::keyframe(0), Reference::default())];
            for step in 1..steps {
                let snap = snapshot(round, next);
                let from = if next().is_multiple_of(4) {
                    (next() as usize) % chain.len()
                } else {
                    chain.len() - 1
                };
                let (b, r, m) = &chain[from];
                let base = Baseline {
                    sequence: step - 1,
                    snapshot: b,
                };
                let r2 = r.advance(base, &snap, step, &limits);
                let m2 = m.advance(b, &snap, &limits);
                m2.check(&r2);
                assert!(
                    r2.counted_bytes() <= limits.max_snapshot_bytes,
                    "round {round}"
                );
                chain.push((snap, r2, m2));
            }
            for (_, r, m) in &chain {
                m.check(r);
            }
        }
    }

    #[test]
    fn steps_match_the_rules_on_plain_maps() {
        let schema = Schema::builder()
            .entity("a")
            .field("x", Primitive::U8, 2)
            .entity("b")
            .field("y", Primitive::U8, 3)
            .build()
            .unwrap();
        let empty = Snapshot::new(&schema);
        check_chains(
            20,
            120,
            &mut xorshift(0x9e37_79b9_7f4a_7c15),
            |_, next| Limits {
                max_entities_per_section: 5 + (next() % 200) as usize,
                max_snapshot_bytes: 20 + (next() % 1500) as usize,
                ..Limits::default()
            },
            |_, next| {
                let mut snap = empty.clone();
                let density = next() % 100;
                for section in 0..2 {
                    let rs = 2 + section;
                    for id in 0..300 {
                        if next() % 100 < density {
                            let v = next() as u8;
                            snap.section_mut(section)
                                .unwrap()
                                .insert(id, &vec![v; rs])
                                .unwrap();
                        }
                    }
                }
                snap
            },
            &empty,
        );
    }

    /// As [`steps_match_the_rules_on_plain_maps`], with three sections
    /// that are often empty, sparse ids (up to 3,000: many groups), and
    /// limits small enough that groups decide what is evicted.
    #[test]
    fn sparse_steps_match_the_rules_on_plain_maps() {
        let schema = Schema::builder()
            .entity("a")
            .field("x", Primitive::U8, 2)
            .entity("b")
            .field("y", Primitive::U8, 3)
            .entity("c")
            .field("z", Primitive::U8, 1)
            .build()
            .unwrap();
        let empty = Snapshot::new(&schema);
        check_chains(
            300,
            60,
            &mut xorshift(0x1234_5678_9abc_def1),
            |_, next| Limits {
                max_entities_per_section: 1 + (next() % 60) as usize,
                max_snapshot_bytes: (next() % 1200) as usize,
                ..Limits::default()
            },
            |round, next| {
                let ids = [40u64, 300, 3000][round % 3];
                let mut snap = empty.clone();
                let density = next() % 30;
                for section in 0..3 {
                    if next().is_multiple_of(3) {
                        continue;
                    }
                    let rs = [2, 3, 1][section];
                    for _ in 0..density {
                        let id = (next() % ids) as u32;
                        let v = next() as u8;
                        // A repeated id is refused: one record per id.
                        let _ = snap.section_mut(section).unwrap().insert(id, &vec![v; rs]);
                    }
                }
                snap
            },
            &empty,
        );
    }
}
