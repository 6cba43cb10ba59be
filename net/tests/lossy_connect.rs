//! Connects over a link that loses half of all datagrams each way, 300 ms
//! each way, on a virtual clock: how long a client waits for its first
//! snapshot, and how old the snapshots it holds are.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Sim, TICK_MS};
use tickpack_net::{ClientConfig, EveryEntity};
use tickpack_testkit::link::LinkConfig;

/// The lobby's cars.
const CARS: u32 = 64;

const HALF_LOST: LinkConfig = LinkConfig {
    loss_ppm: 500_000,
    dup_pct: 0,
    latency_ms: 300,
    jitter_ms: 30,
};

/// What one client saw, in ms of the virtual clock.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// When its connect snapshot was applied, and how old it was then.
    connected: Option<(u64, u64)>,
    /// The oldest its newest snapshot got from a second after that on.
    stalest: u64,
    /// How old its newest snapshot was at the end.
    at_end: u64,
}

fn run(seed_offset: u64) -> Vec<Seen> {
    let mut sim = Sim::new(|_| {}, EveryEntity);
    // Long enough for the handshake at this loss (the lobby's is 10 s).
    sim.token_timeout = Duration::from_secs(10);
    for user in 1..=24 {
        let i = sim.add(user, HALF_LOST, ClientConfig::default());
        let p = &mut sim.peers[i];
        p.up = tickpack_testkit::link::Link::new(HALF_LOST, 1000 + i as u64 + seed_offset);
        p.down = tickpack_testkit::link::Link::new(HALF_LOST, 2000 + i as u64 + seed_offset);
    }
    let mut seen = vec![Seen::default(); sim.peers.len()];
    for t in 0..5_000 / TICK_MS as u32 {
        sim.run(t, 1, CARS);
        let server = sim.server.session().sequence();
        for (s, p) in seen.iter_mut().zip(&sim.peers) {
            let Some((seq, _)) = p.client.latest() else {
                continue;
            };
            let age = u64::from(server.wrapping_sub(seq)) * TICK_MS;
            let (at, _) = *s.connected.get_or_insert((sim.now_ms, age));
            if sim.now_ms >= at + 1_000 {
                s.stalest = s.stalest.max(age);
            }
            s.at_end = age;
        }
    }
    seen
}

/// Failed before the server resent the welcome (clients that got their
/// chunk but never their slot timed out), and before it sent each chunk
/// slice twice (connect snapshots up to 1.1 s old when they landed, 2.1 s
/// a second after the connect). What remains is the protocol's floor: the
/// chunk's one-way trip, then a round trip (the answer up, the first
/// regular snapshot down) before snapshots flow, each retried at 50% loss.
#[test]
fn half_the_datagrams_lost_at_300_ms_still_connect_fast_and_fresh() {
    for seed in [0, 100, 200] {
        let seen = run(seed);
        let report = format!("seed {seed}: {seen:#?}");

        for (i, s) in seen.iter().enumerate() {
            let user = i + 1;
            // A client that never connected fails.
            let (at, age) = s
                .connected
                .unwrap_or_else(|| panic!("user {user} never connected\n{report}"));
            // Two handshake round trips and the chunk, at 50% loss.
            assert!(at <= 4_000, "user {user} connected at {at} ms\n{report}");
            // The connect snapshot is the one taken at the chunk's start.
            assert!(
                age <= 800,
                "user {user}: first snapshot {age} ms old\n{report}"
            );
            // Regular snapshots flow from a round trip after that (the
            // server's clock runs a one-way trip ahead of what arrives).
            assert!(
                s.stalest <= 1_900,
                "user {user}: {} ms behind\n{report}",
                s.stalest
            );
            assert!(
                s.at_end <= 500,
                "user {user} ends {} ms behind\n{report}",
                s.at_end
            );
        }
    }
}
