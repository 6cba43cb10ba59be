//! Predicting a dense section's row mode from its previous packets, so that
//! a section that keeps going as byte planes does not code its rows as
//! masks and values only to size them.
//!
//! The full estimate ([`super::settle_planes`]) compares the rows' bytes as
//! masks and values with the planes' non-zero bytes and zero runs. Its
//! last outcome is kept per section ([`PlanesHint`]); the next packet
//! builds the rows and planes as before, counts their non-zero bytes and
//! zero runs, and scales the non-zero bytes by the hint's ratio to predict
//! the masks and values. When the prediction, less [`HINT_MARGIN`], still
//! loses to the planes by the rule the encoder would apply, the section is
//! settled as planes; otherwise the rows are coded and the full estimate
//! runs. The hint lives for [`HINT_LIFE`] packets. Encoder state only: a
//! decoder reads the row mode from the section's flags.

use super::{planes, row_deltas, EncodeScratch, RowMode};
use crate::schema::EntityType;
use crate::snapshot::SectionRef;

/// A section's last full row-mode estimate (of at least
/// [`super::EARLY_STOP_ROWS`] rows): its rows' bytes as masks and values
/// against the planes' non-zero bytes, and the packets predicted from it
/// since.
#[derive(Debug, Clone, Copy)]
pub(super) struct PlanesHint {
    tokens: usize,
    nonzero: usize,
    age: u8,
}

impl PlanesHint {
    pub(super) fn new(tokens: usize, nonzero: usize) -> Self {
        Self {
            tokens,
            nonzero,
            age: 0,
        }
    }
}

/// Packets a [`PlanesHint`] predicts before the full estimate runs again:
/// half a second at 60 Hz (at 16 and at 64 the packets were the same).
const HINT_LIFE: u8 = 32;

/// The share of the predicted mask-and-value bytes the planes' estimate
/// must stay under for a [`PlanesHint`] to settle the section:
/// fifteen sixteenths (at 1/32 the trained quantised arena grew 0.7%).
const HINT_MARGIN: (usize, usize) = (15, 16);

/// With a live [`PlanesHint`]: builds the rows and their planes, and when
/// the hint predicts byte planes settles the section as planes without
/// masks and values (its rows stay uncoded) and returns `true`. Planes win
/// by the dearest estimate (three bytes per zero run), or by the middle
/// one (one and a quarter), which the encoder takes for a payload over
/// `middle_above` bytes: when the predicted masks and values alone are
/// over it, for sure; when only the sections after this one may take the
/// payload over it, tentatively ([`EncodeScratch::tentative`]; never with
/// `middle_above` at `usize::MAX`). Otherwise leaves the rows and planes
/// built and the rows pending for the full estimate.
pub(super) fn predict_planes(
    ty: &EntityType,
    order: &[u16],
    base: &SectionRef<'_>,
    cur: &SectionRef<'_>,
    middle_above: usize,
    s: &mut EncodeScratch,
) -> bool {
    let Some(hint) = s.hint.filter(|h| h.age < HINT_LIFE && h.nonzero > 0) else {
        return false;
    };
    row_deltas(ty, order, base, cur, s);
    s.pending = true;
    let rs = ty.record_size();
    let n = s.align.changed_rows.len() + s.align.spawned.len();
    let (nonzero, runs) = if s.direct {
        planes::nonzero_and_runs(&s.planes)
    } else {
        let nonzero = planes::count_nonzero(&s.rows);
        planes::split(order, &s.rows, n, rs, &mut s.planes, &mut s.starts);
        (nonzero, planes::zero_runs(&s.planes))
    };
    let predicted = nonzero.saturating_mul(hint.tokens) / hint.nonzero;
    let (num, den) = HINT_MARGIN;
    let sure = predicted.saturating_mul(num);
    let dearest = (nonzero + 3 * runs).saturating_mul(den) < sure;
    let middle = (4 * nonzero + 5 * runs).saturating_mul(den) < sure.saturating_mul(4);
    let tentative = !dearest && middle && middle_above != usize::MAX;
    if !(dearest || middle && sure > middle_above.saturating_mul(den) || tentative) {
        s.counted = Some((nonzero, runs));
        return false;
    }
    let t = &mut s.tokens;
    t.recalled.resize(t.spawned.len(), false);
    t.row_end.resize(n, 0);
    t.planes = true;
    s.mode = RowMode::Planes;
    s.pending = false;
    s.tentative = tentative && sure <= middle_above.saturating_mul(den);
    // What the full estimate's payload would count for the section: the
    // planes, or (tentatively) masks and values, at least a byte a row.
    s.row_bytes = if s.tentative { n } else { s.planes.len() };
    s.hint = Some(PlanesHint {
        age: hint.age + 1,
        ..hint
    });
    true
}

#[cfg(test)]
mod tests {
    use super::super::{complete_section, encode_section, values};
    use super::*;
    use crate::schema::{Primitive, Schema};
    use crate::snapshot::Section;

    /// `rows` records of eight `f32`, stepped `t` times by a hashed amount.
    fn section(rows: u32, t: u32) -> Section {
        let mut recs = Vec::new();
        for id in 0..rows {
            for k in 0..8u32 {
                let h = (id * 8 + k).wrapping_mul(0x9e37_79b9) ^ t.wrapping_mul(0x85eb_ca6b);
                let x = (id * 8 + k) as f32 * 0.37 + t as f32 * 0.011 + (h >> 12) as f32 * 1e-6;
                recs.extend_from_slice(&x.to_le_bytes());
            }
        }
        Section::from_parts((0..rows).collect(), recs, 32).unwrap()
    }

    /// A schema of one type: eight `f32` per record.
    fn eight_f32() -> Schema {
        Schema::builder()
            .entity("e")
            .field("v", Primitive::F32, 8)
            .build()
            .unwrap()
    }

    #[test]
    fn a_completed_section_is_the_full_estimates() {
        let schema = eight_f32();
        let ty = &schema.sections()[0];
        let elements = values::elements(ty);
        let order = planes::order(&elements);
        let no_recall = |_: u32, _: &mut [u8]| Ok::<bool, ()>(false);
        for rows in [16, 24, 40, 200] {
            let (base, cur) = (section(rows, 0), section(rows, 1));
            let (base, cur) = (base.as_ref(), cur.as_ref());
            let mut full = EncodeScratch::default();
            encode_section(
                ty, &elements, &order, &base, None, &cur, no_recall, false, None, &mut full,
            )
            .unwrap();
            // A hint that predicts planes whatever the rows: the section is
            // settled as planes, then completed.
            let mut s = EncodeScratch {
                hint: Some(PlanesHint::new(1 << 20, 1)),
                ..EncodeScratch::default()
            };
            encode_section(
                ty,
                &elements,
                &order,
                &base,
                None,
                &cur,
                no_recall,
                false,
                Some(0),
                &mut s,
            )
            .unwrap();
            assert_eq!(s.mode, RowMode::Planes);
            assert!(s.tokens.elems.is_empty(), "rows left uncoded");
            complete_section(ty, &elements, &order, &base, None, &cur, &mut s);
            assert_eq!(s.mode, full.mode, "{rows} rows");
            assert_eq!(s.tokens.elems, full.tokens.elems);
            assert_eq!(s.tokens.row_end, full.tokens.row_end);
            assert_eq!(s.tokens.recalled, full.tokens.recalled);
            assert_eq!(s.tokens.planes, full.tokens.planes);
            assert_eq!(s.planes, full.planes);
            assert_eq!(s.row_bytes, full.row_bytes);
            assert!(!s.tentative && !s.pending);
        }
    }

    #[test]
    fn a_prediction_left_to_the_full_estimate_settles_as_it() {
        let schema = eight_f32();
        let ty = &schema.sections()[0];
        let elements = values::elements(ty);
        let order = planes::order(&elements);
        let no_recall = |_: u32, _: &mut [u8]| Ok::<bool, ()>(false);
        for rows in [16, 40, 200] {
            let (base, cur) = (section(rows, 0), section(rows, 1));
            let (base, cur) = (base.as_ref(), cur.as_ref());
            let mut full = EncodeScratch::default();
            encode_section(
                ty, &elements, &order, &base, None, &cur, no_recall, false, None, &mut full,
            )
            .unwrap();
            // A hint that predicts masks and values whatever the rows: the
            // full estimate runs on what the prediction counted.
            let mut s = EncodeScratch {
                hint: Some(PlanesHint::new(1, 1 << 20)),
                ..EncodeScratch::default()
            };
            encode_section(
                ty,
                &elements,
                &order,
                &base,
                None,
                &cur,
                no_recall,
                false,
                Some(usize::MAX),
                &mut s,
            )
            .unwrap();
            assert_eq!(s.mode, full.mode, "{rows} rows");
            assert_eq!(s.planes, full.planes);
            assert_eq!(s.row_bytes, full.row_bytes);
            assert_eq!(s.tokens.planes, full.tokens.planes);
            assert!(s.counted.is_none() && !s.pending);
        }
    }
}
