//! Integrated fields (`SchemaBuilder::integrate`, FORMAT.md 4.9): bit-exact
//! round trips whatever the values (NaN payloads, infinities, -0.0, huge
//! velocities), with zstd blocks and with the context model; a body moving
//! as its velocity says costs less than without the declaration; the
//! declaration is checked, hashed into the schema id and kept by the text
//! forms.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::model_for;
use proptest::prelude::*;
use tickpack::{
    Baseline, DecodeError, Decoder, Dictionary, Encoder, Integrate, Primitive, Schema, SchemaError,
    Snapshot,
};

fn schema(integrate: bool) -> Schema {
    schema_in(integrate, false)
}

/// The body declared time, velocity, hp, position; with `late` position,
/// hp, velocity, time (the velocity and time after the field integrated
/// from them, as Quake 3's converter declares its player state).
fn schema_in(integrate: bool, late: bool) -> Schema {
    let b = Schema::builder().entity("body");
    let b = if late {
        let b = b.field("pos", Primitive::F32, 3);
        let b = if integrate {
            b.integrate(Integrate::new("vel", "time", 0.001))
        } else {
            b
        };
        b.field("hp", Primitive::U8, 1)
            .field("vel", Primitive::F32, 3)
            .field("time", Primitive::I32, 1)
    } else {
        let b = b
            .field("time", Primitive::I32, 1)
            .field("vel", Primitive::F32, 3)
            .field("hp", Primitive::U8, 1)
            .field("pos", Primitive::F32, 3);
        if integrate {
            b.integrate(Integrate::new("vel", "time", 0.001))
        } else {
            b
        }
    };
    b.entity("rock")
        .field("t", Primitive::U64, 1)
        .field("v", Primitive::F64, 1)
        .field("x", Primitive::F64, 1)
        .integrate(Integrate::new("v", "t", 0.5))
        .build()
        .unwrap()
}

/// One body: time, velocity, hp, position.
#[derive(Debug, Clone, Copy)]
struct Body {
    time: i32,
    vel: [u32; 3],
    hp: u8,
    pos: [u32; 3],
}

fn body_record(b: &Body, late: bool) -> Vec<u8> {
    let time = b.time.to_le_bytes();
    let vel: Vec<u8> = b.vel.iter().flat_map(|v| v.to_le_bytes()).collect();
    let pos: Vec<u8> = b.pos.iter().flat_map(|p| p.to_le_bytes()).collect();
    if late {
        [&pos[..], &[b.hp], &vel, &time].concat()
    } else {
        [&time[..], &vel, &[b.hp], &pos].concat()
    }
}

/// Whether `s` declares the body's position first ([`schema_in`]).
fn late(s: &Schema) -> bool {
    s.sections()[0].fields()[0].name == "pos"
}

fn snapshot(s: &Schema, bodies: &[(u32, Body)], rocks: &[(u32, u64, u64, u64)]) -> Snapshot {
    let mut snap = Snapshot::new(s);
    for (id, b) in bodies {
        snap.section_mut(0)
            .unwrap()
            .insert(*id, &body_record(b, late(s)))
            .unwrap();
    }
    for &(id, t, v, x) in rocks {
        let mut r = t.to_le_bytes().to_vec();
        r.extend_from_slice(&v.to_le_bytes());
        r.extend_from_slice(&x.to_le_bytes());
        snap.section_mut(1).unwrap().insert(id, &r).unwrap();
    }
    snap
}

/// f32 bit patterns worth trying: ordinary values, specials, NaN payloads.
fn f32_bits() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => (-2000.0f32..2000.0).prop_map(f32::to_bits),
        1 => Just(f32::NAN.to_bits() | 0x1234),
        1 => Just(f32::INFINITY.to_bits()),
        1 => Just(f32::NEG_INFINITY.to_bits()),
        1 => Just((-0.0f32).to_bits()),
        1 => Just(f32::MAX.to_bits()),
        1 => any::<u32>(),
    ]
}

fn f64_bits() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => (-1e6f64..1e6).prop_map(f64::to_bits),
        1 => Just(f64::NAN.to_bits() | 0xdead),
        1 => Just(f64::INFINITY.to_bits()),
        1 => Just((-0.0f64).to_bits()),
        1 => any::<u64>(),
    ]
}

fn body() -> impl Strategy<Value = Body> {
    (
        any::<i32>(),
        prop::array::uniform3(f32_bits()),
        any::<u8>(),
        prop::array::uniform3(f32_bits()),
    )
        .prop_map(|(time, vel, hp, pos)| Body { time, vel, hp, pos })
}

/// The next tick of a body: often moved exactly as predicted, sometimes
/// with other values changed.
fn step(b: &Body, dt: i32, jitter: u32, change: u8) -> Body {
    let mut n = *b;
    n.time = b.time.wrapping_add(dt);
    for k in 0..3 {
        let p = f64::from(f32::from_bits(b.pos[k]))
            + f64::from(f32::from_bits(b.vel[k])) * f64::from(dt) * 0.001;
        let q = p as f32;
        if q.is_finite() {
            n.pos[k] = q.to_bits().wrapping_add(jitter);
        }
    }
    if change & 1 != 0 {
        n.vel[0] = n.vel[0].wrapping_add(0x1000);
    }
    if change & 2 != 0 {
        n.hp = n.hp.wrapping_sub(1);
    }
    n
}

fn roundtrip(s: &Schema, ticks: &[Snapshot], dict: Option<&Dictionary>) {
    let mut enc = Encoder::new(s.clone());
    let mut dec = Decoder::new(s.clone());
    if let Some(d) = dict {
        enc.set_dictionary(Some(d)).unwrap();
        dec.add_dictionary(d).unwrap();
    }
    for (i, w) in ticks.windows(2).enumerate() {
        let base = Baseline {
            sequence: i as u16,
            snapshot: &w[0],
        };
        let packet = enc.encode(&w[1], i as u16 + 1, base).unwrap();
        let (_, got) = dec.decode(&packet, base).unwrap();
        assert_eq!(got, w[1], "tick {}", i + 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trips_bit_exactly(
        first in prop::collection::vec(body(), 1..6),
        steps in prop::collection::vec((-100i32..200, prop_oneof![Just(0u32), any::<u32>()], any::<u8>()), 1..6),
        rocks in prop::collection::vec((any::<u64>(), f64_bits(), f64_bits()), 0..3),
    ) {
        for late in [false, true] {
        let s = schema_in(true, late);
        let mut bodies: Vec<(u32, Body)> = first.iter().enumerate().map(|(i, b)| (i as u32, *b)).collect();
        let mut rock: Vec<(u32, u64, u64, u64)> = rocks.iter().enumerate().map(|(i, &(t, v, x))| (i as u32 * 3, t, v, x)).collect();
        let mut ticks = vec![snapshot(&s, &bodies, &rock)];
        for &(dt, jitter, change) in &steps {
            for (_, b) in &mut bodies {
                *b = step(b, dt, jitter, change);
            }
            for r in &mut rock {
                r.1 = r.1.wrapping_add(dt as u64);
                r.3 = r.3.wrapping_add(u64::from(jitter));
            }
            ticks.push(snapshot(&s, &bodies, &rock));
        }
        roundtrip(&s, &ticks, None);
        let dict = Dictionary::new(9, vec![0; 64]).with_model(model_for(&s, &ticks));
        roundtrip(&s, &ticks, Some(&dict));
        }
    }
}

#[test]
fn a_body_moving_as_predicted_costs_less() {
    let (with, without) = (schema(true), schema(false));
    let mut b = Body {
        time: 10_000,
        vel: [3.5f32.to_bits(), (-12.25f32).to_bits(), 0.0f32.to_bits()],
        hp: 100,
        pos: [
            1024.0f32.to_bits(),
            (-300.5f32).to_bits(),
            64.0f32.to_bits(),
        ],
    };
    let mut bodies = Vec::new();
    for t in 0..40 {
        bodies.push(b);
        b = step(&b, 50 + (t % 3), 0, 0);
    }
    let bytes = |s: &Schema| {
        let ticks: Vec<Snapshot> = bodies
            .iter()
            .map(|b| snapshot(s, &[(1, *b)], &[]))
            .collect();
        roundtrip(s, &ticks, None);
        let mut enc = Encoder::new(s.clone());
        ticks
            .windows(2)
            .map(|w| {
                let base = Baseline {
                    sequence: 0,
                    snapshot: &w[0],
                };
                enc.encode(&w[1], 1, base).unwrap().len()
            })
            .sum::<usize>()
    };
    let (a, b) = (bytes(&with), bytes(&without));
    assert!(a < b, "integrated {a} bytes, plain {b}");
    // The same with the velocity and time declared after the position.
    let (a, b) = (
        bytes(&schema_in(true, true)),
        bytes(&schema_in(false, true)),
    );
    assert!(a < b, "declared late: integrated {a} bytes, plain {b}");
}

/// A body at rest whose position goes from -0.0 to +0.0: the prediction
/// (-0.0 + 0.0 = +0.0) is the new value, so the changed row sends no
/// changed element; `extra` zero `u16` elements before the position make
/// the type's mask one group (8 elements) or several.
fn zero_sign_ticks(extra: usize) -> (Schema, Vec<Snapshot>) {
    let mut b = Schema::builder()
        .entity("body")
        .field("time", Primitive::I32, 1)
        .field("vel", Primitive::F32, 3)
        .field("hp", Primitive::U8, 1);
    if extra > 0 {
        b = b.field("extra", Primitive::U16, extra);
    }
    let s = b
        .field("pos", Primitive::F32, 3)
        .integrate(Integrate::new("vel", "time", 0.001))
        .build()
        .unwrap();
    let ticks = [(-0.0f32), 0.0]
        .iter()
        .map(|&y| {
            let mut r = 7i32.to_le_bytes().to_vec();
            r.extend_from_slice(&[0; 12]);
            r.push(3);
            r.extend(std::iter::repeat_n(0u8, 2 * extra));
            for p in [1.5f32, y, -2.0] {
                r.extend_from_slice(&p.to_le_bytes());
            }
            let mut snap = Snapshot::new(&s);
            snap.section_mut(0).unwrap().insert(4, &r).unwrap();
            snap
        })
        .collect();
    (s, ticks)
}

#[test]
fn a_changed_row_equal_to_its_prediction_round_trips() {
    for extra in [0, 4, 60] {
        let (s, ticks) = zero_sign_ticks(extra);
        roundtrip(&s, &ticks, None);
        let dict = Dictionary::new(9, vec![0; 64]).with_model(model_for(&s, &ticks));
        roundtrip(&s, &ticks, Some(&dict));
    }
}

#[test]
fn a_changed_row_that_rebuilds_its_baseline_is_refused() {
    for extra in [0, 4, 60] {
        let (s, ticks) = zero_sign_ticks(extra);
        let mut enc = Encoder::new(s.clone());
        let packet = enc
            .encode(
                &ticks[1],
                1,
                Baseline {
                    sequence: 0,
                    snapshot: &ticks[0],
                },
            )
            .unwrap();
        // Against a baseline that already holds +0.0 the row predicts its
        // baseline record: a changed row that changes nothing.
        let mut dec = Decoder::new(s.clone());
        let got = dec.decode(
            &packet,
            Baseline {
                sequence: 0,
                snapshot: &ticks[1],
            },
        );
        assert!(
            matches!(got, Err(DecodeError::BadMask { section: 0, row: 0 })),
            "{extra} extra elements: {got:?}"
        );
    }
}

fn bad(build: tickpack::SchemaBuilder) -> bool {
    matches!(build.build(), Err(SchemaError::BadIntegrate { .. }))
}

#[test]
fn declarations_are_checked() {
    let base = || {
        Schema::builder()
            .entity("body")
            .field("time", Primitive::I32, 1)
            .field("vel", Primitive::F32, 3)
    };
    // An integer field may be integrated (its prediction is rounded);
    // not a velocity of another length, a time array, missing or later
    // fields, bad scales, quantised fields.
    assert!(!bad(base()
        .field("cell", Primitive::I32, 3)
        .integrate(Integrate::new("vel", "time", 1.0))));
    assert!(bad(base()
        .field("pos", Primitive::F32, 2)
        .integrate(Integrate::new("vel", "time", 1.0))));
    assert!(bad(base()
        .field("pos", Primitive::F32, 3)
        .integrate(Integrate::new("vel", "vel", 1.0))));
    assert!(bad(base()
        .field("pos", Primitive::F32, 3)
        .integrate(Integrate::new("speed", "time", 1.0))));
    // A time or velocity declared after the field is fine, and so is an
    // integrated one (a later level, FORMAT.md 4.9); the field itself, or a
    // cycle, is not.
    assert!(!bad(base()
        .field("pos", Primitive::F32, 3)
        .integrate(Integrate::new("vel", "later", 1.0))
        .field("later", Primitive::I32, 1)));
    assert!(bad(base()
        .field("pos", Primitive::F32, 3)
        .integrate(Integrate::new("pos", "time", 1.0))));
    assert!(!bad(base()
        .field("pos", Primitive::F32, 3)
        .integrate(Integrate::new("vel", "time", 1.0))
        .field("far", Primitive::F32, 3)
        .integrate(Integrate::new("pos", "time", 1.0))));
    assert!(bad(Schema::builder()
        .entity("body")
        .field("a", Primitive::F32, 1)
        .integrate(Integrate::new("b", "t", 1.0))
        .field("b", Primitive::F32, 1)
        .integrate(Integrate::new("a", "t", 1.0))
        .field("t", Primitive::I32, 1)));
    assert!(bad(Schema::builder()
        .entity("body")
        .field("t", Primitive::I32, 1)
        .integrate(Integrate::new(Integrate::ONE, "x", 1.0))
        .field("x", Primitive::F32, 1)
        .integrate(Integrate::new(Integrate::ONE, "t", 1.0))));
    for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(bad(base()
            .field("pos", Primitive::F32, 3)
            .integrate(Integrate::new("vel", "time", scale))));
    }
    assert!(bad(base()
        .field("pos", Primitive::F32, 3)
        .quantize(tickpack::quant::Quantize::step(0.01))
        .integrate(Integrate::new("vel", "time", 1.0))));
    assert!(bad(Schema::builder()
        .entity("body")
        .field("time", Primitive::I32, 1)
        .field("vel", Primitive::F32, 3)
        .quantize(tickpack::quant::Quantize::step(0.01))
        .field("pos", Primitive::F32, 3)
        .integrate(Integrate::new("vel", "time", 1.0))));
}

#[test]
fn declarations_are_part_of_the_schema_id() {
    let (a, b) = (schema(true), schema(false));
    assert_ne!(a.id(), b.id());
    let other_scale = Schema::builder()
        .entity("body")
        .field("time", Primitive::I32, 1)
        .field("vel", Primitive::F32, 3)
        .field("hp", Primitive::U8, 1)
        .field("pos", Primitive::F32, 3)
        .integrate(Integrate::new("vel", "time", 0.002))
        .entity("rock")
        .field("t", Primitive::U64, 1)
        .field("v", Primitive::F64, 1)
        .field("x", Primitive::F64, 1)
        .integrate(Integrate::new("v", "t", 0.5))
        .build()
        .unwrap();
    assert_ne!(a.id(), other_scale.id());
    assert_eq!(
        a.sections()[0].integrations()[3],
        Some(Integrate::new("vel", "time", 0.001))
    );
    assert_eq!(a.sections()[0].integrations()[0], None);
}

#[cfg(feature = "serde")]
#[test]
fn declarations_survive_the_text_forms() {
    let a = schema(true);
    assert_eq!(Schema::from_json(&a.to_json()).unwrap(), a);
    let t = Schema::from_toml(
        r#"
[[entities]]
name = "body"
fields = [
  { name = "time", type = "i32" },
  { name = "vel", type = "f32", len = 3 },
  { name = "hp", type = "u8" },
  { name = "pos", type = "f32", len = 3, integrate = { velocity = "vel", time = "time", scale = 0.001 } },
]
[[entities]]
name = "rock"
fields = [
  { name = "t", type = "u64" },
  { name = "v", type = "f64" },
  { name = "x", type = "f64", integrate = { velocity = "v", time = "t", scale = 0.5 } },
]
"#,
    )
    .unwrap();
    assert_eq!(t, a);
}
