//! The prediction of integrated fields (FORMAT.md 4.9): for a changed row,
//! each integrated element's reference is its baseline value moved by the
//! mean of the baseline's and the current velocity times the time elapsed:
//!
//! `p = b + ((v_cur + v_base) / 2) · (t_cur − t_base) · scale`
//!
//! in binary64, left to right, rounded to the element's type; when any
//! input is NaN or infinite, or the result is not finite, `p = b`. A row
//! codes its integrated elements' values after all its other values (the
//! velocity and time, wherever declared, are then final), so encoder and
//! decoder compute the same `p`.

use super::tokens::Token;
use crate::schema::{Integrator, Primitive};

/// Whether element `e` is integrated (`integrators` in element order).
#[inline]
pub(crate) fn is_integrated(integrators: &[Integrator], e: u32) -> bool {
    integrators.binary_search_by_key(&e, |i| i.element).is_ok()
}

/// Reorders one row's value tokens (in element order) as FORMAT.md 4.9
/// codes them: the other elements' values first, then the integrated
/// elements', each part in element order.
pub(crate) fn values_last(integrators: &[Integrator], row: &mut [Token]) {
    // A stable partition: from the back, each integrated token moves to
    // just before those already moved (a row has few: O(len · few)).
    let mut end = row.len();
    for i in (0..row.len()).rev() {
        if is_integrated(integrators, row[i].element) {
            row[i..end].rotate_left(1);
            end -= 1;
        }
    }
}

/// Element `ty` of `rec` at `offset` as binary64 (`NaN` past the record).
#[inline]
fn read(rec: &[u8], offset: usize, ty: Primitive) -> f64 {
    rec.get(offset..)
        .and_then(|b| ty.to_f64(b))
        .unwrap_or(f64::NAN)
}

/// The predicted bytes of integrated element `i`, from the baseline record
/// `base` (its value, velocity and time) and the current record `cur` (its
/// velocity and time); `None` when the prediction is not finite.
#[inline]
fn predict(i: &Integrator, base: &[u8], cur: &[u8]) -> Option<[u8; 8]> {
    let (vo, vt) = i.velocity;
    let (to, tt) = i.time;
    let b = read(base, i.offset, i.ty);
    let v = (read(cur, vo, vt) + read(base, vo, vt)) / 2.0;
    let dt = read(cur, to, tt) - read(base, to, tt);
    let p = b + v * dt * i.scale;
    let mut out = [0u8; 8];
    if i.ty == Primitive::F32 {
        let q = p as f32;
        if !q.is_finite() {
            return None;
        }
        out[..4].copy_from_slice(&q.to_le_bytes());
    } else {
        if !p.is_finite() {
            return None;
        }
        out.copy_from_slice(&p.to_le_bytes());
    }
    Some(out)
}

/// Writes the prediction of integrator `i` into `reference` (a copy of the
/// baseline record `base` being turned into the row's reference; where the
/// prediction is not finite it keeps the baseline's bytes), reading the
/// current velocity and time from `cur`.
#[inline]
pub(crate) fn apply(i: &Integrator, base: &[u8], cur: &[u8], reference: &mut [u8]) {
    if let Some(p) = predict(i, base, cur) {
        put(i, &p, reference);
    }
}

/// Copies integrated element `i` from record `from` into record `to`.
#[inline]
pub(crate) fn copy(i: &Integrator, from: &[u8], to: &mut [u8]) {
    let o = i.offset;
    // Integrated elements are floats: 4 or 8 bytes, each a fixed-width
    // copy.
    if i.ty.size() == 4 {
        if let (Some(src), Some(dst)) = (from.get(o..o + 4), to.get_mut(o..o + 4)) {
            dst.copy_from_slice(src);
        }
    } else if let (Some(src), Some(dst)) = (from.get(o..o + 8), to.get_mut(o..o + 8)) {
        dst.copy_from_slice(src);
    }
}

/// Writes the first bytes of `p` (the element's width: 4 or 8) at element
/// `i` of `record`, when the record holds it.
#[inline]
fn put(i: &Integrator, p: &[u8; 8], record: &mut [u8]) {
    if i.ty.size() == 4 {
        if let Some(dst) = record.get_mut(i.offset..i.offset + 4) {
            dst.copy_from_slice(&p[..4]);
        }
    } else if let Some(dst) = record.get_mut(i.offset..i.offset + 8) {
        dst.copy_from_slice(&p[..8]);
    }
}

/// Writes into `reference` the reference record of a changed row: `base`
/// with every integrated element replaced by its prediction from `cur`.
pub(crate) fn reference(integrators: &[Integrator], base: &[u8], cur: &[u8], reference: &mut [u8]) {
    reference.copy_from_slice(base);
    for i in integrators {
        apply(i, base, cur, reference);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::values::Kind;

    #[test]
    fn values_last_moves_integrated_tokens_back_in_order() {
        let at = |element| Integrator {
            element,
            offset: 0,
            ty: Primitive::F32,
            velocity: (0, Primitive::F32),
            time: (0, Primitive::F32),
            scale: 1.0,
        };
        let integrators = [at(1), at(2), at(6)];
        let tok = |element| Token {
            element,
            kind: Kind::Int,
            value: u64::from(element),
        };
        let order = |row: &[Token]| row.iter().map(|t| t.element).collect::<Vec<_>>();
        let mut row: Vec<Token> = [0, 1, 2, 3, 5, 6, 7].map(tok).to_vec();
        values_last(&integrators, &mut row);
        assert_eq!(order(&row), [0, 3, 5, 7, 1, 2, 6]);
        let mut row: Vec<Token> = [1, 6].map(tok).to_vec();
        values_last(&integrators, &mut row);
        assert_eq!(order(&row), [1, 6]);
        let mut row: Vec<Token> = [0, 3].map(tok).to_vec();
        values_last(&integrators, &mut row);
        assert_eq!(order(&row), [0, 3]);
    }
}
