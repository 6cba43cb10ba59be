//! The trainer and quantisation: `suggest` on an exported racing capture
//! reports every float field with its range, its changes and the bits per
//! value at each step; schemas the trainer rebuilds keep their quantisation.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use tickpack_trainer::suggest::suggest;

#[test]
fn suggest_reports_every_float_field() {
    let dir = std::env::temp_dir().join(format!("tickpack-suggest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("racing.tpcap");
    tickpack_trainer::export::export("racing", &path, false, 40, 3).unwrap();
    let text = suggest(&path, &[0.001, 0.1]).unwrap();
    // The command line gives the same text.
    let args: Vec<String> = ["suggest", path.to_str().unwrap(), "--steps", "0.001,0.1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut out = Vec::new();
    tickpack_trainer::run(&args, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), text);
    let bad: Vec<String> = ["suggest", "x", "--steps", "0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(tickpack_trainer::run(&bad, &mut Vec::new()).is_err());
    let _ = std::fs::remove_dir_all(&dir);
    for field in ["position", "rotation", "velocity", "steering", "throttle"] {
        assert!(text.contains(&format!("`car`.`{field}`")), "{text}");
    }
    assert!(
        !text.contains("`lap`"),
        "integers are not float fields: {text}"
    );
    assert!(text.contains("every value has unit norm"), "{text}");
    assert!(text.contains("declare `unit = true`"), "{text}");
    // One table row per step per field, coarser steps need fewer bits.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("0.001 ") || l.trim_start().starts_with("0.1 "))
        .collect();
    assert_eq!(rows.len(), 10, "{text}");
    for pair in rows.chunks(2) {
        let bits = |l: &str| -> f64 { l.split_whitespace().last().unwrap().parse().unwrap() };
        assert!(bits(pair[0]) > bits(pair[1]), "{pair:?}");
    }
}

#[test]
fn rebuilt_schemas_keep_their_quantisation() {
    use tickpack_trainer::captures::{ops_of, with_ops};
    let schema = tickpack_scenarios::racing_schema_quantized();
    let rebuilt = with_ops(&schema, &ops_of(&schema)).unwrap();
    assert_eq!(
        rebuilt.sections()[0].quantization(),
        schema.sections()[0].quantization()
    );
    assert_eq!(rebuilt.id(), schema.id());
}

#[test]
fn rebuilt_schemas_keep_grids_and_integrations() {
    use tickpack::{DeltaOp, Integrate, Primitive, Schema};
    use tickpack_trainer::captures::{ops_of, with_ops};
    let schema = Schema::builder()
        .entity("player")
        .field("time", Primitive::I32, 1)
        .field("velocity", Primitive::F32, 3)
        .field("origin", Primitive::F32, 3)
        .integrate(Integrate::new("velocity", "time", 0.001))
        .field("view", Primitive::F32, 3)
        .grid(360.0 / 65536.0)
        .build()
        .unwrap();
    assert_eq!(
        with_ops(&schema, &ops_of(&schema)).unwrap().id(),
        schema.id()
    );
    let xor = with_ops(&schema, &[vec![DeltaOp::Xor; 4]]).unwrap();
    let t = &xor.sections()[0];
    assert_eq!(
        t.integrations()[2],
        Some(Integrate::new("velocity", "time", 0.001))
    );
    assert_eq!(t.grids().nth(3), Some(Some(360.0 / 65536.0)));
    assert!(t.fields().iter().all(|f| f.delta == Some(DeltaOp::Xor)));
}

#[test]
fn jsonl_import_quantises_under_a_quantised_schema() {
    use tickpack_sets::capture::{Capture, CaptureLimits};
    let dir = std::env::temp_dir().join(format!("tickpack-qjsonl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = concat!(
        r#"{"game":"g","version":"1","schema":{"entities":[{"name":"ship","fields":["#,
        r#"{"name":"pos","type":"f32","len":2,"quantize":{"step":0.01}},"#,
        r#"{"name":"hp","type":"u16","quantize":{"range":[0,100],"out_of_range":"clamp"}}]}]}}"#,
        "\n",
        r#"{"tick":0,"sections":{"ship":[{"id":3,"pos":[1.23456,-2.5],"hp":250}]}}"#,
        "\n",
        r#"{"tick":1,"sections":{"ship":[{"id":3,"pos":[1.3,-2.5],"hp":99}]}}"#,
        "\n",
    );
    let (input, output) = (dir.join("q.jsonl"), dir.join("q.tpcap"));
    std::fs::write(&input, text).unwrap();
    tickpack_trainer::import::jsonl(&input, &output, false).unwrap();
    let c = Capture::read(
        &std::fs::read(&output).unwrap()[..],
        CaptureLimits::default(),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(c.header.schema.is_quantized());
    let rec = c.ticks[0].snapshot.sections()[0].get(3).unwrap().to_vec();
    assert_eq!(f32::from_le_bytes(rec[0..4].try_into().unwrap()), 1.23);
    assert_eq!(u16::from_le_bytes(rec[8..10].try_into().unwrap()), 100);
    // A NaN or an out-of-range value under `error` is refused with its line.
    let bad = text.replace(
        r#""quantize":{"step":0.01}"#,
        r#""quantize":{"step":0.01,"range":[-2,2]}"#,
    );
    let dir = std::env::temp_dir().join(format!("tickpack-qjsonl2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("b.jsonl"), bad).unwrap();
    let e = tickpack_trainer::import::jsonl(&dir.join("b.jsonl"), &dir.join("b.tpcap"), false)
        .unwrap_err();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.to_string().contains("outside"), "{e}");
}

#[test]
fn suggest_finds_grids_and_integrated_fields() {
    use tickpack::{Primitive, Schema, Snapshot};
    use tickpack_sets::capture::{CaptureHeader, CaptureOptions, CaptureWriter};
    let schema = Schema::builder()
        .entity("player")
        .field("view", Primitive::F32, 2)
        .field("origin", Primitive::F32, 1)
        .field("pos", Primitive::F32, 2)
        .field("vel", Primitive::F32, 2)
        .field("ms", Primitive::I32, 1)
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("tickpack-grid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("grid.tpcap");
    let file = std::fs::File::create(&path).unwrap();
    let header = CaptureHeader::new("g", "1", 20, schema.clone());
    let mut w = CaptureWriter::new(file, &header, CaptureOptions::default()).unwrap();
    let step = 360.0 / 65536.0;
    for tick in 0..200u64 {
        // View angles in 16-bit fractions of a turn, turning; a whole-unit
        // origin moving.
        let k = (tick * tick * 37 % 900) as f64;
        // A body moving at (3.3, -1.7) units per second, sent every 47 or
        // 53 ms, with a little noise.
        let ms = (tick * 50 + tick % 3 * 3) as f64;
        let noise = (tick % 5) as f64 * 0.001;
        let mut rec = Vec::new();
        for v in [
            k * step,
            (1000.0 - k) * step,
            100.0 + tick as f64,
            12.5 + 3.3 * ms / 1000.0 + noise,
            -40.25 - 1.7 * ms / 1000.0,
            3.3,
            -1.7,
        ] {
            rec.extend_from_slice(&(v as f32).to_le_bytes());
        }
        rec.extend_from_slice(&(ms as i32).to_le_bytes());
        let mut snap = Snapshot::new(&schema);
        snap.section_mut(0).unwrap().insert(1, &rec).unwrap();
        w.tick(tick, &snap).unwrap();
    }
    w.finish().unwrap();
    let text = suggest(&path, &[0.01]).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let grid_line = |field: &str| {
        let at = text.find(&format!("`player`.`{field}`")).unwrap();
        text[at..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .find(|l| l.contains("grid of"))
            .map(str::to_owned)
    };
    let view = grid_line("view").expect("a grid for the view angles");
    assert!(view.contains("`grid = 0.0054931640625`"), "{text}");
    // Integral values gain nothing from a finer grid.
    assert_eq!(grid_line("origin"), None, "{text}");
    // The position moves by the velocity over the milliseconds, declared
    // after it (FORMAT.md 4.9 allows any order).
    assert!(
        text.contains(
            "declare `integrate = { velocity = \"vel\", time = \"ms\", scale = 0.001 }` \
             (lossless)"
        ),
        "{text}"
    );
    // The whole origin advances one unit a tick: a clock over the tick
    // distance; the milliseconds are a clock too (an integer field).
    assert!(
        text.contains(
            "declare `integrate = { velocity = \"@1\", time = \"@ticks\", scale = 1 }` \
             (lossless)"
        ),
        "{text}"
    );
    assert!(text.contains("`player`.`ms` moves by `@1`"), "{text}");
    assert_eq!(text.matches("moves by").count(), 3, "{text}");
}
