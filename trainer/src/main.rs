//! `tickpack-trainer`: builds per-game-version dictionary sets from captures.
//! See the README's "Trainer" section, or `tickpack-trainer --help`.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use tickpack_trainer::{run, TrainerError, USAGE};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut stdout = std::io::stdout().lock();
    match run(&args, &mut stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(TrainerError::Usage(m)) => {
            eprintln!("tickpack-trainer: {m}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("tickpack-trainer: {e}");
            ExitCode::FAILURE
        }
    }
}
