//! Every argument of a call is checked before the call does any work: a
//! call that fails on a null or misaligned pointer changes nothing (no
//! send counted, no tick begun, no packet applied, no snapshot filled).

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

/// A pointer to a `T` one byte past an aligned address in `words`.
fn misaligned<T>(words: &mut [u64; 8]) -> *mut T {
    words.as_mut_ptr().cast::<u8>().wrapping_add(1).cast()
}

fn packets(server: *const TpServer) -> u64 {
    let mut stats = TpServerStats::default();
    ok(ffi!(tp_server_stats(server, &mut stats)));
    stats.packets
}

#[test]
fn server_calls_refuse_bad_out_parameters_before_any_work() {
    let s = schema();
    let mut server = null_mut();
    ok(ffi!(tp_server_new(s, null(), null(), &mut server)));
    ok(ffi!(tp_server_add_client(server, 1)));
    let world = snapshot_with(s, &[4], &[car(1.0, 4)]);
    let mut words = [0u64; 8];

    // A misaligned sequence: no tick is begun.
    fails(
        ffi!(tp_server_begin_tick(server, world, misaligned(&mut words))),
        TpStatus::InvalidArgument,
        "sequence is misaligned",
    );
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
    let mut seq = 0u16;
    ok(ffi!(tp_server_begin_tick(server, world, &mut seq)));

    // Null or misaligned `written`, null `out` with room claimed: no send.
    fails(
        ffi!(tp_server_encode(
            server,
            1,
            buf.as_mut_ptr(),
            buf.len(),
            null_mut()
        )),
        TpStatus::NullPointer,
        "written is null",
    );
    fails(
        ffi!(tp_server_encode(
            server,
            1,
            buf.as_mut_ptr(),
            buf.len(),
            misaligned(&mut words)
        )),
        TpStatus::InvalidArgument,
        "written is misaligned",
    );
    fails(
        ffi!(tp_server_encode(server, 1, null_mut(), 64, &mut n)),
        TpStatus::NullPointer,
        "out is null",
    );
    assert_eq!(packets(server), 0, "no send was counted");
    ok(ffi!(tp_server_encode(
        server,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    assert_eq!(packets(server), 1);

    assert_eq!(words, [0; 8], "nothing written");

    ok(ffi!(tp_snapshot_free(world)));
    ok(ffi!(tp_server_free(server)));
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn decoder_and_client_calls_refuse_bad_out_parameters_before_any_work() {
    let s = schema();
    let (mut enc, mut dec, mut got) = (null_mut(), null_mut(), null_mut());
    ok(ffi!(tp_encoder_new(s, TP_DEFAULT_LEVEL, &mut enc)));
    ok(ffi!(tp_decoder_new(s, &mut dec)));
    ok(ffi!(tp_snapshot_new(s, &mut got)));
    let world = snapshot_with(s, &[4], &[car(1.0, 4)]);
    let mut buf = [0u8; 1024];
    let mut n = 0usize;
    let mut words = [0u64; 8];
    fails(
        ffi!(tp_encoder_encode(
            enc,
            world,
            3,
            null(),
            0,
            buf.as_mut_ptr(),
            buf.len(),
            misaligned(&mut words)
        )),
        TpStatus::InvalidArgument,
        "written is misaligned",
    );
    ok(ffi!(tp_encoder_encode(
        enc,
        world,
        3,
        null(),
        0,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));

    // A misaligned info: `got` is not filled.
    fails(
        ffi!(tp_decoder_decode(
            dec,
            buf.as_ptr(),
            n,
            null(),
            0,
            got,
            misaligned(&mut words)
        )),
        TpStatus::InvalidArgument,
        "info is misaligned",
    );
    let mut count = 9usize;
    ok(ffi!(tp_snapshot_section_len(got, 0, &mut count)));
    assert_eq!(count, 0, "the failed decode filled the snapshot");

    // A misaligned sequence: `got` is not overwritten with the latest.
    let mut client = null_mut();
    ok(ffi!(tp_client_new(s, null(), null(), &mut client)));
    let mut server = null_mut();
    ok(ffi!(tp_server_new(s, null(), null(), &mut server)));
    ok(ffi!(tp_server_add_client(server, 1)));
    ok(ffi!(tp_server_begin_tick(server, world, null_mut())));
    ok(ffi!(tp_server_encode(
        server,
        1,
        buf.as_mut_ptr(),
        buf.len(),
        &mut n
    )));
    let mut r = TpReceived {
        outcome: TpOutcome::Other,
        sequence: 0,
        has_baseline: false,
        baseline: 0,
    };
    ok(ffi!(tp_client_receive(client, buf.as_ptr(), n, &mut r)));
    assert_eq!(r.outcome, TpOutcome::Applied);
    fails(
        ffi!(tp_client_latest(client, got, misaligned(&mut words))),
        TpStatus::InvalidArgument,
        "sequence is misaligned",
    );
    ok(ffi!(tp_snapshot_section_len(got, 0, &mut count)));
    assert_eq!(count, 0, "the failed call overwrote the snapshot");

    // Snapshot reads: a misaligned ids buffer writes no count.
    let mut c = 77usize;
    fails(
        ffi!(tp_snapshot_get_section(
            world,
            0,
            misaligned(&mut words),
            null_mut(),
            4,
            CAR,
            &mut c
        )),
        TpStatus::InvalidArgument,
        "ids is not aligned",
    );
    assert_eq!(c, 77, "the count was written by a failed call");
    assert_eq!(words, [0; 8], "nothing written");

    ok(ffi!(tp_client_free(client)));
    ok(ffi!(tp_server_free(server)));
    for h in [got, world] {
        ok(ffi!(tp_snapshot_free(h)));
    }
    ok(ffi!(tp_decoder_free(dec)));
    ok(ffi!(tp_encoder_free(enc)));
    ok(ffi!(tp_schema_free(s)));
}
