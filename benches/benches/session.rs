//! Server cost per tick for 63 clients of the racing lobby, with the ack
//! spread of a 5% lossy link (most clients acked 3 ticks back, a few 4-6):
//! every client seeing the whole world, with encodes shared between
//! clients and without; and the UDP lobby's own tick (quantised cars, the
//! shipped quantised set, a rate-tier view per client) without its sockets.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tickpack::Snapshot;
use tickpack_benches::lobby_tick::{lag, LobbyTick, CLIENTS};
use tickpack_scenarios::racing_lobby;
use tickpack_session::{Server, ServerConfig, View};

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
    let (mut server, mut lobby) = LobbyTick::new().unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..40 {
        lobby.step(&mut server, |p| drop(black_box(p)));
    }
    let mut g = c.benchmark_group("session/lobby_63_clients");
    g.throughput(Throughput::Elements(1));
    g.bench_function("tick_views_quantized_set", |b| {
        b.iter(|| lobby.step(&mut server, |p| drop(black_box(p))))
    });
    g.finish();
}

criterion_group!(benches, server_tick, lobby_tick);
criterion_main!(benches);
