//! Round trips over random schemas and snapshots, through every API path,
//! with and without baseline and dictionary.
#![allow(clippy::unwrap_used)]

mod common;

use common::roundtrip;
use proptest::prelude::*;
use tickpack::{Dictionary, Schema, Snapshot};
use tickpack_testkit::gen::{evolve, random_snapshot, schema_strategy};
use tickpack_testkit::rng::SplitMix64;

fn dictionary(rng: &mut SplitMix64) -> Dictionary {
    // Raw-content dictionary: zstd uses it as history for matches.
    Dictionary::new(rng.next_u64() as u32, rng.bytes(512))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn keyframes(schema in schema_strategy(), seed in 1u64.., sequence: u16) {
        let mut rng = SplitMix64::new(seed);
        let snap = random_snapshot(&schema, &mut rng, 40, 200);
        roundtrip(&schema, &snap, sequence, None, None);
        let d = dictionary(&mut rng);
        roundtrip(&schema, &snap, sequence, None, Some(&d));
    }

    #[test]
    fn delta_chains(schema in schema_strategy(), seed in 1u64.., start: u16, dist in 1u16..40) {
        // A chain of ticks with spawns, despawns and changes, each coded
        // against the tick `dist` back, crossing the u16 wrap when start is high.
        let mut rng = SplitMix64::new(seed);
        let d = dictionary(&mut rng);
        let mut ticks = vec![random_snapshot(&schema, &mut rng, 30, 100)];
        for _ in 0..12 {
            let next = evolve(&schema, ticks.last().unwrap(), &mut rng, 100);
            ticks.push(next);
        }
        for i in 1..ticks.len() {
            let b = i.saturating_sub(dist as usize);
            let seq = start.wrapping_add(i as u16);
            let bseq = start.wrapping_add(b as u16);
            if b == i { continue; }
            let dict = if i % 2 == 0 { Some(&d) } else { None };
            roundtrip(&schema, &ticks[i], seq, Some((bseq, &ticks[b])), dict);
        }
    }

    #[test]
    fn against_unrelated_baseline(schema in schema_strategy(), seed in 1u64..) {
        let mut rng = SplitMix64::new(seed);
        let a = random_snapshot(&schema, &mut rng, 30, 60);
        let b = random_snapshot(&schema, &mut rng, 30, 60);
        roundtrip(&schema, &a, 7, Some((6, &b)), None);
        roundtrip(&schema, &a, 7, Some((6, &Snapshot::new(&schema))), None);
        roundtrip(&schema, &Snapshot::new(&schema), 7, Some((6, &b)), None);
    }
}

#[test]
fn unchanged_entities_cost_almost_nothing() {
    let schema = Schema::builder()
        .entity("cube")
        .field("q", tickpack::Primitive::I32, 4)
        .field("p", tickpack::Primitive::I32, 3)
        .field("touch", tickpack::Primitive::I32, 1)
        .build()
        .unwrap();
    let mut rng = SplitMix64::new(9);
    let mut a = Snapshot::new(&schema);
    for id in 0..901 {
        a.section_mut(0)
            .unwrap()
            .insert(id, &rng.bytes(32))
            .unwrap();
    }
    let same = roundtrip(&schema, &a, 2, Some((1, &a)), None);
    // header (8) + one block header + mode bytes + zero spawns
    assert!(same.len() <= 14, "{} bytes for an idle tick", same.len());
    // One changed cube out of 901: well under one record plus the set.
    let mut b = a.clone();
    let mut rec = b.sections()[0].get(450).unwrap().to_vec();
    rec[16] ^= 1;
    b.section_mut(0).unwrap().insert(450, &rec).unwrap();
    let one = roundtrip(&schema, &b, 2, Some((1, &a)), None);
    assert!(
        one.len() <= 14 + 3 + 32,
        "{} bytes for one change",
        one.len()
    );
}

#[test]
fn large_sections_span_blocks() {
    let schema = Schema::builder()
        .entity("blob")
        .field("x", tickpack::Primitive::U64, 8)
        .build()
        .unwrap();
    let mut rng = SplitMix64::new(3);
    let snap = random_snapshot(&schema, &mut rng, 2400, 100_000);
    let p = roundtrip(&schema, &snap, 0, None, None);
    assert!(p.len() > tickpack::MAX_BLOCK_CONTENT);
}

mod prediction {
    use proptest::prelude::*;
    use tickpack::{
        Baseline, DecodeError, Decoder, DeltaOp, Encoder, Field, Primitive, Schema, Snapshot,
    };
    use tickpack_testkit::gen::{evolve, random_snapshot, schema_strategy};
    use tickpack_testkit::rng::SplitMix64;

    /// The schema with every field switched to `Predict`.
    fn predictive(schema: &Schema) -> Schema {
        let mut b = Schema::builder();
        for ty in schema.sections() {
            b = b.entity(ty.name());
            for f in ty.fields() {
                b = b.field_with(Field {
                    delta: Some(DeltaOp::Predict),
                    ..f.clone()
                });
            }
        }
        b.build().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn roundtrip_with_prior(
            schema in schema_strategy(),
            seed in 1u64..,
            start: u16,
            back in 1u16..50,
            ahead in 1u16..50,
        ) {
            let schema = predictive(&schema);
            let mut rng = SplitMix64::new(seed);
            let t0 = random_snapshot(&schema, &mut rng, 20, 60);
            let t1 = evolve(&schema, &t0, &mut rng, 60);
            let t2 = evolve(&schema, &t1, &mut rng, 60);
            // Prior and baseline spaced unlike baseline and packet: the
            // prediction scales the motion (FORMAT.md 4.6).
            let (s0, s1) = (start, start.wrapping_add(back));
            let s2 = s1.wrapping_add(ahead);
            let (b, p) = (Baseline { sequence: s1, snapshot: &t1 }, Baseline { sequence: s0, snapshot: &t0 });
            let mut enc = Encoder::new(schema.clone());
            enc.set_checksum(true);
            let mut packet = Vec::new();
            enc.encode_to_vec(&t2, s2, tickpack::Reference::predicted(b, p), &mut packet).unwrap();
            let mut dec = Decoder::new(schema.clone());
            let mut out = Snapshot::new(&schema);
            let h = dec.decode_into(&packet, tickpack::Reference::predicted(b, p), &mut out).unwrap();
            prop_assert_eq!(h.prior, Some(s0));
            prop_assert_eq!(&out, &t2);
            // Without the prior, or with another one, the decoder refuses.
            prop_assert_eq!(dec.decode_into(&packet, Some(b), &mut out), Err(DecodeError::MissingPrior { sequence: s0 }));
            let wrong = Baseline { sequence: s0.wrapping_sub(1), snapshot: &t0 };
            prop_assert_eq!(
                dec.decode_into(&packet, tickpack::Reference::predicted(b, wrong), &mut out),
                Err(DecodeError::PriorMismatch { expected: s0, actual: s0.wrapping_sub(1) })
            );
        }
    }

    #[test]
    fn steady_motion_costs_nothing() {
        let schema = Schema::builder()
            .entity("body")
            .field_with(Field {
                name: "pos".into(),
                ty: Primitive::I32,
                len: 3,
                delta: Some(DeltaOp::Predict),
            })
            .field("kind", Primitive::U8, 1)
            .build()
            .unwrap();
        let tick = |t: i32| {
            let mut s = Snapshot::new(&schema);
            for id in 0..100i32 {
                let mut rec: Vec<u8> = [id * 100 + t * (id % 7), -t * 3, 50]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                rec.push(1);
                s.section_mut(0).unwrap().insert(id as u32, &rec).unwrap();
            }
            s
        };
        let (t0, t6, t12) = (tick(0), tick(6), tick(12));
        let mut enc = Encoder::new(schema.clone());
        let plain = enc
            .encode(
                &t12,
                12,
                Some(Baseline {
                    sequence: 6,
                    snapshot: &t6,
                }),
            )
            .unwrap();
        let mut predicted = Vec::new();
        enc.encode_to_vec(
            &t12,
            12,
            tickpack::Reference::predicted(
                Baseline {
                    sequence: 6,
                    snapshot: &t6,
                },
                Baseline {
                    sequence: 0,
                    snapshot: &t0,
                },
            ),
            &mut predicted,
        )
        .unwrap();
        // Every body moved, exactly as predicted: each changed row codes
        // its moved elements as 0.
        assert!(
            predicted.len() < plain.len(),
            "plain {} vs predicted {}",
            plain.len(),
            predicted.len()
        );
        let mut dec = Decoder::new(schema.clone());
        let mut out = Snapshot::new(&schema);
        let reference = tickpack::Reference::predicted(
            Baseline {
                sequence: 6,
                snapshot: &t6,
            },
            Baseline {
                sequence: 0,
                snapshot: &t0,
            },
        );
        dec.decode_into(&predicted, reference, &mut out).unwrap();
        assert_eq!(out, t12);
    }

    /// A body that moved from prior to baseline, then stopped: against the
    /// baseline it is unchanged, so it costs nothing, whatever its
    /// prediction (before value-only prediction it was a changed row).
    #[test]
    fn an_unchanged_entity_stays_unchanged_under_prediction() {
        let schema = Schema::builder()
            .entity("body")
            .field_with(Field {
                name: "pos".into(),
                ty: Primitive::F32,
                len: 3,
                delta: Some(DeltaOp::Predict),
            })
            .field("hp", Primitive::U16, 1)
            .build()
            .unwrap();
        let tick = |x: f32, hp: u16| {
            let mut s = Snapshot::new(&schema);
            for id in 0..50u32 {
                let mut rec: Vec<u8> = [x + id as f32, 2.0 * x, -x]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                rec.extend_from_slice(&hp.to_le_bytes());
                s.section_mut(0).unwrap().insert(id, &rec).unwrap();
            }
            s
        };
        let (prior, base) = (tick(1.0, 100), tick(5.0, 100));
        let reference = tickpack::Reference::predicted(
            Baseline {
                sequence: 10,
                snapshot: &base,
            },
            Baseline {
                sequence: 7,
                snapshot: &prior,
            },
        );
        let mut enc = Encoder::new(schema.clone());
        let mut dec = Decoder::new(schema.clone());
        let mut out = Snapshot::new(&schema);
        let mut packet = Vec::new();
        // At rest: the empty payload (a 4-byte header naming the prior).
        enc.encode_to_vec(&base, 12, reference, &mut packet)
            .unwrap();
        assert_eq!(packet.len(), 4, "{packet:02x?}");
        dec.decode_into(&packet, reference, &mut out).unwrap();
        assert_eq!(out, base);
        // At rest but hurt: the rows carry `hp` alone, no position.
        let hurt = tick(5.0, 90);
        enc.encode_to_vec(&hurt, 12, reference, &mut packet)
            .unwrap();
        let alone = enc
            .encode(
                &hurt,
                12,
                Some(Baseline {
                    sequence: 10,
                    snapshot: &base,
                }),
            )
            .unwrap();
        assert!(
            packet.len() <= alone.len() + 1,
            "{} against {} without prior",
            packet.len(),
            alone.len()
        );
        dec.decode_into(&packet, reference, &mut out).unwrap();
        assert_eq!(out, hurt);
    }
}

#[test]
fn small_dictionaries_still_compress_large_blocks() {
    // A 512-byte dictionary once capped zstd's block size below the 8 KiB
    // the format allows, so every larger block was stored raw.
    let schema = Schema::builder()
        .entity("e")
        .field("v", tickpack::Primitive::U32, 4)
        .build()
        .unwrap();
    let mut snap = Snapshot::new(&schema);
    for id in 0..400u32 {
        let rec: Vec<u8> = [id % 7, 100, id / 3, 5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        snap.section_mut(0).unwrap().insert(id, &rec).unwrap();
    }
    let plain = roundtrip(&schema, &snap, 1, None, None);
    let dict = Dictionary::new(9, (0..512u32).map(|i| (i % 13) as u8).collect::<Vec<u8>>());
    let with = roundtrip(&schema, &snap, 1, None, Some(&dict));
    assert!(
        with.len() < snap.raw_len() / 4,
        "{} of {} raw",
        with.len(),
        snap.raw_len()
    );
    assert!(
        with.len() <= plain.len() + 32,
        "with dict {} vs without {}",
        with.len(),
        plain.len()
    );
}

mod entropy {
    use super::common::roundtrip;
    use proptest::prelude::*;
    use tickpack::{Baseline, Decoder, Dictionary, Encoder, Entropy};
    use tickpack_testkit::gen::{evolve, random_snapshot, schema_strategy};
    use tickpack_testkit::rng::SplitMix64;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn every_entropy_mode_roundtrips(schema in schema_strategy(), seed in 1u64..) {
            let mut rng = SplitMix64::new(seed);
            let t0 = random_snapshot(&schema, &mut rng, 30, 80);
            let t1 = evolve(&schema, &t0, &mut rng, 80);
            // A dictionary holding the first tick's payload.
            let mut enc = Encoder::new(schema.clone());
            let mut payload = Vec::new();
            enc.payload(&t0, 0, None, &mut payload).unwrap();
            payload.extend_from_slice(&rng.bytes(64));
            let dict = Dictionary::new(77, payload);
            roundtrip(&schema, &t1, 5, Some((4, &t0)), Some(&dict));
            let b = Some(Baseline { sequence: 4, snapshot: &t0 });
            let mut sizes = Vec::new();
            for mode in [Entropy::Best, Entropy::Zstd, Entropy::Model] {
                let mut enc = Encoder::new(schema.clone());
                enc.set_dictionary(Some(&dict)).unwrap();
                enc.set_entropy(mode);
                let p = enc.encode(&t1, 5, b).unwrap();
                let mut dec = Decoder::new(schema.clone());
                dec.add_dictionary(&dict).unwrap();
                prop_assert_eq!(dec.decode(&p, b).unwrap().1, t1.clone());
                sizes.push(p.len());
            }
            // Best-of is never worse than zstd alone.
            prop_assert!(sizes[0] <= sizes[1], "{:?}", sizes);
        }
    }
}
