//! Snapshots in code form: the encoder codes the integer codes of quantised
//! fields, not their float bits, so it converts the snapshot, the baseline
//! and the prior before the pipeline runs; the decoder converts the
//! baseline and prior the same way, and the decoded snapshot back.

use super::cache::CodeCache;
use super::plan;
use crate::error::{DecodeError, SnapshotError};
use crate::schema::Schema;
use crate::snapshot::{Section, SectionRef, Snapshot};

/// Reusable code-form copies.
#[derive(Debug, Default)]
pub(crate) struct CodeSpace {
    /// The snapshot being encoded, or the one being decoded in code form.
    pub(crate) cur: Snapshot,
    /// Code forms of recent snapshots, baselines and priors among them.
    pub(crate) cache: CodeCache,
}

/// Copies `src` (section `index` of `schema`) into `dst` with every
/// quantised value replaced by its code.
pub(crate) fn section_to_codes(
    schema: &Schema,
    index: usize,
    src: &SectionRef<'_>,
    dst: &mut Section,
) -> Result<(), SnapshotError> {
    let Some(ty) = schema.sections().get(index) else {
        return Err(SnapshotError::SectionCount {
            expected: schema.sections().len(),
            actual: index + 1,
        });
    };
    let rs = ty.record_size();
    if src.record_size() != rs {
        return Err(SnapshotError::RecordSize {
            expected: rs,
            actual: src.record_size(),
        });
    }
    dst.clear_for(rs);
    let (ids, records) = dst.parts_mut();
    ids.extend_from_slice(src.ids());
    records.extend_from_slice(src.records());
    if ty.slots().is_empty() {
        return Ok(());
    }
    plan::records_to_codes(ty.slots(), records, rs).map_err(|(i, field, element)| {
        SnapshotError::NotQuantized {
            section: index,
            id: ids.get(i).copied().unwrap_or_default(),
            field,
            element,
        }
    })
}

/// Replaces every quantised value of one record (entity `id` of section
/// `index`, of type `ty`) by its code, in place.
pub(crate) fn record_to_codes(
    ty: &crate::schema::EntityType,
    index: usize,
    id: u32,
    rec: &mut [u8],
) -> Result<(), SnapshotError> {
    if ty.slots().is_empty() {
        return Ok(());
    }
    plan::to_codes(ty.slots(), rec).map_err(|(field, element)| SnapshotError::NotQuantized {
        section: index,
        id,
        field,
        element,
    })
}

/// Copies `src` into `dst` in code form (after checking it against the
/// schema): each quantised field's value replaced by its integer code, as
/// [`Encoder::encode_coded_to_vec`](crate::Encoder::encode_coded_to_vec)
/// takes it. Fails if a quantised field holds a value that is not exactly
/// a quantised value.
pub fn snapshot_to_codes(
    schema: &Schema,
    src: &Snapshot,
    dst: &mut Snapshot,
) -> Result<(), SnapshotError> {
    src.check(schema)?;
    dst.reset(schema);
    for (i, (s, d)) in src.sections().iter().zip(dst.sections_mut()).enumerate() {
        section_to_codes(schema, i, &s.as_ref(), d)?;
    }
    Ok(())
}

/// Replaces every code of a decoded snapshot by its value.
pub(crate) fn snapshot_from_codes(schema: &Schema, s: &mut Snapshot) -> Result<(), DecodeError> {
    for (i, (ty, sec)) in schema.sections().iter().zip(s.sections_mut()).enumerate() {
        if ty.slots().is_empty() {
            continue;
        }
        let rs = ty.record_size();
        let (ids, records) = sec.parts_mut();
        plan::records_from_codes(ty.slots(), records, rs).map_err(|(r, field, element)| {
            DecodeError::BadQuantCode {
                section: i,
                id: ids.get(r).copied().unwrap_or_default(),
                field,
                element,
            }
        })?;
    }
    Ok(())
}
