//! Server cost per tick for 63 clients of the racing lobby, with the ack
//! spread of a 5% lossy link (most clients acked 3 ticks back, a few 4-6),
//! with encodes shared between clients and without.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tickpack::session::{Server, ServerConfig, View};
use tickpack::Snapshot;
use tickpack_scenarios::racing_lobby;

const CLIENTS: u16 = 63;

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
                let lag = if id % 20 == 0 { 4 + id % 3 } else { 3 };
                server.ack(id, seq.wrapping_sub(lag)).ok();
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

criterion_group!(benches, server_tick);
criterion_main!(benches);
