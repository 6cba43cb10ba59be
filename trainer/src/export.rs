//! `export`: the bundled scenarios as captures, so the shipped dictionary
//! sets can be rebuilt from scratch.

#![forbid(unsafe_code)]

use std::path::Path;

use tickpack_scenarios::{
    arena_shooter, arena_shooter_quantized, cube_pile, idle, racing_lobby, racing_lobby_quantized,
    racing_lobby_quantized_view, Scenario, TICK_RATE,
};
use tickpack_sets::capture::CaptureHeader;

use crate::captures::{capture_err, create_capture};
use crate::import::Imported;
use crate::output::check_output;
use crate::TrainerError;

/// Scenario names `export` takes, with the game name their captures get.
pub const SCENARIOS: [(&str, &str); 7] = [
    ("racing", "racing-lobby"),
    ("cubes", "cube-pile"),
    ("arena", "arena-shooter"),
    ("idle", "idle"),
    ("racing-quantized", "racing-lobby-quantized"),
    ("arena-quantized", "arena-shooter-quantized"),
    ("racing-quantized-view", "racing-lobby-quantized"),
];

/// The scenario names `export` takes, in the order of [`SCENARIOS`].
pub fn scenario_names() -> [&'static str; SCENARIOS.len()] {
    SCENARIOS.map(|(name, _)| name)
}

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
                "unknown scenario `{name}`: use one of {}",
                scenario_names().join(", ")
            ))
        })?;
    let s = match name {
        "racing" => racing_lobby(seed, ticks),
        "cubes" => cube_pile(seed, ticks),
        "arena" => arena_shooter(seed, ticks),
        "racing-quantized" => racing_lobby_quantized(seed, ticks),
        "arena-quantized" => arena_shooter_quantized(seed, ticks),
        "racing-quantized-view" => racing_lobby_quantized_view(seed, ticks),
        _ => idle(ticks),
    };
    Ok((s, game))
}

/// Most bytes of snapshots `export` holds in memory (a scenario is
/// generated whole before it is written): 1 GiB.
pub const MAX_EXPORT_BYTES: u64 = 1 << 30;

/// Writes scenario `name` as a capture (tick numbers `0..ticks`, 60 Hz) to
/// `output` (refused if it exists, unless `force`). Refuses `ticks` whose
/// snapshots would take more than [`MAX_EXPORT_BYTES`].
pub fn export(
    name: &str,
    output: &Path,
    force: bool,
    ticks: u64,
    seed: u64,
) -> Result<Imported, TrainerError> {
    check_output(&[], output, force)?;
    // One tick's size (ids and records, twice for growth and allocator
    // slack) tells how many ticks fit the budget.
    let (one, _) = scenario(name, 1, seed)?;
    let per_tick = one.ticks.first().map_or(1, |t| {
        2 * (t.raw_len() + 4 * t.entity_count() + 64 * t.sections().len()) as u64
    });
    let fit = MAX_EXPORT_BYTES / per_tick.max(1);
    if ticks > fit {
        return Err(TrainerError::Usage(format!(
            "--ticks {ticks}: scenario `{name}` takes about {per_tick} bytes of memory per tick, \
             so at most {fit} ticks fit the {} MiB export budget",
            MAX_EXPORT_BYTES >> 20
        )));
    }
    let ticks = usize::try_from(ticks).map_err(|_| {
        TrainerError::Usage(format!("--ticks {ticks} does not fit this machine's usize"))
    })?;
    let (s, game) = scenario(name, ticks, seed)?;
    let header = CaptureHeader::new(game, SCENARIO_VERSION, TICK_RATE, s.schema.clone());
    let mut w = create_capture(&[], output, force, &header)?;
    for (i, t) in s.ticks.iter().enumerate() {
        w.writer.tick(i as u64, t).map_err(capture_err(output))?;
    }
    let bytes = w.finish()?;
    Ok(Imported {
        ticks: s.ticks.len() as u64,
        bytes,
    })
}
