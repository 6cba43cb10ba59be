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
/// integers of `w` bytes (4 or 8), sign-extended. Fixed widths: a copy of
/// a variable length would call `memcpy` per element.
#[inline]
fn read(rec: &[u8], offset: usize, w: usize) -> Option<[i64; 4]> {
    if w == 4 {
        let b: &[u8; 16] = rec.get(offset..offset + 16)?.try_into().ok()?;
        let c = |i: usize| i64::from(i32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
        Some([c(0), c(4), c(8), c(12)])
    } else {
        let b: &[u8; 32] = rec.get(offset..offset + 32)?.try_into().ok()?;
        let c = |i: usize| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&b[i..i + 8]);
            i64::from_le_bytes(v)
        };
        Some([c(0), c(8), c(16), c(24)])
    }
}

/// Writes `c` at `offset` of `rec` as four integers of `w` bytes (the low
/// bytes: wrapping at the width).
fn write(rec: &mut [u8], offset: usize, w: usize, c: [i64; 4]) {
    if let Some(b) = rec.get_mut(offset..offset + 4 * w) {
        for (b, c) in b.chunks_exact_mut(w).zip(c) {
            if w == 4 {
                b.copy_from_slice(&(c as i32).to_le_bytes());
            } else {
                b.copy_from_slice(&c.to_le_bytes());
            }
        }
    }
}

/// A valid largest index.
fn index(k: i64) -> Option<usize> {
    (0..4).contains(&k).then_some(k as usize)
}

/// The predicted codes (FORMAT.md 4.6 and 9.1) of a `predict` smallest-three
/// field from its baseline codes `b` and prior codes `p`: linear on the four
/// codes when both largest indices are equal (or one is not valid), else
/// in the baseline's layout with the prior re-expressed in it.
fn predicted(
    b: [i64; 4],
    p: [i64; 4],
    spacing: Spacing,
    w: usize,
    m: i64,
    s: f64,
    ty: Primitive,
) -> [i64; 4] {
    let bits = 8 * w as u32;
    let ex = |a: i64, c: i64| {
        let e = extrapolate(a as u64, c as u64, bits, spacing);
        ((e << (64 - bits)) as i64) >> (64 - bits)
    };
    match (index(b[0]), index(p[0])) {
        (Some(kb), Some(kp)) if kb != kp => {
            let q = reexpress(kp, [p[1], p[2], p[3]], kb, m, s, ty);
            [b[0], ex(b[1], q[0]), ex(b[2], q[1]), ex(b[3], q[2])]
        }
        _ => [
            ex(b[0], p[0]),
            ex(b[1], p[1]),
            ex(b[2], p[2]),
            ex(b[3], p[3]),
        ],
    }
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
            if c0[0] == c1[0] || index(c0[0]).is_none() || index(c1[0]).is_none() {
                return;
            }
            let p = predicted(c0, c1, spacing, w, m, s, slot.ty);
            if let Some(rec) = records.get_mut(i * rs..(i + 1) * rs) {
                write(rec, slot.offset, w, p);
            }
        });
    }
}

/// FORMAT.md 9.1: in each record of `cur` whose entity the baseline `b0`
/// also has, each smallest-three field whose valid largest index `k`
/// differs from the baseline's has its three codes `q` replaced by
/// `q − reexpress(r, k) + qr` (`undo`: the inverse), wrapping at the code
/// width, with `r` the field's codes in the reference record (the
/// prediction from `b1` over `spacing` for a `predict` field of an entity
/// `b1` has, else the baseline's) when its index is valid. Coding them
/// against `qr` codes `q − reexpress(r, k)`. The largest index is left as
/// it is, so both ends pick the same records.
pub(crate) fn recode(
    ty: &EntityType,
    b0: &SectionRef<'_>,
    b1: Option<&SectionRef<'_>>,
    spacing: Spacing,
    cur: &mut Section,
    undo: bool,
) {
    let rs = ty.record_size();
    let (ids, records) = cur.parts_mut();
    for (slot, w, m, s, predict) in rotations(ty) {
        matched(ids, b0.ids(), |i, j| {
            let Some(rec) = records.get_mut(i * rs..(i + 1) * rs) else {
                return;
            };
            let base = b0.records().get(j * rs..(j + 1) * rs);
            let (Some(mut c), Some(cb)) = (
                read(rec, slot.offset, w),
                base.and_then(|r| read(r, slot.offset, w)),
            ) else {
                return;
            };
            if c[0] == cb[0] || index(cb[0]).is_none() {
                return;
            }
            let Some(k) = index(c[0]) else {
                return;
            };
            let prior = b1.filter(|_| predict).and_then(|b1| {
                let id = ids.get(i)?;
                let at = b1.ids().binary_search(id).ok()?;
                read(b1.records().get(at * rs..(at + 1) * rs)?, slot.offset, w)
            });
            let cr = match prior {
                Some(cp) => predicted(cb, cp, spacing, w, m, s, slot.ty),
                None => cb,
            };
            let Some(kr) = index(cr[0]) else {
                return;
            };
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
/// smallest-three field, against the baseline and the prior when the
/// packet names one and the type predicts. Nothing without a baseline.
pub(crate) fn recode_snapshot(
    schema: &crate::schema::Schema,
    cur: &mut crate::snapshot::Snapshot,
    base: Option<&crate::snapshot::Snapshot>,
    prior: Option<&crate::snapshot::Snapshot>,
    spacing: Spacing,
    undo: bool,
) {
    let Some(base) = base else {
        return;
    };
    for (i, ty) in schema.sections().iter().enumerate() {
        if !has_rotations(ty) {
            continue;
        }
        let (Some(b0), Some(sec)) = (base.sections().get(i), cur.section_mut(i)) else {
            continue;
        };
        let b1 = prior
            .and_then(|p| p.sections().get(i))
            .filter(|_| ty.predicts());
        recode(
            ty,
            &b0.as_ref(),
            b1.map(|s| s.as_ref()).as_ref(),
            spacing,
            sec,
            undo,
        );
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
