//! `eval`: replays captures through the codec and reports sizes and times,
//! next to plain zstd frames, as one JSON object with stable keys.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use tickpack::dictset::{DictKind, DictionarySet, SetEncoder, MANIFEST_FILE};
use tickpack::{Decoder, Encoder, Snapshot};

use crate::captures::{held_out_start, load_all, Loaded};
use crate::measure::{encode, raw_snapshot, Job};
use crate::replay::{plan, BaselineModel, Rtt};
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
    /// Replay only the held-out ticks (the latest 20% of each capture, as
    /// `train` splits them).
    pub held_out: bool,
    /// Fraction held out (as given to `train`).
    pub held_out_fraction: f64,
    /// zstd level, for tickpack and the plain frames alike.
    pub level: i32,
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
        }
    }
}

/// The report: exactly these keys, in this order, kept stable (README,
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
}

/// Loads the set for `dir` (a set, or a root holding `<game>/<version>/`).
pub fn load_set(dir: &Path, game: &str, version: &str) -> Result<DictionarySet, TrainerError> {
    if dir.join(MANIFEST_FILE).is_file() {
        Ok(DictionarySet::load(dir)?)
    } else {
        Ok(DictionarySet::load(dir.join(game).join(version))?)
    }
}

enum Codec {
    Plain(Box<Encoder>),
    Set(Box<SetEncoder>),
}

impl Codec {
    fn encode(&mut self, job: &Job<'_>, out: &mut Vec<u8>) -> Result<(), TrainerError> {
        match self {
            Codec::Plain(e) => encode(e, job, out),
            Codec::Set(e) => encode(
                e.encoder_mut(DictKind::of(job.baseline.is_some())),
                job,
                out,
            ),
        }
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn mean_of(total: f64, n: usize) -> Option<f64> {
    (n > 0).then(|| round2(total / n as f64))
}

/// Replays the captures and measures.
pub fn eval(opts: &EvalOptions) -> Result<(EvalReport, EvalContext), TrainerError> {
    let loaded = load_all(&opts.captures)?;
    let header = &loaded[0].capture.header;
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

    let mut jobs: Vec<Job<'_>> = Vec::new();
    let mut baselines = String::new();
    for l in &loaded {
        let (packets, why) = plan(&l.capture, opts.model);
        baselines = why;
        let start = if opts.held_out {
            held_out_start(l.capture.ticks.len(), opts.held_out_fraction)
        } else {
            0
        };
        jobs.extend(
            packets
                .into_iter()
                .filter(|p| p.tick >= start)
                .map(|p| Job::new(&l.capture, p)),
        );
    }

    let mut sizes = Vec::with_capacity(jobs.len());
    let (mut raw, mut enc_us, mut dec_us, mut key_bytes) = (0u64, 0f64, 0f64, 0u64);
    let mut keyframes = 0u64;
    let mut ok = true;
    let (mut packet, mut out) = (Vec::new(), Snapshot::default());
    for j in &jobs {
        raw += j.snapshot.raw_len() as u64;
        keyframes += u64::from(j.baseline.is_none());
        let t = Instant::now();
        codec.encode(j, &mut packet)?;
        enc_us += t.elapsed().as_secs_f64() * 1e6;
        sizes.push(packet.len() as u64);
        let t = Instant::now();
        let r = decoder.decode_into(
            &packet,
            tickpack::Reference {
                baseline: j.codec_baseline(),
                prior: j.codec_prior(),
            },
            &mut out,
        );
        dec_us += t.elapsed().as_secs_f64() * 1e6;
        ok &= r.is_ok() && out == *j.snapshot;
        codec.encode(&j.keyframe(), &mut packet)?;
        key_bytes += packet.len() as u64;
        ok &= decoder.decode_into(&packet, None, &mut out).is_ok() && out == *j.snapshot;
    }
    let zstd = zstd_frames(&loaded, &jobs, opts)?;
    let n = jobs.len();
    let mut sorted = sizes.clone();
    sorted.sort_unstable();
    let p95 = (n > 0).then(|| sorted[(n * 95).div_ceil(100).max(1) - 1]);
    let report = EvalReport {
        packets: n as u64,
        raw_bytes_mean: mean_of(raw as f64, n),
        bytes_mean: mean_of(sizes.iter().sum::<u64>() as f64, n),
        bytes_p95: p95,
        bytes_max: sorted.last().copied(),
        keyframe_bytes_mean: mean_of(key_bytes as f64, n),
        encode_us_mean: mean_of(enc_us, n),
        decode_us_mean: mean_of(dec_us, n),
        zstd_frame_bytes_mean: mean_of(zstd.bytes, n),
        zstd_frame_dict_bytes_mean: zstd.dict_bytes.and_then(|b| mean_of(b, n)),
        zstd_frame_encode_us_mean: mean_of(zstd.encode_us, n),
        zstd_frame_decode_us_mean: mean_of(zstd.decode_us, n),
        roundtrip_ok: ok,
    };
    let ctx = EvalContext {
        captures: loaded.len(),
        baselines,
        set: set.map(|s| (s.game().to_owned(), s.version().to_owned(), s.id())),
        keyframes,
    };
    Ok((report, ctx))
}

struct ZstdTotals {
    bytes: f64,
    dict_bytes: Option<f64>,
    encode_us: f64,
    decode_us: f64,
}

fn zstd_err(e: std::io::Error) -> TrainerError {
    TrainerError::Zstd(e.to_string())
}

/// Plain zstd frames of each packet's raw snapshot, timed; and the same with
/// a dictionary trained on the raw snapshots of the training split.
fn zstd_frames(
    loaded: &[Loaded],
    jobs: &[Job<'_>],
    opts: &EvalOptions,
) -> Result<ZstdTotals, TrainerError> {
    let mut c = zstd::bulk::Compressor::new(opts.level).map_err(zstd_err)?;
    let mut d = zstd::bulk::Decompressor::new().map_err(zstd_err)?;
    let (mut raw, mut frame, mut back) = (Vec::new(), Vec::new(), Vec::new());
    let mut t = ZstdTotals {
        bytes: 0.0,
        dict_bytes: None,
        encode_us: 0.0,
        decode_us: 0.0,
    };
    for j in jobs {
        raw_snapshot(j.snapshot, &mut raw);
        frame.clear();
        frame.reserve(zstd::zstd_safe::compress_bound(raw.len()));
        let s = Instant::now();
        c.compress_to_buffer(&raw[..], &mut frame)
            .map_err(zstd_err)?;
        t.encode_us += s.elapsed().as_secs_f64() * 1e6;
        t.bytes += frame.len() as f64;
        back.clear();
        back.reserve(raw.len());
        let s = Instant::now();
        d.decompress_to_buffer(&frame[..], &mut back)
            .map_err(zstd_err)?;
        t.decode_us += s.elapsed().as_secs_f64() * 1e6;
        if back != raw {
            return Err(TrainerError::Zstd("plain frame did not round-trip".into()));
        }
    }

    // The training split's raw snapshots, at most 1000 evenly spaced.
    let mut picks: Vec<&Snapshot> = Vec::new();
    for l in loaded {
        let n = held_out_start(l.capture.ticks.len(), opts.held_out_fraction);
        picks.extend(l.capture.ticks[..n].iter().map(|t| &t.snapshot));
    }
    if picks.len() > 1000 {
        picks = (0..1000).map(|i| picks[i * picks.len() / 1000]).collect();
    }
    let (mut data, mut sizes) = (Vec::new(), Vec::new());
    for s in picks {
        raw_snapshot(s, &mut raw);
        data.extend_from_slice(&raw);
        sizes.push(raw.len());
    }
    if sizes.len() >= 8 {
        if let Ok(dict) = zstd::dict::from_continuous(&data, &sizes, ZSTD_FRAME_DICT_SIZE) {
            let prepared = zstd::dict::EncoderDictionary::copy(&dict, opts.level);
            let mut c =
                zstd::bulk::Compressor::with_prepared_dictionary(&prepared).map_err(zstd_err)?;
            let mut total = 0.0;
            for j in jobs {
                raw_snapshot(j.snapshot, &mut raw);
                frame.clear();
                frame.reserve(zstd::zstd_safe::compress_bound(raw.len()));
                c.compress_to_buffer(&raw[..], &mut frame)
                    .map_err(zstd_err)?;
                total += frame.len() as f64;
            }
            t.dict_bytes = Some(total);
        }
    }
    Ok(t)
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
    s
}
