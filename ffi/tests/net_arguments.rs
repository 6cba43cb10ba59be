//! The network endpoints' C functions given hostile arguments: null,
//! misaligned, stale and wrong-kind handles, short buffers, forged
//! datagrams, bad configurations and tokens. Each fails with its status
//! and changes nothing.

// These tests call the `unsafe extern "C"` functions directly.
#![allow(unsafe_code, clippy::unwrap_used)]

#[macro_use]
mod common;

use std::ptr::{null, null_mut};

use common::net::*;
use common::*;
use tickpack_ffi::net_address::*;
use tickpack_ffi::net_client::*;
use tickpack_ffi::net_event::*;
use tickpack_ffi::net_interest::*;
use tickpack_ffi::net_server::*;
use tickpack_ffi::net_server_query::*;
use tickpack_ffi::schema::*;
use tickpack_ffi::snapshot::*;
use tickpack_ffi::*;

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
    let zero = TpNetServerConfig {
        private_key: [0; TP_NET_KEY_BYTES],
        ..c
    };
    fails(
        ffi!(tp_net_server_new(s, null(), &zero, null(), &mut out)),
        TpStatus::InvalidArgument,
        "private_key is all zeros",
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
