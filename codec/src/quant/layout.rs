//! Smallest-three fields across a change of layout (FORMAT.md 9.1): a row
//! whose largest index `k` differs from its reference's has its three codes
//! coded against the reference rotation re-expressed with index `k`, and a
//! prediction whose prior had another index re-expresses the prior first.
//! Without this the three codes of the two sides name different components
//! and their differences are as large as the codes themselves.

use super::plan::{Kind, Slot};
use super::quat::{self, OTHERS};
use super::scalar::rne;
use crate::pipeline::predict::{extrapolate, Spacing};
use crate::schema::{DeltaOp, EntityType, Primitive};
use crate::snapshot::{Section, SectionRef};

/// The three codes of the rotation of codes `(kr, qr)` re-expressed with
/// largest index `k` (both below 4): its value `v` (FORMAT.md 9, any
/// integers `qr`), negated when `v_k < 0`, each other component `v_i` in
/// index order coded `clamp(rne(v_i / s), −2m, 2m)`: not clamped to the
/// valid codes, since a component larger than the new `k`'s (beyond `m`)
/// still extrapolates. Codes re-expressed in their own layout come back
/// unchanged.
pub(crate) fn reexpress(
    kr: usize,
    qr: [i64; 3],
    k: usize,
    m: i64,
    s: f64,
    ty: Primitive,
) -> [i64; 3] {
    let v = quat::value(kr, qr, s, ty);
    let flip = v.get(k).is_some_and(|&c| c < 0.0);
    let mut out = [0i64; 3];
    let others = OTHERS.get(k).copied().unwrap_or([1, 2, 3]);
    for (o, i) in out.iter_mut().zip(others) {
        let c = v.get(i).copied().unwrap_or(0.0);
        let c = if flip { -c } else { c };
        // A NaN cannot arise (the value's components are finite or
        // infinite, never 0·∞); the cast saturates.
        *o = rne(c / s).clamp(-2.0 * m as f64, 2.0 * m as f64) as i64;
    }
    out
}

/// The smallest-three slots of `ty` with their code width (4 or 8 bytes)
/// and whether the field is coded with [`DeltaOp::Predict`].
fn rotations(ty: &EntityType) -> impl Iterator<Item = (Slot, usize, i64, f64, bool)> + '_ {
    ty.slots().iter().filter_map(move |s| match s.kind {
        Kind::Quat { m, s: step } => {
            let f = ty.fields().get(s.field)?;
            let predict = f.delta.unwrap_or(DeltaOp::default_for(f.ty)) == DeltaOp::Predict;
            Some((*s, s.ty.size(), m, step, predict))
        }
        _ => None,
    })
}

/// Whether `ty` has a smallest-three field.
pub(crate) fn has_rotations(ty: &EntityType) -> bool {
    rotations(ty).next().is_some()
}

/// The codes `(k, q0, q1, q2)` at `offset` of `rec`: four little-endian
/// integers of `w` bytes (4 or 8), sign-extended.
fn read(rec: &[u8], offset: usize, w: usize) -> Option<[i64; 4]> {
    let b = rec.get(offset..offset + 4 * w)?;
    let mut c = [0i64; 4];
    for (c, b) in c.iter_mut().zip(b.chunks_exact(w)) {
        let mut v = [0u8; 8];
        v[..w].copy_from_slice(b);
        let x = u64::from_le_bytes(v);
        *c = ((x << (64 - 8 * w)) as i64) >> (64 - 8 * w);
    }
    Some(c)
}

/// Writes `c` at `offset` of `rec` as four integers of `w` bytes (the low
/// bytes: wrapping at the width).
fn write(rec: &mut [u8], offset: usize, w: usize, c: [i64; 4]) {
    if let Some(b) = rec.get_mut(offset..offset + 4 * w) {
        for (b, c) in b.chunks_exact_mut(w).zip(c) {
            b.copy_from_slice(&c.to_le_bytes()[..w]);
        }
    }
}

/// A valid largest index.
fn index(k: i64) -> Option<usize> {
    (0..4).contains(&k).then_some(k as usize)
}

/// Calls `f(a_index, b_index)` for each id in both ascending id lists.
fn matched(a: &[u32], b: &[u32], mut f: impl FnMut(usize, usize)) {
    let mut j = 0;
    for (i, id) in a.iter().enumerate() {
        while b.get(j).is_some_and(|x| x < id) {
            j += 1;
        }
        if b.get(j) == Some(id) {
            f(i, j);
        }
    }
}

/// FORMAT.md 4.6 for a smallest-three field coded with `predict`: in `out`
/// (the section predicted from `b0` and `b1`, ids of `b0`), each entity
/// whose baseline and prior codes have different valid largest indices is
/// predicted in the baseline's layout: `k` of the baseline, and each code
/// extrapolated from the baseline's and the prior's re-expressed in it.
pub(crate) fn predict_rotations(
    ty: &EntityType,
    b0: &SectionRef<'_>,
    b1: &SectionRef<'_>,
    spacing: Spacing,
    out: &mut Section,
) {
    let rs = ty.record_size();
    for (slot, w, m, s, _) in rotations(ty).filter(|r| r.4) {
        let (_, records) = out.parts_mut();
        matched(b0.ids(), b1.ids(), |i, j| {
            let r0 = b0.records().get(i * rs..(i + 1) * rs);
            let r1 = b1.records().get(j * rs..(j + 1) * rs);
            let (Some(c0), Some(c1)) = (
                r0.and_then(|r| read(r, slot.offset, w)),
                r1.and_then(|r| read(r, slot.offset, w)),
            ) else {
                return;
            };
            let (Some(k0), Some(k1)) = (index(c0[0]), index(c1[0])) else {
                return;
            };
            if k0 == k1 {
                return;
            }
            let q1 = reexpress(k1, [c1[1], c1[2], c1[3]], k0, m, s, slot.ty);
            let mut p = c0;
            for (p, q1) in p[1..].iter_mut().zip(q1) {
                let e = extrapolate(*p as u64, q1 as u64, 8 * w as u32, spacing);
                *p = e as i64;
            }
            if let Some(rec) = records.get_mut(i * rs..(i + 1) * rs) {
                write(rec, slot.offset, w, p);
            }
        });
    }
}

/// FORMAT.md 9.1: in each record of `cur` whose entity `reference` (the
/// section its rows are coded against) also has, each smallest-three field
/// whose valid largest index `k` differs from the reference's valid `kr`
/// has its three codes `q` replaced by `q − reexpress(r, k) + qr` (`undo`:
/// the inverse), wrapping at the code width, so that coding them against
/// `qr` codes `q − reexpress(r, k)`. The largest index is left as it is,
/// so both ends pick the same records.
pub(crate) fn recode(ty: &EntityType, reference: &SectionRef<'_>, cur: &mut Section, undo: bool) {
    let rs = ty.record_size();
    let (ids, records) = cur.parts_mut();
    for (slot, w, m, s, _) in rotations(ty) {
        matched(ids, reference.ids(), |i, j| {
            let r = reference.records().get(j * rs..(j + 1) * rs);
            let Some(cr) = r.and_then(|r| read(r, slot.offset, w)) else {
                return;
            };
            let Some(rec) = records.get_mut(i * rs..(i + 1) * rs) else {
                return;
            };
            let Some(mut c) = read(rec, slot.offset, w) else {
                return;
            };
            let (Some(k), Some(kr)) = (index(c[0]), index(cr[0])) else {
                return;
            };
            if k == kr {
                return;
            }
            let t = reexpress(kr, [cr[1], cr[2], cr[3]], k, m, s, slot.ty);
            for ((c, t), qr) in c[1..].iter_mut().zip(t).zip(&cr[1..]) {
                *c = if undo {
                    c.wrapping_add(t).wrapping_sub(*qr)
                } else {
                    c.wrapping_sub(t).wrapping_add(*qr)
                };
            }
            write(rec, slot.offset, w, c);
        });
    }
}

/// [`recode`] on every section of `cur` (code form) that has a
/// smallest-three field, against the reference its rows are coded
/// against: the baseline, or the section predicted from the baseline and
/// `prior` over `spacing` for a type that predicts (computed into
/// `scratch`, one section per type). Nothing without a baseline.
pub(crate) fn recode_snapshot(
    schema: &crate::schema::Schema,
    cur: &mut crate::snapshot::Snapshot,
    base: Option<&crate::snapshot::Snapshot>,
    prior: Option<&crate::snapshot::Snapshot>,
    spacing: Spacing,
    scratch: &mut [Section],
    undo: bool,
) {
    let Some(base) = base else {
        return;
    };
    for (i, ty) in schema.sections().iter().enumerate() {
        if !has_rotations(ty) {
            continue;
        }
        let (Some(b0), Some(sec), Some(pred)) = (
            base.sections().get(i),
            cur.section_mut(i),
            scratch.get_mut(i),
        ) else {
            continue;
        };
        match prior
            .and_then(|p| p.sections().get(i))
            .filter(|_| ty.predicts())
        {
            Some(b1) => {
                crate::pipeline::predict::predict_spaced(
                    ty,
                    &b0.as_ref(),
                    &b1.as_ref(),
                    spacing,
                    pred,
                );
                recode(ty, &pred.as_ref(), sec, undo);
            }
            None => recode(ty, &b0.as_ref(), sec, undo),
        }
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
