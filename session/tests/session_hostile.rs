//! Spoofed session packets (issue reproductions): a forged keyframe far
//! ahead must not stall the client, and repeated drops lead to a full
//! snapshot that is applied.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tickpack::{Primitive, Schema, Snapshot};
use tickpack_session::{
    AckOutcome, Client, ClientConfig, DropReason, Received, Server, ServerConfig, View,
    DEFAULT_RESYNC_AFTER,
};

fn schema() -> Schema {
    Schema::builder()
        .entity("car")
        .field("x", Primitive::F32, 1)
        .build()
        .unwrap()
}

fn world(schema: &Schema, tick: u32) -> Arc<Snapshot> {
    let mut w = Snapshot::new(schema);
    for id in 0..4u32 {
        let x = (tick * 4 + id) as f32;
        w.section_mut(0)
            .unwrap()
            .insert(id, &x.to_le_bytes())
            .unwrap();
    }
    Arc::new(w)
}

/// A small, valid keyframe of an empty world, re-labelled with `sequence`.
fn forged_keyframe(schema: &Schema, sequence: u16) -> Vec<u8> {
    let mut other = Server::new(schema.clone(), ServerConfig::default()).unwrap();
    other.connect(9);
    other.begin_tick(Arc::new(Snapshot::new(schema)));
    let mut packet = other.send(9, &View::all()).unwrap().to_vec();
    packet[1..3].copy_from_slice(&sequence.to_le_bytes());
    packet
}

struct Game {
    schema: Schema,
    server: Server,
    client: Client,
    tick: u32,
}

impl Game {
    fn new() -> Self {
        let schema = schema();
        let mut server = Server::new(schema.clone(), ServerConfig::default()).unwrap();
        server.connect(1);
        let client = Client::new(schema.clone(), ClientConfig::default()).unwrap();
        Self {
            schema,
            server,
            client,
            tick: 0,
        }
    }

    /// One tick: the server sends, the client receives (after `inject`
    /// packets, if any) and acks.
    fn tick(&mut self, inject: &[Vec<u8>]) -> Received {
        self.tick += 1;
        let w = world(&self.schema, self.tick);
        self.server.begin_tick(w);
        let packet = self.server.send(1, &View::all()).unwrap();
        for p in inject {
            self.client.receive(p);
        }
        let r = self.client.receive(&packet);
        self.server
            .handle_message(1, &self.client.message().to_bytes())
            .unwrap();
        r
    }

    fn in_sync(&self) -> bool {
        self.client.latest().map(|(_, s)| s) == Some(&*world(&self.schema, self.tick))
    }
}

#[test]
fn a_forged_keyframe_32767_ahead_is_dropped_and_real_packets_apply() {
    let mut g = Game::new();
    for _ in 0..5 {
        assert!(matches!(g.tick(&[]), Received::Applied { .. }));
    }
    let newest = g.client.ack().unwrap();
    let forged = forged_keyframe(&g.schema, newest.wrapping_add(32767));
    assert!(
        forged.len() <= 16,
        "forged keyframe of {} bytes",
        forged.len()
    );
    assert!(matches!(
        g.client.receive(&forged),
        Received::Dropped(DropReason::TooFarAhead { .. })
    ));
    for _ in 0..5 {
        assert!(matches!(g.tick(&[]), Received::Applied { .. }));
        assert!(g.in_sync());
    }
}

#[test]
fn a_forged_keyframe_within_the_jump_bound_costs_a_resync_not_minutes() {
    let mut g = Game::new();
    for _ in 0..5 {
        g.tick(&[]);
    }
    let newest = g.client.ack().unwrap();
    let forged = forged_keyframe(&g.schema, newest.wrapping_add(1000));
    assert!(matches!(
        g.client.receive(&forged),
        Received::Applied { .. }
    ));
    // Every real packet now looks stale; after DEFAULT_RESYNC_AFTER of them
    // the client asks for a full snapshot and applies it.
    let mut ticks = 0;
    while !g.in_sync() {
        g.tick(&[]);
        ticks += 1;
        assert!(ticks < DEFAULT_RESYNC_AFTER + 4, "still out of sync");
    }
    assert_eq!(g.client.stats().resyncs, 1);
    for _ in 0..5 {
        assert!(matches!(
            g.tick(&[]),
            Received::Applied {
                baseline: Some(_),
                ..
            }
        ));
        assert!(g.in_sync());
    }
}

#[test]
fn repeated_undecodable_packets_ask_for_a_full_snapshot() {
    let mut g = Game::new();
    for _ in 0..3 {
        g.tick(&[]);
    }
    for _ in 0..DEFAULT_RESYNC_AFTER {
        g.client.receive(&[1, 0, 0, 0, 0]);
    }
    assert!(g.client.message().request_full);
    g.tick(&[]);
    assert!(g.in_sync());
}

/// [`schema`] with `x` predicted from two baselines: a delta also names a
/// prior.
fn predicted_schema() -> Schema {
    Schema::builder()
        .entity("car")
        .field_with(tickpack::Field {
            name: "x".into(),
            ty: Primitive::F32,
            len: 1,
            delta: Some(tickpack::DeltaOp::Predict),
        })
        .build()
        .unwrap()
}

#[test]
fn a_request_for_a_full_snapshot_forgets_every_earlier_ack() {
    // A predicted field: a delta also names a prior, which must be a
    // snapshot the (restarted) client acked after its request.
    let schema = predicted_schema();
    let config = ServerConfig {
        history: 64,
        ..ServerConfig::default()
    };
    let mut server = Server::new(schema.clone(), config).unwrap();
    server.connect(1);
    let mut client = Client::new(schema.clone(), ClientConfig::default()).unwrap();
    let mut tick = 0;
    let mut step = |server: &mut Server, client: &mut Client| {
        tick += 1;
        let w = world(&schema, tick);
        server.begin_tick(w.clone());
        let packet = server.send(1, &View::all()).unwrap();
        let got = client.receive(&packet);
        server
            .handle_message(1, &client.message().to_bytes())
            .unwrap();
        assert_eq!(client.latest().map(|(_, s)| s), Some(&*w), "tick {tick}");
        got
    };
    for _ in 0..40 {
        step(&mut server, &mut client);
    }
    // The client restarts: it holds nothing, and asks for a full snapshot.
    let mut client = Client::new(schema.clone(), ClientConfig::default()).unwrap();
    client.request_full();
    server
        .handle_message(1, &client.message().to_bytes())
        .unwrap();
    assert_eq!(server.acked(1), None);
    let full_before = server.stats().full;
    assert!(matches!(
        step(&mut server, &mut client),
        Received::Applied { baseline: None, .. }
    ));
    assert_eq!(server.stats().full, full_before + 1);
    // Every later packet decodes with what the new client holds: no
    // baseline or prior from before the request.
    for _ in 0..20 {
        assert!(matches!(
            step(&mut server, &mut client),
            Received::Applied {
                baseline: Some(_),
                ..
            }
        ));
    }
}

/// A message the old client sent before its request for a full snapshot,
/// delivered after it: its ack names a snapshot the restarted client never
/// held, so it must not become the baseline or a prior.
#[test]
fn a_late_ack_from_before_a_request_for_a_full_snapshot_is_ignored() {
    let schema = predicted_schema();
    let mut server = Server::new(schema.clone(), ServerConfig::default()).unwrap();
    server.connect(1);
    let mut client = Client::new(schema.clone(), ClientConfig::default()).unwrap();
    let mut late = None;
    for tick in 1..=20 {
        server.begin_tick(world(&schema, tick));
        let p = server.send(1, &View::all()).unwrap();
        client.receive(&p);
        let m = client.message().to_bytes();
        if tick == 18 {
            late = Some(m); // delayed in the network
        } else {
            server.handle_message(1, &m).unwrap();
        }
    }
    let mut client = Client::new(schema.clone(), ClientConfig::default()).unwrap();
    client.request_full();
    server
        .handle_message(1, &client.message().to_bytes())
        .unwrap();
    let mut drops = 0;
    for tick in 21..=40 {
        server.begin_tick(world(&schema, tick));
        let p = server.send(1, &View::all()).unwrap();
        if let Received::Dropped(_) = client.receive(&p) {
            drops += 1;
        }
        server
            .handle_message(1, &client.message().to_bytes())
            .unwrap();
        if tick == 21 {
            // The old message arrives after the full was sent.
            let outcome = server.handle_message(1, &late.take().unwrap()).unwrap();
            assert_eq!(outcome, Some(AckOutcome::Unknown));
        }
    }
    assert_eq!(drops, 0);
}

#[test]
fn a_message_acts_only_for_the_connection_it_arrived_on() {
    let mut g = Game::new();
    g.server.connect(2);
    for _ in 0..5 {
        assert!(matches!(g.tick(&[]), Received::Applied { .. }));
    }
    let acked = g.server.acked(1);
    assert!(acked.is_some());
    // Client 2's peer asks for a full snapshot: the message names no
    // client, so it is client 2's request, and client 1 keeps its baseline.
    let request = tickpack_session::ClientMessage {
        ack: None,
        request_full: true,
    }
    .to_bytes();
    assert_eq!(g.server.handle_message(2, &request), Ok(None));
    assert_eq!(g.server.acked(1), acked);
    // Client 1's own message on its own connection applies.
    let own = g.client.message().to_bytes();
    assert!(matches!(
        g.server.handle_message(1, &own),
        Ok(Some(AckOutcome::Stale))
    ));
    assert!(matches!(g.tick(&[]), Received::Applied { .. }));
    assert!(g.in_sync());
}

/// A client the server did not send to for 65,536 ticks (a peer that held
/// back the last ack of its connect chunk, say) still has its baseline at
/// the same 16-bit sequence as another client's fresh one. Its encode is
/// against that old world: another client acking the same sequence must
/// not be given those bytes.
#[test]
fn a_baseline_from_before_the_sequence_wrap_is_not_shared_with_another_client() {
    let schema = schema();
    let mut server = Server::new(schema.clone(), ServerConfig::default()).unwrap();
    server.connect(1);
    server.connect(2);
    let mut old = Client::new(schema.clone(), ClientConfig::default()).unwrap();
    let mut other = Client::new(schema.clone(), ClientConfig::default()).unwrap();
    // Tick 1: client 1 gets and acks a full snapshot.
    let s0 = server.begin_tick(world(&schema, 1));
    let p = server.send(1, &View::all()).unwrap();
    assert!(matches!(old.receive(&p), Received::Applied { .. }));
    assert_eq!(server.ack(1, s0), Ok(AckOutcome::Advanced(s0)));
    // 65,535 ticks nobody is sent anything; then client 2 gets the tick
    // with client 1's sequence, of another world, and acks it.
    for tick in 2..=65536 {
        server.begin_tick(world(&schema, tick));
    }
    assert_eq!(server.begin_tick(world(&schema, 65537)), s0);
    let p = server.send(2, &View::all()).unwrap();
    assert!(matches!(other.receive(&p), Received::Applied { .. }));
    assert_eq!(server.ack(2, s0), Ok(AckOutcome::Advanced(s0)));
    // The next tick both are sent a delta against their own baseline.
    let now = world(&schema, 65538);
    server.begin_tick(now.clone());
    let p1 = server.send(1, &View::all()).unwrap();
    let p2 = server.send(2, &View::all()).unwrap();
    assert!(matches!(old.receive(&p1), Received::Applied { .. }));
    assert_eq!(old.latest().map(|(_, s)| s), Some(&*now));
    assert_eq!(
        other.receive(&p2),
        Received::Applied {
            sequence: s0.wrapping_add(1),
            baseline: Some(s0)
        }
    );
    assert_eq!(other.latest().map(|(_, s)| s), Some(&*now));
}

/// A client whose acks did not arrive for 32,768 ticks or more must get
/// deltas again once they do: its last ack that arrived is no baseline any
/// more, and must not make every new ack look stale.
#[test]
fn acks_after_32768_ticks_without_one_move_the_baseline_again() {
    let mut g = Game::new();
    for _ in 0..5 {
        assert!(matches!(g.tick(&[]), Received::Applied { .. }));
    }
    assert!(g.server.acked(1).is_some());
    // 40,000 ticks: the client applies a snapshot every 1,000 (within its
    // jump bound) and none of its acks arrives.
    for t in 0..40_000u32 {
        g.tick += 1;
        g.server.begin_tick(world(&g.schema, g.tick));
        if t % 1000 == 999 {
            let p = g.server.send(1, &View::all()).unwrap();
            assert!(matches!(g.client.receive(&p), Received::Applied { .. }));
        }
    }
    assert!(g.in_sync());
    // Acks arrive again: after the first, every packet is a delta.
    g.tick(&[]);
    let full = g.server.stats().full;
    for _ in 0..10 {
        assert!(matches!(
            g.tick(&[]),
            Received::Applied {
                baseline: Some(_),
                ..
            }
        ));
        assert!(g.in_sync());
    }
    assert_eq!(g.server.stats().full, full);
}

/// 65,536 ticks after a client's last ack, the server sends it the same
/// sequence again (a new snapshot) and that packet is lost: the ack names
/// the snapshot the client holds, not the new one, which it never acked
/// and must not be coded against.
#[test]
fn a_snapshot_sent_again_under_an_acked_sequence_is_no_baseline() {
    let mut g = Game::new();
    assert!(matches!(g.tick(&[]), Received::Applied { .. }));
    let acked = g.server.acked(1).unwrap();
    // 65,535 ticks nothing is sent; then the tick with the acked sequence
    // is sent and lost.
    for _ in 1..65_536 {
        g.tick += 1;
        g.server.begin_tick(world(&g.schema, g.tick));
    }
    g.tick += 1;
    assert_eq!(g.server.begin_tick(world(&g.schema, g.tick)), acked);
    g.server.send(1, &View::all()).unwrap();
    assert_eq!(g.server.acked(1), Some(acked));
    for _ in 0..5 {
        assert!(matches!(g.tick(&[]), Received::Applied { .. }));
        assert!(g.in_sync());
    }
}

#[test]
fn a_replayed_keyframe_after_the_client_is_back_in_sync_is_stale() {
    let mut g = Game::new();
    g.tick += 1;
    g.server.begin_tick(world(&g.schema, g.tick));
    let key = g.server.send(1, &View::all()).unwrap().to_vec();
    assert!(matches!(
        g.client.receive(&key),
        Received::Applied { baseline: None, .. }
    ));
    g.server
        .handle_message(1, &g.client.message().to_bytes())
        .unwrap();
    for _ in 0..5 {
        g.tick(&[]);
    }
    // Replays of that old keyframe, enough in a row to start a resync; the
    // server's next packet applies, so the client is in sync again.
    let replays = vec![key.clone(); DEFAULT_RESYNC_AFTER as usize];
    assert!(matches!(g.tick(&replays), Received::Applied { .. }));
    assert!(g.in_sync());
    let newest = g.client.ack();
    // One more replay must not rewind the client to the old keyframe.
    assert!(matches!(
        g.client.receive(&key),
        Received::Dropped(DropReason::Stale { .. })
    ));
    assert_eq!(g.client.ack(), newest);
    for _ in 0..3 {
        assert!(matches!(g.tick(&[]), Received::Applied { .. }));
        assert!(g.in_sync());
    }
}
