//! Codes to values of an `f32` smallest-three slot, record by record, with
//! the field type known: the same values, the same canonical test and the
//! same refusals as [`super::plan`]'s slot loop on [`super::quat`].

#![forbid(unsafe_code)]

use super::quat;
use crate::schema::Primitive;

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
        let canonical = (v[k as usize] / s).abs() > m as f64 + 0.5
            || (0..k as usize).all(|k2| quat::codes_at(&v, k2, m, s, Primitive::F32).is_none());
        if !canonical {
            return Err((i, 0));
        }
        for (e, c) in v.iter().enumerate() {
            let b = (*c as f32).to_le_bytes();
            field[4 * e..4 * e + 4].copy_from_slice(&b);
        }
    }
    Ok(())
}

/// [`quat::value`] for `f32` fields.
#[inline(always)]
fn value(k: usize, q: [i64; 3], s: f64) -> [f64; 4] {
    let c = q.map(|q| f64::from((q as f64 * s) as f32));
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
    use super::*;

    #[test]
    fn matches_the_slot_loop() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
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
                                let r = [0, 1, 2, 3]
                                    .map(|_| (next() >> 11) as f64 / 2f64.powi(52) - 1.0);
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
                        let mut want = records.clone();
                        let w = plan::slot_from_codes::<F32>(&slot, &mut want, rs);
                        let mut got = records.clone();
                        let g = from_codes(offset, m, s, &mut got, rs);
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
}
