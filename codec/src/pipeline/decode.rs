//! The decoding half of the pipeline: a section rebuilt from its baseline
//! and its share of the payload, row by row (masks and values, with
//! integrated elements predicted as the row is read, or byte planes).

use super::values::{self, Element, Kind};
use super::{decode_planes, integrate, tokens, SectionTokens, TokenSource};
use crate::error::DecodeError;
use crate::schema::EntityType;
use crate::snapshot::{Section, SectionRef};

/// Decoder scratch, reused between packets.
#[derive(Debug, Default)]
pub(crate) struct DecodeScratch {
    /// The packet's tick distance from its baseline (integrated fields
    /// over ticks, FORMAT.md 4.9); set by the decoder before each packet.
    pub(crate) ticks: u16,
    groups: Vec<bool>,
    changed: Vec<u32>,
    /// Byte-plane rows.
    planes: decode_planes::Scratch,
    spawn_records: Vec<u8>,
    reference: Vec<u8>,
    /// A changed row's reference with its integrated elements predicted.
    predicted: Vec<u8>,
    ids: Vec<u32>,
    records: Vec<u8>,
}

/// What a row is decoded against: a reference record, or for a changed row
/// of a type with integrated elements the baseline record and a buffer
/// its reference is built in as the row is read
/// ([`integrate`]: each integrated element's prediction needs the row's
/// velocity and time, which come before it).
enum RowReference<'a> {
    Plain(&'a [u8]),
    /// A changed row of a predicted section (FORMAT.md 4.6): the mask
    /// against the baseline record `base`, values against `pred`.
    /// With `units` (FORMAT.md 4.10), each implied element's value is
    /// applied to its implied value, computed when the row reaches it.
    Predicted {
        base: &'a [u8],
        pred: &'a [u8],
        units: &'a [crate::schema::Unit],
    },
    Integrated {
        base: &'a [u8],
        integrators: &'a [crate::schema::Integrator],
        ticks: u16,
        reference: &'a mut Vec<u8>,
    },
}

/// Reads one row from `src` into `out`, which holds the row's reference
/// (for a changed row of a type with integrated elements: the baseline
/// record): applies the row's changes to it.
#[allow(clippy::too_many_arguments)]
#[inline]
fn decode_row(
    src: &mut impl TokenSource,
    section: usize,
    row: usize,
    kind_of_row: u32,
    elements: &[Element],
    reference: RowReference<'_>,
    s_groups: &mut Vec<bool>,
    s_changed: &mut Vec<u32>,
    out: &mut [u8],
) -> Result<(), DecodeError> {
    let bad_mask = |()| DecodeError::BadMask { section, row };
    // A changed row changes something: without integrated elements its
    // mask is not empty; with them (an unchanged element takes its
    // prediction, FORMAT.md 4.9) the rebuilt record differs from the
    // baseline record, checked once the row is read.
    let changed_row = kind_of_row == tokens::ctx::CHANGED;
    let base = match &reference {
        RowReference::Integrated { base, .. } if changed_row => Some(*base),
        _ => None,
    };
    let empty_refused = changed_row && base.is_none();
    if elements.len() <= 64 {
        // The mask as bits, without a list.
        let bits =
            tokens::read_mask_bits(src, section, kind_of_row, elements.len())?.map_err(bad_mask)?;
        if bits == 0 && empty_refused {
            return Err(bad_mask(()));
        }
        apply_row(
            src,
            section,
            row,
            kind_of_row,
            elements,
            reference,
            Bits(bits),
            out,
        )?;
    } else {
        tokens::read_mask(
            src,
            section,
            kind_of_row,
            elements.len(),
            s_groups,
            s_changed,
        )?
        .map_err(bad_mask)?;
        if s_changed.is_empty() && empty_refused {
            return Err(bad_mask(()));
        }
        apply_row(
            src,
            section,
            row,
            kind_of_row,
            elements,
            reference,
            s_changed.iter().copied(),
            out,
        )?;
    }
    match base {
        Some(base) if *out == *base => Err(bad_mask(())),
        _ => Ok(()),
    }
}

/// The set bits of a mask, lowest first.
#[derive(Clone, Copy)]
struct Bits(u64);

impl Iterator for Bits {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let e = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(e)
    }
}

/// Reads the values of a row whose mask gave the changed elements
/// `changed` (ascending) and applies them to `out` (see [`decode_row`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn apply_row(
    src: &mut impl TokenSource,
    section: usize,
    row: usize,
    kind_of_row: u32,
    elements: &[Element],
    reference: RowReference<'_>,
    changed: impl Iterator<Item = u32> + Clone,
    out: &mut [u8],
) -> Result<(), DecodeError> {
    match reference {
        RowReference::Plain(reference) => decode_values(
            src,
            section,
            row,
            kind_of_row,
            elements,
            reference,
            changed,
            out,
        ),
        RowReference::Predicted { base, pred, units } => {
            for e in changed {
                let bad = DecodeError::BadValue {
                    section,
                    row,
                    element: e as usize,
                };
                let Some(&el) = elements.get(e as usize) else {
                    return Err(bad);
                };
                let (float, v) = if el.float {
                    let r = values::FloatReference::new(el, pred);
                    let has_bit = r.kind() == Kind::Bits;
                    let (integral, v) =
                        src.float_value(section, kind_of_row, e as usize, has_bit)?;
                    (Some((r, integral)), v)
                } else if src.inline_floats() {
                    (
                        None,
                        src.float_value(section, kind_of_row, e as usize, false)?.1,
                    )
                } else {
                    let ctx =
                        tokens::ctx::make(tokens::ctx::VALUE, section, kind_of_row, e as usize);
                    (None, src.uint(ctx)?)
                };
                // An implied element (no kind bit: `float` is `None`),
                // the field's other elements final before it.
                if let Some(u) = units.iter().find(|u| u.element == e) {
                    super::unit::decode_value(u, v, base, out).map_err(|_| bad)?;
                    continue;
                }
                super::predict::decode_value(el, float, v, pred, base, out).map_err(|_| bad)?;
            }
            Ok(())
        }
        RowReference::Integrated {
            base,
            integrators,
            ticks,
            reference: predicted,
        } => {
            // The other elements' values first, against the baseline;
            // then level by level, their velocity and time final, the
            // integrated elements: each takes its prediction unless the
            // row changes it (FORMAT.md 4.9).
            let others = changed
                .clone()
                .filter(|&e| integrate::level(integrators, e) == 0);
            decode_values(src, section, row, kind_of_row, elements, base, others, out)?;
            predicted.clear();
            predicted.extend_from_slice(base);
            for level in 1..=integrate::max_level(integrators) {
                for i in integrators.iter().filter(|i| i.level == level) {
                    integrate::apply(i, base, out, ticks, predicted);
                    integrate::copy(i, predicted, out);
                }
                let integrated = changed
                    .clone()
                    .filter(|&e| integrate::level(integrators, e) == level);
                decode_values(
                    src,
                    section,
                    row,
                    kind_of_row,
                    elements,
                    predicted,
                    integrated,
                    out,
                )?;
            }
            Ok(())
        }
    }
}

/// Reads the values of the changed elements `changed` of one row, each
/// against `reference`, into `out`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn decode_values(
    src: &mut impl TokenSource,
    section: usize,
    row: usize,
    kind_of_row: u32,
    elements: &[Element],
    reference: &[u8],
    changed: impl Iterator<Item = u32>,
    out: &mut [u8],
) -> Result<(), DecodeError> {
    let bad = |e: u32| DecodeError::BadValue {
        section,
        row,
        element: e as usize,
    };
    for e in changed {
        let Some(&el) = elements.get(e as usize) else {
            return Err(bad(e));
        };
        if !el.float {
            // No kind bit: one value, checked as it is applied (read as
            // a float without a kind bit where that is cheaper: the same
            // decision).
            let v = if src.inline_floats() {
                src.float_value(section, kind_of_row, e as usize, false)?.1
            } else {
                src.uint(tokens::ctx::make(
                    tokens::ctx::VALUE,
                    section,
                    kind_of_row,
                    e as usize,
                ))?
            };
            values::decode_changed(el, v, reference, out).map_err(|_| bad(e))?;
            continue;
        }
        if src.inline_floats() {
            read_float(src, section, row, kind_of_row, e, el, reference, out)?;
        } else {
            decode_float(src, section, row, kind_of_row, e, el, reference, out)?;
        }
    }
    Ok(())
}

/// [`read_float`] out of line, so that the loop over a row's elements
/// stays small for sources whose floats are rare.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn decode_float(
    src: &mut impl TokenSource,
    section: usize,
    row: usize,
    kind_of_row: u32,
    e: u32,
    el: Element,
    reference: &[u8],
    out: &mut [u8],
) -> Result<(), DecodeError> {
    read_float(src, section, row, kind_of_row, e, el, reference, out)
}

/// Reads the kind bit (if any) and value of changed float element `e`
/// (`el`) of a row, against `reference`, into `out`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn read_float(
    src: &mut impl TokenSource,
    section: usize,
    row: usize,
    kind_of_row: u32,
    e: u32,
    el: Element,
    reference: &[u8],
    out: &mut [u8],
) -> Result<(), DecodeError> {
    let bad = || DecodeError::BadValue {
        section,
        row,
        element: e as usize,
    };
    // The common float, `f32` without grid, with fixed-width loads.
    let at = usize::from(el.offset);
    if let Some(r) = (el.width == 4 && el.grid.is_none())
        .then(|| values::f32_reference(at, reference))
        .flatten()
    {
        let (integral, v) = src.float_value(section, kind_of_row, e as usize, r.1.is_some())?;
        return values::decode_f32_changed(at, r, integral, v, out).map_err(|_| bad());
    }
    let r = values::FloatReference::new(el, reference);
    let (integral, v) =
        src.float_value(section, kind_of_row, e as usize, r.kind() == Kind::Bits)?;
    values::decode_float_changed(el, r, integral, v, out).map_err(|_| bad())
}

/// The kept entities of a section whose rows come from the token walk, into
/// `s.ids` and `s.records`: the baseline's ids and records between removed
/// entities copied a run at a time, then each changed row decoded in place
/// against its baseline record. Returns the rows read.
#[allow(clippy::too_many_arguments)]
fn decode_kept(
    src: &mut impl TokenSource,
    section: usize,
    ty: &EntityType,
    elements: &[Element],
    base: &SectionRef<'_>,
    pred: Option<&SectionRef<'_>>,
    m: &SectionTokens,
    s: &mut DecodeScratch,
) -> Result<usize, DecodeError> {
    let rs = ty.record_size();
    let (base_ids, base_records) = (base.ids(), base.records());
    // `removed` is ascending and within the baseline (`read_meta`).
    let bad = DecodeError::BadEntitySet { section };
    let mut from = 0usize;
    for &r in m
        .removed
        .iter()
        .chain(core::iter::once(&(base_ids.len() as u32)))
    {
        let r = r as usize;
        s.ids
            .extend_from_slice(base_ids.get(from..r).ok_or(bad.clone())?);
        s.records
            .extend_from_slice(base_records.get(from * rs..r * rs).ok_or(bad.clone())?);
        from = r + 1;
    }
    // `changed` is ascending and within the kept entities: kept entity `k`
    // is baseline entity `k + p`, `p` the removed entities before it.
    let mut p = 0usize;
    for (row, &k) in m.changed.iter().enumerate() {
        let k = k as usize;
        while m.removed.get(p).is_some_and(|&r| r as usize <= k + p) {
            p += 1;
        }
        let bi = k + p;
        let (Some(brec), Some(out)) = (
            base_records.get(bi * rs..(bi + 1) * rs),
            s.records.get_mut(k * rs..(k + 1) * rs),
        ) else {
            return Err(bad);
        };
        decode_row(
            src,
            section,
            row,
            tokens::ctx::CHANGED,
            elements,
            if let Some(pred) = pred {
                RowReference::Predicted {
                    base: brec,
                    pred: pred
                        .records()
                        .get(bi * rs..(bi + 1) * rs)
                        .ok_or(bad.clone())?,
                    units: ty.unit_fields(),
                }
            } else if !ty.unit_fields().is_empty() {
                RowReference::Predicted {
                    base: brec,
                    pred: brec,
                    units: ty.unit_fields(),
                }
            } else if ty.integrators().is_empty() {
                RowReference::Plain(brec)
            } else {
                RowReference::Integrated {
                    base: brec,
                    integrators: ty.integrators(),
                    ticks: s.ticks,
                    reference: &mut s.predicted,
                }
            },
            &mut s.groups,
            &mut s.changed,
            out,
        )?;
    }
    Ok(m.changed.len())
}

/// Rebuilds a section from its baseline and its entity sets (`m`, as
/// [`tokens::read_meta`] left them), reading its rows from `src` (as byte
/// planes in `order` when `m.planes`), into `out`. Spawned records may
/// total at most `max_spawn_bytes`. When the section's recall bit is set
/// (never with byte planes), a spawned entity is decoded against the
/// record `recalled(id, out)` writes into `out` when it returns `true`; at
/// least one must (`BadEntitySet`). `pred`: the predicted section of a
/// type that predicts (FORMAT.md 4.6; same ids as `base`), which the
/// values of changed rows are coded against.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_section(
    section: usize,
    ty: &EntityType,
    elements: &[Element],
    order: &[u16],
    base: &SectionRef<'_>,
    pred: Option<&SectionRef<'_>>,
    m: &SectionTokens,
    src: &mut impl TokenSource,
    mut recalled: impl FnMut(u32, &mut [u8]) -> Result<bool, DecodeError>,
    max_spawn_bytes: usize,
    s: &mut DecodeScratch,
    out: &mut Section,
) -> Result<(), DecodeError> {
    let rs = ty.record_size();
    let spawn_bytes = m.spawned.len().saturating_mul(rs);
    if spawn_bytes > max_spawn_bytes {
        return Err(DecodeError::DecodedTooLarge {
            limit: max_spawn_bytes,
        });
    }
    let kept = m.kept();
    if m.planes {
        // The section's byte planes, read whole (one byte per row in
        // each: changed rows, then spawned rows), decoded into `out`.
        let n = m.changed.len() + m.spawned.len();
        let bytes = src.raw(section, order.len().saturating_mul(n))?;
        let Some(p) = pred else {
            return decode_planes::decode(section, ty, order, bytes, base, m, &mut s.planes, out);
        };
        // Rows against the prediction, then unchanged entities and the
        // "changed" check back on the baseline.
        decode_planes::decode_unchecked(section, ty, order, bytes, p, m, &mut s.planes, out)?;
        return super::predict::planes_to_baseline(section, base, &m.removed, &m.changed, out);
    }
    // Kept entities, in order, with changed rows applied.
    s.ids.clear();
    s.records.clear();
    s.ids.reserve_exact(kept);
    s.records.reserve_exact(kept * rs);
    let row = decode_kept(src, section, ty, elements, base, pred, m, s)?;
    // Spawned entities, each against its recalled record or the type's
    // default record. Records grow as rows are read, so a truncated
    // payload allocates little.
    s.spawn_records.clear();
    s.reference.resize(rs, 0);
    let mut any_recalled = false;
    for (t, &id) in m.spawned.iter().enumerate() {
        let at = s.spawn_records.len();
        let recall = m.recall && recalled(id, &mut s.reference)?;
        any_recalled |= recall;
        let (kind_of_row, reference) = if recall {
            (tokens::ctx::RECALLED, &s.reference[..])
        } else {
            (tokens::ctx::SPAWNED, ty.default_record())
        };
        s.spawn_records.extend_from_slice(reference);
        decode_row(
            src,
            section,
            row + t,
            kind_of_row,
            elements,
            RowReference::Plain(reference),
            &mut s.groups,
            &mut s.changed,
            &mut s.spawn_records[at..],
        )?;
    }
    if m.recall && !any_recalled {
        return Err(DecodeError::BadEntitySet { section });
    }
    merge(section, rs, kept, m, s, out)
}

/// Writes into `out` the section's `kept` entities (`s.ids`, `s.records`)
/// and spawned ones (`m.spawned`, `s.spawn_records`), records of `rs`
/// bytes, in id order.
fn merge(
    section: usize,
    rs: usize,
    kept: usize,
    m: &SectionTokens,
    s: &mut DecodeScratch,
    out: &mut Section,
) -> Result<(), DecodeError> {
    let spawn_bytes = s.spawn_records.len();
    out.clear_for(rs);
    let (ids, records) = out.parts_mut();
    if m.spawned.is_empty() {
        // Nothing to merge: hand the kept list over (the scratch keeps the
        // output's old buffers for the next packet).
        core::mem::swap(ids, &mut s.ids);
        core::mem::swap(records, &mut s.records);
        return Ok(());
    }
    if m.spawned.first() > s.ids.last() {
        // Every spawned entity after the kept ones: the kept list handed
        // over and the spawned ones appended.
        core::mem::swap(ids, &mut s.ids);
        core::mem::swap(records, &mut s.records);
        ids.extend_from_slice(&m.spawned);
        records.extend_from_slice(&s.spawn_records);
        return Ok(());
    }
    // Merge the two id-ordered lists: before each spawned entity, the kept
    // ones with lower ids, a run at a time.
    ids.reserve_exact(kept + m.spawned.len());
    records.reserve_exact(s.records.len() + spawn_bytes);
    let mut i = 0usize;
    for (j, &b) in m.spawned.iter().enumerate() {
        let run = s.ids[i..].iter().take_while(|&&a| a < b).count();
        if s.ids.get(i + run) == Some(&b) {
            return Err(DecodeError::DuplicateEntity { section, id: b });
        }
        ids.extend_from_slice(&s.ids[i..i + run]);
        records.extend_from_slice(&s.records[i * rs..(i + run) * rs]);
        ids.push(b);
        records.extend_from_slice(&s.spawn_records[j * rs..(j + 1) * rs]);
        i += run;
    }
    ids.extend_from_slice(&s.ids[i..]);
    records.extend_from_slice(&s.records[i * rs..]);
    Ok(())
}
