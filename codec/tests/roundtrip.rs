//! Round trips over random schemas and snapshots, through every API path,
//! with and without baseline and dictionary.
#![allow(clippy::unwrap_used)]

mod common;

use common::{evolve, random_snapshot, roundtrip, schema_strategy, Rng};
use proptest::prelude::*;
use tickpack::{Dictionary, Schema, Snapshot};

fn dictionary(rng: &mut Rng) -> Dictionary {
    // Raw-content dictionary: zstd uses it as history for matches.
    Dictionary::new(rng.next() as u32, rng.bytes(512))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn keyframes(schema in schema_strategy(), seed in 1u64.., sequence: u16) {
        let mut rng = Rng(seed);
        let snap = random_snapshot(&schema, &mut rng, 40, 200);
        roundtrip(&schema, &snap, sequence, None, None);
        let d = dictionary(&mut rng);
        roundtrip(&schema, &snap, sequence, None, Some(&d));
    }

    #[test]
    fn delta_chains(schema in schema_strategy(), seed in 1u64.., start: u16, dist in 1u16..40) {
        // A chain of ticks with spawns, despawns and changes, each coded
        // against the tick `dist` back, crossing the u16 wrap when start is high.
        let mut rng = Rng(seed);
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
        let mut rng = Rng(seed);
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
    let mut rng = Rng(9);
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
    let mut rng = Rng(3);
    let snap = random_snapshot(&schema, &mut rng, 600, 100_000);
    let p = roundtrip(&schema, &snap, 0, None, None);
    assert!(p.len() > tickpack::MAX_BLOCK_CONTENT);
}
