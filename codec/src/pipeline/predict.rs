//! Linear prediction of a baseline record from two baselines, for fields
//! coded with [`DeltaOp::Predict`](crate::DeltaOp::Predict) (FORMAT.md
//! 4.6): the extrapolation itself, and the rows of a predicted section,
//! whose mask is judged against the baseline while the values of changed
//! predicted elements are coded against the prediction.

use super::values::{self, BadValue, Element, FloatReference, Kind};
use super::{SectionTokens, Token};
use crate::schema::{DeltaOp, EntityType, Span};
use crate::snapshot::{Section, SectionRef};

/// The tick distances a prediction extrapolates over: `ahead` from the
/// baseline to the packet (the header's baseline distance) and `back`
/// from the prior to the baseline (its prior distance), both at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spacing {
    /// Packet sequence − baseline sequence.
    pub(crate) ahead: u16,
    /// Baseline sequence − prior sequence.
    pub(crate) back: u16,
}

impl Spacing {
    /// The spacing of a packet `sequence` against `baseline` and `prior`.
    pub(crate) fn of(sequence: u16, baseline: u16, prior: u16) -> Self {
        Self {
            ahead: sequence.wrapping_sub(baseline).max(1),
            back: baseline.wrapping_sub(prior).max(1),
        }
    }
}

/// `b0 + round((b0 − b1) · ahead / back)` on `bits`-bit lanes (the
/// difference read as a signed `bits`-bit integer, the quotient rounded to
/// nearest with ties away from zero, the sum wrapping), as a `u64`.
#[inline]
pub(crate) fn extrapolate(b0: u64, b1: u64, bits: u32, s: Spacing) -> u64 {
    let mask = u64::MAX >> (64 - bits);
    let d = b0.wrapping_sub(b1) & mask;
    // Sign-extend the `bits`-bit difference.
    let d = (d << (64 - bits)) as i64 >> (64 - bits);
    let q = if bits <= 32 {
        // |d| ≤ 2^31 and n, m < 2^15: the numerator fits 48 bits.
        let (n, m) = (i64::from(s.ahead), i64::from(s.back));
        ((2 * d.abs() * n + m) / (2 * m)) as u64
    } else {
        let (n, m) = (i128::from(s.ahead), i128::from(s.back));
        ((2 * i128::from(d).abs() * n + m) / (2 * m)) as u64
    };
    let q = if d < 0 { q.wrapping_neg() } else { q };
    b0.wrapping_add(q) & mask
}

/// The section predicted from `b0` and `b1` over `spacing`: every entity of
/// `b0`, with its predict spans [`extrapolate`]d when `b1` has its id. With
/// equal distances that is `2·b0 − b1`, computed by [`predict_section`].
/// A smallest-three field whose prior had another largest index is then
/// predicted in the baseline's layout
/// ([`predict_rotations`](crate::quant::layout::predict_rotations)).
pub(crate) fn predict_spaced(
    ty: &EntityType,
    b0: &SectionRef<'_>,
    b1: &SectionRef<'_>,
    spacing: Spacing,
    out: &mut Section,
) {
    if spacing.ahead == spacing.back {
        predict_section(ty, b0, b1, out);
    } else {
        predict_linear(ty, b0, b1, spacing, out);
    }
    crate::quant::layout::predict_rotations(ty, b0, b1, spacing, out);
}

/// [`predict_spaced`] before smallest-three layouts: the linear
/// extrapolation of every predict span, for distances that differ.
fn predict_linear(
    ty: &EntityType,
    b0: &SectionRef<'_>,
    b1: &SectionRef<'_>,
    spacing: Spacing,
    out: &mut Section,
) {
    let rs = ty.record_size();
    out.clear_for(rs);
    let (ids, records) = out.parts_mut();
    ids.extend_from_slice(b0.ids());
    records.extend_from_slice(b0.records());
    let spans = ty.spans();
    super::predict_matched(b0.ids(), b1.ids(), b1.records(), records, rs, |b1, rec| {
        for s in spans.iter().filter(|s| s.op == DeltaOp::Predict) {
            let w = s.width.clamp(1, 8);
            let r = s.offset..s.offset + s.len;
            let (Some(b1), Some(o)) = (b1.get(r.clone()), rec.get_mut(r)) else {
                continue;
            };
            for (o, b) in o.chunks_exact_mut(w).zip(b1.chunks_exact(w)) {
                let p = extrapolate(lane(o), lane(b), 8 * w as u32, spacing);
                o.copy_from_slice(&p.to_le_bytes()[..w]);
            }
        }
    });
}

/// Up to eight little-endian bytes as an integer.
#[inline]
fn lane(b: &[u8]) -> u64 {
    let mut v = [0u8; 8];
    let n = b.len().min(8);
    v[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(v)
}

/// Appends to `t` one changed row of a predicted section: the elements of
/// `cur` that differ from the baseline record `base`, each coded against
/// the predicted record `pred` (a predicted element equal to its
/// prediction has the value 0).
pub(crate) fn encode_row(
    elements: &[Element],
    cur: &[u8],
    base: &[u8],
    pred: &[u8],
    t: &mut SectionTokens,
) {
    for (i, &e) in elements.iter().enumerate() {
        let (kind, value) = if !e.float && matches!(e.op, DeltaOp::Int | DeltaOp::Predict) {
            match values::int_against(e, cur, base, pred) {
                Some(v) => (Kind::Int, v),
                None => continue,
            }
        } else {
            let r = usize::from(e.offset)..usize::from(e.offset) + usize::from(e.width);
            if values::same_at(cur, base, r) {
                continue;
            }
            // The one-step form where the element moved off its prediction.
            values::encode_changed(e, cur, pred).unwrap_or_else(|| values::encode(e, cur, pred))
        };
        t.elems.push(Token {
            element: i as u32,
            kind,
            value,
        });
    }
    t.row_end.push(t.elems.len() as u32);
}

/// Decodes value `v` of changed element `e` of a predicted row into `out`
/// (a copy of the baseline record `base`) against the predicted record
/// `pred`; `float` holds the kind bit read for a float element. A value
/// that leaves the element as the baseline has it is refused.
#[inline(always)]
pub(crate) fn decode_value(
    e: Element,
    float: Option<(FloatReference, bool)>,
    v: u64,
    pred: &[u8],
    base: &[u8],
    out: &mut [u8],
) -> Result<(), BadValue> {
    let r = usize::from(e.offset)..usize::from(e.offset) + usize::from(e.width);
    if v == 0 && e.op == DeltaOp::Predict {
        // Exactly the prediction (the value codes `cur − pred`).
        let (Some(p), Some(o)) = (pred.get(r.clone()), out.get_mut(r.clone())) else {
            return Err(BadValue);
        };
        o.copy_from_slice(p);
    } else {
        match float {
            Some((fr, integral)) => values::decode_float_changed(e, fr, integral, v, out)?,
            None => values::decode_changed(e, v, pred, out)?,
        }
    }
    if values::same_at(out, base, r) {
        return Err(BadValue);
    }
    Ok(())
}

/// Gives the kept entities of a section that [`super::decode_section`]
/// rebuilt from byte planes against the predicted section their
/// baseline records back where their rows left them unchanged, and checks
/// that each changed row differs from its baseline record (`BadMask`
/// otherwise). `base` is the baseline section, `changed` the changed set
/// (ascending kept indices) and `removed` the removed set.
pub(crate) fn planes_to_baseline(
    section: usize,
    base: &SectionRef<'_>,
    removed: &[u32],
    changed: &[u32],
    out: &mut Section,
) -> Result<(), crate::error::DecodeError> {
    let rs = base.record_size();
    let (ids, records) = out.parts_mut();
    let (mut at, mut k, mut c, mut p) = (0usize, 0u32, 0usize, 0usize);
    for (bi, &id) in base.ids().iter().enumerate() {
        if removed.get(p) == Some(&(bi as u32)) {
            p += 1;
            continue;
        }
        // Spawned ids never equal kept ones: skip to this one.
        while ids.get(at).is_some_and(|&x| x != id) {
            at += 1;
        }
        let (Some(brec), Some(orec)) = (
            base.records().get(bi * rs..(bi + 1) * rs),
            records.get_mut(at * rs..(at + 1) * rs),
        ) else {
            return Err(crate::error::DecodeError::BadEntitySet { section });
        };
        if changed.get(c) == Some(&k) {
            if orec == brec {
                return Err(crate::error::DecodeError::BadMask { section, row: c });
            }
            c += 1;
        } else {
            orec.copy_from_slice(brec);
        }
        k += 1;
        at += 1;
    }
    Ok(())
}

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
    fn spaced_extrapolation_rounds_half_away_from_zero_and_wraps() {
        let s = |ahead, back| Spacing { ahead, back };
        // Equal distances: 2·b0 − b1, wrapping.
        assert_eq!(extrapolate(13, 10, 32, s(5, 5)), 16);
        assert_eq!(extrapolate(1, u64::from(u32::MAX), 32, s(1, 1)), 3);
        // 3 over 2 ticks, 3 ahead: 4.5 rounds to 5; −4.5 to −5.
        assert_eq!(extrapolate(13, 10, 32, s(3, 2)), 18);
        assert_eq!(extrapolate(10, 13, 32, s(3, 2)), 5);
        // 1 over 3 ticks, 1 ahead: 0.33 rounds to 0.
        assert_eq!(extrapolate(7, 6, 16, s(1, 3)), 7);
        // The sum wraps at the lane's width; the difference is signed.
        assert_eq!(extrapolate(250, 240, 8, s(2, 1)), 14);
        assert_eq!(extrapolate(5, 250, 8, s(2, 1)), 27);
        assert_eq!(extrapolate(0, 1 << 63, 64, s(1, 1)), 1 << 63);
        assert_eq!(extrapolate(0, 1 << 31, 32, s(3, 1)), 1 << 31);
        let (a, b) = (u64::MAX - 1, 1);
        assert_eq!(
            extrapolate(a, b, 64, s(32767, 1)),
            a.wrapping_add((a.wrapping_sub(b)).wrapping_mul(32767))
        );
    }

    #[test]
    fn spaced_sections_match_equal_spacing_and_scale() {
        let schema = Schema::builder()
            .entity("e")
            .field("k", Primitive::U8, 1)
            .field_with(Field {
                name: "p".into(),
                ty: Primitive::I32,
                len: 2,
                delta: Some(DeltaOp::Predict),
            })
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let ty = &schema.sections()[0];
        let rec = |k: u8, a: i32, b: i32| {
            [vec![k], a.to_le_bytes().to_vec(), b.to_le_bytes().to_vec()].concat()
        };
        let sec = |rows: &[(u32, Vec<u8>)]| {
            let ids = rows.iter().map(|r| r.0).collect();
            let recs = rows.iter().flat_map(|r| r.1.clone()).collect();
            Section::from_parts(ids, recs, 9).unwrap_or_else(|_| Section::new(9))
        };
        let b1 = sec(&[(1, rec(9, 0, 100)), (3, rec(9, 0, 0))]);
        let b0 = sec(&[(1, rec(1, 10, 90)), (2, rec(2, 5, 5))]);
        let mut out = Section::new(1);
        predict_spaced(
            ty,
            &b0.as_ref(),
            &b1.as_ref(),
            Spacing { ahead: 4, back: 2 },
            &mut out,
        );
        // Entity 1 moved (10, −10) over 2 ticks: 4 ahead is (20, −20); entity 2
        // has no prior and stays; `k` is not predicted.
        assert_eq!(out, sec(&[(1, rec(1, 30, 70)), (2, rec(2, 5, 5))]));
        let mut equal = Section::new(1);
        predict_spaced(
            ty,
            &b0.as_ref(),
            &b1.as_ref(),
            Spacing { ahead: 7, back: 7 },
            &mut equal,
        );
        let mut want = Section::new(1);
        predict_section(ty, &b0.as_ref(), &b1.as_ref(), &mut want);
        assert_eq!(equal, want);
        assert_eq!(equal, sec(&[(1, rec(1, 20, 80)), (2, rec(2, 5, 5))]));
    }

    #[test]
    fn predicted_values_may_equal_the_prediction_but_not_the_baseline() {
        let e = Element {
            offset: 0,
            width: 2,
            op: DeltaOp::Predict,
            float: false,
            grid: None,
        };
        let (base, pred) = (100u16.to_le_bytes(), 110u16.to_le_bytes());
        let decode = |v: u64| {
            let mut out = base;
            decode_value(e, None, v, &pred, &base, &mut out).map(|()| u16::from_le_bytes(out))
        };
        // 0: exactly the prediction; zigzag 3 is −2 from it.
        assert_eq!(decode(0), Ok(110));
        assert_eq!(decode(3), Ok(108));
        // −10 from the prediction is the baseline: not a change.
        assert_eq!(decode(19), Err(BadValue));
        // The encoder's side: moved as predicted codes 0, stopped is no change.
        let mut t = SectionTokens::default();
        encode_row(&[e], &pred, &base, &pred, &mut t);
        encode_row(&[e], &base, &base, &pred, &mut t);
        assert_eq!(t.elems.len(), 1);
        assert_eq!(t.elems[0].value, 0);
        assert_eq!(t.row_end, [1, 1]);
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
