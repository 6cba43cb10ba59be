//! Criterion bench of encode + decode per real Quake 3 snapshot (issue 13's
//! "≤ 8 µs" target), on two of the demos in `../shared/data/q3/` (or
//! `$TICKPACK_Q3_DIR`), with a dictionary set trained on three others the
//! way the report trains it ([`tickpack_benches::q3`]): once (`zstd`) with
//! the trained dictionary and no model, once
//! (`model`) with the dictionary's context model as well (`Entropy::Best`). One iteration replays a run of
//! consecutive snapshots, each against the baseline Quake 3 used and that
//! baseline's recall (computed beforehand, outside the timing); the
//! throughput is snapshots per second. Skipped with a message when the
//! demos are absent.
//!
//! ```sh
//! cargo bench -p tickpack-benches --bench q3              # measure
//! cargo bench -p tickpack-benches --bench q3 -- --test    # CI smoke: fewer snapshots, run once
//! ```

#![forbid(unsafe_code)]
// criterion_group!/criterion_main! generate undocumented pub fns.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tickpack::{Decoder, Dictionary, Encoder, Recall, Snapshot};
use tickpack_benches::q3::{
    data_dir, read_demos, reference, replay, train, train_model, Demo, Recalls, QUICK_SNAPSHOTS,
};

/// The measured demos (the two largest per snapshot); the other three train.
const MEASURED: [&str; 2] = ["2002-Duel_4_WCG", "2004-Duel_2_Quakecon"];
/// Snapshots read per demo when measuring (training uses them all).
const SNAPSHOTS: usize = 3000;

/// One measured demo, its recalls and its two dictionary sets.
struct Case {
    demo: Demo,
    recalls: Vec<Option<Recall>>,
    zstd: Dictionary,
    model: Dictionary,
}

fn load(quick: bool) -> Option<Vec<Case>> {
    let Some(dir) = data_dir() else {
        eprintln!(
            "q3 bench skipped: ../shared/data/q3 (the Quake 3 demos) is absent; set TICKPACK_Q3_DIR"
        );
        return None;
    };
    let max = if quick { QUICK_SNAPSHOTS } else { SNAPSHOTS };
    let demos: Vec<Demo> =
        read_demos(&dir, max).unwrap_or_else(|e| panic!("reading the Quake 3 demos: {e}"));
    let (measured, training): (Vec<Demo>, Vec<Demo>) = demos
        .into_iter()
        .partition(|d| MEASURED.contains(&d.name.as_str()));
    if measured.len() != MEASURED.len() || training.is_empty() {
        eprintln!(
            "q3 bench skipped: {} lacks the demos {MEASURED:?}",
            dir.display()
        );
        return None;
    }
    let training: Vec<&Demo> = training.iter().collect();
    let schema = &training[0].schema;
    let zstd = train(schema, &training).unwrap_or_else(|e| panic!("training: {e}"));
    let table = train_model(schema, &training).unwrap_or_else(|e| panic!("training: {e}"));
    let model = zstd.clone().with_model(table);
    let cases = measured
        .into_iter()
        .map(|demo| {
            let mut r = Recalls::new();
            let recalls = (0..demo.ticks.len()).map(|i| r.step(&demo, i)).collect();
            // Checks every packet once and shows the bytes.
            for (label, dict) in [("zstd", &zstd), ("model", &model)] {
                let (bytes, us) = replay(&demo, Some(dict))
                    .unwrap_or_else(|e| panic!("{}: {label}: {e}", demo.name));
                eprintln!(
                    "{} {label}: {} snapshots, {bytes:.2} B per packet, {us:.2} µs (one pass)",
                    demo.name,
                    demo.ticks.len()
                );
            }
            Case {
                demo,
                recalls,
                zstd: zstd.clone(),
                model: model.clone(),
            }
        })
        .collect();
    Some(cases)
}

/// Encodes and decodes every snapshot of `c` once with `dict`; the time.
fn pass(c: &Case, dict: &Dictionary) -> Duration {
    let d = &c.demo;
    let mut enc = Encoder::new(d.schema.clone());
    let mut dec = Decoder::new(d.schema.clone());
    enc.set_dictionary(Some(dict))
        .and_then(|()| dec.add_dictionary(dict))
        .unwrap_or_else(|e| panic!("dictionary: {e}"));
    let (mut packet, mut out) = (Vec::new(), Snapshot::default());
    let t = Instant::now();
    for (i, tick) in d.ticks.iter().enumerate() {
        let r = reference(d, i, c.recalls[i].as_ref());
        enc.encode_to_vec(black_box(tick), d.sequences[i], r, &mut packet)
            .unwrap_or_else(|e| panic!("{}: encode {i}: {e}", d.name));
        dec.decode_into(black_box(&packet), r, &mut out)
            .unwrap_or_else(|e| panic!("{}: decode {i}: {e}", d.name));
    }
    t.elapsed()
}

fn bench(c: &mut Criterion) {
    let quick = std::env::args().any(|a| a == "--test");
    let Some(cases) = load(quick) else {
        return;
    };
    for case in &cases {
        let mut g = c.benchmark_group(format!("q3/{}", case.demo.name));
        g.throughput(Throughput::Elements(case.demo.ticks.len() as u64));
        g.sample_size(10);
        for (label, dict) in [("zstd", &case.zstd), ("model", &case.model)] {
            g.bench_function(label, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| pass(case, dict)).sum())
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
