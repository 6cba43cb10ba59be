//! Entities that leave a client's view and come back, under loss: the
//! server codes them against the client's recall, and the client, which
//! derives the same recall from what it applied, stays in sync (no packet
//! is ever undecodable, so no checksum ever fails).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tickpack::{Baseline, DecodeError, Decoder, PacketHeader, Primitive, Schema, Snapshot};
use tickpack_session::{Client, ClientConfig, DropReason, Received, Server, ServerConfig, View};
use tickpack_testkit::rng::SplitMix64;

fn schema() -> Schema {
    Schema::builder()
        .entity("item")
        .field("pos", Primitive::F32, 3)
        .field("state", Primitive::U8, 4)
        .build()
        .unwrap()
}

/// 60 items; one in five moves each tick, the rest sit still.
fn world(s: &Schema, t: u32) -> Arc<Snapshot> {
    let mut w = Snapshot::new(s);
    for id in 0..60u32 {
        let moved = if id % 5 == 0 { t } else { 0 };
        let mut rec = Vec::new();
        for k in 0..3 {
            rec.extend_from_slice(&((id * 10 + k + moved) as f32).to_le_bytes());
        }
        rec.extend_from_slice(&[id as u8, 1, 2, (t / 50) as u8]);
        w.section_mut(0).unwrap().insert(id, &rec).unwrap();
    }
    Arc::new(w)
}

/// What the client sees at tick `t`: a window of 20 ids sliding over the
/// 60, back and forth, so every item leaves and re-enters view.
fn view(t: u32) -> View {
    let start = (t / 3) % 80;
    let start = if start > 40 { 80 - start } else { start };
    View::filter(vec![(start..start + 20).collect()])
}

/// A client of schema `s` that joins `server` as `id` (handshake done).
fn join(server: &mut Server, s: &Schema, id: u16) -> Client {
    let mut c = Client::new(s.clone(), ClientConfig::default()).unwrap();
    server
        .accept(id, &c.answer(&server.hello().to_bytes()).unwrap())
        .unwrap();
    c
}

/// Whether `packet` was coded against the recall: a decoder given only its
/// baseline (which `client` holds) says so.
fn coded_against_recall(s: &Schema, client: &Client, packet: &[u8]) -> bool {
    let (h, _) = PacketHeader::parse(packet).unwrap();
    let Some((sequence, snapshot)) = h.baseline.and_then(|b| Some((b, client.get(b)?))) else {
        return false;
    };
    matches!(
        Decoder::new(s.clone()).decode(packet, Baseline { sequence, snapshot }),
        Err(DecodeError::MissingRecall { .. })
    )
}

#[test]
fn entities_leave_and_come_back_under_loss() {
    let s = schema();
    for (seed, loss) in [(1u64, 0u64), (2, 20), (3, 50)] {
        let mut rng = SplitMix64::new(seed);
        let mut server = Server::new(s.clone(), ServerConfig::default()).unwrap();
        let mut client = join(&mut server, &s, 1);
        let mut in_flight: Vec<(u32, Arc<[u8]>)> = Vec::new();
        let (mut applied, mut recalled) = (0, 0);
        let mut expected = Snapshot::default();
        for t in 0..1500u32 {
            server.begin_tick(world(&s, t));
            let packet = server.send(1, &view(t)).unwrap();
            // Loss, and a delay of 0-3 ticks (so also reordering).
            if rng.below(100) >= loss {
                in_flight.push((t + rng.below(4) as u32, packet));
            }
            let (now, later): (Vec<_>, Vec<_>) = in_flight.drain(..).partition(|p| p.0 <= t);
            in_flight = later;
            for (_, p) in now {
                recalled += usize::from(coded_against_recall(&s, &client, &p));
                match client.receive(&p) {
                    Received::Applied { sequence, .. } => {
                        applied += 1;
                        assert!(server.sent_state(1, sequence, &mut expected));
                        assert_eq!(client.get(sequence), Some(&expected), "tick {t}");
                    }
                    Received::Dropped(DropReason::Undecodable(e)) => {
                        panic!("seed {seed}, tick {t}: undecodable: {e}")
                    }
                    Received::Dropped(_) => {}
                }
            }
            // Acks are lost as often as packets.
            if rng.below(100) >= loss {
                server
                    .handle_message(1, &client.message().to_bytes())
                    .unwrap();
            }
        }
        assert!(applied > 500, "seed {seed}: {applied} applied");
        assert!(recalled > 50, "seed {seed}: {recalled} recalled");
        assert_eq!(client.stats().undecodable, 0);
    }
}

/// Two clients whose chains started at different ticks (so their recalls
/// count steps differently) see the same world with the same view, and
/// their recalls hold the same entities: one encode could serve both, but
/// an entity gone for more than 4,096 steps is forgotten at a step count
/// the two chains reach on different ticks. Every packet of both must
/// still apply, with no resync.
#[test]
fn clients_with_different_chains_agree_on_forgetting() {
    let s = Schema::builder()
        .entity("e")
        .field("x", Primitive::U32, 1)
        .build()
        .unwrap();
    let world = |t: u32| {
        let mut w = Snapshot::new(&s);
        w.section_mut(0)
            .unwrap()
            .insert(1, &t.to_le_bytes())
            .unwrap();
        // Entity 2 is gone from tick 21 until it comes back at tick 4355.
        if !(21..4355).contains(&t) {
            w.section_mut(0).unwrap().insert(2, &[7, 0, 0, 0]).unwrap();
        }
        Arc::new(w)
    };
    let mut server = Server::new(s.clone(), ServerConfig::default()).unwrap();
    let mut clients: Vec<(u16, Client)> = Vec::new();
    for t in 0..4400u32 {
        // Client 2 joins at tick 0, client 1 at tick 10; client 1 is sent
        // first each tick.
        for (id, at) in [(2u16, 0u32), (1, 10)] {
            if t == at {
                clients.push((id, join(&mut server, &s, id)));
                clients.sort_by_key(|c| c.0);
            }
        }
        server.begin_tick(world(t));
        for (id, c) in &mut clients {
            let p = server.send(*id, &View::all()).unwrap();
            match c.receive(&p) {
                Received::Applied { .. } => {}
                other => panic!("tick {t}, client {id}: {other:?}"),
            }
            assert_eq!(c.latest().unwrap().1, &*world(t), "tick {t}, client {id}");
            server.handle_message(*id, &c.message().to_bytes()).unwrap();
        }
    }
    for (id, c) in &clients {
        assert_eq!(c.stats().resyncs, 0, "client {id}");
        assert_eq!(c.stats().full, 1, "client {id}");
    }
    // Their recalls hold the same records on almost every tick, so one
    // encode serves both; each client's own recall is derived apart.
    let st = server.stats();
    assert!(st.encodes * 10 < st.packets * 6, "{st:?}");
}

/// Three clients with the same sliding view (and entity 2 always in it)
/// join on different ticks: their recalls count steps from different
/// keyframes. Entity 2 leaves the world at tick 21 and comes back at tick
/// 4355, after the first client's recall forgot it and before the
/// second's does. Whenever their recalls hold the same records of the
/// entities a packet spawns they share its encode, each deriving its own
/// recall; every packet applies and gives exactly the state sent. The
/// baseline window (default 3) picks older baselines when the view turns
/// around, after which the first client's recall keeps entity 0, seen
/// before the others joined: that costs only the packets that spawn it.
#[test]
fn late_joiners_share_encodes_and_keep_their_own_recalls() {
    let s = schema();
    let world_at = |t: u32| {
        let mut w = (*world(&s, t)).clone();
        if (21..4355).contains(&t) {
            w.section_mut(0).unwrap().remove(2);
        }
        Arc::new(w)
    };
    let mut server = Server::new(s.clone(), ServerConfig::default()).unwrap();
    let mut clients: Vec<(u16, Client)> = Vec::new();
    let mut expected = Snapshot::default();
    let mut recalled = 0;
    for t in 0..4500u32 {
        for (id, at) in [(1u16, 0u32), (2, 5), (3, 301)] {
            if t == at {
                clients.push((id, join(&mut server, &s, id)));
            }
        }
        server.begin_tick(world_at(t));
        // Later joiners first: the encode is made for the chain that
        // forgets last.
        for (id, c) in clients.iter_mut().rev() {
            let start = (t / 3) % 80;
            let start = if start > 40 { 80 - start } else { start };
            let ids = core::iter::once(2).chain(start..start + 20).collect();
            let p = server.send(*id, &View::filter(vec![ids])).unwrap();
            recalled += usize::from(coded_against_recall(&s, c, &p));
            match c.receive(&p) {
                Received::Applied { sequence, .. } => {
                    assert!(server.sent_state(*id, sequence, &mut expected));
                    assert_eq!(c.get(sequence), Some(&expected), "tick {t}, client {id}");
                }
                other => panic!("tick {t}, client {id}: {other:?}"),
            }
            server.handle_message(*id, &c.message().to_bytes()).unwrap();
        }
    }
    for (id, c) in &clients {
        assert_eq!(c.stats().resyncs, 0, "client {id}");
        assert_eq!(c.stats().undecodable, 0, "client {id}");
    }
    assert!(recalled > 100, "{recalled} recalled");
    // One encode per tick but for the first ticks of a join and the few
    // packets that spawn an entity only some of them recall (0.35 encodes
    // per packet; three clients that never share would make 1).
    let st = server.stats();
    assert!(st.encodes * 10 < st.packets * 4, "{st:?}");
}
