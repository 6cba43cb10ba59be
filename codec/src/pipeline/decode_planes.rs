//! The records of a section coded as byte planes ([`super::planes`]), from
//! its rows' deltas (transposed back from the planes): the kept entities
//! with the changed rows applied to their baseline records, and the
//! spawned records, each against the one before it.

#![forbid(unsafe_code)]

use super::planes;
use super::record_apply::ApplyPlan;
use super::SectionTokens;
use crate::error::DecodeError;
use crate::schema::Span;
use crate::snapshot::SectionRef;

/// Each section's [`ApplyPlan`], built the first time the section is
/// seen with its spans.
#[derive(Debug, Default)]
pub(super) struct Plans {
    by_section: Vec<Option<Built>>,
}

/// The spans and record size a plan was built for, and the plan.
type Built = (Vec<Span>, usize, Option<ApplyPlan>);

impl Plans {
    /// The plan of section `section`, records of `rs` bytes with `spans`.
    pub(super) fn get(&mut self, section: usize, spans: &[Span], rs: usize) -> Option<&ApplyPlan> {
        if self.by_section.len() <= section {
            self.by_section.resize_with(section + 1, || None);
        }
        let entry = self.by_section.get_mut(section)?;
        if !matches!(entry, Some((s, r, _)) if s == spans && *r == rs) {
            *entry = Some((spans.to_vec(), rs, ApplyPlan::new(spans, rs)));
        }
        entry.as_ref().and_then(|e| e.2.as_ref())
    }
}

/// How a record is rebuilt from its delta: by the section's plan, or span
/// by span when its layout has none.
#[derive(Clone, Copy)]
pub(super) struct Apply<'a> {
    pub(super) plan: Option<&'a ApplyPlan>,
    pub(super) spans: &'a [Span],
}

impl Apply<'_> {
    /// Writes into `out` the record whose delta against `reference` is
    /// `delta` (all three a record long); returns whether it differs from
    /// `reference`.
    #[inline]
    fn record(self, delta: &[u8], reference: &[u8], out: &mut [u8]) -> bool {
        match self.plan {
            Some(p) => p.apply(delta, reference, out),
            None => {
                planes::row_apply(self.spans, delta, reference, out);
                out != reference
            }
        }
    }
}

/// Fills `ids` and `records` with the kept entities of `base` (minus
/// `m.removed`, in order), the changed ones (`m.changed`) rebuilt from row
/// `k` of `deltas` (rows of a record's size) for the `k`-th of them.
pub(super) fn kept(
    section: usize,
    apply: Apply<'_>,
    base: &SectionRef<'_>,
    m: &SectionTokens,
    deltas: &[u8],
    ids: &mut Vec<u32>,
    records: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let rs = base.record_size();
    let bad = || DecodeError::BadEntitySet { section };
    let (base_ids, base_records) = (base.ids(), base.records());
    // The baseline's entities a run at a time between the removed ones.
    ids.clear();
    records.clear();
    ids.reserve_exact(m.kept());
    records.reserve_exact(m.kept() * rs);
    let mut from = 0usize;
    for r in m
        .removed
        .iter()
        .map(|&r| r as usize)
        .chain([base_ids.len()])
    {
        let (Some(i), Some(rec)) = (base_ids.get(from..r), base_records.get(from * rs..r * rs))
        else {
            return Err(bad());
        };
        ids.extend_from_slice(i);
        records.extend_from_slice(rec);
        from = r + 1;
    }
    // The changed records, each from its baseline record: kept entity `k`
    // is baseline entity `k` plus the removed ones before it.
    let mut removed = m.removed.iter().map(|&r| r as usize).peekable();
    let mut skipped = 0usize;
    for (row, &k) in m.changed.iter().enumerate() {
        let k = k as usize;
        while removed.next_if(|&r| r <= k + skipped).is_some() {
            skipped += 1;
        }
        let bi = k + skipped;
        let (Some(delta), Some(reference), Some(out)) = (
            deltas.get(row * rs..(row + 1) * rs),
            base_records.get(bi * rs..(bi + 1) * rs),
            records.get_mut(k * rs..(k + 1) * rs),
        ) else {
            return Err(bad());
        };
        // A changed row changes something.
        if !apply.record(delta, reference, out) {
            return Err(DecodeError::BadMask { section, row });
        }
    }
    Ok(())
}

/// Fills `out` with the `count` spawned records of rows `deltas` (rows of
/// `reference`'s size), each against the one before it, the first against
/// `reference` (the type's default record).
pub(super) fn spawned(
    section: usize,
    apply: Apply<'_>,
    reference: &[u8],
    count: usize,
    deltas: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let rs = reference.len();
    out.clear();
    if rs == 0 {
        return Ok(());
    }
    out.resize(count * rs, 0);
    let Some(deltas) = deltas.get(..count * rs) else {
        return Err(DecodeError::BadEntitySet { section });
    };
    let mut rows = deltas.chunks_exact(rs);
    let mut records = out.chunks_exact_mut(rs);
    let (Some(delta), Some(first)) = (rows.next(), records.next()) else {
        return Ok(());
    };
    apply.record(delta, reference, first);
    let mut prev: &[u8] = first;
    for (delta, rec) in rows.zip(records) {
        apply.record(delta, prev, rec);
        prev = rec;
    }
    Ok(())
}
