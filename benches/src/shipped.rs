//! A bundled scenario with its shipped dictionary set, replayed as the
//! profiling harnesses replay it (`examples/pipe_profile.rs`,
//! `examples/adapt_estimate.rs`).

use std::error::Error;
use std::path::PathBuf;

use tickpack::History;
use tickpack_scenarios::{self as scenarios, Scenario};
use tickpack_sets::dictset::DictionarySet;

/// Scenario `which` (`racing`, `cube` or `arena`) of `seed` for `ticks`
/// ticks, with its shipped set (checked to fit it).
pub fn scenario_with_set(
    which: &str,
    seed: u64,
    ticks: usize,
) -> Result<(Scenario, DictionarySet), Box<dyn Error>> {
    let dicts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dictionaries");
    let (sc, dir) = match which {
        "racing" => (scenarios::racing_lobby(seed, ticks), "racing-lobby/1"),
        "cube" => (scenarios::cube_pile(seed, ticks), "cube-pile/1"),
        "arena" => (scenarios::arena_shooter(seed, ticks), "arena-shooter/1"),
        other => return Err(format!("unknown scenario {other}").into()),
    };
    let set = DictionarySet::load(dicts.join(dir))?;
    set.fits(&sc.schema)?;
    Ok((sc, set))
}

/// Per tick `t` of `sc`, its history against tick `t - distance` when
/// `set` reads histories (empty otherwise): what both ends would keep.
pub fn histories(set: &DictionarySet, sc: &Scenario, distance: usize) -> Vec<Option<History>> {
    if !set.uses_history() {
        return Vec::new();
    }
    let ticks = &sc.ticks;
    (0..ticks.len())
        .map(|t| History::of(&sc.schema, &ticks[t], &ticks[t.checked_sub(distance)?]))
        .collect()
}
