//! The "Quake 3, real traffic" scenario: the five tournament demos of
//! `../shared/data/q3/` (relative to the repository), read from their
//! `.q3snap.gz` files (format in that folder's README), each snapshot sent
//! against the baseline Quake 3 itself used (its `delta_num`), measured
//! against Quake 3's own bytes for that snapshot (`snap_bits / 8`).
//!
//! Per file, tickpack without a dictionary, and with a delta dictionary
//! trained (zstd's trainer, on the payloads the encoder compresses) on the
//! four *other* files, so no file is measured with a dictionary that saw it;
//! then with that dictionary carrying a context-model table trained on the
//! same four files (the encoder keeps the model block when it is smaller).
//! Every packet carries its baseline's recall (`tickpack::Recall`), as a
//! session does, so entities re-entering view are coded against the last
//! state the client saw of them.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::collections::HashMap;
use tickpack::model::{ModelStats, ModelTable};

use tickpack::{
    Baseline, Decoder, Dictionary, Encoder, Limits, Primitive, Recall, Reference, Schema, Snapshot,
};

use crate::methods::Res;

/// Snapshots read from each file (the measure: the first 6,000).
const FULL_SNAPSHOTS: usize = 6000;
/// With `--quick`.
const QUICK_SNAPSHOTS: usize = 400;
/// Dictionary size, as the report's other trained tickpack rows.
const DICT_SIZE: usize = 16 * 1024;
/// Quake 3's angle step (`SHORT2ANGLE`): 360/65536 degrees.
const ANGLE_STEP: f64 = 360.0 / 65536.0;
/// Training payloads taken from each of the other files, evenly spaced.
const TRAIN_PER_FILE: usize = 1500;

const N_META: usize = 19;
const N_AREA: usize = 8;
const N_PLAYER: usize = 112;
const N_ENTITY: usize = 52;
// Indices into `meta` (the README's order).
const MESSAGE_NUM: usize = 0;
const DELTA_NUM: usize = 2;
const SNAP_FLAGS: usize = 3;
const SNAP_BITS: usize = 6;
const N_ENTITIES: usize = 18;

/// One demo, converted.
struct Demo {
    name: String,
    schema: Schema,
    ticks: Vec<Snapshot>,
    /// Per tick: the index of its baseline tick, if Quake 3 sent a delta.
    baselines: Vec<Option<usize>>,
    /// Per tick: the message number (the packet sequence, mod 2^16).
    sequences: Vec<u16>,
    /// Per tick: Quake 3's bytes for the snapshot.
    q3_bytes: Vec<f64>,
}

/// The folder of the demos, if present: `$TICKPACK_Q3_DIR`, else
/// `../shared/data/q3` next to the repository.
pub(crate) fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("TICKPACK_Q3_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/q3"),
        PathBuf::from,
    );
    dir.is_dir().then_some(dir)
}

fn i32s(r: &mut impl Read, n: usize, out: &mut Vec<i32>) -> Res<()> {
    let mut buf = vec![0u8; n * 4];
    r.read_exact(&mut buf)?;
    out.clear();
    out.extend(
        buf.chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
    Ok(())
}

fn names(h: &serde_json::Value, key: &str) -> Res<Vec<String>> {
    Ok(h[key]
        .as_array()
        .ok_or_else(|| format!("q3snap header has no {key}"))?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect())
}

/// Reads the first `max` snapshots of a `.q3snap.gz` file.
fn read_demo(path: &Path, max: usize) -> Res<Demo> {
    let mut r = flate2::read::GzDecoder::new(std::io::BufReader::new(std::fs::File::open(path)?));
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != b"Q3SNAP01" {
        return Err(format!("{}: not a q3snap file", path.display()).into());
    }
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut header = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut header)?;
    let h: serde_json::Value = serde_json::from_slice(&header)?;
    let (player, player_f) = (
        names(&h, "player_fields")?,
        names(&h, "player_float_fields")?,
    );
    let (entity, entity_f) = (
        names(&h, "entity_fields")?,
        names(&h, "entity_float_fields")?,
    );
    if player.len() != N_PLAYER || entity.len() != N_ENTITY {
        return Err(format!("{}: unexpected field counts", path.display()).into());
    }
    let ty = |name: &String, floats: &[String]| {
        if floats.contains(name) {
            Primitive::F32
        } else {
            Primitive::I32
        }
    };
    let mut b = Schema::builder()
        .entity("frame")
        .field("snap_flags", Primitive::I32, 1)
        .field("areamask", Primitive::U8, 32)
        .entity("player");
    for f in &player {
        b = b.field(f, ty(f, &player_f), 1);
        // Quake 3 sends view angles as 16-bit fractions of a turn
        // (`ANGLE2SHORT`): whole steps of 360/65536 degrees.
        if f.starts_with("viewangles") {
            b = b.grid(ANGLE_STEP);
        }
    }
    b = b.entity("entity");
    for f in &entity[1..] {
        b = b.field(f, ty(f, &entity_f), 1);
    }
    let schema = b.build()?;
    let count = h["snapshot_count"].as_u64().unwrap_or(0) as usize;
    let mut demo = Demo {
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().replace(".q3snap.gz", ""))
            .unwrap_or_default(),
        schema,
        ticks: Vec::new(),
        baselines: Vec::new(),
        sequences: Vec::new(),
        q3_bytes: Vec::new(),
    };
    let (mut meta, mut area, mut pl, mut ents) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut numbers: Vec<i32> = Vec::new();
    for _ in 0..count.min(max) {
        i32s(&mut r, N_META, &mut meta)?;
        i32s(&mut r, N_AREA, &mut area)?;
        i32s(&mut r, N_PLAYER, &mut pl)?;
        let ne = usize::try_from(meta[N_ENTITIES]).map_err(|_| "negative entity count")?;
        i32s(&mut r, ne * N_ENTITY, &mut ents)?;
        let tick = meta[MESSAGE_NUM];
        // A map restart resets the numbering: stop there, as the converter does.
        if numbers.last().is_some_and(|&p| tick <= p) {
            break;
        }
        let mut snap = Snapshot::new(&demo.schema);
        let mut rec = meta[SNAP_FLAGS].to_le_bytes().to_vec();
        rec.extend(area.iter().flat_map(|w| w.to_le_bytes()));
        snap.section_mut(0)
            .ok_or("no frame section")?
            .insert(0, &rec)?;
        let rec: Vec<u8> = pl.iter().flat_map(|v| v.to_le_bytes()).collect();
        snap.section_mut(1)
            .ok_or("no player section")?
            .insert(0, &rec)?;
        let sec = snap.section_mut(2).ok_or("no entity section")?;
        for e in ents.chunks_exact(N_ENTITY) {
            let rec: Vec<u8> = e[1..].iter().flat_map(|v| v.to_le_bytes()).collect();
            sec.insert(e[0] as u32, &rec)?;
        }
        let dn = meta[DELTA_NUM];
        let base = numbers
            .binary_search(&dn)
            .ok()
            .filter(|_| tick - dn <= 32767);
        demo.ticks.push(snap);
        demo.baselines.push(base);
        demo.sequences.push(tick as u16);
        demo.q3_bytes.push(f64::from(meta[SNAP_BITS]) / 8.0);
        numbers.push(tick);
    }
    Ok(demo)
}

fn baseline(d: &Demo, i: usize) -> Option<Baseline<'_>> {
    d.baselines[i].map(|b| Baseline {
        sequence: d.sequences[b],
        snapshot: &d.ticks[b],
    })
}

/// How far back Quake 3 deltas reach (its `PACKET_BACKUP`), with margin:
/// the recalls kept.
const RECALL_WINDOW: usize = 64;

/// The recall of each tick, along Quake 3's chain of baselines (a
/// keyframe's is empty), computed tick by tick; only the recent window is
/// kept. `TICKPACK_Q3_RECALL=0` turns recall off (to measure without it).
struct Recalls {
    on: bool,
    limits: Limits,
    kept: HashMap<usize, Recall>,
}

impl Recalls {
    fn new() -> Self {
        Self {
            on: std::env::var("TICKPACK_Q3_RECALL").map_or(true, |v| v != "0"),
            limits: Limits::default(),
            kept: HashMap::new(),
        }
    }

    /// Steps to tick `i` (call for every tick, in order): keeps its recall
    /// and returns its baseline's.
    fn step(&mut self, d: &Demo, i: usize) -> Option<Recall> {
        let base = d.baselines[i].and_then(|b| self.kept.get(&b).cloned());
        let own = match (baseline(d, i), &base) {
            (Some(b), Some(r)) => r.advance(b, &d.ticks[i], d.sequences[i], &self.limits),
            _ => Recall::keyframe(d.sequences[i]),
        };
        self.kept.insert(i, own);
        self.kept.retain(|&k, _| k + RECALL_WINDOW > i);
        base.filter(|_| self.on)
    }
}

/// Tick `i`'s reference: its baseline and that baseline's recall.
fn reference<'a>(d: &'a Demo, i: usize, recall: Option<&'a Recall>) -> Reference<'a> {
    Reference {
        baseline: baseline(d, i),
        prior: None,
        recall: recall.filter(|_| d.baselines[i].is_some()),
    }
}

/// Per-file results.
struct FileRow {
    name: String,
    snapshots: usize,
    q3: f64,
    plain: f64,
    trained: f64,
    us: f64,
    model: f64,
    model_us: f64,
}

/// Encodes and decodes every snapshot of `d` (checking each), returning
/// the mean packet bytes and the mean encode + decode time in µs.
fn replay(d: &Demo, dict: Option<&Dictionary>) -> Res<(f64, f64)> {
    let mut enc = Encoder::new(d.schema.clone());
    let mut dec = Decoder::new(d.schema.clone());
    if let Some(dict) = dict {
        enc.set_dictionary(Some(dict))?;
        dec.add_dictionary(dict)?;
    }
    let (mut packet, mut out) = (Vec::new(), Snapshot::default());
    let (mut bytes, mut secs) = (0usize, 0f64);
    let mut recalls = Recalls::new();
    for (i, tick) in d.ticks.iter().enumerate() {
        let recall = recalls.step(d, i);
        let r = reference(d, i, recall.as_ref());
        let t = Instant::now();
        enc.encode_to_vec(tick, d.sequences[i], r, &mut packet)?;
        dec.decode_into(&packet, r, &mut out)?;
        secs += t.elapsed().as_secs_f64();
        if out != *tick {
            return Err(format!("{}: snapshot {i} decoded differently", d.name).into());
        }
        bytes += packet.len();
    }
    let n = d.ticks.len().max(1) as f64;
    Ok((bytes as f64 / n, secs * 1e6 / n))
}

/// A delta dictionary trained on the payloads of `demos` (every one but
/// the measured file), all under `schema`.
fn train(schema: &Schema, demos: &[&Demo]) -> Res<Dictionary> {
    let mut enc = Encoder::new(schema.clone());
    let mut samples = Vec::new();
    for d in demos {
        let step = (d.ticks.len() / TRAIN_PER_FILE).max(1);
        let mut recalls = Recalls::new();
        for i in 0..d.ticks.len() {
            let recall = recalls.step(d, i);
            if i % step != 0 {
                continue;
            }
            let mut p = Vec::new();
            let r = reference(d, i, recall.as_ref());
            enc.payload(&d.ticks[i], d.sequences[i], r, &mut p)?;
            samples.push(p);
        }
    }
    Ok(Dictionary::new(
        0x7e57_0003,
        zstd::dict::from_samples(&samples, DICT_SIZE)?,
    ))
}

/// A context-model table trained on every delta packet of `demos`.
fn train_model(schema: &Schema, demos: &[&Demo]) -> Res<ModelTable> {
    let mut enc = Encoder::new(schema.clone());
    let shape = enc
        .model_shape()
        .ok_or("schema too large for a context model")?;
    let mut stats = ModelStats::new(shape)?;
    for d in demos {
        let mut recalls = Recalls::new();
        for i in 0..d.ticks.len() {
            let recall = recalls.step(d, i);
            if baseline(d, i).is_some() {
                let r = reference(d, i, recall.as_ref());
                enc.model_tokens(&d.ticks[i], d.sequences[i], r, &mut stats)?;
            }
        }
    }
    Ok(ModelTable::from_stats(&stats))
}

/// The section of the report, or a note saying why it was skipped.
pub(crate) fn section(quick: bool) -> Res<String> {
    let mut s = String::from("## Quake 3, real traffic\n\n");
    let Some(dir) = data_dir() else {
        let _ = writeln!(
            s,
            "Skipped: `../shared/data/q3/` (the Quake 3 demo snapshots) is not next to the \
             repository (or set `TICKPACK_Q3_DIR`).\n"
        );
        return Ok(s);
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".q3snap.gz"))
        .collect();
    files.sort();
    let max = if quick {
        QUICK_SNAPSHOTS
    } else {
        FULL_SNAPSHOTS
    };
    let demos = files
        .iter()
        .map(|f| read_demo(f, max))
        .collect::<Res<Vec<_>>>()?;
    let mut rows = Vec::new();
    for (k, d) in demos.iter().enumerate() {
        if d.schema.id() != demos[0].schema.id() {
            return Err(format!("{}: another schema than the other demos", d.name).into());
        }
        let others: Vec<&Demo> = demos
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .map(|(_, o)| o)
            .collect();
        let dict = train(&d.schema, &others)?;
        let (plain, _) = replay(d, None)?;
        let (trained, us) = replay(d, Some(&dict))?;
        let with_model = dict.clone().with_model(train_model(&d.schema, &others)?);
        let (model, model_us) = replay(d, Some(&with_model))?;
        let n = d.ticks.len().max(1) as f64;
        rows.push(FileRow {
            name: d.name.clone(),
            snapshots: d.ticks.len(),
            q3: d.q3_bytes.iter().sum::<f64>() / n,
            plain,
            trained,
            us,
            model,
            model_us,
        });
    }
    let _ = writeln!(
        s,
        "The first {max} snapshots of each demo in `../shared/data/q3/`, each sent against the \
         baseline Quake 3 used for it; the anchor is Quake 3's own bytes for the snapshot \
         (`snap_bits / 8`: server time, delta number, area mask, player state and entities, \
         Huffman-coded). tickpack bytes are whole packets, header included. \"trained\": a \
         {} KiB delta dictionary trained on the other four demos' payloads. \"model\": that \
         dictionary with a context-model table trained on the other four demos' packets \
         (block type 4, kept per packet when smaller). µs: encode + decode per snapshot, one \
         thread.\n",
        DICT_SIZE / 1024
    );
    let _ = writeln!(
        s,
        "| demo | snapshots | Quake 3 B | tickpack B | × Quake 3 | tickpack trained B | × Quake 3 | µs | tickpack model B | × Quake 3 | µs |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let (mut q, mut p, mut t, mut m) = (0.0, 0.0, 0.0, 0.0);
    for r in &rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.1} | {:.2} | {:.1} | {:.2} | {:.1} | {:.1} | {:.2} | {:.1} |",
            r.name,
            r.snapshots,
            r.q3,
            r.plain,
            r.plain / r.q3,
            r.trained,
            r.trained / r.q3,
            r.us,
            r.model,
            r.model / r.q3,
            r.model_us
        );
        q += r.q3;
        p += r.plain;
        t += r.trained;
        m += r.model;
    }
    let _ = writeln!(
        s,
        "| **all** | | {:.1} | {:.1} | **{:.2}** | {:.1} | **{:.2}** | | {:.1} | **{:.2}** | |\n",
        q / rows.len().max(1) as f64,
        p / rows.len().max(1) as f64,
        p / q.max(1e-9),
        t / rows.len().max(1) as f64,
        t / q.max(1e-9),
        m / rows.len().max(1) as f64,
        m / q.max(1e-9),
    );
    Ok(s)
}
