//! The records of a section coded as byte planes ([`super::planes`]), from
//! its rows' deltas (transposed back from the planes): the kept entities
//! with the changed rows applied to their baseline records, and the
//! spawned records, each against the one before it.

use super::record_apply::ApplyPlan;
use super::{planes, transpose, SectionTokens};
use crate::error::DecodeError;
use crate::schema::{EntityType, Span};
use crate::snapshot::{Section, SectionRef};

/// Scratch of the byte-plane rows, reused between sections and packets.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// The rows' deltas transposed back from the planes, one record each.
    rows: Vec<u8>,
    /// Where each record byte's plane starts ([`planes::unsplit`]).
    starts: Vec<usize>,
    plans: Plans,
    /// Per changed row: where its reference starts in the baseline's
    /// records, and its record in the section's.
    refs: Vec<usize>,
    outs: Vec<usize>,
    /// Per spawned row: where its record starts in the section's records.
    spawn_at: Vec<usize>,
    /// Per changed row: whether its record differs from its reference.
    differs: Vec<bool>,
}

/// Rebuilds a section of records of `ty` from `base`, its entity sets `m`
/// and its byte planes `planes` in `order`, into `out`: the kept and
/// spawned entities in id order, every changed and spawned record decoded
/// in its place there.
#[allow(clippy::too_many_arguments)]
pub(super) fn decode(
    section: usize,
    ty: &EntityType,
    order: &[u16],
    planes: &[u8],
    base: &SectionRef<'_>,
    m: &SectionTokens,
    s: &mut Scratch,
    out: &mut Section,
) -> Result<(), DecodeError> {
    decode_with(section, ty, order, planes, base, m, s, out, true)
}

/// [`decode`] without refusing a changed row equal to its reference: for a
/// predicted section, whose rows are checked against the baseline after
/// ([`super::predict::planes_to_baseline`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_unchecked(
    section: usize,
    ty: &EntityType,
    order: &[u16],
    planes: &[u8],
    base: &SectionRef<'_>,
    m: &SectionTokens,
    s: &mut Scratch,
    out: &mut Section,
) -> Result<(), DecodeError> {
    decode_with(section, ty, order, planes, base, m, s, out, false)
}

/// [`decode`], refusing a changed row equal to its reference when `check`.
#[allow(clippy::too_many_arguments)]
fn decode_with(
    section: usize,
    ty: &EntityType,
    order: &[u16],
    planes: &[u8],
    base: &SectionRef<'_>,
    m: &SectionTokens,
    s: &mut Scratch,
    out: &mut Section,
    check: bool,
) -> Result<(), DecodeError> {
    let rs = ty.record_size();
    let changed = m.changed.len();
    let n = changed + m.spawned.len();
    out.clear_for(rs);
    let (ids, records) = out.parts_mut();
    // A spawned id equal to a kept one is reported once the rows are read.
    let duplicate = layout(
        section,
        base,
        m,
        ids,
        records,
        &mut s.refs,
        &mut s.outs,
        &mut s.spawn_at,
    )?;
    let plan = s.plans.get(section, ty.spans(), rs);
    let apply = Apply {
        plan,
        spans: ty.spans(),
    };
    // The rows straight from the planes when they are whole and the
    // layout has a plan, else through the rows' deltas.
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
    if fused {
        // A changed row changes something.
        if let Some(row) = s.differs.iter().position(|&d| !d).filter(|_| check) {
            return Err(DecodeError::BadMask { section, row });
        }
        let direct = plan.is_some_and(|p| {
            wide::spawned_rows(
                p,
                planes,
                &s.starts,
                changed,
                ty.default_record(),
                records,
                &s.spawn_at,
            )
        });
        if !direct {
            let rows = planes::unsplit(order, planes, n, changed, rs, &mut s.rows, &mut s.starts);
            spawned(
                section,
                apply,
                ty.default_record(),
                rows,
                records,
                &s.spawn_at,
            )?;
        }
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
            check,
        )?;
        spawned(
            section,
            apply,
            ty.default_record(),
            spawned_rows,
            records,
            &s.spawn_at,
        )?;
    }
    match duplicate {
        Some(e) => Err(e),
        None => Ok(()),
    }
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

/// Elsewhere the rows go through the rows' deltas.
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

    pub(super) fn spawned_rows(
        _: &super::ApplyPlan,
        _: &[u8],
        _: &[usize],
        _: usize,
        _: &[u8],
        _: &mut [u8],
        _: &[usize],
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

/// Lays out the section in `ids` and `records`: the kept entities of
/// `base` (minus `m.removed`, in order), copied a run at a time, with the
/// spawned ones (`m.spawned`) among them in id order, their records zero.
/// Fills `refs` and `outs` with where each changed row's (`m.changed`)
/// reference starts in the baseline's records and its record in
/// `records`, and `spawn_at` with where each spawned record starts there.
/// Returns the error of the first spawned id that a kept entity has too
/// (that spawned entity placed before the kept one).
#[allow(clippy::too_many_arguments)]
fn layout(
    section: usize,
    base: &SectionRef<'_>,
    m: &SectionTokens,
    ids: &mut Vec<u32>,
    records: &mut Vec<u8>,
    refs: &mut Vec<usize>,
    outs: &mut Vec<usize>,
    spawn_at: &mut Vec<usize>,
) -> Result<Option<DecodeError>, DecodeError> {
    let rs = base.record_size();
    let (base_ids, base_records) = (base.ids(), base.records());
    let total = m.kept() + m.spawned.len();
    ids.clear();
    records.clear();
    ids.reserve_exact(total);
    records.reserve_exact(total * rs);
    spawn_at.clear();
    spawn_at.reserve_exact(m.spawned.len());
    let mut duplicate = None;
    let mut spawned = m.spawned.iter().copied().peekable();
    let mut spawn = |b: u32, ids: &mut Vec<u32>, records: &mut Vec<u8>| {
        spawn_at.push(records.len());
        ids.push(b);
        records.resize(records.len() + rs, 0);
    };
    // The baseline's entities a run at a time between the removed ones,
    // each run split before the spawned ids that come before its end.
    let mut kept = 0usize;
    let mut from = 0usize;
    for r in m
        .removed
        .iter()
        .map(|&r| r as usize)
        .chain([base_ids.len()])
    {
        let (Some(mut run), Some(mut rec)) =
            (base_ids.get(from..r), base_records.get(from * rs..r * rs))
        else {
            return Err(DecodeError::BadEntitySet { section });
        };
        kept += run.len();
        while let (Some(&b), Some(&last)) = (spawned.peek(), run.last()) {
            if b > last {
                break;
            }
            let before = run.iter().take_while(|&&a| a < b).count();
            if run.get(before) == Some(&b) && duplicate.is_none() {
                duplicate = Some(DecodeError::DuplicateEntity { section, id: b });
            }
            let (Some((i, rest)), Some((r, rest_rec))) = (
                run.get(..before).zip(run.get(before..)),
                rec.get(..before * rs).zip(rec.get(before * rs..)),
            ) else {
                return Err(DecodeError::BadEntitySet { section });
            };
            ids.extend_from_slice(i);
            records.extend_from_slice(r);
            (run, rec) = (rest, rest_rec);
            spawn(b, ids, records);
            spawned.next();
        }
        ids.extend_from_slice(run);
        records.extend_from_slice(rec);
        from = r + 1;
    }
    // The spawned entities after every kept one, together.
    let rest = m.spawned.len() - spawn_at.len();
    let at = records.len();
    spawn_at.extend((0..rest).map(|j| at + j * rs));
    ids.extend(spawned);
    records.resize(at + rest * rs, 0);
    // Kept entity `k` is baseline entity `k` plus the removed ones before
    // it, and section entity `k` plus the spawned ones before it: spawned
    // entity `j` comes after `spawn_at[j] / rs - j` kept ones.
    refs.clear();
    outs.clear();
    refs.resize(m.changed.len(), 0);
    outs.resize(m.changed.len(), 0);
    let mut removed = m.removed.iter().map(|&r| r as usize);
    let mut next_removed = removed.next();
    let mut skipped = 0usize;
    let mut kept_before = spawn_at
        .iter()
        .enumerate()
        .map(|(j, &a)| a.checked_div(rs).unwrap_or(0).saturating_sub(j));
    let mut next_spawned = kept_before.next();
    let mut spawned_before = 0usize;
    // From kept entity `next_event` on (the next removed or spawned one,
    // or the end of the kept ones) the offsets are brought up to date.
    let mut next_event = 0usize;
    let (mut ref_offset, mut out_offset) = (0usize, 0usize);
    for ((&k, r), o) in m.changed.iter().zip(refs.iter_mut()).zip(outs.iter_mut()) {
        let k = k as usize;
        if k >= next_event {
            while next_removed.is_some_and(|r| r <= k + skipped) {
                skipped += 1;
                next_removed = removed.next();
            }
            while next_spawned.is_some_and(|q| q <= k) {
                spawned_before += 1;
                next_spawned = kept_before.next();
            }
            // With `k` under `kept`, `k + skipped` is inside the baseline.
            if k >= kept {
                return Err(DecodeError::BadEntitySet { section });
            }
            next_event = next_removed
                .map_or(usize::MAX, |r| r - skipped)
                .min(next_spawned.unwrap_or(usize::MAX))
                .min(kept);
            ref_offset = skipped * rs;
            out_offset = spawned_before * rs;
        }
        let at = k * rs;
        *r = at + ref_offset;
        *o = at + out_offset;
    }
    Ok(duplicate)
}

/// Rebuilds the changed records at `at` from `deltas` (row `k` for the
/// `k`-th changed row, rows of `rs` bytes).
fn changed_records(
    section: usize,
    apply: Apply<'_>,
    rs: usize,
    deltas: &[u8],
    at: Places<'_>,
    check: bool,
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
        if !apply.record(delta, reference, out) && check {
            return Err(DecodeError::BadMask { section, row });
        }
    }
    Ok(())
}

/// Rebuilds the spawned records at `at` in `out` from `deltas` (row `j`
/// for the `j`-th spawned row, rows of `reference`'s size), each against
/// the one before it, the first against `reference` (the type's default
/// record).
pub(super) fn spawned(
    section: usize,
    apply: Apply<'_>,
    reference: &[u8],
    deltas: &[u8],
    out: &mut [u8],
    at: &[usize],
) -> Result<(), DecodeError> {
    let rs = reference.len();
    if rs == 0 {
        return Ok(());
    }
    let bad = || DecodeError::BadEntitySet { section };
    let mut prev: Option<usize> = None;
    for (j, &a) in at.iter().enumerate() {
        let delta = deltas.get(j * rs..(j + 1) * rs).ok_or_else(bad)?;
        // The record before is at a lower place.
        let (before, after) = out.split_at_mut(a.min(out.len()));
        let reference = match prev {
            None => reference,
            Some(p) => before.get(p..p + rs).ok_or_else(bad)?,
        };
        let rec = after.get_mut(..rs).ok_or_else(bad)?;
        apply.record(delta, reference, rec);
        prev = Some(a);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::record_apply::tests::bytes;

    /// `layout` against the kept list merged with the spawned ids by
    /// searching each id's place in the sorted whole.
    #[test]
    fn layout_places_match_a_merge() {
        let mut tried = 0;
        for seed in 0..60u32 {
            let rs = [0usize, 1, 5, 16, 17][seed as usize % 5];
            let r = bytes(64, seed);
            let base_len = [0usize, 1, 15, 16, 17, 40][seed as usize % 6];
            // Baseline ids with gaps, so spawned ids fit between them.
            let base_ids: Vec<u32> = (0..base_len as u32).map(|i| 3 * i + 2).collect();
            let base_records = bytes(base_len * rs, seed + 7);
            let base = SectionRef::new(&base_ids, &base_records, rs).unwrap();
            let removed: Vec<u32> = (0..base_len as u32)
                .filter(|&i| r[i as usize % 64].is_multiple_of(4))
                .collect();
            let kept_ids: Vec<u32> = base_ids
                .iter()
                .enumerate()
                .filter(|(i, _)| !removed.contains(&(*i as u32)))
                .map(|(_, &id)| id)
                .collect();
            let changed: Vec<u32> = (0..kept_ids.len() as u32)
                .filter(|&k| r[(k as usize + 5) % 64].is_multiple_of(3))
                .collect();
            // Spawned ids before, between and after the baseline's, and
            // in some tries one a kept entity has.
            let mut spawned: Vec<u32> = (0..(3 * base_len as u32 + 9))
                .filter(|&id| id % 3 != 2 && r[(id as usize * 7) % 64].is_multiple_of(5))
                .collect();
            let dup = (seed % 4 == 3).then(|| kept_ids.get(kept_ids.len() / 2).copied());
            if let Some(Some(d)) = dup {
                spawned.push(d);
                spawned.sort_unstable();
            }
            let m = SectionTokens {
                base_len,
                removed: removed.clone(),
                changed: changed.clone(),
                spawned: spawned.clone(),
                ..Default::default()
            };
            let (mut ids, mut records) = (vec![9], vec![9]);
            let (mut refs, mut outs, mut spawn_at) = (vec![], vec![], vec![]);
            let duplicate = layout(
                0,
                &base,
                &m,
                &mut ids,
                &mut records,
                &mut refs,
                &mut outs,
                &mut spawn_at,
            )
            .unwrap();
            tried += 1;
            let mut want_ids: Vec<u32> = kept_ids.iter().chain(&spawned).copied().collect();
            want_ids.sort_unstable();
            assert_eq!(ids, want_ids, "try {seed}");
            match dup {
                Some(Some(d)) => {
                    assert_eq!(
                        duplicate,
                        Some(DecodeError::DuplicateEntity { section: 0, id: d })
                    );
                    continue;
                }
                _ => assert_eq!(duplicate, None),
            }
            let place = |id: u32| want_ids.iter().position(|&i| i == id).unwrap() * rs;
            for (j, &id) in spawned.iter().enumerate() {
                assert_eq!(spawn_at[j], place(id));
                assert!(records[spawn_at[j]..spawn_at[j] + rs]
                    .iter()
                    .all(|&b| b == 0));
            }
            for (&k, (&ra, &oa)) in changed.iter().zip(refs.iter().zip(&outs)) {
                let id = kept_ids[k as usize];
                let bi = base_ids.iter().position(|&i| i == id).unwrap();
                assert_eq!(ra, bi * rs);
                assert_eq!(oa, place(id));
            }
            for (bi, &id) in base_ids.iter().enumerate() {
                if kept_ids.contains(&id) {
                    let p = place(id);
                    assert_eq!(records[p..p + rs], base_records[bi * rs..(bi + 1) * rs]);
                }
            }
        }
        assert_eq!(tried, 60);
    }

    #[test]
    fn layout_refuses_a_changed_row_past_the_kept_ones() {
        let ids = [1u32, 2, 3];
        let recs = [0u8; 3 * 16];
        let base = SectionRef::new(&ids, &recs, 16).unwrap();
        let m = SectionTokens {
            base_len: 3,
            removed: vec![1],
            changed: vec![0, 2],
            spawned: vec![0],
            ..Default::default()
        };
        let (mut i, mut r, mut a, mut b, mut c) = (vec![], vec![], vec![], vec![], vec![]);
        assert_eq!(
            layout(7, &base, &m, &mut i, &mut r, &mut a, &mut b, &mut c),
            Err(DecodeError::BadEntitySet { section: 7 })
        );
    }
}
