//! Values to codes and codes to values of an `f32` smallest-three slot,
//! record by record, with the field type known: the same codes, values,
//! canonical test and refusals as [`super::plan`]'s slot loops on
//! [`super::quat`].

use super::quat::OTHERS;
use super::scalar::rne;

/// The `f32` value of four bytes, widened.
#[inline(always)]
fn word(b: &[u8; 16], at: usize) -> f64 {
    f64::from(f32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
}

/// The `i32` code of four bytes, widened.
#[inline(always)]
fn code(b: &[u8; 16], at: usize) -> i64 {
    i64::from(i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
}

/// Replaces the codes `(k, q0, q1, q2)` of the `f32` smallest-three slot
/// at `offset` of each record of `records` (`rs` bytes each, `offset + 16
/// <= rs`) by the quaternion's four components, for `m` and component
/// step `s`. `Err((record, element))` names the first record whose codes
/// are refused: `k` outside `0..4` (element 0), a `q_j` beyond `m`
/// (element `j + 1`) or codes that are not canonical (element 0).
pub(super) fn from_codes(
    offset: usize,
    m: i64,
    s: f64,
    records: &mut [u8],
    rs: usize,
) -> Result<(), (usize, usize)> {
    for (i, rec) in records.chunks_exact_mut(rs.max(1)).enumerate() {
        let field: &mut [u8; 16] = match rec
            .get_mut(offset..offset + 16)
            .and_then(|f| f.try_into().ok())
        {
            Some(f) => f,
            None => continue,
        };
        let k = code(field, 0);
        if !(0..4).contains(&k) {
            return Err((i, 0));
        }
        let q = [code(field, 4), code(field, 8), code(field, 12)];
        if let Some(j) = q.iter().position(|c| c.unsigned_abs() > m.unsigned_abs()) {
            return Err((i, j + 1));
        }
        let v = value(k as usize, q, s);
        if !beyond_codes(v[k as usize], m, s) && lower_index_codes(&v, k as usize, m, s) {
            return Err((i, 0));
        }
        for (e, c) in v.iter().enumerate() {
            let b = (*c as f32).to_le_bytes();
            field[4 * e..4 * e + 4].copy_from_slice(&b);
        }
    }
    Ok(())
}

/// Replaces the four components of the `f32` smallest-three slot at
/// `offset` of each record of `records` (`rs` bytes each, `offset + 16 <=
/// rs`) by their canonical codes `(k, q0, q1, q2)`, for `m` and component
/// step `s`. `Err((record, 0))` names the first record whose components
/// are not a quantised quaternion.
pub(super) fn to_codes(
    offset: usize,
    m: i64,
    s: f64,
    records: &mut [u8],
    rs: usize,
) -> Result<(), (usize, usize)> {
    for (i, rec) in records.chunks_exact_mut(rs.max(1)).enumerate() {
        let field: &mut [u8; 16] = match rec
            .get_mut(offset..offset + 16)
            .and_then(|f| f.try_into().ok())
        {
            Some(f) => f,
            None => continue,
        };
        let x = [
            word(field, 0),
            word(field, 4),
            word(field, 8),
            word(field, 12),
        ];
        let Some((k, q)) = code_of(&x, m, s) else {
            return Err((i, 0));
        };
        for (e, c) in [k as i64, q[0], q[1], q[2]].iter().enumerate() {
            let b = (*c as i32).to_le_bytes();
            field[4 * e..4 * e + 4].copy_from_slice(&b);
        }
    }
    Ok(())
}

/// Whether an index below `k` has codes that reproduce `v` (then codes
/// with index `k` are not canonical). Out of line: a quaternion whose
/// rebuilt component is beyond the codes skips it.
#[inline(never)]
fn lower_index_codes(v: &[f64; 4], k: usize, m: i64, s: f64) -> bool {
    (0..k).any(|k2| codes_at(v, k2, m, s).is_some())
}

/// [`quat::code_of`](super::quat) for `f32` fields.
#[inline(always)]
fn code_of(x: &[f64; 4], m: i64, s: f64) -> Option<(usize, [i64; 3])> {
    for k in 0..4 {
        if beyond_codes(x[k], m, s) {
            return codes_at(x, k, m, s).map(|q| (k, q));
        }
    }
    for k in 0..4 {
        if let Some(q) = codes_at(x, k, m, s) {
            return Some((k, q));
        }
    }
    None
}

/// [`quat::beyond_codes`](super::quat).
#[inline(always)]
fn beyond_codes(c: f64, m: i64, s: f64) -> bool {
    (c / s).abs() > m as f64 + 0.5
}

/// [`quat::codes_at`](super::quat) for `f32` fields.
#[inline(always)]
fn codes_at(x: &[f64; 4], k: usize, m: i64, s: f64) -> Option<[i64; 3]> {
    if x[k].is_sign_negative() {
        return None;
    }
    let mut q = [0i64; 3];
    for (qj, &i) in q.iter_mut().zip(OTHERS.get(k)?) {
        let c = x[i];
        let r = rne(c / s);
        if r.is_nan() || r.abs() > m as f64 || f64::from((r * s) as f32).to_bits() != c.to_bits() {
            return None;
        }
        *qj = r as i64;
    }
    let v = value(k, q, s);
    v.iter()
        .zip(x)
        .all(|(a, b)| a.to_bits() == b.to_bits())
        .then_some(q)
}

/// [`quat::value`](super::quat) for `f32` fields.
#[inline(always)]
fn value(k: usize, q: [i64; 3], s: f64) -> [f64; 4] {
    let c = [
        f64::from((q[0] as f64 * s) as f32),
        f64::from((q[1] as f64 * s) as f32),
        f64::from((q[2] as f64 * s) as f32),
    ];
    let sum = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
    let l = f64::from((1.0 - sum).max(0.0).sqrt() as f32);
    match k {
        0 => [l, c[0], c[1], c[2]],
        1 => [c[0], l, c[1], c[2]],
        2 => [c[0], c[1], l, c[2]],
        _ => [c[0], c[1], c[2], l],
    }
}

#[cfg(test)]
mod tests {
    use super::super::float::F32;
    use super::super::plan::{self, Kind, Slot};
    use super::super::quat;
    use super::*;
    use crate::schema::Primitive;

    /// A xorshift generator seeded with `x`.
    fn rng(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// For bit widths 4, 10, 16 and 20, slots at offsets that are and are
    /// not multiples of 4 in records of 16 to 40 bytes, and 0, 1, 15, 16,
    /// 17 and 64 records, 20 rounds each: records of random bytes that
    /// `fill(next, m, s, offset, round, records, rs)` writes the slots of, then
    /// `fast` against `reference` on copies of them (the same result, and
    /// the same records when accepted). Both accepted and refused records
    /// must occur.
    fn compare(
        next: &mut impl FnMut() -> u64,
        mut fill: impl FnMut(&mut dyn FnMut() -> u64, i64, f64, usize, usize, &mut [u8], usize),
        reference: impl Fn(&Slot, &mut [u8], usize) -> Result<(), (usize, usize)>,
        fast: impl Fn(usize, i64, f64, &mut [u8], usize) -> Result<(), (usize, usize)>,
    ) {
        let (mut ok, mut refused) = (0, 0);
        for bits in [4u8, 10, 16, 20] {
            let Ok(Kind::Quat { m, s }) = quat::check(bits) else {
                panic!("smallest_three {bits}");
            };
            for (offset, rs) in [(0usize, 16usize), (3, 20), (7, 23), (16, 40)] {
                let slot = Slot {
                    field: 0,
                    offset,
                    ty: Primitive::F32,
                    len: 4,
                    kind: Kind::Quat { m, s },
                };
                for n in [0usize, 1, 15, 16, 17, 64] {
                    for round in 0..20 {
                        let mut records: Vec<u8> = (0..n * rs).map(|_| next() as u8).collect();
                        fill(next, m, s, offset, round, &mut records, rs);
                        let mut want = records.clone();
                        let w = reference(&slot, &mut want, rs);
                        let mut got = records.clone();
                        let g = fast(offset, m, s, &mut got, rs);
                        assert_eq!(g, w, "{bits} {offset} {rs} {n}");
                        if let Ok(()) = w {
                            assert_eq!(got, want, "{bits} {offset} {rs} {n}");
                            ok += 1;
                        } else {
                            refused += 1;
                        }
                    }
                }
            }
        }
        assert!(ok > 100 && refused > 100, "{ok} {refused}");
    }

    #[test]
    fn matches_the_slot_loop() {
        compare(
            &mut rng(0x2545_f491_4f6c_dd1d),
            |next, m, s, offset, round, records, rs| {
                for rec in records.chunks_exact_mut(rs) {
                    let v = next();
                    // Mostly valid codes: canonical values of
                    // quantised quaternions, or any codes within
                    // `m`; some refused on purpose.
                    let k = match v % 16 {
                        0 => [-1i64, 4, i64::from(i32::MIN)][(v >> 8) as usize % 3],
                        _ => (v >> 4) as i64 % 4,
                    };
                    let q = [0, 1, 2].map(|_| {
                        let w = next();
                        match w % 8 {
                            0 => m + 1 - 2 * (m + 1) * ((w >> 3) % 2) as i64,
                            1 => 0,
                            2 => m - ((w >> 3) % 2 * 2 * m as u64) as i64,
                            _ => ((w >> 3) % (2 * m as u64 + 1)) as i64 - m,
                        }
                    });
                    let (k, q) = if round % 2 == 0 && v % 16 != 0 {
                        let r = [0, 1, 2, 3].map(|_| (next() >> 11) as f64 / 2f64.powi(52) - 1.0);
                        match quat::quantize(&r, m, s, Primitive::F32)
                            .and_then(|v| quat::code_of(&v, m, s, Primitive::F32))
                        {
                            Some((k, q)) => (k as i64, q),
                            None => (k, q),
                        }
                    } else {
                        (k, q)
                    };
                    for (e, c) in [k, q[0], q[1], q[2]].iter().enumerate() {
                        let at = offset + 4 * e;
                        rec[at..at + 4].copy_from_slice(&(*c as i32).to_le_bytes());
                    }
                }
            },
            plan::slot_from_codes::<F32>,
            from_codes,
        );
    }

    #[test]
    fn values_to_codes_match_the_slot_loop() {
        compare(
            &mut rng(0x9e37_79b9_7f4a_7c15),
            |next, m, s, offset, _, records, rs| {
                for rec in records.chunks_exact_mut(rs) {
                    let v = next();
                    let r = [0, 1, 2, 3].map(|_| {
                        let w = next();
                        match w % 8 {
                            // Ties between components, zeros.
                            0 => core::f64::consts::FRAC_1_SQRT_2,
                            1 => 0.0,
                            2 => -0.0,
                            _ => (w >> 11) as f64 / 2f64.powi(52) - 1.0,
                        }
                    });
                    let mut c = quat::quantize(&r, m, s, Primitive::F32)
                        .unwrap_or([0.0, 0.0, 0.0, 1.0])
                        .map(|c| (c as f32).to_bits());
                    // Most stay quantised; some are moved off by
                    // an ulp, negated or replaced by specials.
                    let e = (v >> 8) as usize % 4;
                    match v % 32 {
                        0 => c[e] = c[e].wrapping_add(1),
                        1 => c[e] = c[e].wrapping_sub(1),
                        2 => c[e] ^= 0x8000_0000,
                        3 => c = c.map(|c| c ^ 0x8000_0000),
                        4 => c[e] = [0x7fc0_0000, 0x7f80_0000, 0xff80_0000, 0][e],
                        5 => c[e] = (v >> 32) as u32,
                        _ => {}
                    }
                    for (e, c) in c.iter().enumerate() {
                        let at = offset + 4 * e;
                        rec[at..at + 4].copy_from_slice(&c.to_le_bytes());
                    }
                }
            },
            plan::slot_to_codes::<F32>,
            to_codes,
        );
    }
}
