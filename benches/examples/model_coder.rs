//! The context model's range coder against `constriction`'s range and ANS
//! coders (32- and 16-bit words) on identical binary decisions with 12-bit
//! static probabilities: bytes per packet at several packet sizes.
//!
//! ```sh
//! cargo run --release --example model_coder [-- --packets N]
//! ```
//!
//! A packet is a run of decisions drawn like a model block's (mostly
//! near-certain mask bits, some skewed class decisions, some raw bits) until
//! their ideal code length reaches the target size. Every tickpack packet is
//! decoded and compared.

#![forbid(unsafe_code)]

use std::error::Error;

use clap::Parser;
use constriction::stream::model::ContiguousCategoricalEntropyModel;
use constriction::stream::queue::{DefaultRangeEncoder, SmallRangeEncoder};
use constriction::stream::stack::{DefaultAnsCoder, SmallAnsCoder};
use constriction::stream::Encode;
use tickpack::model::{ModelDecoder, ModelEncoder, ModelShape, ModelSink, ModelTable};
use tickpack_scenarios::rng::SplitMix64;

#[derive(Parser)]
struct Args {
    /// Packets per size.
    #[arg(long, default_value_t = 2000)]
    packets: usize,
}

/// A table whose bit context `c` has P(0) = (c + 1) / 4096.
fn table() -> Result<ModelTable, Box<dyn Error>> {
    let shape = ModelShape {
        bit_contexts: 4095,
        value_contexts: 0,
    };
    Ok(ModelTable::from_probabilities(shape, (1..4096).collect())?)
}

fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Decisions `(p0, bit)` until their ideal cost reaches `bits`.
fn packet(rng: &mut SplitMix64, bits: f64) -> (Vec<(u16, bool)>, f64) {
    let (mut d, mut cost) = (Vec::new(), 0.0);
    while cost < bits {
        let u = unit(rng);
        let p0: u16 = match u {
            u if u < 0.60 => 4090,
            u if u < 0.75 => 3900,
            u if u < 0.85 => 3300,
            u if u < 0.92 => 2600,
            _ => 2048,
        };
        let pz = f64::from(p0) / 4096.0;
        let bit = unit(rng) >= pz;
        cost -= if bit { (1.0 - pz).log2() } else { pz.log2() };
        d.push((p0, bit));
    }
    (d, cost)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = Args::parse();
    let t = table()?;
    type Small = ContiguousCategoricalEntropyModel<u16, Vec<u16>, 12>;
    type Big = ContiguousCategoricalEntropyModel<u32, Vec<u32>, 24>;
    let mut small = Vec::new();
    let mut big = Vec::new();
    for p in 1..4096u32 {
        small.push(
            Small::from_nonzero_fixed_point_probabilities([p as u16, (4096 - p) as u16], false)
                .map_err(|()| "bad model")?,
        );
        big.push(
            Big::from_nonzero_fixed_point_probabilities([p << 12, (4096 - p) << 12], false)
                .map_err(|()| "bad model")?,
        );
    }
    println!("| ideal bytes | tickpack | constriction range u32 | range u16 | ANS u32 | ANS u16 |");
    println!("|---|---|---|---|---|---|");
    let mut rng = SplitMix64::new(0x9e37_79b9_7f4a_7c15);
    let n = args.packets.max(1);
    for target in [10.0, 20.0, 40.0, 80.0, 130.0] {
        let mut sums = [0f64; 6];
        for _ in 0..n {
            let (d, cost) = packet(&mut rng, target * 8.0);
            sums[0] += cost / 8.0;

            let mut enc = ModelEncoder::new(&t, Vec::new());
            for &(p, b) in &d {
                enc.bit(u32::from(p) - 1, b);
            }
            let bytes = enc.finish()?;
            let mut dec = ModelDecoder::new(&t, &bytes)?;
            for &(p, b) in &d {
                if dec.bit(u32::from(p) - 1)? != b {
                    return Err("tickpack round trip differs".into());
                }
            }
            dec.finish()?;
            sums[1] += bytes.len() as f64;

            let i = |p: u16| usize::from(p) - 1;
            let mut e = DefaultRangeEncoder::new();
            for &(p, b) in &d {
                e.encode_symbol(usize::from(b), &big[i(p)])?;
            }
            sums[2] += 4.0 * e.into_compressed()?.len() as f64;
            let mut e = SmallRangeEncoder::new();
            for &(p, b) in &d {
                e.encode_symbol(usize::from(b), &small[i(p)])?;
            }
            sums[3] += 2.0 * e.into_compressed()?.len() as f64;
            let mut e = DefaultAnsCoder::new();
            for &(p, b) in d.iter().rev() {
                e.encode_symbol(usize::from(b), &big[i(p)])?;
            }
            sums[4] += 4.0 * e.into_compressed()?.len() as f64;
            let mut e = SmallAnsCoder::new();
            for &(p, b) in d.iter().rev() {
                e.encode_symbol(usize::from(b), &small[i(p)])?;
            }
            sums[5] += 2.0 * e.into_compressed()?.len() as f64;
        }
        let cells: Vec<String> = sums
            .iter()
            .map(|s| format!("{:.2}", s / n as f64))
            .collect();
        println!("| {} |", cells.join(" | "));
    }
    Ok(())
}
