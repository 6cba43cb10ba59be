//! The client side of a session: applies the server's packets and says
//! what to ack.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary`, each call in an `unsafe` block stating the caller's contract.
#![allow(unsafe_code)]

use std::sync::Arc;

use tickpack_session::ClientMessage;

use crate::adapter;
use crate::boundary::{
    call, disjoint, free, get, get_mut, new_handle, read_or_default, slice, HANDLE_OUT,
};
use crate::codec::TpLimits;
use crate::error::{set_last, Error, TpStatus};
use crate::out::{copy_out, write_opt, Out, OutBuf};
use crate::server::optional_set;
use crate::{TpClient, TpDictSet, TpSchema, TpSnapshot};

/// Largest client message (`tp_client_message`), in bytes.
pub const TP_CLIENT_MESSAGE_MAX: usize = 3;
// A literal above so that cbindgen can write it into the header.
const _: () = assert!(TP_CLIENT_MESSAGE_MAX == ClientMessage::MAX_LEN);

/// Client settings; `tp_client_config_default` fills in the defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpClientConfig {
    /// Snapshots kept, at least the server's `history` (default 32).
    pub history: usize,
    /// Furthest a packet's sequence may be ahead of the newest applied one
    /// (default 1,024); packets further ahead are dropped as
    /// `TP_OUTCOME_TOO_FAR_AHEAD`, so one spoofed packet cannot make every
    /// real one look stale.
    pub max_jump: u16,
    /// After this many drops in a row (default 16) the client asks for a
    /// full snapshot and applies the next one whatever its sequence, unless
    /// a packet is applied before it.
    pub resync_after: u32,
    /// The server's limits.
    pub limits: TpLimits,
}

impl Default for TpClientConfig {
    fn default() -> Self {
        adapter::default_client_config()
    }
}

/// What `tp_client_receive` did with a packet.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpOutcome {
    /// Decoded and applied: it is the client's newest snapshot.
    Applied = 0,
    /// Dropped: not newer than the newest applied (late or duplicate).
    Stale = 1,
    /// Dropped: coded against a baseline the client does not hold.
    UnknownBaseline = 2,
    /// Dropped: malformed, or its checksum disagrees (the client then asks
    /// for a full snapshot in its next message).
    Undecodable = 3,
    /// Dropped: further ahead of the newest applied snapshot than the
    /// client's `max_jump`.
    TooFarAhead = 4,
    /// Dropped for a reason this version of the header does not name;
    /// `tp_last_error_message` describes it.
    Other = 5,
}

/// The result of `tp_client_receive`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpReceived {
    /// Applied, or why not.
    pub outcome: TpOutcome,
    /// The packet's sequence (0 when undecodable).
    pub sequence: u16,
    /// Whether the packet named a baseline.
    pub has_baseline: bool,
    /// That baseline, when `has_baseline`.
    pub baseline: u16,
}

/// Client counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpClientStats {
    /// Packets applied.
    pub applied: u64,
    /// Of those, full snapshots.
    pub full: u64,
    /// Dropped as late or duplicate.
    pub stale: u64,
    /// Dropped as too far ahead.
    pub too_far_ahead: u64,
    /// Times `resync_after` drops in a row started a resync.
    pub resyncs: u64,
    /// Dropped for a baseline not held.
    pub unknown_baseline: u64,
    /// Dropped as malformed or with a wrong checksum.
    pub undecodable: u64,
}

/// Writes the default client settings to `*config`.
///
/// # Safety
/// `config` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_client_config_default(config: *mut TpClientConfig) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { Out::new(config, "config")? }.write(TpClientConfig::default());
        Ok(())
    })
}

/// Makes a session client for `schema` in `*out`. With `set` non-null it
/// holds the set's dictionaries, and `schema` must be the set's. `config`
/// null means the defaults.
///
/// # Safety
/// `schema` is a live handle, `set` null or one; `config` is null or valid
/// for a read; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_client_new(
    schema: *const TpSchema,
    set: *const TpDictSet,
    config: *const TpClientConfig,
    out: *mut *mut TpClient,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, HANDLE_OUT)? };
        // SAFETY: as above.
        let schema = unsafe { get(schema)? };
        // SAFETY: as above.
        let set = unsafe { optional_set(set, schema)? };
        // SAFETY: as above.
        let c = unsafe { read_or_default(config, "config")? };
        let client = adapter::client(schema.clone(), set, &c)?;
        new_handle(out, client);
        Ok(())
    })
}

/// Frees a client. Null is accepted and does nothing; a handle already
/// freed gives `TP_STATUS_WRONG_HANDLE`.
///
/// # Safety
/// `client` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_client_free(client: *mut TpClient) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(client) })
}

/// Takes one packet from the server (`len` bytes at `packet`) and writes
/// what happened to `*result`: applied, or dropped with the reason. A
/// dropped packet is not an error (the call returns `TP_STATUS_OK`, the
/// client's state is unchanged, and `tp_last_error_message` describes the
/// reason); any bytes at all are safe to pass.
///
/// # Safety
/// `client` is a live handle; `packet` is valid for reads of `len` bytes;
/// `result` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_client_receive(
    client: *mut TpClient,
    packet: *const u8,
    len: usize,
    result: *mut TpReceived,
) -> TpStatus {
    let mut reason = None;
    let status = call(|| {
        // Checked before the packet is applied, so a failed call changes
        // nothing.
        // SAFETY: forwarded from this function's contract.
        let result = unsafe { Out::new(result, "result")? };
        // SAFETY: as above.
        let (client, packet) = unsafe { (get_mut(client)?, slice(packet, len, "packet")?) };
        let (r, why) = adapter::receive(client, packet);
        reason = why;
        result.write(r);
        Ok(())
    });
    if let Some(reason) = reason.filter(|_| status == TpStatus::Ok) {
        set_last(Some(&reason));
    }
    status
}

/// Copies the client's newest applied snapshot into `out` (replacing its
/// contents) and writes its sequence to `*sequence` unless that is null;
/// `TP_STATUS_EMPTY` while no packet has been applied.
///
/// # Safety
/// `client` and `out` are live handles; `sequence` is null or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tp_client_latest(
    client: *const TpClient,
    out: *mut TpSnapshot,
    sequence: *mut u16,
) -> TpStatus {
    call(|| {
        disjoint(out, &[client.cast()])?;
        // SAFETY: forwarded from this function's contract.
        let sequence = unsafe { Out::optional(sequence, "sequence")? };
        // SAFETY: as above; the two handles differ.
        let (client, out) = unsafe { (get(client)?, get_mut(out)?) };
        let (seq, latest) = adapter::latest(client)
            .ok_or_else(|| Error::new(TpStatus::Empty, "no packet applied yet"))?;
        Arc::make_mut(out).clone_from(latest);
        write_opt(sequence, seq);
        Ok(())
    })
}

/// Writes the message to send the server now into `out` (room for
/// `capacity` bytes, `TP_CLIENT_MESSAGE_MAX` is always enough) and its
/// length to `*written`: the newest applied sequence (the ack) and
/// whether a full snapshot is needed. It names no client: the server takes
/// it as the client's whose connection carried it. Send it after every
/// received packet, or at least every tick.
///
/// # Safety
/// `client` is a live handle; `out` is valid for writes of `capacity`
/// bytes; `written` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_client_message(
    client: *const TpClient,
    out: *mut u8,
    capacity: usize,
    written: *mut usize,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (out, written) = unsafe {
            (
                OutBuf::new(out, capacity, "out")?,
                Out::new(written, "written")?,
            )
        };
        // SAFETY: as above.
        let bytes = adapter::message(unsafe { get(client)? });
        copy_out(out, &bytes, written, "out")
    })
}

/// Writes the client's counters to `*stats`.
///
/// # Safety
/// `client` is a live handle; `stats` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_client_stats(
    client: *const TpClient,
    stats: *mut TpClientStats,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let stats = unsafe { Out::new(stats, "stats")? };
        // SAFETY: as above.
        stats.write(adapter::client_stats(unsafe { get(client)? }));
        Ok(())
    })
}
