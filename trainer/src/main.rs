//! `tickpack-trainer`: builds per-game-version dictionary sets from captures.
//! See docs/guide.md, "Trainer", or `tickpack-trainer --help`.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use tickpack_trainer::cli::Cli;
use tickpack_trainer::{execute, TrainerError};

fn main() -> ExitCode {
    // clap prints its own usage errors (exit code 2), help and version.
    let argv = std::iter::once("tickpack-trainer".into()).chain(std::env::args_os().skip(1));
    let cli = Cli::parse_from(argv);
    let mut stdout = std::io::stdout().lock();
    match execute(cli, &mut stdout) {
        Ok(()) => ExitCode::SUCCESS,
        // A command's own usage errors, found after parsing: one line.
        Err(TrainerError::Usage(m)) => {
            eprintln!("error: {m}\n\nFor more information, try '--help'.");
            ExitCode::from(2)
        }
        Err(e @ TrainerError::TooManySteps { .. }) => {
            eprintln!("error: {e}\n\nFor more information, try '--help'.");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("tickpack-trainer: {e}");
            ExitCode::FAILURE
        }
    }
}
