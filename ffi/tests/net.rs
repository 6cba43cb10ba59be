//! The network endpoints called from Rust as C would call them: hostile
//! arguments (null, misaligned, stale and wrong-kind handles, short
//! buffers, forged datagrams) and full connect / tick / receive rounds
//! through the C API over an in-memory link.

// These tests call the `unsafe extern "C"` functions directly.
#![allow(unsafe_code, clippy::unwrap_used)]

#[macro_use]
mod common;

use core::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use tickpack_ffi::net_address::*;
use tickpack_ffi::net_client::*;
use tickpack_ffi::net_event::*;
use tickpack_ffi::net_interest::*;
use tickpack_ffi::net_server::*;
use tickpack_ffi::schema::*;
use tickpack_ffi::snapshot::*;
use tickpack_ffi::*;

/// A start time in the tokens' clock (milliseconds since the Unix epoch).
const T0: u64 = 1_700_000_000_000;

fn addr(port: u16) -> TpAddress {
    TpAddress {
        family: TP_ADDRESS_IPV4,
        port,
        bytes: [127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    }
}

fn server_config() -> TpNetServerConfig {
    let mut c = std::mem::MaybeUninit::uninit();
    ok(ffi!(tp_net_server_config_default(c.as_mut_ptr())));
    // SAFETY: written by the call above.
    let mut c = unsafe { c.assume_init() };
    c.protocol_id = 9;
    ok(ffi!(tp_net_key_generate(
        c.private_key.as_mut_ptr(),
        c.private_key.len()
    )));
    c
}

fn server(schema: *const TpSchema, interest: *const TpInterestConfig) -> *mut TpNetServer {
    let mut s = null_mut();
    ok(ffi!(tp_net_server_new(
        schema,
        null(),
        &server_config(),
        interest,
        &mut s
    )));
    s
}

fn token(server: *const TpNetServer, user: u64) -> Vec<u8> {
    let mut t = vec![0u8; TP_NET_TOKEN_BYTES];
    let mut len = 0;
    ok(ffi!(tp_net_server_issue_token(
        server,
        user,
        T0,
        60,
        5,
        t.as_mut_ptr(),
        t.len(),
        &mut len
    )));
    t.truncate(len);
    t
}

/// A server and its clients joined by a lossless in-memory link: client
/// `i` is at port `5000 + i`, the server at 4000.
struct Lobby {
    schema: *mut TpSchema,
    server: *mut TpNetServer,
    clients: Vec<*mut TpNetClient>,
    now: u64,
}

impl Lobby {
    fn new(interest: *const TpInterestConfig, users: &[u64]) -> Self {
        let schema = schema();
        let server = server(schema, interest);
        let clients = users
            .iter()
            .map(|&u| {
                let t = token(server, u);
                let mut c = null_mut();
                ok(ffi!(tp_net_client_new(
                    schema,
                    null(),
                    null(),
                    t.as_ptr(),
                    t.len(),
                    &addr(4000),
                    T0,
                    &mut c
                )));
                c
            })
            .collect();
        Self {
            schema,
            server,
            clients,
            now: T0,
        }
    }

    /// Moves every queued datagram, both ways, a few rounds.
    fn pump(&mut self) {
        let mut buf = [0u8; 1500];
        for _ in 0..4 {
            let (mut len, mut to) = (0usize, TpAddress::default());
            while ffi!(tp_net_server_poll_transmit(
                self.server,
                self.now,
                buf.as_mut_ptr(),
                buf.len(),
                &mut len,
                &mut to
            )) == TpStatus::Ok
            {
                let i = usize::from(to.port - 5000);
                ok(ffi!(tp_net_client_handle(
                    self.clients[i],
                    self.now,
                    &addr(4000),
                    buf.as_ptr(),
                    len,
                    null_mut()
                )));
            }
            for (i, &c) in self.clients.iter().enumerate() {
                ok(ffi!(tp_net_client_handle_timeout(c, self.now)));
                while ffi!(tp_net_client_poll_transmit(
                    c,
                    self.now,
                    buf.as_mut_ptr(),
                    buf.len(),
                    &mut len,
                    null_mut()
                )) == TpStatus::Ok
                {
                    let from = addr(5000 + u16::try_from(i).unwrap());
                    ok(ffi!(tp_net_server_handle(
                        self.server,
                        self.now,
                        &from,
                        buf.as_ptr(),
                        len,
                        null_mut()
                    )));
                }
            }
            ok(ffi!(tp_net_server_handle_timeout(self.server, self.now)));
        }
    }

    fn tick(&mut self, world: *const TpSnapshot) {
        ok(ffi!(tp_net_server_tick(
            self.server,
            self.now,
            world,
            null_mut()
        )));
        self.pump();
        self.now += 16;
    }

    fn server_events(&mut self) -> Vec<TpNetEvent> {
        let mut out = Vec::new();
        let mut e = std::mem::MaybeUninit::uninit();
        while ffi!(tp_net_server_poll_event(self.server, e.as_mut_ptr())) == TpStatus::Ok {
            // SAFETY: written by the call that returned OK.
            out.push(unsafe { e.assume_init() });
        }
        out
    }

    /// Whether client `i`'s newest applied snapshot is what the server
    /// sent it (server id `id`), and its entity ids of type 0.
    fn applied_matches(&self, i: usize, id: u16) -> (bool, Vec<u32>) {
        let (mut applied, mut sent) = (null_mut(), null_mut());
        ok(ffi!(tp_snapshot_new(self.schema, &mut applied)));
        ok(ffi!(tp_snapshot_new(self.schema, &mut sent)));
        let mut seq = 0u16;
        ok(ffi!(tp_net_client_latest(
            self.clients[i],
            applied,
            &mut seq
        )));
        ok(ffi!(tp_net_server_sent_state(self.server, id, seq, sent)));
        let mut equal = false;
        ok(ffi!(tp_snapshot_equal(applied, sent, &mut equal)));
        let mut ids = vec![0u32; 64];
        let mut n = 0;
        ok(ffi!(tp_snapshot_get_section(
            applied,
            0,
            ids.as_mut_ptr(),
            null_mut(),
            ids.len(),
            CAR,
            &mut n
        )));
        ids.truncate(n);
        ok(ffi!(tp_snapshot_free(applied)));
        ok(ffi!(tp_snapshot_free(sent)));
        (equal, ids)
    }
}

impl Drop for Lobby {
    fn drop(&mut self) {
        for &c in &self.clients {
            ok(ffi!(tp_net_client_free(c)));
        }
        ok(ffi!(tp_net_server_free(self.server)));
        ok(ffi!(tp_schema_free(self.schema)));
    }
}

fn world(schema: *const TpSchema, tick: u32) -> *mut TpSnapshot {
    let ids: Vec<u32> = (1..=8).collect();
    let cars: Vec<[u8; CAR]> = ids
        .iter()
        .map(|&i| car(i as f32 * 50.0 + tick as f32, 1))
        .collect();
    snapshot_with(schema, &ids, &cars)
}

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

fn tiered(field: &str, near: f32) -> TpInterestConfig {
    TpInterestConfig {
        kind: TP_INTEREST_TIERED,
        entity_type: 0,
        position_field: field.as_ptr(),
        position_field_len: field.len(),
        near,
        far: near * 2.0,
        hold_skipped: 0,
        callback: None,
        user: null_mut(),
    }
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

#[test]
fn bad_configurations_are_refused() {
    let s = schema();
    let mut out = null_mut();
    let c = server_config();
    fails(
        ffi!(tp_net_server_new(s, null(), null(), null(), &mut out)),
        TpStatus::NullPointer,
        "config",
    );
    fails(
        ffi!(tp_net_server_new(s, null(), &c, null(), null_mut())),
        TpStatus::NullPointer,
        "handle out-parameter",
    );
    let small = TpNetServerConfig { mtu: 40, ..c };
    fails(
        ffi!(tp_net_server_new(s, null(), &small, null(), &mut out)),
        TpStatus::Net,
        "mtu",
    );
    let none = TpNetServerConfig {
        max_clients: 0,
        ..c
    };
    fails(
        ffi!(tp_net_server_new(s, null(), &none, null(), &mut out)),
        TpStatus::Net,
        "max_clients",
    );
    let free_rate = TpNetServerConfig {
        bytes_per_second: 0,
        ..c
    };
    fails(
        ffi!(tp_net_server_new(s, null(), &free_rate, null(), &mut out)),
        TpStatus::InvalidArgument,
        "bytes_per_second",
    );
    let kind = TpInterestConfig {
        kind: 7,
        ..tiered("pos", 1.0)
    };
    fails(
        ffi!(tp_net_server_new(s, null(), &c, &kind, &mut out)),
        TpStatus::InvalidArgument,
        "interest kind 7",
    );
    for (field, message) in [("speed", "no field named"), ("lap", "not f32")] {
        let i = tiered(field, 1.0);
        fails(
            ffi!(tp_net_server_new(s, null(), &c, &i, &mut out)),
            TpStatus::InvalidArgument,
            message,
        );
    }
    let nan = tiered("pos", f32::NAN);
    fails(
        ffi!(tp_net_server_new(s, null(), &c, &nan, &mut out)),
        TpStatus::InvalidArgument,
        "near",
    );
    let past = TpInterestConfig {
        entity_type: 2,
        ..tiered("pos", 1.0)
    };
    fails(
        ffi!(tp_net_server_new(s, null(), &c, &past, &mut out)),
        TpStatus::InvalidArgument,
        "entity type 2",
    );
    let no_fn = TpInterestConfig {
        kind: TP_INTEREST_CALLBACK,
        ..tiered("pos", 1.0)
    };
    fails(
        ffi!(tp_net_server_new(s, null(), &c, &no_fn, &mut out)),
        TpStatus::NullPointer,
        "callback",
    );
    assert!(out.is_null(), "no handle made by a failed call");
    let mut key = [0u8; 31];
    fails(
        ffi!(tp_net_key_generate(key.as_mut_ptr(), key.len())),
        TpStatus::InvalidArgument,
        "TP_NET_KEY_BYTES",
    );
    fails(
        ffi!(tp_net_key_generate(null_mut(), 32)),
        TpStatus::NullPointer,
        "key",
    );
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn clients_refuse_bad_tokens_and_addresses() {
    let s = schema();
    let srv = server(s, null());
    let t = token(srv, 1);
    let mut c = null_mut();
    let garbage = [7u8; TP_NET_TOKEN_BYTES];
    fails(
        ffi!(tp_net_client_new(
            s,
            null(),
            null(),
            garbage.as_ptr(),
            garbage.len(),
            &addr(1),
            T0,
            &mut c
        )),
        TpStatus::Net,
        "connection",
    );
    fails(
        ffi!(tp_net_client_new(
            s,
            null(),
            null(),
            t.as_ptr(),
            t.len() - 1,
            &addr(1),
            T0,
            &mut c
        )),
        TpStatus::Net,
        "connection",
    );
    fails(
        ffi!(tp_net_client_new(
            s,
            null(),
            null(),
            null(),
            10,
            &addr(1),
            T0,
            &mut c
        )),
        TpStatus::NullPointer,
        "token",
    );
    let bad = TpAddress {
        family: 0,
        ..addr(1)
    };
    fails(
        ffi!(tp_net_client_new(
            s,
            null(),
            null(),
            t.as_ptr(),
            t.len(),
            &bad,
            T0,
            &mut c
        )),
        TpStatus::InvalidArgument,
        "address family 0",
    );
    fails(
        ffi!(tp_net_client_new(
            s,
            null(),
            null(),
            t.as_ptr(),
            t.len(),
            null(),
            T0,
            &mut c
        )),
        TpStatus::NullPointer,
        "server",
    );
    assert!(c.is_null());
    // A token too large for the buffer: the size needed, nothing else.
    let mut small = [0u8; 16];
    let mut len = 0;
    fails(
        ffi!(tp_net_server_issue_token(
            srv,
            1,
            T0,
            60,
            5,
            small.as_mut_ptr(),
            small.len(),
            &mut len
        )),
        TpStatus::BufferTooSmall,
        "out needs 370",
    );
    assert_eq!(len, TP_NET_TOKEN_BYTES);
    ok(ffi!(tp_net_server_free(srv)));
    ok(ffi!(tp_schema_free(s)));
}

#[test]
fn hostile_datagrams_and_pointers_change_nothing() {
    let mut lobby = Lobby::new(null(), &[1]);
    let w = world(lobby.schema, 0);
    lobby.tick(w);
    // Forged bytes are refused by the connection layer, not an error.
    let forged = [0xAAu8; 200];
    let mut handled = TpHandled::Payload;
    ok(ffi!(tp_net_server_handle(
        lobby.server,
        lobby.now,
        &addr(6000),
        forged.as_ptr(),
        forged.len(),
        &mut handled
    )));
    assert_eq!(handled, TpHandled::Rejected);
    assert!(last_message().contains("rejected"), "{}", last_message());
    ok(ffi!(tp_net_client_handle(
        lobby.clients[0],
        lobby.now,
        &addr(4000),
        forged.as_ptr(),
        forged.len(),
        &mut handled
    )));
    assert_eq!(handled, TpHandled::Rejected);
    let mut stats = TpNetServerStats::default();
    ok(ffi!(tp_net_server_stats(lobby.server, &mut stats)));
    assert_eq!(stats.rejected, 1);
    // A misaligned address or out-parameter fails before anything is read.
    let mut raw = [0u8; 2 * size_of::<TpAddress>()];
    let odd = raw.as_mut_ptr().wrapping_add(1).cast::<TpAddress>();
    fails(
        ffi!(tp_net_server_handle(
            lobby.server,
            lobby.now,
            odd,
            forged.as_ptr(),
            forged.len(),
            null_mut()
        )),
        TpStatus::InvalidArgument,
        "from is not aligned",
    );
    fails(
        ffi!(tp_net_server_handle(
            lobby.server,
            lobby.now,
            null(),
            forged.as_ptr(),
            1,
            null_mut()
        )),
        TpStatus::NullPointer,
        "from",
    );
    fails(
        ffi!(tp_net_server_handle(
            lobby.server,
            lobby.now,
            &addr(1),
            null(),
            1,
            null_mut()
        )),
        TpStatus::NullPointer,
        "datagram",
    );
    ok(ffi!(tp_net_server_stats(lobby.server, &mut stats)));
    assert_eq!(stats.rejected, 1, "the refused calls handled nothing");
    // A short buffer: the size needed, and the same datagram next time.
    ok(ffi!(tp_net_server_tick(
        lobby.server,
        lobby.now,
        w,
        null_mut()
    )));
    let (mut len, mut to) = (0usize, TpAddress::default());
    let mut tiny = [0u8; 4];
    fails(
        ffi!(tp_net_server_poll_transmit(
            lobby.server,
            lobby.now,
            tiny.as_mut_ptr(),
            tiny.len(),
            &mut len,
            &mut to
        )),
        TpStatus::BufferTooSmall,
        "out needs",
    );
    let needed = len;
    assert!(needed > 4);
    let mut odd_len = [0u8; 16];
    let odd_written = odd_len.as_mut_ptr().wrapping_add(1).cast::<usize>();
    fails(
        ffi!(tp_net_server_poll_transmit(
            lobby.server,
            lobby.now,
            tiny.as_mut_ptr(),
            tiny.len(),
            odd_written,
            &mut to
        )),
        TpStatus::InvalidArgument,
        "written is misaligned",
    );
    let mut buf = [0u8; 1500];
    ok(ffi!(tp_net_server_poll_transmit(
        lobby.server,
        lobby.now,
        buf.as_mut_ptr(),
        buf.len(),
        &mut len,
        &mut to
    )));
    assert_eq!((len, to.port), (needed, 5000));
    // The kept datagram is a real one: the client takes it.
    ok(ffi!(tp_net_client_handle(
        lobby.clients[0],
        lobby.now,
        &addr(4000),
        buf.as_ptr(),
        len,
        &mut handled
    )));
    assert_eq!(handled, TpHandled::Payload);
    // Nothing queued, no event: TP_STATUS_EMPTY.
    lobby.pump();
    lobby.server_events();
    fails(
        ffi!(tp_net_server_poll_transmit(
            lobby.server,
            lobby.now,
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
            &mut to
        )),
        TpStatus::Empty,
        "no datagram",
    );
    let mut e = std::mem::MaybeUninit::uninit();
    fails(
        ffi!(tp_net_server_poll_event(lobby.server, e.as_mut_ptr())),
        TpStatus::Empty,
        "no event",
    );
    // Focus needs a tiered server and a connected client.
    fails(
        ffi!(tp_net_server_set_focus(lobby.server, 0, 1)),
        TpStatus::InvalidArgument,
        "not TP_INTEREST_TIERED",
    );
    fails(
        ffi!(tp_net_server_set_focus(lobby.server, 9, 1)),
        TpStatus::InvalidArgument,
        "client 9 is not connected",
    );
    let mut rtt = TpRtt::default();
    fails(
        ffi!(tp_net_server_rtt(lobby.server, 9, &mut rtt)),
        TpStatus::InvalidArgument,
        "not connected",
    );
    // A client where the server goes, and the server as its own world.
    fails(
        ffi!(tp_net_server_tick(
            lobby.clients[0].cast(),
            lobby.now,
            w,
            null_mut()
        )),
        TpStatus::WrongHandle,
        "expected a TpNetServer, got a TpNetClient",
    );
    fails(
        ffi!(tp_net_server_tick(
            lobby.server,
            lobby.now,
            lobby.server.cast(),
            null_mut()
        )),
        TpStatus::InvalidArgument,
        "same handle",
    );
    fails(
        ffi!(tp_net_client_latest(
            lobby.clients[0],
            lobby.clients[0].cast(),
            null_mut()
        )),
        TpStatus::InvalidArgument,
        "same handle",
    );
    ok(ffi!(tp_snapshot_free(w)));
}

#[test]
fn stale_and_wrong_handles_are_refused() {
    let s = schema();
    let srv = server(s, null());
    let t = token(srv, 1);
    let mut c = null_mut();
    ok(ffi!(tp_net_client_new(
        s,
        null(),
        null(),
        t.as_ptr(),
        t.len(),
        &addr(4000),
        T0,
        &mut c
    )));
    fails(
        ffi!(tp_net_server_handle_timeout(c.cast(), T0)),
        TpStatus::WrongHandle,
        "expected a TpNetServer, got a TpNetClient",
    );
    fails(
        ffi!(tp_net_client_free(srv.cast())),
        TpStatus::WrongHandle,
        "expected a TpNetClient",
    );
    ok(ffi!(tp_net_client_free(c)));
    ok(ffi!(tp_net_server_free(srv)));
    fails(
        ffi!(tp_net_client_free(c)),
        TpStatus::WrongHandle,
        "never made, or freed",
    );
    fails(
        ffi!(tp_net_server_tick(srv, T0, null(), null_mut())),
        TpStatus::WrongHandle,
        "never made, or freed",
    );
    let mut len = 0;
    let mut buf = [0u8; 8];
    fails(
        ffi!(tp_net_client_poll_transmit(
            c,
            T0,
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
            null_mut()
        )),
        TpStatus::WrongHandle,
        "never made, or freed",
    );
    ok(ffi!(tp_net_server_free(null_mut())));
    ok(ffi!(tp_schema_free(s)));
}
