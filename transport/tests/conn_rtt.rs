//! The round-trip estimate of a connection over a simulated link with a
//! fixed one-way delay.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use tickpack_transport::conn::{Client, ConnectToken, Key, Server, ServerConfig};

const T0: Duration = Duration::from_secs(1_800_000_000);
const STEP: Duration = Duration::from_millis(5);

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Runs client and server for `secs` over a link that delays every
/// datagram by `one_way` each way, the server sending a snapshot and the
/// client an input every step.
fn run(one_way: Duration, secs: u64) -> (Server, Client) {
    let key = Key::generate().unwrap();
    let mut server = Server::new(ServerConfig::new(1, key.clone())).unwrap();
    let token = ConnectToken::issue(
        &key,
        1,
        42,
        T0,
        Duration::from_secs(300),
        Duration::from_secs(5),
    )
    .unwrap();
    let (server_addr, client_addr) = (addr(4000), addr(5000));
    let mut client = Client::new(T0, server_addr, token, 1200);
    let mut up: VecDeque<(Duration, Vec<u8>)> = VecDeque::new();
    let mut down: VecDeque<(Duration, Vec<u8>)> = VecDeque::new();
    let mut now = T0;
    while now < T0 + Duration::from_secs(secs) {
        now += STEP;
        while up.front().is_some_and(|(at, _)| *at <= now) {
            let (_, mut d) = up.pop_front().unwrap();
            let _ = server.handle_datagram(now, client_addr, &mut d);
        }
        while down.front().is_some_and(|(at, _)| *at <= now) {
            let (_, mut d) = down.pop_front().unwrap();
            let _ = client.handle_datagram(now, server_addr, &mut d);
        }
        let mut out = Vec::new();
        if client.send(now, b"input", &mut out).is_ok() {
            up.push_back((now + one_way, out));
        }
        while let Some(d) = client.poll_transmit(now) {
            up.push_back((now + one_way, d));
        }
        let mut out = Vec::new();
        if server.send(now, 0, b"snapshot", &mut out).is_ok() {
            down.push_back((now + one_way, out));
        }
        server.handle_timeout(now);
        while let Some(t) = server.poll_transmit() {
            down.push_back((now + one_way, t.datagram));
        }
    }
    (server, client)
}

#[test]
fn both_ends_estimate_the_round_trip_of_a_delayed_link() {
    let (server, client) = run(Duration::from_millis(40), 5);
    assert!(client.is_connected());
    let near = |d: Duration| d >= Duration::from_millis(80) && d <= Duration::from_millis(90);
    let c = client.rtt().unwrap();
    let s = server.rtt(0).unwrap();
    // One step of granularity on each side of the 80 ms round trip.
    assert!(near(c.smoothed()), "client {c:?}");
    assert!(near(s.smoothed()), "server {s:?}");
    assert!(c.variance() < Duration::from_millis(20), "client {c:?}");
    assert!(c.min() >= Duration::from_millis(80));
    assert_eq!(server.rtt(1), None);
}

#[test]
fn a_longer_delay_gives_a_longer_estimate() {
    let (server, client) = run(Duration::from_millis(150), 8);
    let c = client.rtt().unwrap().smoothed();
    let s = server.rtt(0).unwrap().smoothed();
    assert!(
        c >= Duration::from_millis(300) && c <= Duration::from_millis(310),
        "{c:?}"
    );
    assert!(
        s >= Duration::from_millis(300) && s <= Duration::from_millis(310),
        "{s:?}"
    );
}
