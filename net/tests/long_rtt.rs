//! Long round trips on a virtual clock: each client's ring (and the
//! client's history) grows to its measured round trip, so acks keep naming
//! held snapshots and no resync follows the connect; a peer whose round
//! trip is (or is made to look) huge costs no more than the configured cap.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Sim, TICK_MS};
use tickpack_net::{ClientConfig, EveryEntity};
use tickpack_testkit::link::LinkConfig;

fn far(latency_ms: u64) -> LinkConfig {
    LinkConfig {
        loss_ppm: 50_000,
        dup_pct: 0,
        latency_ms,
        jitter_ms: 30,
    }
}

#[test]
fn a_300_ms_link_needs_no_resync_after_connect() {
    let mut sim = Sim::new(|c| c.tick = Duration::from_millis(TICK_MS), EveryEntity);
    let client = ClientConfig {
        jitter: tickpack_transport::JitterConfig {
            tick: Duration::from_millis(TICK_MS),
            ..Default::default()
        },
        ..ClientConfig::default()
    };
    for user in 1..=3 {
        sim.add(user, far(300), client.clone());
    }
    sim.run(0, 1500, 12);
    let cap = tickpack_session::history_for(
        Duration::from_millis(TICK_MS),
        tickpack_net::DEFAULT_MAX_ROUND_TRIP,
    );
    for p in &sim.peers {
        let id = sim.server.client_of(p.user).unwrap();
        let stats = sim.server.peer_stats(id).unwrap();
        // Every regular snapshot was a delta: the connect was the only full.
        assert_eq!(stats.full, 0, "user {}: {stats:?}", p.user);
        assert_eq!(p.client.session().stats().resyncs, 0, "user {}", p.user);
        assert!(p.client.stats().applied > 900, "user {}", p.user);
        // The ring grew past the default 32 for a ~630 ms round trip, and
        // stays within the cap.
        let ring = sim.server.session().history(id.index()).unwrap();
        assert!((70..=cap).contains(&ring), "user {}: ring {ring}", p.user);
        let memory = sim.server.session().client_memory(id.index()).unwrap();
        // About 100 bytes a slot for these 12 cars (the worlds are shared).
        assert!(memory < cap * 256, "user {}: {memory} bytes", p.user);
    }
    assert!(sim.checked > 3000, "only {} checks", sim.checked);
}

#[test]
fn a_huge_round_trip_costs_no_more_than_the_cap() {
    let max_round_trip = Duration::from_millis(400);
    let mut sim = Sim::new(
        |c| {
            c.tick = Duration::from_millis(TICK_MS);
            c.max_round_trip = max_round_trip;
        },
        EveryEntity,
    );
    // A peer that holds its pongs back looks like a long link: 1.2 s.
    sim.add(1, far(600), ClientConfig::default());
    sim.run(0, 600, 12);
    let id = sim.server.client_of(1).unwrap();
    let rtt = sim.server.rtt(id).unwrap().smoothed();
    assert!(rtt > Duration::from_millis(1100), "{rtt:?}");
    let cap = tickpack_session::history_for(Duration::from_millis(TICK_MS), max_round_trip);
    assert_eq!(sim.server.session().history(id.index()), Some(cap));
    let memory = sim.server.session().client_memory(id.index()).unwrap();
    assert!(memory < cap * 256, "{memory} bytes");
}

/// Failed before the client resent its chunk's final ack with its answer:
/// with that ack lost, the server learned the chunk arrived only from the
/// ack to the next resent slice, one chunk resend delay (here 5 s) later.
#[test]
fn a_lost_final_chunk_ack_is_resent_with_the_answer() {
    let mut sim = Sim::new(
        |c| c.chunk.resend = tickpack_transport::ResendDelay::Fixed(Duration::from_secs(5)),
        EveryEntity,
    );
    sim.add(1, common::calm(), ClientConfig::default());
    let mut t = 0;
    while !sim.peers[0].client.is_connected() {
        sim.run(t, 1, 12);
        t += 1;
        assert!(t < 200, "never connected");
    }
    // Everything the client sent with the chunk's completion is lost.
    while sim.peers[0].up.drop_at(0) {}
    sim.run(t, 60, 12);
    let id = sim.server.client_of(1).unwrap();
    assert!(sim.server.is_ready(id), "not ready within 1 s");
}
