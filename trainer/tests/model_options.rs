//! `train --model-flags` (a table for one combination of context flags)
//! and `--operators-by model` (operators chosen by the held-out bits the
//! model codes).
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use tickpack::{Schema, Section, Snapshot};
use tickpack_sets::capture::{CaptureHeader, CaptureOptions, CaptureWriter};
use tickpack_sets::dictset::DictKind;
use tickpack_trainer::measure::Job;
use tickpack_trainer::model::held_out_model_bits;
use tickpack_trainer::train::{train, OperatorObjective, TrainOptions};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tickpack-model-options-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Eight entities whose `x` moves by a steady step of its own (exactly
/// what `predict` guesses) and whose `n` wanders at random; both declared
/// `int`.
fn schema() -> Schema {
    Schema::from_json(
        r#"{"entities":[{"name":"e","fields":[{"name":"x","type":"i32","delta":"int"},{"name":"n","type":"i32","delta":"int"}]}]}"#,
    )
    .unwrap()
}

fn ticks(schema: &Schema, n: u64) -> Vec<Snapshot> {
    let mut rng = 11u64;
    let mut next = move || {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (rng >> 33) as i32
    };
    let mut wander = [0i32; 8];
    (0..n)
        .map(|t| {
            let mut recs = Vec::new();
            for (e, w) in wander.iter_mut().enumerate() {
                let x = 1000 * e as i32 + (3 + 5 * e as i32) * t as i32;
                *w += next() % 9 - 4;
                recs.extend_from_slice(&x.to_le_bytes());
                recs.extend_from_slice(&w.to_le_bytes());
            }
            let sec = Section::from_parts((0..8).collect(), recs, 8).unwrap();
            Snapshot::from_sections(schema, vec![sec]).unwrap()
        })
        .collect()
}

fn capture(dir: &std::path::Path) -> PathBuf {
    let schema = schema();
    let cap = dir.join("steady.tpcap");
    let header = CaptureHeader::new("steady", "1", 60, schema.clone());
    let f = std::io::BufWriter::new(std::fs::File::create(&cap).unwrap());
    let mut w = CaptureWriter::new(f, &header, CaptureOptions::default()).unwrap();
    for (t, s) in ticks(&schema, 400).iter().enumerate() {
        w.tick(t as u64, s).unwrap();
    }
    w.finish().unwrap();
    cap
}

#[test]
fn model_flags_train_one_table_for_those_flags() {
    let dir = tmp("flags");
    let cap = capture(&dir);
    for flags in [0u16, 2] {
        let (set, report) = train(&TrainOptions {
            captures: vec![cap.clone()],
            out: dir.join(format!("set{flags}")),
            sizes: vec![512],
            progress: false,
            model_flags: Some(flags),
            ..TrainOptions::default()
        })
        .unwrap();
        let model = report.model.expect("a table trained");
        assert_eq!(model.flags, flags);
        let tried: Vec<u16> = model.bytes_mean_by_flags.iter().map(|f| f.0).collect();
        assert_eq!(tried, [flags]);
        if model.kept {
            let table = set.dictionary(DictKind::Delta).unwrap().model().unwrap();
            assert_eq!(table.flags(), flags);
        }
    }
    // Without the option every combination is tried.
    let (_, report) = train(&TrainOptions {
        captures: vec![cap],
        out: dir.join("all"),
        sizes: vec![512],
        progress: false,
        ..TrainOptions::default()
    })
    .unwrap();
    assert_eq!(report.model.unwrap().bytes_mean_by_flags.len(), 8);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_model_objective_prices_what_the_model_codes() {
    let schema = schema();
    let snaps = ticks(&schema, 120);
    let jobs: Vec<Job<'_>> = (12..snaps.len())
        .map(|i| Job {
            snapshot: &snaps[i],
            sequence: i as u16,
            baseline: Some(((i - 3) as u16, &snaps[i - 3])),
            prior: Some(((i - 6) as u16, &snaps[i - 6])),
            recall: None,
            history: None,
        })
        .collect();
    let (train_jobs, held) = jobs.split_at(80);
    let with = |x: &str, n: &str| {
        let s = Schema::from_json(&format!(
            r#"{{"entities":[{{"name":"e","fields":[{{"name":"x","type":"i32","delta":"{x}"}},{{"name":"n","type":"i32","delta":"{n}"}}]}}]}}"#
        ))
        .unwrap();
        held_out_model_bits(&s, 0, train_jobs, held)
            .unwrap()
            .unwrap()
    };
    // `x` moves as predicted: nothing but its mask bits and a zero.
    assert!(with("predict", "int") < with("int", "int") / 2);
    // A random walk guessed from its last step costs more than its step.
    assert!(with("predict", "int") < with("predict", "predict"));
}

#[test]
fn operators_by_model_choose_by_the_models_bits() {
    let dir = tmp("ops");
    let cap = capture(&dir);
    let trained = |by: OperatorObjective, name: &str| {
        train(&TrainOptions {
            captures: vec![cap.clone()],
            out: dir.join(name),
            sizes: vec![512],
            progress: false,
            operators_by: by,
            ..TrainOptions::default()
        })
        .unwrap()
        .0
    };
    let (set, blocks) = (
        trained(OperatorObjective::Model, "model"),
        trained(OperatorObjective::Blocks, "blocks"),
    );
    let m = set.manifest();
    assert_eq!(m.training.operators_by, "model");
    assert_eq!(blocks.manifest().training.operators_by, "blocks");
    // Priced by another measure than the blocks' bytes.
    let x_blocks = &blocks.manifest().fields[0].held_out_bytes;
    assert_ne!(&m.fields[0].held_out_bytes, x_blocks);
    let field = |name: &str| m.fields.iter().find(|f| f.field == name).unwrap();
    let x = field("x");
    assert_eq!(
        x.delta,
        tickpack::DeltaOp::Predict,
        "{:?}",
        x.held_out_bytes
    );
    // The recorded cost of each operator tried is the model's, and the
    // chosen one's is the least.
    for f in [x, field("n")] {
        let least = f.held_out_bytes.values().min().unwrap();
        let chosen = tickpack_trainer::captures::op_name(f.delta);
        assert_eq!(f.held_out_bytes.get(&chosen), Some(least), "{}", f.field);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
