//! The session layer called from Rust as C would call it: outcomes, errors
//! and damaged input.

// These tests call the `unsafe extern "C"` functions directly.
#![allow(unsafe_code)]

#[macro_use]
mod common;

use std::ptr::{null, null_mut};

use common::*;
use tickpack_ffi::client::*;
use tickpack_ffi::codec::*;
use tickpack_ffi::schema::*;
use tickpack_ffi::server::*;
use tickpack_ffi::snapshot::*;
use tickpack_ffi::*;

#[test]
fn session_errors_and_outcomes() {
    let s = schema();
    let (mut server, mut client, mut seen) = (null_mut(), null_mut(), null_mut());
    let bad = TpServerConfig {
        history: 0,
        ..TpServerConfig::default()
    };
    fails(
        ffi!(tp_server_new(s, null(), &bad, &mut server)),
        TpStatus::Session,
        "history",
    );
    ok(ffi!(tp_server_new(s, null(), null(), &mut server)));
    ok(ffi!(tp_client_new(s, null(), null(), &mut client)));
    ok(ffi!(tp_snapshot_new(s, &mut seen)));
    let mut buf = [0u8; 1024];
    let mut n = 0usize;
    fails(
        ffi!(tp_server_encode(
            server,
            1,
            buf.as_mut_ptr(),
            buf.len(),
            &mut n
        )),
        TpStatus::Session,
        "before begin_tick",
    );
    fails(
        ffi!(tp_client_latest(client, seen, null_mut())),
        TpStatus::Empty,
        "no packet applied",
    );

    let world = snapshot_with(s, &[4], &[car(4.0, 4)]);
    let mut seq = 0u16;
    ok(ffi!(tp_server_begin_tick(server, world, &mut seq)));
    fails(
        ffi!(tp_server_encode(
            server,
            1,
            buf.as_mut_ptr(),
            buf.len(),
            &mut n
        )),
        TpStatus::Session,
        "no client with id 1",
    );
    ok(ffi!(tp_server_add_client(server, 1)));
    // A null buffer asks for the size; the retry gets that packet.
    fails(
        ffi!(tp_server_encode(server, 1, null_mut(), 0, &mut n)),
        TpStatus::BufferTooSmall,
        "needs",
    );
    let needed = n;
    ok(ffi!(tp_server_encode(
        server,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    assert_eq!(n, needed);
    let mut stats = TpServerStats::default();
    ok(ffi!(tp_server_stats(server, &mut stats)));
    assert_eq!(stats.packets, 1, "the retry is not a second packet");

    let mut r = TpReceived {
        outcome: TpOutcome::Undecodable,
        sequence: 0,
        has_baseline: false,
        baseline: 0,
    };
    ok(ffi!(tp_client_receive(client, buf.as_ptr(), n, &mut r)));
    assert_eq!(
        (r.outcome, r.sequence, r.has_baseline),
        (TpOutcome::Applied, seq, false)
    );
    assert_eq!(last_message(), "");
    ok(ffi!(tp_client_receive(client, buf.as_ptr(), n, &mut r)));
    assert_eq!(r.outcome, TpOutcome::Stale);
    assert!(last_message().contains("not newer"), "{}", last_message());

    let mut latest = 0u16;
    ok(ffi!(tp_client_latest(client, seen, &mut latest)));
    let mut eq = false;
    ok(ffi!(tp_snapshot_equal(seen, world, &mut eq)));
    assert!(eq && latest == seq);

    let mut msg = [0u8; TP_CLIENT_MESSAGE_MAX];
    let mut m = 0usize;
    fails(
        ffi!(tp_client_message(client, msg.as_mut_ptr(), 2, &mut m)),
        TpStatus::BufferTooSmall,
        "needs 3",
    );
    ok(ffi!(tp_client_message(
        client,
        msg.as_mut_ptr(),
        msg.len(),
        &mut m
    )));
    ok(ffi!(tp_server_on_message_from(server, 1, msg.as_ptr(), m)));
    fails(
        ffi!(tp_server_on_message_from(server, 1, msg.as_ptr(), 1)),
        TpStatus::Session,
        "client message",
    );

    // The next tick is a delta against the acked one.
    ok(ffi!(tp_server_begin_tick(server, world, &mut seq)));
    ok(ffi!(tp_server_encode(
        server,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    ok(ffi!(tp_client_receive(client, buf.as_ptr(), n, &mut r)));
    assert_eq!((r.outcome, r.has_baseline), (TpOutcome::Applied, true));
    ok(ffi!(tp_server_stats(server, &mut stats)));
    assert_eq!((stats.packets, stats.full), (2, 1));

    // A packet from far ahead (another server, or a spoofed one) is dropped
    // under the client's `max_jump`.
    let far = TpServerConfig {
        first_sequence: 5000,
        ..TpServerConfig::default()
    };
    let mut other = null_mut();
    ok(ffi!(tp_server_new(s, null(), &far, &mut other)));
    ok(ffi!(tp_server_add_client(other, 1)));
    ok(ffi!(tp_server_begin_tick(other, world, null_mut())));
    ok(ffi!(tp_server_encode(
        other,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    ok(ffi!(tp_client_receive(client, buf.as_ptr(), n, &mut r)));
    assert_eq!((r.outcome, r.sequence), (TpOutcome::TooFarAhead, 5000));
    let mut cs = TpClientStats::default();
    ok(ffi!(tp_client_stats(client, &mut cs)));
    assert_eq!((cs.applied, cs.stale, cs.too_far_ahead), (2, 1, 1));
    ok(ffi!(tp_server_free(other)));

    let mut was = false;
    ok(ffi!(tp_server_remove_client(server, 1, &mut was)));
    assert!(was);
    ok(ffi!(tp_server_remove_client(server, 1, &mut was)));
    assert!(!was);
    ok(ffi!(tp_snapshot_free(world)));
    ok(ffi!(tp_snapshot_free(seen)));
    ok(ffi!(tp_client_free(client)));
    ok(ffi!(tp_server_free(server)));
    ok(ffi!(tp_schema_free(s)));
}

/// A message that arrives on one client's (authenticated) connection but
/// claims another client's id: handled as that connection's, it is refused
/// and the other client keeps its baseline.
#[test]
fn a_message_claiming_another_client_is_refused_on_its_senders_connection() {
    let s = schema();
    let world = snapshot_with(s, &[4], &[car(4.0, 4)]);
    let mut server = null_mut();
    ok(ffi!(tp_server_new(s, null(), null(), &mut server)));
    let mut clients = [null_mut(), null_mut()];
    let mut buf = [0u8; 1024];
    let (mut n, mut m) = (0usize, 0usize);
    let mut msg = [0u8; TP_CLIENT_MESSAGE_MAX];
    let mut r = TpReceived {
        outcome: TpOutcome::Other,
        sequence: 0,
        has_baseline: false,
        baseline: 0,
    };
    for (id, client) in (1u16..).zip(clients.iter_mut()) {
        ok(ffi!(tp_client_new(s, null(), null(), client)));
        ok(ffi!(tp_server_add_client(server, id)));
    }
    for _ in 0..2 {
        ok(ffi!(tp_server_begin_tick(server, world, null_mut())));
        for (id, &client) in (1u16..).zip(&clients) {
            ok(ffi!(tp_server_encode(
                server,
                id,
                buf.as_mut_ptr(),
                buf.len(),
                &mut n
            )));
            ok(ffi!(tp_client_receive(client, buf.as_ptr(), n, &mut r)));
            ok(ffi!(tp_client_message(
                client,
                msg.as_mut_ptr(),
                msg.len(),
                &mut m
            )));
            ok(ffi!(tp_server_on_message_from(server, id, msg.as_ptr(), m)));
        }
    }
    // Client 2's peer asks for a full snapshot: a message names no client,
    // so it is client 2's request alone.
    let request = [2u8];
    ok(ffi!(tp_server_on_message_from(
        server,
        2,
        request.as_ptr(),
        request.len()
    )));
    ok(ffi!(tp_server_begin_tick(server, world, null_mut())));
    ok(ffi!(tp_server_encode(
        server,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    ok(ffi!(tp_client_receive(clients[0], buf.as_ptr(), n, &mut r)));
    assert_eq!(
        (r.outcome, r.has_baseline),
        (TpOutcome::Applied, true),
        "client 1 was reset by client 2's peer"
    );
    for client in clients {
        ok(ffi!(tp_client_free(client)));
    }
    ok(ffi!(tp_server_free(server)));
    ok(ffi!(tp_snapshot_free(world)));
    ok(ffi!(tp_schema_free(s)));
}

/// Damaged packets and messages (bit flips, truncations, garbage) through
/// every entry point that takes wire bytes: typed statuses, never a panic.
#[test]
fn damaged_input_gives_statuses() {
    let s = schema();
    let t0 = snapshot_with(s, &[1, 2, 3], &[car(1.0, 0), car(2.0, 0), car(3.0, 1)]);
    let t1 = snapshot_with(s, &[2, 3, 4], &[car(2.5, 1), car(3.0, 1), car(4.0, 0)]);
    let (mut enc, mut dec, mut got) = (null_mut(), null_mut(), null_mut());
    ok(ffi!(tp_encoder_new(s, TP_DEFAULT_LEVEL, &mut enc)));
    ok(ffi!(tp_encoder_set_checksum(enc, 1)));
    ok(ffi!(tp_decoder_new(s, &mut dec)));
    ok(ffi!(tp_snapshot_new(s, &mut got)));
    let mut delta = [0u8; 512];
    let mut n = 0usize;
    ok(ffi!(tp_encoder_encode(
        enc,
        t1,
        9,
        t0,
        8,
        delta.as_mut_ptr(),
        delta.len(),
        &mut n
    )));
    let (mut server, mut client) = (null_mut(), null_mut());
    ok(ffi!(tp_server_new(s, null(), null(), &mut server)));
    ok(ffi!(tp_client_new(s, null(), null(), &mut client)));
    ok(ffi!(tp_server_add_client(server, 1)));

    let mut x = 0x9e37_79b9_u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for round in 0..3000 {
        let mut bytes = delta[..n].to_vec();
        match round % 3 {
            0 => {
                let bit = next() as usize % (n * 8);
                bytes[bit / 8] ^= 1 << (bit % 8);
            }
            1 => bytes.truncate(next() as usize % n),
            _ => bytes.iter_mut().for_each(|b| *b = next() as u8),
        }
        let mut info = TpPacketInfo::default();
        let st = ffi!(tp_decoder_decode(
            dec,
            bytes.as_ptr(),
            bytes.len(),
            t0,
            8,
            got,
            &mut info
        ));
        assert!(matches!(st, TpStatus::Ok | TpStatus::Decode), "{st:?}");
        let st = ffi!(tp_packet_info(bytes.as_ptr(), bytes.len(), &mut info));
        assert!(matches!(st, TpStatus::Ok | TpStatus::Decode), "{st:?}");
        let mut r = TpReceived {
            outcome: TpOutcome::Applied,
            sequence: 0,
            has_baseline: false,
            baseline: 0,
        };
        ok(ffi!(tp_client_receive(
            client,
            bytes.as_ptr(),
            bytes.len(),
            &mut r
        )));
        let msg = &bytes[..bytes.len().min(1 + next() as usize % 6)];
        let st = ffi!(tp_server_on_message_from(
            server,
            1,
            msg.as_ptr(),
            msg.len()
        ));
        assert!(matches!(st, TpStatus::Ok | TpStatus::Session), "{st:?}");
        let st = ffi!(tp_schema_from_json(
            bytes.as_ptr(),
            bytes.len(),
            &mut null_mut()
        ));
        assert!(
            matches!(st, TpStatus::Schema | TpStatus::InvalidArgument),
            "{st:?}"
        );
    }
    ok(ffi!(tp_client_free(client)));
    ok(ffi!(tp_server_free(server)));
    for h in [got, t1, t0] {
        ok(ffi!(tp_snapshot_free(h)));
    }
    ok(ffi!(tp_decoder_free(dec)));
    ok(ffi!(tp_encoder_free(enc)));
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn a_quantised_world_is_quantised_through_the_api() {
    const Q: &str = r#"{"entities":[{"name":"car","fields":[
        {"name":"pos","type":"f32","len":3,"quantize":{"step":0.5,"range":[-100,100],"out_of_range":"error"}},
        {"name":"lap","type":"u8"}]}]}"#;
    let mut s = null_mut();
    ok(ffi!(tp_schema_from_json(Q.as_ptr(), Q.len(), &mut s)));
    let (mut server, mut world) = (null_mut(), null_mut());
    ok(ffi!(tp_server_new(s, null(), null(), &mut server)));
    ok(ffi!(tp_server_add_client(server, 1)));
    // 4.2, 5.2, 6.2 are off the 0.5 grid: the encoder refuses them.
    let off = snapshot_with(s, &[4], &[car(4.2, 4)]);
    let mut seq = 0u16;
    ok(ffi!(tp_server_begin_tick(server, off, &mut seq)));
    let mut buf = [0u8; 1024];
    let mut n = 0usize;
    fails(
        ffi!(tp_server_encode(
            server,
            1,
            buf.as_mut_ptr(),
            buf.len(),
            &mut n
        )),
        TpStatus::Session,
        "not a quantised value",
    );
    ok(ffi!(tp_snapshot_quantize(s, off)));
    let (mut ids, mut rec, mut count) = ([0u32; 1], [0u8; CAR], 0usize);
    ok(ffi!(tp_snapshot_get_section(
        off,
        0,
        ids.as_mut_ptr(),
        rec.as_mut_ptr().cast(),
        1,
        CAR,
        &mut count
    )));
    assert_eq!((count, ids[0]), (1, 4));
    let pos: Vec<f32> = (0..3)
        .map(|k| f32::from_le_bytes(rec[k * 4..k * 4 + 4].try_into().unwrap()))
        .collect();
    assert_eq!(pos, [4.0, 5.0, 6.0]);
    assert_eq!(rec[12], 4);
    // Quantising again changes nothing, and the world now encodes.
    ok(ffi!(tp_snapshot_quantize(s, off)));
    ok(ffi!(tp_server_begin_tick(server, off, &mut seq)));
    ok(ffi!(tp_server_encode(
        server,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    assert!(n > 0);
    // A value the range refuses, and NaN, are named errors.
    for (x, message) in [(200.0, "outside"), (f32::NAN, "finite")] {
        ok(ffi!(tp_snapshot_new(s, &mut world)));
        let ids = [9u32];
        let cars = [car(x, 0)];
        ok(ffi!(tp_snapshot_set_section(
            world,
            0,
            ids.as_ptr(),
            cars.as_ptr().cast(),
            1,
            CAR
        )));
        fails(
            ffi!(tp_snapshot_quantize(s, world)),
            TpStatus::Quantize,
            message,
        );
        ok(ffi!(tp_snapshot_free(world)));
    }
    // A snapshot of another schema is refused, not misread.
    let other = schema();
    let foreign = snapshot_with(other, &[4], &[car(4.2, 4)]);
    fails(
        ffi!(tp_snapshot_quantize(s, foreign)),
        TpStatus::InvalidArgument,
        "snapshot",
    );
    ok(ffi!(tp_snapshot_free(foreign)));
    ok(ffi!(tp_snapshot_free(off)));
    ok(ffi!(tp_server_free(server)));
    ok(ffi!(tp_schema_free(other)));
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn a_client_added_again_after_a_too_small_buffer_gets_a_full_snapshot() {
    let s = schema();
    let (mut server, mut client, mut fresh) = (null_mut(), null_mut(), null_mut());
    ok(ffi!(tp_server_new(s, null(), null(), &mut server)));
    ok(ffi!(tp_client_new(s, null(), null(), &mut client)));
    ok(ffi!(tp_client_new(s, null(), null(), &mut fresh)));
    ok(ffi!(tp_server_add_client(server, 1)));
    let mut buf = [0u8; 1024];
    let (mut n, mut seq) = (0usize, 0u16);
    let mut r = TpReceived {
        outcome: TpOutcome::Undecodable,
        sequence: 0,
        has_baseline: false,
        baseline: 0,
    };
    let mut msg = [0u8; TP_CLIENT_MESSAGE_MAX];
    let mut m = 0usize;
    for tick in 0..3u32 {
        let world = snapshot_with(s, &[4], &[car(tick as f32, 4)]);
        ok(ffi!(tp_server_begin_tick(server, world, &mut seq)));
        ok(ffi!(tp_server_encode(
            server,
            1,
            buf.as_mut_ptr(),
            buf.len(),
            &mut n
        )));
        ok(ffi!(tp_client_receive(client, buf.as_ptr(), n, &mut r)));
        ok(ffi!(tp_client_message(
            client,
            msg.as_mut_ptr(),
            msg.len(),
            &mut m
        )));
        ok(ffi!(tp_server_on_message_from(server, 1, msg.as_ptr(), m)));
        ok(ffi!(tp_snapshot_free(world)));
    }
    assert!(r.has_baseline, "the session is sending deltas");
    // A delta for client 1 waits for a bigger buffer; then client 1 leaves
    // and a new client 1 (another peer, no snapshots) takes its id.
    let world = snapshot_with(s, &[4], &[car(9.0, 4)]);
    ok(ffi!(tp_server_begin_tick(server, world, &mut seq)));
    fails(
        ffi!(tp_server_encode(server, 1, null_mut(), 0, &mut n)),
        TpStatus::BufferTooSmall,
        "needs",
    );
    ok(ffi!(tp_server_remove_client(server, 1, null_mut())));
    ok(ffi!(tp_server_add_client(server, 1)));
    ok(ffi!(tp_server_encode(
        server,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    ok(ffi!(tp_client_receive(fresh, buf.as_ptr(), n, &mut r)));
    assert_eq!(
        (r.outcome, r.sequence, r.has_baseline),
        (TpOutcome::Applied, seq, false)
    );
    for h in [client, fresh] {
        ok(ffi!(tp_client_free(h)));
    }
    ok(ffi!(tp_snapshot_free(world)));
    ok(ffi!(tp_server_free(server)));
}

/// A misaligned `result` is refused before the packet is applied, so the
/// call that fails changes nothing and the retry gets the packet's outcome.
#[test]
fn a_misaligned_receive_result_is_refused_before_the_packet_is_applied() {
    let s = schema();
    let (mut server, mut client, mut seen) = (null_mut(), null_mut(), null_mut());
    ok(ffi!(tp_server_new(s, null(), null(), &mut server)));
    ok(ffi!(tp_client_new(s, null(), null(), &mut client)));
    ok(ffi!(tp_snapshot_new(s, &mut seen)));
    ok(ffi!(tp_server_add_client(server, 1)));
    let world = snapshot_with(s, &[4], &[car(1.0, 4)]);
    let mut seq = 0u16;
    ok(ffi!(tp_server_begin_tick(server, world, &mut seq)));
    let mut buf = [0u8; 1024];
    let mut n = 0usize;
    ok(ffi!(tp_server_encode(
        server,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    let mut words = [0u64; 4];
    let misaligned = words
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_add(1)
        .cast::<TpReceived>();
    fails(
        ffi!(tp_client_receive(client, buf.as_ptr(), n, misaligned)),
        TpStatus::InvalidArgument,
        "misaligned",
    );
    assert_eq!(words, [0; 4], "nothing written");
    fails(
        ffi!(tp_client_latest(client, seen, null_mut())),
        TpStatus::Empty,
        "no packet applied",
    );
    let mut r = TpReceived {
        outcome: TpOutcome::Undecodable,
        sequence: 0,
        has_baseline: false,
        baseline: 0,
    };
    ok(ffi!(tp_client_receive(client, buf.as_ptr(), n, &mut r)));
    assert_eq!((r.outcome, r.sequence), (TpOutcome::Applied, seq));
    ok(ffi!(tp_client_free(client)));
    ok(ffi!(tp_snapshot_free(seen)));
    ok(ffi!(tp_snapshot_free(world)));
    ok(ffi!(tp_server_free(server)));
}

/// The size of the first packet a server with `config` sends each of two
/// clients, and how many encodes it ran for them.
fn first_packets(config: &TpServerConfig) -> (usize, u64) {
    let s = schema();
    let mut server = null_mut();
    ok(ffi!(tp_server_new(s, null(), config, &mut server)));
    let world = snapshot_with(s, &[4, 5], &[car(1.0, 4), car(2.0, 5)]);
    ok(ffi!(tp_server_begin_tick(server, world, null_mut())));
    let mut buf = [0u8; 1024];
    let mut n = 0usize;
    for id in [1, 2] {
        ok(ffi!(tp_server_add_client(server, id)));
        ok(ffi!(tp_server_encode(
            server,
            id,
            buf.as_mut_ptr(),
            buf.len(),
            &mut n
        )));
    }
    let mut stats = TpServerStats::default();
    ok(ffi!(tp_server_stats(server, &mut stats)));
    ok(ffi!(tp_snapshot_free(world)));
    ok(ffi!(tp_server_free(server)));
    ok(ffi!(tp_schema_free(s)));
    (n, stats.encodes)
}

/// Flags C passes are bytes where any value is defined: 0 is off, any
/// other byte on (a `bool` holding 2 was undefined behaviour).
#[test]
fn config_flags_are_bytes_and_any_non_zero_byte_is_on() {
    let with = |checksum, share_encodes| TpServerConfig {
        checksum,
        share_encodes,
        ..TpServerConfig::default()
    };
    let (plain, unshared) = first_packets(&with(0, 0));
    assert_eq!(unshared, 2, "share_encodes 0 is off");
    for byte in [1, 2, 0x80, 0xff] {
        let (n, encodes) = first_packets(&with(byte, byte));
        assert_eq!(n, plain + 2, "checksum {byte} is on");
        assert_eq!(encodes, 1, "share_encodes {byte} is on");
    }
}
