//! Delta operators, applied to one record against a reference record (the
//! baseline's record of the same entity, or the previous spawned entity's).
//! See [`DeltaOp`](crate::DeltaOp).

#![forbid(unsafe_code)]

use crate::schema::{DeltaOp, Span};

/// Writes the delta of `cur` against `reference` into `out` (all one record long).
pub(crate) fn encode(spans: &[Span], cur: &[u8], reference: &[u8], out: &mut [u8]) {
    for s in spans {
        let r = s.offset..s.offset + s.len;
        let (c, b, o) = (&cur[r.clone()], &reference[r.clone()], &mut out[r]);
        match s.op {
            DeltaOp::Sub => {
                for ((o, &c), &b) in o.iter_mut().zip(c).zip(b) {
                    *o = c.wrapping_sub(b);
                }
            }
            DeltaOp::Xor => {
                for ((o, &c), &b) in o.iter_mut().zip(c).zip(b) {
                    *o = c ^ b;
                }
            }
            DeltaOp::None => o.copy_from_slice(c),
            // The reference of a Predict span is already the prediction.
            DeltaOp::Int | DeltaOp::Predict => int_encode(s.width, c, b, o),
        }
    }
}

/// Inverse of [`encode`]: rebuilds `out` from `delta` and `reference`.
pub(crate) fn decode(spans: &[Span], delta: &[u8], reference: &[u8], out: &mut [u8]) {
    for s in spans {
        let r = s.offset..s.offset + s.len;
        let (d, b, o) = (&delta[r.clone()], &reference[r.clone()], &mut out[r]);
        match s.op {
            DeltaOp::Sub => {
                for ((o, &d), &b) in o.iter_mut().zip(d).zip(b) {
                    *o = d.wrapping_add(b);
                }
            }
            DeltaOp::Xor => {
                for ((o, &d), &b) in o.iter_mut().zip(d).zip(b) {
                    *o = d ^ b;
                }
            }
            DeltaOp::None => o.copy_from_slice(d),
            DeltaOp::Int | DeltaOp::Predict => int_decode(s.width, d, b, o),
        }
    }
}

/// Writes into `out` the record predicted from `b0` and the older `b1`:
/// `2·b0 − b1` per element on [`DeltaOp::Predict`] spans, `b0` elsewhere.
pub(crate) fn predict(spans: &[Span], b0: &[u8], b1: &[u8], out: &mut [u8]) {
    out.copy_from_slice(b0);
    for s in spans.iter().filter(|s| s.op == DeltaOp::Predict) {
        let r = s.offset..s.offset + s.len;
        let (b0, b1, o) = (&b0[r.clone()], &b1[r.clone()], &mut out[r]);
        match s.width {
            1 => predict_n::<1>(b0, b1, o, |a, b| [a[0].wrapping_mul(2).wrapping_sub(b[0])]),
            2 => predict_n::<2>(b0, b1, o, |a, b| {
                let (a, b) = (u16::from_le_bytes(a), u16::from_le_bytes(b));
                a.wrapping_mul(2).wrapping_sub(b).to_le_bytes()
            }),
            4 => predict_n::<4>(b0, b1, o, |a, b| {
                let (a, b) = (u32::from_le_bytes(a), u32::from_le_bytes(b));
                a.wrapping_mul(2).wrapping_sub(b).to_le_bytes()
            }),
            _ => predict_n::<8>(b0, b1, o, |a, b| {
                let (a, b) = (u64::from_le_bytes(a), u64::from_le_bytes(b));
                a.wrapping_mul(2).wrapping_sub(b).to_le_bytes()
            }),
        }
    }
}

fn predict_n<const N: usize>(
    b0: &[u8],
    b1: &[u8],
    out: &mut [u8],
    f: impl Fn([u8; N], [u8; N]) -> [u8; N],
) {
    for ((o, a), b) in out
        .chunks_exact_mut(N)
        .zip(b0.chunks_exact(N))
        .zip(b1.chunks_exact(N))
    {
        let mut av = [0u8; N];
        av.copy_from_slice(a);
        let mut bv = [0u8; N];
        bv.copy_from_slice(b);
        o.copy_from_slice(&f(av, bv));
    }
}

macro_rules! int_ops {
    ($enc:ident, $dec:ident, $u:ty, $i:ty, $n:expr) => {
        #[inline]
        fn $enc(c: &[u8], b: &[u8], o: &mut [u8]) {
            for ((o, c), b) in o.chunks_exact_mut($n).zip(c.chunks_exact($n)).zip(b.chunks_exact($n)) {
                let mut cv = [0u8; $n];
                cv.copy_from_slice(c);
                let mut bv = [0u8; $n];
                bv.copy_from_slice(b);
                let d = <$u>::from_le_bytes(cv).wrapping_sub(<$u>::from_le_bytes(bv));
                let z = (d << 1) ^ (((d as $i) >> ($n * 8 - 1)) as $u);
                o.copy_from_slice(&z.to_le_bytes());
            }
        }
        #[inline]
        fn $dec(d: &[u8], b: &[u8], o: &mut [u8]) {
            for ((o, d), b) in o.chunks_exact_mut($n).zip(d.chunks_exact($n)).zip(b.chunks_exact($n)) {
                let mut dv = [0u8; $n];
                dv.copy_from_slice(d);
                let mut bv = [0u8; $n];
                bv.copy_from_slice(b);
                let z = <$u>::from_le_bytes(dv);
                let v = (z >> 1) ^ (z & 1).wrapping_neg();
                o.copy_from_slice(&v.wrapping_add(<$u>::from_le_bytes(bv)).to_le_bytes());
            }
        }
    };
}

int_ops!(enc1, dec1, u8, i8, 1);
int_ops!(enc2, dec2, u16, i16, 2);
int_ops!(enc4, dec4, u32, i32, 4);
int_ops!(enc8, dec8, u64, i64, 8);

fn int_encode(width: usize, c: &[u8], b: &[u8], o: &mut [u8]) {
    match width {
        1 => enc1(c, b, o),
        2 => enc2(c, b, o),
        4 => enc4(c, b, o),
        _ => enc8(c, b, o),
    }
}

fn int_decode(width: usize, d: &[u8], b: &[u8], o: &mut [u8]) {
    match width {
        1 => dec1(d, b, o),
        2 => dec2(d, b, o),
        4 => dec4(d, b, o),
        _ => dec8(d, b, o),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spans() -> impl Strategy<Value = Vec<Span>> {
        proptest::collection::vec(
            (
                prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
                1usize..4,
                0u8..4,
            ),
            1..6,
        )
        .prop_map(|v| {
            let mut off = 0;
            v.into_iter()
                .map(|(w, n, op)| {
                    let s = Span {
                        offset: off,
                        len: w * n,
                        width: w,
                        op: [
                            DeltaOp::Sub,
                            DeltaOp::Xor,
                            DeltaOp::Int,
                            DeltaOp::None,
                            DeltaOp::Predict,
                        ][op as usize],
                    };
                    off += w * n;
                    s
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn inverse(spans in spans(), seed: u64) {
            let len: usize = spans.iter().map(|s| s.len).sum();
            let mut x = seed | 1;
            let mut rnd = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 };
            let cur: Vec<u8> = (0..len).map(|_| rnd()).collect();
            let base: Vec<u8> = (0..len).map(|_| rnd()).collect();
            let mut d = vec![0; len];
            encode(&spans, &cur, &base, &mut d);
            let mut back = vec![0xff; len];
            decode(&spans, &d, &base, &mut back);
            prop_assert_eq!(back, cur);
        }
    }

    #[test]
    fn prediction_is_linear_and_wraps() {
        let s = [
            Span {
                offset: 0,
                len: 4,
                width: 4,
                op: DeltaOp::Predict,
            },
            Span {
                offset: 4,
                len: 2,
                width: 2,
                op: DeltaOp::Int,
            },
        ];
        let b1: Vec<u8> = [10i32.to_le_bytes().to_vec(), vec![1, 0]].concat();
        let b0: Vec<u8> = [13i32.to_le_bytes().to_vec(), vec![2, 0]].concat();
        let mut p = [0u8; 6];
        predict(&s, &b0, &b1, &mut p);
        assert_eq!(p[..4], 16i32.to_le_bytes());
        assert_eq!(p[4..], [2, 0], "Int fields are not predicted");
        let b1 = u32::MAX.to_le_bytes();
        let b0 = 1u32.to_le_bytes();
        let mut p = [0u8; 4];
        predict(&s[..1], &b0, &b1, &mut p);
        assert_eq!(u32::from_le_bytes(p), 3, "wrapping: 1 + (1 - MAX) = 3");
    }

    #[test]
    fn int_zigzag_small_changes_leave_high_bytes_zero() {
        let s = [Span {
            offset: 0,
            len: 4,
            width: 4,
            op: DeltaOp::Int,
        }];
        let mut d = [0; 4];
        encode(&s, &(-3i32).to_le_bytes(), &0i32.to_le_bytes(), &mut d);
        assert_eq!(d, [5, 0, 0, 0]);
        encode(&s, &256i32.to_le_bytes(), &255i32.to_le_bytes(), &mut d);
        assert_eq!(d, [2, 0, 0, 0]);
    }
}
