//! A harness for instruction counts of the server tick the criterion
//! `session` bench times (`session/racing64_63_clients/tick_shared`): the
//! racing lobby of seed 1, 63 clients seeing the whole world, acked 3
//! ticks back (every 20th 4-6), encodes shared. After 40 warm-up ticks it
//! runs `ticks` ticks in `tick_pass` (out of line, so callgrind can count
//! it alone) and prints the bytes sent and the encoder runs.
//!
//! ```sh
//! cargo build --release -p tickpack-benches --example session_profile
//! valgrind --tool=callgrind --collect-atstart=no \
//!     --toggle-collect='session_profile::tick_pass' \
//!     target/release/examples/session_profile 20
//! ```
//!
//! Arguments: `[ticks] [shared|unshared|lobby]` (default `20 shared`).
//! `lobby` is the bench's `session/lobby_63_clients` tick instead: quantised
//! cars, the shipped quantised set, a rate-tier view per client.
#![forbid(unsafe_code)]

use std::error::Error;
use std::sync::Arc;

use tickpack::Snapshot;
use tickpack_benches::lobby_tick::{lag, LobbyTick, CLIENTS};
use tickpack_scenarios::racing_lobby;
use tickpack_session::{Server, ServerConfig, View};

/// The measured ticks: [`ticks`] out of line.
#[inline(never)]
fn tick_pass(server: &mut Server, worlds: &[Arc<Snapshot>], t: &mut usize, n: usize) -> usize {
    ticks(server, worlds, t, n)
}

/// The warm-up ticks (every client has acked something after them).
#[inline(never)]
fn warm_up(server: &mut Server, worlds: &[Arc<Snapshot>], t: &mut usize, n: usize) -> usize {
    ticks(server, worlds, t, n)
}

/// Runs `n` server ticks from tick `t`; returns the bytes sent.
#[inline(always)]
fn ticks(server: &mut Server, worlds: &[Arc<Snapshot>], t: &mut usize, n: usize) -> usize {
    let mut bytes = 0;
    for _ in 0..n {
        let seq = server.begin_tick(worlds[*t % worlds.len()].clone());
        for id in 1..=CLIENTS {
            bytes += server.send(id, &View::all()).map_or(0, |p| p.len());
            server.ack(id, seq.wrapping_sub(lag(id))).ok();
        }
        *t += 1;
    }
    bytes
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let ticks: usize = args.get(1).map_or(Ok(20), |s| s.parse())?;
    let mode = args.get(2).map(String::as_str);
    if mode == Some("lobby") {
        return lobby(ticks);
    }
    let share = mode != Some("unshared");
    let sc = racing_lobby(1, 240);
    let worlds: Vec<Arc<Snapshot>> = sc.ticks.into_iter().map(Arc::new).collect();
    let cfg = ServerConfig {
        share_encodes: share,
        ..ServerConfig::default()
    };
    let mut server = Server::new(sc.schema.clone(), cfg)?;
    for id in 1..=CLIENTS {
        server.connect(id);
    }
    let mut t = 0usize;
    warm_up(&mut server, &worlds, &mut t, 40);
    let before = server.stats();
    let bytes = tick_pass(&mut server, &worlds, &mut t, ticks);
    let after = server.stats();
    println!(
        "{ticks} ticks, {CLIENTS} clients, shared {share}: {} bytes per tick, {} encodes per tick",
        bytes / ticks.max(1),
        (after.encodes - before.encodes) / ticks.max(1) as u64
    );
    Ok(())
}

/// The measured lobby ticks, out of line; returns the bytes sent and
/// folds every packet's length and bytes into `digest` (FNV-1a), which a
/// speed change must not move.
#[inline(never)]
fn lobby_pass(server: &mut Server, lobby: &mut LobbyTick, n: usize, digest: &mut u64) -> usize {
    let mut bytes = 0;
    for _ in 0..n {
        lobby.step(server, |p| {
            let p = p.unwrap_or_else(|_| Arc::from(&[][..]));
            bytes += p.len();
            for &b in (p.len() as u32).to_le_bytes().iter().chain(p.iter()) {
                *digest = (*digest ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        });
    }
    bytes
}

/// The `lobby` mode: 40 warm-up ticks, then `ticks` in [`lobby_pass`].
fn lobby(ticks: usize) -> Result<(), Box<dyn Error>> {
    let (mut server, mut lobby) = LobbyTick::new()?;
    for _ in 0..40 {
        lobby.step(&mut server, drop);
    }
    let before = server.stats();
    let mut digest = 0xcbf2_9ce4_8422_2325;
    let bytes = lobby_pass(&mut server, &mut lobby, ticks, &mut digest);
    let after = server.stats();
    println!(
        "lobby: {ticks} ticks, {CLIENTS} clients: {} bytes per tick, {} encodes per tick, packets {digest:016x}",
        bytes / ticks.max(1),
        (after.encodes - before.encodes) / ticks.max(1) as u64,
    );
    Ok(())
}
