//! Linear prediction of a baseline record from two baselines, for fields
//! coded with [`DeltaOp::Predict`](crate::DeltaOp::Predict).

use crate::schema::{DeltaOp, EntityType, Span};
use crate::snapshot::{Section, SectionRef};

/// [`super::predict_section`]: the same section, bit for bit. A type whose
/// one predicted span is of 4-byte lanes and at most 64 bytes long (the
/// usual positions, rotations and velocities) is predicted with the span's
/// length known at compile time, in the loop that matches the ids; any
/// other type goes to [`super::predict_section`].
pub(crate) fn predict_section(
    ty: &EntityType,
    b0: &SectionRef<'_>,
    b1: &SectionRef<'_>,
    out: &mut Section,
) {
    let mut predicted = ty.spans().iter().filter(|s| s.op == DeltaOp::Predict);
    let (Some(s), None) = (predicted.next(), predicted.next()) else {
        return super::predict_section(ty, b0, b1, out);
    };
    let rs = ty.record_size();
    if s.width != 4 || s.offset + s.len > rs {
        return super::predict_section(ty, b0, b1, out);
    }
    let o = s.offset;
    match s.len {
        4 => fixed_span::<4>(o, rs, b0, b1, out),
        8 => fixed_span::<8>(o, rs, b0, b1, out),
        12 => fixed_span::<12>(o, rs, b0, b1, out),
        16 => fixed_span::<16>(o, rs, b0, b1, out),
        20 => fixed_span::<20>(o, rs, b0, b1, out),
        24 => fixed_span::<24>(o, rs, b0, b1, out),
        28 => fixed_span::<28>(o, rs, b0, b1, out),
        32 => fixed_span::<32>(o, rs, b0, b1, out),
        36 => fixed_span::<36>(o, rs, b0, b1, out),
        40 => fixed_span::<40>(o, rs, b0, b1, out),
        44 => fixed_span::<44>(o, rs, b0, b1, out),
        48 => fixed_span::<48>(o, rs, b0, b1, out),
        52 => fixed_span::<52>(o, rs, b0, b1, out),
        56 => fixed_span::<56>(o, rs, b0, b1, out),
        60 => fixed_span::<60>(o, rs, b0, b1, out),
        64 => fixed_span::<64>(o, rs, b0, b1, out),
        _ => super::predict_section(ty, b0, b1, out),
    }
}

/// [`predict_section`] of a type whose one predicted span is the `B` bytes
/// of 4-byte lanes at `offset` (`offset + B <= rs`): `out` is `b0` with
/// the span of each record whose id `b1` also has replaced by `2·b0 − b1`.
/// One function per length, kept out of line (fewer instructions measured
/// on the quantised scenarios than inlined into the dispatch). Spans of up
/// to 40 bytes take their lanes by constant indices; longer ones the SSE2
/// lanes of [`lanes_u32`] (half the instructions on a 48-byte span).
#[inline(never)]
fn fixed_span<const B: usize>(
    offset: usize,
    rs: usize,
    b0: &SectionRef<'_>,
    b1: &SectionRef<'_>,
    out: &mut Section,
) {
    out.clear_for(rs);
    let (ids, records) = out.parts_mut();
    ids.extend_from_slice(b0.ids());
    records.extend_from_slice(b0.records());
    let (b1_ids, b1_records) = (b1.ids(), b1.records());
    let span = offset..offset + B;
    let mut j = 0;
    for (&id, rec) in ids.iter().zip(records.chunks_exact_mut(rs.max(1))) {
        while b1_ids.get(j).is_some_and(|&b| b < id) {
            j += 1;
        }
        if b1_ids.get(j) != Some(&id) {
            continue;
        }
        let b = b1_records
            .get(j * rs..(j + 1) * rs)
            .and_then(|r| r.get(span.clone()));
        let (Some(b), Some(o)) = (b, rec.get_mut(span.clone())) else {
            continue;
        };
        let (Ok(b), Ok(o)) = (<&[u8; B]>::try_from(b), <&mut [u8; B]>::try_from(o)) else {
            continue;
        };
        if B > 40 {
            lanes_u32(b, o);
        } else {
            lanes_fixed(b, o);
        }
    }
}

/// `o = 2·o − b1` per 4-byte lane of `B` bytes (`B` a multiple of 4), by
/// constant indices (the loop unrolls into vector operations).
#[inline(always)]
fn lanes_fixed<const B: usize>(b1: &[u8; B], o: &mut [u8; B]) {
    let mut k = 0;
    while k + 4 <= B {
        let a = u32::from_le_bytes([o[k], o[k + 1], o[k + 2], o[k + 3]]);
        let b = u32::from_le_bytes([b1[k], b1[k + 1], b1[k + 2], b1[k + 3]]);
        let [v0, v1, v2, v3] = a.wrapping_mul(2).wrapping_sub(b).to_le_bytes();
        (o[k], o[k + 1], o[k + 2], o[k + 3]) = (v0, v1, v2, v3);
        k += 4;
    }
}

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
    use crate::schema::{Field, Primitive, Schema};

    /// A section of `n` records of `rs` bytes with ids picked from
    /// `0..3n` (ascending), random bytes.
    fn section(next: &mut impl FnMut() -> u64, n: usize, rs: usize) -> Section {
        let mut ids = Vec::new();
        let mut id = 0u32;
        while ids.len() < n {
            id += 1 + (next() % 3) as u32;
            ids.push(id);
        }
        let records = (0..n * rs).map(|_| next() as u8).collect();
        Section::from_parts(ids, records, rs).unwrap_or_else(|_| Section::new(rs))
    }

    #[test]
    fn fixed_spans_match_the_section_prediction() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let predicted = |name: &str, ty: Primitive, len: usize| Field {
            name: name.into(),
            ty,
            len,
            delta: Some(DeltaOp::Predict),
        };
        // (bytes before, predicted f32 lanes, bytes after, a second
        // predicted field): lengths with and without a fixed span.
        let mut layouts = Vec::new();
        for lanes in 1..=17 {
            layouts.push((0, lanes, 0, false));
            layouts.push((3, lanes, 5, false));
        }
        layouts.push((1, 3, 2, true));
        let mut schemas: Vec<Schema> = layouts
            .iter()
            .map(|&(before, lanes, after, second)| {
                let mut b = Schema::builder().entity("e");
                if before > 0 {
                    b = b.field("a", Primitive::U8, before);
                }
                b = b.field_with(predicted("p", Primitive::F32, lanes));
                if after > 0 {
                    b = b.field("z", Primitive::U8, after);
                }
                if second {
                    b = b.field("i", Primitive::U16, 1).field_with(predicted(
                        "q",
                        Primitive::F32,
                        2,
                    ));
                }
                b.build().unwrap_or_else(|e| panic!("{e}"))
            })
            .collect();
        schemas.push(
            Schema::builder()
                .entity("e")
                .field_with(predicted("p", Primitive::F64, 3))
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        );
        let mut fast_types = 0;
        for schema in &schemas {
            let ty = &schema.sections()[0];
            let rs = ty.record_size();
            let spans: Vec<_> = ty
                .spans()
                .iter()
                .filter(|s| s.op == DeltaOp::Predict)
                .collect();
            if spans.len() == 1 && spans[0].width == 4 && spans[0].len <= 64 {
                fast_types += 1;
            }
            for n0 in [0usize, 1, 15, 16, 17, 40] {
                for n1 in [0usize, 1, 16, 17, 40] {
                    let b0 = section(&mut next, n0, rs);
                    let b1 = section(&mut next, n1, rs);
                    let mut want = Section::new(1);
                    super::super::predict_section(ty, &b0.as_ref(), &b1.as_ref(), &mut want);
                    let mut got = Section::new(1);
                    predict_section(ty, &b0.as_ref(), &b1.as_ref(), &mut got);
                    assert_eq!(got, want, "{:?} {n0} {n1}", ty.spans());
                    // Predicted records differ from `b0` somewhere.
                    if n0 == 40 && n1 == 40 {
                        assert_ne!(got.records(), b0.records());
                    }
                }
            }
        }
        assert_eq!(fast_types, 32);
    }

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
