//! Quantisation declared in the schema: error bounds, the code laws,
//! bit-exact round trips of quantised snapshots, the declared errors, and
//! the text form.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use tickpack::quant::{field_errors, AngleUnit, Quantize, QuantizeError};
use tickpack::{
    Baseline, DecodeError, Decoder, DeltaOp, EncodeError, Encoder, Integrate, Primitive, Reference,
    Schema, SchemaError, Snapshot, SnapshotError,
};

/// A car with every kind of quantisation: fixed-point position (ranged,
/// clamped), velocity without range, a quaternion, a heading in degrees, a
/// steering angle in radians as f64, a bounded integer and a plain field.
fn car_schema() -> Schema {
    Schema::builder()
        .entity("car")
        .field("pos", Primitive::F32, 3)
        .quantize(Quantize::step(0.001).with_range(-2000.0, 2000.0).clamped())
        .field("vel", Primitive::F32, 3)
        .quantize(Quantize::step(0.01))
        .field("rot", Primitive::F32, 4)
        .quantize(Quantize::smallest_three(10))
        .field("heading", Primitive::F32, 1)
        .quantize(Quantize::angle(16, AngleUnit::Degrees))
        .field("steer", Primitive::F64, 1)
        .quantize(Quantize::angle(12, AngleUnit::Radians))
        .field("gear", Primitive::I8, 1)
        .quantize(Quantize::int_range(-1, 6))
        .field("raw", Primitive::F32, 1)
        .build()
        .unwrap()
}

const CAR_SIZE: usize = 12 + 12 + 16 + 4 + 8 + 1 + 4;

#[derive(Debug, Clone)]
struct Car {
    pos: [f32; 3],
    vel: [f32; 3],
    rot: [f32; 4],
    heading: f32,
    steer: f64,
    gear: i8,
    raw: f32,
}

impl Car {
    fn bytes(&self) -> Vec<u8> {
        let mut r = Vec::with_capacity(CAR_SIZE);
        for v in self.pos.iter().chain(&self.vel).chain(&self.rot) {
            r.extend_from_slice(&v.to_le_bytes());
        }
        r.extend_from_slice(&self.heading.to_le_bytes());
        r.extend_from_slice(&self.steer.to_le_bytes());
        r.push(self.gear as u8);
        r.extend_from_slice(&self.raw.to_le_bytes());
        r
    }
}

fn unit_quat() -> impl Strategy<Value = [f32; 4]> {
    prop::array::uniform4(-1.0f32..1.0)
        .prop_filter("non-zero", |q| q.iter().map(|c| c * c).sum::<f32>() > 1e-3)
        .prop_map(|q| {
            let n = q.iter().map(|c| c * c).sum::<f32>().sqrt();
            q.map(|c| c / n)
        })
}

fn car() -> impl Strategy<Value = Car> {
    (
        prop::array::uniform3(-2000.0f32..2000.0),
        prop::array::uniform3(-500.0f32..500.0),
        unit_quat(),
        -1000.0f32..1000.0,
        -10.0f64..10.0,
        -1i8..=6,
        any::<f32>(),
    )
        .prop_map(|(pos, vel, rot, heading, steer, gear, raw)| Car {
            pos,
            vel,
            rot,
            heading,
            steer,
            gear,
            raw,
        })
}

fn snapshot(schema: &Schema, cars: &[Car]) -> Snapshot {
    let mut s = Snapshot::new(schema);
    for (i, c) in cars.iter().enumerate() {
        s.section_mut(0)
            .unwrap()
            .insert(i as u32 * 3 + 1, &c.bytes())
            .unwrap();
    }
    s
}

/// `schema` with its position predicted from the prior.
fn predicting(schema: Schema) -> Schema {
    let ty = &schema.sections()[0];
    let mut b = Schema::builder().entity(ty.name());
    for (f, q) in ty.fields().iter().zip(ty.quantization()) {
        let mut f = f.clone();
        if f.name == "pos" {
            f.delta = Some(DeltaOp::Predict);
        }
        b = b.field_with(f);
        if let Some(q) = q {
            b = b.quantize(*q);
        }
    }
    b.build().unwrap()
}

fn bits(s: &Snapshot) -> Vec<u8> {
    s.sections()[0].records().to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every field's error is within the bound its declaration states, and
    /// quantising twice changes nothing.
    #[test]
    fn error_within_bound_and_idempotent(c in car()) {
        let schema = car_schema();
        let ty = &schema.sections()[0];
        let orig = c.bytes();
        let mut rec = orig.clone();
        ty.quantize_records(&mut rec).unwrap();
        let mut errs = vec![0.0; ty.fields().len()];
        field_errors(ty, &orig, &rec, &mut errs).unwrap();
        for ((f, q), e) in ty.fields().iter().zip(ty.quantization()).zip(&errs) {
            match q {
                Some(q) => prop_assert!(*e <= q.max_error(f.ty), "{}: {e} > {}", f.name, q.max_error(f.ty)),
                None => prop_assert_eq!(*e, 0.0),
            }
        }
        // Fixed point: half a step plus the f32 rounding of the result.
        for (a, b) in c.pos.iter().zip(rec[0..12].chunks(4)) {
            let b = f32::from_le_bytes(b.try_into().unwrap());
            let ulp = f32::from_bits(b.abs().to_bits() + 1) - b.abs();
            prop_assert!(f64::from((a - b).abs()) <= 0.0005 + f64::from(ulp), "{a} {b}");
        }
        let mut again = rec.clone();
        ty.quantize_records(&mut again).unwrap();
        prop_assert_eq!(&again, &rec);
        // The raw field is untouched, bit for bit (NaN payloads included).
        prop_assert_eq!(&rec[CAR_SIZE - 4..], &orig[CAR_SIZE - 4..]);
    }

    /// quantise(dequantise(q)) == q: values to codes and back.
    #[test]
    fn codes_round_trip(c in car()) {
        let schema = car_schema();
        let ty = &schema.sections()[0];
        let mut rec = c.bytes();
        ty.quantize_records(&mut rec).unwrap();
        let mut codes = rec.clone();
        ty.to_codes(&mut codes).unwrap();
        let mut back = codes.clone();
        ty.from_codes(&mut back).unwrap();
        prop_assert_eq!(&back, &rec);
        let mut codes2 = back.clone();
        ty.to_codes(&mut codes2).unwrap();
        prop_assert_eq!(codes2, codes);
    }

    /// Every code within its limits comes back as itself.
    #[test]
    fn every_valid_code_is_a_fixed_point(
        pos in prop::array::uniform3(-2_000_000i32..=2_000_000),
        vel in prop::array::uniform3(-(1i32 << 22)..=(1 << 22)),
        k in 0i32..4,
        q in prop::array::uniform3(-511i32..=511),
        heading in -32768i32..32768,
        steer in -2048i64..2048,
    ) {
        let schema = car_schema();
        let ty = &schema.sections()[0];
        let mut codes = Vec::new();
        for v in pos.iter().chain(&vel).chain(&[k]).chain(&q).chain(&[heading]) {
            codes.extend_from_slice(&v.to_le_bytes());
        }
        codes.extend_from_slice(&steer.to_le_bytes());
        codes.push(3);
        codes.extend_from_slice(&0f32.to_le_bytes());
        let mut values = codes.clone();
        match ty.from_codes(&mut values) {
            Ok(()) => {
                let mut again = values.clone();
                ty.to_codes(&mut again).unwrap();
                prop_assert_eq!(again, codes);
            }
            // Only quaternion codes whose rebuilt largest component is not
            // the largest are refused.
            Err(QuantizeError::BadCode { field: 2, .. }) => {}
            Err(e) => prop_assert!(false, "{e}"),
        }
    }

    /// Quantised snapshots round-trip bit-exactly, as keyframes and deltas,
    /// with the checksum on.
    #[test]
    fn quantised_snapshots_round_trip(a in prop::collection::vec(car(), 0..20),
                                      b in prop::collection::vec(car(), 0..20)) {
        let schema = car_schema();
        let mut s0 = snapshot(&schema, &a);
        let mut s1 = snapshot(&schema, &b);
        schema.quantize(&mut s0).unwrap();
        schema.quantize(&mut s1).unwrap();
        let mut enc = Encoder::new(schema.clone());
        enc.set_checksum(true);
        let mut dec = Decoder::new(schema.clone());
        let key = enc.encode(&s0, 1, None).unwrap();
        let (_, got0) = dec.decode(&key, None).unwrap();
        prop_assert_eq!(bits(&got0), bits(&s0));
        prop_assert_eq!(&got0, &s0);
        let base = Baseline { sequence: 1, snapshot: &got0 };
        let delta = enc.encode(&s1, 2, Some(base)).unwrap();
        let (_, got1) = dec.decode(&delta, Some(base)).unwrap();
        prop_assert_eq!(&got1, &s1);
    }

    /// One encoder and one decoder over many packets, each against any
    /// earlier sequence as baseline and prior, given either as the
    /// snapshot sent with that sequence or as another snapshot (the same
    /// sequence with other values), and now and then a baseline that is not
    /// quantised: every packet decodes to its snapshot (the code forms the
    /// two keep of recent snapshots never stand in for another snapshot),
    /// and the unquantised baseline is refused.
    #[test]
    fn baselines_in_any_order_and_reused_sequences(
        pool in prop::collection::vec(prop::collection::vec(car(), 0..6), 2..5),
        steps in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(),
                                        any::<prop::sample::Index>(), 0u8..4, 0u8..8), 1..40),
    ) {
        let schema = predicting(car_schema());
        let pool: Vec<Snapshot> = pool
            .iter()
            .map(|cars| {
                let mut s = snapshot(&schema, cars);
                schema.quantize(&mut s).unwrap();
                s
            })
            .collect();
        let mut enc = Encoder::new(schema.clone());
        let mut dec = Decoder::new(schema.clone());
        // What was sent: (sequence, decoded snapshot), in sequence order.
        let mut sent: Vec<(u16, Snapshot)> = Vec::new();
        for (i, (tick, b, p, other, raw)) in steps.into_iter().enumerate() {
            let sequence = i as u16 + 1;
            let tick = &pool[tick.index(pool.len())];
            let given = |k: usize, flip: bool| {
                let (seq, snap) = &sent[k];
                let snapshot = if flip { &pool[k % pool.len()] } else { snap };
                Baseline { sequence: *seq, snapshot }
            };
            let reference = if sent.is_empty() {
                Reference::KEYFRAME
            } else {
                let (b, p) = (b.index(sent.len()), p.index(sent.len()));
                let base = given(b, other & 1 == 1);
                if p < b {
                    Reference::predicted(base, given(p, other & 2 == 2))
                } else {
                    Reference::delta(base)
                }
            };
            if let (0, Some(base)) = (raw, reference.baseline) {
                // A baseline with a value that is not quantised.
                let mut bad = base.snapshot.clone();
                let mut extra = Car { pos: [0.5; 3], vel: [0.0; 3], rot: [1.0, 0.0, 0.0, 0.0],
                                      heading: 0.0, steer: 0.0, gear: 0, raw: 0.0 };
                extra.pos[0] = 0.000_3;
                bad.section_mut(0).unwrap().insert(1000, &extra.bytes()).unwrap();
                let forged = Reference::delta(Baseline { snapshot: &bad, ..base }).with_prior(reference.prior);
                let r = enc.encode(tick, sequence, forged);
                prop_assert!(matches!(r, Err(EncodeError::Snapshot(SnapshotError::NotQuantized { .. }))), "{r:?}");
                continue;
            }
            let packet = enc.encode(tick, sequence, reference).unwrap();
            let (_, got) = dec.decode(&packet, reference).unwrap();
            prop_assert_eq!(&got, tick);
            sent.push((sequence, got));
        }
    }

    /// A corrupted packet decodes to an error or to a quantised snapshot,
    /// never to values outside the declaration.
    #[test]
    fn corrupt_packets_decode_to_quantised_values(c in prop::collection::vec(car(), 1..4),
                                                  flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let schema = car_schema();
        let mut s = snapshot(&schema, &c);
        schema.quantize(&mut s).unwrap();
        let mut packet = Encoder::new(schema.clone()).encode(&s, 0, None).unwrap();
        for (i, x) in flips {
            let at = i.index(packet.len());
            packet[at] ^= x | 1;
        }
        if let Ok((_, got)) = Decoder::new(schema.clone()).decode(&packet, None) {
            schema.check_quantized(&got).unwrap();
        }
    }
}

#[test]
fn quaternion_error_bound_is_stated_and_met_at_ties() {
    let schema = car_schema();
    let ty = &schema.sections()[0];
    let h = core::f32::consts::FRAC_1_SQRT_2;
    let bound = Quantize::smallest_three(10).max_error(Primitive::F32);
    assert!(bound < 0.02, "{bound}");
    for rot in [
        [h, h, 0.0, 0.0],
        [h, -h, 0.0, 0.0],
        [0.5, 0.5, 0.5, 0.5],
        [-0.5, 0.5, -0.5, 0.5],
        [0.0, 0.0, 0.0, -1.0],
        [1e-30, 0.0, 0.0, 1e-30],
    ] {
        let c = Car {
            pos: [0.0; 3],
            vel: [0.0; 3],
            rot,
            heading: 0.0,
            steer: 0.0,
            gear: 0,
            raw: 0.0,
        };
        let orig = c.bytes();
        let mut rec = orig.clone();
        ty.quantize_records(&mut rec).unwrap();
        let mut errs = vec![0.0; ty.fields().len()];
        field_errors(ty, &orig, &rec, &mut errs).unwrap();
        assert!(errs[2] <= bound, "{rot:?}: {} > {bound}", errs[2]);
        let mut codes = rec.clone();
        ty.to_codes(&mut codes).unwrap();
    }
}

/// A seeded sweep of unit quaternions, half of them with two components of
/// (nearly) equal magnitude, at two precisions: the stated bound holds and
/// is not loose by more than a quarter.
#[test]
fn quaternion_bound_is_tight() {
    for bits in [8u8, 11] {
        let schema = Schema::builder()
            .entity("e")
            .field("r", Primitive::F32, 4)
            .quantize(Quantize::smallest_three(bits))
            .build()
            .unwrap();
        let ty = &schema.sections()[0];
        let mut st = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            (st >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let mut worst = 0.0f64;
        let mut errs = [0.0];
        for i in 0..20_000 {
            let mut q = [rnd(), rnd(), rnd(), rnd()];
            if i % 2 == 0 {
                q[(i / 2) % 4] = q[(i / 2 + 1) % 4] * if i % 4 == 0 { 1.0 } else { -1.0 };
            }
            let n = q.iter().map(|c| c * c).sum::<f64>().sqrt();
            let orig: Vec<u8> = q
                .iter()
                .flat_map(|c| ((c / n) as f32).to_le_bytes())
                .collect();
            let mut rec = orig.clone();
            ty.quantize_records(&mut rec).unwrap();
            errs[0] = 0.0;
            field_errors(ty, &orig, &rec, &mut errs).unwrap();
            worst = worst.max(errs[0]);
            let mut codes = rec.clone();
            ty.to_codes(&mut codes).unwrap();
            ty.from_codes(&mut codes).unwrap();
            assert_eq!(codes, rec);
        }
        let bound = Quantize::smallest_three(bits).max_error(Primitive::F32);
        assert!(
            worst <= bound && worst > 0.75 * bound,
            "{bits} bits: {worst} vs {bound}"
        );
    }
}

/// `max_error` bounds the error of `f64` fields too, where the code limits
/// let `x / step` and `code · step` each round by up to an eighth of a
/// step (fixed point up to ±2^50 codes; angles of 50 bits within a turn of
/// zero): a seeded sweep of values up to those limits, on steps that are
/// and are not powers of two.
#[test]
fn f64_errors_stay_within_the_stated_bound() {
    let turn = |u: AngleUnit| u.turn();
    let mut st = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = || {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        (st >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let limit = 2f64.powi(50);
    let mut cases: Vec<(Quantize, f64)> = [0.1, 0.001, 3.0, 1.0 / 3.0, 0.25]
        .into_iter()
        .map(|step| (Quantize::step(step), limit * step))
        .collect();
    for unit in [AngleUnit::Degrees, AngleUnit::Radians] {
        for bits in [40u8, 48, 50] {
            cases.push((Quantize::angle(bits, unit), turn(unit)));
        }
    }
    for (q, most) in cases {
        let schema = Schema::builder()
            .entity("e")
            .field("x", Primitive::F64, 1)
            .quantize(q)
            .build()
            .unwrap();
        let ty = &schema.sections()[0];
        let bound = q.max_error(Primitive::F64);
        let mut errs = [0.0];
        for _ in 0..20_000 {
            let x = rnd() * most;
            let orig = x.to_le_bytes().to_vec();
            let mut rec = orig.clone();
            ty.quantize_records(&mut rec).unwrap();
            field_errors(ty, &orig, &rec, &mut errs).unwrap();
            assert!(errs[0] <= bound, "{q}: {x:e}: {} > {bound}", errs[0]);
        }
    }
}

#[test]
fn declared_errors() {
    let schema = car_schema();
    let ty = &schema.sections()[0];
    let base = Car {
        pos: [0.0; 3],
        vel: [0.0; 3],
        rot: [0.0, 0.0, 0.0, 1.0],
        heading: 0.0,
        steer: 0.0,
        gear: 0,
        raw: f32::NAN,
    };
    // NaN and infinities in quantised fields.
    for (field, bad) in [(1, f32::NAN), (1, f32::INFINITY), (0, f32::NEG_INFINITY)] {
        let mut c = base.clone();
        if field == 0 {
            c.pos[2] = bad;
        } else {
            c.vel[1] = bad;
        }
        let mut rec = c.bytes();
        assert_eq!(
            ty.quantize_records(&mut rec),
            Err(QuantizeError::NotFinite {
                section: 0,
                entity: 0,
                field,
                element: if field == 0 { 2 } else { 1 },
            })
        );
    }
    let mut c = base.clone();
    c.rot[3] = f32::NAN;
    assert!(matches!(
        ty.quantize_records(&mut c.bytes()),
        Err(QuantizeError::NotFinite {
            field: 2,
            element: 3,
            ..
        })
    ));
    c.rot = [0.0; 4];
    assert!(matches!(
        ty.quantize_records(&mut c.bytes()),
        Err(QuantizeError::ZeroQuaternion { field: 2, .. })
    ));
    let mut c = base.clone();
    c.heading = f32::NAN;
    assert!(matches!(
        ty.quantize_records(&mut c.bytes()),
        Err(QuantizeError::NotFinite { field: 3, .. })
    ));
    // Position clamps (declared), velocity beyond its code limit errors.
    let mut c = base.clone();
    c.pos = [5000.0, -5000.0, 1999.9996];
    let mut rec = c.bytes();
    ty.quantize_records(&mut rec).unwrap();
    let pos: Vec<f32> = rec[..12]
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(pos, [2000.0, -2000.0, 2000.0]);
    let mut c = base.clone();
    c.vel[0] = 1e6;
    assert!(matches!(
        ty.quantize_records(&mut c.bytes()),
        Err(QuantizeError::OutOfRange { field: 1, element: 0, value, .. }) if value == 1e6
    ));
    let mut c = base.clone();
    c.gear = 7;
    assert!(matches!(
        ty.quantize_records(&mut c.bytes()),
        Err(QuantizeError::OutOfRange { field: 5, value, min, max, .. })
            if value == 7.0 && min == -1.0 && max == 6.0
    ));

    // The encoder refuses a snapshot that was not quantised.
    let mut c = base.clone();
    c.pos[0] = 1.0004;
    let s = snapshot(&schema, &[c]);
    assert_eq!(
        Encoder::new(schema.clone()).encode(&s, 0, None),
        Err(EncodeError::Snapshot(SnapshotError::NotQuantized {
            section: 0,
            id: 1,
            field: 0,
            element: 0
        }))
    );
    // -0.0 quantises to +0.0.
    let mut c = base.clone();
    c.vel[2] = -0.0;
    let mut s = snapshot(&schema, &[c]);
    assert!(Encoder::new(schema.clone()).encode(&s, 0, None).is_err());
    schema.quantize(&mut s).unwrap();
    assert!(Encoder::new(schema.clone()).encode(&s, 0, None).is_ok());
}

#[test]
fn many_records_name_their_first_bad_value_in_record_order() {
    // Record 1 has a bad value in a later field than record 2 (converted
    // field by field, record 2's fails first): record 1's is named, as
    // converting record by record names it.
    let schema = car_schema();
    let ty = &schema.sections()[0];
    let good = Car {
        pos: [1.0, 2.0, 3.0],
        vel: [0.5; 3],
        rot: [0.0, 0.0, 0.0, 1.0],
        heading: 0.0,
        steer: 0.0,
        gear: 2,
        raw: 1.5,
    };
    let mut late = good.clone();
    late.gear = 9;
    let mut early = good.clone();
    early.vel[2] = 0.123;
    let records = |cars: &[&Car]| cars.iter().flat_map(|c| c.bytes()).collect::<Vec<u8>>();
    let mut recs = records(&[&good, &late, &early]);
    assert_eq!(
        ty.to_codes(&mut recs),
        Err(QuantizeError::NotQuantized {
            entity: 1,
            field: 5,
            element: 0
        })
    );
    let mut recs = records(&[&good, &good, &early]);
    assert_eq!(
        ty.to_codes(&mut recs),
        Err(QuantizeError::NotQuantized {
            entity: 2,
            field: 1,
            element: 2
        })
    );
    // Codes: record 1's gear code is out of range, record 2's velocity
    // code too.
    let mut codes = records(&[&good, &good, &good]);
    ty.to_codes(&mut codes).unwrap();
    let gear_at = 12 + 12 + 16 + 4 + 8;
    codes[CAR_SIZE + gear_at] = 9;
    codes[2 * CAR_SIZE + 12..2 * CAR_SIZE + 16].copy_from_slice(&i32::MAX.to_le_bytes());
    assert_eq!(
        ty.from_codes(&mut codes),
        Err(QuantizeError::BadCode {
            entity: 1,
            field: 5,
            element: 0
        })
    );
    // Each alone.
    let mut codes = records(&[&good, &good, &good]);
    ty.to_codes(&mut codes).unwrap();
    codes[2 * CAR_SIZE + 12..2 * CAR_SIZE + 16].copy_from_slice(&i32::MAX.to_le_bytes());
    assert_eq!(
        ty.from_codes(&mut codes),
        Err(QuantizeError::BadCode {
            entity: 2,
            field: 1,
            element: 0
        })
    );
}

#[test]
fn decoder_refuses_codes_outside_the_declaration() {
    // The same record layout with a wider range: its packets carry codes
    // the narrow schema must refuse. Both schemas differ only in the range,
    // so the packet's schema id is patched to the narrow schema's.
    let wide = Schema::builder()
        .entity("e")
        .field("x", Primitive::F32, 1)
        .quantize(Quantize::step(0.5).with_range(-100.0, 100.0))
        .build()
        .unwrap();
    let narrow = Schema::builder()
        .entity("e")
        .field("x", Primitive::F32, 1)
        .quantize(Quantize::step(0.5).with_range(-10.0, 10.0))
        .build()
        .unwrap();
    assert_ne!(wide.id(), narrow.id());
    let mut s = Snapshot::new(&wide);
    s.section_mut(0)
        .unwrap()
        .insert(4, &50.0f32.to_le_bytes())
        .unwrap();
    let mut packet = Encoder::new(wide.clone()).encode(&s, 0, None).unwrap();
    let at = packet
        .windows(4)
        .position(|w| w == wide.id().to_le_bytes())
        .unwrap();
    packet[at..at + 4].copy_from_slice(&narrow.id().to_le_bytes());
    assert_eq!(
        Decoder::new(narrow).decode(&packet, None).map(|_| ()),
        Err(DecodeError::BadQuantCode {
            section: 0,
            id: 4,
            field: 0,
            element: 0
        })
    );
}

#[test]
fn declarations_are_checked_against_fields() {
    let bad = |f: Primitive, len: usize, q: Quantize| {
        matches!(
            Schema::builder()
                .entity("e")
                .field("x", f, len)
                .quantize(q)
                .build(),
            Err(SchemaError::BadQuantize { .. })
        )
    };
    assert!(bad(Primitive::U16, 1, Quantize::step(0.1)));
    assert!(bad(Primitive::F32, 1, Quantize::int_range(0, 10)));
    assert!(bad(Primitive::F32, 3, Quantize::smallest_three(10)));
    assert!(bad(Primitive::F32, 4, Quantize::smallest_three(1)));
    assert!(bad(Primitive::F32, 4, Quantize::smallest_three(21)));
    assert!(bad(Primitive::U8, 1, Quantize::int_range(0, 256)));
    assert!(bad(
        Primitive::F32,
        1,
        Quantize::angle(24, AngleUnit::Degrees)
    ));
    assert!(bad(
        Primitive::F32,
        1,
        Quantize::angle(0, AngleUnit::Degrees)
    ));
    assert!(bad(Primitive::F32, 1, Quantize::step(-1.0)));
    assert!(bad(
        Primitive::F32,
        1,
        Quantize::step(0.001).with_range(0.0, 1e5)
    ));
    assert!(!bad(
        Primitive::F64,
        1,
        Quantize::step(0.001).with_range(0.0, 1e5)
    ));
}

#[test]
fn schema_id_covers_quantisation() {
    let plain = Schema::builder()
        .entity("e")
        .field("x", Primitive::F32, 1)
        .build()
        .unwrap();
    let q = |q: Quantize| {
        Schema::builder()
            .entity("e")
            .field("x", Primitive::F32, 1)
            .quantize(q)
            .build()
            .unwrap()
            .id()
    };
    let ids = [
        plain.id(),
        q(Quantize::step(0.001)),
        q(Quantize::step(0.002)),
        q(Quantize::step(0.001).with_range(-1.0, 1.0)),
        q(Quantize::step(0.001).with_range(-1.0, 1.0).clamped()),
        q(Quantize::angle(16, AngleUnit::Degrees)),
        q(Quantize::angle(16, AngleUnit::Radians)),
    ];
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_eq!(q(Quantize::step(0.001)), q(Quantize::step(0.001)));
}

#[test]
fn text_forms_agree_with_builder() {
    let json = r#"{"entities":[{"name":"car","fields":[
        {"name":"pos","type":"f32","len":3,"quantize":{"step":0.001,"range":[-2000,2000],"out_of_range":"clamp"}},
        {"name":"vel","type":"f32","len":3,"quantize":{"step":0.01}},
        {"name":"rot","type":"f32","len":4,"quantize":{"smallest_three":10}},
        {"name":"heading","type":"f32","quantize":{"angle_bits":16,"unit":"degrees"}},
        {"name":"steer","type":"f64","quantize":{"angle_bits":12,"unit":"radians"}},
        {"name":"gear","type":"i8","quantize":{"range":[-1,6]}},
        {"name":"raw","type":"f32"}]}]}"#;
    let toml = r#"
[[entities]]
name = "car"
fields = [
  { name = "pos", type = "f32", len = 3, quantize = { step = 0.001, range = [-2000, 2000], out_of_range = "clamp" } },
  { name = "vel", type = "f32", len = 3, quantize = { step = 0.01 } },
  { name = "rot", type = "f32", len = 4, quantize = { smallest_three = 10 } },
  { name = "heading", type = "f32", quantize = { angle_bits = 16, unit = "degrees" } },
  { name = "steer", type = "f64", quantize = { angle_bits = 12, unit = "radians" } },
  { name = "gear", type = "i8", quantize = { range = [-1, 6] } },
  { name = "raw", type = "f32" },
]
"#;
    let want = car_schema();
    assert_eq!(Schema::from_json(json).unwrap(), want);
    assert_eq!(Schema::from_toml(toml).unwrap(), want);
    assert_eq!(Schema::from_json(&want.to_json()).unwrap(), want);
    for bad in [
        r#"{"entities":[{"name":"a","fields":[{"name":"x","type":"f32","quantize":{"angle_bits":8}}]}]}"#,
        r#"{"entities":[{"name":"a","fields":[{"name":"x","type":"f32","quantize":{"range":[0,1]}}]}]}"#,
        r#"{"entities":[{"name":"a","fields":[{"name":"x","type":"f32","quantize":{"smallest_three":9,"step":1}}]}]}"#,
        r#"{"entities":[{"name":"a","fields":[{"name":"x","type":"f32","quantize":{}}]}]}"#,
    ] {
        assert!(
            matches!(Schema::from_json(bad), Err(SchemaError::BadQuantize { .. })),
            "{bad}"
        );
    }
    assert!(matches!(
        Schema::from_json(
            r#"{"entities":[{"name":"a","fields":[{"name":"x","type":"f32","quantize":{"stpe":1}}]}]}"#
        ),
        Err(SchemaError::Parse { .. })
    ));
}

/// A positive finite `f64` with any mantissa, `2^lo ..= 2^hi` in magnitude.
fn any_positive(lo: i32, hi: i32) -> impl Strategy<Value = f64> {
    (2f64.powi(lo).to_bits()..=2f64.powi(hi).to_bits()).prop_map(f64::from_bits)
}

proptest! {
    /// `Schema::from_json(&schema.to_json())` is the schema: every float
    /// of a declaration (a step and its range, a grid step, an integration
    /// scale) comes back with the same bits, so the schema id (which hashes
    /// those bits) is the same, as a capture's header needs. JSON's
    /// shortest decimal forms of such floats have up to 17 digits and
    /// exponents far beyond 22: a parse that is not correctly rounded reads
    /// a neighbouring float.
    #[test]
    fn json_form_keeps_every_float_of_a_declaration(
        step in any_positive(-900, 900),
        span in any_positive(0, 40),
        grid in any_positive(-1000, 1000),
        scale in any_positive(-1000, 1000),
    ) {
        let schema = Schema::builder()
            .entity("body")
            .field("t", Primitive::U32, 1)
            .field("v", Primitive::F64, 1)
            .field("p", Primitive::F64, 1)
            .integrate(Integrate::new("v", "t", scale))
            .field("g", Primitive::F64, 1)
            .grid(grid)
            .field("x", Primitive::F64, 1)
            .quantize(Quantize::step(step).with_range(-span * step, span * step))
            .build()
            .unwrap();
        let back = Schema::from_json(&schema.to_json()).unwrap();
        prop_assert_eq!(back.id(), schema.id());
        prop_assert_eq!(back, schema);
    }
}

/// An `f64` quaternion's codes are whole `i64`s: the most negative one is
/// refused like any other out-of-range code (its magnitude does not fit an
/// `i64`), in debug builds too.
#[test]
fn most_negative_f64_quaternion_code_is_refused() {
    let schema = Schema::builder()
        .entity("body")
        .field("rot", Primitive::F64, 4)
        .quantize(Quantize::smallest_three(12))
        .build()
        .unwrap();
    let ty = &schema.sections()[0];
    for element in 1..4 {
        let mut codes = [0i64; 4];
        codes[element] = i64::MIN;
        let mut rec: Vec<u8> = codes.iter().flat_map(|c| c.to_le_bytes()).collect();
        assert_eq!(
            ty.from_codes(&mut rec),
            Err(QuantizeError::BadCode {
                entity: 0,
                field: 0,
                element,
            })
        );
    }
}
