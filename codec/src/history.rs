//! What a snapshot changed against its own baseline, kept beside it by both
//! ends so that a later packet coded against it can condition its model
//! contexts on it (FORMAT.md, "Model block", "History").
//!
//! Both ends derive a [`History`] from the same two snapshots (the one coded
//! and its baseline, each as the pipeline codes it: code form for quantised
//! schemas), so it never travels: a packet's contexts may use its
//! baseline's history because the receiver decoded that baseline against an
//! older snapshot it acknowledged.

use crate::pipeline::align::Alignment;
use crate::pipeline::values::{self, Element};
use crate::schema::Schema;
use crate::snapshot::{SectionRef, Snapshot};

/// Per entity of a snapshot (sections in schema order, entities in id
/// order): whether it changed against the snapshot's baseline (spawned
/// entities count as changed), and per element the bit-length class and
/// sign of its last delta. Its size is at most one byte per entity and one
/// per element of each record, so never above the snapshot's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    sections: Vec<SectionHistory>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SectionHistory {
    /// Elements per entity.
    elements: usize,
    /// Per entity: 1 changed (or spawned), 0 unchanged.
    changed: Vec<u8>,
    /// Per entity, `elements` bytes: [`History::element`]'s byte.
    deltas: Vec<u8>,
}

impl History {
    /// The history of `current` against `baseline` (both in the form the
    /// pipeline codes), given each section's elements.
    pub(crate) fn between<'a, 'b>(
        elements: &[Vec<Element>],
        current: impl Iterator<Item = SectionRef<'a>>,
        baseline: impl Iterator<Item = SectionRef<'b>>,
    ) -> Self {
        let mut out = Self::default();
        out.compute(elements, current, baseline);
        out
    }

    /// The history of `snapshot` against `baseline` under `schema`, the
    /// same the encoder keeps for a packet of `snapshot` against
    /// `baseline` ([`Encoder::history`](crate::Encoder::history)): for a
    /// replay that does not encode every packet. `None` when either does
    /// not fit the schema (or holds values a quantised field refuses).
    pub fn of(schema: &Schema, snapshot: &Snapshot, baseline: &Snapshot) -> Option<Self> {
        snapshot.check(schema).ok()?;
        baseline.check(schema).ok()?;
        let elements: Vec<_> = schema.sections().iter().map(values::elements).collect();
        fn refs(s: &Snapshot) -> impl Iterator<Item = SectionRef<'_>> {
            s.sections().iter().map(|x| x.as_ref())
        }
        if !schema.is_quantized() {
            return Some(Self::between(&elements, refs(snapshot), refs(baseline)));
        }
        let (mut a, mut b) = (Snapshot::default(), Snapshot::default());
        crate::quant::snapshot_to_codes(schema, snapshot, &mut a).ok()?;
        crate::quant::snapshot_to_codes(schema, baseline, &mut b).ok()?;
        Some(Self::between(&elements, refs(&a), refs(&b)))
    }

    /// [`History::between`] into `self`, reusing its buffers.
    pub(crate) fn compute<'a, 'b>(
        &mut self,
        elements: &[Vec<Element>],
        current: impl Iterator<Item = SectionRef<'a>>,
        baseline: impl Iterator<Item = SectionRef<'b>>,
    ) {
        self.sections.resize_with(elements.len(), Default::default);
        for (((h, els), cur), base) in self
            .sections
            .iter_mut()
            .zip(elements)
            .zip(current)
            .zip(baseline)
        {
            h.compute(els, cur, base);
        }
    }

    /// [`History::compute`] where the encoder already aligned a section with
    /// its baseline (`Some`: the same two sections, by entity id): the
    /// alignment's changed and spawned entities are the history's changed
    /// ones, so only their rows are looked at.
    pub(crate) fn compute_aligned<'a, 'b, 'c>(
        &mut self,
        elements: &[Vec<Element>],
        sections: impl Iterator<Item = (SectionRef<'a>, SectionRef<'b>, Option<&'c Alignment>)>,
    ) {
        self.sections.resize_with(elements.len(), Default::default);
        for ((h, els), (cur, base, align)) in self.sections.iter_mut().zip(elements).zip(sections) {
            match align {
                Some(a) => h.compute_from_alignment(els, cur, base, a),
                None => h.compute(els, cur, base),
            }
        }
    }

    /// Whether entity `index` (in id order) of section `section` changed
    /// against its baseline; `None` past the snapshot.
    #[inline]
    pub fn changed(&self, section: usize, index: usize) -> Option<bool> {
        let s = self.sections.get(section)?;
        s.changed.get(index).map(|&c| c != 0)
    }

    /// The last delta of element `element` of entity `index` of section
    /// `section`: 0 when it did not change (or the entity spawned), else its
    /// bit-length class (1..=64, of the zigzagged difference of the
    /// element's bytes as an integer) with bit 7 set for a negative
    /// difference. `None` past the snapshot or the record.
    #[inline]
    pub fn element(&self, section: usize, index: usize, element: usize) -> Option<u8> {
        let s = self.sections.get(section)?;
        if element >= s.elements {
            return None;
        }
        s.deltas
            .get(index.checked_mul(s.elements)? + element)
            .copied()
    }

    /// Entity `index` of section `section`: its elements' bytes
    /// ([`History::element`]), empty past the snapshot.
    #[inline]
    pub(crate) fn row(&self, section: usize, index: usize) -> &[u8] {
        self.sections
            .get(section)
            .and_then(|s| {
                let start = index.checked_mul(s.elements)?;
                s.deltas.get(start..start.checked_add(s.elements)?)
            })
            .unwrap_or(&[])
    }

    /// Entities of section `section` the history covers.
    pub fn entities(&self, section: usize) -> usize {
        self.sections.get(section).map_or(0, |s| s.changed.len())
    }

    /// Bytes the history holds on the heap (its buffers' capacity).
    pub fn heap_bytes(&self) -> usize {
        self.sections.capacity() * core::mem::size_of::<SectionHistory>()
            + self
                .sections
                .iter()
                .map(|s| s.changed.capacity() + s.deltas.capacity())
                .sum::<usize>()
    }
}

impl SectionHistory {
    fn compute(&mut self, elements: &[Element], cur: SectionRef<'_>, base: SectionRef<'_>) {
        self.elements = elements.len();
        self.changed.clear();
        self.deltas.clear();
        self.changed.reserve_exact(cur.len());
        self.deltas.reserve_exact(cur.len() * elements.len());
        let size = cur.record_size();
        let (bids, brec) = (base.ids(), base.records());
        let mut j = 0usize;
        for (i, &id) in cur.ids().iter().enumerate() {
            while bids.get(j).is_some_and(|&b| b < id) {
                j += 1;
            }
            let now = cur.records().get(i * size..(i + 1) * size);
            let then = match bids.get(j) {
                Some(&b) if b == id && base.record_size() == size => {
                    brec.get(j * size..(j + 1) * size)
                }
                _ => None,
            };
            match (now, then) {
                (Some(now), Some(then)) if now == then => {
                    self.changed.push(0);
                    self.deltas.extend(core::iter::repeat_n(0, elements.len()));
                }
                (Some(now), Some(then)) => {
                    self.changed.push(1);
                    let start = self.deltas.len();
                    self.deltas.resize(start + elements.len(), 0);
                    for (d, e) in self.deltas[start..].iter_mut().zip(elements) {
                        *d = delta_byte(e, now, then);
                    }
                }
                _ => {
                    self.changed.push(1);
                    self.deltas.extend(core::iter::repeat_n(0, elements.len()));
                }
            }
        }
    }
}

impl SectionHistory {
    /// [`SectionHistory::compute`] from `a`, the alignment of `cur` with
    /// `base`.
    fn compute_from_alignment(
        &mut self,
        elements: &[Element],
        cur: SectionRef<'_>,
        base: SectionRef<'_>,
        a: &Alignment,
    ) {
        let n = elements.len();
        self.elements = n;
        self.changed.clear();
        self.changed.resize(cur.len(), 0);
        self.deltas.clear();
        self.deltas.resize(cur.len() * n, 0);
        for &j in &a.spawned {
            if let Some(c) = self.changed.get_mut(j as usize) {
                *c = 1;
            }
        }
        let size = cur.record_size();
        for &(j, i) in &a.changed_rows {
            let (j, i) = (j as usize, i as usize);
            if let Some(c) = self.changed.get_mut(j) {
                *c = 1;
            }
            let now = cur.records().get(j * size..(j + 1) * size);
            let then = base.records().get(i * size..(i + 1) * size);
            let row = self.deltas.get_mut(j * n..(j + 1) * n);
            if let (Some(now), Some(then), Some(row)) = (now, then, row) {
                for (d, e) in row.iter_mut().zip(elements) {
                    *d = delta_byte(e, now, then);
                }
            }
        }
    }
}

/// The history byte of element `e` between two records: 0 when equal, else
/// the class of the zigzagged wrapping difference with the sign in bit 7.
#[inline]
fn delta_byte(e: &Element, now: &[u8], then: &[u8]) -> u8 {
    let w = usize::from(e.width);
    let at = usize::from(e.offset);
    let shift = 64 - 8 * w as u32;
    // The difference as a signed integer of the element's width (the shift
    // drops the bytes past it).
    let d = ((read_le(now, at, w).wrapping_sub(read_le(then, at, w)) << shift) as i64) >> shift;
    // No branch for an unchanged element: its class and sign are 0.
    let zigzag = ((d << 1) ^ (d >> 63)) as u64;
    let class = (64 - zigzag.leading_zeros()) as u8;
    class | (u8::from(d < 0) << 7)
}

/// The `w` (1..=8) little-endian bytes of `r` at `at` in the low bytes of
/// an integer, 0 past the record; bytes above them are whatever follows in
/// `r` (the caller shifts them out). Eight bytes at once where the record
/// has them: a copy of `w` bytes would be a call to `memcpy` per element.
#[inline(always)]
fn read_le(r: &[u8], at: usize, w: usize) -> u64 {
    if let Some(b) = r.get(at..at + 8).and_then(|b| <[u8; 8]>::try_from(b).ok()) {
        return u64::from_le_bytes(b);
    }
    // Near the record's end: the eight bytes ending with the element.
    let end = at + w;
    let tail = end.checked_sub(8).and_then(|s| r.get(s..end));
    if let Some(b) = tail.and_then(|b| <[u8; 8]>::try_from(b).ok()) {
        return u64::from_le_bytes(b) >> (64 - 8 * w as u32);
    }
    let mut b = [0u8; 8];
    if let Some(src) = r.get(at..at + w) {
        b[..w].copy_from_slice(src);
    }
    u64::from_le_bytes(b)
}

/// The baseline history of each kept entity of section `section` of a
/// packet (the baseline's `base_len` entities minus `removed`, ascending),
/// into `out`: 0 unknown (no history, or an entity it does not cover), 1
/// unchanged, 2 changed at the baseline.
pub(crate) fn kept_states(
    history: Option<&History>,
    section: usize,
    base_len: usize,
    removed: &[u32],
    out: &mut Vec<u8>,
) {
    out.clear();
    let Some(h) = history else {
        out.resize(base_len.saturating_sub(removed.len()), 0);
        return;
    };
    let mut gone = removed.iter().peekable();
    for b in 0..base_len {
        if gone.next_if(|&&r| r as usize == b).is_some() {
            continue;
        }
        out.push(match h.changed(section, b) {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Primitive, Schema};
    use crate::snapshot::Section;

    #[test]
    fn history_marks_changed_spawned_and_element_deltas() {
        let schema = Schema::builder()
            .entity("e")
            .field("a", Primitive::I16, 1)
            .field("b", Primitive::U8, 2)
            .build()
            .unwrap();
        let elements: Vec<_> = schema
            .sections()
            .iter()
            .map(crate::pipeline::values::elements)
            .collect();
        let mut base = Section::new(4);
        base.insert(1, &[5, 0, 1, 2]).unwrap();
        base.insert(2, &[5, 0, 1, 2]).unwrap();
        base.insert(3, &[0, 0, 0, 0]).unwrap();
        let mut cur = Section::new(4);
        cur.insert(1, &[5, 0, 1, 2]).unwrap();
        // -3 in the i16, +200 wrapping in the first byte.
        cur.insert(2, &[2, 0, 201, 2]).unwrap();
        cur.insert(7, &[9, 9, 9, 9]).unwrap();
        let h = History::between(
            &elements,
            core::iter::once(cur.as_ref()),
            core::iter::once(base.as_ref()),
        );
        assert_eq!(h.entities(0), 3);
        assert_eq!(
            (0..4).map(|i| h.changed(0, i)).collect::<Vec<_>>(),
            [Some(false), Some(true), Some(true), None]
        );
        // -3 zigzags to 5 (class 3), negative; 200 as i8 is -56: 111 (7).
        assert_eq!(h.element(0, 1, 0), Some(3 | 0x80));
        assert_eq!(h.element(0, 1, 1), Some(7 | 0x80));
        assert_eq!(h.element(0, 1, 2), Some(0));
        assert_eq!(h.element(0, 0, 0), Some(0));
        assert_eq!(h.element(0, 2, 0), Some(0));
        assert_eq!(h.element(0, 1, 3), None);
        assert_eq!(h.changed(1, 0), None);
        assert!(h.heap_bytes() >= 3 + 9);
    }
}
