//! `train`: per-field operators and per-kind dictionaries from captures.
//!
//! 1. Every capture's ticks are split: the latest 20% are held out (not a
//!    random sample: a dictionary must work on the ticks that come next).
//! 2. Packets are planned as `eval` plans them (recorded sends, else an RTT
//!    model), plus a keyframe every `keyframe_every` ticks, from a first
//!    reading of the captures that keeps no snapshot. Long captures are
//!    sampled evenly (at most [`MAX_JOBS`] packets of each kind, and no more
//!    than [`TrainOptions::sample_bytes`] of snapshots); a second reading
//!    loads only the snapshots those packets need, refused if they pass
//!    [`TrainOptions::max_held_bytes`] (the memory cap never changes what
//!    is sampled, so it never changes a set).
//! 3. Lossless transforms ([`crate::transforms`]): the grids and
//!    integrations `suggest` would find in the training packets, each kept
//!    when it makes the held-out delta bytes (no dictionary) smaller; the
//!    set's schema declares them, so captures with the plain schema get
//!    them. Then, per field, the delta operator that minimises the same
//!    bytes is chosen by coordinate descent, the other fields fixed.
//! 4. With those operators, the real encoder builds its uncompressed
//!    payloads ([`tickpack::Encoder::payload`]) for the training packets, cut
//!    into blocks as the codec cuts them: the samples. For keyframes and for
//!    deltas, zstd's fastCover trainer makes a dictionary of each size tried;
//!    the one giving the fewest held-out bytes is kept, or none if none helps.
//!    A set always has a keyframe dictionary, though: when none helps, the
//!    one costing least, or a [`MARKER_DICT_LEN`]-byte one that changes
//!    almost nothing. Keyframes name their dictionary only when they use
//!    one, and two versions of one schema can be held side by side
//!    (`DictionarySets`) only when both sets' keyframes name theirs.
//! 5. The set (schema with the chosen operators, dictionaries, manifest) is
//!    written to a new directory beside `--out`, loaded back and verified,
//!    then swapped in for the set there, if any ([`crate::output`]).
//!
//! Over 600 lines on purpose: one command, its steps in the order they run.

#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use tickpack::model::ContextConfig;
use tickpack::{DeltaOp, Dictionary, Encoder, Schema, Snapshot};
use tickpack_sets::dictset::{
    dictionary_id, Candidate, CaptureSource, DictKind, DictionarySet, FieldChoice, Manifest,
    Measured, Training,
};

use crate::captures::{held_out_start, op_name, ops_of, scan_all, with_ops, Scanned};
use crate::measure::{block_samples, mean, total_bytes, Job};
use crate::output::{check_set_output, save_set};
use crate::recalls::{recalls_for, SentState};
use crate::replay::{describe_all, plan, BaselineModel, Packet, Rtt};
use crate::TrainerError;

/// Dictionary sizes tried by default: 512 B to 16 KiB.
pub const DEFAULT_SIZES: [usize; 6] = [512, 1024, 2048, 4096, 8192, 16384];

/// The operators tried on every field. `predict` codes a changed value
/// against its extrapolation from the packet's baseline and prior, scaled
/// by their distances (FORMAT.md 4.6; the prior comes from the recorded
/// sends or the baseline model).
pub const OPS: [DeltaOp; 5] = [
    DeltaOp::Int,
    DeltaOp::Sub,
    DeltaOp::Xor,
    DeltaOp::None,
    DeltaOp::Predict,
];

/// What `train` does.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Captures to train on (same schema layout).
    pub captures: Vec<PathBuf>,
    /// The set's directory (`dictionaries/<game>/<version>`).
    pub out: PathBuf,
    /// Replace a set already at `out` (as a whole); without it an existing
    /// set is refused.
    pub force: bool,
    /// Game name (default: the first capture's).
    pub game: Option<String>,
    /// Game version (default: the first capture's).
    pub version: Option<String>,
    /// zstd level the packets are measured at.
    pub level: i32,
    /// Dictionary sizes tried.
    pub sizes: Vec<usize>,
    /// Fraction of each capture's ticks held out (the latest).
    pub held_out: f64,
    /// How packets pick baselines.
    pub model: BaselineModel,
    /// A keyframe sample every this many ticks.
    pub keyframe_every: usize,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
    /// Bytes of snapshots (ids and records) the sampled packets may need:
    /// when the packets planned need more, fewer are sampled, evenly. It
    /// decides the set.
    pub sample_bytes: u64,
    /// Most bytes of snapshots held in memory: a sample that needs more is
    /// refused ([`TrainerError::SampleTooLarge`]), never thinned.
    pub max_held_bytes: u64,
    /// Apply the lossless transforms found in the captures (step 3).
    pub transforms: bool,
    /// Train the model table for these context flags only (`None`: every
    /// combination, the smallest held-out packets win).
    pub model_flags: Option<u16>,
    /// What the per-field operators are chosen by (step 3).
    pub operators_by: OperatorObjective,
}

/// What `train` chooses each field's operator by (`--operators-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OperatorObjective {
    /// Held-out packets' bytes coded with zstd blocks and no dictionary.
    #[default]
    Blocks,
    /// Held-out model bits under a table trained for each candidate (the
    /// context flags of `--model-flags`, else all of them): what a set with
    /// a table codes. Several times slower to train; a schema too large for
    /// a table falls back to blocks.
    Model,
}

impl OperatorObjective {
    /// The name the command line and the manifest use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Blocks => "blocks",
            Self::Model => "model",
        }
    }
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            captures: Vec::new(),
            out: PathBuf::new(),
            force: false,
            game: None,
            version: None,
            level: tickpack::DEFAULT_LEVEL,
            sizes: DEFAULT_SIZES.to_vec(),
            held_out: 0.2,
            model: BaselineModel::Auto(Rtt::default()),
            keyframe_every: 10,
            progress: true,
            sample_bytes: SAMPLE_BYTES,
            max_held_bytes: MAX_HELD_BYTES,
            transforms: true,
            model_flags: None,
            operators_by: OperatorObjective::Blocks,
        }
    }
}

/// The result of `train`: `--json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct TrainReport {
    /// Where the set was written.
    pub out: String,
    /// Wall time, seconds.
    pub seconds: f64,
    /// The manifest written.
    pub manifest: Manifest,
    /// The context-model table trained for the delta dictionary.
    pub model: Option<crate::model::ModelReport>,
    /// Transforms found that the schema refused beside the ones kept (an
    /// integration that closes a cycle of integrations), so not applied.
    pub transforms_not_applied: Vec<String>,
    /// Snapshots held in memory for training (the sampled packets' ticks,
    /// baselines and priors).
    #[serde(skip)]
    pub snapshots_held: usize,
}

/// Most packets of each kind (training or held-out, delta or keyframe)
/// `train` works on; longer captures are sampled evenly. Large enough that
/// the shipped sets (three captures of 3,600 ticks) use every packet.
pub const MAX_JOBS: usize = 20_000;

/// Default [`TrainOptions::sample_bytes`]: 1 GiB, so that the shipped
/// cube-pile set (10,800 ticks of 29 KB) is trained on every tick.
pub const SAMPLE_BYTES: u64 = 1 << 30;

/// Default [`TrainOptions::max_held_bytes`]: 512 MiB, room for the shipped
/// sets' samples (the cube pile's needs about 311 MB).
pub const MAX_HELD_BYTES: u64 = 512 << 20;

struct Split<'a> {
    train_delta: Vec<Job<'a>>,
    train_key: Vec<Job<'a>>,
    held_delta: Vec<Job<'a>>,
    held_key: Vec<Job<'a>>,
}

/// The packets of every kind, as (capture, packet), before any snapshot is read.
#[derive(Default)]
struct Plan {
    train_delta: Vec<(usize, Packet)>,
    train_key: Vec<(usize, Packet)>,
    held_delta: Vec<(usize, Packet)>,
    held_key: Vec<(usize, Packet)>,
    why: String,
    train_ticks: u64,
    held_ticks: u64,
}

fn plan_all(scanned: &[Scanned], opts: &TrainOptions) -> Plan {
    let mut s = Plan::default();
    for (ci, sc) in scanned.iter().enumerate() {
        let n = sc.ticks.len();
        let start = held_out_start(n, opts.held_out);
        s.train_ticks += start as u64;
        s.held_ticks += (n - start) as u64;
        let (packets, w) = plan(&sc.ticks, sc.header.tick_rate, opts.model);
        describe_all(&mut s.why, &w);
        let mut keys: Vec<usize> = packets
            .iter()
            .filter(|p| p.baseline.is_none())
            .map(|p| p.tick)
            .collect();
        keys.extend((0..n).step_by(opts.keyframe_every.max(1)));
        keys.sort_unstable();
        keys.dedup();
        for p in packets.iter().filter(|p| p.baseline.is_some()) {
            if p.tick >= start {
                s.held_delta.push((ci, *p));
            } else {
                s.train_delta.push((ci, *p));
            }
        }
        for k in keys {
            if k >= start {
                s.held_key.push((ci, Packet::keyframe(k)));
            } else {
                s.train_key.push((ci, Packet::keyframe(k)));
            }
        }
    }
    s
}

/// The ticks (capture, index) the packets need: sent snapshots, baselines, priors.
fn needed<'p>(lists: impl IntoIterator<Item = &'p [(usize, Packet)]>) -> HashSet<(usize, usize)> {
    let mut out = HashSet::new();
    for list in lists {
        for (ci, p) in list {
            for i in [Some(p.tick), p.baseline, p.baseline.and(p.prior)]
                .into_iter()
                .flatten()
            {
                out.insert((*ci, i));
            }
        }
    }
    out
}

/// Samples every list down to at most `cap` packets, with `cap` lowered
/// until the snapshots they need fit `max_bytes`.
fn sample(plan: &mut Plan, scanned: &[Scanned], max_bytes: u64) -> HashSet<(usize, usize)> {
    let mut cap = MAX_JOBS;
    loop {
        let lists = [
            thin(&plan.train_delta, cap),
            thin(&plan.train_key, cap),
            thin(&plan.held_delta, cap),
            thin(&plan.held_key, cap),
        ];
        let need = needed(lists.iter().map(Vec::as_slice));
        if need_bytes(&need, scanned) <= max_bytes || cap <= 8 {
            let [a, b, c, d] = lists;
            plan.train_delta = a;
            plan.train_key = b;
            plan.held_delta = c;
            plan.held_key = d;
            return need;
        }
        cap = cap * 3 / 4;
    }
}

/// Bytes of the snapshots `need` names.
fn need_bytes(need: &HashSet<(usize, usize)>, scanned: &[Scanned]) -> u64 {
    need.iter()
        .filter_map(|&(ci, i)| scanned.get(ci)?.ticks.get(i))
        .map(|t| t.bytes)
        .sum()
}

fn jobs<'a>(
    list: &[(usize, Packet)],
    scanned: &[Scanned],
    held: &'a [HashMap<usize, Snapshot>],
    recalls: &'a [SentState],
) -> Result<Vec<Job<'a>>, TrainerError> {
    list.iter()
        .map(|&(ci, p)| match (scanned.get(ci), held.get(ci)) {
            (Some(sc), Some(h)) => {
                let sent = p.baseline.and_then(|b| recalls.get(ci)?.get(&b));
                let recall = sent.map(|s| &s.0);
                let history = sent.and_then(|s| s.1.as_ref());
                Ok(Job::new(&sc.ticks, h, p)?
                    .with_recall(recall)
                    .with_history(history))
            }
            _ => Err(TrainerError::Empty(format!("capture {ci} was not loaded"))),
        })
        .collect()
}

/// Per capture, the recall of every baseline tick the listed packets use,
/// along the capture's whole chain of sends.
fn chain_recalls(
    scanned: &[Scanned],
    opts: &TrainOptions,
    lists: &[&[(usize, Packet)]],
) -> Result<Vec<SentState>, TrainerError> {
    scanned
        .iter()
        .enumerate()
        .map(|(ci, sc)| {
            let wanted: HashSet<usize> = lists
                .iter()
                .flat_map(|l| l.iter())
                .filter(|(c, _)| *c == ci)
                .filter_map(|(_, p)| p.baseline)
                .collect();
            if wanted.is_empty() {
                return Ok(HashMap::new());
            }
            let (packets, _) = plan(&sc.ticks, sc.header.tick_rate, opts.model);
            recalls_for(sc, &packets, &wanted, opts.max_held_bytes)
        })
        .collect()
}

/// Evenly spaced subset of at most `max` items.
fn thin<T: Copy>(jobs: &[T], max: usize) -> Vec<T> {
    if jobs.len() <= max {
        return jobs.to_vec();
    }
    (0..max).map(|i| jobs[i * jobs.len() / max]).collect()
}

fn bar(opts: &TrainOptions, len: u64) -> ProgressBar {
    if !opts.progress {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}") {
        pb.set_style(style);
    }
    pb
}

/// Trains a set and writes it to `opts.out`, replacing a set there as a
/// whole. Captures are read in bounded memory: once for their metadata, once
/// for the snapshots of the packets used (at most [`MAX_JOBS`] of each kind,
/// [`TrainOptions::sample_bytes`] in all, refused over
/// [`TrainOptions::max_held_bytes`]).
pub fn train(opts: &TrainOptions) -> Result<(DictionarySet, TrainReport), TrainerError> {
    let started = Instant::now();
    let inputs: Vec<&std::path::Path> = opts.captures.iter().map(PathBuf::as_path).collect();
    check_set_output(&inputs, &opts.out, opts.force)?;
    let scanned = scan_all(&opts.captures)?;
    let first = &scanned[0].header;
    let game = opts.game.clone().unwrap_or_else(|| first.game.clone());
    let version = opts
        .version
        .clone()
        .unwrap_or_else(|| first.version.clone());
    let base = first.schema.clone();
    let mut planned = plan_all(&scanned, opts);
    let need = sample(&mut planned, &scanned, opts.sample_bytes);
    let bytes = need_bytes(&need, &scanned);
    if bytes > opts.max_held_bytes {
        return Err(TrainerError::SampleTooLarge {
            bytes,
            limit: opts.max_held_bytes,
        });
    }
    // Every packet is coded with its baseline's recall, as a session does.
    // Replaying the sends for them holds at most `max_held_bytes` of
    // snapshots, and is done before the sampled snapshots are loaded.
    let recalls = chain_recalls(&scanned, opts, &[&planned.train_delta, &planned.held_delta])?;
    let held: Vec<HashMap<usize, Snapshot>> = scanned
        .iter()
        .enumerate()
        .map(|(ci, sc)| sc.load(|i| need.contains(&(ci, i))))
        .collect::<Result<_, _>>()?;
    let snapshots_held = held.iter().map(HashMap::len).sum();
    let jobs = Split {
        train_delta: jobs(&planned.train_delta, &scanned, &held, &recalls)?,
        train_key: jobs(&planned.train_key, &scanned, &held, &recalls)?,
        held_delta: jobs(&planned.held_delta, &scanned, &held, &recalls)?,
        held_key: jobs(&planned.held_key, &scanned, &held, &recalls)?,
    };
    let (why, train_ticks, held_ticks) =
        (planned.why.clone(), planned.train_ticks, planned.held_ticks);
    if jobs.held_delta.is_empty() && jobs.held_key.is_empty() {
        return Err(TrainerError::Empty(
            "no held-out packets: give captures with more ticks".into(),
        ));
    }

    // Step 3: operators, by coordinate descent on held-out delta bytes.
    let field_count: usize = base.sections().iter().map(|t| t.fields().len()).sum();
    let passes = 2;
    let pb = bar(
        opts,
        (field_count * (OPS.len() - 1) * passes + opts.sizes.len() * 2) as u64,
    );
    let objective = if jobs.held_delta.is_empty() {
        thin(&jobs.held_key, 200)
    } else {
        thin(&jobs.held_delta, 1000)
    };
    let schema_cost = |schema: &Schema| -> Result<u64, TrainerError> {
        total_bytes(
            &mut Encoder::with_level(schema.clone(), opts.level),
            &objective,
        )
    };
    // The model objective in bytes (its bits / 8) over the same held-out
    // packets, the table trained on at most 1,500 training packets.
    let model_train = thin(&jobs.train_delta, 1500);
    let flags = opts.model_flags.unwrap_or(ContextConfig::KNOWN_FLAGS);
    let model_cost = |schema: &Schema| -> Result<Option<u64>, TrainerError> {
        Ok(
            crate::model::held_out_model_bits(schema, flags, &model_train, &objective)?
                .map(|bits| bits.div_ceil(8)),
        )
    };
    let (transformed, transforms, not_applied) = if opts.transforms {
        pb.set_message("lossless transforms");
        let found = crate::transforms::find(&base, &thin(&jobs.train_delta, TRANSFORM_JOBS));
        // The blocks' bytes, then the model's (see `choose`).
        let transform_cost = |schema: &Schema| -> Result<(u64, Option<u64>), TrainerError> {
            Ok((schema_cost(schema)?, model_cost(schema)?))
        };
        let chosen = crate::transforms::choose(&base, &found.candidates, transform_cost)?;
        let not_applied = chosen
            .refused
            .iter()
            .map(|(t, why)| {
                let ty = &base.sections()[t.section];
                let what = match &t.kind {
                    crate::transforms::Kind::Grid(step) => format!("grid {step}"),
                    crate::transforms::Kind::Integrate(d) => {
                        format!("integrate {} over {} x {}", d.velocity, d.time, d.scale)
                    }
                    crate::transforms::Kind::Unit => "unit vector".to_owned(),
                };
                format!("{}.{}: {what}: {why}", ty.name(), ty.fields()[t.field].name)
            })
            .collect();
        let (kept, choices) = (chosen.kept, chosen.choices);
        (
            crate::transforms::apply(&base, &kept)?,
            choices,
            not_applied,
        )
    } else {
        (base.clone(), Vec::new(), Vec::new())
    };
    let cost = |ops: &[Vec<DeltaOp>]| -> Result<u64, TrainerError> {
        let s = with_ops(&transformed, ops)?;
        if opts.operators_by == OperatorObjective::Model {
            if let Some(bytes) = model_cost(&s)? {
                return Ok(bytes);
            }
        }
        schema_cost(&s)
    };
    let mut ops = ops_of(&transformed);
    let mut best = cost(&ops)?;
    let mut tried: Vec<Vec<std::collections::BTreeMap<String, u64>>> = ops
        .iter()
        .map(|s| vec![Default::default(); s.len()])
        .collect();
    for pass in 0..passes {
        let mut changed = false;
        for s in 0..ops.len() {
            for f in 0..ops[s].len() {
                let name = &base.sections()[s].fields()[f].name;
                pb.set_message(format!("operators, pass {}: {name}", pass + 1));
                let current = ops[s][f];
                tried[s][f].insert(op_name(current), best);
                for &op in OPS.iter().filter(|&&o| o != current) {
                    let mut cand = ops.clone();
                    cand[s][f] = op;
                    let c = cost(&cand)?;
                    tried[s][f].insert(op_name(op), c);
                    if c < best {
                        best = c;
                        ops = cand;
                        changed = true;
                    }
                    pb.inc(1);
                }
            }
        }
        if !changed {
            pb.inc((field_count * (OPS.len() - 1) * (passes - pass - 1)) as u64);
            break;
        }
    }
    let schema = with_ops(&transformed, &ops)?;

    // Step 4: dictionaries per kind.
    let mut dictionaries = Vec::new();
    let mut candidates = Vec::new();
    for kind in [DictKind::Delta, DictKind::Keyframe] {
        let (train, held) = match kind {
            DictKind::Delta => (&jobs.train_delta, &jobs.held_delta),
            DictKind::Keyframe => (&jobs.train_key, &jobs.held_key),
        };
        let mut enc = Encoder::with_level(schema.clone(), opts.level);
        let (data, sizes) = block_samples(&schema, train)?;
        let plain = total_bytes(&mut enc, held)?;
        candidates.push(Candidate {
            kind,
            max_size: 0,
            size: 0,
            bytes_mean: mean(plain, held.len()),
        });
        let mut best: Option<(u64, Vec<u8>, u64)> = None;
        let mut least: Option<(u64, Vec<u8>, u64)> = None;
        for &size in &opts.sizes {
            pb.set_message(format!("{} dictionary, {size} bytes", kind.name()));
            pb.inc(1);
            if held.is_empty() || sizes.len() < 8 {
                continue;
            }
            let Ok(bytes) = zstd::dict::from_continuous(&data, &sizes, size) else {
                continue;
            };
            let id = dictionary_id(&game, &version, schema.id(), kind, &bytes);
            let dict = Dictionary::new(id, bytes.clone());
            if enc.set_dictionary(Some(&dict)).is_err() {
                continue;
            }
            let total = total_bytes(&mut enc, held)?;
            candidates.push(Candidate {
                kind,
                max_size: size as u64,
                size: bytes.len() as u64,
                bytes_mean: mean(total, held.len()),
            });
            if least.as_ref().is_none_or(|b| total < b.0) {
                least = Some((total, bytes.clone(), size as u64));
            }
            if total < plain && best.as_ref().is_none_or(|b| total < b.0) {
                best = Some((total, bytes, size as u64));
            }
        }
        if kind == DictKind::Keyframe && best.is_none() {
            let names = (game.as_str(), version.as_str(), schema.id());
            let (total, marker) = marker_dictionary(&mut enc, names, &data, held)?;
            candidates.push(Candidate {
                kind,
                max_size: MARKER_DICT_LEN as u64,
                size: MARKER_DICT_LEN as u64,
                bytes_mean: mean(total, held.len()),
            });
            best = match least {
                Some(l) if l.0 < total => Some(l),
                _ => Some((total, marker, MARKER_DICT_LEN as u64)),
            };
        }
        if let Some((_, bytes, max_size)) = best {
            dictionaries.push((kind, bytes, max_size));
        }
    }
    pb.finish_and_clear();

    // Step 4b: a context-model table riding on the delta dictionary.
    let model = match dictionaries.iter().find(|(k, _, _)| *k == DictKind::Delta) {
        Some((_, bytes, _)) if !jobs.held_delta.is_empty() => {
            let id = dictionary_id(&game, &version, schema.id(), DictKind::Delta, bytes);
            let dict = Dictionary::new(id, bytes.clone());
            let held = thin(&jobs.held_delta, 2000);
            crate::model::train_model(
                &schema,
                opts.level,
                &dict,
                opts.model_flags,
                &jobs.train_delta,
                &held,
            )?
        }
        _ => None,
    };

    // Step 5: measure, assemble, save, verify.
    let manifest = Manifest {
        format: 0,
        game: game.clone(),
        version: version.clone(),
        set_id: 0,
        schema_id: 0,
        base_schema_id: 0,
        schema: serde_json::Value::Null,
        default_records: Vec::new(),
        fields: base
            .sections()
            .iter()
            .zip(&tried)
            .flat_map(|(t, tried)| {
                t.fields().iter().zip(tried).map(|(f, m)| FieldChoice {
                    entity: t.name().to_owned(),
                    field: f.name.clone(),
                    delta: f.delta_op(),
                    held_out_bytes: m.clone(),
                })
            })
            .collect(),
        transforms,
        dictionaries: Vec::new(),
        training: Training {
            trainer: format!("tickpack-trainer {}", env!("CARGO_PKG_VERSION")),
            captures: scanned
                .iter()
                .map(|l| CaptureSource {
                    file: l
                        .path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    sha256: l.sha256.clone(),
                    ticks: l.ticks.len() as u64,
                })
                .collect(),
            train_ticks,
            held_out_ticks: held_ticks,
            held_out_fraction: opts.held_out,
            level: opts.level,
            algorithm: "zstd fastCover (ZDICT_trainFromBuffer: d=8, 4 k steps, f=20, \
                        split 0.75) on encoder payloads cut into blocks"
                .into(),
            sizes_tried: opts.sizes.iter().map(|&s| s as u64).collect(),
            ops_tried: OPS.to_vec(),
            baselines: why,
            keyframe_every: opts.keyframe_every as u64,
            operators_by: opts.operators_by.name().into(),
            model_flags: opts.model_flags,
        },
        measured: Measured::default(),
    };
    let mut set = DictionarySet::assemble(manifest, schema.clone(), base.id(), dictionaries)?;
    if let Some((table, _)) = model.as_ref().filter(|(_, r)| r.kept) {
        set = set.with_model(DictKind::Delta, table)?;
    }
    let measured = measure(&set, &base, &jobs, opts.level, candidates)?;
    let mut manifest = set.manifest().clone();
    manifest.measured = measured;
    let dicts = set
        .dictionaries()
        .iter()
        .map(|(k, d)| {
            let max = set
                .manifest()
                .dictionaries
                .iter()
                .find(|e| e.kind == *k)
                .map_or(0, |e| e.max_size);
            (*k, d.bytes().to_vec(), max)
        })
        .collect();
    set = DictionarySet::assemble(manifest, schema, base.id(), dicts)?;
    if let Some((table, _)) = model.as_ref().filter(|(_, r)| r.kept) {
        set = set.with_model(DictKind::Delta, table)?;
    }
    let set = save_set(&set, &opts.out, opts.force)?;
    let report = TrainReport {
        out: opts.out.display().to_string(),
        seconds: started.elapsed().as_secs_f64(),
        manifest: set.manifest().clone(),
        model: model.map(|(_, r)| r),
        transforms_not_applied: not_applied,
        snapshots_held,
    };
    Ok((set, report))
}

/// Most training packets the transform searches read (evenly sampled).
pub const TRANSFORM_JOBS: usize = 4000;

/// Bytes of the keyframe dictionary a set gets when no trained one helps.
pub const MARKER_DICT_LEN: usize = 64;

/// A [`MARKER_DICT_LEN`]-byte raw-content dictionary (the start of the
/// keyframe samples, zero-padded) and the held-out keyframes' bytes with
/// it: small enough to change their size by little, while it makes them
/// name the set's dictionary.
fn marker_dictionary(
    enc: &mut Encoder,
    (game, version, schema_id): (&str, &str, u32),
    samples: &[u8],
    held: &[Job<'_>],
) -> Result<(u64, Vec<u8>), TrainerError> {
    let mut bytes = samples[..samples.len().min(MARKER_DICT_LEN)].to_vec();
    bytes.resize(MARKER_DICT_LEN, 0);
    let id = dictionary_id(game, version, schema_id, DictKind::Keyframe, &bytes);
    enc.set_dictionary(Some(&Dictionary::new(id, bytes.clone())))
        .map_err(|e| TrainerError::Zstd(format!("keyframe dictionary: {e}")))?;
    Ok((total_bytes(enc, held)?, bytes))
}

fn measure(
    set: &DictionarySet,
    base: &Schema,
    jobs: &Split<'_>,
    level: i32,
    candidates: Vec<Candidate>,
) -> Result<Measured, TrainerError> {
    let untrained = |held: &[Job<'_>]| -> Result<u64, TrainerError> {
        total_bytes(&mut Encoder::with_level(base.clone(), level), held)
    };
    let ops_only = total_bytes(
        &mut Encoder::with_level(set.schema().clone(), level),
        &jobs.held_delta,
    )?;
    // A fresh encoder per kind, so one pass's encoder state does not
    // reach the other's measurement.
    let with_delta = total_bytes(&mut set.encoder(level)?, &jobs.held_delta)?;
    let with_key = total_bytes(&mut set.encoder(level)?, &jobs.held_key)?;
    let (nd, nk) = (jobs.held_delta.len(), jobs.held_key.len());
    Ok(Measured {
        delta_packets: nd as u64,
        keyframes: nk as u64,
        bytes_per_snapshot_without: mean(untrained(&jobs.held_delta)?, nd),
        bytes_per_snapshot_with: mean(with_delta, nd),
        bytes_per_snapshot_ops_only: mean(ops_only, nd),
        keyframe_bytes_without: mean(untrained(&jobs.held_key)?, nk),
        keyframe_bytes_with: mean(with_key, nk),
        candidates,
    })
}

/// The summary table printed after training.
pub fn summary(report: &TrainReport) -> String {
    use std::fmt::Write;
    let m = &report.manifest;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "wrote {} ({} {}): set {:#010x}, schema {:#010x} (captured {:#010x}), {:.1} s",
        report.out, m.game, m.version, m.set_id, m.schema_id, m.base_schema_id, report.seconds
    );
    let t = &m.training;
    let _ = writeln!(
        s,
        "{} capture(s): {} ticks trained, {} held out; baselines: {}",
        t.captures.len(),
        t.train_ticks,
        t.held_out_ticks,
        t.baselines
    );
    for t in &m.transforms {
        let _ = writeln!(
            s,
            "transform {}.{}: {} (held-out {} -> {} B{})",
            t.entity,
            t.field,
            t.describe(),
            t.held_out_bytes[0],
            t.held_out_bytes[1],
            model_bytes(t)
        );
    }
    for t in &report.transforms_not_applied {
        let _ = writeln!(s, "not applied: {t}");
    }
    let _ = writeln!(s);
    let mut rows = vec![vec![
        "field".to_owned(),
        "chosen".to_owned(),
        "int".to_owned(),
        "sub".to_owned(),
        "xor".to_owned(),
        "none".to_owned(),
        "predict".to_owned(),
    ]];
    for f in &m.fields {
        let mut r = vec![format!("{}.{}", f.entity, f.field), op_name(f.delta)];
        for op in ["int", "sub", "xor", "none", "predict"] {
            r.push(
                f.held_out_bytes
                    .get(op)
                    .map_or_else(|| "-".into(), |v| v.to_string()),
            );
        }
        rows.push(r);
    }
    s += &crate::table::render(&rows);
    let _ = writeln!(s);
    let mut rows = vec![vec![
        "kind".to_owned(),
        "size asked".to_owned(),
        "size".to_owned(),
        "held-out mean".to_owned(),
        "chosen".to_owned(),
    ]];
    for c in &m.measured.candidates {
        let chosen = m
            .dictionaries
            .iter()
            .any(|d| d.kind == c.kind && d.max_size == c.max_size)
            || (c.max_size == 0 && !m.dictionaries.iter().any(|d| d.kind == c.kind));
        rows.push(vec![
            c.kind.name().to_owned(),
            if c.max_size == 0 {
                "none".into()
            } else {
                c.max_size.to_string()
            },
            c.size.to_string(),
            format!("{:.1}", c.bytes_mean),
            if chosen { "*".into() } else { String::new() },
        ]);
    }
    s += &crate::table::render(&rows);
    let me = &m.measured;
    let gain = |a: f64, b: f64| if a > 0.0 { 100.0 * (a - b) / a } else { 0.0 };
    let _ = writeln!(
        s,
        "\nheld-out delta packets ({}): {:.1} B untrained -> {:.1} B with operators -> {:.1} B with the set ({:.1}% smaller)",
        me.delta_packets,
        me.bytes_per_snapshot_without,
        me.bytes_per_snapshot_ops_only,
        me.bytes_per_snapshot_with,
        gain(me.bytes_per_snapshot_without, me.bytes_per_snapshot_with)
    );
    let _ = writeln!(
        s,
        "held-out keyframes ({}): {:.1} B untrained -> {:.1} B with the set ({:.1}% smaller)",
        me.keyframes,
        me.keyframe_bytes_without,
        me.keyframe_bytes_with,
        gain(me.keyframe_bytes_without, me.keyframe_bytes_with)
    );
    s
}

/// `; model A -> B B` for a transform whose model bytes training measured.
pub(crate) fn model_bytes(t: &tickpack_sets::dictset::TransformChoice) -> String {
    t.held_out_model_bytes
        .map(|[a, b]| format!("; model {a} -> {b} B"))
        .unwrap_or_default()
}
