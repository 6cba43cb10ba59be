//! The trainer's commands end to end: importers, export, train, eval, inspect.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use tickpack_scenarios::{cube_pile, cube_schema};
use tickpack_sets::capture::{Capture, CaptureLimits, SentRecord};
use tickpack_trainer::{run, TrainerError};

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tickpack-trainer-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn cmd(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Result<String, TrainerError> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::new();
    run(&args, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn read(p: &Path) -> Capture {
    Capture::read(&std::fs::read(p).unwrap()[..], CaptureLimits::default()).unwrap()
}

/// The stable keys of `eval --json`, in order (docs/guide.md, "Trainer").
const EVAL_KEYS: [&str; 14] = [
    "packets",
    "raw_bytes_mean",
    "bytes_mean",
    "bytes_p95",
    "bytes_max",
    "keyframe_bytes_mean",
    "encode_us_mean",
    "decode_us_mean",
    "zstd_frame_bytes_mean",
    "zstd_frame_dict_bytes_mean",
    "zstd_frame_encode_us_mean",
    "zstd_frame_decode_us_mean",
    "roundtrip_ok",
    "transforms",
];

fn eval_json(text: &str) -> serde_json::Map<String, serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let m = v.as_object().unwrap().clone();
    let keys: Vec<&str> = m.keys().map(String::as_str).collect();
    let mut want = EVAL_KEYS.to_vec();
    want.sort_unstable();
    assert_eq!(keys, want, "exactly the documented keys");
    let order: Vec<usize> = EVAL_KEYS
        .iter()
        .map(|k| text.find(&format!("\"{k}\"")).unwrap())
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "in the documented order"
    );
    m
}

#[test]
fn fiedler_import_keeps_every_cube() {
    let dir = tmp("fiedler");
    let s = cube_pile(3, 4);
    let bin: Vec<u8> = s
        .ticks
        .iter()
        .flat_map(|t| t.sections()[0].records().to_vec())
        .collect();
    std::fs::write(dir.join("delta_data.bin"), &bin).unwrap();
    let out = cmd(&[
        &"import",
        &"fiedler",
        &dir.join("delta_data.bin"),
        &dir.join("c.tpcap"),
    ])
    .unwrap();
    assert!(out.contains("4 ticks"), "{out}");
    let c = read(&dir.join("c.tpcap"));
    assert_eq!(
        (c.header.game.as_str(), c.header.version.as_str()),
        ("cube-pile", "1")
    );
    assert_eq!(c.header.schema, cube_schema());
    let ticks: Vec<_> = c.ticks.iter().map(|t| t.snapshot.clone()).collect();
    assert_eq!(ticks, s.ticks);
    assert_eq!(c.ticks[3].tick, 3);
    assert_eq!(c.ticks[0].snapshot.sections()[0].ids().len(), 901);

    // A partial frame is refused, naming where it starts.
    std::fs::write(dir.join("cut.bin"), &bin[..bin.len() - 10]).unwrap();
    let e = cmd(&[
        &"import",
        &"fiedler",
        &dir.join("cut.bin"),
        &dir.join("x.tpcap"),
    ])
    .unwrap_err();
    assert!(
        matches!(&e, TrainerError::Import { at, .. } if at == "byte 86496"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The JSON-lines example of the guide, verbatim.
fn readme_jsonl() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guide.md"))
            .unwrap();
    let trainer = &readme[readme.find("## Trainer").unwrap()..];
    let block = &trainer[trainer.find("```json\n").unwrap() + 8..];
    block[..block.find("```").unwrap()].to_owned()
}

#[test]
fn jsonl_readme_example_imports() {
    let dir = tmp("jsonl");
    let text = readme_jsonl();
    assert_eq!(text.lines().count(), 3);
    std::fs::write(dir.join("m.jsonl"), &text).unwrap();
    cmd(&[
        &"import",
        &"jsonl",
        &dir.join("m.jsonl"),
        &dir.join("m.tpcap"),
    ])
    .unwrap();
    let c = read(&dir.join("m.tpcap"));
    assert_eq!((c.header.game.as_str(), c.header.tick_rate), ("arena", 30));
    let ships = |t: usize| c.ticks[t].snapshot.sections()[0].clone();
    assert_eq!(ships(0).ids(), &[3, 7]);
    assert_eq!(ships(1).ids(), &[3, 12], "7 is gone, 12 spawned");
    let rec = ships(1).get(3).unwrap().to_vec();
    assert_eq!(f32::from_le_bytes(rec[0..4].try_into().unwrap()), 100.25);
    assert_eq!(f32::from_le_bytes(rec[4..8].try_into().unwrap()), -2.5);
    assert_eq!(u16::from_le_bytes(rec[8..10].try_into().unwrap()), 249);
    assert!(c.ticks[0].sent.is_empty());
    assert_eq!(
        c.ticks[1].sent,
        vec![SentRecord {
            client: 0,
            sequence: 1,
            baseline: Some(0),
            prior: None,
            bytes: 0
        }]
    );
    // eval replays the recorded send, entities matched by id.
    let m = eval_json(&cmd(&[&"eval", &dir.join("m.tpcap"), &"--json"]).unwrap());
    assert_eq!(m["packets"], 1);
    assert_eq!(m["roundtrip_ok"], true);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jsonl_with_a_byte_order_mark_imports() {
    let dir = tmp("bom");
    std::fs::write(dir.join("m.jsonl"), format!("\u{feff}{}", readme_jsonl())).unwrap();
    let out = cmd(&[
        &"import",
        &"jsonl",
        &dir.join("m.jsonl"),
        &dir.join("m.tpcap"),
    ])
    .unwrap();
    assert!(out.contains("2 ticks"), "{out}");
    assert_eq!(read(&dir.join("m.tpcap")).header.game, "arena");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jsonl_errors_name_the_line() {
    let dir = tmp("jsonl-bad");
    let head = readme_jsonl().lines().next().unwrap().to_owned();
    let cases = [
        ("{\"game\":\"g\"}", 1, "header"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[1,2]}]}}", 2, "lacks field `hp`"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[1,2],\"hp\":70000}]}}", 2, "out of range"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[1,2],\"hp\":1,\"x\":0}]}}", 2, "no field `x`"),
        ("{\"tick\":0,\"sections\":{\"boat\":[]}}", 2, "unknown entity type"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":1,\"hp\":1}]}}", 2, "array of 2"),
        ("{\"tick\":0}\n\n{\"tick\":0}", 4, "does not follow"),
        ("{\"tick\":5,\"baseline\":5}", 2, "baseline 5"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[1,2],\"hp\":1},{\"id\":1,\"pos\":[1,2],\"hp\":1}]}}", 2, "twice"),
        // Strictness: no silent infinities, no "last key wins", no NaN literal.
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[1e39,2],\"hp\":1}]}}", 2, "overflows f32"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[-1e39,2],\"hp\":1}]}}", 2, "overflows f32"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"id\":2,\"pos\":[1,2],\"hp\":1}]}}", 2, "`id` twice"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[1,2],\"hp\":1,\"hp\":2}]}}", 2, "field `hp` twice"),
        ("{\"tick\":0,\"sections\":{\"ship\":[],\"ship\":[]}}", 2, "section `ship` appears twice"),
        ("{\"tick\":0,\"tick\":1}", 2, "`tick` appears twice"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[NaN,2],\"hp\":1}]}}", 2, "{\"bits\": N}"),
        ("{\"tick\":0,\"sections\":{\"ship\":[{\"id\":1,\"pos\":[Infinity,2],\"hp\":1}]}}", 2, "{\"bits\": N}"),
        ("{\"game\":\"g\",\"game\":\"h\",\"version\":\"1\",\"schema\":{}}", 1, "duplicate field"),
    ];
    for (i, (body, line, what)) in cases.iter().enumerate() {
        let text = if *line == 1 {
            body.to_string()
        } else {
            format!("{head}\n{body}\n")
        };
        let input = dir.join(format!("{i}.jsonl"));
        std::fs::write(&input, text).unwrap();
        let e = cmd(&[&"import", &"jsonl", &input, &dir.join("o.tpcap")]).unwrap_err();
        match &e {
            TrainerError::Import { at, message, .. } => {
                assert_eq!(at, &format!("line {line}"), "case {i}: {e}");
                assert!(message.contains(what), "case {i}: {e}");
            }
            _ => panic!("case {i}: {e}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn train_then_eval_on_a_tiny_capture() {
    let dir = tmp("e2e");
    let cap = dir.join("cubes.tpcap");
    let out = cmd(&[
        &"export", &"cubes", &cap, &"--ticks", &"90", &"--seed", &"4",
    ])
    .unwrap();
    assert!(out.contains("90 ticks"), "{out}");
    let set = dir.join("sets/cube-pile/1");
    let text = cmd(&[
        &"train",
        &cap,
        &"--out",
        &set,
        &"--sizes",
        &"4096",
        &"--keyframe-every",
        &"30",
        &"--json",
    ])
    .unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let m = &report["manifest"];
    assert_eq!(m["game"], "cube-pile");
    assert_eq!(m["training"]["held_out_ticks"], 18);
    assert_eq!(m["fields"].as_array().unwrap().len(), 8);
    assert!(set.join("manifest.json").is_file());

    let plain = eval_json(
        &cmd(&[
            &"eval",
            &cap,
            &"--baseline-distance",
            &"6",
            &"--held-out",
            &"--json",
        ])
        .unwrap(),
    );
    let with = eval_json(
        &cmd(&[
            &"eval",
            &cap,
            &"--baseline-distance",
            &"6",
            &"--held-out",
            &"--json",
            &"--dictionaries",
            &dir.join("sets"),
        ])
        .unwrap(),
    );
    // `--held-out` alone is train's 20%, before the captures too; a fraction
    // goes after an equals sign.
    let first = eval_json(
        &cmd(&[
            &"eval",
            &"--held-out",
            &cap,
            &"--baseline-distance",
            &"6",
            &"--json",
        ])
        .unwrap(),
    );
    let half = eval_json(
        &cmd(&[
            &"eval",
            &cap,
            &"--baseline-distance",
            &"6",
            &"--held-out=0.5",
            &"--json",
        ])
        .unwrap(),
    );
    for m in [&plain, &with, &first] {
        assert_eq!(m["packets"], 18);
        assert_eq!(m["roundtrip_ok"], true);
        assert_eq!(m["raw_bytes_mean"], 28832.0);
    }
    assert_eq!(half["packets"], 45);
    assert_eq!(half["roundtrip_ok"], true);
    let e = cmd(&[&"eval", &cap, &"--held-out", &"0.5"]).unwrap_err();
    assert!(
        matches!(&e, TrainerError::Usage(m) if m.contains("--held-out=0.5")),
        "{e}"
    );
    let held = report["manifest"]["measured"]["delta_packets"]
        .as_u64()
        .unwrap();
    assert!(held > 0);

    // The readable forms.
    let table = cmd(&[&"eval", &cap, &"--dictionaries", &set]).unwrap();
    assert!(
        table.contains("bytes mean") && table.contains("round trip ok"),
        "{table}"
    );
    let summary = cmd(&[
        &"train",
        &cap,
        &"--out",
        &dir.join("again"),
        &"--sizes",
        &"4096",
        &"--quiet",
    ])
    .unwrap();
    assert!(summary.contains("held-out delta packets"), "{summary}");

    // inspect knows all three kinds of file.
    let i = cmd(&[&"inspect", &cap]).unwrap();
    assert!(i.contains("ticks: 90") && i.contains("complete"), "{i}");
    let i = cmd(&[&"inspect", &set]).unwrap();
    assert!(i.contains("verified: yes"), "{i}");
    let i = cmd(&[&"inspect", &set.join("manifest.json")]).unwrap();
    assert!(i.contains("dictionary set cube-pile 1"), "{i}");
    if set.join("delta.dict").is_file() {
        let i = cmd(&[&"inspect", &set.join("delta.dict")]).unwrap();
        assert!(i.contains("the delta dictionary"), "{i}");
    }
    // A damaged capture is inspected up to the damage.
    let mut bytes = std::fs::read(&cap).unwrap();
    let n = bytes.len();
    bytes.truncate(n - n / 3);
    std::fs::write(dir.join("cut.tpcap"), bytes).unwrap();
    let args: Vec<String> = vec![
        "inspect".into(),
        dir.join("cut.tpcap").display().to_string(),
    ];
    let mut report = Vec::new();
    let e = run(&args, &mut report).unwrap_err();
    assert!(matches!(e, TrainerError::Damaged { .. }), "{e}");
    let i = String::from_utf8(report).unwrap();
    assert!(i.contains("DAMAGED") && i.contains("truncated"), "{i}");
    let o = Command::new(env!("CARGO_BIN_EXE_tickpack-trainer"))
        .arg("inspect")
        .arg(dir.join("cut.tpcap"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "a damaged capture exits 1");
    assert!(String::from_utf8_lossy(&o.stdout).contains("DAMAGED"));
    let e = cmd(&[&"eval", &dir.join("cut.tpcap")]).unwrap_err();
    assert!(matches!(e, TrainerError::Capture { .. }), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn usage_errors_and_exit_codes() {
    for args in [
        vec!["train"],
        vec!["eval", "--bogus"],
        vec!["export", "racing"],
        vec!["export", "nope", "x.tpcap"],
        vec!["eval", "x", "--baseline-distance", "0"],
        vec!["frobnicate"],
    ] {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        assert!(
            matches!(run(&args, &mut Vec::new()), Err(TrainerError::Usage(_))),
            "{args:?}"
        );
    }
    let bin = env!("CARGO_BIN_EXE_tickpack-trainer");
    let o = Command::new(bin).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Usage:"));
    let o = Command::new(bin).arg("--version").output().unwrap();
    assert!(o.status.success());
    let o = Command::new(bin)
        .args(["inspect", "/nonexistent.tpcap"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn readme_documents_every_eval_key() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guide.md"))
            .unwrap();
    let trainer = &readme[readme.find("## Trainer").unwrap()..];
    for k in EVAL_KEYS {
        assert!(
            trainer.contains(&format!("`{k}`")),
            "docs/guide.md lacks {k}"
        );
    }
}

#[test]
fn inspect_describes_model_tables() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dictionaries/cube-pile/1");
    let manifest: tickpack_sets::dictset::Manifest =
        serde_json::from_slice(&std::fs::read(shipped.join("manifest.json")).unwrap()).unwrap();
    let (kind, file) = manifest
        .dictionaries
        .iter()
        .find_map(|d| d.model.as_ref().map(|f| (d.kind.name(), f.clone())))
        .expect("the shipped cube-pile set has a model table");
    let bytes = std::fs::read(shipped.join(&file.file)).unwrap();
    let table = tickpack::model::ModelTable::from_bytes(&bytes).unwrap();
    let shape = table.shape();
    let facts = format!(
        "{} bit contexts, {} value contexts: {} slots",
        shape.bit_contexts,
        shape.value_contexts,
        shape.slots()
    );

    // The set lists its model table, loaded.
    let i = cmd(&[&"inspect", &shipped]).unwrap();
    let line = i
        .lines()
        .find(|l| l.starts_with(&format!("{kind} model table {}:", file.file)))
        .unwrap_or_else(|| panic!("{i}"));
    assert!(
        line.contains(&format!("{} bytes", bytes.len())) && line.contains(&facts),
        "{line}"
    );
    // The table file on its own, and which set it belongs to.
    let i = cmd(&[&"inspect", &shipped.join(&file.file)]).unwrap();
    assert!(i.starts_with("model table ") && i.contains(&facts), "{i}");
    assert!(
        i.contains(&format!("the {kind} dictionary's model table")),
        "{i}"
    );

    // Damaged and hostile tables are refused with the loader's reason, exit 1.
    let dir = tmp("model");
    let mut flipped = bytes.clone();
    let n = flipped.len();
    flipped[n - 1] ^= 1;
    let mut huge = bytes[..16].to_vec();
    huge[8..16].copy_from_slice(&[0xff; 8]);
    huge.extend_from_slice(&[0; 8]);
    for (name, body, says) in [
        ("flipped.model", flipped.clone(), "checksum"),
        ("cut.model", bytes[..n / 2].to_vec(), "header says"),
        ("empty.model", Vec::new(), "at least"),
        ("huge.model", huge, "slots, limit is"),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, &body).unwrap();
        let e = cmd(&[&"inspect", &p]).unwrap_err();
        assert!(matches!(e, TrainerError::Model { .. }), "{name}: {e}");
        let o = Command::new(env!("CARGO_BIN_EXE_tickpack-trainer"))
            .arg("inspect")
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(name) && err.contains(says), "{name}: {err}");
    }
    // Larger than any table: refused without reading it whole.
    let p = dir.join("long.model");
    let mut long = bytes[..4].to_vec();
    long.resize(tickpack_trainer::inspect::MAX_MODEL_BYTES as usize + 1, 0);
    std::fs::write(&p, long).unwrap();
    let e = cmd(&[&"inspect", &p]).unwrap_err();
    assert!(e.to_string().contains("larger than any model table"), "{e}");

    // A set whose table is damaged does not verify, and says so.
    let set = dir.join("set");
    std::fs::create_dir_all(&set).unwrap();
    for f in std::fs::read_dir(&shipped).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, set.join(f.file_name().unwrap())).unwrap();
    }
    std::fs::write(set.join(&file.file), &flipped).unwrap();
    let mut report = Vec::new();
    let e = run(&["inspect".into(), set.display().to_string()], &mut report).unwrap_err();
    assert!(matches!(e, TrainerError::Damaged { .. }), "{e}");
    let i = String::from_utf8(report).unwrap();
    assert!(
        i.contains("verified: NO") && i.contains("not loaded (the set does not verify)"),
        "{i}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn eval_looks_for_a_set_only_inside_the_root_it_is_given() {
    let dir = tmp("escape");
    let cap = dir.join("cubes.tpcap");
    cmd(&[&"export", &"cubes", &cap, &"--ticks", &"60"]).unwrap();
    // A set outside the root.
    let outside = dir.join("outside/1");
    cmd(&[&"train", &cap, &"--out", &outside, &"--quiet"]).unwrap();
    let root = dir.join("sets");
    std::fs::create_dir_all(&root).unwrap();
    // A capture whose header names `../outside` as its game: the root's
    // `<game>/<version>/` would be `sets/../outside/1`.
    let mut c = read(&cap);
    for game in ["../outside", "/abs", "a/../../outside"] {
        c.header.game = game.into();
        let hostile = dir.join("hostile.tpcap");
        let f = std::fs::File::create(&hostile).unwrap();
        c.write(f, Default::default()).unwrap();
        let r = cmd(&[&"eval", &hostile, &"--dictionaries", &root, &"--json"]);
        let e = r.unwrap_err().to_string();
        assert!(e.contains(game), "{game}: {e}");
    }
    // Plain names are still looked up under the root.
    c.header.game = "outside".into();
    let fine = dir.join("fine.tpcap");
    c.write(std::fs::File::create(&fine).unwrap(), Default::default())
        .unwrap();
    let e = cmd(&[&"eval", &fine, &"--dictionaries", &root]).unwrap_err();
    assert!(matches!(e, TrainerError::DictSet(_)), "{e}");
    std::fs::rename(dir.join("outside"), root.join("outside")).unwrap();
    let text = cmd(&[&"eval", &fine, &"--dictionaries", &root, &"--json"]).unwrap();
    assert_eq!(eval_json(&text)["roundtrip_ok"], true);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn eval_held_out_codes_packets_with_the_recall_of_the_whole_chain() {
    use tickpack::{Encoder, Primitive, Schema, Section, Snapshot};
    use tickpack_sets::capture::{CaptureHeader, CaptureOptions, CaptureWriter};
    use tickpack_trainer::eval::{eval, EvalOptions};
    use tickpack_trainer::measure::{encode, Job};
    use tickpack_trainer::recalls::RecallChain;
    use tickpack_trainer::replay::{BaselineModel, Packet};

    // Entity 100 leaves view at tick 6 and is back at tick 8, the first
    // held-out tick (10 ticks, 0.2 held out): a session codes it against
    // what tick 5 said of it (the recall), not as a new entity.
    let dir = tmp("held-out-recall");
    let cap = dir.join("c.tpcap");
    let schema = Schema::builder()
        .entity("e")
        .field("v", Primitive::I32, 4)
        .build()
        .unwrap();
    let back: Vec<u8> = (0..16u32).map(|k| (k * 97 + 13) as u8).collect();
    let snap = |t: u32| {
        let mut ids = Vec::new();
        let mut recs = Vec::new();
        for id in 0..8u32 {
            ids.push(id);
            for k in 0..4u32 {
                recs.extend_from_slice(&((id * 1000 + k * 10 + t) as i32).to_le_bytes());
            }
        }
        if !(6..=7).contains(&t) {
            ids.push(100);
            recs.extend_from_slice(&back);
        }
        let sec = Section::from_parts(ids, recs, 16).unwrap();
        Snapshot::from_sections(&schema, vec![sec]).unwrap()
    };
    let header = CaptureHeader::new("g", "1", 60, schema.clone());
    let f = std::io::BufWriter::new(std::fs::File::create(&cap).unwrap());
    let mut w = CaptureWriter::new(f, &header, CaptureOptions::default()).unwrap();
    for t in 0..10u32 {
        w.tick(u64::from(t), &snap(t)).unwrap();
    }
    w.finish().unwrap();

    let opts = EvalOptions {
        captures: vec![cap.clone()],
        model: BaselineModel::Distance(1),
        held_out: true,
        held_out_fraction: 0.2,
        ..EvalOptions::default()
    };
    let (report, _) = eval(&opts).unwrap();
    assert_eq!(report.packets, 2);
    assert!(report.roundtrip_ok);

    // The held-out packets (ticks 8 and 9) coded as a session codes them:
    // every packet since tick 1 carried along the recall chain.
    let sc = &tickpack_trainer::captures::scan_all(std::slice::from_ref(&cap)).unwrap()[0];
    let held = sc.load(|_| true).unwrap();
    let mut enc = Encoder::new(schema.clone());
    let (mut chain, mut out, mut total) = (RecallChain::new(), Vec::new(), 0u64);
    let mut without_chain = 0u64;
    for i in 1..10usize {
        let p = Packet {
            tick: i,
            baseline: Some(i - 1),
            prior: i.checked_sub(2),
        };
        let j = Job::new(&sc.ticks, &held, p).unwrap();
        let recall = chain.of(&p).cloned();
        let with = j.with_recall(recall.as_ref());
        if i >= 8 {
            encode(&mut enc, &with, &mut out).unwrap();
            total += out.len() as u64;
            encode(&mut enc, &j, &mut out).unwrap();
            without_chain += out.len() as u64;
        }
        chain.sent(&p, with.sequence, with.baseline, with.snapshot);
    }
    assert!(total < without_chain, "{total} {without_chain}");
    assert_eq!(report.bytes_mean, Some(total as f64 / 2.0));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inspect_of_a_capture_damaged_in_its_magic_exits_1() {
    // docs/guide.md: `inspect` exits with 1 on a damaged capture (2 is for usage
    // errors); a `.tpcap` whose first bytes are damaged is still one.
    let dir = tmp("inspect-magic");
    let cap = dir.join("c.tpcap");
    cmd(&[&"export", &"idle", &cap, &"--ticks", &"3"]).unwrap();
    let mut bytes = std::fs::read(&cap).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&cap, &bytes).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tickpack-trainer"))
        .arg("inspect")
        .arg(&cap)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("c.tpcap"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_model_table_is_measured_against_the_sets_dictionary() {
    use tickpack::{Schema, Section, Snapshot};
    use tickpack_sets::capture::{CaptureHeader, CaptureOptions, CaptureWriter};
    use tickpack_sets::dictset::DictionarySet;
    use tickpack_trainer::eval::{eval, EvalOptions};
    use tickpack_trainer::train::{train, TrainOptions};

    // Short packets of skewed bytes: a context-model table is trained on
    // top of the delta dictionary.
    let dir = tmp("model-plain");
    let cap = dir.join("skew.tpcap");
    let schema = Schema::from_json(
        r#"{"entities":[{"name":"p","fields":[{"name":"a","type":"u8","len":12,"delta":"none"},{"name":"k","type":"u32","delta":"none"}]}]}"#,
    )
    .unwrap();
    let mut rng = 7u64;
    let mut next = move || {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let header = CaptureHeader::new("skew", "1", 60, schema.clone());
    let f = std::io::BufWriter::new(std::fs::File::create(&cap).unwrap());
    let mut w = CaptureWriter::new(f, &header, CaptureOptions::default()).unwrap();
    let consts = [0xdead_beef_u32, 0x1234_5678, 0xcafe_babe, 0x0bad_f00d];
    for t in 0..600u64 {
        let mut recs = Vec::new();
        for _ in 0..8 {
            for _ in 0..12 {
                recs.push((-(1.0 - next()).ln() / 0.7).min(255.0) as u8);
            }
            let k = consts[(next() * 4.0) as usize % 4];
            recs.extend_from_slice(&k.to_le_bytes());
        }
        let sec = Section::from_parts((0..8).collect(), recs, 16).unwrap();
        w.tick(t, &Snapshot::from_sections(&schema, vec![sec]).unwrap())
            .unwrap();
    }
    w.finish().unwrap();

    let out = dir.join("set");
    let (set, report) = train(&TrainOptions {
        captures: vec![cap.clone()],
        out: out.clone(),
        sizes: vec![256, 512, 1024],
        progress: false,
        ..TrainOptions::default()
    })
    .unwrap();
    let model = report.model.expect("a model table trained");

    // The same set without the model table: what the table is weighed against.
    let m = set.manifest();
    let dicts = set
        .dictionaries()
        .iter()
        .map(|(k, d)| {
            let max = m
                .dictionaries
                .iter()
                .find(|e| e.kind == *k)
                .unwrap()
                .max_size;
            (*k, d.bytes().to_vec(), max)
        })
        .collect();
    let plain =
        DictionarySet::assemble(m.clone(), set.schema().clone(), m.base_schema_id, dicts).unwrap();
    let plain_dir = dir.join("plain");
    plain.save(&plain_dir).unwrap();
    // The held-out packets are all deltas (the simulated client's first
    // keyframes are long before the split), as `train` measures them.
    let (r, ctx) = eval(&EvalOptions {
        captures: vec![cap.clone()],
        dictionaries: Some(plain_dir),
        held_out: true,
        ..EvalOptions::default()
    })
    .unwrap();
    assert_eq!(ctx.keyframes, 0);
    assert_eq!(r.packets, m.measured.delta_packets);
    assert_eq!(
        r.bytes_mean,
        Some((model.bytes_mean_without * 100.0).round() / 100.0),
        "the table's 'without' is the set's dictionary without it"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_baselines_of_every_capture_are_described() {
    // One capture with recorded sends, one without: the manifest and the
    // eval table say where the baselines of each came from.
    let dir = tmp("baselines");
    let head = r#"{"game":"g","version":"1","schema":{"entities":[{"name":"e","fields":[{"name":"x","type":"u8","len":4}]}]}}"#;
    let (mut sent, mut plain) = (format!("{head}\n"), format!("{head}\n"));
    for t in 0..80u32 {
        let e = format!(
            "\"sections\":{{\"e\":[{{\"id\":1,\"x\":[{},{},3,4]}}]}}",
            t % 256,
            (t * 7) % 256
        );
        let b = if t == 0 {
            "null".to_owned()
        } else {
            (t - 1).to_string()
        };
        sent += &format!("{{\"tick\":{t},\"baseline\":{b},{e}}}\n");
        plain += &format!("{{\"tick\":{t},{e}}}\n");
    }
    let (a, b) = (dir.join("sent.tpcap"), dir.join("plain.tpcap"));
    for (text, cap) in [(&sent, &a), (&plain, &b)] {
        let input = cap.with_extension("jsonl");
        std::fs::write(&input, text).unwrap();
        cmd(&[&"import", &"jsonl", &input, cap]).unwrap();
    }
    let set = dir.join("set");
    cmd(&[
        &"train", &a, &b, &"--out", &set, &"--sizes", &"512", &"--quiet",
    ])
    .unwrap();
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(set.join("manifest.json")).unwrap()).unwrap();
    let why = m["training"]["baselines"].as_str().unwrap();
    assert!(
        why.contains("recorded sends") && why.contains("simulated acks"),
        "{why}"
    );
    let table = cmd(&[&"eval", &a, &b]).unwrap();
    assert!(
        table.contains("recorded sends") && table.contains("simulated acks"),
        "{table}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
