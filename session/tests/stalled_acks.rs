//! A client whose acks stall for longer than the history (a slow connect,
//! lost acks, a long round trip) keeps getting deltas against its last
//! acked snapshot, on both ends, and rings resized mid-stream carry on.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use tickpack::{Primitive, Schema, Snapshot};
use tickpack_session::{Client, ClientConfig, Received, Server, ServerConfig, View};

fn schema() -> Schema {
    Schema::builder()
        .entity("car")
        .field("x", Primitive::F32, 1)
        .build()
        .unwrap()
}

fn world(schema: &Schema, tick: u16) -> Arc<Snapshot> {
    let mut w = Snapshot::new(schema);
    let s = w.section_mut(0).unwrap();
    for id in 0..4u32 {
        s.insert(id, &(f32::from(tick) + id as f32).to_le_bytes())
            .unwrap();
    }
    Arc::new(w)
}

/// Failed before the acked baseline was kept apart from the rings: the
/// server sent full snapshots once the ring wrapped past the ack, and the
/// client (history 8) had overwritten the baseline the deltas named.
#[test]
fn deltas_continue_when_acks_stall_longer_than_the_history() {
    let schema = schema();
    let history = 8;
    let mut server = Server::new(
        schema.clone(),
        ServerConfig {
            history,
            ..ServerConfig::default()
        },
    )
    .unwrap();
    let mut client = Client::new(
        schema.clone(),
        ClientConfig {
            history,
            ..ClientConfig::default()
        },
    )
    .unwrap();
    let answer = client.answer(&server.hello().to_bytes()).unwrap();
    server.accept(1, &answer).unwrap();
    for tick in 1..=60u16 {
        let w = world(&schema, tick);
        server.begin_tick(w.clone());
        let packet = server.send(1, &View::all()).unwrap();
        let r = client.receive(&packet);
        assert!(matches!(r, Received::Applied { .. }), "tick {tick}: {r:?}");
        assert_eq!(client.latest().map(|(_, s)| s), Some(&*w));
        // Acks reach the server only on tick 1 and from tick 40 on; the
        // rings are resized on the way.
        if tick == 1 || tick >= 40 {
            server
                .handle_message(1, &client.message().to_bytes())
                .unwrap();
        }
        if tick == 20 {
            assert_eq!(server.set_history(1, 3).unwrap(), 3);
            assert_eq!(client.set_history(3), 3);
        }
        if tick == 45 {
            assert_eq!(server.set_history(1, 40).unwrap(), 40);
            assert_eq!(client.set_history(40), 40);
        }
    }
    assert_eq!(server.stats().full, 1, "only the first packet is full");
    assert_eq!(client.stats().unknown_baseline, 0);
    assert_eq!(server.history(1), Some(40));
}
