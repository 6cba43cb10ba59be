//! A harness for instruction counts of the codec pipeline: replays the
//! racing lobby (or the cube pile) with its shipped dictionary set as
//! `scene_replay` does (seed 4, baseline distance 6, prior 12, the last
//! 20% of the ticks measured), encodes every measured packet once to warm
//! the buffers, then runs `passes` encode passes in `encode_pass` and
//! `passes` decode passes in `decode_pass` (each out of line, so callgrind
//! can count one of them alone). Prints the packets' mean size and a digest
//! of their bytes, which must not change with a pipeline optimisation.
//!
//! ```sh
//! cargo build --release -p tickpack-benches --example pipe_profile
//! valgrind --tool=callgrind --collect-atstart=no \
//!     --toggle-collect='pipe_profile::decode_pass' \
//!     target/release/examples/pipe_profile racing 4
//! callgrind_annotate --inclusive=yes callgrind.out.<pid>
//! ```
//!
//! Arguments: `[racing|cube] [passes] [ticks] [model|zstd]` (default
//! `racing 4 600`, the set's default entropy; `zstd`: `Entropy::Zstd`).
#![forbid(unsafe_code)]

use std::error::Error;
use std::time::Instant;

use tickpack::{Baseline, Decoder, Encoder, Entropy, History, Reference, Snapshot};
use tickpack_benches::shipped::{histories, scenario_with_set};

type Res<T> = Result<T, Box<dyn Error>>;

const SEED: u64 = 4;
const DISTANCE: usize = 6;

/// The replayed ticks, whether the set predicts, and per tick its history
/// against tick `t - DISTANCE` when the set's model table reads histories
/// (computed before the passes: the ends keep it as a by-product).
struct Ticks<'a> {
    ticks: &'a [Snapshot],
    predicts: bool,
    histories: Vec<Option<History>>,
}

impl Ticks<'_> {
    fn reference(&self, i: usize) -> Reference<'_> {
        let at = |t: usize| Baseline {
            sequence: (t & 0xffff) as u16,
            snapshot: &self.ticks[t],
        };
        Reference::delta(at(i - DISTANCE))
            .with_prior(
                i.checked_sub(2 * DISTANCE)
                    .filter(|_| self.predicts)
                    .map(at),
            )
            .with_history(self.histories.get(i - DISTANCE).and_then(Option::as_ref))
    }
}

#[inline(never)]
fn encode_pass(
    enc: &mut Encoder,
    ticks: &Ticks<'_>,
    measured: &[usize],
    packets: &mut [Vec<u8>],
) -> Res<()> {
    for (p, &i) in packets.iter_mut().zip(measured) {
        let rf = ticks.reference(i);
        enc.encode_to_vec(&ticks.ticks[i], (i & 0xffff) as u16, rf, p)?;
    }
    Ok(())
}

#[inline(never)]
fn decode_pass(
    dec: &mut Decoder,
    ticks: &Ticks<'_>,
    measured: &[usize],
    packets: &[Vec<u8>],
    out: &mut Snapshot,
) -> Res<()> {
    for (p, &i) in packets.iter().zip(measured) {
        dec.decode_into(p, ticks.reference(i), out)?;
    }
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("racing", String::as_str);
    let passes: usize = args.get(2).map_or(Ok(4), |s| s.parse())?;
    let n: usize = args.get(3).map_or(Ok(600), |s| s.parse())?;
    let entropy = match args.get(4).map(String::as_str) {
        Some("zstd") => Entropy::Zstd,
        Some("model") => Entropy::Model,
        _ => Entropy::Best,
    };
    let (sc, set) = scenario_with_set(which, SEED, n)?;
    let mut enc = set.encoder(tickpack::DEFAULT_LEVEL)?;
    enc.set_entropy(entropy);
    let mut dec = set.decoder()?;
    let histories = histories(&set, &sc, DISTANCE);
    let ticks = Ticks {
        ticks: &sc.ticks,
        predicts: set.schema().predicts(),
        histories,
    };
    let measured: Vec<usize> = ((n * 4 / 5).max(2 * DISTANCE)..n).collect();
    let mut packets = vec![Vec::new(); measured.len()];
    let mut out = Snapshot::default();
    encode_pass(&mut enc, &ticks, &measured, &mut packets)?;
    for (p, &i) in packets.iter().zip(&measured) {
        dec.decode_into(p, ticks.reference(i), &mut out)?;
        if out != sc.ticks[i] {
            return Err(format!("tick {i} decoded differently").into());
        }
    }
    // The fastest pass of each by the wall clock (noisy on a shared
    // machine; the instruction counts are the measure).
    let (mut te, mut td) = (f64::MAX, f64::MAX);
    for _ in 0..passes {
        let t = Instant::now();
        encode_pass(&mut enc, &ticks, &measured, &mut packets)?;
        te = te.min(t.elapsed().as_secs_f64());
    }
    for _ in 0..passes {
        let t = Instant::now();
        decode_pass(&mut dec, &ticks, &measured, &packets, &mut out)?;
        td = td.min(t.elapsed().as_secs_f64());
    }
    let per = 1e6 / packets.len().max(1) as f64;
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for p in &packets {
        for &b in (p.len() as u32).to_le_bytes().iter().chain(p) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let bytes = packets.iter().map(Vec::len).sum::<usize>() as f64 / packets.len().max(1) as f64;
    println!(
        "{which}: {} packets x {passes} passes, {bytes:.1} B mean, packets {h:016x}, \
         encode {:.2} µs, decode {:.2} µs (fastest pass)",
        packets.len(),
        te * per,
        td * per,
    );
    Ok(())
}
