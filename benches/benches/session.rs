//! Server cost per tick for 63 clients of the racing lobby, with the ack
//! spread of a 5% lossy link (most clients acked 3 ticks back, a few 4-6):
//! every client seeing the whole world, with encodes shared between
//! clients and without; and the UDP lobby's own tick (quantised cars, the
//! shipped quantised set, a rate-tier view per client) without its sockets.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tickpack::Snapshot;
use tickpack_benches::lobby::shipped_racing_quantized_set;
use tickpack_benches::lobby_udp::{view_for, FarCars};
use tickpack_scenarios::{car_positions, racing_lobby, racing_schema_quantized, TICK_RATE};
use tickpack_session::{history_for, RateTiers, Server, ServerConfig, View};
use tickpack_sets::dictset::{DictKind, DictionarySet};

const CLIENTS: u16 = 63;

/// The ack lag of client `id` in ticks: 3, for every 20th 4-6.
fn lag(id: u16) -> u16 {
    if id.is_multiple_of(20) {
        4 + id % 3
    } else {
        3
    }
}

fn server_tick(c: &mut Criterion) {
    let sc = racing_lobby(1, 240);
    let worlds: Vec<Arc<Snapshot>> = sc.ticks.into_iter().map(Arc::new).collect();
    let mut g = c.benchmark_group("session/racing64_63_clients");
    g.throughput(Throughput::Elements(1));
    for share in [true, false] {
        let cfg = ServerConfig {
            share_encodes: share,
            ..ServerConfig::default()
        };
        let mut server = Server::new(sc.schema.clone(), cfg).unwrap_or_else(|e| panic!("{e}"));
        for id in 1..=CLIENTS {
            server.connect(id);
        }
        // Warm up: every client has acked something.
        let mut t = 0usize;
        let mut step = |server: &mut Server| {
            let seq = server.begin_tick(worlds[t % worlds.len()].clone());
            for id in 1..=CLIENTS {
                black_box(server.send(id, &View::all()).ok());
                server.ack(id, seq.wrapping_sub(lag(id))).ok();
            }
            t += 1;
        };
        for _ in 0..40 {
            step(&mut server);
        }
        let name = if share {
            "tick_shared"
        } else {
            "tick_unshared"
        };
        g.bench_function(name, |b| b.iter(|| step(&mut server)));
    }
    g.finish();
}

/// The lobby's server tick as `--example lobby` runs it by default, without
/// sockets, pacing or the `View::all` shadow server: the quantised racing
/// world of seed 1, the shipped quantised set, and per client the view its
/// rate tiers give (cars omitted when not due), acked as above.
fn lobby_tick(c: &mut Criterion) {
    let sc = racing_lobby(1, 240).quantized("racing lobby, quantised", racing_schema_quantized());
    let set = DictionarySet::load(shipped_racing_quantized_set()).unwrap_or_else(|e| panic!("{e}"));
    set.fits(&sc.schema).unwrap_or_else(|e| panic!("{e}"));
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
    let mut server = Server::new(set.schema().clone(), cfg).unwrap_or_else(|e| panic!("{e}"));
    for id in 1..=CLIENTS {
        server.connect(id);
    }
    let rates = RateTiers::default();
    let cars_in_world = cars[0].len();
    let mut last_sent = vec![vec![None; cars_in_world + 1]; usize::from(CLIENTS) + 1];
    let mut t = 0usize;
    let mut step = |server: &mut Server| {
        let k = t % worlds.len();
        let seq = server.begin_tick(worlds[k].clone());
        for id in 1..=CLIENTS {
            let sent = &mut last_sent[usize::from(id)];
            let view = view_for(&rates, FarCars::Omitted, t, id, &cars[k], sent);
            black_box(server.send(id, &view).ok());
            for &car in view.sent_ids(0).unwrap_or(&[]) {
                if let Some(slot) = sent.get_mut(car as usize) {
                    *slot = Some(t as u32);
                }
            }
            server.ack(id, seq.wrapping_sub(lag(id))).ok();
        }
        t += 1;
    };
    for _ in 0..40 {
        step(&mut server);
    }
    let mut g = c.benchmark_group("session/lobby_63_clients");
    g.throughput(Throughput::Elements(1));
    g.bench_function("tick_views_quantized_set", |b| b.iter(|| step(&mut server)));
    g.finish();
}

criterion_group!(benches, server_tick, lobby_tick);
criterion_main!(benches);
