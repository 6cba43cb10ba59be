//! What a network server reports to C: counters, per-client costs and
//! round trips, and the snapshot it sent a client.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary` and `out`, each call in an `unsafe` block stating the
// caller's contract.
#![allow(unsafe_code)]

use tickpack::Snapshot;

use crate::boundary::{call, disjoint, get, get_mut};
use crate::error::{Error, TpStatus};
use crate::net_event::TpRtt;
use crate::net_server::connected;
use crate::out::Out;
use crate::{TpNetServer, TpSnapshot};

/// Network server counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpNetServerStats {
    /// Datagrams the connection layer refused.
    pub rejected: u64,
    /// Authenticated payloads that were malformed.
    pub malformed: u64,
    /// Payloads the connection layer would not seal (an address not
    /// verified yet, over its amplification budget).
    pub unsent: u64,
    /// Ticks run.
    pub ticks: u32,
    /// Clients connected now.
    pub clients: u32,
}

/// What one client cost and did, as the server saw it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpNetClientStats {
    /// Ticks it was due a regular snapshot.
    pub ticks: u64,
    /// Session packet bytes sent (framing not counted).
    pub bytes: u64,
    /// Regular snapshots that were full (a resync).
    pub full: u64,
    /// Snapshots held back: over its byte budget.
    pub held_back: u64,
    /// Snapshots not sent: more fragments than allowed.
    pub too_large: u64,
    /// Malformed authenticated payloads it sent.
    pub malformed: u64,
    /// Address changes followed.
    pub migrations: u64,
}

/// Writes the round-trip estimate to client `client` to `*rtt`;
/// `TP_STATUS_EMPTY` before the first measurement.
///
/// # Safety
/// `server` is a live handle; `rtt` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_rtt(
    server: *const TpNetServer,
    client: u16,
    rtt: *mut TpRtt,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, state) = unsafe { (Out::new(rtt, "rtt")?, get(server)?) };
        let id = connected(&state.server, client)?;
        let r = state
            .server
            .rtt(id)
            .ok_or_else(|| Error::new(TpStatus::Empty, "no round trip measured yet"))?;
        out.write(r.into());
        Ok(())
    })
}

/// Writes the server's counters to `*stats`.
///
/// # Safety
/// `server` is a live handle; `stats` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_stats(
    server: *const TpNetServer,
    stats: *mut TpNetServerStats,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, state) = unsafe { (Out::new(stats, "stats")?, get(server)?) };
        let s = state.server.stats();
        out.write(TpNetServerStats {
            rejected: s.rejected,
            malformed: s.malformed,
            unsent: s.unsent,
            ticks: state.server.ticks(),
            clients: u32::try_from(state.server.clients().count()).unwrap_or(u32::MAX),
        });
        Ok(())
    })
}

/// Writes connected client `client`'s counters to `*stats`.
///
/// # Safety
/// `server` is a live handle; `stats` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_client_stats(
    server: *const TpNetServer,
    client: u16,
    stats: *mut TpNetClientStats,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, state) = unsafe { (Out::new(stats, "stats")?, get(server)?) };
        let id = connected(&state.server, client)?;
        let s = state.server.peer_stats(id).unwrap_or_default();
        out.write(TpNetClientStats {
            ticks: s.ticks,
            bytes: s.bytes,
            full: s.full,
            held_back: s.held_back,
            too_large: s.too_large,
            malformed: s.malformed,
            migrations: s.migrations,
        });
        Ok(())
    })
}

/// Copies the snapshot the server sent client `client` with sequence
/// `sequence` (as the client applies it) into `out`, replacing its
/// contents; `TP_STATUS_EMPTY` when the server no longer holds it (or
/// never sent it). For tests and debugging: compare it with what the
/// client applied.
///
/// # Safety
/// `server` and `out` are live handles.
#[no_mangle]
pub unsafe extern "C" fn tp_net_server_sent_state(
    server: *const TpNetServer,
    client: u16,
    sequence: u16,
    out: *mut TpSnapshot,
) -> TpStatus {
    call(|| {
        disjoint(out, &[server.cast()])?;
        // SAFETY: forwarded from this function's contract; the handles
        // differ.
        let (state, out) = unsafe { (get(server)?, get_mut(out)?) };
        let mut sent = Snapshot::default();
        if !state
            .server
            .session()
            .sent_state(client, sequence, &mut sent)
        {
            return Err(Error::new(
                TpStatus::Empty,
                format_args!("no snapshot {sequence} held for client {client}"),
            ));
        }
        *std::sync::Arc::make_mut(out) = sent;
        Ok(())
    })
}
