//! Capture size and write time per tick, for each way of storing ticks
//! (CAPTURE.md, "Cost"): tickpack packets against the previous tick at
//! several levels and keyframe intervals, against plain zstd of the raw
//! records. `cargo run --release -p tickpack-trainer --example capture_sizes`
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used)]
use std::time::Instant;
use tickpack_scenarios::{cube_pile, racing_lobby};
use tickpack_sets::capture::{CaptureHeader, CaptureOptions, CaptureWriter};
fn main() {
    for s in [cube_pile(1, 3600), racing_lobby(1, 3600)] {
        let raw: usize = s.ticks.iter().map(|t| t.raw_len()).sum();
        println!("{}: raw {} B/tick", s.name, raw / s.ticks.len());
        for (level, key) in [(1, 600), (3, 600), (-1, 600), (1, 0), (1, 60)] {
            let h = CaptureHeader::new("x", "1", 60, s.schema.clone());
            let mut w = CaptureWriter::new(
                Vec::new(),
                &h,
                CaptureOptions {
                    level,
                    keyframe_interval: key,
                },
            )
            .unwrap();
            let t = Instant::now();
            for (i, tk) in s.ticks.iter().enumerate() {
                w.tick(i as u64, tk).unwrap();
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / s.ticks.len() as f64;
            let b = w.finish().unwrap();
            println!("  tickpack level {level:>2} keyframe every {key:>3}: {:.1} B/tick, {us:.1} us/tick", b.len() as f64 / s.ticks.len() as f64);
        }
        for level in [1, 3] {
            let mut c = zstd::bulk::Compressor::new(level).unwrap();
            let t = Instant::now();
            let mut total = 0;
            let mut raw = Vec::new();
            for tk in &s.ticks {
                tickpack_trainer::measure::raw_snapshot(tk, &mut raw);
                total += c.compress(&raw).unwrap().len();
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / s.ticks.len() as f64;
            println!("  zstd frame per tick of raw records, level {level}: {:.1} B/tick, {us:.1} us/tick", total as f64 / s.ticks.len() as f64);
        }
        // one zstd stream over all raw ticks (long window)
        let t = Instant::now();
        let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
        let mut raw = Vec::new();
        for tk in &s.ticks {
            tickpack_trainer::measure::raw_snapshot(tk, &mut raw);
            std::io::Write::write_all(&mut e, &raw).unwrap();
        }
        let out = e.finish().unwrap();
        let us = t.elapsed().as_secs_f64() * 1e6 / s.ticks.len() as f64;
        println!(
            "  one zstd stream (level 1) of raw records: {:.1} B/tick, {us:.1} us/tick",
            out.len() as f64 / s.ticks.len() as f64
        );
    }
}
