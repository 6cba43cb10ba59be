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

use std::time::Duration;

use tickpack::Snapshot;
use tickpack_benches::lobby::shipped_racing_quantized_set;
use tickpack_benches::lobby_udp::{view_for, FarCars};
use tickpack_scenarios::{car_positions, racing_lobby, racing_schema_quantized, TICK_RATE};
use tickpack_session::{history_for, RateTiers, Server, ServerConfig, View};
use tickpack_sets::dictset::{DictKind, DictionarySet};

const CLIENTS: u16 = 63;

/// The ack lag of client `id` in ticks, as the bench: 3, for every 20th 4-6.
fn lag(id: u16) -> u16 {
    if id.is_multiple_of(20) {
        4 + id % 3
    } else {
        3
    }
}

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

/// The lobby's server state between ticks: the worlds, each world's car
/// positions and per client the tick each car was last sent.
struct Lobby {
    worlds: Vec<Arc<Snapshot>>,
    cars: Vec<Vec<(u32, [f32; 3])>>,
    last_sent: Vec<Vec<Option<u32>>>,
    rates: RateTiers,
    t: usize,
    /// FNV-1a of every packet's length and bytes, which a speed change
    /// must not move.
    digest: u64,
}

/// One lobby tick as the criterion bench runs it; returns the bytes sent.
#[inline(always)]
fn lobby_tick(server: &mut Server, l: &mut Lobby) -> usize {
    let k = l.t % l.worlds.len();
    let seq = server.begin_tick(l.worlds[k].clone());
    let mut bytes = 0;
    for id in 1..=CLIENTS {
        let sent = &mut l.last_sent[usize::from(id)];
        let view = view_for(&l.rates, FarCars::Omitted, l.t, id, &l.cars[k], sent);
        let p = server
            .send(id, &view)
            .unwrap_or_else(|_| Arc::from(&[][..]));
        bytes += p.len();
        for &b in (p.len() as u32).to_le_bytes().iter().chain(p.iter()) {
            l.digest = (l.digest ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        for &car in view.sent_ids(0).unwrap_or(&[]) {
            if let Some(slot) = sent.get_mut(car as usize) {
                *slot = Some(l.t as u32);
            }
        }
        server.ack(id, seq.wrapping_sub(lag(id))).ok();
    }
    l.t += 1;
    bytes
}

/// The measured lobby ticks, out of line.
#[inline(never)]
fn lobby_pass(server: &mut Server, l: &mut Lobby, n: usize) -> usize {
    (0..n).map(|_| lobby_tick(server, l)).sum()
}

/// The `lobby` mode: 40 warm-up ticks, then `ticks` in [`lobby_pass`].
fn lobby(ticks: usize) -> Result<(), Box<dyn Error>> {
    let sc = racing_lobby(1, 240).quantized("racing lobby, quantised", racing_schema_quantized());
    let set = DictionarySet::load(shipped_racing_quantized_set())?;
    set.fits(&sc.schema)?;
    let worlds: Vec<Arc<Snapshot>> = sc.ticks.into_iter().map(Arc::new).collect();
    let cars: Vec<_> = worlds.iter().map(|w| car_positions(w)).collect();
    let cfg = ServerConfig {
        dictionary: set.dictionary(DictKind::Delta).cloned(),
        keyframe_dictionary: set.dictionary(DictKind::Keyframe).cloned(),
        history: history_for(
            Duration::from_secs(1) / TICK_RATE,
            Duration::from_millis(200),
        ),
        ..ServerConfig::default()
    };
    let mut server = Server::new(set.schema().clone(), cfg)?;
    for id in 1..=CLIENTS {
        server.connect(id);
    }
    let n_cars = cars[0].len();
    let mut l = Lobby {
        worlds,
        cars,
        last_sent: vec![vec![None; n_cars + 1]; usize::from(CLIENTS) + 1],
        rates: RateTiers::default(),
        t: 0,
        digest: 0xcbf2_9ce4_8422_2325,
    };
    for _ in 0..40 {
        lobby_tick(&mut server, &mut l);
    }
    let before = server.stats();
    let bytes = lobby_pass(&mut server, &mut l, ticks);
    let after = server.stats();
    println!(
        "lobby: {ticks} ticks, {CLIENTS} clients: {} bytes per tick, {} encodes per tick, packets {:016x}",
        bytes / ticks.max(1),
        (after.encodes - before.encodes) / ticks.max(1) as u64,
        l.digest
    );
    Ok(())
}
