//! The network endpoints called from Rust as C would call them: full
//! connect / tick / receive rounds through the C API over an in-memory
//! link, with each interest kind.

// These tests call the `unsafe extern "C"` functions directly.
#![allow(unsafe_code, clippy::unwrap_used)]

#[macro_use]
mod common;

use core::ffi::c_void;
use std::ptr::{null, null_mut};

use common::net::*;
use common::*;
use tickpack_ffi::net_client::*;
use tickpack_ffi::net_event::*;
use tickpack_ffi::net_interest::*;
use tickpack_ffi::net_server::*;
use tickpack_ffi::net_server_query::*;
use tickpack_ffi::snapshot::*;
use tickpack_ffi::*;

#[test]
fn a_client_connects_and_applies_what_the_server_sent_it() {
    let mut lobby = Lobby::new(null(), &[42]);
    let mut kinds = Vec::new();
    for t in 0..30 {
        let w = world(lobby.schema, t);
        lobby.tick(w);
        ok(ffi!(tp_snapshot_free(w)));
        kinds.extend(lobby.server_events().iter().map(|e| (e.kind, e.user)));
    }
    assert!(kinds.contains(&(TpNetEventKind::ClientConnected, 42)));
    assert!(kinds.iter().any(|k| k.0 == TpNetEventKind::ClientReady));
    let (equal, ids) = lobby.applied_matches(0, 0);
    assert!(equal);
    assert_eq!(ids, (1..=8).collect::<Vec<_>>());
    let mut e = std::mem::MaybeUninit::uninit();
    let mut applied = 0;
    let mut connected = false;
    while ffi!(tp_net_client_poll_event(lobby.clients[0], e.as_mut_ptr())) == TpStatus::Ok {
        // SAFETY: written by the call that returned OK.
        match unsafe { e.assume_init() }.kind {
            TpNetEventKind::SnapshotApplied => applied += 1,
            TpNetEventKind::Connected => connected = true,
            _ => {}
        }
    }
    assert!(connected && applied > 20, "{applied}");
    let mut is_connected = false;
    let mut reason = TpDisconnectReason::Other;
    ok(ffi!(tp_net_client_state(
        lobby.clients[0],
        &mut is_connected,
        &mut reason
    )));
    assert!(is_connected);
    assert_eq!(reason, TpDisconnectReason::None);
    let mut stats = TpNetServerStats::default();
    ok(ffi!(tp_net_server_stats(lobby.server, &mut stats)));
    assert_eq!((stats.clients, stats.ticks), (1, 30));
    let mut counters = TpNetClientCounters::default();
    ok(ffi!(tp_net_client_stats(lobby.clients[0], &mut counters)));
    assert!(counters.applied > 20);
    // The presented world holds the cars too.
    let mut presented = null_mut();
    ok(ffi!(tp_snapshot_new(lobby.schema, &mut presented)));
    ok(ffi!(tp_net_client_presented(lobby.clients[0], presented)));
    let mut n = 0;
    ok(ffi!(tp_snapshot_section_len(presented, 0, &mut n)));
    assert_eq!(n, 8);
    ok(ffi!(tp_snapshot_free(presented)));
    // Kicked: the server reports it and the client sees why.
    let mut was = false;
    ok(ffi!(tp_net_server_kick(
        lobby.server,
        lobby.now,
        0,
        &mut was
    )));
    assert!(was);
    lobby.pump();
    let events = lobby.server_events();
    assert!(events
        .iter()
        .any(|e| e.kind == TpNetEventKind::ClientDisconnected
            && e.reason == TpDisconnectReason::Kicked
            && e.user == 42));
    ok(ffi!(tp_net_client_state(
        lobby.clients[0],
        &mut is_connected,
        &mut reason
    )));
    assert!(!is_connected);
    assert_eq!(reason, TpDisconnectReason::Kicked);
}

/// Sends the even entity ids of type 0 and nothing of type 1; counts its
/// calls in `*user`.
unsafe extern "C" fn even_only(user: *mut c_void, _client: u16, ty: usize, entity: u32) -> i32 {
    // SAFETY: the test passes a pointer to its live `u32` counter.
    unsafe { *user.cast::<u32>() += 1 };
    i32::from(ty == 0 && entity.is_multiple_of(2))
}

#[test]
fn a_callback_interest_decides_per_entity() {
    let mut calls = 0u32;
    let interest = TpInterestConfig {
        kind: TP_INTEREST_CALLBACK,
        entity_type: 0,
        position_field: null(),
        position_field_len: 0,
        near: 0.0,
        far: 0.0,
        hold_skipped: 0,
        callback: Some(even_only),
        user: (&raw mut calls).cast(),
    };
    let mut lobby = Lobby::new(&interest, &[1]);
    for t in 0..20 {
        let w = world(lobby.schema, t);
        lobby.tick(w);
        ok(ffi!(tp_snapshot_free(w)));
    }
    let (equal, ids) = lobby.applied_matches(0, 0);
    assert!(equal);
    assert_eq!(ids, vec![2, 4, 6, 8]);
    assert!(calls >= 8 * 19, "{calls}");
}

/// Tries to call into the library from inside the callback; records the
/// status in `*user`.
unsafe extern "C" fn reentrant(user: *mut c_void, _client: u16, _ty: usize, _id: u32) -> i32 {
    let mut stats = TpNetServerStats::default();
    // The server behind the callback is borrowed: any call is refused,
    // so a null handle is as good as the real one here.
    let status = ffi!(tp_net_server_stats(null(), &mut stats));
    // SAFETY: the test passes a pointer to its live status.
    unsafe { *user.cast::<Option<TpStatus>>() = Some(status) };
    1
}

#[test]
fn a_callback_cannot_call_into_the_library() {
    let mut seen: Option<TpStatus> = None;
    let interest = TpInterestConfig {
        kind: TP_INTEREST_CALLBACK,
        entity_type: 0,
        position_field: null(),
        position_field_len: 0,
        near: 0.0,
        far: 0.0,
        hold_skipped: 0,
        callback: Some(reentrant),
        user: (&raw mut seen).cast(),
    };
    let mut lobby = Lobby::new(&interest, &[1]);
    let w = world(lobby.schema, 0);
    for _ in 0..10 {
        lobby.tick(w);
    }
    ok(ffi!(tp_snapshot_free(w)));
    assert_eq!(seen, Some(TpStatus::InvalidArgument));
    // Outside the callback, calls work again.
    let mut stats = TpNetServerStats::default();
    ok(ffi!(tp_net_server_stats(lobby.server, &mut stats)));
}

#[test]
fn tiers_view_from_the_focus_entity() {
    // Cars 50 apart on a line; near is 60, far 120.
    let interest = tiered("pos", 60.0);
    let mut lobby = Lobby::new(&interest, &[1]);
    let mut seen_far = 0;
    let mut missing_far = 0;
    for t in 0..24 {
        if t == 12 {
            // From now on the client views from car 8, at the far end.
            ok(ffi!(tp_net_server_set_focus(lobby.server, 0, 8)));
        }
        let w = world(lobby.schema, 0);
        lobby.tick(w);
        ok(ffi!(tp_snapshot_free(w)));
        if t < 3 {
            continue;
        }
        let (equal, ids) = lobby.applied_matches(0, 0);
        assert!(equal);
        let (near, far) = if t < 12 { (1, 8) } else { (8, 1) };
        if !(12..=13).contains(&t) {
            assert!(ids.contains(&near), "tick {t}: {ids:?}");
        }
        seen_far += usize::from(ids.contains(&far));
        missing_far += usize::from(!ids.contains(&far));
    }
    assert!(seen_far > 0 && missing_far > 0, "{seen_far} {missing_far}");
}
