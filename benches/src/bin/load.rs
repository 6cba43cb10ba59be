//! How many clients one `tickpack_net::Server` holds (issue 38 §2).
//!
//! ```sh
//! cargo run --release -p tickpack-benches --bin load -- bench --clients 256,1024
//! cargo run --release -p tickpack-benches --bin load -- udp
//! cargo run --release -p tickpack-benches --bin load -- soak --minutes 10
//! ```
//!
//! `bench`: one server endpoint, sans-IO, on a virtual clock, each client
//! with its own view and its own lossy link; server time, heap and bytes
//! per client. `udp`: the largest client count that keeps 60 Hz on
//! 127.0.0.1 with every client in sync. `soak`: waves of joins, leaves,
//! timeouts and rebinds; fails if the heap or the endpoint's per-client
//! state does not come back after a wave. Every mode fails if a client
//! ends out of sync.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tickpack_benches::load::bench::{self, LoadConfig, LoadReport};
use tickpack_benches::load::sim::Links;
use tickpack_benches::load::soak::{self, SoakConfig};
use tickpack_benches::load::udp::{self, UdpRun};
use tickpack_testkit::counting::{current, Counting};

// Heap bytes per client and the soak's levels come from this allocator.
#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Debug, Parser)]
#[command(about = "How many clients one tickpack-net server holds")]
struct Args {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// The sans-IO load benchmark.
    Bench {
        /// Client counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [256u16, 1024])]
        clients: Vec<u16>,
        /// Virtual seconds measured per count.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Loss each way, percent.
        #[arg(long, default_value_t = 5)]
        loss: u64,
        /// One-way latency, ms (plus up to 10 ms of jitter).
        #[arg(long, default_value_t = 40)]
        latency: u64,
    },
    /// The largest client count at 60 Hz over UDP on 127.0.0.1.
    Udp {
        /// The first count tried (doubled while it holds).
        #[arg(long, default_value_t = 64)]
        from: u16,
        /// The largest count tried.
        #[arg(long, default_value_t = 4096)]
        max: u16,
        /// The search stops when pass and fail are this close.
        #[arg(long, default_value_t = 32)]
        step: u16,
        /// Seconds measured per run (after 2 s of warm-up).
        #[arg(long, default_value_t = 4.0)]
        seconds: f64,
        /// One run of this many clients instead of the search.
        #[arg(long)]
        only: Option<u16>,
    },
    /// The churn soak.
    Soak {
        /// Minutes of virtual time.
        #[arg(long, conflicts_with = "seconds")]
        minutes: Option<f64>,
        /// Seconds of virtual time (at least three waves run).
        #[arg(long, default_value_t = 25.0)]
        seconds: f64,
        /// Clients connected throughout.
        #[arg(long, default_value_t = 48)]
        standing: u16,
        /// Clients joining per wave.
        #[arg(long, default_value_t = 32)]
        wave: u16,
        /// Level growth over the baseline that fails the run, KiB.
        #[arg(long, default_value_t = 256)]
        tolerance_kib: usize,
        /// Waves before the baseline.
        #[arg(long, default_value_t = 4)]
        warmup: usize,
        /// Waves per window (the lowest level of each is compared).
        #[arg(long, default_value_t = 3)]
        window: usize,
    },
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("load: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    match args.mode {
        Mode::Bench {
            clients,
            seconds,
            loss,
            latency,
        } => {
            let links = Links {
                loss_pct: loss,
                latency_ms: latency,
                jitter_ms: 10,
            };
            println!(
                "sans-IO, virtual clock, {seconds} s measured per count, {loss}% loss each way, \
                 {latency} ms ± 10 ms one way; wall-clock server times (noisy on a shared machine)"
            );
            println!("{}", LoadReport::header());
            let mut reports = Vec::new();
            for n in clients {
                let r = bench::run(
                    &LoadConfig {
                        clients: n,
                        seconds,
                        links,
                        seed: 1,
                    },
                    current,
                )?;
                println!("{}", r.row());
                reports.push(r);
            }
            // Between the smallest and largest count: what one more client
            // costs, without the server's fixed share spread over them.
            if let (Some(a), Some(b)) = (reports.first(), reports.last()) {
                if b.clients > a.clients {
                    let heap =
                        |r: &LoadReport| (r.server_heap_per_client * usize::from(r.clients)) as f64;
                    let extra = f64::from(b.clients - a.clients);
                    println!(
                        "one more client, between {} and {}: {:.1} KiB of server heap",
                        a.clients,
                        b.clients,
                        (heap(b) - heap(a)) / extra / 1024.0
                    );
                }
            }
        }
        Mode::Udp {
            from,
            max,
            step,
            seconds,
            only,
        } => {
            println!("{}", UdpRun::header());
            if let Some(n) = only {
                let r = udp::run(&udp::UdpConfig {
                    clients: n,
                    seconds,
                    warmup: 2.0,
                })?;
                println!("{}", r.row());
            } else {
                let (_, best) = udp::search(from, max, step, seconds, |r| println!("{}", r.row()))?;
                println!("largest count that held 60 Hz in sync: {best}");
            }
        }
        Mode::Soak {
            minutes,
            seconds,
            standing,
            wave,
            tolerance_kib,
            warmup,
            window,
        } => {
            let seconds = minutes.map_or(seconds, |m| m * 60.0);
            let r = soak::run(
                &SoakConfig {
                    seconds,
                    standing,
                    wave,
                    links: Links::ROUGH,
                    seed: 1,
                    tolerance: tolerance_kib * 1024,
                    warmup,
                    window,
                },
                current,
            )?;
            let joined: u64 = r.levels.iter().map(|l| l.joined).sum();
            let left: u64 = r.levels.iter().map(|l| l.left).sum();
            let silenced: u64 = r.levels.iter().map(|l| l.silenced).sum();
            let rebound: u64 = r.levels.iter().map(|l| l.rebound).sum();
            let windows: Vec<usize> = r
                .levels
                .iter()
                .skip(warmup)
                .collect::<Vec<_>>()
                .chunks(window.max(1))
                .map(|c| c.iter().map(|l| l.level).min().unwrap_or(0))
                .collect();
            let highest = windows.iter().max().copied().unwrap_or(0);
            println!(
                "soak passed: {:.0} s virtual in {:.0} s wall, {} waves; {joined} joined, {left} left, \
                 {silenced} timed out, {rebound} rebinds; level baseline {} B, highest window {highest} B \
                 (+{} B, allowed {} B: tolerance {} KiB and the used-token table)",
                r.seconds,
                r.wall,
                r.levels.len(),
                r.baseline,
                highest.saturating_sub(r.baseline),
                r.allowance,
                tolerance_kib
            );
        }
    }
    Ok(())
}
