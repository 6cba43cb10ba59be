//! Hostile datagrams and disconnect reasons: a typed outcome for each,
//! nothing changes for the other clients, misbehaving clients go.

#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;

use common::{calm, client_addr, rough, server_addr, Sim};
use tickpack_net::{
    ClientConfig, ClientEvent, DisconnectReason, EveryEntity, Handled, PayloadError, ServerEvent,
};
use tickpack_session::Hello;
use tickpack_transport::conn;

fn disconnected(sim: &Sim<EveryEntity>, user: u64) -> Option<DisconnectReason> {
    sim.events.iter().find_map(|e| match e {
        ServerEvent::ClientDisconnected {
            user: u, reason, ..
        } if *u == user => Some(*reason),
        _ => None,
    })
}

/// A raw connection-layer client of `user`, connected to the sim's server
/// from `addr`: it can send any payload, authenticated.
fn raw_client(sim: &mut Sim<EveryEntity>, user: u64, addr: SocketAddr) -> conn::Client {
    let mut c = conn::Client::new(sim.now(), server_addr(), sim.token(user), 1200);
    for _ in 0..10 {
        let now = sim.now();
        while let Some(mut d) = c.poll_transmit(now) {
            sim.server.handle(now, addr, &mut d);
        }
        let mut buf = Vec::new();
        while let Some(to) = sim.server.poll_transmit(now, &mut buf) {
            if to == addr {
                let _ = c.handle_datagram(now, server_addr(), &mut buf);
            }
        }
        if c.is_connected() {
            break;
        }
        sim.step(None);
    }
    assert!(c.is_connected());
    c
}

fn send_raw(
    sim: &mut Sim<EveryEntity>,
    c: &mut conn::Client,
    addr: SocketAddr,
    payload: &[u8],
) -> Handled {
    let mut d = Vec::new();
    c.send(sim.now(), payload, &mut d).unwrap();
    sim.server.handle(sim.now(), addr, &mut d)
}

#[test]
fn junk_and_forgeries_are_refused_and_change_nothing() {
    let mut sim = Sim::new(|_| {}, EveryEntity);
    sim.add(1, rough(), ClientConfig::default());
    sim.add(2, calm(), ClientConfig::default());
    sim.run(0, 100, 8);
    let mut rng = 0x1234_5678_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for t in 100..300 {
        let now = sim.now();
        for _ in 0..20 {
            let len = (next() % 1300) as usize;
            let mut junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // A plausible packet kind now and then.
            if let Some(b) = junk.first_mut() {
                *b = [*b, 0x25, 0x00, 0x51][(next() % 4) as usize];
            }
            let from = if next() % 2 == 0 {
                client_addr(0)
            } else {
                SocketAddr::from(([6, 6, 6, 6], 666))
            };
            let mut j = junk.clone();
            assert!(matches!(
                sim.server.handle(now, from, &mut j),
                Handled::Rejected(_) | Handled::Control
            ));
            let mut j = junk;
            let out = sim.peers[1].client.handle(now, server_addr(), &mut j);
            assert!(
                matches!(out, Handled::Rejected(_) | Handled::Control),
                "{out:?}"
            );
        }
        sim.run(t, 1, 8);
    }
    sim.idle(300);
    assert!(sim.server.stats().rejected > 3000);
    assert!(disconnected(&sim, 1).is_none() && disconnected(&sim, 2).is_none());
    for p in &sim.peers {
        assert!(p.client.is_connected());
        assert!(p.client.stats().applied > 150, "user {}", p.user);
    }
    assert!(sim.checked > 300);
}

#[test]
fn a_client_sending_malformed_payloads_is_disconnected_for_bad_traffic() {
    let mut sim = Sim::new(|c| c.bad_payload_limit = 10, EveryEntity);
    sim.add(1, calm(), ClientConfig::default());
    sim.run(0, 30, 8);
    let addr = SocketAddr::from(([10, 9, 9, 9], 9999));
    let mut bad = raw_client(&mut sim, 9, addr);
    sim.run(30, 2, 8);
    let outcomes = [
        (vec![9u8, 1, 2], PayloadError::UnknownChannel),
        (vec![0u8, 1, 2, 3, 4, 5, 6], PayloadError::WrongDirection),
        (vec![1u8, 1, 2], PayloadError::WrongDirection),
    ];
    for (payload, want) in &outcomes {
        assert_eq!(
            send_raw(&mut sim, &mut bad, addr, payload),
            Handled::Malformed(want.clone())
        );
    }
    // Session messages that do not parse.
    for _ in 0..8 {
        let h = send_raw(&mut sim, &mut bad, addr, &[3, 0xff, 0xff, 0xff]);
        assert!(
            matches!(h, Handled::Malformed(PayloadError::Session(_))),
            "{h:?}"
        );
        sim.step(None);
    }
    assert_eq!(disconnected(&sim, 9), Some(DisconnectReason::BadTraffic));
    assert_eq!(disconnected(&sim, 1), None);
    sim.run(40, 60, 8);
    assert!(sim.peers[0].client.is_connected());
    assert!(sim.checked > 50);
}

#[test]
fn an_answer_that_is_not_the_hello_is_refused() {
    let mut sim = Sim::new(|_| {}, EveryEntity);
    let addr = SocketAddr::from(([10, 9, 9, 8], 9998));
    let mut c = raw_client(&mut sim, 5, addr);
    let mut hello = sim.server.session().hello();
    hello.schema_id ^= 1;
    let mut payload = vec![4u8];
    payload.extend_from_slice(&Hello::to_bytes(&hello));
    assert_eq!(
        send_raw(&mut sim, &mut c, addr, &payload),
        Handled::Malformed(PayloadError::HelloMismatch)
    );
    sim.step(None);
    assert_eq!(disconnected(&sim, 5), Some(DisconnectReason::Refused));
}

#[test]
fn a_client_of_another_schema_is_refused_at_connect() {
    let mut sim = Sim::new(|_| {}, EveryEntity);
    let other = tickpack::Schema::builder()
        .entity("car")
        .field("pos", tickpack::Primitive::F32, 2)
        .build()
        .unwrap();
    let token = sim.token(3);
    sim.add(3, calm(), ClientConfig::default());
    sim.peers[0].client = tickpack_net::Client::new(
        sim.now(),
        server_addr(),
        token,
        other,
        ClientConfig::default(),
    )
    .unwrap();
    sim.run(0, 60, 4);
    let p = &sim.peers[0];
    assert!(p.events.contains(&ClientEvent::Disconnected {
        reason: DisconnectReason::Refused
    }));
    assert!(!p.events.contains(&ClientEvent::Connected));
    // The client said goodbye.
    assert_eq!(disconnected(&sim, 3), Some(DisconnectReason::Left));
}

#[test]
fn kicked_timed_out_and_left_clients_are_reported_with_their_reason() {
    let mut sim = Sim::new(|_| {}, EveryEntity);
    for user in 1..=4 {
        sim.add(user, calm(), ClientConfig::default());
    }
    sim.run(0, 60, 6);
    let kicked = sim.server.client_of(1).unwrap();
    assert!(sim.server.kick(sim.now(), kicked));
    sim.peers[1].cut = true; // user 2 goes silent
    let now = sim.now();
    sim.peers[2].client.disconnect(now);
    sim.run(60, 200, 6); // beyond the tokens' 2 s timeout
    assert_eq!(disconnected(&sim, 1), Some(DisconnectReason::Kicked));
    assert_eq!(disconnected(&sim, 2), Some(DisconnectReason::TimedOut));
    assert_eq!(disconnected(&sim, 3), Some(DisconnectReason::Left));
    assert_eq!(disconnected(&sim, 4), None);
    let client_reason = |i: usize| {
        sim.peers[i].events.iter().find_map(|e| match e {
            ClientEvent::Disconnected { reason } => Some(*reason),
            _ => None,
        })
    };
    assert_eq!(client_reason(0), Some(DisconnectReason::Kicked));
    assert_eq!(client_reason(1), Some(DisconnectReason::TimedOut));
    assert_eq!(client_reason(2), Some(DisconnectReason::Left));
    assert_eq!(client_reason(3), None);
    assert!(sim.peers[3].client.is_connected());
    assert_eq!(sim.server.clients().count(), 1);
}
