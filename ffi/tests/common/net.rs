//! The network endpoints over an in-memory link, called as C would.

use std::ptr::{null, null_mut};

use tickpack_ffi::net_address::*;
use tickpack_ffi::net_client::*;
use tickpack_ffi::net_event::*;
use tickpack_ffi::net_interest::*;
use tickpack_ffi::net_server::*;
use tickpack_ffi::net_server_query::*;
use tickpack_ffi::schema::*;
use tickpack_ffi::snapshot::*;
use tickpack_ffi::*;

use super::*;

/// A start time in the tokens' clock (milliseconds since the Unix epoch).
pub(crate) const T0: u64 = 1_700_000_000_000;

pub(crate) fn addr(port: u16) -> TpAddress {
    TpAddress {
        family: TP_ADDRESS_IPV4,
        port,
        bytes: [127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    }
}

pub(crate) fn server_config() -> TpNetServerConfig {
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

pub(crate) fn server(
    schema: *const TpSchema,
    interest: *const TpInterestConfig,
) -> *mut TpNetServer {
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

pub(crate) fn token(server: *const TpNetServer, user: u64) -> Vec<u8> {
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
pub(crate) struct Lobby {
    pub(crate) schema: *mut TpSchema,
    pub(crate) server: *mut TpNetServer,
    pub(crate) clients: Vec<*mut TpNetClient>,
    pub(crate) now: u64,
}

impl Lobby {
    pub(crate) fn new(interest: *const TpInterestConfig, users: &[u64]) -> Self {
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
    pub(crate) fn pump(&mut self) {
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
                    let from = addr(5000 + u16::try_from(i).unwrap_or(u16::MAX));
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

    pub(crate) fn tick(&mut self, world: *const TpSnapshot) {
        ok(ffi!(tp_net_server_tick(
            self.server,
            self.now,
            world,
            null_mut()
        )));
        self.pump();
        self.now += 16;
    }

    pub(crate) fn server_events(&mut self) -> Vec<TpNetEvent> {
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
    pub(crate) fn applied_matches(&self, i: usize, id: u16) -> (bool, Vec<u32>) {
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

pub(crate) fn world(schema: *const TpSchema, tick: u32) -> *mut TpSnapshot {
    let ids: Vec<u32> = (1..=8).collect();
    let cars: Vec<[u8; CAR]> = ids
        .iter()
        .map(|&i| car(i as f32 * 50.0 + tick as f32, 1))
        .collect();
    snapshot_with(schema, &ids, &cars)
}

pub(crate) fn tiered(field: &str, near: f32) -> TpInterestConfig {
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
