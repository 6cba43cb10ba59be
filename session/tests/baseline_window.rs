//! Entities sent at a reduced rate are in only some of a client's acked
//! snapshots. The server codes against the acked snapshot, up to
//! `baseline_window` ticks older than the newest, that holds the most of
//! what it sends, and the client decodes it from its own ring.

#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::Arc;

use tickpack::{Primitive, Schema, Snapshot};
use tickpack_session::{Client, ClientConfig, Received, Server, ServerConfig, View};

/// Cars 0-3 go out every tick, cars 4-7 on every 4th sequence.
const NEAR: u32 = 4;
const CARS: u32 = 8;
/// Ticks between a packet and its ack reaching the server.
const ACK_DELAY: usize = 5;

fn schema() -> Schema {
    Schema::builder()
        .entity("car")
        .field("x", Primitive::F32, 1)
        .build()
        .unwrap()
}

fn world(schema: &Schema, tick: u32) -> Arc<Snapshot> {
    let mut w = Snapshot::new(schema);
    let s = w.section_mut(0).unwrap();
    for id in 0..CARS {
        let x = (tick * (id + 1)) as f32 * 0.25;
        s.insert(id, &x.to_le_bytes()).unwrap();
    }
    Arc::new(w)
}

fn view(sequence: u16) -> View {
    let far = sequence.is_multiple_of(4);
    View::filter(vec![(0..CARS).filter(|&id| id < NEAR || far).collect()])
}

/// Runs 80 ticks with acks delayed by [`ACK_DELAY`]; returns per packet its
/// sequence and baseline, and the bytes sent.
fn run(window: u16) -> (Vec<(u16, Option<u16>)>, u64) {
    let schema = schema();
    let mut server = Server::new(
        schema.clone(),
        ServerConfig {
            baseline_window: window,
            ..ServerConfig::default()
        },
    )
    .unwrap();
    let mut client = Client::new(schema.clone(), ClientConfig::default()).unwrap();
    let answer = client.answer(&server.hello().to_bytes()).unwrap();
    server.accept(1, &answer).unwrap();
    let mut acks = VecDeque::new();
    let mut applied = Vec::new();
    for tick in 1..=80 {
        let w = world(&schema, tick);
        let seq = server.begin_tick(w.clone());
        let v = view(seq);
        let packet = server.send(1, &v).unwrap();
        match client.receive(&packet) {
            Received::Applied { sequence, baseline } => applied.push((sequence, baseline)),
            r => panic!("tick {tick}: {r:?}"),
        }
        let mut expect = Snapshot::default();
        v.apply(&w, &mut expect);
        assert_eq!(
            client.latest().map(|(_, s)| s),
            Some(&expect),
            "tick {tick}"
        );
        acks.push_back(client.message().to_bytes());
        if acks.len() > ACK_DELAY {
            let m = acks.pop_front().unwrap();
            server.handle_message(1, &m).unwrap();
        }
    }
    // Full snapshots until the first ack arrives.
    assert_eq!(server.stats().full, ACK_DELAY as u64 + 1);
    assert_eq!(client.stats().unknown_baseline, 0);
    (applied, server.stats().bytes)
}

/// Failed before the window: every packet named the newest acked
/// snapshot, which on three ticks of four lacks the far cars.
#[test]
fn a_packet_sending_far_cars_is_coded_against_an_acked_snapshot_that_sent_them() {
    let (applied, bytes) = run(3);
    let (newest, newest_bytes) = run(0);
    let mut older = 0;
    for (&(seq, base), &(_, newest_base)) in applied.iter().zip(&newest).skip(12) {
        let (base, newest_base) = (base.unwrap(), newest_base.unwrap());
        assert_eq!(seq.wrapping_sub(newest_base), ACK_DELAY as u16 + 1);
        if seq.is_multiple_of(4) {
            // The far cars went out on the acked multiples of 4 only.
            assert!(base.is_multiple_of(4), "packet {seq} against {base}");
            older += usize::from(base != newest_base);
        } else {
            // Near cars only: every acked snapshot holds them; the newest.
            assert_eq!(base, newest_base, "packet {seq}");
        }
    }
    assert!(older > 10, "{older}");
    assert!(bytes < newest_bytes, "{bytes} vs {newest_bytes}");
}

/// Within the window only: an acked snapshot further back than the window
/// is never taken, however much more it holds.
#[test]
fn the_window_bounds_how_far_back_the_baseline_goes() {
    for window in [0u16, 1, 2] {
        let (applied, _) = run(window);
        for &(seq, base) in applied.iter().skip(12) {
            let d = seq.wrapping_sub(base.unwrap());
            let newest = ACK_DELAY as u16 + 1;
            assert!(
                (newest..=newest + window).contains(&d),
                "{window}: {seq} {d}"
            );
        }
    }
}
