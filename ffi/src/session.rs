//! The session layer: a server that sends each client deltas against the
//! newest snapshot it acked, and clients that apply packets and ack them.

// `#[no_mangle]` exports; pointers are dereferenced only through
// `boundary`, each call in an `unsafe` block stating the caller's contract.
#![allow(unsafe_code)]

use std::sync::Arc;

use tickpack::session::{ClientConfig, ClientMessage, DropReason, Received, Server, ServerConfig};
use tickpack::Limits;

use crate::adapter;
use crate::boundary::{
    call, copy_out, disjoint, free, get, get_mut, new_handle, put, put_opt, slice,
};
use crate::error::{set_last, Error, TpStatus};
use crate::{TpClient, TpDictSet, TpSchema, TpServer, TpSnapshot};

/// Largest client message (`tp_client_message`), in bytes.
pub const TP_CLIENT_MESSAGE_MAX: usize = 5;
// A literal above so that cbindgen can write it into the header.
const _: () = assert!(TP_CLIENT_MESSAGE_MAX == ClientMessage::MAX_LEN);

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
    /// Send a 16-bit checksum of the snapshot in every packet (default on).
    pub checksum: bool,
    /// Encode once per tick for all clients with the same baseline, and
    /// hand them the same bytes (default on).
    pub share_encodes: bool,
    /// Sequence of the first tick (default 0).
    pub first_sequence: u16,
    /// Most entities of one type a packet may carry (default 65,536); give
    /// clients the same.
    pub max_entities_per_section: usize,
    /// Most bytes one packet may decompress to (default 1 MiB); give clients
    /// the same.
    pub max_decoded_bytes: usize,
}

impl Default for TpServerConfig {
    fn default() -> Self {
        let c = ServerConfig::default();
        Self {
            history: c.history,
            level: c.level,
            checksum: c.checksum,
            share_encodes: c.share_encodes,
            first_sequence: c.first_sequence,
            max_entities_per_section: c.limits.max_entities_per_section,
            max_decoded_bytes: c.limits.max_decoded_bytes,
        }
    }
}

/// Client settings; `tp_client_config_default` fills in the defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpClientConfig {
    /// Snapshots kept, at least the server's `history` (default 32).
    pub history: usize,
    /// The server's `max_entities_per_section`.
    pub max_entities_per_section: usize,
    /// The server's `max_decoded_bytes`.
    pub max_decoded_bytes: usize,
}

impl Default for TpClientConfig {
    fn default() -> Self {
        let c = ClientConfig::default();
        Self {
            history: c.history,
            max_entities_per_section: c.limits.max_entities_per_section,
            max_decoded_bytes: c.limits.max_decoded_bytes,
        }
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

impl TpReceived {
    fn of(r: &Received) -> Self {
        let (outcome, sequence, baseline) = match r {
            Received::Applied { sequence, baseline } => (TpOutcome::Applied, *sequence, *baseline),
            Received::Dropped(DropReason::Stale { sequence, .. }) => {
                (TpOutcome::Stale, *sequence, None)
            }
            Received::Dropped(DropReason::UnknownBaseline { sequence, baseline }) => {
                (TpOutcome::UnknownBaseline, *sequence, Some(*baseline))
            }
            Received::Dropped(DropReason::Undecodable(_)) => (TpOutcome::Undecodable, 0, None),
        };
        Self {
            outcome,
            sequence,
            has_baseline: baseline.is_some(),
            baseline: baseline.unwrap_or(0),
        }
    }
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
    /// Dropped for a baseline not held.
    pub unknown_baseline: u64,
    /// Dropped as malformed or with a wrong checksum.
    pub undecodable: u64,
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

/// Writes the default server settings to `*config`.
///
/// # Safety
/// `config` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_server_config_default(config: *mut TpServerConfig) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { put(config, TpServerConfig::default(), "config") })
}

/// Writes the default client settings to `*config`.
///
/// # Safety
/// `config` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_client_config_default(config: *mut TpClientConfig) -> TpStatus {
    // SAFETY: forwarded from this function's contract.
    call(|| unsafe { put(config, TpClientConfig::default(), "config") })
}

/// The optional dictionary set of `tp_server_new` / `tp_client_new`,
/// checked against the schema.
///
/// # Safety
/// `set` is null or a live handle.
unsafe fn optional_set<'a>(
    set: *const TpDictSet,
    schema: &tickpack::Schema,
) -> Result<Option<&'a tickpack::dictset::DictionarySet>, Error> {
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
        let schema = unsafe { get(schema)? };
        // SAFETY: as above.
        let set = unsafe { optional_set(set, schema)? };
        // SAFETY: as above (a null `config` is an empty slice).
        let c = unsafe { slice(config, usize::from(!config.is_null()), "config")? }
            .first()
            .copied()
            .unwrap_or_default();
        let config = ServerConfig {
            history: c.history,
            level: c.level,
            limits: Limits {
                max_entities_per_section: c.max_entities_per_section,
                max_decoded_bytes: c.max_decoded_bytes,
            },
            checksum: c.checksum,
            first_sequence: c.first_sequence,
            share_encodes: c.share_encodes,
            ..ServerConfig::default()
        };
        let server = adapter::server(schema.clone(), set, config)?;
        let state = ServerState {
            server,
            pending: None,
        };
        // SAFETY: as above.
        unsafe { new_handle(out, state) }
    })
}

/// Frees a server. Null is accepted and does nothing.
///
/// # Safety
/// `server` is null or a live `TpServer` not used again.
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
        adapter::connect(&mut unsafe { get_mut(server)? }.server, client_id);
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
        let removed = adapter::disconnect(&mut unsafe { get_mut(server)? }.server, client_id);
        // SAFETY: as above.
        unsafe { put_opt(was_connected, removed, "was_connected") }
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
        // SAFETY: forwarded from this function's contract; the two handles
        // differ.
        let (state, world) = unsafe { (get_mut(server)?, get(world)?) };
        state.pending = None;
        let seq = adapter::begin_tick(&mut state.server, world.clone());
        // SAFETY: as above.
        unsafe { put_opt(sequence, seq, "sequence") }
    })
}

/// Writes this tick's packet for client `client_id` into `out` (room for
/// `capacity` bytes) and its length to `*written`: a delta against the
/// newest snapshot the client acked, else a full snapshot. Clients with
/// the same baseline get the same bytes, encoded once. When `capacity` is
/// too small, `*written` gets the size needed and the call returns
/// `TP_STATUS_BUFFER_TOO_SMALL`; calling again in the same tick returns
/// the same packet.
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
        // SAFETY: forwarded from this function's contract.
        let state = unsafe { get_mut(server)? };
        let sequence = adapter::sequence(&state.server);
        let bytes = match state.pending.take() {
            Some(p) if p.client == client_id && p.sequence == sequence => p.bytes,
            _ => adapter::send(&mut state.server, client_id)?,
        };
        // SAFETY: as above.
        let r = unsafe { copy_out(out, capacity, &bytes, written, "out") };
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

/// Takes a message a client sent (`len` bytes at `message`, made by
/// `tp_client_message`): its ack moves that client's baseline forward, its
/// request for a full snapshot is honoured. Writes the sender's id to
/// `*client_id` unless that is null. Malformed messages and unknown
/// clients give `TP_STATUS_SESSION`; late, duplicate or bogus acks are
/// ignored.
///
/// # Safety
/// `server` is a live handle; `message` is valid for reads of `len` bytes;
/// `client_id` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_server_on_message(
    server: *mut TpServer,
    message: *const u8,
    len: usize,
    client_id: *mut u16,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let (state, message) = unsafe { (get_mut(server)?, slice(message, len, "message")?) };
        let id = adapter::handle_message(&mut state.server, message)?;
        // SAFETY: as above.
        unsafe { put_opt(client_id, id, "client_id") }
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
        let s = adapter::server_stats(&unsafe { get(server)? }.server);
        let s = TpServerStats {
            packets: s.packets,
            full: s.full,
            encodes: s.encodes,
            bytes: s.bytes,
        };
        // SAFETY: as above.
        unsafe { put(stats, s, "stats") }
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
        let schema = unsafe { get(schema)? };
        // SAFETY: as above.
        let set = unsafe { optional_set(set, schema)? };
        // SAFETY: as above (a null `config` is an empty slice).
        let c = unsafe { slice(config, usize::from(!config.is_null()), "config")? }
            .first()
            .copied()
            .unwrap_or_default();
        let config = ClientConfig {
            history: c.history,
            limits: Limits {
                max_entities_per_section: c.max_entities_per_section,
                max_decoded_bytes: c.max_decoded_bytes,
            },
            ..ClientConfig::default()
        };
        let client = adapter::client(schema.clone(), set, config)?;
        // SAFETY: as above.
        unsafe { new_handle(out, client) }
    })
}

/// Frees a client. Null is accepted and does nothing.
///
/// # Safety
/// `client` is null or a live `TpClient` not used again.
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
        if result.is_null() {
            return Err(Error::null("result"));
        }
        // SAFETY: forwarded from this function's contract.
        let (client, packet) = unsafe { (get_mut(client)?, slice(packet, len, "packet")?) };
        let r = adapter::receive(client, packet);
        if let Received::Dropped(d) = &r {
            reason = Some(d.to_string());
        }
        // SAFETY: as above.
        unsafe { put(result, TpReceived::of(&r), "result") }
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
        // SAFETY: forwarded from this function's contract; the two handles
        // differ.
        let (client, out) = unsafe { (get(client)?, get_mut(out)?) };
        let (seq, latest) = adapter::latest(client)
            .ok_or_else(|| Error::new(TpStatus::Empty, "no packet applied yet"))?;
        Arc::make_mut(out).clone_from(latest);
        // SAFETY: as above.
        unsafe { put_opt(sequence, seq, "sequence") }
    })
}

/// Writes the message to send the server now into `out` (room for
/// `capacity` bytes, `TP_CLIENT_MESSAGE_MAX` is always enough) and its
/// length to `*written`: `client_id`, the newest applied sequence (the
/// ack), and whether a full snapshot is needed. Send it after every
/// received packet, or at least every tick.
///
/// # Safety
/// `client` is a live handle; `out` is valid for writes of `capacity`
/// bytes; `written` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tp_client_message(
    client: *const TpClient,
    client_id: u16,
    out: *mut u8,
    capacity: usize,
    written: *mut usize,
) -> TpStatus {
    call(|| {
        // SAFETY: forwarded from this function's contract.
        let bytes = adapter::message(unsafe { get(client)? }, client_id);
        // SAFETY: as above.
        unsafe { copy_out(out, capacity, &bytes, written, "out") }
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
        let s = adapter::client_stats(unsafe { get(client)? });
        let s = TpClientStats {
            applied: s.applied,
            full: s.full,
            stale: s.stale,
            unknown_baseline: s.unknown_baseline,
            undecodable: s.undecodable,
        };
        // SAFETY: as above.
        unsafe { put(stats, s, "stats") }
    })
}
