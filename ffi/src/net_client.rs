//! The network client endpoint from C: made from a connect token,
//! datagrams in and out through the caller's socket, the applied and
//! presented worlds.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary` and `out`, each call in an `unsafe` block stating the
// caller's contract.
#![allow(unsafe_code)]

use std::sync::Arc;

use tickpack_net::{Client, ClientConfig};
use tickpack_transport::conn::ConnectToken;

use crate::adapter;
use crate::boundary::{
    call, disjoint, free, get, get_mut, new_handle, read_or_default, slice, HANDLE_OUT,
};
use crate::client::TpClientConfig;
use crate::error::{Error, TpStatus};
use crate::net_address::TpAddress;
use crate::net_event::{TpHandled, TpNetEvent, TpRtt};
use crate::net_io::{handle_datagram, Datagrams};
use crate::net_server::ms;
use crate::out::{write_opt, Out, OutBuf};
use crate::server::optional_set;
use crate::{TpDictSet, TpNetClient, TpSchema, TpSnapshot};

/// Network client settings; `tp_net_client_config_default` fills in the
/// defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpNetClientConfig {
    /// Largest datagram, in bytes: the server's (default 1,200).
    pub mtu: usize,
    /// Ticks the presented world keeps an entity no snapshot updated
    /// (default 20): for servers whose interest leaves entities out.
    pub linger: u32,
    /// Present only what each snapshot changed against its baseline
    /// (for servers that hold skipped entities; default 0, off; anything
    /// else on).
    pub news_only: u8,
    /// The codec session (history, limits: the server's).
    pub session: TpClientConfig,
}

/// Network client counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpNetClientCounters {
    /// Snapshots applied.
    pub applied: u64,
    /// Datagrams the connection layer refused (forged, replayed, foreign).
    pub rejected: u64,
    /// Authenticated payloads that were malformed.
    pub malformed: u64,
    /// Snapshots that did not decode.
    pub undecodable: u64,
    /// Snapshots older than the newest applied.
    pub stale: u64,
    /// Snapshots against a baseline no longer held.
    pub unknown_baseline: u64,
}

/// A client and the datagram of a `tp_net_client_poll_transmit` whose
/// buffer was too small.
pub(crate) struct NetClientState {
    client: Client,
    io: Datagrams,
}

/// Writes the default network client settings to `*config`.
///
/// # Safety
/// `config` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_config_default(config: *mut TpNetClientConfig) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(config, "config")? };
        out.write(TpNetClientConfig::default());
        Ok(())
    })
}

impl Default for TpNetClientConfig {
    fn default() -> Self {
        let d = ClientConfig::default();
        Self {
            mtu: d.mtu,
            linger: d.linger,
            news_only: u8::from(d.news_only),
            session: TpClientConfig::default(),
        }
    }
}

/// Makes a network client in `*out` that connects at `now_ms` to the
/// server at `*server` with the connect token `token` (`token_len` bytes,
/// as `tp_net_server_issue_token` or your backend made it), decoding
/// `schema`. With `set` non-null it holds the set's dictionaries, and
/// `schema` must be the set's. `config` null means the defaults. Then
/// send what `tp_net_client_poll_transmit` gives.
///
/// # Safety
/// `schema` is a live handle, `set` null or one; `config` is null or
/// valid for a read; `token` is valid for reads of `token_len` bytes;
/// `server` is valid for a read; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_new(
    schema: *const TpSchema,
    set: *const TpDictSet,
    config: *const TpNetClientConfig,
    token: *const u8,
    token_len: usize,
    server: *const TpAddress,
    now_ms: u64,
    out: *mut *mut TpNetClient,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, c, token, server) = unsafe {
            (
                Out::new(out, HANDLE_OUT)?,
                read_or_default(config, "config")?,
                slice(token, token_len, "token")?,
                slice(server, 1, "server")?,
            )
        };
        let server = server
            .first()
            .ok_or_else(|| Error::null("server"))?
            .to_socket()?;
        // SAFETY: as above.
        let (schema, set) = unsafe {
            let schema = get(schema)?;
            (schema, optional_set(set, schema)?)
        };
        let token = ConnectToken::from_bytes(token)?;
        let config_net = ClientConfig {
            mtu: c.mtu,
            linger: c.linger,
            news_only: c.news_only != 0,
            session: adapter::client_config(set, &c.session),
            ..ClientConfig::default()
        };
        let client = Client::new(ms(now_ms), server, token, schema.clone(), config_net)?;
        new_handle(
            out,
            NetClientState {
                client,
                io: Datagrams::default(),
            },
        );
        Ok(())
    })
}

/// Frees a network client (without a goodbye: call
/// `tp_net_client_disconnect` and send first to leave cleanly). Null is
/// accepted and does nothing; a handle already freed gives
/// `TP_STATUS_WRONG_HANDLE`.
///
/// # Safety
/// `client` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_free(client: *mut TpNetClient) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(client) })
}

/// Takes one datagram (`len` bytes at `datagram`, left unchanged) that
/// arrived from `*from` at `now_ms`, and writes what it did to
/// `*handled` unless that is null. Any bytes are safe to pass: a forged
/// or malformed datagram is `TP_HANDLED_REJECTED` or
/// `TP_HANDLED_MALFORMED` (still `TP_STATUS_OK`; `tp_last_error_message`
/// says why).
///
/// # Safety
/// `client` is a live handle; `from` is valid for a read; `datagram` is
/// valid for reads of `len` bytes; `handled` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_handle(
    client: *mut TpNetClient,
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
            let state = get_mut(client)?;
            let client = &mut state.client;
            Ok(state
                .io
                .handle(datagram, |b| client.handle(ms(now_ms), from, b)))
        })
    }
}

/// Advances the client to `now_ms`: resends the handshake, times out a
/// silent server, moves the jitter buffer and the presented world. Call
/// it every frame.
///
/// # Safety
/// `client` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_handle_timeout(
    client: *mut TpNetClient,
    now_ms: u64,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { get_mut(client)? }
            .client
            .handle_timeout(ms(now_ms));
        Ok(())
    })
}

/// Writes the next datagram to send to the server into `out` (room for
/// `capacity` bytes; the MTU is enough), its length to `*written` and its
/// destination to `*to` unless that is null; `TP_STATUS_EMPTY` when there
/// is none. When `capacity` is too small, `*written` gets the size needed
/// and the same datagram comes out of the next call.
///
/// # Safety
/// `client` is a live handle; `out` is valid for writes of `capacity`
/// bytes; `written` is valid for a write; `to` is null or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_poll_transmit(
    client: *mut TpNetClient,
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
                Out::optional(to, "to")?,
            )
        };
        // SAFETY: as above.
        let state = unsafe { get_mut(client)? };
        let client = &mut state.client;
        let server = client.server();
        state.io.transmit(out, written, to_out, |buf| {
            client.poll_transmit(ms(now_ms), buf).map(|_| server)
        })
    })
}

/// Writes the next event to `*event`; `TP_STATUS_EMPTY` when there is
/// none.
///
/// # Safety
/// `client` is a live handle; `event` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_poll_event(
    client: *mut TpNetClient,
    event: *mut TpNetEvent,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (event, state) = unsafe { (Out::new(event, "event")?, get_mut(client)?) };
        let e = state
            .client
            .poll_event()
            .ok_or_else(|| Error::new(TpStatus::Empty, "no event"))?;
        event.write(e.into());
        Ok(())
    })
}

/// Copies the newest snapshot the client applied (exactly what the
/// server sent it) into `out`, replacing its contents, and writes its
/// sequence to `*sequence` unless null; `TP_STATUS_EMPTY` before the
/// first.
///
/// # Safety
/// `client` and `out` are live handles; `sequence` is null or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_latest(
    client: *const TpNetClient,
    out: *mut TpSnapshot,
    sequence: *mut u16,
) -> TpStatus {
    call(|| {
        disjoint(out, &[client.cast()])?;
        // SAFETY: forwarded from this function's contract.
        let sequence = unsafe { Out::optional(sequence, "sequence")? };
        // SAFETY: as above; the handles differ.
        let (state, out) = unsafe { (get(client)?, get_mut(out)?) };
        let (seq, latest) = state
            .client
            .latest()
            .ok_or_else(|| Error::new(TpStatus::Empty, "no snapshot applied yet"))?;
        Arc::make_mut(out).clone_from(latest);
        write_opt(sequence, seq);
        Ok(())
    })
}

/// Copies the world to draw now into `out`, replacing its contents: the
/// jitter buffer's output, with entities the server left out kept for
/// `linger` ticks. Empty until connected.
///
/// # Safety
/// `client` and `out` are live handles.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_presented(
    client: *const TpNetClient,
    out: *mut TpSnapshot,
) -> TpStatus {
    call(|| {
        disjoint(out, &[client.cast()])?;
        // SAFETY: forwarded from this function's contract; the handles
        // differ.
        let (state, out) = unsafe { (get(client)?, get_mut(out)?) };
        Arc::make_mut(out).clone_from(state.client.presented());
        Ok(())
    })
}

/// Writes whether the client is connected (holds its connect snapshot
/// and has not been disconnected) to `*connected`, and the reason its
/// connection ended to `*reason` unless null (`TP_DISCONNECT_REASON_NONE`
/// while it has not).
///
/// # Safety
/// `client` is a live handle; `connected` is valid for a write; `reason`
/// is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_state(
    client: *const TpNetClient,
    connected: *mut bool,
    reason: *mut crate::net_event::TpDisconnectReason,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (connected, reason, state) = unsafe {
            (
                Out::new(connected, "connected")?,
                Out::optional(reason, "reason")?,
                get(client)?,
            )
        };
        connected.write(state.client.is_connected());
        write_opt(
            reason,
            state
                .client
                .disconnect_reason()
                .map_or(crate::net_event::TpDisconnectReason::None, Into::into),
        );
        Ok(())
    })
}

/// Says goodbye: the next `tp_net_client_poll_transmit` calls give the
/// disconnect datagrams, and the client sends nothing after them.
///
/// # Safety
/// `client` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_disconnect(
    client: *mut TpNetClient,
    now_ms: u64,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { get_mut(client)? }.client.disconnect(ms(now_ms));
        Ok(())
    })
}

/// Writes the round-trip estimate to the server to `*rtt`;
/// `TP_STATUS_EMPTY` before the first measurement.
///
/// # Safety
/// `client` is a live handle; `rtt` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_rtt(
    client: *const TpNetClient,
    rtt: *mut TpRtt,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, state) = unsafe { (Out::new(rtt, "rtt")?, get(client)?) };
        let r = state
            .client
            .rtt()
            .ok_or_else(|| Error::new(TpStatus::Empty, "no round trip measured yet"))?;
        out.write(r.into());
        Ok(())
    })
}

/// Writes the client's counters to `*stats`.
///
/// # Safety
/// `client` is a live handle; `stats` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_client_stats(
    client: *const TpNetClient,
    stats: *mut TpNetClientCounters,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, state) = unsafe { (Out::new(stats, "stats")?, get(client)?) };
        let s = state.client.stats();
        out.write(TpNetClientCounters {
            applied: s.applied,
            rejected: s.rejected,
            malformed: s.malformed,
            undecodable: s.undecodable,
            stale: s.stale,
            unknown_baseline: s.unknown_baseline,
        });
        Ok(())
    })
}
