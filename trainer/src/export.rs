//! `export`: the bundled scenarios as captures, so the shipped dictionary
//! sets can be rebuilt from scratch.

#![forbid(unsafe_code)]

use std::path::Path;

use tickpack::capture::CaptureHeader;
use tickpack_scenarios::{arena_shooter, cube_pile, idle, racing_lobby, Scenario, TICK_RATE};

use crate::captures::{capture_err, create_capture, finish_capture};
use crate::import::Imported;
use crate::TrainerError;

/// Scenario names `export` takes, with the game name their captures get.
pub const SCENARIOS: [(&str, &str); 4] = [
    ("racing", "racing-lobby"),
    ("cubes", "cube-pile"),
    ("arena", "arena-shooter"),
    ("idle", "idle"),
];

/// The version written into exported captures.
pub const SCENARIO_VERSION: &str = "1";

/// Records `ticks` ticks of scenario `name` with `seed`.
pub fn scenario(
    name: &str,
    ticks: usize,
    seed: u64,
) -> Result<(Scenario, &'static str), TrainerError> {
    let game = SCENARIOS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, g)| *g)
        .ok_or_else(|| {
            TrainerError::Usage(format!(
                "unknown scenario `{name}`: use racing, cubes, arena or idle"
            ))
        })?;
    let s = match name {
        "racing" => racing_lobby(seed, ticks),
        "cubes" => cube_pile(seed, ticks),
        "arena" => arena_shooter(seed, ticks),
        _ => idle(ticks),
    };
    Ok((s, game))
}

/// Writes scenario `name` as a capture (tick numbers `0..ticks`, 60 Hz).
pub fn export(
    name: &str,
    output: &Path,
    ticks: usize,
    seed: u64,
) -> Result<Imported, TrainerError> {
    let (s, game) = scenario(name, ticks, seed)?;
    let header = CaptureHeader::new(game, SCENARIO_VERSION, TICK_RATE, s.schema.clone());
    let mut w = create_capture(output, &header)?;
    for (i, t) in s.ticks.iter().enumerate() {
        w.tick(i as u64, t).map_err(capture_err(output))?;
    }
    let bytes = finish_capture(output, w)?;
    Ok(Imported {
        ticks: s.ticks.len() as u64,
        bytes,
    })
}
