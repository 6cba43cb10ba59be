//! The "Quake 3, real traffic" section of the report: per demo of
//! `../shared/data/q3/` ([`tickpack_benches::q3`]), tickpack without a
//! dictionary, and with a delta dictionary trained (zstd's trainer, on the
//! payloads the encoder compresses) on the four *other* files, so no file
//! is measured with a dictionary that saw it; then with that dictionary
//! carrying a context-model table trained on the same four
//! files (the encoder keeps the model block when it is smaller).

use std::fmt::Write as _;

use tickpack_benches::q3::{
    data_dir, others, read_demos, replay, time_replay, train, train_model, DICT_SIZE,
    FULL_SNAPSHOTS, QUICK_SNAPSHOTS,
};

use crate::methods::Res;
use crate::PASSES;

/// Per-file results.
struct FileRow {
    name: String,
    snapshots: usize,
    q3: f64,
    plain: f64,
    trained: f64,
    us: f64,
    model: f64,
    model_us: f64,
}

/// The section of the report, or a note saying why it was skipped.
pub(crate) fn section(quick: bool) -> Res<String> {
    let mut s = String::from("## Quake 3, real traffic\n\n");
    let Some(dir) = data_dir() else {
        let _ = writeln!(
            s,
            "Skipped: `../shared/data/q3/` (the Quake 3 demo snapshots) is not next to the \
             repository (or set `TICKPACK_Q3_DIR`).\n"
        );
        return Ok(s);
    };
    let max = if quick {
        QUICK_SNAPSHOTS
    } else {
        FULL_SNAPSHOTS
    };
    let demos = read_demos(&dir, max)?;
    let passes = if quick { 1 } else { PASSES };
    let mut rows = Vec::new();
    for (k, d) in demos.iter().enumerate() {
        if d.schema.id() != demos[0].schema.id() {
            return Err(format!("{}: another schema than the other demos", d.name).into());
        }
        let others = others(&demos, k);
        let dict = train(&d.schema, &others)?;
        let (plain, _) = replay(d, None)?;
        let (trained, _) = replay(d, Some(&dict))?;
        let us = time_replay(d, Some(&dict), passes)?;
        let with_model = dict.clone().with_model(train_model(&d.schema, &others)?);
        let (model, _) = replay(d, Some(&with_model))?;
        let model_us = time_replay(d, Some(&with_model), passes)?;
        let n = d.ticks.len().max(1) as f64;
        rows.push(FileRow {
            name: d.name.clone(),
            snapshots: d.ticks.len(),
            q3: d.q3_bytes.iter().sum::<f64>() / n,
            plain,
            trained,
            us,
            model,
            model_us,
        });
    }
    let _ = writeln!(
        s,
        "The first {max} snapshots of each demo in `../shared/data/q3/`, each sent against the \
         baseline Quake 3 used for it; the anchor is Quake 3's own bytes for the snapshot \
         (`snap_bits / 8`: server time, delta number, area mask, player state and entities, \
         Huffman-coded). The player record carries the server time as well (before the command \
         time), which Quake 3's bytes include. The schema declares the view angles on their 360/65536 grid and \
         the player origin integrated from its velocity over the command time; every packet \
         carries its baseline's recall. tickpack bytes are whole packets, header included. \
         \"trained\": a \
         {} KiB delta dictionary trained on the other four demos' payloads (zstd blocks). \
         \"model\": that \
         dictionary with a context-model table trained on the other four demos' packets \
         (a model block, kept per packet when smaller). µs: encode + decode per snapshot, one \
         thread, each chunk of 250 snapshots at its fastest of {PASSES} passes.\n",
        DICT_SIZE / 1024
    );
    let _ = writeln!(
        s,
        "| demo | snapshots | Quake 3 B | tickpack B | × Quake 3 | tickpack trained B | × Quake 3 | µs | tickpack model B | × Quake 3 | µs |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let (mut q, mut p, mut t, mut m) = (0.0, 0.0, 0.0, 0.0);
    for r in &rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.1} | {:.2} | {:.1} | {:.2} | {:.1} | {:.1} | {:.2} | {:.1} |",
            r.name,
            r.snapshots,
            r.q3,
            r.plain,
            r.plain / r.q3,
            r.trained,
            r.trained / r.q3,
            r.us,
            r.model,
            r.model / r.q3,
            r.model_us
        );
        q += r.q3;
        p += r.plain;
        t += r.trained;
        m += r.model;
    }
    let _ = writeln!(
        s,
        "| **all** | | {:.1} | {:.1} | **{:.2}** | {:.1} | **{:.2}** | | {:.1} | **{:.2}** | |\n",
        q / rows.len().max(1) as f64,
        p / rows.len().max(1) as f64,
        p / q.max(1e-9),
        t / rows.len().max(1) as f64,
        t / q.max(1e-9),
        m / rows.len().max(1) as f64,
        m / q.max(1e-9),
    );
    Ok(s)
}
