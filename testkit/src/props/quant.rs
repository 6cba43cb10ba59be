//! Quantised schemas: quantise, encode, decode, and decode corrupted
//! packets.

use tickpack::quant::{AngleUnit, Quantize};
use tickpack::{Field, Primitive};

use super::*;

const INTS: [Primitive; 8] = [
    Primitive::U8,
    Primitive::I8,
    Primitive::U16,
    Primitive::I16,
    Primitive::U32,
    Primitive::I32,
    Primitive::U64,
    Primitive::I64,
];

/// A valid schema of 1..=2 entity types with 1..=4 fields each, every kind
/// of quantisation (fixed point with and without range and clamping,
/// smallest three, angles, bounded integers) beside plain fields, any delta
/// operator.
fn arb_quant_schema(u: &mut Unstructured<'_>) -> AResult<Schema> {
    let mut b = Schema::builder();
    for s in 0..u.int_in_range(1..=2)? {
        b = b.entity(&format!("e{s}"));
        for f in 0..u.int_in_range(1..=4)? {
            let float = *u.choose(&[Primitive::F32, Primitive::F64])?;
            let field = |ty, len, delta| Field {
                name: format!("f{f}"),
                ty,
                len,
                delta,
            };
            let delta = *u.choose(&DELTA_OPS)?;
            b = match u.int_in_range(0u8..=4)? {
                0 => {
                    let step = *u.choose(&[0.001, 0.01, 1.0 / 127.0, 0.37, 4.0])?;
                    let mut q = Quantize::step(step);
                    if u.ratio(1, 2)? {
                        let lo = -f64::from(u.int_in_range(0..=4000u32)?) * step * 100.0;
                        let hi = f64::from(u.int_in_range(1..=4000u32)?) * step * 100.0;
                        q = q.with_range(lo, hi);
                    }
                    if u.ratio(1, 2)? {
                        q = q.clamped();
                    }
                    b.field_with(field(float, u.int_in_range(1..=3)?, delta))
                        .quantize(q)
                }
                1 => b
                    .field_with(field(float, 4, delta))
                    .quantize(Quantize::smallest_three(u.int_in_range(4..=20)?)),
                2 => {
                    let unit = *u.choose(&[AngleUnit::Degrees, AngleUnit::Radians])?;
                    b.field_with(field(float, u.int_in_range(1..=2)?, delta))
                        .quantize(Quantize::angle(u.int_in_range(1..=23)?, unit))
                }
                3 => {
                    let ty = *u.choose(&INTS)?;
                    let (lo, hi) = match ty {
                        Primitive::U8 | Primitive::U16 | Primitive::U32 | Primitive::U64 => {
                            (0, i64::from(u.int_in_range(0..=255u8)?))
                        }
                        _ => (-i64::from(u.int_in_range(0..=127u8)?), 100),
                    };
                    let mut q = Quantize::int_range(lo, hi);
                    if u.ratio(1, 2)? {
                        q = q.clamped();
                    }
                    b.field_with(field(ty, u.int_in_range(1..=2)?, delta))
                        .quantize(q)
                }
                _ => b.field_with(field(*u.choose(&PRIMITIVES)?, 1, delta)),
            };
        }
    }
    match b.build() {
        Ok(s) => Ok(s),
        Err(e) => panic!("valid quantised schema rejected: {e:?}"),
    }
}

/// One element's bytes: mostly a plausible value, sometimes a float
/// special or arbitrary bits.
fn arb_element(u: &mut Unstructured<'_>, ty: Primitive, out: &mut Vec<u8>) -> AResult<()> {
    let x: f64 = match u.int_in_range(0u8..=15)? {
        0 => *u.choose(&[f64::NAN, f64::INFINITY, -0.0, 1e30, -1e30])?,
        1 => {
            for _ in 0..ty.size() {
                out.push(u.arbitrary()?);
            }
            return Ok(());
        }
        2..=5 => f64::from(u.int_in_range(-1000..=1000i32)?) / 1000.0,
        _ => f64::from(u.int_in_range(-100_000_000..=100_000_000i32)?) / 1000.0,
    };
    match ty {
        Primitive::F32 => out.extend_from_slice(&(x as f32).to_le_bytes()),
        Primitive::F64 => out.extend_from_slice(&x.to_le_bytes()),
        _ => out.extend_from_slice(&(x as i64).to_le_bytes()[..ty.size()]),
    }
    Ok(())
}

/// A snapshot of up to 8 entities per section with plausible values.
fn arb_values(u: &mut Unstructured<'_>, schema: &Schema) -> AResult<Snapshot> {
    let mut snap = Snapshot::new(schema);
    for (i, ty) in schema.sections().iter().enumerate() {
        for _ in 0..u.int_in_range(0..=8)? {
            let id = u.int_in_range(0..=20u32)?;
            let mut rec = Vec::with_capacity(ty.record_size());
            for (_, p) in ty.element_layout() {
                arb_element(u, p, &mut rec)?;
            }
            if let Some(s) = snap.section_mut(i) {
                let _ = s.insert(id, &rec);
            }
        }
    }
    Ok(snap)
}

pub(super) fn quant_roundtrip_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let schema = arb_quant_schema(u)?;
    let mut ticks = Vec::new();
    for _ in 0..2 {
        let mut s = arb_values(u, &schema)?;
        if schema.quantize(&mut s).is_err() {
            return Ok(());
        }
        let mut again = s.clone();
        assert_eq!(schema.quantize(&mut again), Ok(()));
        assert_eq!(again, s, "quantising twice changed the snapshot");
        assert_eq!(schema.check_quantized(&s), Ok(()));
        ticks.push(s);
    }
    let mut enc = Encoder::new(schema.clone());
    enc.set_checksum(u.arbitrary()?);
    let mut dec = Decoder::new(schema.clone());
    // Both ends keep each snapshot's history, which must agree.
    enc.set_keep_history(true);
    dec.set_keep_history(true);
    let key = match enc.encode(&ticks[0], 1, None) {
        Ok(p) => p,
        Err(e) => panic!("quantised keyframe refused: {e}"),
    };
    let got0 = match dec.decode(&key, None) {
        Ok((_, s)) => s,
        Err(e) => panic!("quantised keyframe does not decode: {e}"),
    };
    assert_eq!(got0, ticks[0], "keyframe decoded differently");
    let base = Baseline {
        sequence: 1,
        snapshot: &got0,
    };
    let mut delta = match enc.encode(&ticks[1], 2, Some(base)) {
        Ok(p) => p,
        Err(e) => panic!("quantised delta refused: {e}"),
    };
    match dec.decode(&delta, Some(base)) {
        Ok((_, s)) => assert_eq!(s, ticks[1], "delta decoded differently"),
        Err(e) => panic!("quantised delta does not decode: {e}"),
    }
    assert_eq!(enc.history(), dec.history(), "both ends' history");
    // Corrupted: an error, or values inside every declaration.
    for _ in 0..u.int_in_range(1..=4)? {
        if delta.is_empty() {
            break;
        }
        let at = u.int_in_range(0..=delta.len() - 1)?;
        delta[at] ^= u.int_in_range(1..=255u8)?;
    }
    if let Ok((_, s)) = dec.decode(&delta, Some(base)) {
        assert_eq!(
            schema.check_quantized(&s),
            Ok(()),
            "a corrupt packet decoded to values outside the declarations"
        );
    }
    Ok(())
}
