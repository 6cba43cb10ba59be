//! The session handshake: schema, dictionaries and limits are agreed at
//! connect, a mismatch is a typed error there, and after it deltas (which
//! name no dictionary) decode with the agreed one.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use tickpack::{Dictionary, Limits, Primitive, Schema, Snapshot};
use tickpack_session::{
    Client, ClientConfig, Hello, Received, Server, ServerConfig, SessionError, View,
};

fn schema(ty: Primitive) -> Schema {
    Schema::builder()
        .entity("car")
        .field("x", ty, 4)
        .build()
        .unwrap()
}

fn dicts() -> (Dictionary, Dictionary) {
    (
        Dictionary::new(11, vec![3u8; 256]),
        Dictionary::new(22, vec![5u8; 256]),
    )
}

#[test]
fn mismatches_are_refused_at_connect() {
    let (delta, key) = dicts();
    let config = ServerConfig {
        dictionary: Some(delta.clone()),
        keyframe_dictionary: Some(key.clone()),
        ..ServerConfig::default()
    };
    let mut server = Server::new(schema(Primitive::F32), config).unwrap();
    let hello = server.hello().to_bytes();
    // Another schema.
    let mut other = Client::new(schema(Primitive::I32), ClientConfig::default()).unwrap();
    assert!(matches!(
        other.answer(&hello),
        Err(SessionError::HandshakeMismatch { .. })
    ));
    // The schema, without the keyframe dictionary.
    let mut missing = Client::new(
        schema(Primitive::F32),
        ClientConfig {
            dictionaries: vec![delta.clone()],
            ..ClientConfig::default()
        },
    )
    .unwrap();
    assert_eq!(
        missing.answer(&hello),
        Err(SessionError::MissingDictionary { id: 22 })
    );
    // A client answering with something else is not connected.
    let wrong = Hello {
        schema_id: schema(Primitive::I32).id(),
        ..server.hello()
    };
    assert!(matches!(
        server.accept(1, &wrong.to_bytes()),
        Err(SessionError::HandshakeMismatch { .. })
    ));
    assert_eq!(server.clients().count(), 0);
    assert!(matches!(
        server.accept(1, &[9]),
        Err(SessionError::Handshake(_))
    ));
}

/// Both ends evict recalls by their limits (FORMAT.md 4.7), so a client
/// with other limits than the server's would part from it on the first
/// recall that reaches a cap: refused at connect, either way round.
#[test]
fn other_limits_are_refused_at_connect() {
    let s = schema(Primitive::F32);
    let server_limits = Limits {
        max_snapshot_bytes: 64 << 10,
        ..Limits::default()
    };
    let mut server = Server::new(
        s.clone(),
        ServerConfig {
            limits: server_limits,
            ..ServerConfig::default()
        },
    )
    .unwrap();
    let hello = server.hello();
    assert_eq!(hello.limits, server_limits);
    let mut client = Client::new(s.clone(), ClientConfig::default()).unwrap();
    match client.answer(&hello.to_bytes()) {
        Err(SessionError::HandshakeMismatch { ours, theirs }) => {
            assert_eq!(ours.limits, Limits::default());
            assert_eq!(theirs.limits, server_limits);
        }
        other => panic!("{other:?}"),
    }
    let other = Hello {
        limits: Limits {
            max_decoded_bytes: 1 << 20,
            ..server_limits
        },
        ..hello
    };
    assert!(matches!(
        server.accept(1, &other.to_bytes()),
        Err(SessionError::HandshakeMismatch { .. })
    ));
    // The same limits connect.
    let mut client = Client::new(
        s,
        ClientConfig {
            limits: server_limits,
            ..ClientConfig::default()
        },
    )
    .unwrap();
    let answer = client.answer(&hello.to_bytes()).unwrap();
    server.accept(1, &answer).unwrap();
    assert_eq!(server.clients().count(), 1);
}

#[test]
fn agreed_dictionaries_decode_deltas() {
    let (delta, key) = dicts();
    let s = schema(Primitive::F32);
    let config = ServerConfig {
        dictionary: Some(delta.clone()),
        keyframe_dictionary: Some(key.clone()),
        ..ServerConfig::default()
    };
    let mut server = Server::new(s.clone(), config).unwrap();
    // The client lists the keyframe dictionary first: without the
    // handshake it would not know which one deltas use.
    let mut client = Client::new(
        s.clone(),
        ClientConfig {
            dictionaries: vec![key, delta],
            ..ClientConfig::default()
        },
    )
    .unwrap();
    let answer = client.answer(&server.hello().to_bytes()).unwrap();
    server.accept(1, &answer).unwrap();
    for tick in 0..6u32 {
        let mut world = Snapshot::new(&s);
        for id in 0..20u32 {
            let v = (id * 10 + tick) as f32;
            let rec: Vec<u8> = [v, v + 0.5, 1.0, 2.0]
                .iter()
                .flat_map(|f| f.to_le_bytes())
                .collect();
            world.section_mut(0).unwrap().insert(id, &rec).unwrap();
        }
        let world = Arc::new(world);
        server.begin_tick(world.clone());
        let packet = server.send(1, &View::all()).unwrap();
        assert!(
            matches!(client.receive(&packet), Received::Applied { .. }),
            "tick {tick}"
        );
        assert_eq!(client.latest().map(|(_, s)| s), Some(&*world));
        server
            .handle_message(1, &client.message().to_bytes())
            .unwrap();
    }
}
