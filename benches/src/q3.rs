//! The real Quake 3 traffic of `../shared/data/q3/` (relative to the
//! repository): the five tournament demos read from their `.q3snap.gz`
//! files (format in that folder's README), each snapshot with the baseline
//! Quake 3 itself used (its `delta_num`) and Quake 3's own bytes for it
//! (`snap_bits / 8`), plus the dictionary and context-model training and
//! the replay the report's "Quake 3, real traffic" section and the `q3`
//! bench share.
//!
//! Every packet carries its baseline's recall (`tickpack::Recall`), as a
//! session does, so entities re-entering view are coded against the last
//! state the client saw of them.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::collections::HashMap;
use tickpack::model::{ModelStats, ModelTable};

use tickpack::{
    Baseline, Decoder, Dictionary, Encoder, Integrate, Limits, Primitive, Recall, Reference,
    Schema, Snapshot,
};

/// Errors of reading and training.
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Snapshots read from each file (the measure: the first 6,000).
pub const FULL_SNAPSHOTS: usize = 6000;
/// With `--quick`.
pub const QUICK_SNAPSHOTS: usize = 400;
/// Dictionary size, as the report's other trained tickpack rows.
pub const DICT_SIZE: usize = 16 * 1024;
/// Quake 3's angle step (`SHORT2ANGLE`): 360/65536 degrees.
pub const ANGLE_STEP: f64 = 360.0 / 65536.0;

const N_META: usize = 19;
const N_AREA: usize = 8;
const N_PLAYER: usize = 112;
const N_ENTITY: usize = 52;
// Indices into `meta` (the README's order).
const MESSAGE_NUM: usize = 0;
const SERVER_TIME: usize = 1;
const DELTA_NUM: usize = 2;
const SNAP_FLAGS: usize = 3;
const SNAP_BITS: usize = 6;
const N_ENTITIES: usize = 18;

/// One demo, converted.
pub struct Demo {
    /// The file name without `.q3snap.gz`.
    pub name: String,
    /// The schema every demo shares (frame, player, entity sections).
    pub schema: Schema,
    /// The snapshots, in order.
    pub ticks: Vec<Snapshot>,
    /// Per tick: the index of its baseline tick, if Quake 3 sent a delta.
    pub baselines: Vec<Option<usize>>,
    /// Per tick: the message number (the packet sequence, mod 2^16).
    pub sequences: Vec<u16>,
    /// Per tick: Quake 3's bytes for the snapshot.
    pub q3_bytes: Vec<f64>,
}

/// The folder of the demos, if present: `$TICKPACK_Q3_DIR`, else
/// `../shared/data/q3` next to the repository.
pub fn data_dir() -> Option<PathBuf> {
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

/// Reads the first `max` snapshots of every `.q3snap.gz` demo in `dir`,
/// in file-name order.
pub fn read_demos(dir: &Path, max: usize) -> Res<Vec<Demo>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".q3snap.gz"))
        .collect();
    files.sort();
    files.iter().map(|f| read_demo(f, max)).collect()
}

/// Reads the first `max` snapshots of a `.q3snap.gz` file.
pub fn read_demo(path: &Path, max: usize) -> Res<Demo> {
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
    // Quake 3's snapshot bytes include the server time (`MSG_WriteLong`),
    // which the message number does not give (steps of 33, 50 or 66 ms,
    // and jumps), so tickpack sends it too. It rides in the player record,
    // sent every snapshot, just before the command time, whose mask group
    // is marked in nearly every packet anyway: on the zstd path with the
    // dictionary 1.37 B a packet there, against 2.66 B as a field of the
    // frame row (which changes rarely otherwise, so the server time alone
    // makes it a changed row with masks of its own); the same with the
    // model (`q3_replay both 0`).
    let mut b = Schema::builder()
        .entity("frame")
        .field("snap_flags", Primitive::I32, 1)
        .field("areamask", Primitive::U8, 32)
        .entity("player");
    let order = player_order(&player);
    for &i in &order {
        let f = &player[i];
        if f == "commandTime" {
            b = b.field("server_time", Primitive::I32, 1);
        }
        b = b.field(f, ty(f, &player_f), 1);
        // Quake 3 sends view angles as 16-bit fractions of a turn
        // (`ANGLE2SHORT`): whole steps of 360/65536 degrees.
        if f.starts_with("viewangles") {
            b = b.grid(ANGLE_STEP);
        }
        // The origin moves by the velocity over the command time (ms).
        if let Some(k) = f.strip_prefix("origin") {
            b = b.integrate(Integrate::new(
                &format!("velocity{k}"),
                "commandTime",
                0.001,
            ));
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
        let rec: Vec<u8> = order
            .iter()
            .flat_map(|&i| {
                let st = (player[i] == "commandTime").then_some(meta[SERVER_TIME]);
                st.into_iter()
                    .flat_map(i32::to_le_bytes)
                    .chain(pl[i].to_le_bytes())
            })
            .collect();
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

/// The player fields in schema order: Quake 3's, with the velocity moved
/// before the origin, which is declared integrated from it (a field's
/// velocity and time come before it).
fn player_order(player: &[String]) -> Vec<usize> {
    let velocity: Vec<usize> = (0..player.len())
        .filter(|&i| player[i].starts_with("velocity"))
        .collect();
    let mut order = Vec::with_capacity(player.len());
    for (i, name) in player.iter().enumerate() {
        if name.starts_with("origin") && !velocity.iter().any(|v| order.contains(v)) {
            order.extend(&velocity);
        }
        if !order.contains(&i) {
            order.push(i);
        }
    }
    order
}

/// Every demo but the `k`-th: what the `k`-th is measured with training on.
pub fn others(demos: &[Demo], k: usize) -> Vec<&Demo> {
    demos
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != k)
        .map(|(_, o)| o)
        .collect()
}

/// Tick `i`'s baseline as Quake 3 sent it, if any.
pub fn baseline(d: &Demo, i: usize) -> Option<Baseline<'_>> {
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
pub struct Recalls {
    on: bool,
    limits: Limits,
    kept: HashMap<usize, Recall>,
}

impl Default for Recalls {
    fn default() -> Self {
        Self::new()
    }
}

impl Recalls {
    /// Recalls on unless `TICKPACK_Q3_RECALL=0`.
    pub fn new() -> Self {
        Self {
            on: std::env::var("TICKPACK_Q3_RECALL").map_or(true, |v| v != "0"),
            limits: Limits::default(),
            kept: HashMap::new(),
        }
    }

    /// Steps to tick `i` (call for every tick, in order): keeps its recall
    /// and returns its baseline's.
    pub fn step(&mut self, d: &Demo, i: usize) -> Option<Recall> {
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
pub fn reference<'a>(d: &'a Demo, i: usize, recall: Option<&'a Recall>) -> Reference<'a> {
    Reference::from(baseline(d, i)).with_recall(recall.filter(|_| d.baselines[i].is_some()))
}

/// Encodes and decodes every snapshot of `d` (checking each), returning
/// the mean packet bytes and the mean encode + decode time in µs.
pub fn replay(d: &Demo, dict: Option<&Dictionary>) -> Res<(f64, f64)> {
    let (mut enc, mut dec) = codecs(d, dict)?;
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

/// An encoder and a decoder for `d`'s schema, with `dict` on both sides.
fn codecs(d: &Demo, dict: Option<&Dictionary>) -> Res<(Encoder, Decoder)> {
    let mut enc = Encoder::new(d.schema.clone());
    let mut dec = Decoder::new(d.schema.clone());
    if let Some(dict) = dict {
        enc.set_dictionary(Some(dict))?;
        dec.add_dictionary(dict)?;
    }
    Ok((enc, dec))
}

/// Snapshots timed together by [`time_replay`]: about 3 ms of work.
pub const CHUNK: usize = 250;

/// Encode + decode µs per snapshot of `d` with `dict`, by the wall clock:
/// `passes` replays, each chunk of [`CHUNK`] snapshots counted at its
/// fastest pass, so a pass slowed by other work on a shared machine only
/// loses the chunks it was slowed in. Packets are not checked here (see
/// [`replay`]); 0 passes give 0.
pub fn time_replay(d: &Demo, dict: Option<&Dictionary>, passes: usize) -> Res<f64> {
    if passes == 0 || d.ticks.is_empty() {
        return Ok(0.0);
    }
    let mut r = Recalls::new();
    let recalls: Vec<_> = (0..d.ticks.len()).map(|i| r.step(d, i)).collect();
    let mut best = vec![u64::MAX; d.ticks.len().div_ceil(CHUNK)];
    for _ in 0..passes {
        let (mut enc, mut dec) = codecs(d, dict)?;
        let (mut packet, mut out) = (Vec::new(), Snapshot::default());
        for (c, best) in best.iter_mut().enumerate() {
            let t = Instant::now();
            for (i, tick) in d.ticks.iter().enumerate().skip(c * CHUNK).take(CHUNK) {
                let rf = reference(d, i, recalls[i].as_ref());
                enc.encode_to_vec(tick, d.sequences[i], rf, &mut packet)?;
                dec.decode_into(&packet, rf, &mut out)?;
            }
            *best = (*best).min(t.elapsed().as_nanos() as u64);
        }
    }
    Ok(best.iter().sum::<u64>() as f64 / 1e3 / d.ticks.len() as f64)
}

/// A delta dictionary trained on every payload of `demos` (every one but
/// the measured file), all under `schema`, as `tickpack-trainer train`
/// trains on every packet of its captures.
pub fn train(schema: &Schema, demos: &[&Demo]) -> Res<Dictionary> {
    let mut enc = Encoder::new(schema.clone());
    let mut samples = Vec::new();
    for d in demos {
        let mut recalls = Recalls::new();
        for i in 0..d.ticks.len() {
            let recall = recalls.step(d, i);
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
pub fn train_model(schema: &Schema, demos: &[&Demo]) -> Res<ModelTable> {
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
