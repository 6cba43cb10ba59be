//! The records of a section coded as byte planes ([`super::planes`]), from
//! its rows' deltas (transposed back from the planes): the kept entities
//! with the changed rows applied to their baseline records, and the
//! spawned records, each against the one before it.

#![forbid(unsafe_code)]

use super::record_apply::ApplyPlan;
use super::{planes, transpose, SectionTokens};
use crate::error::DecodeError;
use crate::schema::{EntityType, Span};
use crate::snapshot::SectionRef;

/// Scratch of the byte-plane rows, reused between sections and packets.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// The rows' deltas transposed back from the planes, one record each.
    rows: Vec<u8>,
    /// Where each record byte's plane starts ([`planes::unsplit`]).
    starts: Vec<usize>,
    plans: Plans,
    /// Per changed row: where its reference starts in the baseline's
    /// records, and its record in the kept ones.
    refs: Vec<usize>,
    outs: Vec<usize>,
    /// Per changed row: whether its record differs from its reference.
    differs: Vec<bool>,
}

/// Rebuilds a section of records of `ty` from `base`, its entity sets `m`
/// and its byte planes `planes` in `order`: the kept entities into `ids`
/// and `records`, the spawned records into `spawn_records`.
#[allow(clippy::too_many_arguments)]
pub(super) fn decode(
    section: usize,
    ty: &EntityType,
    order: &[u16],
    planes: &[u8],
    base: &SectionRef<'_>,
    m: &SectionTokens,
    s: &mut Scratch,
    ids: &mut Vec<u32>,
    records: &mut Vec<u8>,
    spawn_records: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let rs = ty.record_size();
    let changed = m.changed.len();
    let n = changed + m.spawned.len();
    kept(section, base, m, ids, records, &mut s.refs, &mut s.outs)?;
    let plan = s.plans.get(section, ty.spans(), rs);
    let apply = Apply {
        plan,
        spans: ty.spans(),
    };
    // The changed rows straight from the planes when they are whole and
    // the layout has a plan, else through the rows' deltas.
    let whole = transpose::plane_starts(order, n, rs, &mut s.starts)
        && planes.len() >= order.len().saturating_mul(n);
    let fused = whole
        && plan.is_some_and(|p| {
            wide::changed_rows(
                p,
                planes,
                &s.starts,
                changed,
                Places {
                    reference: base.records(),
                    refs: &s.refs,
                    out: records,
                    outs: &s.outs,
                },
                &mut s.differs,
            )
        });
    let spawned_rows = if fused {
        // A changed row changes something.
        if let Some(row) = s.differs.iter().position(|&d| !d) {
            return Err(DecodeError::BadMask { section, row });
        }
        planes::unsplit(order, planes, n, changed, rs, &mut s.rows, &mut s.starts)
    } else {
        let deltas = planes::unsplit(order, planes, n, 0, rs, &mut s.rows, &mut s.starts);
        let (deltas, spawned_rows) = deltas.split_at(changed * rs);
        changed_records(
            section,
            apply,
            rs,
            deltas,
            Places {
                reference: base.records(),
                refs: &s.refs,
                out: records,
                outs: &s.outs,
            },
        )?;
        spawned_rows
    };
    spawned(
        section,
        apply,
        ty.default_record(),
        m.spawned.len(),
        spawned_rows,
        spawn_records,
    )
}

/// Where the changed rows' records are: row `k`'s reference at `refs[k]`
/// in `reference`, and its record at `outs[k]` in `out`.
pub(super) struct Places<'a> {
    pub(super) reference: &'a [u8],
    pub(super) refs: &'a [usize],
    pub(super) out: &'a mut [u8],
    pub(super) outs: &'a [usize],
}

#[cfg(target_arch = "x86_64")]
use super::planes_apply_sse2 as wide;

/// Elsewhere the changed rows go through the rows' deltas.
#[cfg(not(target_arch = "x86_64"))]
mod wide {
    pub(super) fn changed_rows(
        _: &super::ApplyPlan,
        _: &[u8],
        _: &[usize],
        _: usize,
        _: super::Places<'_>,
        _: &mut Vec<bool>,
    ) -> bool {
        false
    }
}

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
    #[inline(always)]
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
/// `m.removed`, in order), copied a run at a time, and `refs` and `outs`
/// with where each changed row's (`m.changed`) reference starts in the
/// baseline's records and its record in `records`.
fn kept(
    section: usize,
    base: &SectionRef<'_>,
    m: &SectionTokens,
    ids: &mut Vec<u32>,
    records: &mut Vec<u8>,
    refs: &mut Vec<usize>,
    outs: &mut Vec<usize>,
) -> Result<(), DecodeError> {
    let rs = base.record_size();
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
            return Err(DecodeError::BadEntitySet { section });
        };
        ids.extend_from_slice(i);
        records.extend_from_slice(rec);
        from = r + 1;
    }
    // Kept entity `k` is baseline entity `k` plus the removed ones before
    // it.
    refs.clear();
    outs.clear();
    refs.resize(m.changed.len(), 0);
    outs.resize(m.changed.len(), 0);
    let mut removed = m.removed.iter().map(|&r| r as usize);
    let mut next_removed = removed.next();
    let mut skipped = 0usize;
    for ((&k, r), o) in m.changed.iter().zip(refs.iter_mut()).zip(outs.iter_mut()) {
        let k = k as usize;
        while next_removed.is_some_and(|r| r <= k + skipped) {
            skipped += 1;
            next_removed = removed.next();
        }
        if k >= ids.len() || k + skipped >= base_ids.len() {
            return Err(DecodeError::BadEntitySet { section });
        }
        *r = (k + skipped) * rs;
        *o = k * rs;
    }
    Ok(())
}

/// Rebuilds the changed records at `at` from `deltas` (row `k` for the
/// `k`-th changed row, rows of `rs` bytes).
fn changed_records(
    section: usize,
    apply: Apply<'_>,
    rs: usize,
    deltas: &[u8],
    at: Places<'_>,
) -> Result<(), DecodeError> {
    for (row, (&ra, &oa)) in at.refs.iter().zip(at.outs).enumerate() {
        let (Some(delta), Some(reference), Some(out)) = (
            deltas.get(row * rs..(row + 1) * rs),
            at.reference.get(ra..ra + rs),
            at.out.get_mut(oa..oa + rs),
        ) else {
            return Err(DecodeError::BadEntitySet { section });
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
