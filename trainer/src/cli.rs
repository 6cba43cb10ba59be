//! The command line, declared with clap: every command and flag, with the
//! range of every number checked while parsing (the error names the flag).

#![forbid(unsafe_code)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::replay::{BaselineModel, Rtt};

/// Most ticks `export` records: a scenario is generated in memory.
pub const MAX_EXPORT_TICKS: u64 = 1_000_000;
/// Smallest dictionary size `--sizes` takes (zstd's `ZDICT_DICTSIZE_MIN`).
pub const MIN_DICT_SIZE: usize = 256;
/// Largest dictionary size `--sizes` takes: 1 MiB, as a dictionary set loads.
pub const MAX_DICT_SIZE: usize = 1 << 20;
/// Most dictionary sizes `--sizes` takes (each is a training run).
pub const MAX_SIZES: usize = 32;
/// Largest `--keyframe-every`.
pub const MAX_KEYFRAME_EVERY: u64 = 1_000_000;
/// Largest `--rtt-ms`: one minute.
pub const MAX_RTT_MS: u64 = 60_000;
/// Largest `--jitter`, ticks.
pub const MAX_JITTER: u64 = 10_000;

/// The `--version` text: crate version, wire and capture format versions.
pub fn version_text() -> String {
    format!(
        "{} (wire format {}, capture format {})",
        env!("CARGO_PKG_VERSION"),
        tickpack::FORMAT_VERSION,
        tickpack_sets::capture::CAPTURE_VERSION
    )
}

/// `tickpack-trainer`: captures in, dictionary sets out.
#[derive(Debug, Parser)]
#[command(
    name = "tickpack-trainer",
    version = version_text(),
    about = "Trains and evaluates tickpack dictionary sets from captured traffic",
    long_about = None,
    arg_required_else_help = true
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// One command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Convert data you already have into a capture.
    #[command(subcommand)]
    Import(Import),
    /// Record a bundled scenario as a capture.
    Export(ExportArgs),
    /// Train a dictionary set (operators and dictionaries) from captures.
    Train(TrainArgs),
    /// Replay captures through the codec and report sizes and times.
    Eval(EvalArgs),
    /// Describe a capture, a dictionary, a model table, a manifest or a set
    /// directory; exits 1 if it is damaged.
    Inspect(InspectArgs),
    /// Per float field of a capture: its range, its tick-to-tick changes and
    /// the bits per value at candidate quantisation steps.
    Suggest(SuggestArgs),
}

/// The importers.
#[derive(Debug, Subcommand)]
pub enum Import {
    /// The 2015 networked-physics challenge file (frames of 901 cubes x 8 i32).
    Fiedler(FiedlerArgs),
    /// JSON lines: a header line with game, version and schema, then one line per tick.
    Jsonl(JsonlArgs),
}

/// Where an output goes, and whether an existing one may be replaced.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// The capture to write (written to a temporary file, renamed when complete).
    #[arg(value_name = "OUT.tpcap")]
    pub output: PathBuf,
    /// Replace OUT.tpcap if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `import fiedler`.
#[derive(Debug, Clone, Args)]
pub struct FiedlerArgs {
    /// The challenge file (`delta_data.bin`).
    #[arg(value_name = "INPUT.bin")]
    pub input: PathBuf,
    /// The capture to write.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Game name written into the capture.
    #[arg(long, value_name = "G", default_value = "cube-pile")]
    pub game: String,
    /// Game version written into the capture.
    #[arg(long, value_name = "V", default_value = crate::export::SCENARIO_VERSION)]
    pub version: String,
}

/// `import jsonl`: game and version come from the header line.
#[derive(Debug, Clone, Args)]
pub struct JsonlArgs {
    /// The JSON lines file (docs/guide.md, "Trainer").
    #[arg(value_name = "INPUT.jsonl")]
    pub input: PathBuf,
    /// The capture to write.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The scenario.
    #[arg(value_name = "SCENARIO",
          value_parser = clap::builder::PossibleValuesParser::new(crate::export::scenario_names()))]
    pub scenario: String,
    /// The capture to write.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Ticks to record.
    #[arg(long, value_name = "N", default_value_t = 600,
          value_parser = |s: &str| parse_whole(s, 1, MAX_EXPORT_TICKS), allow_negative_numbers = true)]
    pub ticks: u64,
    /// The scenario's random seed.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 1,
        value_parser = |s: &str| parse_whole(s, 0, u64::MAX),
        allow_negative_numbers = true
    )]
    pub seed: u64,
}

/// How packets pick baselines: a fixed distance, or simulated acks.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Tick t against tick t - N (prior t - 2N); ticks without one are skipped.
    #[arg(long, value_name = "N", conflicts_with_all = ["rtt_ms", "jitter"],
          value_parser = clap::value_parser!(u32).range(1..=i64::from(tickpack::MAX_BASELINE_DISTANCE)),
          allow_negative_numbers = true)]
    pub baseline_distance: Option<u32>,
    /// Without recorded sends: the simulated client's round trip, milliseconds [default: 100].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=MAX_RTT_MS as i64), allow_negative_numbers = true)]
    pub rtt_ms: Option<u32>,
    /// Without recorded sends: up to this many extra ticks of ack delay [default: 2].
    #[arg(long, value_name = "TICKS", value_parser = clap::value_parser!(u32).range(0..=MAX_JITTER as i64), allow_negative_numbers = true)]
    pub jitter: Option<u32>,
}

impl ModelArgs {
    /// The baseline model these flags describe.
    pub fn model(&self) -> BaselineModel {
        if let Some(n) = self.baseline_distance {
            return BaselineModel::Distance(n);
        }
        let d = Rtt::default();
        BaselineModel::Auto(Rtt {
            rtt_ms: self.rtt_ms.unwrap_or(d.rtt_ms),
            jitter_ticks: self.jitter.unwrap_or(d.jitter_ticks),
        })
    }
}

/// `train`.
#[derive(Debug, Clone, Args)]
pub struct TrainArgs {
    /// Captures to train on (same schema layout).
    #[arg(value_name = "CAPTURE", required = true)]
    pub captures: Vec<PathBuf>,
    /// The set's directory. A set already there is refused unless --force,
    /// then replaced as a whole (the new set is written beside it, then
    /// swapped in); any other existing file or non-empty directory, or a set
    /// beside files its manifest does not name, is refused.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace the dictionary set already at --out.
    #[arg(long)]
    pub force: bool,
    /// Game name [default: the first capture's].
    #[arg(long, value_name = "G")]
    pub game: Option<String>,
    /// Game version [default: the first capture's].
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// zstd level the packets are measured at.
    #[arg(long, value_name = "L", default_value_t = tickpack::DEFAULT_LEVEL, value_parser = parse_level, allow_negative_numbers = true)]
    pub level: i32,
    /// Dictionary sizes tried, bytes, comma-separated [default: 512,1024,2048,4096,8192,16384].
    #[arg(long, value_name = "SIZES", value_parser = parse_size, value_delimiter = ',', num_args = 1, allow_negative_numbers = true)]
    pub sizes: Vec<usize>,
    /// Fraction of each capture's ticks held out (the latest), above 0 and below 1.
    #[arg(long, value_name = "F", default_value_t = 0.2, value_parser = parse_fraction, allow_negative_numbers = true)]
    pub held_out: f64,
    /// A keyframe sample every N ticks.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = |s: &str| parse_whole(s, 1, MAX_KEYFRAME_EVERY), allow_negative_numbers = true)]
    pub keyframe_every: u64,
    /// Apply no lossless transform (grid, integration) found in the
    /// captures: the set's schema then differs from theirs only in operators.
    #[arg(long)]
    pub no_transforms: bool,
    /// Train the context-model table for these context flags only (0-7:
    /// bit 0 changed-entity flags, bit 1 element history, bit 2 previous
    /// value) [default: every combination, the smallest held-out packets
    /// win]. Flags 0 codes fastest: the history contexts cost the encoder
    /// a history per packet and slow both ends.
    #[arg(long, value_name = "FLAGS", value_parser = |s: &str| parse_whole(s, 0, u64::from(tickpack::model::ContextConfig::KNOWN_FLAGS)).map(|f| f as u16))]
    pub model_flags: Option<u16>,
    /// What the per-field operators are chosen by: `blocks` (held-out
    /// packets coded with zstd blocks, no dictionary) or `model` (held-out
    /// model bits under a table trained for each candidate: what a set with
    /// a table codes; slower to train).
    #[arg(long, value_name = "BY", value_enum, default_value_t)]
    pub operators_by: crate::train::OperatorObjective,
    /// Bytes of snapshots the sampled packets may need: longer captures
    /// are sampled evenly to fit. It decides the set.
    #[arg(long, value_name = "BYTES", default_value_t = crate::train::SAMPLE_BYTES,
          value_parser = |s: &str| parse_whole(s, 1, crate::eval::MAX_HELD_BYTES_LIMIT))]
    pub sample_bytes: u64,
    /// Most bytes of snapshots held in memory; a sample that needs more is
    /// refused (never thinned, so this never changes a set).
    #[arg(long, value_name = "BYTES", default_value_t = crate::train::MAX_HELD_BYTES,
          value_parser = |s: &str| parse_whole(s, 1, crate::eval::MAX_HELD_BYTES_LIMIT))]
    pub max_held_bytes: u64,
    /// Baselines.
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `eval`.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// Captures to replay (same schema layout).
    #[arg(value_name = "CAPTURE", required = true)]
    pub captures: Vec<PathBuf>,
    /// A set directory, or a root holding `<game>/<version>/` sets.
    #[arg(long, value_name = "DIR")]
    pub dictionaries: Option<PathBuf>,
    /// Print one JSON object with stable keys (docs/guide.md, "Trainer").
    #[arg(long)]
    pub json: bool,
    /// Replay only the ticks `train --held-out F` holds out, the latest F of
    /// each capture (alone: 0.2, train's default); F after an equals sign,
    /// `--held-out=0.3`.
    #[arg(long, value_name = "F", num_args = 0..=1, require_equals = true,
          default_missing_value = "0.2", value_parser = parse_fraction, allow_negative_numbers = true)]
    pub held_out: Option<f64>,
    /// zstd level, for tickpack and the plain frames alike.
    #[arg(long, value_name = "L", default_value_t = tickpack::DEFAULT_LEVEL, value_parser = parse_level, allow_negative_numbers = true)]
    pub level: i32,
    /// Most bytes of snapshots held at once as baselines still to be used;
    /// a capture that needs more is refused (the table prints what a
    /// capture needed).
    #[arg(long, value_name = "BYTES", default_value_t = crate::eval::MAX_HELD_BYTES,
          value_parser = |s: &str| parse_whole(s, 1, crate::eval::MAX_HELD_BYTES_LIMIT))]
    pub max_held_bytes: u64,
    /// Attribute the packets' bits to entity type, field, element and kind
    /// (header, block headers, flags, sets, mask, kind and value bits,
    /// coder flush): a table, or `by_field` in the JSON.
    #[arg(long)]
    pub by_field: bool,
    /// With --by-field: also write the attribution as an SVG bar chart to
    /// PATH (written whole or not at all).
    #[arg(long, value_name = "PATH", requires = "by_field")]
    pub svg: Option<PathBuf>,
    /// Replace the --svg file if it exists.
    #[arg(long, requires = "svg")]
    pub force: bool,
    /// Baselines.
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `inspect`.
#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    /// A capture, a zstd dictionary, a model table (`.model`), a
    /// manifest.json or a set directory.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// `suggest`.
#[derive(Debug, Clone, Args)]
pub struct SuggestArgs {
    /// The capture.
    #[arg(value_name = "CAPTURE")]
    pub capture: PathBuf,
    /// Candidate steps, comma-separated, at most 32 [default: 0.0001,0.001,0.01,0.1,1].
    #[arg(long, value_name = "STEPS", value_parser = parse_step, value_delimiter = ',', num_args = 1, allow_negative_numbers = true)]
    pub steps: Vec<f64>,
}

/// One quantisation step: finite and positive.
fn parse_step(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("step {v} is not finite and positive"))
    }
}

/// A zstd compression level the linked zstd accepts.
fn parse_level(s: &str) -> Result<i32, String> {
    let (lo, hi) = (
        zstd::zstd_safe::min_c_level(),
        zstd::zstd_safe::max_c_level(),
    );
    let v: i32 = s
        .parse()
        .map_err(|_| format!("zstd level must be a whole number in {lo}..={hi}"))?;
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(format!("zstd level {v} is not in {lo}..={hi}"))
    }
}

/// A whole number in `lo..=hi`.
fn parse_whole(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("{s} is not a whole number in {lo}..={hi}")),
    }
}

/// One dictionary size.
fn parse_size(s: &str) -> Result<usize, String> {
    let v: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size in bytes"))?;
    if (MIN_DICT_SIZE..=MAX_DICT_SIZE).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "dictionary size {v} is not in {MIN_DICT_SIZE}..={MAX_DICT_SIZE} bytes"
        ))
    }
}

/// A fraction above 0 and below 1.
fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not above 0 and below 1"))
    }
}
