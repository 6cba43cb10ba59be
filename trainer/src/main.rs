//! `tickpack-trainer`: builds per-game-version dictionary sets from captures.
//!
//! Captures, training and evaluation arrive with the trainer issue; until
//! then this binary only reports its version and what it will do.
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--version") | Some("-V") => {
            println!(
                "tickpack-trainer {} (wire format {})",
                env!("CARGO_PKG_VERSION"),
                tickpack::FORMAT_VERSION
            );
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "tickpack-trainer: the import, train, eval and inspect commands are not built yet"
            );
            ExitCode::from(2)
        }
    }
}
