//! Smallest-three fields across layout changes (FORMAT.md 9.1): rotations
//! that turn through every change of largest index round-trip bit for bit
//! with `int` and `predict`, against baselines and spaced priors, through
//! `encode` and `encode_coded_to_vec` alike (the same bytes), and corrupted
//! packets decode to an error or to quantised values.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tickpack::quant::{snapshot_to_codes, Quantize};
use tickpack::{
    Baseline, Decoder, DeltaOp, Encoder, Field, Primitive, Reference, Schema, Snapshot,
};

fn schema(op: DeltaOp) -> Schema {
    Schema::builder()
        .entity("body")
        .field_with(Field {
            name: "rot".into(),
            ty: Primitive::F32,
            len: 4,
            delta: Some(op),
        })
        .quantize(Quantize::smallest_three(10))
        .field_with(Field {
            name: "fine".into(),
            ty: Primitive::F64,
            len: 4,
            delta: Some(op),
        })
        .quantize(Quantize::smallest_three(16))
        .field("tag", Primitive::U8, 1)
        .build()
        .unwrap()
}

struct Rng(u64);

impl Rng {
    fn f(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// `q · (cos a, sin a · axis)`, normalised: a turn of `2a` about `axis`.
fn turn(q: [f64; 4], axis: [f64; 3], a: f64) -> [f64; 4] {
    let n = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
        .sqrt()
        .max(1e-9);
    let (s, c) = a.sin_cos();
    let r = [s * axis[0] / n, s * axis[1] / n, s * axis[2] / n, c];
    // (x, y, z, w) Hamilton product.
    let p = [
        q[3] * r[0] + q[0] * r[3] + q[1] * r[2] - q[2] * r[1],
        q[3] * r[1] - q[0] * r[2] + q[1] * r[3] + q[2] * r[0],
        q[3] * r[2] + q[0] * r[1] - q[1] * r[0] + q[2] * r[3],
        q[3] * r[3] - q[0] * r[0] - q[1] * r[1] - q[2] * r[2],
    ];
    let n = p.iter().map(|c| c * c).sum::<f64>().sqrt();
    p.map(|c| c / n)
}

fn largest(q: &[f32]) -> usize {
    (0..4).fold(0, |k, i| if q[i].abs() > q[k].abs() { i } else { k })
}

/// Bodies turning steadily about their own axes, a few degrees a tick,
/// quantised; some come and go.
fn ticks(schema: &Schema, seed: u64, n: usize) -> Vec<Snapshot> {
    let mut rng = Rng(seed);
    let mut bodies: Vec<([f64; 4], [f64; 3], f64)> = (0..24)
        .map(|_| {
            let q = [rng.f(), rng.f(), rng.f(), rng.f()];
            (
                turn(q, [1.0, 0.0, 0.0], 0.0),
                [rng.f(), rng.f(), rng.f()],
                0.03 + 0.15 * rng.f().abs(),
            )
        })
        .collect();
    let mut out = Vec::new();
    for t in 0..n {
        let mut s = Snapshot::new(schema);
        for (i, b) in bodies.iter_mut().enumerate() {
            b.0 = turn(b.0, b.1, b.2);
            if (t + i) % 17 == 0 {
                continue;
            }
            let mut rec: Vec<u8> = b.0.iter().flat_map(|c| (*c as f32).to_le_bytes()).collect();
            rec.extend(b.0.iter().flat_map(|c| c.to_le_bytes()));
            rec.push(i as u8);
            s.section_mut(0).unwrap().insert(i as u32, &rec).unwrap();
        }
        schema.quantize(&mut s).unwrap();
        out.push(s);
    }
    out
}

/// Tick `t`'s reference in `s`: the baseline `d` ticks back, its prior
/// 1 to 7 ticks behind it.
fn reference_at(s: &[Snapshot], t: usize, d: usize) -> Reference<'_> {
    match t.checked_sub(d) {
        None => Reference::KEYFRAME,
        Some(b) => {
            let base = Baseline {
                sequence: b as u16,
                snapshot: &s[b],
            };
            match b.checked_sub(1 + t % 7) {
                Some(p) => Reference::predicted(
                    base,
                    Baseline {
                        sequence: p as u16,
                        snapshot: &s[p],
                    },
                ),
                None => Reference::delta(base),
            }
        }
    }
}

#[test]
fn every_layout_change_round_trips_with_and_without_prediction() {
    for op in [DeltaOp::Int, DeltaOp::Predict] {
        let schema = schema(op);
        let ticks = ticks(&schema, 0x9e37_79b9_7f4a_7c15, 400);
        let mut enc = Encoder::new(schema.clone());
        enc.set_checksum(true);
        let mut shared = Encoder::new(schema.clone());
        shared.set_checksum(true);
        let mut dec = Decoder::new(schema.clone());
        let mut seen = [[false; 4]; 4];
        let mut codes: Vec<Snapshot> = Vec::new();
        for (t, tick) in ticks.iter().enumerate() {
            let mut c = Snapshot::default();
            snapshot_to_codes(&schema, tick, &mut c).unwrap();
            codes.push(c);
            // Baselines 1 to 9 ticks back, priors 1 to 7 behind them.
            let d = 1 + t % 9;
            let reference = |s| reference_at(s, t, d);
            let packet = enc.encode(tick, t as u16, reference(&ticks)).unwrap();
            let mut coded = Vec::new();
            shared
                .encode_coded_to_vec(tick, &codes[t], t as u16, reference(&codes), &mut coded)
                .unwrap();
            assert_eq!(coded, packet, "{op:?} tick {t}: the coded path's bytes");
            let (_, got) = dec.decode(&packet, reference(&ticks)).unwrap();
            assert_eq!(&got, tick, "{op:?} tick {t}");
            if let Some(b) = t.checked_sub(d) {
                for (id, rec) in tick.sections()[0].iter() {
                    if let Some(base) = ticks[b].sections()[0].get(id) {
                        let k = |r: &[u8]| {
                            let q: Vec<f32> = r[..16]
                                .chunks(4)
                                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                                .collect();
                            largest(&q)
                        };
                        seen[k(base)][k(rec)] = true;
                    }
                }
            }
        }
        for (a, row) in seen.iter().enumerate() {
            for (b, &s) in row.iter().enumerate() {
                assert!(s || a == b, "{op:?}: no change from {a} to {b}");
            }
        }
    }
}

#[test]
fn corrupted_packets_decode_to_an_error_or_quantised_values() {
    let schema = schema(DeltaOp::Predict);
    let ticks = ticks(&schema, 0x2545_f491_4f6c_dd1d, 40);
    let mut enc = Encoder::new(schema.clone());
    let mut rng = Rng(7);
    for t in 2..ticks.len() {
        let r = Reference::predicted(
            Baseline {
                sequence: (t - 1) as u16,
                snapshot: &ticks[t - 1],
            },
            Baseline {
                sequence: (t - 2) as u16,
                snapshot: &ticks[t - 2],
            },
        );
        let packet = enc.encode(&ticks[t], t as u16, r).unwrap();
        for _ in 0..200 {
            let mut p = packet.clone();
            let at = ((rng.f().abs() * p.len() as f64) as usize).min(p.len() - 1);
            p[at] ^= 1 << ((rng.f().abs() * 8.0) as u32).min(7);
            if let Ok((_, got)) = Decoder::new(schema.clone()).decode(&p, r) {
                let mut again = got.clone();
                schema.quantize(&mut again).unwrap();
                assert_eq!(
                    again, got,
                    "tick {t}: a decoded value that is not quantised"
                );
            }
        }
    }
}
