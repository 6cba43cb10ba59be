//! Snapshots: per entity type (section), entities sorted by id, each with one
//! record of the type's size.

use crate::error::SnapshotError;
use crate::history::History;
use crate::recall::Recall;
use crate::schema::Schema;

/// Entities of one type: strictly ascending ids and their records, stored
/// contiguously (`ids.len() * record_size` bytes).
#[derive(Debug, PartialEq, Eq, Default)]
pub struct Section {
    ids: Vec<u32>,
    records: Vec<u8>,
    record_size: usize,
}

/// By hand for `clone_from`, which keeps the target's allocations (a
/// server copies a world into per-client scratch every tick).
impl Clone for Section {
    fn clone(&self) -> Self {
        Self {
            ids: self.ids.clone(),
            records: self.records.clone(),
            record_size: self.record_size,
        }
    }

    fn clone_from(&mut self, src: &Self) {
        self.ids.clone_from(&src.ids);
        self.records.clone_from(&src.records);
        self.record_size = src.record_size;
    }
}

impl Section {
    /// An empty section for records of `record_size` bytes.
    pub fn new(record_size: usize) -> Self {
        Self {
            ids: Vec::new(),
            records: Vec::new(),
            record_size,
        }
    }

    /// Takes ids (strictly ascending) and their records.
    pub fn from_parts(
        ids: Vec<u32>,
        records: Vec<u8>,
        record_size: usize,
    ) -> Result<Self, SnapshotError> {
        SectionRef::new(&ids, &records, record_size)?;
        Ok(Self {
            ids,
            records,
            record_size,
        })
    }

    /// Copies ids and `#[repr(C)]` records (one `memcpy`, no per-field work).
    /// Records are taken as little-endian bytes, so this is for
    /// little-endian targets, as are all mainstream game platforms.
    pub fn from_pod<T: bytemuck::Pod>(ids: &[u32], records: &[T]) -> Result<Self, SnapshotError> {
        let r = SectionRef::from_pod(ids, records)?;
        Ok(Self {
            ids: ids.to_vec(),
            records: r.records.to_vec(),
            record_size: r.record_size,
        })
    }

    /// Inserts or replaces the record of entity `id`.
    pub fn insert(&mut self, id: u32, record: &[u8]) -> Result<(), SnapshotError> {
        if record.len() != self.record_size {
            return Err(SnapshotError::RecordSize {
                expected: self.record_size,
                actual: record.len(),
            });
        }
        let rs = self.record_size;
        match self.ids.binary_search(&id) {
            Ok(i) => self.records[i * rs..(i + 1) * rs].copy_from_slice(record),
            Err(i) => {
                self.ids.insert(i, id);
                self.records.splice(i * rs..i * rs, record.iter().copied());
            }
        }
        Ok(())
    }

    /// Removes entity `id`; returns whether it was present.
    pub fn remove(&mut self, id: u32) -> bool {
        match self.ids.binary_search(&id) {
            Ok(i) => {
                self.ids.remove(i);
                let rs = self.record_size;
                self.records.drain(i * rs..(i + 1) * rs);
                true
            }
            Err(_) => false,
        }
    }

    /// The record of entity `id`.
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        let i = self.ids.binary_search(&id).ok()?;
        self.records
            .get(i * self.record_size..(i + 1) * self.record_size)
    }

    /// Entity ids, ascending.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// All records, in id order.
    pub fn records(&self) -> &[u8] {
        &self.records
    }

    /// Records viewed as `T` (fails if sizes or alignment disagree).
    pub fn records_as<T: bytemuck::Pod>(&self) -> Option<&[T]> {
        bytemuck::try_cast_slice(&self.records).ok()
    }

    /// Record size in bytes.
    pub fn record_size(&self) -> usize {
        self.record_size
    }

    /// Number of entities.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the section has no entities.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Iterates `(id, record)` in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.ids
            .iter()
            .copied()
            .zip(self.records.chunks_exact(self.record_size.max(1)))
    }

    /// A borrowed view.
    pub fn as_ref(&self) -> SectionRef<'_> {
        SectionRef {
            ids: &self.ids,
            records: &self.records,
            record_size: self.record_size,
        }
    }

    /// Keeps only the entities whose id is in `keep` (ascending).
    pub fn retain_ids(&mut self, keep: &[u32]) {
        let rs = self.record_size;
        let mut w = 0;
        let mut k = keep.iter().peekable();
        for r in 0..self.ids.len() {
            let id = self.ids[r];
            while k.next_if(|&&x| x < id).is_some() {}
            if k.peek() == Some(&&id) {
                if w != r {
                    self.ids[w] = id;
                    self.records.copy_within(r * rs..(r + 1) * rs, w * rs);
                }
                w += 1;
            }
        }
        self.ids.truncate(w);
        self.records.truncate(w * rs);
    }

    /// Empties the section and makes it hold records of `record_size`
    /// bytes, keeping its allocations.
    pub fn clear_for(&mut self, record_size: usize) {
        self.ids.clear();
        self.records.clear();
        self.record_size = record_size;
    }

    /// The ids and records, for edits in place (filtering or merging
    /// sections without copying). The caller keeps the section's
    /// invariants: ids strictly ascending and `records.len() ==
    /// ids.len() * record_size()`. Breaking them is a logic error: later
    /// calls on this section may give wrong results or panic (never
    /// undefined behaviour). [`Section::from_parts`] checks instead.
    pub fn parts_mut(&mut self) -> (&mut Vec<u32>, &mut Vec<u8>) {
        (&mut self.ids, &mut self.records)
    }
}

/// A borrowed section: what the encoder reads. Build one from your own
/// arrays with [`SectionRef::from_pod`] to encode without copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionRef<'a> {
    ids: &'a [u32],
    records: &'a [u8],
    record_size: usize,
}

impl<'a> SectionRef<'a> {
    /// Checks ids are strictly ascending and records have `ids.len() * record_size` bytes.
    pub fn new(
        ids: &'a [u32],
        records: &'a [u8],
        record_size: usize,
    ) -> Result<Self, SnapshotError> {
        if let Some(i) = ids.windows(2).position(|w| w[0] >= w[1]) {
            return Err(SnapshotError::UnsortedIds {
                index: i + 1,
                id: ids[i + 1],
            });
        }
        let expected = ids.len().saturating_mul(record_size);
        if records.len() != expected {
            return Err(SnapshotError::RecordBytes {
                expected,
                actual: records.len(),
            });
        }
        Ok(Self {
            ids,
            records,
            record_size,
        })
    }

    /// Views `#[repr(C)]` records as bytes without copying.
    pub fn from_pod<T: bytemuck::Pod>(
        ids: &'a [u32],
        records: &'a [T],
    ) -> Result<Self, SnapshotError> {
        Self::new(
            ids,
            bytemuck::cast_slice(records),
            core::mem::size_of::<T>(),
        )
    }

    pub(crate) fn empty(record_size: usize) -> Self {
        Self {
            ids: &[],
            records: &[],
            record_size,
        }
    }

    /// Entity ids, ascending.
    pub fn ids(&self) -> &'a [u32] {
        self.ids
    }

    /// All records, in id order.
    pub fn records(&self) -> &'a [u8] {
        self.records
    }

    /// Record size in bytes.
    pub fn record_size(&self) -> usize {
        self.record_size
    }

    /// Number of entities.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the section has no entities.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    #[inline]
    pub(crate) fn record(&self, i: usize) -> &'a [u8] {
        &self.records[i * self.record_size..(i + 1) * self.record_size]
    }
}

/// The digest of [`Snapshot::digest`] over borrowed sections.
pub(crate) fn digest_sections<'a>(
    sections: impl Iterator<Item = SectionRef<'a>>,
    seed: u64,
) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::with_seed(seed);
    for s in sections {
        h.update(&(s.ids.len() as u32).to_le_bytes());
        if cfg!(target_endian = "little") {
            h.update(bytemuck::cast_slice(s.ids));
        } else {
            for id in s.ids {
                h.update(&id.to_le_bytes());
            }
        }
        h.update(s.records);
    }
    h.digest()
}

/// The snapshot a delta is taken against, and its sequence.
#[derive(Debug, Clone, Copy)]
pub struct Baseline<'a> {
    /// Sequence the baseline was sent with.
    pub sequence: u16,
    /// The baseline state, as the receiver holds it.
    pub snapshot: &'a Snapshot,
}

/// What a packet is coded against: nothing (a keyframe), a baseline the
/// receiver holds, or a baseline and an older prior from which fields coded
/// with [`DeltaOp::Predict`](crate::DeltaOp::Predict) are predicted by
/// extrapolating the motion from prior to baseline, scaled by the two
/// distances (FORMAT.md 4.6). The encoder and the decoder take the same one.
///
/// Built from [`Reference::KEYFRAME`], [`Reference::delta`] or a conversion
/// (`None`, an `Option<Baseline>` and a `Baseline` convert into it), then the
/// `with_*` methods; its fields are public to read. It is
/// `#[non_exhaustive]`: a field added later does not break callers.
///
/// ```
/// # use tickpack::{Baseline, Reference, Snapshot};
/// let (b, p) = (Snapshot::default(), Snapshot::default());
/// let r = Reference::delta(Baseline { sequence: 7, snapshot: &b })
///     .with_prior(Baseline { sequence: 5, snapshot: &p });
/// assert_eq!(r.prior.map(|p| p.sequence), Some(5));
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Reference<'a> {
    /// The baseline, or `None` for a keyframe.
    pub baseline: Option<Baseline<'a>>,
    /// The prior (only with a baseline; ignored by schemas without
    /// `Predict` fields).
    pub prior: Option<Baseline<'a>>,
    /// The baseline's [`Recall`]: spawned entities it holds are coded
    /// against their recalled records (only with a baseline). The decoder
    /// needs it for packets coded with it
    /// ([`DecodeError::MissingRecall`](crate::DecodeError::MissingRecall)).
    pub recall: Option<&'a Recall>,
    /// The baseline's [`History`] (only with a baseline): what it changed
    /// against its own baseline, which model tables trained with history
    /// contexts condition on. The decoder must be given the same one the
    /// encoder was (`None` on both ends codes without it).
    pub history: Option<&'a History>,
}

impl<'a> Reference<'a> {
    /// A keyframe: no baseline.
    pub const KEYFRAME: Reference<'static> = Reference {
        baseline: None,
        prior: None,
        recall: None,
        history: None,
    };

    /// A delta against `baseline`.
    pub fn delta(baseline: Baseline<'a>) -> Self {
        Self::from(Some(baseline))
    }

    /// A delta against `baseline`, predicting from `prior` too.
    pub fn predicted(baseline: Baseline<'a>, prior: Baseline<'a>) -> Self {
        Self::delta(baseline).with_prior(prior)
    }

    /// The same reference with `prior` (a `Baseline` or an `Option`).
    pub fn with_prior(self, prior: impl Into<Option<Baseline<'a>>>) -> Self {
        Self {
            prior: prior.into(),
            ..self
        }
    }

    /// The same reference with the baseline's recall (a `&Recall` or an
    /// `Option`).
    pub fn with_recall(self, recall: impl Into<Option<&'a Recall>>) -> Self {
        Self {
            recall: recall.into(),
            ..self
        }
    }

    /// The same reference with the baseline's history (a `&History` or an
    /// `Option`).
    pub fn with_history(self, history: impl Into<Option<&'a History>>) -> Self {
        Self {
            history: history.into(),
            ..self
        }
    }
}

impl<'a> From<Option<Baseline<'a>>> for Reference<'a> {
    fn from(baseline: Option<Baseline<'a>>) -> Self {
        Self {
            baseline,
            prior: None,
            recall: None,
            history: None,
        }
    }
}

impl<'a> From<Baseline<'a>> for Reference<'a> {
    fn from(baseline: Baseline<'a>) -> Self {
        Self::delta(baseline)
    }
}

/// The state of one tick: one [`Section`] per entity type of a schema.
#[derive(Debug, PartialEq, Eq, Default)]
pub struct Snapshot {
    sections: Vec<Section>,
}

/// By hand for `clone_from`, which keeps the target's allocations.
impl Clone for Snapshot {
    fn clone(&self) -> Self {
        Self {
            sections: self.sections.clone(),
        }
    }

    fn clone_from(&mut self, src: &Self) {
        self.sections.clone_from(&src.sections);
    }
}

impl Snapshot {
    /// An empty snapshot with one empty section per entity type.
    pub fn new(schema: &Schema) -> Self {
        Self {
            sections: schema
                .sections()
                .iter()
                .map(|e| Section::new(e.record_size()))
                .collect(),
        }
    }

    /// Builds a snapshot from sections, checking them against the schema.
    pub fn from_sections(schema: &Schema, sections: Vec<Section>) -> Result<Self, SnapshotError> {
        let s = Self { sections };
        s.check(schema)?;
        Ok(s)
    }

    /// Checks section count and record sizes against `schema`.
    pub fn check(&self, schema: &Schema) -> Result<(), SnapshotError> {
        if self.sections.len() != schema.sections().len() {
            return Err(SnapshotError::SectionCount {
                expected: schema.sections().len(),
                actual: self.sections.len(),
            });
        }
        for (s, e) in self.sections.iter().zip(schema.sections()) {
            if s.record_size != e.record_size() {
                return Err(SnapshotError::RecordSize {
                    expected: e.record_size(),
                    actual: s.record_size,
                });
            }
        }
        Ok(())
    }

    /// Sections in schema order.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// One section, mutably.
    pub fn section_mut(&mut self, index: usize) -> Option<&mut Section> {
        self.sections.get_mut(index)
    }

    /// Total entities over all sections.
    pub fn entity_count(&self) -> usize {
        self.sections.iter().map(Section::len).sum()
    }

    /// Record bytes over all sections (what a naive sender would send,
    /// without ids).
    pub fn raw_len(&self) -> usize {
        self.sections.iter().map(|s| s.records.len()).sum()
    }

    /// A 64-bit xxh3 digest of every section's ids and records, seeded.
    /// Packets carry its low 16 bits (see [`PacketHeader::checksum_seed`](crate::PacketHeader::checksum_seed))
    /// so a receiver detects a wrong reconstruction.
    pub fn digest(&self, seed: u64) -> u64 {
        digest_sections(self.sections.iter().map(Section::as_ref), seed)
    }

    /// The 16-bit checksum packets carry: the low bits of [`Snapshot::digest`].
    pub fn checksum(&self, seed: u64) -> u16 {
        self.digest(seed) as u16
    }

    pub(crate) fn reset(&mut self, schema: &Schema) {
        self.sections
            .resize_with(schema.sections().len(), Section::default);
        for (s, e) in self.sections.iter_mut().zip(schema.sections()) {
            s.clear_for(e.record_size());
        }
    }

    /// Empties every section, keeping `other`'s section count and record
    /// sizes (and this snapshot's allocations).
    pub fn reset_like(&mut self, other: &Snapshot) {
        self.sections
            .resize_with(other.sections.len(), Section::default);
        for (s, o) in self.sections.iter_mut().zip(&other.sections) {
            s.clear_for(o.record_size);
        }
    }

    /// Sections in schema order, for edits in place; [`Snapshot::check`]
    /// tells whether they still fit a schema.
    pub fn sections_mut(&mut self) -> &mut [Section] {
        &mut self.sections
    }

    /// Makes section `i` a copy of `src` (adding empty sections before it
    /// as needed), reusing this snapshot's allocations.
    pub(crate) fn set_section(&mut self, i: usize, src: &SectionRef<'_>) {
        if self.sections.len() <= i {
            self.sections.resize_with(i + 1, Section::default);
        }
        let s = &mut self.sections[i];
        s.clear_for(src.record_size());
        s.ids.extend_from_slice(src.ids());
        s.records.extend_from_slice(src.records());
    }

    /// Keeps the first `n` sections.
    pub(crate) fn truncate_sections(&mut self, n: usize) {
        self.sections.truncate(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_keep_order() {
        let mut s = Section::new(2);
        s.insert(5, &[5, 5]).unwrap();
        s.insert(1, &[1, 1]).unwrap();
        s.insert(3, &[3, 3]).unwrap();
        s.insert(3, &[4, 4]).unwrap();
        assert_eq!(s.ids(), &[1, 3, 5]);
        assert_eq!(s.records(), &[1, 1, 4, 4, 5, 5]);
        assert!(s.remove(3));
        assert!(!s.remove(3));
        assert_eq!(s.get(5), Some(&[5u8, 5][..]));
        assert_eq!(
            s.insert(1, &[1]),
            Err(SnapshotError::RecordSize {
                expected: 2,
                actual: 1
            })
        );
    }

    #[test]
    fn from_parts_validates() {
        assert_eq!(
            Section::from_parts(vec![1, 1], vec![0; 2], 1),
            Err(SnapshotError::UnsortedIds { index: 1, id: 1 })
        );
        assert_eq!(
            Section::from_parts(vec![1, 2], vec![0; 3], 1),
            Err(SnapshotError::RecordBytes {
                expected: 2,
                actual: 3
            })
        );
    }
}
