//! What the authenticated connection layer costs per packet: sealing a
//! server payload and opening it on the client, for a racing-lobby
//! snapshot fragment (1,100 bytes) and a client ack (6 bytes); and, beside
//! the seal, the one copy `tickpack-net` makes to put the channel byte and
//! fragment header in front of a part (`assemble_then_seal`), so that copy
//! is priced against the sealing it precedes.

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tickpack_transport::conn::{Client, ConnectToken, Key, Server, ServerConfig};

const PROTOCOL: u64 = 1;

/// A connected server and client.
fn pair() -> (Server, Client, SocketAddr, SocketAddr, Duration) {
    let key = Key::generate().unwrap_or_else(|e| panic!("{e}"));
    let now = Duration::from_secs(1_800_000_000);
    let server_addr = SocketAddr::from(([127, 0, 0, 1], 4000));
    let client_addr = SocketAddr::from(([127, 0, 0, 1], 5000));
    let mut server =
        Server::new(ServerConfig::new(PROTOCOL, key.clone())).unwrap_or_else(|e| panic!("{e}"));
    let token = ConnectToken::issue(
        &key,
        PROTOCOL,
        1,
        now,
        Duration::from_secs(60),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut client = Client::new(now, server_addr, token, 1200);
    let mut t = now;
    while !client.is_connected() {
        t += Duration::from_millis(100);
        if let Some(mut d) = client.poll_transmit(t) {
            let _ = server.handle_datagram(t, client_addr, &mut d);
        }
        while let Some(mut x) = server.poll_transmit() {
            let _ = client.handle_datagram(t, server_addr, &mut x.datagram);
        }
    }
    (server, client, server_addr, client_addr, t)
}

fn seal_open(c: &mut Criterion) {
    let (mut server, mut client, server_addr, client_addr, now) = pair();
    let mut g = c.benchmark_group("conn");
    for len in [1100usize, 6] {
        let payload = vec![0x5a; len];
        g.throughput(Throughput::Bytes(len as u64));
        let mut out = Vec::new();
        g.bench_function(format!("server_seal_{len}"), |b| {
            b.iter(|| black_box(server.send(now, 0, &payload, &mut out).ok()))
        });
        let mut scratch = Vec::with_capacity(len + 8);
        g.bench_function(format!("assemble_then_seal_{len}"), |b| {
            b.iter(|| {
                scratch.clear();
                scratch.extend_from_slice(&[0, 1, 2, 3, 4]);
                scratch.extend_from_slice(black_box(&payload));
                black_box(server.send(now, 0, &scratch, &mut out).ok())
            })
        });
        g.bench_function(format!("assemble_{len}"), |b| {
            b.iter(|| {
                scratch.clear();
                scratch.extend_from_slice(&[0, 1, 2, 3, 4]);
                scratch.extend_from_slice(black_box(&payload));
                black_box(scratch.len())
            })
        });
        g.bench_function(format!("client_open_{len}"), |b| {
            b.iter_batched_ref(
                || {
                    let mut d = Vec::new();
                    let _ = server.send(now, 0, &payload, &mut d);
                    d
                },
                |d| black_box(client.handle_datagram(now, server_addr, d).is_ok()),
                criterion::BatchSize::SmallInput,
            )
        });
        g.bench_function(format!("client_seal_server_open_{len}"), |b| {
            b.iter_batched_ref(
                || {
                    let mut d = Vec::new();
                    let _ = client.send(now, &payload, &mut d);
                    d
                },
                |d| black_box(server.handle_datagram(now, client_addr, d).is_ok()),
                criterion::BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, seal_open);
criterion_main!(benches);
