//! Replays the Quake 3 demos of `$TICKPACK_Q3_DIR` (or `../shared/data/q3`)
//! as the report does (train on the other four, measure one; every packet
//! checked once) and prints per demo the exact packet bytes in all and the
//! encode + decode time per snapshot by the wall clock: every chunk of 250
//! snapshots at the fastest of `reps` passes, so that the moments a pass
//! was slowed by other work on a shared machine are not counted. `reps` 0
//! only prints the bytes. A harness for `perf record` and for comparing
//! two builds byte for byte. `zstd` prints the trained dictionary without
//! the model (zstd blocks), `model` with it.
//!
//! ```sh
//! cargo run --release -p tickpack-benches --example q3_replay -- [zstd|model|both] [reps] [demo index]
//! ```
#![forbid(unsafe_code)]

use tickpack::Dictionary;
use tickpack_benches::q3::{
    data_dir, others, read_demos, replay, time_replay, train, train_model, Demo, Res,
    FULL_SNAPSHOTS,
};

/// Replays `d` `reps` times; exact bytes, µs per snapshot.
fn run(d: &Demo, dict: &Dictionary, reps: usize) -> Res<(usize, f64)> {
    let (b, _) = replay(d, Some(dict))?;
    Ok((
        (b * d.ticks.len() as f64).round() as usize,
        time_replay(d, Some(dict), reps)?,
    ))
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("both", String::as_str);
    let reps: usize = args.get(2).map_or(Ok(1), |s| s.parse())?;
    let only: Option<usize> = args.get(3).map(|s| s.parse()).transpose()?;
    let dir = data_dir().ok_or("no q3 data")?;
    let demos = read_demos(&dir, FULL_SNAPSHOTS)?;
    for (k, d) in demos.iter().enumerate() {
        if only.is_some_and(|o| o != k) {
            continue;
        }
        let others = others(&demos, k);
        let dict = train(&d.schema, &others)?;
        if mode != "model" {
            let (b, us) = run(d, &dict, reps)?;
            println!("{:24} zstd  {:9} B  {:6.2} µs", d.name, b, us);
        }
        if mode != "zstd" {
            let with_model = dict.clone().with_model(train_model(&d.schema, &others)?);
            let (b, us) = run(d, &with_model, reps)?;
            println!("{:24} model {:9} B  {:6.2} µs", d.name, b, us);
        }
    }
    Ok(())
}
