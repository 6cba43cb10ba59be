//! The format-3 entropy-coder candidates on the same recorded model
//! tokens (issue 36): per corpus and design, the block bytes against the
//! shipped range coder, and the encode and decode speed (each the fastest
//! of `reps` passes, timed by the thread's time on a processor so that
//! time descheduled on a shared machine does not count); beside them zstd's
//! decoding of the same packets' pipeline payloads.
//!
//! ```sh
//! cargo run --release -p tickpack-benches --example entropy_coders -- [reps] [q3-snapshots]
//! ```
//!
//! Every block is decoded and checked once before timing.

#![forbid(unsafe_code)]

use std::error::Error;
use std::hint::black_box;
use std::time::Instant;

use tickpack_benches::entropy::binary::Binary;
use tickpack_benches::entropy::corpus::{self, Corpus};
use tickpack_benches::entropy::rans::Rans;
use tickpack_benches::entropy::reference::Reference;
use tickpack_benches::entropy::{decisions, Coder};

type Res<T> = Result<T, Box<dyn Error>>;

const DESIGNS: [&str; 8] = [
    "shipped (format 3)",
    "binary tree rc",
    "range + raw stream",
    "range + raw, shared",
    "rANS 1x32",
    "rANS 2x32",
    "rANS 1x24",
    "rANS 2x24",
];

fn coder<'t>(design: usize, t: &'t tickpack::model::ModelTable) -> Box<dyn Coder + 't> {
    match design {
        0 => Box::new(Reference::new(t)),
        1 => Box::new(Binary::<true>::new(t)),
        2 => Box::new(Binary::<false>::new(t)),
        3 => Box::new(Binary::<false, true>::new(t)),
        4 => Box::new(Rans::<1, 23>::new(t)),
        5 => Box::new(Rans::<2, 23>::new(t)),
        6 => Box::new(Rans::<1, 15>::new(t)),
        _ => Box::new(Rans::<2, 15>::new(t)),
    }
}

/// This thread's time on a processor so far, in seconds, from
/// `/proc/thread-self/schedstat` (the wall clock where that is missing):
/// time spent descheduled on a shared machine does not count.
fn cpu_now(start: Instant) -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or_else(|| start.elapsed().as_secs_f64(), |ns| ns as f64 * 1e-9)
}

/// Fastest of `reps` runs of `f`, in seconds of processor time. A run
/// repeats `f` for at least 0.2 s of processor time (the scheduler's
/// count moves in ticks of a few ms) and counts per call.
fn fastest(reps: usize, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
    let start = Instant::now();
    let mut calls = 1usize;
    loop {
        let t = cpu_now(start);
        for _ in 0..calls {
            f()?;
        }
        if cpu_now(start) - t >= 0.2 {
            break;
        }
        calls *= 2;
    }
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = cpu_now(start);
        for _ in 0..calls {
            f()?;
        }
        best = best.min((cpu_now(start) - t) / calls as f64);
    }
    Ok(best)
}

/// Per part, the coders and their blocks.
fn measure(c: &Corpus, design: usize, reps: usize) -> Res<(usize, f64, f64)> {
    let mut bytes = 0usize;
    let (mut enc_s, mut dec_s) = (0.0, 0.0);
    for part in &c.parts {
        let mut coder = coder(design, &part.table);
        let mut blocks = Vec::new();
        let mut values = Vec::new();
        for p in &part.packets {
            let mut b = Vec::new();
            coder.encode(&p.tokens, &mut b);
            coder.decode(&p.tokens, &b, &mut values)?;
            if values.iter().zip(&p.tokens).any(|(v, t)| *v != t.value)
                || values.len() != p.tokens.len()
            {
                return Err(format!("{} {}: values differ", c.name, DESIGNS[design]).into());
            }
            bytes += b.len();
            blocks.push(b);
        }
        let mut out = Vec::new();
        enc_s += fastest(reps, || {
            for p in &part.packets {
                coder.encode(black_box(&p.tokens), &mut out);
            }
            black_box(&out);
            Ok(())
        })?;
        dec_s += fastest(reps, || {
            for (p, b) in part.packets.iter().zip(&blocks) {
                coder.decode(black_box(&p.tokens), black_box(b), &mut values)?;
            }
            black_box(&values);
            Ok(())
        })?;
    }
    Ok((bytes, enc_s, dec_s))
}

/// zstd -3 frames (no dictionary) of the
/// packets' payloads: total compressed bytes, payload bytes, decode secs.
fn blocks(c: &Corpus, reps: usize) -> Res<Vec<(&'static str, usize, usize, f64)>> {
    let mut rows = Vec::new();
    let payload: usize = c.packets().map(|(_, p)| p.payload.len()).sum();
    let mut zc = zstd::bulk::Compressor::new(3)?;
    let mut zd = zstd::bulk::Decompressor::new()?;
    let frames: Vec<Vec<u8>> = c
        .packets()
        .map(|(_, p)| zc.compress(&p.payload))
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(1 << 20);
    let secs = fastest(reps, || {
        for (f, (_, p)) in frames.iter().zip(c.packets()) {
            out.clear();
            zd.decompress_to_buffer(black_box(f), &mut out)?;
            debug_assert_eq!(out, p.payload);
        }
        Ok(())
    })?;
    rows.push((
        "zstd -3 frame",
        frames.iter().map(Vec::len).sum(),
        payload,
        secs,
    ));
    Ok(rows)
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).map_or(Ok(20), |s| s.parse())?;
    let q3_max: usize = args.get(2).map_or(Ok(2000), |s| s.parse())?;
    let mut corpora = vec![
        corpus::scenario("racing", 3600)?,
        corpus::scenario("cube", 3600)?,
    ];
    if let Some(q) = corpus::quake3(q3_max)? {
        corpora.push(q);
    }
    for c in &corpora {
        let packets = c.packets().count();
        let (mut dec_n, mut raw_n, mut tok_n) = (0u64, 0u64, 0usize);
        for (_, p) in c.packets() {
            let (d, r) = decisions(&p.tokens);
            dec_n += d;
            raw_n += r;
            tok_n += p.tokens.len();
        }
        println!(
            "\n{}: {packets} packets, {:.1} tokens, {:.1} binarised decisions, {:.1} raw bits per packet",
            c.name,
            tok_n as f64 / packets as f64,
            dec_n as f64 / packets as f64,
            raw_n as f64 / packets as f64
        );
        println!(
            "{:20} {:>9} {:>8} {:>9} {:>9} {:>9} {:>10} {:>9}",
            "design",
            "B/packet",
            "vs first",
            "enc µs",
            "dec µs",
            "dec MB/s",
            "dec dec/µs",
            "enc MB/s"
        );
        let mut base = 0usize;
        for (design, label) in DESIGNS.iter().enumerate() {
            let (bytes, enc, dec) = measure(c, design, reps)?;
            if design == 0 {
                base = bytes;
            }
            println!(
                "{:20} {:9.2} {:+7.2}% {:9.3} {:9.3} {:9.1} {:10.1} {:9.1}",
                label,
                bytes as f64 / packets as f64,
                (bytes as f64 / base as f64 - 1.0) * 100.0,
                enc * 1e6 / packets as f64,
                dec * 1e6 / packets as f64,
                bytes as f64 / dec / 1e6,
                dec_n as f64 / dec / 1e6,
                bytes as f64 / enc / 1e6,
            );
        }
        for (label, bytes, payload, secs) in blocks(c, reps)? {
            println!(
                "{:20} {:9.2} {:>8} {:9} {:9.3} {:9.1}  (payload {:.1} B/packet, {:.1} MB/s of payload)",
                label,
                bytes as f64 / packets as f64,
                "",
                "",
                secs * 1e6 / packets as f64,
                bytes as f64 / secs / 1e6,
                payload as f64 / packets as f64,
                payload as f64 / secs / 1e6,
            );
        }
    }
    Ok(())
}
