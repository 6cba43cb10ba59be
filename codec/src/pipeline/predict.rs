//! Linear prediction of a baseline record from two baselines, for fields
//! coded with [`DeltaOp::Predict`](crate::DeltaOp::Predict).

#![forbid(unsafe_code)]

use crate::schema::{DeltaOp, Span};

/// Turns `rec`, a copy of record `b0`, into the record predicted from
/// `b0` and the older `b1`: `2·b0 − b1` per element on
/// [`DeltaOp::Predict`] spans, `b0` elsewhere.
pub(crate) fn predict(spans: &[Span], b1: &[u8], rec: &mut [u8]) {
    for s in spans.iter().filter(|s| s.op == DeltaOp::Predict) {
        predict_span(s, b1, rec);
    }
}

/// [`predict`] of the one span `s`, whatever its operator.
#[inline]
pub(crate) fn predict_span(s: &Span, b1: &[u8], rec: &mut [u8]) {
    let r = s.offset..s.offset + s.len;
    let (b1, o) = (&b1[r.clone()], &mut rec[r]);
    match s.width {
        1 => lanes_u8(b1, o),
        2 => lanes_u16(b1, o),
        4 => lanes_u32(b1, o),
        _ => lanes_u64(b1, o),
    }
}

/// `o = 2·o − b1` per byte lane (`o` and `b1` the same length).
#[inline(always)]
pub(crate) fn lanes_u8(b1: &[u8], o: &mut [u8]) {
    predict_n::<1>(b1, o, |a, b| [a[0].wrapping_mul(2).wrapping_sub(b[0])]);
}

/// `o = 2·o − b1` per 2-byte lane.
#[inline(always)]
pub(crate) fn lanes_u16(b1: &[u8], o: &mut [u8]) {
    predict_n::<2>(b1, o, |a, b| {
        let (a, b) = (u16::from_le_bytes(a), u16::from_le_bytes(b));
        a.wrapping_mul(2).wrapping_sub(b).to_le_bytes()
    });
}

/// `o = 2·o − b1` per 4-byte lane.
#[inline(always)]
pub(crate) fn lanes_u32(b1: &[u8], o: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    let done = super::predict_sse2::predict_u32(b1, o);
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    predict_n::<4>(&b1[done..], &mut o[done..], |a, b| {
        let (a, b) = (u32::from_le_bytes(a), u32::from_le_bytes(b));
        a.wrapping_mul(2).wrapping_sub(b).to_le_bytes()
    });
}

/// `o = 2·o − b1` per 8-byte lane.
#[inline(always)]
pub(crate) fn lanes_u64(b1: &[u8], o: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    let done = super::predict_sse2::predict_u64(b1, o);
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    predict_n::<8>(&b1[done..], &mut o[done..], |a, b| {
        let (a, b) = (u64::from_le_bytes(a), u64::from_le_bytes(b));
        a.wrapping_mul(2).wrapping_sub(b).to_le_bytes()
    });
}

/// `o = f(o, b1)` per `N`-byte element.
#[inline(always)]
fn predict_n<const N: usize>(b1: &[u8], out: &mut [u8], f: impl Fn([u8; N], [u8; N]) -> [u8; N]) {
    for (o, b) in out.chunks_exact_mut(N).zip(b1.chunks_exact(N)) {
        let mut av = [0u8; N];
        av.copy_from_slice(o);
        let mut bv = [0u8; N];
        bv.copy_from_slice(b);
        o.copy_from_slice(&f(av, bv));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_match_lane_by_lane() {
        // Spans of every width, whole 16-byte chunks or not, against the
        // prediction computed one little-endian lane at a time.
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for width in [1usize, 2, 4, 8] {
            for lanes in 1..24 {
                let len = width * lanes;
                let b0: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let b1: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let span = Span {
                    offset: 0,
                    len,
                    width,
                    op: DeltaOp::Predict,
                };
                let mut got = b0.clone();
                predict_span(&span, &b1, &mut got);
                let mask = u64::MAX >> (64 - 8 * width);
                let lane = |v: &[u8], i: usize| {
                    let mut b = [0u8; 8];
                    b[..width].copy_from_slice(&v[i * width..(i + 1) * width]);
                    u64::from_le_bytes(b)
                };
                for i in 0..lanes {
                    let want = lane(&b0, i).wrapping_mul(2).wrapping_sub(lane(&b1, i)) & mask;
                    assert_eq!(
                        lane(&got, i),
                        want,
                        "width {width}, {lanes} lanes, lane {i}"
                    );
                }
            }
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
        let mut p = b0.clone();
        predict(&s, &b1, &mut p);
        assert_eq!(p[..4], 16i32.to_le_bytes());
        assert_eq!(p[4..], [2, 0], "Int fields are not predicted");
        let b1 = u32::MAX.to_le_bytes();
        let b0 = 1u32.to_le_bytes();
        let mut p = b0;
        predict(&s[..1], &b1, &mut p);
        assert_eq!(u32::from_le_bytes(p), 3, "wrapping: 1 + (1 - MAX) = 3");
    }
}
