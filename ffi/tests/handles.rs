//! Schemas, snapshots, the encoder and decoder, and dictionary sets called
//! from Rust as C would call them: round trips, and each failure mode
//! giving its status code and message.

// These tests call the `unsafe extern "C"` functions directly.
#![allow(unsafe_code)]

#[macro_use]
mod common;

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use common::*;
use tickpack_ffi::client::*;
use tickpack_ffi::codec::*;
use tickpack_ffi::schema::*;
use tickpack_ffi::server::*;
use tickpack_ffi::snapshot::*;
use tickpack_ffi::*;

#[test]
fn schema_queries() {
    let s = schema();
    let (mut id, mut types, mut size, mut index) = (0u32, 0usize, 0usize, 0usize);
    ok(ffi!(tp_schema_id(s, &mut id)));
    assert_eq!(id, tickpack::Schema::from_json(SCHEMA).unwrap().id());
    ok(ffi!(tp_schema_entity_types(s, &mut types)));
    assert_eq!(types, 2);
    ok(ffi!(tp_schema_record_size(s, 0, &mut size)));
    assert_eq!(size, CAR);
    ok(ffi!(tp_schema_entity_type_index(
        s,
        "flag".as_ptr(),
        4,
        &mut index
    )));
    assert_eq!(index, 1);
    fails(
        ffi!(tp_schema_record_size(s, 2, &mut size)),
        TpStatus::InvalidArgument,
        "entity type 2",
    );
    fails(
        ffi!(tp_schema_entity_type_index(
            s,
            "boat".as_ptr(),
            4,
            &mut index
        )),
        TpStatus::InvalidArgument,
        "boat",
    );
    ok(ffi!(tp_schema_free(s)));

    let toml = "[[entities]]\nname = \"car\"\nfields = [{ name = \"x\", type = \"f32\" }]\n";
    let mut t = null_mut();
    ok(ffi!(tp_schema_from_toml(toml.as_ptr(), toml.len(), &mut t)));
    ok(ffi!(tp_schema_record_size(t, 0, &mut size)));
    assert_eq!(size, 4);
    ok(ffi!(tp_schema_free(t)));
}

#[test]
fn bad_schema_text() {
    let mut s = null_mut();
    let bad = r#"{"entities":[]}"#;
    fails(
        ffi!(tp_schema_from_json(bad.as_ptr(), bad.len(), &mut s)),
        TpStatus::Schema,
        "schema",
    );
    assert!(s.is_null());
    let not_utf8 = [0xffu8, 0xfe];
    fails(
        ffi!(tp_schema_from_json(not_utf8.as_ptr(), 2, &mut s)),
        TpStatus::InvalidArgument,
        "utf-8",
    );
    fails(
        ffi!(tp_schema_from_json(null(), 5, &mut s)),
        TpStatus::NullPointer,
        "text is null",
    );
    fails(
        ffi!(tp_schema_from_json(
            SCHEMA.as_ptr(),
            SCHEMA.len(),
            null_mut()
        )),
        TpStatus::NullPointer,
        "handle out-parameter",
    );
}

/// A handle out-parameter that is not aligned for a pointer is refused,
/// as every other out-parameter is, instead of being written through
/// (undefined behaviour; in a debug build, an abort).
#[test]
fn a_misaligned_handle_out_parameter_is_refused() {
    let mut words = [0usize; 2];
    let misaligned = words
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_add(1)
        .cast::<*mut TpSchema>();
    fails(
        ffi!(tp_schema_from_json(
            SCHEMA.as_ptr(),
            SCHEMA.len(),
            misaligned
        )),
        TpStatus::InvalidArgument,
        "handle out-parameter is misaligned",
    );
    assert_eq!(words, [0, 0], "nothing written");
}

#[test]
fn sections_sort_refuse_duplicates_and_read_back() {
    let s = schema();
    let snap = snapshot_with(s, &[9, 3, 5], &[car(9.0, 1), car(3.0, 2), car(5.0, 3)]);
    let mut count = 0usize;
    ok(ffi!(tp_snapshot_section_len(snap, 0, &mut count)));
    assert_eq!(count, 3);

    let mut ids = [0u32; 3];
    let mut recs = [[0u8; CAR]; 3];
    fails(
        ffi!(tp_snapshot_get_section(
            snap,
            0,
            ids.as_mut_ptr(),
            recs.as_mut_ptr().cast(),
            2,
            CAR,
            &mut count
        )),
        TpStatus::BufferTooSmall,
        "needs 3",
    );
    assert_eq!((count, ids), (3, [0; 3]), "nothing copied when too small");
    ok(ffi!(tp_snapshot_get_section(
        snap,
        0,
        ids.as_mut_ptr(),
        recs.as_mut_ptr().cast(),
        3,
        CAR,
        &mut count
    )));
    assert_eq!(ids, [3, 5, 9]);
    assert_eq!(recs, [car(3.0, 2), car(5.0, 3), car(9.0, 1)]);
    fails(
        ffi!(tp_snapshot_get_section(
            snap,
            0,
            null_mut(),
            null_mut(),
            3,
            4,
            &mut count
        )),
        TpStatus::InvalidArgument,
        "record size 4",
    );

    let dup = [1u32, 1];
    let two = [car(0.0, 0), car(1.0, 1)];
    fails(
        ffi!(tp_snapshot_set_section(
            snap,
            0,
            dup.as_ptr(),
            two.as_ptr().cast(),
            2,
            CAR
        )),
        TpStatus::InvalidArgument,
        "appears twice",
    );
    fails(
        ffi!(tp_snapshot_set_section(
            snap,
            0,
            null(),
            two.as_ptr().cast(),
            2,
            CAR
        )),
        TpStatus::NullPointer,
        "ids",
    );
    // Refused calls leave the section as it was.
    ok(ffi!(tp_snapshot_section_len(snap, 0, &mut count)));
    assert_eq!(count, 3);
    ok(ffi!(tp_snapshot_clear(snap)));
    ok(ffi!(tp_snapshot_section_len(snap, 0, &mut count)));
    assert_eq!(count, 0);
    ok(ffi!(tp_snapshot_free(snap)));
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn handles_of_the_wrong_kind_are_refused() {
    let s = schema();
    let snap = snapshot_with(s, &[1], &[car(1.0, 1)]);
    let mut size = 0usize;
    fails(
        ffi!(tp_schema_record_size(snap.cast(), 0, &mut size)),
        TpStatus::WrongHandle,
        "expected a TpSchema, got a TpSnapshot",
    );
    fails(
        ffi!(tp_schema_free(snap.cast())),
        TpStatus::WrongHandle,
        "expected a TpSchema",
    );
    // Memory that is no handle at all.
    let fake = [0u64; 8];
    fails(
        ffi!(tp_snapshot_clear(fake.as_ptr().cast_mut().cast())),
        TpStatus::WrongHandle,
        "not a tickpack handle",
    );
    // Null handles, and freeing null.
    fails(
        ffi!(tp_snapshot_clear(null_mut())),
        TpStatus::NullPointer,
        "TpSnapshot is null",
    );
    ok(ffi!(tp_snapshot_free(null_mut())));
    // The same handle as two arguments of one call.
    let mut enc = null_mut();
    ok(ffi!(tp_encoder_new(s, TP_DEFAULT_LEVEL, &mut enc)));
    let mut buf = [0u8; 256];
    let mut n = 0usize;
    fails(
        ffi!(tp_encoder_encode(
            enc,
            enc.cast(),
            0,
            null(),
            0,
            buf.as_mut_ptr(),
            buf.len(),
            &mut n
        )),
        TpStatus::InvalidArgument,
        "passed twice",
    );
    ok(ffi!(tp_encoder_free(enc)));
    ok(ffi!(tp_snapshot_free(snap)));
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn encoder_and_decoder_round_trip_with_a_baseline() {
    let s = schema();
    let t0 = snapshot_with(s, &[1, 2], &[car(1.0, 0), car(2.0, 0)]);
    let t1 = snapshot_with(s, &[2, 3], &[car(2.5, 1), car(3.0, 0)]);
    let (mut enc, mut dec, mut got0, mut got1) = (null_mut(), null_mut(), null_mut(), null_mut());
    ok(ffi!(tp_encoder_new(s, TP_DEFAULT_LEVEL, &mut enc)));
    ok(ffi!(tp_encoder_set_checksum(enc, 1)));
    ok(ffi!(tp_decoder_new(s, &mut dec)));
    ok(ffi!(tp_snapshot_new(s, &mut got0)));
    ok(ffi!(tp_snapshot_new(s, &mut got1)));

    let mut key = [0u8; 512];
    let (mut n, mut bound) = (0usize, 0usize);
    ok(ffi!(tp_encoder_max_size(enc, t0, null(), &mut bound)));
    fails(
        ffi!(tp_encoder_encode(
            enc,
            t0,
            7,
            null(),
            0,
            key.as_mut_ptr(),
            3,
            &mut n
        )),
        TpStatus::BufferTooSmall,
        "out needs",
    );
    let needed = n;
    assert!(needed > 3 && needed <= bound, "{needed} {bound}");
    ok(ffi!(tp_encoder_encode(
        enc,
        t0,
        7,
        null(),
        0,
        key.as_mut_ptr(),
        key.len(),
        &mut n
    )));
    assert_eq!(n, needed);
    let mut info = TpPacketInfo::default();
    ok(ffi!(tp_decoder_decode(
        dec,
        key.as_ptr(),
        n,
        null(),
        0,
        got0,
        &mut info
    )));
    assert_eq!((info.sequence, info.has_baseline), (7, false));
    let mut eq = false;
    ok(ffi!(tp_snapshot_equal(got0, t0, &mut eq)));
    assert!(eq);

    let mut delta = [0u8; 512];
    let mut m = 0usize;
    ok(ffi!(tp_encoder_encode(
        enc,
        t1,
        8,
        got0,
        7,
        delta.as_mut_ptr(),
        delta.len(),
        &mut m
    )));
    ok(ffi!(tp_packet_info(delta.as_ptr(), m, &mut info)));
    assert_eq!(
        (info.sequence, info.has_baseline, info.baseline),
        (8, true, 7)
    );
    fails(
        ffi!(tp_decoder_decode(
            dec,
            delta.as_ptr(),
            m,
            null(),
            0,
            got1,
            null_mut()
        )),
        TpStatus::Decode,
        "baseline",
    );
    ok(ffi!(tp_decoder_decode(
        dec,
        delta.as_ptr(),
        m,
        got0,
        7,
        got1,
        null_mut()
    )));
    ok(ffi!(tp_snapshot_equal(got1, t1, &mut eq)));
    assert!(eq);

    // Every truncation of the delta is refused with a typed error.
    for len in 0..m {
        let st = ffi!(tp_decoder_decode(
            dec,
            delta.as_ptr(),
            len,
            got0,
            7,
            got1,
            null_mut()
        ));
        assert_eq!(st, TpStatus::Decode, "length {len}");
    }
    for h in [got1, got0, t1, t0] {
        ok(ffi!(tp_snapshot_free(h)));
    }
    ok(ffi!(tp_decoder_free(dec)));
    ok(ffi!(tp_encoder_free(enc)));
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn limits_bound_encoder_and_decoder() {
    let s = schema();
    let world = snapshot_with(s, &[1, 2, 3], &[car(1.0, 0), car(2.0, 0), car(3.0, 0)]);
    let (mut enc, mut dec, mut got) = (null_mut(), null_mut(), null_mut());
    ok(ffi!(tp_encoder_new(s, TP_DEFAULT_LEVEL, &mut enc)));
    ok(ffi!(tp_decoder_new(s, &mut dec)));
    ok(ffi!(tp_snapshot_new(s, &mut got)));
    let mut limits = TpLimits {
        max_entities_per_section: 0,
        max_decoded_bytes: 0,
        max_snapshot_bytes: 0,
    };
    ok(ffi!(tp_limits_default(&mut limits)));
    assert_eq!(limits.max_entities_per_section, 65_536);
    limits.max_entities_per_section = 2;

    let mut packet = [0u8; 512];
    let mut n = 0usize;
    ok(ffi!(tp_encoder_encode(
        enc,
        world,
        0,
        null(),
        0,
        packet.as_mut_ptr(),
        packet.len(),
        &mut n
    )));
    ok(ffi!(tp_decoder_set_limits(dec, &limits)));
    fails(
        ffi!(tp_decoder_decode(
            dec,
            packet.as_ptr(),
            n,
            null(),
            0,
            got,
            null_mut()
        )),
        TpStatus::Decode,
        "announces 3 entities, limit is 2",
    );
    ok(ffi!(tp_decoder_set_limits(dec, null())));
    ok(ffi!(tp_decoder_decode(
        dec,
        packet.as_ptr(),
        n,
        null(),
        0,
        got,
        null_mut()
    )));

    ok(ffi!(tp_encoder_set_limits(enc, &limits)));
    fails(
        ffi!(tp_encoder_encode(
            enc,
            world,
            1,
            null(),
            0,
            packet.as_mut_ptr(),
            packet.len(),
            &mut n
        )),
        TpStatus::Encode,
        "has 3 entities, limit is 2",
    );
    for h in [got, world] {
        ok(ffi!(tp_snapshot_free(h)));
    }
    ok(ffi!(tp_decoder_free(dec)));
    ok(ffi!(tp_encoder_free(enc)));
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn dictionary_set_from_a_directory() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../dictionaries/cube-pile/1");
    let mut set = null_mut();
    ok(ffi!(tp_dictset_load(dir.as_ptr(), dir.len(), &mut set)));
    let (mut s, mut enc, mut dec, mut got) = (null_mut(), null_mut(), null_mut(), null_mut());
    ok(ffi!(tp_dictset_schema(set, &mut s)));
    let (mut size, mut set_id) = (0usize, 0u32);
    ok(ffi!(tp_schema_record_size(s, 0, &mut size)));
    ok(ffi!(tp_dictset_id(set, &mut set_id)));
    assert_ne!(set_id, 0);

    let mut world = null_mut();
    ok(ffi!(tp_snapshot_new(s, &mut world)));
    let ids: Vec<u32> = (0..40).collect();
    let records: Vec<u8> = (0..40 * size).map(|i| (i % 7) as u8).collect();
    ok(ffi!(tp_snapshot_set_section(
        world,
        0,
        ids.as_ptr(),
        records.as_ptr().cast(),
        40,
        size
    )));
    ok(ffi!(tp_encoder_from_dictset(
        set,
        TP_DEFAULT_LEVEL,
        &mut enc
    )));
    ok(ffi!(tp_decoder_from_dictset(set, &mut dec)));
    ok(ffi!(tp_snapshot_new(s, &mut got)));
    let mut packet = vec![0u8; 64 * 1024];
    let mut n = 0usize;
    ok(ffi!(tp_encoder_encode(
        enc,
        world,
        0,
        null(),
        0,
        packet.as_mut_ptr(),
        packet.len(),
        &mut n
    )));
    let mut info = TpPacketInfo::default();
    ok(ffi!(tp_decoder_decode(
        dec,
        packet.as_ptr(),
        n,
        null(),
        0,
        got,
        &mut info
    )));
    assert!(info.uses_dictionary, "keyframes use the set's dictionary");
    let mut schema_id = 0u32;
    ok(ffi!(tp_schema_id(s, &mut schema_id)));
    assert!(info.has_ids && info.schema_id == schema_id && info.has_dictionary_id);
    let mut eq = false;
    ok(ffi!(tp_snapshot_equal(got, world, &mut eq)));
    assert!(eq);

    // A server with the set needs the set's schema.
    let plain = schema();
    let mut server = null_mut();
    fails(
        ffi!(tp_server_new(plain, set, null(), &mut server)),
        TpStatus::InvalidArgument,
        "tp_dictset_schema",
    );
    ok(ffi!(tp_server_new(s, set, null(), &mut server)));
    let mut client = null_mut();
    ok(ffi!(tp_client_new(s, set, null(), &mut client)));
    ok(ffi!(tp_server_add_client(server, 3)));
    let mut msg = [0u8; TP_CLIENT_MESSAGE_MAX];
    for tick in 0..3u16 {
        ok(ffi!(tp_server_begin_tick(server, world, null_mut())));
        ok(ffi!(tp_server_encode(
            server,
            3,
            packet.as_mut_ptr(),
            packet.len(),
            &mut n
        )));
        ok(ffi!(tp_packet_info(packet.as_ptr(), n, &mut info)));
        assert!(info.uses_dictionary && info.has_baseline == (tick > 0));
        let mut r = TpReceived {
            outcome: TpOutcome::Stale,
            sequence: 0,
            has_baseline: false,
            baseline: 0,
        };
        ok(ffi!(tp_client_receive(client, packet.as_ptr(), n, &mut r)));
        assert_eq!(r.outcome, TpOutcome::Applied, "{}", last_message());
        let mut m = 0usize;
        ok(ffi!(tp_client_message(
            client,
            msg.as_mut_ptr(),
            msg.len(),
            &mut m
        )));
        ok(ffi!(tp_server_on_message_from(server, 3, msg.as_ptr(), m)));
    }
    ok(ffi!(tp_client_latest(client, got, null_mut())));
    ok(ffi!(tp_snapshot_equal(got, world, &mut eq)));
    assert!(eq);
    ok(ffi!(tp_client_free(client)));
    ok(ffi!(tp_server_free(server)));

    let missing = "/nonexistent/set";
    let mut none = null_mut();
    fails(
        ffi!(tp_dictset_load(missing.as_ptr(), missing.len(), &mut none)),
        TpStatus::Dictionary,
        "dictionary set",
    );
    ok(ffi!(tp_schema_free(plain)));
    for h in [got, world] {
        ok(ffi!(tp_snapshot_free(h)));
    }
    ok(ffi!(tp_decoder_free(dec)));
    ok(ffi!(tp_encoder_free(enc)));
    ok(ffi!(tp_schema_free(s)));
    ok(ffi!(tp_dictset_free(set)));
}

#[test]
fn status_names() {
    // SAFETY: `tp_status_name` returns static NUL-terminated strings.
    let name = |s: i32| unsafe { CStr::from_ptr(tp_status_name(s)) };
    assert_eq!(name(3).to_str(), Ok("TP_STATUS_BUFFER_TOO_SMALL"));
    assert_eq!(name(TpStatus::Panic as i32).to_str(), Ok("TP_STATUS_PANIC"));
    assert_eq!(name(-1).to_str(), Ok("TP_STATUS_UNKNOWN"));
}

/// A handle freed twice, or used after its free, is refused with
/// `TP_STATUS_WRONG_HANDLE`, also once a newer handle may sit at the
/// freed address, which the stale handle must not reach.
#[test]
fn freed_handles_are_refused_and_never_reach_newer_ones() {
    let s = schema();
    let a = snapshot_with(s, &[], &[]);
    ok(ffi!(tp_snapshot_free(a)));
    fails(
        ffi!(tp_snapshot_free(a)),
        TpStatus::WrongHandle,
        "not a tickpack handle",
    );
    // Newer snapshots, one likely where `a` was.
    let newer: Vec<_> = (0..4).map(|_| snapshot_with(s, &[], &[])).collect();
    let ids = [5u32];
    let cars = [car(1.0, 1)];
    fails(
        ffi!(tp_snapshot_set_section(
            a,
            0,
            ids.as_ptr(),
            cars.as_ptr().cast(),
            1,
            CAR
        )),
        TpStatus::WrongHandle,
        "not a tickpack handle",
    );
    for &h in &newer {
        let mut n = 9usize;
        ok(ffi!(tp_snapshot_section_len(h, 0, &mut n)));
        assert_eq!(n, 0, "a newer handle was written through a freed one");
        ok(ffi!(tp_snapshot_free(h)));
    }
    ok(ffi!(tp_schema_free(s)));
    fails(
        ffi!(tp_schema_free(s)),
        TpStatus::WrongHandle,
        "not a tickpack handle",
    );
}
