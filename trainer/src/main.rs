//! `tickpack-trainer`: builds per-game-version dictionary sets from captures.
//! See the README's "Trainer" section, or `tickpack-trainer --help`.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use tickpack_trainer::{run, TrainerError};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut stdout = std::io::stdout().lock();
    match run(&args, &mut stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(TrainerError::Usage(m)) => {
            // clap's messages come rendered, usage line included.
            if m.contains("Usage:") {
                eprint!("{m}");
            } else {
                eprintln!("error: {m}\n\nFor more information, try '--help'.");
            }
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("tickpack-trainer: {e}");
            ExitCode::FAILURE
        }
    }
}
