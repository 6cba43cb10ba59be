//! `tickpack-trainer`: captures in, dictionary sets out.
//!
//! The binary's commands are functions here, so tests (and other tools) can
//! call them directly; [`run`] is the command line.
//!
//! ```text
//! tickpack-trainer import fiedler INPUT.bin OUT.tpcap [--game G] [--version V]
//! tickpack-trainer import jsonl INPUT.jsonl OUT.tpcap
//! tickpack-trainer export SCENARIO OUT.tpcap [--ticks N] [--seed S]
//! tickpack-trainer train CAPTURE... --out DIR [--game G] [--version V] [--json] ...
//! tickpack-trainer eval CAPTURE... [--dictionaries DIR] [--baseline-distance N] [--json] [--by-field [--svg PATH]] ...
//! tickpack-trainer inspect FILE
//! tickpack-trainer suggest CAPTURE [--steps 0.001,0.01,...]
//! ```
//!
//! `SCENARIO` is one of [`export::SCENARIOS`]: racing, cubes, arena, idle,
//! racing-quantized, arena-quantized, racing-quantized-view.
//!
//! Every command has `--help`; outputs are never written in place
//! ([`output`]), and captures are read in bounded memory ([`captures`]).
#![forbid(unsafe_code)]

pub mod byfield;
pub mod byfield_svg;
pub mod captures;
pub mod cli;
mod error;
pub mod eval;
pub mod export;
pub mod import;
pub mod inspect;
pub mod integrals;
pub mod jsonl;
pub mod measure;
pub mod model;
pub mod output;
pub mod recalls;
pub mod replay;
pub mod suggest;
pub mod table;
pub mod train;
pub mod transforms;

use std::io::Write;

use clap::error::ErrorKind;
use clap::Parser;

pub use error::TrainerError;

use cli::{Cli, Command, Import};

fn io_out(e: std::io::Error) -> TrainerError {
    TrainerError::io("<stdout>", e)
}

/// Parses the command line `args` (without the program name). `--help` and
/// `--version` give their text as `Ok(Err(text))`; a usage error is
/// [`TrainerError::Usage`] with the text clap prints for it (its message,
/// usage line where clap gives one and `--help` hint; or the help of a
/// command given no arguments).
pub fn parse(args: &[String]) -> Result<Result<Cli, String>, TrainerError> {
    let argv = std::iter::once("tickpack-trainer").chain(args.iter().map(String::as_str));
    match Cli::try_parse_from(argv) {
        Ok(cli) => Ok(Ok(cli)),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            Ok(Err(e.render().to_string()))
        }
        Err(e) => Err(TrainerError::Usage(e.render().to_string())),
    }
}

/// Runs the command line `args` (without the program name), writing the
/// command's output to `out`. Progress bars go to stderr on a terminal.
pub fn run(args: &[String], out: &mut dyn Write) -> Result<(), TrainerError> {
    match parse(args)? {
        Ok(cli) => execute(cli, out),
        Err(text) => out.write_all(text.as_bytes()).map_err(io_out),
    }
}

/// Runs the parsed command line `cli`, writing the command's output to
/// `out`. A usage error found only now (a command's own check) is
/// [`TrainerError::Usage`] with a one-line message.
pub fn execute(cli: Cli, out: &mut dyn Write) -> Result<(), TrainerError> {
    match cli.command {
        Command::Import(which) => {
            let (r, o) = match which {
                Import::Fiedler(a) => (
                    import::fiedler(&a.input, &a.out.output, a.out.force, &a.game, &a.version)?,
                    a.out.output,
                ),
                Import::Jsonl(a) => (
                    import::jsonl(&a.input, &a.out.output, a.out.force)?,
                    a.out.output,
                ),
            };
            writeln!(
                out,
                "wrote {}: {} ticks, {} bytes",
                o.display(),
                r.ticks,
                r.bytes
            )
            .map_err(io_out)?;
        }
        Command::Export(a) => {
            let r = export::export(&a.scenario, &a.out.output, a.out.force, a.ticks, a.seed)?;
            writeln!(
                out,
                "wrote {}: {} ticks, {} bytes",
                a.out.output.display(),
                r.ticks,
                r.bytes
            )
            .map_err(io_out)?;
        }
        Command::Train(a) => {
            let d = train::TrainOptions::default();
            let opts = train::TrainOptions {
                captures: a.captures,
                out: a.out,
                force: a.force,
                game: a.game,
                version: a.version,
                level: a.level,
                sizes: if a.sizes.is_empty() { d.sizes } else { a.sizes },
                held_out: a.held_out,
                model: a.model.model(),
                keyframe_every: usize::try_from(a.keyframe_every).unwrap_or(usize::MAX),
                progress: !a.json && !a.quiet,
                sample_bytes: a.sample_bytes,
                max_held_bytes: a.max_held_bytes,
                transforms: !a.no_transforms,
                model_flags: a.model_flags,
                operators_by: a.operators_by,
            };
            if opts.sizes.len() > cli::MAX_SIZES {
                return Err(TrainerError::Usage(format!(
                    "--sizes: at most {} sizes, got {}",
                    cli::MAX_SIZES,
                    opts.sizes.len()
                )));
            }
            let (_, report) = train::train(&opts)?;
            if a.json {
                let text = serde_json::to_string_pretty(&report)
                    .map_err(|e| TrainerError::Empty(format!("json: {e}")))?;
                writeln!(out, "{text}").map_err(io_out)?;
            } else {
                out.write_all(train::summary(&report).as_bytes())
                    .map_err(io_out)?;
            }
        }
        Command::Eval(a) => {
            if a.held_out.is_some() {
                // `--held-out 0.3` leaves 0.3 as a capture: say how F is written.
                if let Some(f) = a
                    .captures
                    .iter()
                    .find(|c| !c.exists() && c.to_str().is_some_and(|s| s.parse::<f64>().is_ok()))
                {
                    return Err(TrainerError::Usage(format!(
                        "{}: no such capture; a fraction for --held-out goes after an equals sign, \
                         --held-out={}",
                        f.display(),
                        f.display()
                    )));
                }
            }
            let d = eval::EvalOptions::default();
            let opts = eval::EvalOptions {
                captures: a.captures,
                dictionaries: a.dictionaries,
                model: a.model.model(),
                held_out: a.held_out.is_some(),
                held_out_fraction: a.held_out.unwrap_or(d.held_out_fraction),
                level: a.level,
                max_dict_samples: d.max_dict_samples,
                max_held_bytes: a.max_held_bytes,
                by_field: a.by_field,
            };
            if let Some(svg) = &a.svg {
                let inputs: Vec<&std::path::Path> =
                    opts.captures.iter().map(|c| c.as_path()).collect();
                output::check_output(&inputs, svg, a.force)?;
            }
            let (report, ctx) = eval::eval(&opts)?;
            if let (Some(svg), Some(b)) = (&a.svg, &report.by_field) {
                let title = opts
                    .captures
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                let file = output::Pending::new(svg, a.force)?;
                let mut w = file.writer()?;
                w.write_all(byfield_svg::svg(b, &title).as_bytes())
                    .and_then(|()| w.flush())
                    .map_err(|e| TrainerError::io(svg, e))?;
                drop(w);
                file.commit()?;
            }
            if a.json {
                let text = serde_json::to_string(&report)
                    .map_err(|e| TrainerError::Empty(format!("json: {e}")))?;
                writeln!(out, "{text}").map_err(io_out)?;
            } else {
                out.write_all(eval::table(&report, &ctx).as_bytes())
                    .map_err(io_out)?;
            }
        }
        Command::Inspect(a) => {
            let r = inspect::inspect(&a.file)?;
            out.write_all(r.text.as_bytes()).map_err(io_out)?;
            if r.damaged {
                return Err(TrainerError::Damaged {
                    file: a.file.display().to_string(),
                });
            }
        }
        Command::Suggest(a) => {
            let steps = if a.steps.is_empty() {
                suggest::DEFAULT_STEPS.to_vec()
            } else {
                a.steps
            };
            out.write_all(suggest::suggest(&a.capture, &steps)?.as_bytes())
                .map_err(io_out)?;
        }
    }
    Ok(())
}
