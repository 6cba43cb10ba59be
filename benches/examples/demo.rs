//! tickpack on its two reference scenarios, against plain zstd.
//!
//! ```sh
//! cargo run --release --example demo [-- --ticks N] [--seed S] [--clients C] [--loss P]
//! cargo run --release --example demo -- --help
//! ```
//!
//! Part 1, the codec:
//! For each scenario (the 64-car racing lobby, lossless and with the
//! quantised schema, the 901-cube pile of the 2015 compression challenge,
//! and an idle server) it encodes tick 0 as a keyframe, ticks 1-5 against
//! tick 0 (so the receiver holds them), and every tick `i >= 6` against tick
//! `i - 6`, the challenge's fixed 100 ms ack distance (schemas with
//! `predict` fields also name the prior `i - 12`). Every packet is decoded
//! and compared with the original (the quantised lobby: with the quantised
//! world): any difference exits non-zero. Statistics cover the keyframe and
//! the packets of ticks 6 and later; the quantised lobby also prints the
//! largest reconstruction error per field.
//!
//! Part 2, the session layer: the racing lobby served to `--clients` clients
//! (default 63) over a simulated link with `--loss` packet loss in both
//! directions (default 5%), 3 ticks of latency and 1 of jitter. Each client
//! gets a delta against the newest snapshot it acked. The quantised lobby
//! runs the same way (without the trained set). Exits non-zero if a client
//! cannot decode a packet or ends out of sync.

#![forbid(unsafe_code)]

use std::error::Error;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use tickpack::{Baseline, Decoder, Encoder, Reference, Snapshot};
use tickpack_benches::lobby::{self, LobbyConfig};
use tickpack_scenarios::{self as scenarios, changed_entities, Scenario, TICK_RATE};

/// Ticks between a packet and its baseline, as in the 2015 challenge.
const DISTANCE: usize = 6;
const DEFAULT_TICKS: usize = 600;
const DEFAULT_SEED: u64 = 1;
const ZSTD_LEVEL: i32 = 3;

/// Most ticks: each scenario is generated whole in memory.
const MAX_TICKS: u64 = 36_000;
/// Most lobby clients.
const MAX_CLIENTS: u16 = 4096;

/// tickpack on its reference scenarios against plain zstd, then the
/// session layer over a lossy simulated link.
#[derive(Debug, Parser)]
#[command(name = "demo")]
struct Cli {
    /// Ticks per scenario (at least 7: packet i is coded against tick i - 6).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TICKS as u64,
          value_parser = clap::value_parser!(u64).range(DISTANCE as u64 + 1..=MAX_TICKS))]
    ticks: u64,
    /// Scenario and link seed.
    #[arg(long, value_name = "S", default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Clients of the session-layer lobby.
    #[arg(long, value_name = "C", default_value_t = 63,
          value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_CLIENTS)))]
    clients: u16,
    /// Packet loss in each direction: a fraction (0.05) or a percentage (5%), below 100%.
    #[arg(long, value_name = "P", default_value = "5%", value_parser = parse_loss)]
    loss: f64,
}

/// `0.05` or `5%`; a bare number above 1 is a percentage.
fn parse_loss(s: &str) -> Result<f64, String> {
    let p: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a fraction or a percentage"))?;
    let p = if s.ends_with('%') || p > 1.0 {
        p / 100.0
    } else {
        p
    };
    if (0.0..1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("{s} is not at least 0 and below 100%"))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ticks = cli.ticks as usize;
    let lobby = LobbyConfig {
        clients: cli.clients,
        loss: cli.loss,
        ticks,
        seed: cli.seed,
        ..LobbyConfig::default()
    };
    match run(ticks, cli.seed, &lobby) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(ticks: usize, seed: u64, lobby_cfg: &LobbyConfig) -> Result<(), Box<dyn Error>> {
    let start = Instant::now();
    println!(
        "tickpack demo: {ticks} ticks at {TICK_RATE} Hz, seed {seed}; packet i against tick i-{DISTANCE}, \
         zstd level {ZSTD_LEVEL}; every packet decoded and checked"
    );
    let racing = scenarios::racing_lobby(seed, ticks);
    let racing_q = racing.quantized(
        "racing lobby, quantised",
        scenarios::racing_schema_quantized(),
    );
    let cubes = scenarios::cube_pile(seed, ticks);
    let idle = scenarios::idle(ticks);
    let generated = start.elapsed();
    for sc in [&racing, &racing_q, &cubes, &idle] {
        let r = measure(sc)?;
        r.print(sc.name == "cube pile");
        if std::ptr::eq(sc, &racing_q) {
            print_errors(&racing, &racing_q);
        }
    }
    println!(
        "\nall {} packets decoded bit-exact (quantised: to the quantised world); scenarios generated in {:.2} s",
        4 * (ticks + 1),
        generated.as_secs_f64(),
    );
    let untrained = LobbyConfig {
        trained_set: false,
        ..*lobby_cfg
    };
    let base = lobby::simulate(&untrained)?;
    let r = lobby::simulate(lobby_cfg)?;
    print_lobby(lobby_cfg, &r, &base);
    let q = lobby::simulate(&LobbyConfig {
        quantized: true,
        ..*lobby_cfg
    })?;
    let q_base = lobby::simulate(&LobbyConfig {
        quantized: true,
        trained_set: false,
        ..*lobby_cfg
    })?;
    for (r, set) in [(&q, "set racing-lobby-quantized/1"), (&q_base, "no set")] {
        println!(
            "quantised racing schema (1 mm, smallest-three 10, 0.01 m/s, 8-bit controls; {set}): \
             {:.1} bytes per client per tick, {:.2} Mbit/s upload, encode {:.0} µs per tick, \
             {} undecodable, {} out of sync",
            r.bytes_per_client, r.upload_mbps, r.encode_us_per_tick, r.undecodable, r.out_of_sync
        );
    }
    println!("\ntotal {:.2} s", start.elapsed().as_secs_f64());
    if r.undecodable + base.undecodable + q.undecodable + q_base.undecodable > 0
        || r.out_of_sync + base.out_of_sync + q.out_of_sync + q_base.out_of_sync > 0
    {
        return Err(format!(
            "{} undecodable packets, {} clients out of sync",
            r.undecodable, r.out_of_sync
        )
        .into());
    }
    Ok(())
}

fn print_lobby(cfg: &LobbyConfig, r: &lobby::LobbyReport, base: &lobby::LobbyReport) {
    println!(
        "\n## racing lobby, session layer: {} clients, {:.0}% loss each way, {} ticks latency + 0..{} jitter, {} ticks",
        r.clients, cfg.loss * 100.0, cfg.latency_ticks, cfg.jitter_ticks, r.ticks
    );
    println!("trained set: dictionaries/racing-lobby/1 (per-field operators, keyframe and delta dictionaries)");
    println!("| per tick, averaged                          | trained set | no set |");
    println!("|---------------------------------------------|-------------|--------|");
    let row = |k: &str, a: String, b: String| println!("| {k:<43} | {a:>11} | {b:>6} |");
    let f1 = |v: f64| format!("{v:.1}");
    let f2 = |v: f64| format!("{v:.2}");
    row(
        "raw bytes (world records)",
        f1(r.raw_bytes),
        f1(base.raw_bytes),
    );
    row(
        "sent bytes per client",
        f1(r.bytes_per_client),
        f1(base.bytes_per_client),
    );
    row(
        "full snapshots sent (run total)",
        r.full_snapshots.to_string(),
        base.full_snapshots.to_string(),
    );
    row(
        "packets lost on the link (run total)",
        r.lost.to_string(),
        base.lost.to_string(),
    );
    row(
        "dropped: stale or no baseline (run total)",
        r.dropped.to_string(),
        base.dropped.to_string(),
    );
    row(
        "undecodable packets (must be 0)",
        r.undecodable.to_string(),
        base.undecodable.to_string(),
    );
    let runs = |x: &lobby::LobbyReport| f2(x.encodes as f64 / x.ticks as f64);
    row(
        "encoder runs per tick (the rest shared)",
        runs(r),
        runs(base),
    );
    row(
        "server encode time per tick, µs",
        f1(r.encode_us_per_tick),
        f1(base.encode_us_per_tick),
    );
    row(
        "upload Mbit/s, all clients at 60 Hz",
        f2(r.upload_mbps),
        f2(base.upload_mbps),
    );
    row(
        "  50 Mbit/s budget for 63 clients",
        "50.00".into(),
        "50.00".into(),
    );
    row(
        "  same traffic as zstd -3 frames",
        f2(r.zstd_frame_upload_mbps),
        f2(base.zstd_frame_upload_mbps),
    );
    row(
        "server memory per client, bytes",
        r.client_memory.to_string(),
        base.client_memory.to_string(),
    );
    row(
        "shared world history, bytes",
        r.shared_memory.to_string(),
        base.shared_memory.to_string(),
    );
    row(
        "clients out of sync at the end",
        r.out_of_sync.to_string(),
        base.out_of_sync.to_string(),
    );
}

/// What one scenario measured.
#[derive(Debug, Default)]
struct Report {
    name: &'static str,
    entities: usize,
    raw: usize,
    keyframe: usize,
    /// A keyframe of the last tick: a mid-game state, not a freshly laid scene.
    keyframe_last: usize,
    /// Packet bytes of ticks `DISTANCE..`.
    deltas: Vec<usize>,
    /// Entities changed vs the baseline, ticks `DISTANCE..`.
    changed: Vec<usize>,
    /// `zstd::bulk::compress(raw snapshot, 3)`, ticks `DISTANCE..`: the
    /// snapshots the delta packets carry, so both means cover the same ticks.
    zstd: Vec<usize>,
    /// `zstd::bulk::compress(raw XOR raw of tick i-6, 3)`, ticks `DISTANCE..`.
    zstd_xor: Vec<usize>,
    encode: Duration,
    decode: Duration,
}

fn measure(sc: &Scenario) -> Result<Report, Box<dyn Error>> {
    let mut enc = Encoder::new(sc.schema.clone());
    let mut dec = Decoder::new(sc.schema.clone());
    let mut received: Vec<Snapshot> = Vec::with_capacity(sc.ticks.len());
    let mut packet = Vec::new();
    let first = sc.ticks.first().ok_or("empty scenario")?;
    let mut r = Report {
        name: sc.name,
        entities: first.entity_count(),
        raw: first.raw_len(),
        ..Report::default()
    };
    for (i, snap) in sc.ticks.iter().enumerate() {
        let sequence = (i & 0xffff) as u16;
        let base = match i {
            0 => None,
            1..DISTANCE => Some(0),
            _ => Some(i - DISTANCE),
        };
        let baseline = base.map(|b| Baseline {
            sequence: (b & 0xffff) as u16,
            snapshot: &sc.ticks[b],
        });
        // Schemas with `predict` fields (the quantised racing lobby) also
        // name the prior tick i-12, as the session layer would.
        let prior = (sc.schema.predicts() && i >= 2 * DISTANCE).then_some(i - 2 * DISTANCE);
        let reference = Reference::from(baseline).with_prior(prior.map(|p| Baseline {
            sequence: (p & 0xffff) as u16,
            snapshot: &sc.ticks[p],
        }));
        let t = Instant::now();
        enc.encode_to_vec(snap, sequence, reference, &mut packet)
            .map_err(|e| format!("{}: encoding tick {i}: {e}", sc.name))?;
        let encode = t.elapsed();

        let acked = base.map(|b| Baseline {
            sequence: (b & 0xffff) as u16,
            snapshot: &received[b],
        });
        let mut out = Snapshot::default();
        let t = Instant::now();
        let acked_prior = prior.map(|p| Baseline {
            sequence: (p & 0xffff) as u16,
            snapshot: &received[p],
        });
        let acked = Reference::from(acked).with_prior(acked_prior);
        let header = dec
            .decode_into(&packet, acked, &mut out)
            .map_err(|e| format!("{}: decoding tick {i}: {e}", sc.name))?;
        let decode = t.elapsed();
        if out != *snap || header.sequence != sequence {
            return Err(format!("{}: tick {i} decoded to a different snapshot", sc.name).into());
        }
        received.push(out);

        let raw = raw_bytes(snap);
        match i {
            0 => r.keyframe = packet.len(),
            1..DISTANCE => {}
            _ => {
                let old = &sc.ticks[i - DISTANCE];
                r.zstd.push(zstd::bulk::compress(&raw, ZSTD_LEVEL)?.len());
                r.deltas.push(packet.len());
                r.changed.push(changed_entities(old, snap));
                let xor: Vec<u8> = raw.iter().zip(raw_bytes(old)).map(|(a, b)| a ^ b).collect();
                r.zstd_xor
                    .push(zstd::bulk::compress(&xor, ZSTD_LEVEL)?.len());
                r.encode += encode;
                r.decode += decode;
            }
        }
    }
    let (last, snap) = (sc.ticks.len() - 1, &sc.ticks[sc.ticks.len() - 1]);
    enc.encode_to_vec(snap, (last & 0xffff) as u16, None, &mut packet)?;
    let (_, got) = dec.decode(&packet, None)?;
    if got != *snap {
        return Err(format!("{}: keyframe of tick {last} decoded differently", sc.name).into());
    }
    r.keyframe_last = packet.len();
    Ok(r)
}

/// The largest reconstruction error per quantised field over every tick:
/// the quantised world (what every client decodes) against the original.
fn print_errors(original: &Scenario, quantized: &Scenario) {
    let mut max = Vec::new();
    for (a, b) in original.ticks.iter().zip(&quantized.ticks) {
        tickpack::quant::snapshot_errors(&quantized.schema, a, b, &mut max);
    }
    let mut line = String::from("max reconstruction error:");
    for (ty, m) in quantized.schema.sections().iter().zip(&max) {
        for ((f, q), e) in ty.fields().iter().zip(ty.quantization()).zip(m) {
            if let Some(q) = q {
                let unit = match q {
                    tickpack::quant::Quantize::SmallestThree { .. } => {
                        format!(" rad ({:.3}°)", e.to_degrees())
                    }
                    _ => String::new(),
                };
                line += &format!(" {} {e:.6}{unit} (bound {:.6});", f.name, q.max_error(f.ty));
            }
        }
    }
    println!("{line}");
}

/// All record bytes of a snapshot, section after section.
fn raw_bytes(s: &Snapshot) -> Vec<u8> {
    s.sections()
        .iter()
        .flat_map(|sec| sec.records().iter().copied())
        .collect()
}

fn mean(v: &[usize]) -> f64 {
    v.iter().sum::<usize>() as f64 / v.len().max(1) as f64
}

/// Nearest-rank 95th percentile.
fn p95(v: &[usize]) -> usize {
    let mut s = v.to_vec();
    s.sort_unstable();
    let rank = (s.len() * 95).div_ceil(100).max(1);
    s.get(rank - 1).copied().unwrap_or(0)
}

impl Report {
    fn print(&self, cubes: bool) {
        let n = self.deltas.len();
        println!(
            "\n## {}: {} entities, {} raw bytes per snapshot, {n} delta packets",
            self.name, self.entities, self.raw
        );
        println!(
            "| {:<44} | {:>9} | {:>10} | {:>7} |",
            "", "bytes", "kbps@60Hz", "of raw"
        );
        println!("|{:-<46}|{:->11}|{:->12}|{:->9}|", "", "", "", "");
        let row = |label: &str, bytes: f64| {
            let kbps = bytes * 8.0 * f64::from(TICK_RATE) / 1000.0;
            let pct = 100.0 * bytes / self.raw.max(1) as f64;
            println!("| {label:<44} | {bytes:>9.1} | {kbps:>10.1} | {pct:>6.1}% |");
        };
        row("raw snapshot (sum of record bytes)", self.raw as f64);
        row("zstd -3 of the raw snapshot, mean", mean(&self.zstd));
        row("zstd -3 of raw XOR baseline, mean", mean(&self.zstd_xor));
        row("tickpack keyframe (tick 0)", self.keyframe as f64);
        row("tickpack keyframe (last tick)", self.keyframe_last as f64);
        row("tickpack delta vs tick i-6, mean", mean(&self.deltas));
        row("tickpack delta vs tick i-6, p95", p95(&self.deltas) as f64);
        let changed = mean(&self.changed);
        println!(
            "entities changed vs baseline: mean {changed:.1}, max {}; tickpack encode {:.1} µs, decode {:.1} µs per delta (mean)",
            self.changed.iter().max().copied().unwrap_or(0),
            self.encode.as_secs_f64() * 1e6 / n.max(1) as f64,
            self.decode.as_secs_f64() * 1e6 / n.max(1) as f64,
        );
        if cubes {
            let bits = 8.0 * self.deltas.iter().sum::<usize>() as f64;
            let per_cube = bits / self.changed.iter().sum::<usize>().max(1) as f64;
            println!(
                "tickpack bits per changed cube: {per_cube:.1} (packet bits / cubes changed vs baseline, over all packets)"
            );
            println!(
                "published on the 2015 recording (about 86 cubes changed per packet): Glenn Fiedler 531.95 B \
                 ≈ 49 bits/changed cube, Fabian Giesen 445 B ≈ 41, Richard Maxwell (no loss) ≈ 281 B ≈ 26"
            );
        }
    }
}
