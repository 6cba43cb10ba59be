//! The server side of a session: one per game server, sending every
//! client a delta against the newest snapshot that client acked.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary`, each call in an `unsafe` block stating the caller's contract.
#![allow(unsafe_code)]

use std::sync::Arc;

use tickpack::Schema;
use tickpack_session::Server;
use tickpack_sets::dictset::DictionarySet;

use crate::adapter;
use crate::boundary::{
    call, disjoint, free, get, get_mut, new_handle, read_or_default, slice, HANDLE_OUT,
};
use crate::codec::TpLimits;
use crate::error::{Error, TpStatus};
use crate::out::{copy_out, write_opt, Out, OutBuf};
use crate::{TpDictSet, TpSchema, TpServer, TpSnapshot};

/// Server settings; `tp_server_config_default` fills in the defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpServerConfig {
    /// Snapshots remembered per client, 1..=32767 (default 32): acks older
    /// than this many ticks are useless, and the client falls back to a
    /// full snapshot.
    pub history: usize,
    /// zstd level (default 3).
    pub level: i32,
    /// Send a 16-bit checksum of the snapshot in every packet (default 1,
    /// on). A byte, not a `bool`, so that any value is defined: 0 is off,
    /// anything else on.
    pub checksum: u8,
    /// Encode once per tick for all clients with the same baseline, and
    /// hand them the same bytes (default 1, on; 0 is off, anything else
    /// on).
    pub share_encodes: u8,
    /// Sequence of the first tick (default 0).
    pub first_sequence: u16,
    /// Bounds on one packet; give clients the same.
    pub limits: TpLimits,
}

impl Default for TpServerConfig {
    fn default() -> Self {
        adapter::default_server_config()
    }
}

/// Server counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpServerStats {
    /// Packets handed out by `tp_server_encode`.
    pub packets: u64,
    /// Of those, full snapshots (no baseline).
    pub full: u64,
    /// Encoder runs; the other packets reused another client's bytes.
    pub encodes: u64,
    /// Bytes handed out.
    pub bytes: u64,
}

/// A server and the packet of a `tp_server_encode` call whose buffer was
/// too small, kept so the retry gets the same bytes.
pub(crate) struct ServerState {
    server: Server,
    pending: Option<Pending>,
}

struct Pending {
    client: u16,
    sequence: u16,
    bytes: Arc<[u8]>,
}

impl ServerState {
    /// Drops the packet kept for client `id`: a client added or removed
    /// since was not sent it (a new peer under the id would get a packet
    /// of the old one's history).
    fn forget_pending(&mut self, id: u16) {
        if self.pending.as_ref().is_some_and(|p| p.client == id) {
            self.pending = None;
        }
    }
}

/// Writes the default server settings to `*config`.
///
/// # Safety
/// `config` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_server_config_default(config: *mut TpServerConfig) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { Out::new(config, "config")? }.write(TpServerConfig::default());
        Ok(())
    })
}

/// The optional dictionary set of `tp_server_new` / `tp_client_new`,
/// checked against the schema.
///
/// # Safety
/// `set` is null or a live handle.
pub(crate) unsafe fn optional_set<'a>(
    set: *const TpDictSet,
    schema: &Schema,
) -> Result<Option<&'a DictionarySet>, Error> {
    if set.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded from this function's contract; non-null.
    let set = unsafe { get(set)? };
    if set.schema().id() != schema.id() {
        return Err(Error::invalid(format_args!(
            "the schema ({:#010x}) is not the dictionary set's ({:#010x}): use tp_dictset_schema",
            schema.id(),
            set.schema().id()
        )));
    }
    Ok(Some(set))
}

/// Makes a session server for `schema` in `*out`. With `set` non-null it
/// compresses with the set's dictionaries, and `schema` must be the set's
/// (`tp_dictset_schema`). `config` null means the defaults.
///
/// # Safety
/// `schema` is a live handle, `set` null or one; `config` is null or valid
/// for a read; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_server_new(
    schema: *const TpSchema,
    set: *const TpDictSet,
    config: *const TpServerConfig,
    out: *mut *mut TpServer,
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
        let server = adapter::server(schema.clone(), set, &c)?;
        let state = ServerState {
            server,
            pending: None,
        };
        new_handle(out, state);
        Ok(())
    })
}

/// Frees a server. Null is accepted and does nothing; a handle already
/// freed gives `TP_STATUS_WRONG_HANDLE`.
///
/// # Safety
/// `server` is null or a handle of this library that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn tp_server_free(server: *mut TpServer) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { free(server) })
}

/// Adds client `client_id`, or resets it if connected: its next packet is
/// a full snapshot.
///
/// # Safety
/// `server` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn tp_server_add_client(server: *mut TpServer, client_id: u16) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let state = unsafe { get_mut(server)? };
        state.forget_pending(client_id);
        adapter::connect(&mut state.server, client_id);
        Ok(())
    })
}

/// Removes client `client_id` and its history; writes whether it was
/// connected to `*was_connected` unless that is null.
///
/// # Safety
/// `server` is a live handle; `was_connected` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_server_remove_client(
    server: *mut TpServer,
    client_id: u16,
    was_connected: *mut bool,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let was_connected = unsafe { Out::optional(was_connected, "was_connected")? };
        // SAFETY: as above.
        let state = unsafe { get_mut(server)? };
        state.forget_pending(client_id);
        let removed = adapter::disconnect(&mut state.server, client_id);
        write_opt(was_connected, removed);
        Ok(())
    })
}

/// Starts a tick with the whole world's state `world` and writes the tick's
/// sequence to `*sequence` unless that is null. The server keeps a
/// reference to the state (no copy); changing `world` afterwards copies it
/// first, so the server's history is never altered.
///
/// # Safety
/// `server` and `world` are live handles; `sequence` is null or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tp_server_begin_tick(
    server: *mut TpServer,
    world: *const TpSnapshot,
    sequence: *mut u16,
) -> TpStatus {
    call(|| {
        disjoint(server, &[world.cast()])?;
        // SAFETY: forwarded from this function's contract.
        let sequence = unsafe { Out::optional(sequence, "sequence")? };
        // SAFETY: as above; the two handles differ.
        let (state, world) = unsafe { (get_mut(server)?, get(world)?) };
        state.pending = None;
        let seq = adapter::begin_tick(&mut state.server, world.clone());
        write_opt(sequence, seq);
        Ok(())
    })
}

/// Writes this tick's packet for client `client_id` into `out` (room for
/// `capacity` bytes) and its length to `*written`: a delta against the
/// newest snapshot the client acked, else a full snapshot. Clients with
/// the same baseline get the same bytes, encoded once. When `capacity` is
/// too small, `*written` gets the size needed and the call returns
/// `TP_STATUS_BUFFER_TOO_SMALL`; calling again for the same client in the
/// same tick, before encoding for any other client, returns the same
/// packet (encoding for another client first drops it, and the retry
/// encodes and counts a new one).
///
/// # Safety
/// `server` is a live handle; `out` is valid for writes of `capacity`
/// bytes; `written` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_server_encode(
    server: *mut TpServer,
    client_id: u16,
    out: *mut u8,
    capacity: usize,
    written: *mut usize,
) -> TpStatus {
    call(|| {
        // Checked before the send is made and counted, so a call that
        // fails on its arguments changes nothing.
        // SAFETY: forwarded from this function's contract.
        let (out, written) = unsafe {
            (
                OutBuf::new(out, capacity, "out")?,
                Out::new(written, "written")?,
            )
        };
        // SAFETY: as above.
        let state = unsafe { get_mut(server)? };
        let sequence = adapter::sequence(&state.server);
        let bytes = match state.pending.take() {
            Some(p) if p.client == client_id && p.sequence == sequence => p.bytes,
            _ => adapter::send(&mut state.server, client_id)?,
        };
        let r = copy_out(out, &bytes, written, "out");
        if matches!(&r, Err(e) if e.status == TpStatus::BufferTooSmall) {
            state.pending = Some(Pending {
                client: client_id,
                sequence,
                bytes,
            });
        }
        r
    })
}

/// Takes a message (`len` bytes at `message`, made by `tp_client_message`)
/// that arrived on client `client_id`'s own connection (one your
/// transport authenticated): its ack moves that client's baseline
/// forward, its request for a full snapshot is honoured. The message names
/// no client, so no peer can ack for another client or make it
/// resynchronise. Malformed messages and unknown clients give
/// `TP_STATUS_SESSION`; late, duplicate or bogus acks are ignored.
///
/// # Safety
/// `server` is a live handle; `message` is valid for reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tp_server_on_message_from(
    server: *mut TpServer,
    client_id: u16,
    message: *const u8,
    len: usize,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (state, message) = unsafe { (get_mut(server)?, slice(message, len, "message")?) };
        Ok(adapter::handle_message_from(
            &mut state.server,
            client_id,
            message,
        )?)
    })
}

/// Writes the server's counters to `*stats`.
///
/// # Safety
/// `server` is a live handle; `stats` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_server_stats(
    server: *const TpServer,
    stats: *mut TpServerStats,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let stats = unsafe { Out::new(stats, "stats")? };
        // SAFETY: as above.
        stats.write(adapter::server_stats(&unsafe { get(server)? }.server));
        Ok(())
    })
}
