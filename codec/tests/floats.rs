//! Floats are bytes: every bit pattern survives, NaN payloads included.
#![allow(clippy::unwrap_used)]

mod common;

use tickpack::{DeltaOp, Field, Primitive, Schema, Snapshot};

fn specials32() -> Vec<u32> {
    vec![
        0.0f32.to_bits(),
        (-0.0f32).to_bits(),
        f32::INFINITY.to_bits(),
        f32::NEG_INFINITY.to_bits(),
        f32::NAN.to_bits(),
        0x7fc0_1234, // quiet NaN with payload
        0x7f80_0001, // signalling NaN
        0xffff_ffff, // negative NaN, all payload bits
        0x0000_0001, // smallest subnormal
        0x807f_ffff, // largest negative subnormal
        f32::MIN_POSITIVE.to_bits(),
        f32::MAX.to_bits(),
        1.5f32.to_bits(),
    ]
}

fn specials64() -> Vec<u64> {
    vec![
        0.0f64.to_bits(),
        (-0.0f64).to_bits(),
        f64::INFINITY.to_bits(),
        f64::NAN.to_bits(),
        0x7ff8_0000_dead_beef,
        0x7ff0_0000_0000_0001,
        0xffff_ffff_ffff_ffff,
        1,
        0x800f_ffff_ffff_ffff,
        f64::MAX.to_bits(),
    ]
}

#[test]
fn every_special_value_every_operator() {
    for op in [DeltaOp::Sub, DeltaOp::Xor, DeltaOp::Int, DeltaOp::None] {
        let schema = Schema::builder()
            .entity("f")
            .field_with(Field {
                name: "a".into(),
                ty: Primitive::F32,
                len: 1,
                delta: Some(op),
            })
            .field_with(Field {
                name: "b".into(),
                ty: Primitive::F64,
                len: 1,
                delta: Some(op),
            })
            .build()
            .unwrap();
        let (s32, s64) = (specials32(), specials64());
        let mut ticks = Vec::new();
        // Each tick rotates which special value every entity holds, so every
        // value is coded against every other as baseline.
        for t in 0..s32.len() {
            let mut snap = Snapshot::new(&schema);
            for e in 0..s32.len() {
                let mut rec = s32[(e + t) % s32.len()].to_le_bytes().to_vec();
                rec.extend_from_slice(&s64[(e + t) % s64.len()].to_le_bytes());
                snap.section_mut(0).unwrap().insert(e as u32, &rec).unwrap();
            }
            ticks.push(snap);
        }
        common::roundtrip(&schema, &ticks[0], 0, None, None);
        for t in 1..ticks.len() {
            let p = common::roundtrip(
                &schema,
                &ticks[t],
                t as u16,
                Some((t as u16 - 1, &ticks[t - 1])),
                None,
            );
            let (_, got) = tickpack::decode(
                &schema,
                &p,
                Some(tickpack::Baseline {
                    sequence: t as u16 - 1,
                    snapshot: &ticks[t - 1],
                }),
            )
            .unwrap();
            // Compare bit patterns explicitly, not via float equality.
            for (a, b) in got.sections()[0]
                .records()
                .chunks(12)
                .zip(ticks[t].sections()[0].records().chunks(12))
            {
                assert_eq!(a, b, "{op:?}");
            }
        }
    }
}
