//! The prediction of integrated fields (FORMAT.md 4.9): for a changed row,
//! each integrated element's reference is its baseline value moved by the
//! mean of the baseline's and the current velocity (or 1) times the time
//! elapsed (or the packet's tick distance):
//!
//! `p = b + ((v_cur + v_base) / 2) · (t_cur − t_base) · scale`
//!
//! in binary64, left to right; an integer field's `p`, and over ticks a
//! float's whose baseline value is whole, is rounded to an integer (ties to
//! even), and `p` is then rounded to the element's type; when any input is
//! NaN or infinite, or the result does not fit the type, `p = b`. A row codes its integrated
//! elements' values after all its other values (the velocity and time,
//! wherever declared, are then final), so encoder and decoder compute the
//! same `p`.

use super::tokens::Token;
use crate::schema::{Integrator, Primitive};

/// The level of element `e` (FORMAT.md 4.9): 0 when it is not integrated
/// (`integrators` in element order).
#[inline]
pub(crate) fn level(integrators: &[Integrator], e: u32) -> u32 {
    integrators
        .binary_search_by_key(&e, |i| i.element)
        .map_or(0, |k| integrators[k].level)
}

/// The highest level among `integrators`.
pub(crate) fn max_level(integrators: &[Integrator]) -> u32 {
    integrators.iter().map(|i| i.level).max().unwrap_or(0)
}

/// Reorders one row's value tokens (in element order) as FORMAT.md 4.9
/// codes them: the other elements' values first, then the integrated
/// elements' by level, each part in element order.
pub(crate) fn values_last(integrators: &[Integrator], row: &mut [Token]) {
    if max_level(integrators) <= 1 {
        // One level: a stable partition. From the back, each integrated
        // token moves to just before those already moved (a row has few:
        // O(len · few)).
        let mut end = row.len();
        for i in (0..row.len()).rev() {
            if level(integrators, row[i].element) > 0 {
                row[i..end].rotate_left(1);
                end -= 1;
            }
        }
        return;
    }
    // A stable insertion sort by level (a row has few integrated
    // elements, and no allocation).
    for i in 1..row.len() {
        let l = level(integrators, row[i].element);
        let mut j = i;
        while j > 0 && level(integrators, row[j - 1].element) > l {
            j -= 1;
        }
        row[j..=i].rotate_right(1);
    }
}

/// Element `ty` of `rec` at `offset` as binary64 (`NaN` past the record).
#[inline]
fn read(rec: &[u8], offset: usize, ty: Primitive) -> f64 {
    rec.get(offset..)
        .and_then(|b| ty.to_f64(b))
        .unwrap_or(f64::NAN)
}

/// The largest whole magnitude a float of `ty` is integral up to (4.5).
fn whole_limit(ty: Primitive) -> f64 {
    if ty == Primitive::F32 {
        16_777_216.0
    } else {
        9_007_199_254_740_992.0
    }
}

/// `x` as an integer of type `ty` (little-endian in the first bytes of
/// the result), when it is a whole number the type holds.
fn integer_bytes(x: f64, ty: Primitive) -> Option<[u8; 8]> {
    let bits = 8 * ty.size() as u32;
    let signed = matches!(
        ty,
        Primitive::I8 | Primitive::I16 | Primitive::I32 | Primitive::I64
    );
    // Both bounds are powers of two, exact in binary64.
    let (lo, hi) = if signed {
        (-(2f64.powi(bits as i32 - 1)), 2f64.powi(bits as i32 - 1))
    } else {
        (0.0, 2f64.powi(bits as i32))
    };
    if !(x >= lo && x < hi) {
        return None;
    }
    let v = if signed { x as i64 as u64 } else { x as u64 };
    Some(v.to_le_bytes())
}

/// The predicted bytes of integrated element `i`, from the baseline record
/// `base` (its value, velocity and time) and the current record `cur` (its
/// velocity and time), `ticks` the packet's tick distance; `None` when the
/// prediction does not fit the element's type.
#[inline]
fn predict(i: &Integrator, base: &[u8], cur: &[u8], ticks: u16) -> Option<[u8; 8]> {
    let b = read(base, i.offset, i.ty);
    let v = match i.velocity {
        Some((vo, vt)) => (read(cur, vo, vt) + read(base, vo, vt)) / 2.0,
        None => 1.0,
    };
    let dt = match i.time {
        Some((to, tt)) => read(cur, to, tt) - read(base, to, tt),
        None => f64::from(ticks),
    };
    let mut p = b + v * dt * i.scale;
    // Over ticks (records without a time: snapped positions, such as
    // Quake 3's entity trajectories) a whole baseline value predicts a
    // whole value; an integer field always does.
    let whole =
        || b.fract() == 0.0 && b.abs() <= whole_limit(i.ty) && !(b == 0.0 && b.is_sign_negative());
    if !i.ty.is_float() || (i.time.is_none() && !i.grid && whole()) {
        // `+ 0.0` turns a rounded `-0.0` into `+0.0` (never integral).
        p = p.round_ties_even() + 0.0;
    }
    let mut out = [0u8; 8];
    match i.ty {
        Primitive::F32 => {
            let q = p as f32;
            if !q.is_finite() {
                return None;
            }
            out[..4].copy_from_slice(&q.to_le_bytes());
        }
        Primitive::F64 => {
            if !p.is_finite() {
                return None;
            }
            out.copy_from_slice(&p.to_le_bytes());
        }
        ty => out = integer_bytes(p, ty)?,
    }
    Some(out)
}

/// Writes the prediction of integrator `i` into `reference` (a copy of the
/// baseline record `base` being turned into the row's reference; where the
/// prediction does not fit it keeps the baseline's bytes), reading the
/// current velocity and time from `cur`.
#[inline]
pub(crate) fn apply(i: &Integrator, base: &[u8], cur: &[u8], ticks: u16, reference: &mut [u8]) {
    if let Some(p) = predict(i, base, cur, ticks) {
        put(i, &p, reference);
    }
}

/// Copies integrated element `i` from record `from` into record `to`.
#[inline]
pub(crate) fn copy(i: &Integrator, from: &[u8], to: &mut [u8]) {
    let r = i.offset..i.offset + i.ty.size();
    if let (Some(src), Some(dst)) = (from.get(r.clone()), to.get_mut(r)) {
        dst.copy_from_slice(src);
    }
}

/// Writes the first bytes of `p` (the element's width) at element `i` of
/// `record`, when the record holds it.
#[inline]
fn put(i: &Integrator, p: &[u8; 8], record: &mut [u8]) {
    let w = i.ty.size();
    if let Some(dst) = record.get_mut(i.offset..i.offset + w) {
        dst.copy_from_slice(&p[..w]);
    }
}

/// Writes into `reference` the reference record of a changed row: `base`
/// with every integrated element replaced by its prediction from `cur`.
pub(crate) fn reference(
    integrators: &[Integrator],
    base: &[u8],
    cur: &[u8],
    ticks: u16,
    reference: &mut [u8],
) {
    reference.copy_from_slice(base);
    for i in integrators {
        apply(i, base, cur, ticks, reference);
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
            velocity: Some((0, Primitive::F32)),
            time: Some((0, Primitive::F32)),
            scale: 1.0,
            grid: false,
            level: 1,
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
