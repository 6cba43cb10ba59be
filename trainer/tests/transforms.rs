//! `train` applies the lossless transforms it finds (a grid, an
//! integration) in the set's schema, so a capture recorded with the plain
//! schema gets them; `eval` and `inspect` say which; values off the grid
//! still come back bit for bit.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use tickpack::{Baseline, Primitive, Reference, Schema, Snapshot};
use tickpack_sets::capture::{CaptureHeader, CaptureOptions, CaptureWriter};
use tickpack_sets::dictset::DictionarySet;
use tickpack_trainer::run;

const STEP: f64 = 360.0 / 65536.0;

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tickpack-transforms-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn cmd(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::new();
    run(&args, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// A plain schema: view angles (on the 16-bit grid of a turn, not
/// declared), a velocity and a clock, a position moving by them, hit points.
fn plain_schema() -> Schema {
    Schema::builder()
        .entity("player")
        .field("view", Primitive::F32, 2)
        .field("vel", Primitive::F32, 2)
        .field("ms", Primitive::I32, 1)
        .field("pos", Primitive::F32, 2)
        .field("hp", Primitive::U16, 1)
        .build()
        .unwrap()
}

/// Tick `t`'s world: 8 players turning by whole steps and moving at
/// constant speed, sent every 47 or 53 ms. `view(t, id)` may replace a
/// view angle's value.
fn world(schema: &Schema, t: u64, view: &dyn Fn(u64, u32, f64) -> f32) -> Snapshot {
    let mut snap = Snapshot::new(schema);
    let ms = t * 50 + t % 3 * 3;
    for id in 0..8u32 {
        let k = ((t * t * 37 + u64::from(id) * 911) % 4000) as f64;
        let (vx, vy) = (3.25 * f64::from(id + 1), -1.5);
        let sec = ms as f64 / 1000.0;
        let mut rec = Vec::new();
        rec.extend_from_slice(&view(t, id, k * STEP).to_le_bytes());
        rec.extend_from_slice(&(((7000 - k as u64) as f64 * STEP) as f32).to_le_bytes());
        for v in [vx, vy] {
            rec.extend_from_slice(&(v as f32).to_le_bytes());
        }
        rec.extend_from_slice(&(ms as i32).to_le_bytes());
        for (p0, v) in [(12.5, vx), (-40.25, vy)] {
            rec.extend_from_slice(&((p0 + v * sec) as f32).to_le_bytes());
        }
        rec.extend_from_slice(&(100 - (t % 50) as u16).to_le_bytes());
        snap.section_mut(0).unwrap().insert(id, &rec).unwrap();
    }
    snap
}

fn write_capture(path: &Path, schema: &Schema, view: &dyn Fn(u64, u32, f64) -> f32) {
    write_ticks(path, schema, &|t| world(schema, t, view));
}

/// A 300-tick capture of `tick(t)` under `schema`.
fn write_ticks(path: &Path, schema: &Schema, tick: &dyn Fn(u64) -> Snapshot) {
    let file = std::fs::File::create(path).unwrap();
    let header = CaptureHeader::new("g", "1", 20, schema.clone());
    let mut w = CaptureWriter::new(file, &header, CaptureOptions::default()).unwrap();
    for t in 0..300u64 {
        w.tick(t, &tick(t)).unwrap();
    }
    w.finish().unwrap();
}

fn on_grid(_: u64, _: u32, x: f64) -> f32 {
    x as f32
}

fn train(cap: &Path, set: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"train",
        &cap,
        &"--out",
        &set,
        &"--sizes",
        &"1024",
        &"--baseline-distance",
        &"2",
        &"--json",
    ];
    for e in extra {
        args.push(e);
    }
    serde_json::from_str(&cmd(&args)).unwrap()
}

fn eval(cap: &Path, set: &Path) -> serde_json::Value {
    serde_json::from_str(&cmd(&[
        &"eval",
        &cap,
        &"--dictionaries",
        &set,
        &"--baseline-distance",
        &"2",
        &"--json",
    ]))
    .unwrap()
}

#[test]
fn a_grid_and_an_integration_found_in_a_plain_capture_go_into_the_set() {
    let dir = tmp("found");
    let cap = dir.join("plain.tpcap");
    let schema = plain_schema();
    write_capture(&cap, &schema, &on_grid);
    let set_dir = dir.join("set");
    let report = train(&cap, &set_dir, &[]);
    let set = DictionarySet::load(&set_dir).unwrap();

    // The set's schema declares both; the captured schema is the plain one,
    // which the set still fits.
    let m = set.manifest();
    assert_eq!(m.base_schema_id, schema.id());
    assert_ne!(m.schema_id, schema.id());
    set.fits(&schema).unwrap();
    let player = &set.schema().sections()[0];
    let grids: Vec<Option<f64>> = player.grids().collect();
    assert_eq!(grids[0], Some(STEP), "{report:#}");
    let pos = player.integrations()[3].as_ref().expect("pos integrated");
    assert_eq!((pos.velocity.as_str(), pos.time.as_str()), ("vel", "ms"));
    let listed: Vec<String> = m
        .transforms
        .iter()
        .map(|t| format!("{}.{}: {}", t.entity, t.field, t.describe()))
        .collect();
    assert!(
        listed.contains(&"player.view: grid 0.0054931640625".to_owned()),
        "{listed:?}"
    );
    assert!(
        listed
            .iter()
            .any(|t| t.starts_with("player.pos: integrate vel over ms")),
        "{listed:?}"
    );
    for t in &m.transforms {
        assert!(t.held_out_bytes[1] < t.held_out_bytes[0], "{t:?}");
    }

    // `eval` round-trips the plain capture bit-exactly through the set and
    // names the transforms; the set without them is larger.
    let with = eval(&cap, &set_dir);
    assert_eq!(with["roundtrip_ok"], true);
    let named: Vec<&str> = with["transforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(named, listed);
    let none_dir = dir.join("none");
    let off = train(&cap, &none_dir, &["--no-transforms"]);
    assert!(off["manifest"].get("transforms").is_none(), "{off:#}");
    let without = eval(&cap, &none_dir);
    assert_eq!(without["transforms"].as_array().unwrap().len(), 0);
    assert!(
        with["bytes_mean"].as_f64().unwrap() < without["bytes_mean"].as_f64().unwrap(),
        "{with} against {without}"
    );

    // `inspect` says which were applied, and shows them in the schema.
    let text = cmd(&[&"inspect", &set_dir]);
    assert!(
        text.contains("transform applied by training: player.view: grid 0.0054931640625"),
        "{text}"
    );
    assert!(text.contains("vel over ms x 0.001"), "{text}");
    let text = cmd(&[&"inspect", &none_dir]);
    assert!(
        text.contains("transforms applied by training: none"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_value_off_the_grid_in_held_out_ticks_comes_back_bit_for_bit() {
    let dir = tmp("offgrid");
    let cap = dir.join("plain.tpcap");
    let schema = plain_schema();
    // Tick 290 (held out: the latest 20% are ticks 240-299) has one view
    // angle a hair off the grid, and tick 295 a NaN with a payload.
    let odd = |t: u64, id: u32, x: f64| match (t, id) {
        (290, 3) => f32::from_bits((x as f32).to_bits() + 1),
        (295, 5) => f32::from_bits(0x7fc0_1234),
        _ => x as f32,
    };
    write_capture(&cap, &schema, &odd);
    let set_dir = dir.join("set");
    train(&cap, &set_dir, &[]);
    let set = DictionarySet::load(&set_dir).unwrap();
    // The grid pays on every other value, so it is applied.
    let grids: Vec<Option<f64>> = set.schema().sections()[0].grids().collect();
    assert_eq!(grids[0], Some(STEP));
    assert_eq!(eval(&cap, &set_dir)["roundtrip_ok"], true);

    // Directly: the odd ticks, against on-grid and off-grid baselines, and
    // as keyframes.
    let mut enc = set.encoder(tickpack::DEFAULT_LEVEL).unwrap();
    let mut dec = set.decoder().unwrap();
    let ticks: Vec<Snapshot> = (286..300).map(|t| world(&schema, t, &odd)).collect();
    for (i, snap) in ticks.iter().enumerate() {
        for b in [None, i.checked_sub(1), i.checked_sub(4)] {
            let baseline = b.map(|b| Baseline {
                sequence: b as u16,
                snapshot: &ticks[b],
            });
            let reference = Reference::from(baseline);
            let mut packet = Vec::new();
            enc.encode_to_vec(snap, i as u16, reference, &mut packet)
                .unwrap();
            let mut out = Snapshot::default();
            dec.decode_into(&packet, reference, &mut out).unwrap();
            assert_eq!(out, *snap, "tick {i} against {b:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_integration_over_a_velocity_declared_after_it_is_applied() {
    let dir = tmp("late");
    let cap = dir.join("plain.tpcap");
    // Velocity and clock declared after the position, as Quake 3's
    // converter declares its player state: the integration is applied
    // (FORMAT.md 4.9 codes integrated values last); the view angles are
    // off every grid, so nothing else is.
    let schema = Schema::builder()
        .entity("player")
        .field("view", Primitive::F32, 2)
        .field("pos", Primitive::F32, 2)
        .field("vel", Primitive::F32, 2)
        .field("ms", Primitive::I32, 1)
        .field("hp", Primitive::U16, 1)
        .build()
        .unwrap();
    write_ticks(&cap, &schema, &|t| {
        // Reorder plain_schema's record: view, pos, vel, ms, hp.
        let plain = world(&plain_schema(), t, &|t, id, x| {
            (x + 0.001 * (t * 7 + u64::from(id)) as f64) as f32
        });
        let mut snap = Snapshot::new(&schema);
        for (id, r) in plain.sections()[0].iter() {
            let rec = [&r[0..8], &r[20..28], &r[8..16], &r[16..20], &r[28..30]].concat();
            snap.section_mut(0).unwrap().insert(id, &rec).unwrap();
        }
        snap
    });
    let set_dir = dir.join("set");
    let report = train(&cap, &set_dir, &[]);
    let set = DictionarySet::load(&set_dir).unwrap();
    // The clock `ms` (about 50 a tick) may be integrated over the tick
    // distance too; the position then is a level-2 integration.
    let chosen = &set.manifest().transforms;
    assert!(chosen.iter().any(|t| t.field == "pos"), "{report:#}");
    assert!(
        chosen.iter().all(|t| t.field == "pos" || t.field == "ms"),
        "{report:#}"
    );
    let ty = &set.schema().sections()[0];
    assert!(ty.grids().all(|g| g.is_none()));
    assert_eq!(
        ty.integrations()[1],
        Some(tickpack::Integrate::new("vel", "ms", 0.001)),
        "{report:#}"
    );
    let skipped = report["transforms_not_applied"].as_array().unwrap();
    assert!(skipped.is_empty(), "{report:#}");
    // `eval` codes the plain capture with it, bit for bit, and says so.
    let e = eval(&cap, &set_dir);
    assert_eq!(e["roundtrip_ok"], true, "{e:#}");
    let said = e["transforms"].as_array().unwrap();
    assert!(
        said.iter()
            .any(|t| t.as_str().unwrap().starts_with("player.pos: integrate")),
        "{e:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Tick `t`'s world for the unit test: 8 bodies turning about a tilted
/// axis, each rotation a unit quaternion normalised in `f32` (body 5 sends
/// a vector that is not unit every 7th tick), and a position.
fn spinning(schema: &Schema, t: u64) -> Snapshot {
    let mut snap = Snapshot::new(schema);
    for id in 0..8u32 {
        let a = (t as f32) * 0.03 * (id + 1) as f32;
        let (s, c) = (a / 2.0).sin_cos();
        let mut q = [0.6 * s, 0.8 * s * (t as f32 * 0.01).cos(), 0.1 * s, c];
        let n = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        q = q.map(|x| x / n);
        if id == 5 && t.is_multiple_of(7) {
            q[3] = 2.5;
        }
        let mut rec: Vec<u8> = q.iter().flat_map(|x| x.to_le_bytes()).collect();
        rec.extend_from_slice(&((t as f32) * 0.5 + id as f32).to_le_bytes());
        snap.section_mut(0).unwrap().insert(id, &rec).unwrap();
    }
    snap
}

#[test]
fn a_unit_quaternion_found_in_a_plain_capture_goes_into_the_set() {
    let dir = tmp("unit");
    let cap = dir.join("plain.tpcap");
    let schema = Schema::builder()
        .entity("body")
        .field("rot", Primitive::F32, 4)
        .field("x", Primitive::F32, 1)
        .build()
        .unwrap();
    write_ticks(&cap, &schema, &|t| spinning(&schema, t));
    let set_dir = dir.join("set");
    let report = train(&cap, &set_dir, &[]);
    let set = DictionarySet::load(&set_dir).unwrap();
    set.fits(&schema).unwrap();
    assert_eq!(
        set.schema().sections()[0].units(),
        [true, false],
        "{report:#}"
    );
    let t = &set.manifest().transforms;
    let unit = t.iter().find(|t| t.field == "rot").expect("rot listed");
    assert_eq!(unit.describe(), "unit vector");
    // The blocks go as byte planes, which it leaves alone: the model's
    // bits decide.
    assert!(unit.held_out_bytes[1] <= unit.held_out_bytes[0], "{t:?}");
    let [before, after] = unit.held_out_model_bytes.expect("model bytes");
    assert!(after < before, "{t:?}");
    // The plain capture, odd vectors included, round-trips through it.
    let with = eval(&cap, &set_dir);
    assert_eq!(with["roundtrip_ok"], true);
    let named = with["transforms"].as_array().unwrap();
    assert!(named.iter().any(|n| n == "body.rot: unit vector"), "{with}");
    let text = cmd(&[&"inspect", &set_dir]);
    assert!(text.contains("unit"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_integration_over_the_tick_distance_is_found_and_applied() {
    let dir = tmp("ticks");
    let cap = dir.join("plain.tpcap");
    // Records without a time: 8 players at whole positions that move by
    // their velocity (units per second, steered a little every tick) over
    // ticks of 50 ms, Quake 3's entity trajectories; `age` counts ticks.
    let schema = Schema::builder()
        .entity("player")
        .field("pos", Primitive::F32, 2)
        .field("vel", Primitive::F32, 2)
        .field("age", Primitive::U16, 1)
        .build()
        .unwrap();
    // Each player's (position, velocity) at every tick.
    let mut paths = vec![Vec::new(); 8];
    for (id, path) in paths.iter_mut().enumerate() {
        let mut pos = [100.0 * id as f64, -900.0];
        let mut vel = [40.0 * (id + 1) as f64, -60.0 - 7.0 * id as f64];
        let mut r = 0x9e37_79b9_u64 + id as u64;
        for _ in 0..300 {
            path.push((pos, vel));
            for v in &mut vel {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                *v = (*v + (r % 61) as f64 - 30.0).clamp(-320.0, 320.0);
            }
            for (p, v) in pos.iter_mut().zip(vel) {
                *p = (*p + v * 0.05).round();
            }
        }
    }
    write_ticks(&cap, &schema, &|t| {
        let mut snap = Snapshot::new(&schema);
        for (id, path) in paths.iter().enumerate() {
            let (pos, vel) = path[t as usize];
            let mut rec = Vec::new();
            for x in pos.into_iter().chain(vel) {
                rec.extend_from_slice(&(x as f32).to_le_bytes());
            }
            rec.extend_from_slice(&(t as u16 + id as u16).to_le_bytes());
            snap.section_mut(0)
                .unwrap()
                .insert(id as u32, &rec)
                .unwrap();
        }
        snap
    });
    let set_dir = dir.join("set");
    let report = train(&cap, &set_dir, &[]);
    let set = DictionarySet::load(&set_dir).unwrap();
    let ty = &set.schema().sections()[0];
    let pos = ty.integrations()[0].as_ref().expect("pos integrated");
    // The scale fitted near the tick length (the mean velocity of the
    // prediction is not the one that moved them).
    assert_eq!(
        (pos.velocity.as_str(), pos.time.as_str()),
        ("vel", tickpack::Integrate::TICKS),
        "{report:#}"
    );
    assert!((pos.scale - 0.05).abs() < 0.005, "{report:#}");
    let age = ty.integrations()[2].as_ref().expect("age integrated");
    assert_eq!(
        (age.velocity.as_str(), age.time.as_str(), age.scale),
        (tickpack::Integrate::ONE, tickpack::Integrate::TICKS, 1.0),
        "{report:#}"
    );
    // `eval` codes the plain capture with them, bit for bit, smaller than
    // without.
    let with = eval(&cap, &set_dir);
    assert_eq!(with["roundtrip_ok"], true, "{with:#}");
    let none_dir = dir.join("none");
    train(&cap, &none_dir, &["--no-transforms"]);
    let without = eval(&cap, &none_dir);

    assert!(
        with["bytes_mean"].as_f64().unwrap() < without["bytes_mean"].as_f64().unwrap(),
        "{with} against {without}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
