//! `eval`: replays captures through the codec and reports sizes and times,
//! next to plain zstd frames, as one JSON object with stable keys. Every
//! packet is coded with its baseline's recall, as a session codes it.

#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use tickpack::{Decoder, Encoder, Snapshot};
use tickpack_sets::dictset::{DictSetError, DictionarySet, MANIFEST_FILE};

use crate::byfield::{ByField, ByFieldAcc};
use crate::captures::{held_out_start, scan_all, snapshot_bytes, Scanned};
use crate::measure::{encode, raw_snapshot, Job};
use crate::recalls::{Expiry, RecallChain};
use crate::replay::{describe_all, plan, BaselineModel, Packet, Rtt};
use crate::TrainerError;

/// Size of the dictionary trained for `zstd_frame_dict_bytes_mean`: zstd's
/// own default for `zstd --train` (110 KiB).
pub const ZSTD_FRAME_DICT_SIZE: usize = 112_640;

/// What `eval` does.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Captures to replay.
    pub captures: Vec<PathBuf>,
    /// A set directory, or a root with `<game>/<version>/` sets.
    pub dictionaries: Option<PathBuf>,
    /// How packets pick baselines.
    pub model: BaselineModel,
    /// Replay only the held-out ticks (the latest `held_out_fraction` of
    /// each capture, as `train` splits them).
    pub held_out: bool,
    /// Fraction held out (as given to `train`); the rest is the training
    /// split the plain frames' dictionary is trained on.
    pub held_out_fraction: f64,
    /// zstd level, for tickpack and the plain frames alike.
    pub level: i32,
    /// Most bytes of raw snapshots the plain frames' dictionary is trained
    /// on (default [`MAX_FRAME_DICT_SAMPLES`]).
    pub max_dict_samples: u64,
    /// Most bytes of snapshots held at once as baselines still to be used
    /// (default [`MAX_HELD_BYTES`]); a capture whose baselines reach back
    /// further is refused.
    pub max_held_bytes: u64,
    /// Attribute every measured packet's bits to entity type, field,
    /// element and kind ([`EvalReport::by_field`]).
    pub by_field: bool,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            captures: Vec::new(),
            dictionaries: None,
            model: BaselineModel::Auto(Rtt::default()),
            held_out: false,
            held_out_fraction: 0.2,
            level: tickpack::DEFAULT_LEVEL,
            max_dict_samples: MAX_FRAME_DICT_SAMPLES,
            max_held_bytes: MAX_HELD_BYTES,
            by_field: false,
        }
    }
}

/// The report: exactly these keys, in this order, kept stable (docs/guide.md,
/// "Trainer"). Means are `null` when there are no packets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// Packets replayed.
    pub packets: u64,
    /// Mean record bytes of the snapshots sent (what a naive sender sends).
    pub raw_bytes_mean: Option<f64>,
    /// Mean tickpack packet bytes, header included.
    pub bytes_mean: Option<f64>,
    /// 95th percentile of packet bytes (nearest rank).
    pub bytes_p95: Option<u64>,
    /// Largest packet.
    pub bytes_max: Option<u64>,
    /// Mean bytes of the same snapshots sent as keyframes (no baseline).
    pub keyframe_bytes_mean: Option<f64>,
    /// Mean time to encode one packet, microseconds.
    pub encode_us_mean: Option<f64>,
    /// Mean time to decode one packet, microseconds.
    pub decode_us_mean: Option<f64>,
    /// Mean bytes of a plain zstd frame (same level) of each raw snapshot.
    pub zstd_frame_bytes_mean: Option<f64>,
    /// The same with a dictionary trained on the training split's raw snapshots.
    pub zstd_frame_dict_bytes_mean: Option<f64>,
    /// Mean time to compress one plain frame (no dictionary), microseconds.
    pub zstd_frame_encode_us_mean: Option<f64>,
    /// Mean time to decompress one plain frame, microseconds.
    pub zstd_frame_decode_us_mean: Option<f64>,
    /// Every tickpack packet (and keyframe) decoded bit-exactly.
    pub roundtrip_ok: bool,
    /// The lossless transforms the set's training applied, one
    /// `entity.field: what` each (`player.viewangles: grid 0.0054931640625`);
    /// empty without a set.
    pub transforms: Vec<String>,
    /// With `--by-field` only: where the packets' bits go.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_field: Option<ByField>,
}

/// What was replayed, for the readable table.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalContext {
    /// Captures replayed.
    pub captures: usize,
    /// Where baselines came from.
    pub baselines: String,
    /// The set used: game, version, set id.
    pub set: Option<(String, String, u32)>,
    /// Packets that were keyframes (no baseline).
    pub keyframes: u64,
    /// Most snapshots held in memory at once (baselines still needed).
    pub peak_held_ticks: usize,
    /// Most bytes of snapshots (ids and records) held at once.
    pub peak_held_bytes: u64,
}

/// Loads the set for `dir` (a set, or a root holding `<game>/<version>/`).
/// In a root, `game` and `version` (a capture's, untrusted) must each be
/// one plain path component, so the set is looked for inside the root.
pub fn load_set(dir: &Path, game: &str, version: &str) -> Result<DictionarySet, TrainerError> {
    if dir.join(MANIFEST_FILE).is_file() {
        return Ok(DictionarySet::load(dir)?);
    }
    for name in [game, version] {
        let mut parts = Path::new(name).components();
        let plain = matches!(
            (parts.next(), parts.next()),
            (Some(Component::Normal(n)), None) if n == name
        );
        if !plain {
            return Err(DictSetError::BadName {
                name: name.to_owned(),
            }
            .into());
        }
    }
    Ok(DictionarySet::load(dir.join(game).join(version))?)
}

enum Codec {
    Plain(Box<Encoder>),
    Set(Box<Encoder>),
}

impl Codec {
    fn encode(&mut self, job: &Job<'_>, out: &mut Vec<u8>) -> Result<(), TrainerError> {
        match self {
            Codec::Plain(e) => encode(e, job, out),
            Codec::Set(e) => encode(e, job, out),
        }
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn mean_of(total: f64, n: usize) -> Option<f64> {
    (n > 0).then(|| round2(total / n as f64))
}

/// Most bytes of snapshots `eval` holds as baselines by default: 64 MiB,
/// about 200 times what the bundled scenarios' captures and the Quake 3
/// imports need (at most 10 snapshots, 325 KB), so that a small hostile
/// capture whose baselines reach far back is refused early;
/// `--max-held-bytes` raises it for long baseline distances.
pub const MAX_HELD_BYTES: u64 = 64 << 20;

/// The largest `--max-held-bytes` accepted: 64 GiB.
pub const MAX_HELD_BYTES_LIMIT: u64 = 1 << 36;

/// Most bytes of raw snapshots the `zstd_frame_dict_bytes_mean` dictionary
/// is trained on: 16 MiB (zstd asks for about 100 times the dictionary size).
pub const MAX_FRAME_DICT_SAMPLES: u64 = 16 << 20;

/// The packets of one capture, with the tick index after which each tick's
/// snapshot is no longer needed. Packets of ticks before `start` are not
/// measured, only replayed for the recalls of the packets after them, as a
/// session sent them.
struct Planned {
    packets: Vec<Packet>,
    start: usize,
    last_use: HashMap<usize, usize>,
}

fn planned(sc: &Scanned, opts: &EvalOptions, baselines: &mut String) -> Planned {
    let (packets, why) = plan(&sc.ticks, sc.header.tick_rate, opts.model);
    describe_all(baselines, &why);
    let start = if opts.held_out {
        held_out_start(sc.ticks.len(), opts.held_out_fraction)
    } else {
        0
    };
    let mut last_use: HashMap<usize, usize> = HashMap::new();
    for p in &packets {
        for i in [Some(p.tick), p.baseline, p.baseline.and(p.prior)]
            .into_iter()
            .flatten()
        {
            let e = last_use.entry(i).or_insert(p.tick);
            *e = (*e).max(p.tick);
        }
    }
    Planned {
        packets,
        start,
        last_use,
    }
}

/// Replays the captures and measures. Each capture is read three times
/// (metadata; packets; dictionary frames); only the snapshots a later
/// packet still needs as a baseline are held, so memory does not grow with
/// a capture's length (see [`EvalContext::peak_held_ticks`]).
pub fn eval(opts: &EvalOptions) -> Result<(EvalReport, EvalContext), TrainerError> {
    let scanned = scan_all(&opts.captures)?;
    let header = &scanned[0].header;
    let set = match &opts.dictionaries {
        None => None,
        Some(dir) => {
            let set = load_set(dir, &header.game, &header.version)?;
            set.fits(&header.schema)?;
            Some(set)
        }
    };
    let (mut codec, mut decoder) = match &set {
        None => (
            Codec::Plain(Box::new(Encoder::with_level(
                header.schema.clone(),
                opts.level,
            ))),
            Decoder::new(header.schema.clone()),
        ),
        Some(s) => (Codec::Set(Box::new(s.encoder(opts.level)?)), s.decoder()?),
    };
    let mut by_field = match (&set, opts.by_field) {
        (_, false) => None,
        (None, true) => Some(ByFieldAcc::new(
            header.schema.clone(),
            Encoder::with_level(header.schema.clone(), opts.level),
        )),
        (Some(s), true) => Some(ByFieldAcc::new(
            header.schema.clone(),
            s.encoder(opts.level)?,
        )),
    };
    let (picks, picked_bytes) =
        frame_dict_picks(&scanned, opts.held_out_fraction, opts.max_dict_samples);

    let mut baselines = String::new();
    let mut sizes: Vec<u64> = Vec::new();
    let (mut raw, mut enc_us, mut dec_us, mut key_bytes) = (0u64, 0f64, 0f64, 0u64);
    let mut keyframes = 0u64;
    let mut ok = true;
    let (mut packet, mut out) = (Vec::new(), Snapshot::default());
    let mut frames = Frames::new(opts.level)?;
    let mut samples = Vec::with_capacity(usize::try_from(picked_bytes).unwrap_or(0));
    let (mut sample_sizes, mut raw_buf) = (Vec::with_capacity(picks.len()), Vec::new());
    let (mut peak_ticks, mut peak_bytes) = (0usize, 0u64);
    let mut plans = Vec::with_capacity(scanned.len());
    for (ci, sc) in scanned.iter().enumerate() {
        let pl = planned(sc, opts, &mut baselines);
        let expiry = Expiry::new(&pl.last_use);
        let mut held: HashMap<usize, Snapshot> = HashMap::new();
        let mut chain = RecallChain::with_histories(&sc.header.schema);
        let mut held_bytes = 0u64;
        let mut next = 0usize;
        sc.stream(|i, snap| {
            if picks.contains(&(ci, i)) {
                raw_snapshot(snap, &mut raw_buf);
                samples.extend_from_slice(&raw_buf);
                sample_sizes.push(raw_buf.len());
            }
            if pl.last_use.contains_key(&i) {
                held.insert(i, snap.clone());
                held_bytes += snapshot_bytes(snap);
                peak_ticks = peak_ticks.max(held.len());
                peak_bytes = peak_bytes.max(held_bytes);
                if held_bytes > opts.max_held_bytes {
                    return Err(TrainerError::TooMuchHeld {
                        file: sc.path.display().to_string(),
                        tick: sc.ticks.get(i).map_or(0, |t| t.tick),
                        snapshots: held.len(),
                        bytes: held_bytes,
                        limit: opts.max_held_bytes,
                    });
                }
            }
            while let Some(&p) = pl.packets.get(next).filter(|p| p.tick <= i) {
                next += 1;
                let recall = chain.of(&p).cloned();
                let history = chain.history_of(&p).cloned();
                let j = Job::new(&sc.ticks, &held, p)?
                    .with_recall(recall.as_ref())
                    .with_history(history.as_ref());
                if p.tick < pl.start {
                    chain.sent(&p, j.sequence, j.baseline, j.snapshot);
                    continue;
                }
                raw += j.snapshot.raw_len() as u64;
                keyframes += u64::from(j.baseline.is_none());
                let t = Instant::now();
                codec.encode(&j, &mut packet)?;
                enc_us += t.elapsed().as_secs_f64() * 1e6;
                sizes.push(packet.len() as u64);
                if let Some(acc) = by_field.as_mut() {
                    acc.packet(&j, &packet)?;
                }
                let t = Instant::now();
                let r = decoder.decode_into(&packet, j.reference(), &mut out);
                dec_us += t.elapsed().as_secs_f64() * 1e6;
                ok &= r.is_ok() && out == *j.snapshot;
                chain.sent(&p, j.sequence, j.baseline, j.snapshot);
                codec.encode(&j.keyframe(), &mut packet)?;
                key_bytes += packet.len() as u64;
                ok &= decoder.decode_into(&packet, None, &mut out).is_ok() && out == *j.snapshot;
                frames.plain(j.snapshot)?;
            }
            for &k in expiry.after(i) {
                if let Some(s) = held.remove(&k) {
                    held_bytes -= snapshot_bytes(&s);
                }
                chain.forget(k);
            }
            Ok(())
        })?;
        plans.push(pl);
    }
    let dict_bytes = frames.with_dictionary(&scanned, &plans, &samples, &sample_sizes)?;
    let n = sizes.len();
    let mut sorted = sizes;
    sorted.sort_unstable();
    let p95 = (n > 0).then(|| sorted[(n * 95).div_ceil(100).max(1) - 1]);
    let report = EvalReport {
        packets: n as u64,
        raw_bytes_mean: mean_of(raw as f64, n),
        bytes_mean: mean_of(sorted.iter().sum::<u64>() as f64, n),
        bytes_p95: p95,
        bytes_max: sorted.last().copied(),
        keyframe_bytes_mean: mean_of(key_bytes as f64, n),
        encode_us_mean: mean_of(enc_us, n),
        decode_us_mean: mean_of(dec_us, n),
        zstd_frame_bytes_mean: mean_of(frames.bytes, n),
        zstd_frame_dict_bytes_mean: dict_bytes.and_then(|b| mean_of(b, n)),
        zstd_frame_encode_us_mean: mean_of(frames.encode_us, n),
        zstd_frame_decode_us_mean: mean_of(frames.decode_us, n),
        roundtrip_ok: ok,
        transforms: set.as_ref().map_or_else(Vec::new, applied),
        by_field: by_field.as_ref().map(ByFieldAcc::finish),
    };
    let ctx = EvalContext {
        captures: scanned.len(),
        baselines,
        set: set.map(|s| (s.game().to_owned(), s.version().to_owned(), s.id())),
        keyframes,
        peak_held_ticks: peak_ticks,
        peak_held_bytes: peak_bytes,
    };
    Ok((report, ctx))
}

/// The transforms `set`'s manifest lists, as [`EvalReport::transforms`]
/// prints them.
pub fn applied(set: &DictionarySet) -> Vec<String> {
    set.manifest()
        .transforms
        .iter()
        .map(|t| format!("{}.{}: {}", t.entity, t.field, t.describe()))
        .collect()
}

fn zstd_err(e: std::io::Error) -> TrainerError {
    TrainerError::Zstd(e.to_string())
}

/// The ticks whose raw snapshots train the plain frames' dictionary, and
/// their total size: the training split of every capture, at most 1000
/// evenly spaced, and fewer if they would exceed `max_bytes`.
fn frame_dict_picks(
    scanned: &[Scanned],
    fraction: f64,
    max_bytes: u64,
) -> (HashSet<(usize, usize)>, u64) {
    let mut all: Vec<(usize, usize, u64)> = Vec::new();
    for (ci, sc) in scanned.iter().enumerate() {
        let n = held_out_start(sc.ticks.len(), fraction);
        let sections = 4 * sc.header.schema.sections().len() as u64;
        all.extend(
            sc.ticks[..n]
                .iter()
                .enumerate()
                .map(|(i, t)| (ci, i, t.bytes + sections)),
        );
    }
    let mut k = all.len().min(1000);
    loop {
        let picks: Vec<&(usize, usize, u64)> = if all.len() > k {
            (0..k).map(|i| &all[i * all.len() / k]).collect()
        } else {
            all.iter().collect()
        };
        let total: u64 = picks.iter().map(|p| p.2).sum();
        if total <= max_bytes || k <= 8 {
            return (picks.into_iter().map(|p| (p.0, p.1)).collect(), total);
        }
        k = k * 3 / 4;
    }
}

/// Plain zstd frames of each packet's raw snapshot, timed.
struct Frames {
    level: i32,
    c: zstd::bulk::Compressor<'static>,
    d: zstd::bulk::Decompressor<'static>,
    raw: Vec<u8>,
    frame: Vec<u8>,
    back: Vec<u8>,
    bytes: f64,
    encode_us: f64,
    decode_us: f64,
}

impl Frames {
    fn new(level: i32) -> Result<Self, TrainerError> {
        Ok(Self {
            level,
            c: zstd::bulk::Compressor::new(level).map_err(zstd_err)?,
            d: zstd::bulk::Decompressor::new().map_err(zstd_err)?,
            raw: Vec::new(),
            frame: Vec::new(),
            back: Vec::new(),
            bytes: 0.0,
            encode_us: 0.0,
            decode_us: 0.0,
        })
    }

    /// Compresses and decompresses one snapshot as a plain frame.
    fn plain(&mut self, snap: &Snapshot) -> Result<(), TrainerError> {
        raw_snapshot(snap, &mut self.raw);
        self.frame.clear();
        self.frame
            .reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
        let s = Instant::now();
        self.c
            .compress_to_buffer(&self.raw[..], &mut self.frame)
            .map_err(zstd_err)?;
        self.encode_us += s.elapsed().as_secs_f64() * 1e6;
        self.bytes += self.frame.len() as f64;
        self.back.clear();
        self.back.reserve(self.raw.len());
        let s = Instant::now();
        self.d
            .decompress_to_buffer(&self.frame[..], &mut self.back)
            .map_err(zstd_err)?;
        self.decode_us += s.elapsed().as_secs_f64() * 1e6;
        if self.back != self.raw {
            return Err(TrainerError::Zstd("plain frame did not round-trip".into()));
        }
        Ok(())
    }

    /// Total frame bytes of every packet's snapshot with a dictionary
    /// trained on `samples`, reading the captures once more; `None` when
    /// there are too few samples or zstd cannot train.
    fn with_dictionary(
        &mut self,
        scanned: &[Scanned],
        plans: &[Planned],
        samples: &[u8],
        sizes: &[usize],
    ) -> Result<Option<f64>, TrainerError> {
        if sizes.len() < 8 {
            return Ok(None);
        }
        let Ok(dict) = zstd::dict::from_continuous(samples, sizes, ZSTD_FRAME_DICT_SIZE) else {
            return Ok(None);
        };
        let prepared = zstd::dict::EncoderDictionary::copy(&dict, self.level);
        let mut c =
            zstd::bulk::Compressor::with_prepared_dictionary(&prepared).map_err(zstd_err)?;
        let mut total = 0.0;
        for (sc, pl) in scanned.iter().zip(plans) {
            let mut next = 0usize;
            sc.stream(|i, snap| {
                while let Some(p) = pl.packets.get(next).filter(|p| p.tick <= i) {
                    next += 1;
                    if p.tick < pl.start {
                        continue;
                    }
                    raw_snapshot(snap, &mut self.raw);
                    self.frame.clear();
                    self.frame
                        .reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
                    c.compress_to_buffer(&self.raw[..], &mut self.frame)
                        .map_err(zstd_err)?;
                    total += self.frame.len() as f64;
                }
                Ok(())
            })?;
        }
        Ok(Some(total))
    }
}

/// The readable table printed without `--json`.
pub fn table(report: &EvalReport, ctx: &EvalContext) -> String {
    let set = match &ctx.set {
        Some((g, v, id)) => format!("set {g} {v} ({id:#010x})"),
        None => "no dictionary set".into(),
    };
    let mut s = format!(
        "{} capture(s), {} packets ({} keyframes), {}; {}\n\n",
        ctx.captures, report.packets, ctx.keyframes, ctx.baselines, set
    );
    let f = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.2}"));
    let u = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| v.to_string());
    let rows = vec![
        vec![
            "".into(),
            "tickpack".into(),
            "zstd frame".into(),
            "zstd frame + dict".into(),
        ],
        vec![
            "bytes mean".into(),
            f(report.bytes_mean),
            f(report.zstd_frame_bytes_mean),
            f(report.zstd_frame_dict_bytes_mean),
        ],
        vec![
            "bytes p95".into(),
            u(report.bytes_p95),
            "".into(),
            "".into(),
        ],
        vec![
            "bytes max".into(),
            u(report.bytes_max),
            "".into(),
            "".into(),
        ],
        vec![
            "keyframe bytes mean".into(),
            f(report.keyframe_bytes_mean),
            "".into(),
            "".into(),
        ],
        vec![
            "encode us mean".into(),
            f(report.encode_us_mean),
            f(report.zstd_frame_encode_us_mean),
            "".into(),
        ],
        vec![
            "decode us mean".into(),
            f(report.decode_us_mean),
            f(report.zstd_frame_decode_us_mean),
            "".into(),
        ],
    ];
    s += &crate::table::render(&rows);
    s += &format!(
        "\nraw record bytes mean {}; round trip {}\n",
        f(report.raw_bytes_mean),
        if report.roundtrip_ok { "ok" } else { "FAILED" }
    );
    if !report.transforms.is_empty() {
        s += &format!(
            "transforms applied by training: {}\n",
            report.transforms.join("; ")
        );
    }
    s += &format!(
        "baselines held at once: at most {} snapshots, {} bytes (--max-held-bytes)\n",
        ctx.peak_held_ticks, ctx.peak_held_bytes
    );
    if let Some(b) = &report.by_field {
        s += "\n";
        s += &crate::byfield::table(b);
    }
    s
}
