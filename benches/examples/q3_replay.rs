//! Replays the Quake 3 demos of `$TICKPACK_Q3_DIR` (or `../shared/data/q3`)
//! as the report does (train on the other four, measure one; every packet
//! checked once) and prints per demo the exact packet bytes in all and the
//! encode + decode time per snapshot by the wall clock: every chunk of 250
//! snapshots at the fastest of `reps` passes, so that the moments a pass
//! was slowed by other work on a shared machine are not counted. `reps` 0
//! only prints the bytes. A harness for `perf record` and for comparing
//! two builds byte for byte.
//!
//! ```sh
//! cargo run --release -p tickpack-benches --example q3_replay -- [zstd|model|both] [reps] [demo index]
//! ```
#![forbid(unsafe_code)]

use std::time::Instant;

use tickpack::{Decoder, Dictionary, Encoder, Snapshot};
use tickpack_benches::q3::{
    data_dir, others, read_demo, reference, replay, train, train_model, Demo, Recalls, Res,
    FULL_SNAPSHOTS,
};

/// Snapshots timed together: about 3 ms of work.
const CHUNK: usize = 250;

/// Replays `d` `reps` times; exact bytes, µs per snapshot (each chunk of
/// snapshots at its fastest pass).
fn run(d: &Demo, dict: &Dictionary, reps: usize) -> Res<(usize, f64)> {
    let (b, _) = replay(d, Some(dict))?;
    let mut r = Recalls::new();
    let recalls: Vec<_> = (0..d.ticks.len()).map(|i| r.step(d, i)).collect();
    // Per chunk of `CHUNK` snapshots, its fastest pass: a pass slowed by
    // other work on a shared machine only loses the chunks it was slowed in.
    let chunks = d.ticks.len().div_ceil(CHUNK);
    let mut best = vec![if reps == 0 { 0 } else { u64::MAX }; chunks];
    for _ in 0..reps {
        let mut enc = Encoder::new(d.schema.clone());
        let mut dec = Decoder::new(d.schema.clone());
        enc.set_dictionary(Some(dict))?;
        dec.add_dictionary(dict)?;
        let (mut packet, mut out) = (Vec::new(), Snapshot::default());
        for (c, best) in best.iter_mut().enumerate() {
            let t = Instant::now();
            for (i, tick) in d.ticks.iter().enumerate().skip(c * CHUNK).take(CHUNK) {
                let rf = reference(d, i, recalls[i].as_ref());
                enc.encode_to_vec(tick, d.sequences[i], rf, &mut packet)?;
                dec.decode_into(&packet, rf, &mut out)?;
            }
            *best = (*best).min(t.elapsed().as_nanos() as u64);
        }
    }
    Ok((
        (b * d.ticks.len() as f64).round() as usize,
        best.iter().sum::<u64>() as f64 / 1e3 / d.ticks.len() as f64,
    ))
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("both", String::as_str);
    let reps: usize = args.get(2).map_or(Ok(1), |s| s.parse())?;
    let only: Option<usize> = args.get(3).map(|s| s.parse()).transpose()?;
    let dir = data_dir().ok_or("no q3 data")?;
    let mut files: Vec<_> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".q3snap.gz"))
        .collect();
    files.sort();
    let demos = files
        .iter()
        .map(|f| read_demo(f, FULL_SNAPSHOTS))
        .collect::<Res<Vec<_>>>()?;
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
