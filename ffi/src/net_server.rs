//! The network server endpoint from C: connect tokens, datagrams in and
//! out through the caller's socket, one world per tick, events.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary` and `out`, each call in an `unsafe` block stating the
// caller's contract.
#![allow(unsafe_code)]

use std::time::Duration;

use tickpack_net::{ClientId, Server, ServerConfig, UDP_IP_OVERHEAD};
use tickpack_transport::conn::{ConnectToken, Key, CONNECT_TOKEN_BYTES, KEY_BYTES};
use tickpack_transport::TokenBucketConfig;

use crate::adapter;
use crate::boundary::{call, disjoint, free, get, get_mut, new_handle, slice, text, HANDLE_OUT};
use crate::error::{Error, TpStatus};
use crate::net_address::TpAddress;
use crate::net_event::{TpHandled, TpNetEvent};
use crate::net_interest::{CInterest, TpInterestConfig, TP_INTEREST_EVERYTHING};
use crate::net_io::{handle_datagram, Datagrams};
use crate::out::{copy_out, write_opt, Out, OutBuf};
use crate::server::{optional_set, TpServerConfig};
use crate::{TpDictSet, TpNetServer, TpSchema, TpSnapshot};

/// Bytes of a server's private key (`TpNetServerConfig::private_key`).
pub const TP_NET_KEY_BYTES: usize = 32;
const _: () = assert!(TP_NET_KEY_BYTES == KEY_BYTES);

/// Bytes of a connect token (`tp_net_server_issue_token`).
pub const TP_NET_TOKEN_BYTES: usize = 370;
// A literal above so that cbindgen can write it into the header.
const _: () = assert!(TP_NET_TOKEN_BYTES == CONNECT_TOKEN_BYTES);

/// Network server settings; `tp_net_server_config_default` fills in the
/// defaults, then set `protocol_id` and `private_key`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpNetServerConfig {
    /// The game's protocol id, in every connect token (default 0).
    pub protocol_id: u64,
    /// The key connect tokens are sealed with, shared with whatever
    /// issues them (`tp_net_key_generate`). The default is all zeros,
    /// which `tp_net_server_new` refuses: anyone could forge tokens.
    pub private_key: [u8; TP_NET_KEY_BYTES],
    /// Most clients at once, 1..=32767 (default 64); a client's id is
    /// its slot, `0..max_clients`.
    pub max_clients: u16,
    /// Largest datagram sent or accepted, in bytes (default 1,200).
    pub mtu: usize,
    /// Each client's byte budget per second, UDP/IP headers included
    /// (default 64,000); a snapshot over it is held back a tick.
    pub bytes_per_second: u64,
    /// Malformed authenticated payloads a client may send before it is
    /// disconnected (default 64).
    pub bad_payload_limit: u32,
    /// The codec session (history, level, checksum, limits).
    pub session: TpServerConfig,
}

/// A server, the key and protocol its tokens use, and the datagram of a
/// `tp_net_server_poll_transmit` whose buffer was too small.
pub(crate) struct NetServerState {
    pub(crate) server: Server<CInterest>,
    key: Key,
    protocol_id: u64,
    io: Datagrams,
}

/// Milliseconds since the caller's epoch, as the endpoints' clock.
pub(crate) fn ms(now_ms: u64) -> Duration {
    Duration::from_millis(now_ms)
}

/// Fills `key` (`len` must be `TP_NET_KEY_BYTES`) with a fresh random
/// private key from the operating system.
///
/// # Safety
/// `key` is valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tp_net_key_generate(key: *mut u8, len: usize) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { OutBuf::new(key, len, "key")? };
        if len != TP_NET_KEY_BYTES {
            return Err(Error::invalid(format_args!(
                "key length {len} is not TP_NET_KEY_BYTES ({TP_NET_KEY_BYTES})"
            )));
        }
        out.fill(Key::generate()?.as_bytes(), "key")
    })
}

/// Writes the default network server settings to `*config`.
///
/// # Safety
/// `config` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_config_default(config: *mut TpNetServerConfig) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(config, "config")? };
        let d = ServerConfig::new(0, Key::from_bytes([0; KEY_BYTES]));
        out.write(TpNetServerConfig {
            protocol_id: 0,
            private_key: [0; TP_NET_KEY_BYTES],
            max_clients: d.max_clients,
            mtu: d.mtu,
            bytes_per_second: 64_000,
            bad_payload_limit: d.bad_payload_limit,
            session: TpServerConfig::default(),
        });
        Ok(())
    })
}

fn net_config(
    c: &TpNetServerConfig,
    set: Option<&tickpack_sets::dictset::DictionarySet>,
) -> Result<ServerConfig, Error> {
    if c.bytes_per_second == 0 {
        return Err(Error::invalid("bytes_per_second is 0"));
    }
    // The default key: anyone could seal tokens for it.
    if c.private_key == [0; TP_NET_KEY_BYTES] {
        return Err(Error::invalid(
            "private_key is all zeros: set it (tp_net_key_generate, or your backend's key)",
        ));
    }
    let mut config = ServerConfig::new(c.protocol_id, Key::from_bytes(c.private_key));
    config.max_clients = c.max_clients;
    config.mtu = c.mtu;
    config.bad_payload_limit = c.bad_payload_limit;
    config.session = adapter::server_config(set, &c.session);
    let burst = u64::try_from(c.mtu.saturating_add(UDP_IP_OVERHEAD)).unwrap_or(u64::MAX);
    config.pacing = TokenBucketConfig::for_rate(c.bytes_per_second).with_min_burst(burst);
    Ok(config)
}

/// Makes a network server for `schema` in `*out`, with settings
/// `*config` and the interest hook `*interest` (null: every client sees
/// everything). With `set` non-null it compresses with the set's
/// dictionaries, and `schema` must be the set's.
///
/// # Safety
/// `schema` is a live handle, `set` null or one; `config` is valid for a
/// read; `interest` is null or valid for a read, its `position_field`
/// valid for reads of `position_field_len` bytes when tiered; `out` is
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_new(
    schema: *const TpSchema,
    set: *const TpDictSet,
    config: *const TpNetServerConfig,
    interest: *const TpInterestConfig,
    out: *mut *mut TpNetServer,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, HANDLE_OUT)? };
        // SAFETY: as above.
        let c = unsafe { slice(config, 1, "config")? }
            .first()
            .copied()
            .ok_or_else(|| Error::null("config"))?;
        // SAFETY: as above.
        let (schema, set) = unsafe {
            let schema = get(schema)?;
            (schema, optional_set(set, schema)?)
        };
        let hook = if interest.is_null() {
            CInterest::Everything
        } else {
            // SAFETY: as above; non-null.
            let i = unsafe { slice(interest, 1, "interest")? }
                .first()
                .copied()
                .ok_or_else(|| Error::null("interest"))?;
            let name = if i.kind == TP_INTEREST_EVERYTHING || i.callback.is_some() {
                ""
            } else {
                // SAFETY: as above.
                unsafe { text(i.position_field, i.position_field_len, "position_field")? }
            };
            CInterest::new(schema, &i, name)?
        };
        let server = Server::new(schema.clone(), net_config(&c, set)?, hook)?;
        new_handle(
            out,
            NetServerState {
                server,
                key: Key::from_bytes(c.private_key),
                protocol_id: c.protocol_id,
                io: Datagrams::default(),
            },
        );
        Ok(())
    })
}

/// Frees a network server. Null is accepted and does nothing; a handle
/// already freed gives `TP_STATUS_WRONG_HANDLE`.
///
/// # Safety
/// `server` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_free(server: *mut TpNetServer) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(server) })
}

/// Issues user `user` a connect token for this server (its protocol id
/// and key) into `out` (room for `capacity` bytes; `TP_NET_TOKEN_BYTES`
/// is enough), its length to `*written`: valid for `valid_secs` seconds
/// from `now_ms`, dropping a connection silent for `timeout_secs`. The
/// token holds the connection's keys: hand it to the client only over an
/// encrypted channel. A backend that issues tokens itself uses the same
/// key and protocol id.
///
/// # Safety
/// `server` is a live handle; `out` is valid for writes of `capacity`
/// bytes; `written` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_issue_token(
    server: *const TpNetServer,
    user: u64,
    now_ms: u64,
    valid_secs: u32,
    timeout_secs: u32,
    out: *mut u8,
    capacity: usize,
    written: *mut usize,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, written, state) = unsafe {
            (
                OutBuf::new(out, capacity, "out")?,
                Out::new(written, "written")?,
                get(server)?,
            )
        };
        let token = ConnectToken::issue(
            &state.key,
            state.protocol_id,
            user,
            ms(now_ms),
            Duration::from_secs(valid_secs.into()),
            Duration::from_secs(timeout_secs.into()),
        )?;
        copy_out(out, &token.to_bytes(), written, "out")
    })
}

/// Takes one datagram (`len` bytes at `datagram`, left unchanged) that
/// arrived from `*from` at `now_ms`, and writes what it did to
/// `*handled` unless that is null. Any bytes at all are safe to pass: a
/// forged or malformed datagram is `TP_HANDLED_REJECTED` or
/// `TP_HANDLED_MALFORMED` (the call still returns `TP_STATUS_OK`, and
/// `tp_last_error_message` says why), and changes no other client.
///
/// # Safety
/// `server` is a live handle; `from` is valid for a read; `datagram` is
/// valid for reads of `len` bytes; `handled` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_handle(
    server: *mut TpNetServer,
    now_ms: u64,
    from: *const TpAddress,
    datagram: *const u8,
    len: usize,
    handled: *mut TpHandled,
) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        handle_datagram(from, datagram, len, handled, |from, datagram| {
            // SAFETY: as above.
            let state = get_mut(server)?;
            let server = &mut state.server;
            Ok(state
                .io
                .handle(datagram, |b| server.handle(ms(now_ms), from, b)))
        })
    }
}

/// Drops silent connections and queues keep-alives; call it every tick
/// at least.
///
/// # Safety
/// `server` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_handle_timeout(
    server: *mut TpNetServer,
    now_ms: u64,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { get_mut(server)? }
            .server
            .handle_timeout(ms(now_ms));
        Ok(())
    })
}

/// Runs one tick with the whole world `world` (the server keeps a
/// reference, changing `world` afterwards copies it first): a new
/// client's connect snapshot is queued, every ready client gets its
/// snapshot as the interest hook sees it, paced. Writes the tick's
/// sequence to `*sequence` unless that is null. Then send what
/// `tp_net_server_poll_transmit` gives.
///
/// # Safety
/// `server` and `world` are live handles; `sequence` is null or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_tick(
    server: *mut TpNetServer,
    now_ms: u64,
    world: *const TpSnapshot,
    sequence: *mut u16,
) -> TpStatus {
    call(|| {
        disjoint(server, &[world.cast()])?;
        // SAFETY: forwarded from this function's contract.
        let sequence = unsafe { Out::optional(sequence, "sequence")? };
        // SAFETY: as above; the two handles differ.
        let (state, world) = unsafe { (get_mut(server)?, get(world)?) };
        let seq = state.server.tick(ms(now_ms), world.clone())?;
        write_opt(sequence, seq);
        Ok(())
    })
}

/// Writes the next datagram to send into `out` (room for `capacity`
/// bytes; the MTU is enough), its length to `*written` and its
/// destination to `*to`; `TP_STATUS_EMPTY` when there is none. Call until
/// then after every tick, handle and handle_timeout. When `capacity` is
/// too small, `*written` gets the size needed and the same datagram comes
/// out of the next call.
///
/// # Safety
/// `server` is a live handle; `out` is valid for writes of `capacity`
/// bytes; `written` and `to` are valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_poll_transmit(
    server: *mut TpNetServer,
    now_ms: u64,
    out: *mut u8,
    capacity: usize,
    written: *mut usize,
    to: *mut TpAddress,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, written, to_out) = unsafe {
            (
                OutBuf::new(out, capacity, "out")?,
                Out::new(written, "written")?,
                Out::new(to, "to")?,
            )
        };
        // SAFETY: as above.
        let state = unsafe { get_mut(server)? };
        let server = &mut state.server;
        state.io.transmit(out, written, Some(to_out), |buf| {
            server.poll_transmit(ms(now_ms), buf)
        })
    })
}

/// Writes the next event to `*event`; `TP_STATUS_EMPTY` when there is
/// none.
///
/// # Safety
/// `server` is a live handle; `event` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_poll_event(
    server: *mut TpNetServer,
    event: *mut TpNetEvent,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (event, state) = unsafe { (Out::new(event, "event")?, get_mut(server)?) };
        let e = state
            .server
            .poll_event()
            .ok_or_else(|| Error::new(TpStatus::Empty, "no event"))?;
        event.write(e.into());
        Ok(())
    })
}

/// The connected client `client`, or `TP_STATUS_INVALID_ARGUMENT`.
pub(crate) fn connected(server: &Server<CInterest>, client: u16) -> Result<ClientId, Error> {
    server
        .clients()
        .find(|c| c.index() == client)
        .ok_or_else(|| Error::invalid(format_args!("client {client} is not connected")))
}

/// Disconnects client `client` (it sees `TP_DISCONNECT_REASON_KICKED`);
/// writes whether it was connected to `*was_connected` unless null.
///
/// # Safety
/// `server` is a live handle; `was_connected` is null or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_kick(
    server: *mut TpNetServer,
    now_ms: u64,
    client: u16,
    was_connected: *mut bool,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (was, state) = unsafe {
            (
                Out::optional(was_connected, "was_connected")?,
                get_mut(server)?,
            )
        };
        let Ok(id) = connected(&state.server, client) else {
            write_opt(was, false);
            return Ok(());
        };
        write_opt(was, state.server.kick(ms(now_ms), id));
        Ok(())
    })
}

/// Makes connected client `client` view the world from entity `entity`
/// (a server made with `TP_INTEREST_TIERED`; by default a client views
/// from the entity whose id is its token's user id).
///
/// # Safety
/// `server` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_set_focus(
    server: *mut TpNetServer,
    client: u16,
    entity: u32,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let state = unsafe { get_mut(server)? };
        let id = connected(&state.server, client)?;
        state.server.interest_mut().set_focus(id, entity)
    })
}
