//! zstd only, trained static Huffman only, and best-of per block, on the
//! racing lobby and the cube pile, keyframes and deltas separately.
//!
//! ```sh
//! cargo run --release --example entropy [-- --ticks N] [--seed S]
//! ```
//!
//! Each scenario runs 1500 ticks (`--ticks`); the first 80% train a Huffman table (and
//! a 16 KiB zstd dictionary, for the last two rows) on the encoder's own
//! payloads, the rest are measured: packet `i` against tick `i - 6`, or as a
//! keyframe. Every packet is decoded and compared.

#![forbid(unsafe_code)]

use std::error::Error;
use std::time::Instant;

use clap::Parser;

use tickpack::{Baseline, Decoder, Dictionary, Encoder, Entropy, HuffmanTable, Schema, Snapshot};
use tickpack_scenarios::{cube_pile, racing_lobby};

const DISTANCE: usize = 6;

fn baseline(ticks: &[Snapshot], i: usize, key: bool) -> Option<Baseline<'_>> {
    (!key).then(|| Baseline {
        sequence: (i - DISTANCE) as u16,
        snapshot: &ticks[i - DISTANCE],
    })
}

fn run(name: &str, schema: &Schema, ticks: &[Snapshot]) -> Result<(), Box<dyn Error>> {
    let split = ticks.len() * 4 / 5;
    for key in [false, true] {
        let mut enc = Encoder::new(schema.clone());
        let mut counts = [0u64; 256];
        let mut samples = Vec::new();
        for i in DISTANCE..split {
            let mut p = Vec::new();
            enc.payload(&ticks[i], i as u16, baseline(ticks, i, key), &mut p)?;
            for &b in &p {
                counts[usize::from(b)] += 1;
            }
            samples.push(p);
        }
        let table = HuffmanTable::from_counts(&counts);
        let zdict = zstd::dict::from_samples(&samples, 16 * 1024)?;
        let huff_only = Dictionary::new(1, Vec::<u8>::new()).with_huffman(table.clone());
        let with_dict = Dictionary::new(2, zdict.clone());
        let with_both = Dictionary::new(3, zdict).with_huffman(table);
        let variants = [
            ("zstd", None, Entropy::Zstd),
            ("Huffman", Some(&huff_only), Entropy::Huffman),
            ("best-of", Some(&huff_only), Entropy::Best),
            ("zstd + 16 KiB dict", Some(&with_dict), Entropy::Zstd),
            ("best-of + 16 KiB dict", Some(&with_both), Entropy::Best),
        ];
        for (label, dict, mode) in variants {
            let mut enc = Encoder::new(schema.clone());
            enc.set_dictionary(dict)?;
            enc.set_entropy(mode);
            let mut dec = Decoder::new(schema.clone());
            if let Some(d) = dict {
                dec.add_dictionary(d)?;
            }
            let t = Instant::now();
            let mut packets = Vec::new();
            for i in split..ticks.len() {
                packets.push(enc.encode(&ticks[i], i as u16, baseline(ticks, i, key))?);
            }
            let enc_us = t.elapsed().as_secs_f64() * 1e6 / packets.len() as f64;
            let t = Instant::now();
            let mut out = Snapshot::default();
            for (k, p) in packets.iter().enumerate() {
                dec.decode_into(p, baseline(ticks, split + k, key), &mut out)?;
                if out != ticks[split + k] {
                    return Err(format!("{name} {label}: packet {k} does not round-trip").into());
                }
            }
            let dec_us = t.elapsed().as_secs_f64() * 1e6 / packets.len() as f64;
            let mean = packets.iter().map(Vec::len).sum::<usize>() as f64 / packets.len() as f64;
            let kind = if key { "keyframe" } else { "delta" };
            println!("| {name} | {kind} | {label} | {mean:.1} | {enc_us:.1} | {dec_us:.1} |");
        }
    }
    Ok(())
}

/// Entropy stages compared per block: zstd only, trained static Huffman
/// only, best-of per block, on the racing lobby and the cube pile.
#[derive(Debug, Parser)]
#[command(name = "entropy")]
struct Cli {
    /// Ticks per scenario: the first 80% train, the rest are measured.
    #[arg(long, value_name = "N", default_value_t = 1500,
          value_parser = clap::value_parser!(u64).range(60..=36_000))]
    ticks: u64,
    /// Scenario seed.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
}

fn main() -> Result<(), Box<dyn Error>> {
    let cli = Cli::parse();
    let ticks = cli.ticks as usize;
    println!("| scenario | packets | entropy | mean bytes | encode µs | decode µs |");
    println!("|---|---|---|---|---|---|");
    let racing = racing_lobby(cli.seed, ticks);
    run(racing.name, &racing.schema, &racing.ticks)?;
    let cubes = cube_pile(cli.seed, ticks);
    run(cubes.name, &cubes.schema, &cubes.ticks)?;
    Ok(())
}
