//! Unit fields (`SchemaBuilder::unit`, FORMAT.md 4.10): bit-exact round
//! trips whatever the values (vectors that are not unit, NaN payloads,
//! sign flips), with and without a predicted baseline, with zstd blocks
//! and with the context model; a rotating unit quaternion costs less than
//! without the declaration; the declaration is checked, hashed into the
//! schema id and kept by the text forms.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::model_for;
use proptest::prelude::*;
use tickpack::{
    Baseline, Decoder, DeltaOp, Dictionary, Encoder, Field, Integrate, Primitive, Reference,
    Schema, SchemaError, Snapshot,
};

/// A car: position, rotation (declared a unit vector with `unit`), hp; a
/// probe: a direction of three `f64`.
fn schema(unit: bool, op: DeltaOp) -> Schema {
    let field = |name: &str, ty, len| Field {
        name: name.into(),
        ty,
        len,
        delta: Some(op),
    };
    let b = Schema::builder()
        .entity("car")
        .field_with(field("pos", Primitive::F32, 3))
        .field_with(field("rot", Primitive::F32, 4));
    let b = if unit { b.unit() } else { b };
    let b = b
        .field("hp", Primitive::U8, 1)
        .entity("probe")
        .field_with(field("dir", Primitive::F64, 3));
    let b = if unit { b.unit() } else { b };
    b.build().unwrap()
}

#[derive(Debug, Clone, Copy)]
struct Car {
    pos: [u32; 3],
    rot: [u32; 4],
    hp: u8,
}

fn snapshot(s: &Schema, cars: &[Car], probes: &[[u64; 3]]) -> Snapshot {
    let mut snap = Snapshot::new(s);
    for (id, c) in cars.iter().enumerate() {
        let mut r: Vec<u8> = c.pos.iter().flat_map(|v| v.to_le_bytes()).collect();
        r.extend(c.rot.iter().flat_map(|v| v.to_le_bytes()));
        r.push(c.hp);
        snap.section_mut(0).unwrap().insert(id as u32, &r).unwrap();
    }
    for (id, p) in probes.iter().enumerate() {
        let r: Vec<u8> = p.iter().flat_map(|v| v.to_le_bytes()).collect();
        snap.section_mut(1)
            .unwrap()
            .insert(id as u32 * 2, &r)
            .unwrap();
    }
    snap
}

/// The unit quaternion of a turn by `a` about the axis (0.6, 0.8, 0) tilted
/// by `b`, as a game normalises it in `f32`.
fn quat(a: f32, b: f32) -> [u32; 4] {
    let (s, c) = (a / 2.0).sin_cos();
    let v = [0.6 * s * b.cos(), 0.8 * s, 0.6 * s * b.sin(), c];
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.map(|x| (x / n).to_bits())
}

fn direction(a: f64) -> [u64; 3] {
    let v = [a.cos() * 0.6, a.sin() * 0.6, 0.8];
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.map(|x| (x / n).to_bits())
}

/// Encodes every tick against the one before (and, with `prior`, the one
/// before that as the prior) and checks each decodes to itself; returns
/// the packets' bytes.
fn roundtrip(s: &Schema, ticks: &[Snapshot], dict: Option<&Dictionary>, prior: bool) -> usize {
    let mut enc = Encoder::new(s.clone());
    let mut dec = Decoder::new(s.clone());
    if let Some(d) = dict {
        enc.set_dictionary(Some(d)).unwrap();
        dec.add_dictionary(d).unwrap();
    }
    let at = |i: usize| Baseline {
        sequence: i as u16,
        snapshot: &ticks[i],
    };
    let mut bytes = 0;
    for (i, tick) in ticks.iter().enumerate().skip(1) {
        let r = Reference::delta(at(i - 1)).with_prior((prior && i >= 2).then(|| at(i - 2)));
        let packet = enc.encode(tick, i as u16, r).unwrap();
        bytes += packet.len();
        let (_, got) = dec.decode(&packet, r).unwrap();
        assert_eq!(got, *tick, "tick {i}");
    }
    bytes
}

fn f32_bits() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => (-1.0f32..1.0).prop_map(f32::to_bits),
        1 => Just(f32::NAN.to_bits() | 0x1234),
        1 => Just(f32::INFINITY.to_bits()),
        1 => Just((-0.0f32).to_bits()),
        1 => any::<u32>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn round_trips_bit_exactly(
        turns in prop::collection::vec((-3.0f32..3.0, -1.0f32..1.0, any::<bool>()), 2..7),
        odd in prop::collection::vec((0usize..4, f32_bits()), 0..4),
        op in prop_oneof![Just(DeltaOp::Predict), Just(DeltaOp::Int), Just(DeltaOp::Xor)],
    ) {
        let s = schema(true, op);
        let mut ticks = Vec::new();
        for (t, &(a, b, flip)) in turns.iter().enumerate() {
            let mut rot = quat(a, b);
            if flip {
                rot = rot.map(|x| x ^ 0x8000_0000);
            }
            // Some ticks carry a vector that is not unit, or not numbers.
            if let Some(&(k, bits)) = odd.get(t) {
                rot[k] = bits;
            }
            let car = Car { pos: [t as u32; 3], rot, hp: t as u8 };
            let still = Car { pos: [7; 3], rot: quat(0.5, 0.1), hp: 1 };
            let probes = [direction(f64::from(a)), direction(1.0)];
            ticks.push(snapshot(&s, &[car, still, car], &probes));
        }
        let dict = Dictionary::new(9, vec![0; 64]).with_model(model_for(&s, &ticks));
        for prior in [false, true] {
            roundtrip(&s, &ticks, None, prior);
            roundtrip(&s, &ticks, Some(&dict), prior);
        }
    }
}

#[test]
fn a_rotating_unit_quaternion_costs_less() {
    for op in [DeltaOp::Predict, DeltaOp::Int] {
        let (with, without) = (schema(true, op), schema(false, op));
        let bytes = |s: &Schema, prior: bool| {
            let ticks: Vec<Snapshot> = (0..60)
                .map(|t| {
                    let a = t as f32 * 0.05;
                    let cars: Vec<Car> = (0..16)
                        .map(|k| Car {
                            pos: [k; 3],
                            rot: quat(a + k as f32, 0.01 * t as f32),
                            hp: 3,
                        })
                        .collect();
                    snapshot(s, &cars, &[direction(f64::from(a))])
                })
                .collect();
            roundtrip(s, &ticks, None, prior)
        };
        for prior in [false, true] {
            let (a, b) = (bytes(&with, prior), bytes(&without, prior));
            assert!(a < b, "{op:?}, prior {prior}: unit {a} bytes, plain {b}");
        }
    }
}

#[test]
fn the_declaration_is_checked_hashed_and_kept() {
    let bad = |b: tickpack::SchemaBuilder| match b.build() {
        Err(SchemaError::BadUnit { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    let e = || Schema::builder().entity("e");
    assert_eq!(bad(e().field("n", Primitive::I32, 3).unit()), "n");
    assert_eq!(bad(e().field("s", Primitive::F32, 1).unit()), "s");
    assert_eq!(
        bad(e()
            .field("q", Primitive::F32, 4)
            .quantize(tickpack::quant::Quantize::smallest_three(10))
            .unit()),
        "q"
    );
    assert_eq!(
        bad(e()
            .field("t", Primitive::I32, 1)
            .field("v", Primitive::F32, 3)
            .field("p", Primitive::F32, 3)
            .integrate(Integrate::new("v", "t", 0.001))
            .field("q", Primitive::F32, 4)
            .unit()),
        "q"
    );
    let (a, b) = (schema(true, DeltaOp::Int), schema(false, DeltaOp::Int));
    assert_ne!(a.id(), b.id());
    assert_eq!(a.sections()[0].units(), [false, true, false]);
    let text = a.to_json();
    assert!(text.contains("\"unit\":true"), "{text}");
    let back = Schema::from_json(&text).unwrap();
    assert_eq!(back.id(), a.id());
    assert_eq!(back.sections()[0].units(), [false, true, false]);
    assert_eq!(Schema::from_json(&b.to_json()).unwrap().id(), b.id());
    let rebuilt = a.rebuild(|_, _| Some(DeltaOp::Predict), |_| None).unwrap();
    assert_eq!(rebuilt.sections()[1].units(), [true]);
}
