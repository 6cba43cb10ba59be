//! A client whose NAT rebinds during its handshake (issue 38): after its
//! challenge, before the server's welcome reaches it. Its slot must follow
//! it to the new address and snapshots flow there, on a calm link and at
//! half the datagrams lost 300 ms each way.

#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{calm, Sim, TICK_MS};
use tickpack_net::{ClientConfig, EveryEntity, ServerEvent};
use tickpack_testkit::link::{Link, LinkConfig};

const CARS: u32 = 8;

const HALF_LOST: LinkConfig = LinkConfig {
    loss_ppm: 500_000,
    dup_pct: 0,
    latency_ms: 300,
    jitter_ms: 30,
};

fn new_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9999))
}

/// Runs one client on `link` for `ms`, moving it to [`new_addr`] (and
/// dropping what the link still carries to it) once `rebind(&sim)` holds.
/// Returns the sim and the newest snapshot's age at the end, in ticks.
fn run(
    link: LinkConfig,
    seed: u64,
    ms: u64,
    rebind: impl Fn(&Sim<EveryEntity>) -> bool,
) -> (Sim<EveryEntity>, Option<u16>) {
    let mut sim = Sim::new(|_| {}, EveryEntity);
    sim.token_timeout = Duration::from_secs(10);
    let i = sim.add(1, link, ClientConfig::default());
    sim.peers[i].up = Link::new(link, 1000 + seed);
    sim.peers[i].down = Link::new(link, 2000 + seed);
    let mut moved = false;
    for t in 0..(ms / TICK_MS) as u32 {
        if !moved && rebind(&sim) {
            moved = true;
            let p = &mut sim.peers[i];
            p.addr = new_addr();
            p.down = Link::new(link, 3000 + seed);
        }
        sim.run(t, 1, CARS);
    }
    assert!(moved, "seed {seed}: never rebound");
    let age = sim.peers[i]
        .client
        .latest()
        .map(|(seq, _)| sim.server.session().sequence().wrapping_sub(seq));
    (sim, age)
}

fn server_connected(sim: &Sim<EveryEntity>) -> bool {
    sim.events
        .iter()
        .any(|e| matches!(e, ServerEvent::ClientConnected { .. }))
}

/// Failed before a challenge token opened from any address: the server
/// gave the slot at the old address, the welcome went there, and every
/// response from the new address was refused, so the client answered its
/// challenge until it timed out.
#[test]
fn a_rebind_before_the_welcome_still_connects_and_follows() {
    let (sim, age) = run(calm(), 0, 2_000, |sim| {
        server_connected(sim) && !sim.peers[0].client.is_connected()
    });
    let p = &sim.peers[0];
    assert!(
        p.client.is_connected(),
        "{:?}",
        p.client.disconnect_reason()
    );
    let id = sim.server.client_of(1).unwrap();
    assert_eq!(sim.server.address(id), Some(new_addr()));
    assert!(
        age.is_some_and(|a| a <= 6),
        "newest snapshot {age:?} ticks old"
    );
}

/// At half the datagrams lost, 300 ms each way, rebinding at points spread
/// over the handshake (the lobby's `--loss 0.5 --latency-ms 300` case):
/// every client connects, follows and ends at most a second behind.
#[test]
fn a_rebind_during_a_lossy_handshake_ends_less_than_a_second_behind() {
    let second = (1_000 / TICK_MS) as u16;
    for seed in 0..12u64 {
        let at_ms = 200 + seed * 150;
        let (sim, age) = run(HALF_LOST, seed, 6_000, |sim| sim.now_ms >= at_ms);
        let p = &sim.peers[0];
        assert!(
            p.client.is_connected(),
            "seed {seed}, rebind at {at_ms} ms: {:?}",
            p.client.disconnect_reason()
        );
        let id = sim.server.client_of(1).unwrap();
        assert_eq!(sim.server.address(id), Some(new_addr()), "seed {seed}");
        assert!(
            age.is_some_and(|a| a <= second),
            "seed {seed}, rebind at {at_ms} ms: newest snapshot {age:?} ticks old"
        );
    }
}

/// Failed before the server resent path tokens every 100 ms and in answer
/// to the new address's packets, accepted a late echo of a probe that had
/// run out of time (whose token a new probe now reuses), and the client
/// echoed twice: at half the datagrams lost, 300 ms each way, a client
/// that rebound after connecting was followed after 0.7-2.7 s (mean
/// 1.46 s over these seeds), as each echo came back for a token already
/// replaced.
#[test]
fn a_rebind_after_a_lossy_connect_is_followed_within_a_few_round_trips() {
    let mut waits = Vec::new();
    for seed in 0..16u64 {
        let mut sim = Sim::new(|_| {}, EveryEntity);
        sim.token_timeout = Duration::from_secs(10);
        let i = sim.add(1, HALF_LOST, ClientConfig::default());
        sim.peers[i].up = Link::new(HALF_LOST, 1000 + seed);
        sim.peers[i].down = Link::new(HALF_LOST, 2000 + seed);
        let mut seen = 0;
        let mut rebound = None;
        let mut followed = None;
        for t in 0..(6_000 / TICK_MS) as u32 {
            if rebound.is_none() && sim.now_ms >= 2_500 && sim.peers[i].client.is_connected() {
                rebound = Some(sim.now_ms);
                let p = &mut sim.peers[i];
                p.addr = new_addr();
                p.down = Link::new(HALF_LOST, 3000 + seed);
            }
            sim.run(t, 1, CARS);
            let migrated = sim.events[seen..]
                .iter()
                .any(|e| matches!(e, ServerEvent::ClientMigrated { .. }));
            seen = sim.events.len();
            if let (true, Some(at), None) = (migrated, rebound, followed) {
                followed = Some(sim.now_ms - at);
            }
        }
        let Some(at) = rebound else {
            continue; // connected after the rebind time: nothing to follow
        };
        let wait =
            followed.unwrap_or_else(|| panic!("seed {seed}: rebind at {at} ms not followed"));
        assert!(wait <= 2_500, "seed {seed}: followed after {wait} ms");
        waits.push(wait);
    }
    assert!(waits.len() >= 12, "{} seeds rebound", waits.len());
    let mean = waits.iter().sum::<u64>() / waits.len() as u64;
    assert!(mean <= 1_250, "mean wait {mean} ms: {waits:?}");
}
