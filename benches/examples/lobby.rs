//! The racing lobby over real, authenticated UDP sockets on 127.0.0.1.
//!
//! ```sh
//! cargo run --release --example lobby -- --help
//! cargo run --release --example lobby -- --seconds 3 --attack
//! ```
//!
//! One server and `--clients` client sockets (default 63), one event loop
//! at 60 Hz of wall-clock time; loss and latency are injected at every
//! socket. Every client connects with a connect token (challenge and
//! response), every datagram is sealed with ChaCha20-Poly1305 and
//! replay-checked. The connect snapshot goes out as a chunk; then session
//! snapshots with distance-based rate tiers, fragmented and paced by a
//! token bucket per client. Client 1 changes port half-way (NAT rebinding)
//! and the server follows it on its first authenticated packet.
//!
//! The cars are quantised as `tickpack_scenarios::racing_schema_quantized`
//! declares (the server quantises its world every tick) and coded with the
//! shipped set `dictionaries/racing-lobby-quantized/1` (`--untrained`:
//! without); the report gives the largest reconstruction error per
//! quantised field. `--lossless` sends full-precision cars with the shipped
//! set `dictionaries/racing-lobby/1`. Cars within `--near-m` of a client's
//! car go to it every tick, within `--far-m` every 2nd, beyond every 4th;
//! the others are left out of its snapshot (`--hold-far`: held at the
//! baseline's record).
//!
//! `--attack` floods forged acks, chunk slices and acks, fragments,
//! full-snapshot requests, forged and replayed connection packets and junk
//! at the server and the clients.
//!
//! Exits non-zero unless every client's applied state equals what the
//! server sent it (codec sync), no packet was undecodable, and (under
//! attack) no address that never proved it receives there was sent more
//! than it sent. Whether the presented world (jitter buffer and `Persist`,
//! where a car unseen for 20 ticks expires) is complete is reported
//! separately: heavy loss can empty it while the codec stays in sync.

#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use tickpack_benches::lobby_udp::{min_budget_mbps, run, FarCars, LobbyConfig};
use tickpack_session::{RateTiers, DEFAULT_BASELINE_WINDOW};

/// The racing lobby over authenticated UDP on 127.0.0.1: one server and
/// up to 63 clients at 60 Hz, with loss and latency injected at the
/// sockets; exits non-zero if a packet was undecodable or a client ended
/// out of codec sync.
#[derive(Debug, Parser)]
#[command(name = "lobby", version)]
struct Args {
    /// Clients, one car each (car 0 is the host's).
    #[arg(long, default_value_t = 63, value_parser = clap::value_parser!(u16).range(1..=63))]
    clients: u16,
    /// Seconds of ticks to run (at most 600).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Loss in each direction: a fraction (0.05) or a percentage (5%), at
    /// most 90%.
    #[arg(long, default_value = "5%", value_parser = parse_loss)]
    loss: f64,
    /// One-way latency in milliseconds (± 10%), at most 2000.
    #[arg(long = "latency-ms", default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=2000))]
    latency_ms: u64,
    /// The server's upload budget for all clients, Mbit/s.
    #[arg(long = "budget-mbps", default_value_t = 50.0)]
    budget_mbps: f64,
    /// Flood forged traffic at the server and every client.
    #[arg(long)]
    attack: bool,
    /// Scenario and link seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the numbers as one JSON object.
    #[arg(long)]
    json: bool,
    /// Full-precision cars with the shipped trained set, instead of the
    /// quantised racing schema (1 mm, smallest-three 10 bits, 0.01 m/s,
    /// 8-bit controls).
    #[arg(long)]
    lossless: bool,
    /// Quantised cars without their shipped trained set
    /// (`dictionaries/racing-lobby-quantized/1`).
    #[arg(long, conflicts_with = "lossless")]
    untrained: bool,
    /// Hold the cars the rate tiers skip at the baseline's record
    /// (`View::with_held`) instead of leaving them out of the client's
    /// snapshot (`View::filter`).
    #[arg(long)]
    hold_far: bool,
    /// Cars within this many metres of a client's car go to it every tick.
    #[arg(long = "near-m", default_value_t = RateTiers::default().near)]
    near_m: f32,
    /// Cars within this many metres (and beyond --near-m) every 2nd tick,
    /// cars beyond every 4th.
    #[arg(long = "far-m", default_value_t = RateTiers::default().far)]
    far_m: f32,
    /// How many ticks older than a client's newest acked snapshot its
    /// baseline may be when it holds more of the cars sent (0: always the
    /// newest).
    #[arg(long = "baseline-window", default_value_t = DEFAULT_BASELINE_WINDOW)]
    baseline_window: u16,
}

/// A fraction (`0.05`) or, with a `%`, a percentage (`5%`), in [0, 90%].
fn parse_loss(v: &str) -> Result<f64, String> {
    let (number, percent) = match v.strip_suffix('%') {
        Some(n) => (n, true),
        None => (v, false),
    };
    let p: f64 = number.parse().map_err(|e| format!("{e}"))?;
    let p = if percent { p / 100.0 } else { p };
    if (0.0..=0.9).contains(&p) {
        Ok(p)
    } else {
        Err("must be a fraction in [0, 0.9] or a percentage in [0%, 90%]".into())
    }
}

fn main() -> ExitCode {
    let a = Args::parse();
    if !(a.near_m >= 0.0 && a.near_m <= a.far_m && a.far_m.is_finite()) {
        eprintln!("error: need 0 <= --near-m <= --far-m, both finite");
        return ExitCode::FAILURE;
    }
    if !(a.seconds > 0.0 && a.seconds <= 600.0) {
        eprintln!("error: --seconds must be in (0, 600]");
        return ExitCode::FAILURE;
    }
    let min = min_budget_mbps(a.clients);
    if !(a.budget_mbps >= min && a.budget_mbps <= 100_000.0) {
        eprintln!(
            "error: --budget-mbps must be in [{min:.2}, 100000] for {} clients: each client's \
             token bucket must hold at least one 1,200-byte datagram (its burst is a quarter \
             second of its share)",
            a.clients
        );
        return ExitCode::FAILURE;
    }
    let config = LobbyConfig {
        clients: a.clients,
        seconds: a.seconds,
        loss: a.loss,
        latency: Duration::from_millis(a.latency_ms),
        budget_mbps: a.budget_mbps,
        attack: a.attack,
        seed: a.seed,
        lossless: a.lossless,
        untrained: a.untrained,
        far_cars: if a.hold_far {
            FarCars::Held
        } else {
            FarCars::Omitted
        },
        tiers: RateTiers {
            near: a.near_m,
            far: a.far_m,
            ..RateTiers::default()
        },
        baseline_window: a.baseline_window,
    };
    match run(&config) {
        Ok(report) => {
            if a.json {
                println!("{}", report.to_json());
            } else {
                print!("{report}");
            }
            if report.verdict.passed() {
                ExitCode::SUCCESS
            } else {
                eprintln!("FAILED: {:?}", report.verdict);
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
