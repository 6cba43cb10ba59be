//! `tickpack-trainer`: captures in, dictionary sets out.
//!
//! The binary's commands are functions here, so tests (and other tools) can
//! call them directly; [`run`] is the command line.
//!
//! ```text
//! tickpack-trainer import fiedler INPUT.bin OUT.tpcap [--game G] [--version V]
//! tickpack-trainer import jsonl INPUT.jsonl OUT.tpcap
//! tickpack-trainer export racing|cubes|idle OUT.tpcap [--ticks N] [--seed S]
//! tickpack-trainer train CAPTURE... --out DIR [--game G] [--version V] [--json] ...
//! tickpack-trainer eval CAPTURE... [--dictionaries DIR] [--baseline-distance N] [--json] ...
//! tickpack-trainer inspect FILE
//! tickpack-trainer suggest CAPTURE [--steps 0.001,0.01,...]
//! ```
#![forbid(unsafe_code)]

pub mod args;
pub mod captures;
mod error;
pub mod eval;
pub mod export;
pub mod import;
pub mod inspect;
pub mod measure;
pub mod replay;
pub mod suggest;
pub mod table;
pub mod train;

use std::io::Write;
use std::path::PathBuf;

pub use error::TrainerError;

use args::Args;
use replay::{BaselineModel, Rtt};

/// The usage text.
pub const USAGE: &str = "\
usage:
  tickpack-trainer import fiedler INPUT.bin OUT.tpcap [--game G] [--version V]
  tickpack-trainer import jsonl INPUT.jsonl OUT.tpcap
  tickpack-trainer export racing|cubes|idle OUT.tpcap [--ticks N] [--seed S]
  tickpack-trainer train CAPTURE... --out DIR [--game G] [--version V] [--json]
        [--level L] [--sizes 512,1024,...] [--held-out F] [--keyframe-every N]
        [--baseline-distance N | --rtt-ms MS --jitter TICKS] [--quiet]
  tickpack-trainer eval CAPTURE... [--dictionaries DIR] [--baseline-distance N] [--json]
        [--held-out] [--level L] [--rtt-ms MS --jitter TICKS]
  tickpack-trainer inspect FILE
  tickpack-trainer suggest CAPTURE [--steps 0.001,0.01,...]
  tickpack-trainer --version
";

fn usage(msg: impl Into<String>) -> TrainerError {
    TrainerError::Usage(msg.into())
}

fn io_out(e: std::io::Error) -> TrainerError {
    TrainerError::io("<stdout>", e)
}

fn model(a: &Args) -> Result<BaselineModel, TrainerError> {
    if let Some(n) = a.parsed::<u32>("baseline-distance")? {
        if n == 0 || n > u32::from(tickpack::MAX_BASELINE_DISTANCE) {
            return Err(usage("--baseline-distance must be 1..=32767"));
        }
        return Ok(BaselineModel::Distance(n));
    }
    let d = Rtt::default();
    Ok(BaselineModel::Auto(Rtt {
        rtt_ms: a.parsed("rtt-ms")?.unwrap_or(d.rtt_ms),
        jitter_ticks: a.parsed("jitter")?.unwrap_or(d.jitter_ticks),
    }))
}

fn one_output(a: &Args, what: &str) -> Result<(PathBuf, PathBuf), TrainerError> {
    match a.positional.as_slice() {
        [_, input, output] => Ok((input.into(), output.into())),
        _ => Err(usage(format!("{what} takes INPUT and OUT.tpcap"))),
    }
}

/// Runs the command line `args` (without the program name), writing the
/// command's output to `out`. Progress bars go to stderr on a terminal.
pub fn run(args: &[String], out: &mut dyn Write) -> Result<(), TrainerError> {
    let Some((cmd, rest)) = args.split_first() else {
        return Err(usage("no command"));
    };
    match cmd.as_str() {
        "--version" | "-V" => {
            writeln!(
                out,
                "tickpack-trainer {} (wire format {}, capture format {})",
                env!("CARGO_PKG_VERSION"),
                tickpack::FORMAT_VERSION,
                tickpack::capture::CAPTURE_VERSION
            )
            .map_err(io_out)?;
        }
        "--help" | "-h" | "help" => out.write_all(USAGE.as_bytes()).map_err(io_out)?,
        "import" => {
            let a = Args::parse(rest, &["game", "version"], &[])?;
            let r = match a.positional.first().map(String::as_str) {
                Some("fiedler") => {
                    let (i, o) = one_output(&a, "import fiedler")?;
                    let game = a.value("game").unwrap_or("cube-pile");
                    let version = a.value("version").unwrap_or(export::SCENARIO_VERSION);
                    (import::fiedler(&i, &o, game, version)?, o)
                }
                Some("jsonl") => {
                    if a.value("game").is_some() || a.value("version").is_some() {
                        return Err(usage(
                            "import jsonl takes game and version from its header line",
                        ));
                    }
                    let (i, o) = one_output(&a, "import jsonl")?;
                    (import::jsonl(&i, &o)?, o)
                }
                _ => return Err(usage("import takes `fiedler` or `jsonl`")),
            };
            writeln!(
                out,
                "wrote {}: {} ticks, {} bytes",
                r.1.display(),
                r.0.ticks,
                r.0.bytes
            )
            .map_err(io_out)?;
        }
        "export" => {
            let a = Args::parse(rest, &["ticks", "seed"], &[])?;
            let [name, output] = a.positional.as_slice() else {
                return Err(usage("export takes SCENARIO and OUT.tpcap"));
            };
            let ticks = a.parsed("ticks")?.unwrap_or(600);
            let seed = a.parsed("seed")?.unwrap_or(1);
            let r = export::export(name, output.as_ref(), ticks, seed)?;
            writeln!(out, "wrote {output}: {} ticks, {} bytes", r.ticks, r.bytes)
                .map_err(io_out)?;
        }
        "train" => {
            let a = Args::parse(
                rest,
                &[
                    "out",
                    "game",
                    "version",
                    "level",
                    "sizes",
                    "held-out",
                    "keyframe-every",
                    "baseline-distance",
                    "rtt-ms",
                    "jitter",
                ],
                &["json", "quiet"],
            )?;
            let d = train::TrainOptions::default();
            let sizes = match a.value("sizes") {
                None => d.sizes.clone(),
                Some(s) => s
                    .split(',')
                    .map(|x| x.trim().parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| usage("--sizes takes sizes in bytes, comma-separated"))?,
            };
            let held_out: f64 = a.parsed("held-out")?.unwrap_or(d.held_out);
            if !(0.0..1.0).contains(&held_out) || held_out == 0.0 {
                return Err(usage("--held-out must be above 0 and below 1"));
            }
            let opts = train::TrainOptions {
                captures: a.positional.iter().map(PathBuf::from).collect(),
                out: a
                    .value("out")
                    .map(PathBuf::from)
                    .ok_or_else(|| usage("train needs --out DIR"))?,
                game: a.value("game").map(str::to_owned),
                version: a.value("version").map(str::to_owned),
                level: a.parsed("level")?.unwrap_or(d.level),
                sizes,
                held_out,
                model: model(&a)?,
                keyframe_every: a.parsed("keyframe-every")?.unwrap_or(d.keyframe_every),
                progress: !a.switch("json") && !a.switch("quiet"),
            };
            let (_, report) = train::train(&opts)?;
            if a.switch("json") {
                let text = serde_json::to_string_pretty(&report)
                    .map_err(|e| usage(format!("json: {e}")))?;
                writeln!(out, "{text}").map_err(io_out)?;
            } else {
                out.write_all(train::summary(&report).as_bytes())
                    .map_err(io_out)?;
            }
        }
        "eval" => {
            let a = Args::parse(
                rest,
                &[
                    "dictionaries",
                    "baseline-distance",
                    "level",
                    "rtt-ms",
                    "jitter",
                ],
                &["json", "held-out"],
            )?;
            let d = eval::EvalOptions::default();
            let opts = eval::EvalOptions {
                captures: a.positional.iter().map(PathBuf::from).collect(),
                dictionaries: a.value("dictionaries").map(PathBuf::from),
                model: model(&a)?,
                held_out: a.switch("held-out"),
                held_out_fraction: d.held_out_fraction,
                level: a.parsed("level")?.unwrap_or(d.level),
            };
            let (report, ctx) = eval::eval(&opts)?;
            if a.switch("json") {
                let text =
                    serde_json::to_string(&report).map_err(|e| usage(format!("json: {e}")))?;
                writeln!(out, "{text}").map_err(io_out)?;
            } else {
                out.write_all(eval::table(&report, &ctx).as_bytes())
                    .map_err(io_out)?;
            }
        }
        "inspect" => {
            let a = Args::parse(rest, &[], &[])?;
            let [file] = a.positional.as_slice() else {
                return Err(usage("inspect takes one FILE"));
            };
            out.write_all(inspect::inspect(file.as_ref())?.as_bytes())
                .map_err(io_out)?;
        }
        "suggest" => {
            let a = Args::parse(rest, &["steps"], &[])?;
            let [file] = a.positional.as_slice() else {
                return Err(usage("suggest takes one CAPTURE"));
            };
            let steps = match a.value("steps") {
                None => suggest::DEFAULT_STEPS.to_vec(),
                Some(s) => s
                    .split(',')
                    .map(|x| x.trim().parse::<f64>())
                    .collect::<Result<Vec<_>, _>>()
                    .ok()
                    .filter(|v| v.iter().all(|x| x.is_finite() && *x > 0.0))
                    .ok_or_else(|| usage("--steps takes positive steps, comma-separated"))?,
            };
            out.write_all(suggest::suggest(file.as_ref(), &steps)?.as_bytes())
                .map_err(io_out)?;
        }
        other => return Err(usage(format!("unknown command `{other}`"))),
    }
    Ok(())
}
