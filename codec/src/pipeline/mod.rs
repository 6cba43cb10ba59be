//! The transforms between a section and its share of the payload, each in
//! its own module with its inverse:
//!
//! 1. [`align`]: match entities with the baseline by id (removed, changed, spawned);
//!    [`subset`] and [`ids`] code those sets.
//! 2. [`delta`]: each changed record against its baseline record, each
//!    spawned record against the previous spawned one (the first against the
//!    type's default record), per field operator.
//! 3. [`soa`]: rows of deltas to one column per field.
//! 4. [`planes`]: each column to byte planes, significance-major.
//!
//! Delta runs before the transposition because the `Int` operator works on
//! whole values; the byte-wise operators give the same bytes either way.

#![forbid(unsafe_code)]

pub(crate) mod align;
pub(crate) mod delta;
pub(crate) mod ids;
pub(crate) mod planes;
pub(crate) mod soa;
pub(crate) mod subset;

use crate::error::DecodeError;
use crate::schema::EntityType;
use crate::snapshot::{Section, SectionRef};
use crate::wire::Reader;

/// Writes into `out` the baseline section as predicted from `b0` and the
/// older prior `b1`: every entity of `b0`, with its [`DeltaOp::Predict`]
/// fields replaced by `2·b0 − b1` when the entity is also in `b1`. The
/// encoder aligns against this predicted section instead of `b0`, so an
/// entity that kept its velocity counts as unchanged; the decoder builds the
/// same section and decodes against it.
///
/// [`DeltaOp::Predict`]: crate::DeltaOp::Predict
pub(crate) fn predict_section(
    ty: &EntityType,
    b0: &SectionRef<'_>,
    b1: &SectionRef<'_>,
    out: &mut Section,
) {
    let rs = ty.record_size();
    out.clear_for(rs);
    let (ids, records) = out.parts_mut();
    ids.extend_from_slice(b0.ids());
    records.resize(b0.records().len(), 0);
    let mut j = 0;
    for (i, (&id, rec)) in b0
        .ids()
        .iter()
        .zip(records.chunks_exact_mut(rs))
        .enumerate()
    {
        while j < b1.len() && b1.ids()[j] < id {
            j += 1;
        }
        if j < b1.len() && b1.ids()[j] == id {
            delta::predict(ty.spans(), b0.record(i), b1.record(j), rec);
        } else {
            rec.copy_from_slice(b0.record(i));
        }
    }
}

/// Encoder scratch for one section, reused between packets.
#[derive(Debug, Default)]
pub(crate) struct EncodeScratch {
    align: align::Alignment,
    rows: Vec<u8>,
    cols: Vec<u8>,
}

/// Appends the section's entity sets to `meta` and its planes to `planes`.
pub(crate) fn encode_section(
    ty: &EntityType,
    base: &SectionRef<'_>,
    cur: &SectionRef<'_>,
    s: &mut EncodeScratch,
    meta: &mut Vec<u8>,
    planes: &mut Vec<u8>,
) {
    align::align(base, cur, &mut s.align);
    let a = &s.align;
    subset::encode(base.len(), &a.removed, meta);
    subset::encode(a.kept, &a.changed, meta);
    ids::encode(a.spawned.iter().map(|&j| cur.ids()[j as usize]), meta);

    let rs = ty.record_size();
    let n = a.changed_rows.len() + a.spawned.len();
    s.rows.resize(n * rs, 0);
    let mut rows = s.rows.chunks_exact_mut(rs);
    for (&(ci, bi), row) in a.changed_rows.iter().zip(&mut rows) {
        delta::encode(
            ty.spans(),
            cur.record(ci as usize),
            base.record(bi as usize),
            row,
        );
    }
    let mut prev = ty.default_record();
    for (&j, row) in a.spawned.iter().zip(&mut rows) {
        let rec = cur.record(j as usize);
        delta::encode(ty.spans(), rec, prev, row);
        prev = rec;
    }
    s.cols.resize(n * rs, 0);
    soa::to_columns(&s.rows, n, rs, ty.columns(), &mut s.cols);
    let start = planes.len();
    planes.resize(start + n * rs, 0);
    planes::split_all(ty.planes(), &s.cols, n, &mut planes[start..]);
}

/// The entity sets of one section as read from the payload.
#[derive(Debug, Default)]
pub(crate) struct SectionMeta {
    removed: Vec<u32>,
    changed: Vec<u32>,
    spawned: Vec<u32>,
    kept: Vec<u32>,
}

impl SectionMeta {
    /// Rows of plane data the section carries.
    pub(crate) fn rows(&self) -> usize {
        self.changed.len() + self.spawned.len()
    }

    /// Entities of the decoded section: kept plus spawned.
    pub(crate) fn entities(&self) -> usize {
        self.kept.len() + self.spawned.len()
    }
}

/// Reads one section's entity sets, refusing more than `max_entities`.
pub(crate) fn decode_meta(
    section: usize,
    base_len: usize,
    max_entities: usize,
    r: &mut Reader<'_>,
    m: &mut SectionMeta,
) -> Result<(), DecodeError> {
    let bad = |r: &Reader<'_>| DecodeError::BadEntitySet {
        section,
        offset: r.pos(),
    };
    subset::decode(r, base_len, &mut m.removed).map_err(|()| bad(r))?;
    let kept = base_len - m.removed.len();
    // A baseline the caller holds may itself be over the limit: what is
    // kept of it counts too.
    if kept > max_entities {
        return Err(DecodeError::TooManyEntities {
            section,
            count: kept,
            limit: max_entities,
        });
    }
    subset::decode(r, kept, &mut m.changed).map_err(|()| bad(r))?;
    ids::decode(r, max_entities.saturating_sub(kept), &mut m.spawned).map_err(|e| match e {
        ids::IdsError::Wire(e) => e,
        ids::IdsError::TooMany(count) => DecodeError::TooManyEntities {
            section,
            count: kept.saturating_add(count),
            limit: max_entities,
        },
        ids::IdsError::Overflow => DecodeError::IdOverflow { section },
    })?;
    align::kept_indices(base_len, &m.removed, &mut m.kept);
    Ok(())
}

/// Decoder scratch for one section, reused between packets.
#[derive(Debug, Default)]
pub(crate) struct DecodeScratch {
    rows: Vec<u8>,
    cols: Vec<u8>,
    prev: Vec<u8>,
}

/// Rebuilds a section from its baseline, its entity sets and its planes
/// (exactly `m.rows() * record_size` bytes) into `out`.
pub(crate) fn decode_section(
    section: usize,
    ty: &EntityType,
    base: &SectionRef<'_>,
    m: &SectionMeta,
    plane_bytes: &[u8],
    s: &mut DecodeScratch,
    out: &mut Section,
) -> Result<(), DecodeError> {
    let rs = ty.record_size();
    let n = m.rows();
    s.cols.resize(n * rs, 0);
    planes::join_all(ty.planes(), plane_bytes, n, &mut s.cols);
    s.rows.resize(n * rs, 0);
    soa::from_columns(&s.cols, n, rs, ty.columns(), &mut s.rows);

    out.clear_for(rs);
    let (ids, records) = out.parts_mut();
    let total = m.kept.len() + m.spawned.len();
    ids.reserve_exact(total);
    records.reserve_exact(total * rs);
    s.prev.clear();
    s.prev.extend_from_slice(ty.default_record());

    let mut changed = m.changed.iter().copied().enumerate().peekable();
    let mut spawned = m.spawned.iter().copied().enumerate().peekable();
    let mut kept = m.kept.iter().copied().enumerate().peekable();
    loop {
        let next_kept = kept.peek().map(|&(_, bi)| base.ids()[bi as usize]);
        let next_spawn = spawned.peek().map(|&(_, id)| id);
        match (next_kept, next_spawn) {
            (None, None) => break,
            (Some(k), Some(sp)) if k == sp => {
                return Err(DecodeError::DuplicateEntity { section, id: sp })
            }
            (Some(k), sp) if sp.is_none_or(|sp| k < sp) => {
                let Some((ki, bi)) = kept.next() else { break };
                let brec = base.record(bi as usize);
                ids.push(k);
                let at = records.len();
                match changed.peek() {
                    Some(&(row, c)) if c as usize == ki => {
                        changed.next();
                        records.resize(at + rs, 0);
                        delta::decode(
                            ty.spans(),
                            &s.rows[row * rs..(row + 1) * rs],
                            brec,
                            &mut records[at..],
                        );
                    }
                    _ => records.extend_from_slice(brec),
                }
            }
            _ => {
                let Some((t, id)) = spawned.next() else { break };
                let row = m.changed.len() + t;
                ids.push(id);
                let at = records.len();
                records.resize(at + rs, 0);
                delta::decode(
                    ty.spans(),
                    &s.rows[row * rs..(row + 1) * rs],
                    &s.prev,
                    &mut records[at..],
                );
                s.prev.copy_from_slice(&records[at..]);
            }
        }
    }
    Ok(())
}
