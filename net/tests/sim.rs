//! A simulated lobby on a virtual clock with loss, reordering and
//! duplication: every client applies exactly what the server sent it.

#![allow(clippy::unwrap_used)]

mod common;

use common::{calm, rough, Sim};
use tickpack_net::{ClientConfig, ClientEvent, EveryEntity, ServerEvent, Skipped, Tiered};
use tickpack_session::RateTiers;

fn positions(world: &tickpack::Snapshot) -> Vec<(u32, [f32; 3])> {
    let Some(s) = world.sections().first() else {
        return Vec::new();
    };
    s.iter()
        .map(|(id, rec)| {
            let f = |i: usize| f32::from_le_bytes(rec[i * 4..i * 4 + 4].try_into().unwrap());
            (id, [f(0), f(1), f(2)])
        })
        .collect()
}

#[test]
fn clients_on_rough_links_apply_what_the_server_sent_them() {
    let mut sim = Sim::new(|_| {}, EveryEntity);
    for user in 1..=4 {
        let link = if user % 2 == 0 { rough() } else { calm() };
        sim.add(user, link, ClientConfig::default());
    }
    sim.run(0, 600, 12);
    sim.idle(500);
    for p in &sim.peers {
        assert!(p.client.is_connected(), "user {}", p.user);
        assert!(p.events.contains(&ClientEvent::Connected));
        let applied = p.client.stats().applied;
        assert!(applied > 300, "user {} applied only {applied}", p.user);
        assert_eq!(p.client.stats().undecodable, 0);
        // The presented world shows the cars (12, one may be despawned).
        let shown = p.client.presented().sections()[0].len();
        assert!(shown >= 11, "user {} presents {shown} cars", p.user);
    }
    assert!(sim.checked > 1500, "only {} checks", sim.checked);
    // The connection layer's round trip reaches the endpoints' callers
    // (20 ms each way on the calm links).
    let id = sim.server.client_of(1).unwrap();
    let rtt = sim.server.rtt(id).unwrap().smoothed();
    assert!(rtt >= std::time::Duration::from_millis(40), "{rtt:?}");
    assert!(sim.peers[0].client.rtt().is_some());
    let ready = sim
        .events
        .iter()
        .filter(|e| matches!(e, ServerEvent::ClientReady { .. }))
        .count();
    assert_eq!(ready, 4);
}

#[test]
fn rate_tiers_with_held_cars_stay_in_sync() {
    let tiers = RateTiers {
        near: 50.0,
        far: 150.0,
        stagger: false,
    };
    let mut sim = Sim::new(|_| {}, Tiered::new(tiers, Skipped::Held, positions));
    let config = ClientConfig {
        news_only: true,
        ..ClientConfig::default()
    };
    for user in 1..=3 {
        sim.add(user, rough(), config.clone());
    }
    sim.run(0, 400, 10);
    sim.idle(300);
    for p in &sim.peers {
        assert!(p.client.stats().applied > 150, "user {}", p.user);
    }
    assert!(sim.checked > 600, "only {} checks", sim.checked);
    // Far cars go out less often than every tick: fewer bytes than all.
    let id = sim.server.client_of(1).unwrap();
    let stats = sim.server.peer_stats(id).unwrap();
    assert!(stats.ticks > 0 && stats.green + stats.yellow > 0);
}

#[test]
fn pacing_holds_snapshots_back_and_the_stream_recovers() {
    // 2 kB/s per client: most ticks are over budget.
    let mut sim = Sim::new(
        |c| c.pacing = tickpack_transport::TokenBucketConfig::for_rate(2_000).with_min_burst(1228),
        EveryEntity,
    );
    sim.add(1, rough(), ClientConfig::default());
    sim.run(0, 300, 30);
    sim.idle(300);
    let id = sim.server.client_of(1).unwrap();
    let stats = sim.server.peer_stats(id).unwrap();
    assert!(stats.held_back > 0, "{stats:?}");
    assert!(sim.peers[0].client.stats().applied > 5);
    assert!(sim.checked > 0);
}

#[test]
fn large_worlds_go_out_in_fragments() {
    let mut sim = Sim::new(
        |c| c.pacing = tickpack_transport::TokenBucketConfig::for_rate(1_000_000),
        EveryEntity,
    );
    sim.add(1, calm(), ClientConfig::default());
    // 400 cars of 13 bytes: the connect snapshot and resyncs exceed a datagram.
    sim.run(0, 120, 400);
    sim.idle(200);
    assert!(sim.peers[0].client.stats().applied > 100);
    assert!(sim.checked > 100);
    let id = sim.server.client_of(1).unwrap();
    let stats = sim.server.peer_stats(id).unwrap();
    assert!(stats.bytes / stats.ticks > 1200, "{stats:?}");
}
