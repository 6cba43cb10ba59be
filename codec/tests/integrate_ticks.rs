//! Fields integrated over the packet's tick distance (`Integrate::TICKS`)
//! and at a constant rate (`Integrate::ONE`), FORMAT.md 4.9: bit-exact
//! round trips at any baseline distance, whatever the values (integer
//! fields at their extremes, NaN payloads, whole and fractional floats),
//! with zstd blocks and with the context model; a clock and a body that
//! move as declared cost less than without the declaration; the reserved
//! names are checked and hashed.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::model_for;
use proptest::prelude::*;
use tickpack::{Baseline, Decoder, Dictionary, Encoder, Integrate, Primitive, Schema, Snapshot};

/// A car with a clock (`i32`, 50 per tick), a lap counter (`u8`, 3 per
/// tick, so it leaves its type's range), a 64-bit odometer (with `integrate`
/// and `odo`, at a rate that leaves its range: it does not move so), and a
/// position moved by its velocity over ticks of 50 ms.
fn schema(integrate: bool) -> Schema {
    schema_with(integrate, integrate)
}

fn schema_with(integrate: bool, odo: bool) -> Schema {
    let mut b = Schema::builder()
        .entity("car")
        .field("clock", Primitive::I32, 1);
    if integrate {
        b = b.integrate(Integrate::new(Integrate::ONE, Integrate::TICKS, 50.0));
    }
    b = b.field("lap", Primitive::U8, 1);
    if integrate {
        b = b.integrate(Integrate::new(Integrate::ONE, Integrate::TICKS, 3.0));
    }
    b = b.field("odo", Primitive::I64, 1);
    if odo {
        b = b.integrate(Integrate::new(Integrate::ONE, Integrate::TICKS, 1e18));
    }
    b = b.field("pos", Primitive::F32, 3);
    if integrate {
        b = b.integrate(Integrate::new("vel", Integrate::TICKS, 0.05));
    }
    // Level 2: over the clock, itself integrated.
    b = b.field("trail", Primitive::F32, 3);
    if integrate {
        b = b.integrate(Integrate::new("vel", "clock", 0.001));
    }
    b.field("vel", Primitive::F32, 3).build().unwrap()
}

#[derive(Debug, Clone, Copy)]
struct Car {
    clock: i32,
    lap: u8,
    odo: i64,
    pos: [u32; 3],
    trail: [u32; 3],
    vel: [u32; 3],
}

fn record(c: &Car) -> Vec<u8> {
    let mut r = c.clock.to_le_bytes().to_vec();
    r.push(c.lap);
    r.extend_from_slice(&c.odo.to_le_bytes());
    for p in c.pos.iter().chain(&c.trail).chain(&c.vel) {
        r.extend_from_slice(&p.to_le_bytes());
    }
    r
}

fn snapshot(s: &Schema, cars: &[Car]) -> Snapshot {
    let mut snap = Snapshot::new(s);
    for (i, c) in cars.iter().enumerate() {
        snap.section_mut(0)
            .unwrap()
            .insert(i as u32 * 2, &record(c))
            .unwrap();
    }
    snap
}

fn f32_bits() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => (-2000i32..2000).prop_map(|x| (x as f32).to_bits()),
        3 => (-2000.0f32..2000.0).prop_map(f32::to_bits),
        1 => Just(f32::NAN.to_bits() | 0x1234),
        1 => Just(f32::INFINITY.to_bits()),
        1 => Just((-0.0f32).to_bits()),
        1 => Just(16_777_216.0f32.to_bits()),
        1 => any::<u32>(),
    ]
}

fn car() -> impl Strategy<Value = Car> {
    (
        prop_oneof![any::<i32>(), Just(i32::MAX - 10), Just(i32::MIN)],
        any::<u8>(),
        prop_oneof![any::<i64>(), Just(i64::MAX), Just(i64::MIN)],
        prop::array::uniform3(f32_bits()),
        prop::array::uniform3(f32_bits()),
        prop::array::uniform3(f32_bits()),
    )
        .prop_map(|(clock, lap, odo, pos, trail, vel)| Car {
            clock,
            lap,
            odo,
            pos,
            trail,
            vel,
        })
}

/// The car `ticks` later: moved as declared, then disturbed by `jitter`.
fn step(c: &Car, ticks: u16, jitter: u32) -> Car {
    let mut n = *c;
    n.clock = c.clock.wrapping_add(50 * i32::from(ticks));
    n.lap = c.lap.wrapping_add(3u16.wrapping_mul(ticks) as u8);
    n.odo = c.odo.wrapping_add(jitter as i64);
    for k in 0..3 {
        let p = f64::from(f32::from_bits(c.pos[k]))
            + f64::from(f32::from_bits(c.vel[k])) * f64::from(ticks) * 0.05;
        let q = (p.round() as f32).to_bits();
        let t = f64::from(f32::from_bits(c.trail[k]))
            + f64::from(f32::from_bits(c.vel[k])) * f64::from(50 * u32::from(ticks)) * 0.001;
        n.trail[k] = (t as f32).to_bits().wrapping_add(jitter / 7);
        n.pos[k] = if jitter.is_multiple_of(3) {
            q
        } else {
            q.wrapping_add(jitter)
        };
    }
    n
}

/// Encodes every snapshot against the one `back` places before it (its
/// sequence `seq`), decodes, and checks each comes back bit for bit.
fn roundtrip(s: &Schema, snaps: &[(u16, Snapshot, usize)], dict: Option<&Dictionary>) -> usize {
    let mut enc = Encoder::new(s.clone());
    let mut dec = Decoder::new(s.clone());
    if let Some(d) = dict {
        enc.set_dictionary(Some(d)).unwrap();
        dec.add_dictionary(d).unwrap();
    }
    let mut bytes = 0;
    for (i, (seq, snap, back)) in snaps.iter().enumerate().skip(1) {
        let (bseq, bsnap, _) = &snaps[i - back];
        let base = Baseline {
            sequence: *bseq,
            snapshot: bsnap,
        };
        let packet = enc.encode(snap, *seq, base).unwrap();
        bytes += packet.len();
        let (_, got) = dec.decode(&packet, base).unwrap();
        assert_eq!(&got, snap, "snapshot {i}");
    }
    bytes
}

/// Snapshots of `cars` stepped by `steps` (ticks, jitter, how far back the
/// baseline is, at most the snapshots before), with their sequences.
fn history(s: &Schema, cars: &[Car], steps: &[(u16, u32, usize)]) -> Vec<(u16, Snapshot, usize)> {
    let mut cars = cars.to_vec();
    let mut seq = 65_530u16;
    let mut out = vec![(seq, snapshot(s, &cars), 0)];
    for &(ticks, jitter, back) in steps {
        for c in &mut cars {
            *c = step(c, ticks, jitter);
        }
        seq = seq.wrapping_add(ticks);
        out.push((seq, snapshot(s, &cars), back.clamp(1, out.len())));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trips_bit_exactly_at_any_distance(
        cars in prop::collection::vec(car(), 1..5),
        steps in prop::collection::vec(
            (1u16..300, prop_oneof![Just(0u32), Just(3), any::<u32>()], 1usize..4),
            1..8,
        ),
    ) {
        let s = schema(true);
        let snaps = history(&s, &cars, &steps);
        roundtrip(&s, &snaps, None);
        let plain: Vec<Snapshot> = snaps.iter().map(|(_, x, _)| x.clone()).collect();
        let dict = Dictionary::new(9, vec![0; 64]).with_model(model_for(&s, &plain));
        roundtrip(&s, &snaps, Some(&dict));
    }
}

#[test]
fn a_clock_and_a_body_moving_as_declared_cost_less() {
    let car = Car {
        clock: 2_904_291,
        lap: 7,
        odo: 0,
        pos: [
            1024.0f32.to_bits(),
            (-300.0f32).to_bits(),
            64.0f32.to_bits(),
        ],
        trail: [1.5f32.to_bits(), 2.25f32.to_bits(), (-7.0f32).to_bits()],
        vel: [320.0f32.to_bits(), (-120.0f32).to_bits(), 0.0f32.to_bits()],
    };
    let steps: Vec<(u16, u32, usize)> = (0..40)
        .map(|t| (1 + t % 6, 0, 1 + t as usize % 3))
        .collect();
    let bytes = |s: &Schema| roundtrip(s, &history(s, &[car], &steps), None);
    let (with, without) = (bytes(&schema_with(true, false)), bytes(&schema(false)));
    assert!(with < without, "integrated {with} bytes, plain {without}");
}

#[test]
fn reserved_names_resolve_without_fields_and_are_hashed() {
    // Integer fields may be integrated; a time field named like the
    // reserved one is not the tick distance.
    let over = |time: &str| {
        Schema::builder()
            .entity("e")
            .field("n", Primitive::U16, 1)
            .integrate(Integrate::new(Integrate::ONE, time, 1.0))
            .field("t", Primitive::U16, 1)
            .build()
    };
    let ticks = over(Integrate::TICKS).unwrap();
    let field = over("t").unwrap();
    assert_ne!(ticks.id(), field.id());
    assert!(over("missing").is_err());
    // A velocity named `@1` needs no field, whatever the lengths.
    let s = Schema::builder()
        .entity("e")
        .field("p", Primitive::F64, 4)
        .integrate(Integrate::new(Integrate::ONE, Integrate::TICKS, 0.5))
        .build()
        .unwrap();
    assert_eq!(
        s.sections()[0].integrations()[0],
        Some(Integrate::new("@1", "@ticks", 0.5))
    );
}

#[cfg(feature = "serde")]
#[test]
fn reserved_names_survive_the_text_forms() {
    let a = schema(true);
    assert_eq!(Schema::from_json(&a.to_json()).unwrap(), a);
}
