//! `eval` and `train` hold a bounded number of snapshots whatever a
//! capture's length: a long capture of many identical entities (tiny on
//! disk, large in memory) is streamed, not loaded whole.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use tickpack_testkit::counting::{self, Counting};

#[global_allocator]
static A: Counting = Counting;

use std::path::{Path, PathBuf};

use tickpack::{Primitive, Schema, Section, Snapshot};
use tickpack_sets::capture::{CaptureHeader, CaptureOptions, CaptureWriter};
use tickpack_trainer::eval::{eval, EvalOptions};
use tickpack_trainer::replay::BaselineModel;
use tickpack_trainer::train::{train, TrainOptions};

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tickpack-memory-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// `ticks` ticks of `entities` identical zero entities of `u8[14]`: a few
/// bytes per tick on disk, `entities * 18` bytes per tick in memory.
fn zeros(path: &Path, ticks: u64, entities: u32) -> usize {
    let schema = Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 14)
        .build()
        .unwrap();
    let ids: Vec<u32> = (0..entities).collect();
    let sec = Section::from_parts(ids, vec![0u8; 14 * entities as usize], 14).unwrap();
    let snap = Snapshot::from_sections(&schema, vec![sec]).unwrap();
    let header = CaptureHeader::new("zeros", "1", 60, schema);
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = CaptureWriter::new(f, &header, CaptureOptions::default()).unwrap();
    for t in 0..ticks {
        w.tick(t, &snap).unwrap();
    }
    w.finish().unwrap();
    // What the trainer charges a held snapshot: its ids and records (18
    // bytes an entity) and the structures holding them.
    tickpack_trainer::captures::snapshot_bytes(&snap) as usize
}

#[test]
fn eval_holds_a_window_of_snapshots_not_the_capture() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("eval");
    let cap = dir.join("zeros.tpcap");
    let ticks = 300;
    let per_tick = zeros(&cap, ticks, 1024);
    let whole = per_tick * ticks as usize;
    let disk = std::fs::metadata(&cap).unwrap().len();
    assert!(disk < 64 << 10, "{disk} bytes on disk");

    {
        let model = BaselineModel::Distance(6);
        let opts = EvalOptions {
            captures: vec![cap.clone()],
            model,
            max_dict_samples: 256 << 10,
            ..EvalOptions::default()
        };
        let (r, peak) = counting::peak_of(|| eval(&opts).unwrap());
        let (report, ctx) = r;
        assert!(report.roundtrip_ok);
        assert!(report.packets >= ticks - 6, "{}", report.packets);
        // The baseline window: the RTT model's ~8 ticks, or 2 x 6 + 1.
        assert!(
            ctx.peak_held_ticks <= 16,
            "{model:?}: {}",
            ctx.peak_held_ticks
        );
        assert!(ctx.peak_held_bytes <= 16 * per_tick as u64);
        // The whole capture in memory would be `whole` (5.5 MB); streaming
        // stays near the frame-dictionary samples (256 KiB here) plus the
        // window of 13 snapshots (240 KB).
        assert!(
            peak < 2 << 20,
            "{model:?}: peak heap {peak} bytes, capture in memory {whole}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn eval_refuses_baselines_that_reach_too_far_back() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("far");
    let cap = dir.join("zeros.tpcap");
    let per_tick = zeros(&cap, 300, 1024);
    // Tick t against t - 100 with prior t - 200: 201 snapshots live at once.
    let opts = EvalOptions {
        captures: vec![cap.clone()],
        model: BaselineModel::Distance(100),
        max_held_bytes: 50 * per_tick as u64,
        max_dict_samples: 256 << 10,
        ..EvalOptions::default()
    };
    let (r, peak) = counting::peak_of(|| eval(&opts));
    match r {
        Err(tickpack_trainer::TrainerError::TooMuchHeld {
            snapshots, bytes, ..
        }) => {
            assert_eq!(snapshots, 51);
            assert!(bytes > opts.max_held_bytes);
        }
        other => panic!("{other:?}"),
    }
    // Refused at the limit, not after holding the 201 snapshots (3.7 MB).
    assert!(peak < 2 << 20, "peak heap {peak}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_tick_with_too_many_sent_records_is_refused() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("sent");
    let cap = dir.join("sent.tpcap");
    let schema = Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 1)
        .build()
        .unwrap();
    let header = CaptureHeader::new("sent", "1", 60, schema.clone());
    let f = std::io::BufWriter::new(std::fs::File::create(&cap).unwrap());
    let mut w = CaptureWriter::new(f, &header, CaptureOptions::default()).unwrap();
    w.tick(0, &Snapshot::new(&schema)).unwrap();
    let limit = tickpack_trainer::captures::MAX_SENT_PER_TICK;
    for client in 0..=limit as u32 {
        let s = tickpack_sets::capture::SentRecord {
            client,
            sequence: 0,
            baseline: None,
            prior: None,
            bytes: 0,
        };
        w.sent(&s).unwrap();
    }
    w.finish().unwrap();
    let opts = EvalOptions {
        captures: vec![cap],
        ..EvalOptions::default()
    };
    match eval(&opts) {
        Err(tickpack_trainer::TrainerError::TooManySent {
            tick: 0, limit: l, ..
        }) => {
            assert_eq!(l, limit)
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn train_samples_within_its_memory_budget() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("train");
    let cap = dir.join("zeros.tpcap");
    let ticks = 300;
    let per_tick = zeros(&cap, ticks, 1024);
    let budget = 120 * per_tick as u64;
    let opts = TrainOptions {
        captures: vec![cap.clone()],
        out: dir.join("set"),
        sizes: vec![1024],
        progress: false,
        sample_bytes: budget,
        max_held_bytes: budget,
        ..TrainOptions::default()
    };
    let (r, peak) = counting::peak_of(|| train(&opts).unwrap());
    let (_, report) = r;
    assert!(report.snapshots_held > 0);
    assert!(
        report.snapshots_held as u64 * per_tick as u64 <= budget,
        "{} snapshots of {per_tick} bytes held, budget {budget}",
        report.snapshots_held
    );
    assert!(report.manifest.measured.delta_packets > 0);
    let whole = per_tick * ticks as usize;
    assert!(peak < whole, "peak heap {peak}, capture in memory {whole}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Failed before the sampling budget and the memory cap were two options:
/// a lower cap thinned the sample, so it changed the set; now the sample
/// is what `sample_bytes` says and a cap it does not fit is refused.
#[test]
fn trains_memory_cap_refuses_and_never_thins_the_sample() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("train-cap");
    let cap = dir.join("zeros.tpcap");
    let per_tick = zeros(&cap, 200, 1024);
    let opts = TrainOptions {
        captures: vec![cap],
        out: dir.join("set"),
        sizes: vec![1024],
        progress: false,
        max_held_bytes: 100 * per_tick as u64,
        ..TrainOptions::default()
    };
    match train(&opts) {
        Err(tickpack_trainer::TrainerError::SampleTooLarge { bytes, limit }) => {
            assert_eq!(limit, opts.max_held_bytes);
            assert!(bytes > limit);
        }
        other => panic!("{:?}", other.map(|(_, rep)| rep.snapshots_held)),
    }
    assert!(!dir.join("set").exists());
    // Any cap the sample fits gives the same set.
    let big = TrainOptions {
        max_held_bytes: 1 << 30,
        out: dir.join("big"),
        ..opts.clone()
    };
    let fits = TrainOptions {
        max_held_bytes: 200 * per_tick as u64,
        out: dir.join("fits"),
        ..opts
    };
    let (a, _) = train(&big).unwrap();
    let (b, _) = train(&fits).unwrap();
    assert_eq!(a.manifest().set_id, b.manifest().set_id);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_line_of_millions_of_entities_is_refused_while_parsing() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("jsonl");
    let input = dir.join("big.jsonl");
    let mut text = String::from(
        r#"{"game":"g","version":"1","schema":{"entities":[{"name":"e","fields":[{"name":"x","type":"u8"}]}]}}"#,
    );
    text += "\n{\"tick\":0,\"sections\":{\"e\":[";
    let n = 2_500_000u32;
    for id in 0..n {
        if id > 0 {
            text.push(',');
        }
        text += &format!("{{\"id\":{id},\"x\":0}}");
    }
    text += "]}}\n";
    let line = text.len();
    assert!(line < tickpack_trainer::import::MAX_JSONL_LINE);
    std::fs::write(&input, text).unwrap();
    let out = dir.join("big.tpcap");
    let (r, peak) = counting::peak_of(|| tickpack_trainer::import::jsonl(&input, &out, false));
    let e = r.unwrap_err().to_string();
    assert!(e.contains("line 2") && e.contains("more than 65536"), "{e}");
    // The line buffer (twice while it grows) plus 65,537 parsed records;
    // not millions of objects.
    assert!(
        peak < 2 * line + (8 << 20),
        "peak heap {peak} for a {line}-byte line"
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inspect_reads_no_more_of_a_set_than_loading_it_would() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("inspect");
    let schema = Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 14)
        .build()
        .unwrap();
    let manifest = tickpack_sets::dictset::Manifest {
        format: 0,
        game: "g".into(),
        version: "1".into(),
        set_id: 0,
        schema_id: 0,
        base_schema_id: 0,
        schema: serde_json::Value::Null,
        default_records: Vec::new(),
        fields: Vec::new(),
        transforms: Vec::new(),
        dictionaries: Vec::new(),
        training: Default::default(),
        measured: Default::default(),
    };
    let dicts = vec![(
        tickpack_sets::dictset::DictKind::Delta,
        vec![7u8; 1024],
        1024,
    )];
    let id = schema.id();
    let set = dir.join("set");
    tickpack_sets::dictset::DictionarySet::assemble(manifest, schema, id, dicts)
        .unwrap()
        .save(&set)
        .unwrap();
    tickpack_sets::dictset::DictionarySet::load(&set).unwrap();
    let manifest = std::fs::read_to_string(set.join("manifest.json")).unwrap();
    // A hostile (or damaged) set: a file the manifest names is huge. A
    // sparse file: 256 MiB long, no disk.
    let huge = 256u64 << 20;
    let named: Vec<String> = std::fs::read_dir(&set)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f != "manifest.json" && manifest.contains(&format!("\"{f}\"")))
        .collect();
    assert!(!named.is_empty(), "the set names no file");
    for f in &named {
        std::fs::File::create(set.join(f))
            .unwrap()
            .set_len(huge)
            .unwrap();
    }
    let limit = tickpack_sets::dictset::SetLimits::default().max_dictionary_bytes;
    let (r, peak) = counting::peak_of(|| tickpack_trainer::inspect::inspect(&set));
    assert!(peak < 4 * limit, "peak heap {peak} for a {huge}-byte file");
    let r = r.unwrap();
    assert!(r.damaged, "{}", r.text);
    assert!(r.text.contains("larger than"), "{}", r.text);
    // The manifest itself, and a dictionary inspected on its own.
    let dict = set.join(&named[0]);
    let f = std::fs::OpenOptions::new().write(true).open(&dict).unwrap();
    std::io::Write::write_all(&mut &f, &[0x37, 0xa4, 0x30, 0xec]).unwrap();
    drop(f);
    let (r, peak) = counting::peak_of(|| tickpack_trainer::inspect::inspect(&dict));
    assert!(r.is_err(), "{r:?}");
    assert!(
        peak < 4 * limit,
        "peak heap {peak} for a {huge}-byte dictionary"
    );
    std::fs::File::create(set.join("manifest.json"))
        .unwrap()
        .set_len(huge)
        .unwrap();
    let (r, peak) = counting::peak_of(|| tickpack_trainer::inspect::inspect(&set));
    assert!(r.unwrap().damaged);
    assert!(
        peak < 4 * limit,
        "peak heap {peak} for a {huge}-byte manifest"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn train_refuses_baselines_that_reach_too_far_back() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("train-far");
    let cap = dir.join("zeros.tpcap");
    let per_tick = zeros(&cap, 300, 1024);
    // Tick t against t - 100: replaying the chain of sends for the
    // baselines' recalls keeps 101 snapshots live at once.
    let budget = 50 * per_tick as u64;
    let opts = TrainOptions {
        captures: vec![cap],
        out: dir.join("set"),
        sizes: vec![1024],
        progress: false,
        model: BaselineModel::Distance(100),
        sample_bytes: budget,
        max_held_bytes: budget,
        ..TrainOptions::default()
    };
    let (r, peak) = counting::peak_of(|| train(&opts));
    // Whatever it does, it holds no more snapshots than the budget (plus
    // the reader's and the codec's buffers), not the 101 snapshots (1.8 MB)
    // of the window beside the 50 it sampled.
    assert!(
        peak < (budget + budget / 2) as usize,
        "peak heap {peak}, budget {budget}: {:?}",
        r.as_ref().map(|(_, rep)| rep.snapshots_held)
    );
    match r {
        Err(tickpack_trainer::TrainerError::TooMuchHeld { bytes, limit, .. }) => {
            assert_eq!(limit, budget);
            assert!(bytes > budget);
        }
        other => panic!("{:?}", other.map(|(_, rep)| rep.snapshots_held)),
    }
    assert!(!dir.join("set").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_field_given_a_huge_array_is_refused_without_parsing_it_whole() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("jsonl-array");
    let input = dir.join("big.jsonl");
    let mut text = String::from(
        r#"{"game":"g","version":"1","schema":{"entities":[{"name":"e","fields":[{"name":"x","type":"u8","len":2}]}]}}"#,
    );
    // One entity whose 2-element field is given 2,000,000 values: a
    // 4 MB line that, built as a JSON tree, takes 32 bytes a value.
    text += "\n{\"tick\":0,\"sections\":{\"e\":[{\"id\":1,\"x\":[0";
    text += &",0".repeat(2_000_000);
    text += "]}]}}\n";
    let line = text.len();
    std::fs::write(&input, text).unwrap();
    let out = dir.join("big.tpcap");
    let (r, peak) = counting::peak_of(|| tickpack_trainer::import::jsonl(&input, &out, false));
    let e = r.unwrap_err().to_string();
    assert!(e.contains("line 2") && e.contains("`x`"), "{e}");
    assert!(
        peak < 2 * line + (8 << 20),
        "peak heap {peak} for a {line}-byte line"
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn suggest_keeps_its_samples_within_a_budget_whatever_the_float_fields() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("suggest");
    let cap = dir.join("floats.tpcap");
    // 48 entity types of one f32[1024] field, one entity each, for 53
    // ticks: 48 float fields of 53,248 tick-to-tick pairs each, in a
    // capture of a few hundred bytes a tick.
    let mut b = Schema::builder();
    for s in 0..48 {
        b = b.entity(&format!("e{s}")).field("v", Primitive::F32, 1024);
    }
    let schema = b.build().unwrap();
    let header = CaptureHeader::new("floats", "1", 60, schema.clone());
    let f = std::io::BufWriter::new(std::fs::File::create(&cap).unwrap());
    let mut w = CaptureWriter::new(f, &header, CaptureOptions::default()).unwrap();
    let rec: Vec<u8> = (0..1024u32)
        .flat_map(|k| (k as f32 * 0.25).to_le_bytes())
        .collect();
    let sections: Vec<Section> = (0..48)
        .map(|_| Section::from_parts(vec![1], rec.clone(), 4096).unwrap())
        .collect();
    let snap = Snapshot::from_sections(&schema, sections).unwrap();
    for t in 0..53u64 {
        w.tick(t, &snap).unwrap();
    }
    w.finish().unwrap();
    let (r, peak) = counting::peak_of(|| tickpack_trainer::suggest::suggest(&cap, &[0.01]));
    let text = r.unwrap();
    assert!(text.contains("`e47`.`v`"), "{text}");
    // 48 reservoirs of 50,000 pairs are 38 MB (48 MB as they grow).
    assert!(peak < 36 << 20, "peak heap {peak}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A capture a few hundred KB on disk whose baselines reach far back is
/// refused at eval's default limit (64 MiB of held snapshots), not after
/// holding what it asks for (about 150 MB here; the old 1 GiB default let
/// a 184 KB capture reach 1.07 GB); `--max-held-bytes` sets the limit.
#[test]
fn eval_refuses_a_hostile_capture_at_its_default_limit() {
    let _g = counting::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("hostile");
    let cap = dir.join("zeros.tpcap");
    let per_tick = zeros(&cap, 1100, 8192);
    assert!(std::fs::metadata(&cap).unwrap().len() < 512 << 10);
    // Tick t against t - 500 with prior t - 1000: 1001 snapshots live.
    assert!(1001 * per_tick as u64 > 128 << 20);
    let opts = EvalOptions {
        captures: vec![cap.clone()],
        model: BaselineModel::Distance(500),
        max_dict_samples: 256 << 10,
        ..EvalOptions::default()
    };
    let (r, peak) = counting::peak_of(|| eval(&opts));
    match r {
        Err(tickpack_trainer::TrainerError::TooMuchHeld { limit, .. }) => {
            assert_eq!(limit, 64 << 20);
        }
        other => panic!("{:?}", other.map(|(r, _)| r)),
    }
    assert!(peak < (64 << 20) + (8 << 20), "peak heap {peak}");

    // The flag sets the limit.
    let args: Vec<String> = [
        "eval",
        cap.to_str().unwrap(),
        "--baseline-distance",
        "500",
        "--max-held-bytes",
        "100000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let e = tickpack_trainer::run(&args, &mut Vec::new()).unwrap_err();
    assert!(
        matches!(
            e,
            tickpack_trainer::TrainerError::TooMuchHeld { limit: 100_000, .. }
        ),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
