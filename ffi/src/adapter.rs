//! The one place that calls tickpack's encoder, decoder, dictionary-set and
//! session entry points and converts their settings, results and counters
//! to and from the C structs, so that a change of tickpack's API touches
//! this file only. Schemas, snapshots and sections are used directly.

#![forbid(unsafe_code)]

use std::sync::Arc;

use tickpack::{
    Baseline, DecodeError, Decoder, EncodeError, Limits, PacketHeader, Schema, Snapshot,
};
use tickpack_session::{
    Client, ClientConfig, DropReason, Hello, Received, Server, ServerConfig, SessionError, View,
};
use tickpack_sets::dictset::{DictKind, DictSetError, DictionarySet};

use crate::client::{TpClientConfig, TpClientStats, TpOutcome, TpReceived};
use crate::codec::{TpLimits, TpPacketInfo};
use crate::server::{TpServerConfig, TpServerStats};

/// The default limits.
pub(crate) fn default_limits() -> TpLimits {
    let l = Limits::default();
    TpLimits {
        max_entities_per_section: l.max_entities_per_section,
        max_decoded_bytes: l.max_decoded_bytes,
        max_snapshot_bytes: l.max_snapshot_bytes,
    }
}

fn limits(l: TpLimits) -> Limits {
    Limits {
        max_entities_per_section: l.max_entities_per_section,
        max_decoded_bytes: l.max_decoded_bytes,
        max_snapshot_bytes: l.max_snapshot_bytes,
    }
}

fn packet_info_of(h: PacketHeader) -> TpPacketInfo {
    let dictionary_id = h.ids.and_then(|i| i.dictionary_id);
    TpPacketInfo {
        sequence: h.sequence,
        has_baseline: h.baseline.is_some(),
        baseline: h.baseline.unwrap_or(0),
        has_prior: h.prior.is_some(),
        prior: h.prior.unwrap_or(0),
        uses_dictionary: h.dictionary,
        has_ids: h.ids.is_some(),
        schema_id: h.ids.map_or(0, |i| i.schema_id),
        has_dictionary_id: dictionary_id.is_some(),
        dictionary_id: dictionary_id.unwrap_or(0),
    }
}

/// What the header at the start of `packet` says.
pub(crate) fn packet_info(packet: &[u8]) -> Result<TpPacketInfo, DecodeError> {
    PacketHeader::parse(packet).map(|(h, _)| packet_info_of(h))
}

/// A baseline as the C API passes it: its sequence and its state.
pub(crate) type Base<'a> = Option<(u16, &'a Snapshot)>;

fn baseline(base: Base<'_>) -> Option<Baseline<'_>> {
    base.map(|(sequence, snapshot)| Baseline { sequence, snapshot })
}

/// An encoder without dictionary, or one holding a dictionary set's.
pub(crate) struct Encoder(tickpack::Encoder);

impl Encoder {
    pub(crate) fn new(schema: Schema, level: i32) -> Self {
        Self(tickpack::Encoder::with_level(schema, level))
    }

    pub(crate) fn from_set(set: &DictionarySet, level: i32) -> Result<Self, DictSetError> {
        set.encoder(level).map(Self)
    }

    pub(crate) fn set_checksum(&mut self, on: bool) {
        self.0.set_checksum(on);
    }

    pub(crate) fn set_limits(&mut self, l: TpLimits) {
        self.0.set_limits(limits(l));
    }

    /// Encodes `snapshot` as packet `sequence` against `base` into `out`.
    pub(crate) fn encode(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        base: Base<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        self.0
            .encode_to_vec(snapshot, sequence, baseline(base), out)
    }

    /// An upper bound on the packet size for `snapshot` against `base`.
    pub(crate) fn max_encoded_len(&mut self, snapshot: &Snapshot, base: Base<'_>) -> usize {
        self.0.max_encoded_len(snapshot, base.map(|(_, s)| s))
    }
}

/// Loads and verifies the dictionary set in `dir`.
pub(crate) fn load_set(dir: &str) -> Result<DictionarySet, DictSetError> {
    DictionarySet::load(dir)
}

/// A decoder for `schema` without dictionaries.
pub(crate) fn decoder(schema: Schema) -> Decoder {
    Decoder::new(schema)
}

/// A decoder with `set`'s schema and dictionaries.
pub(crate) fn decoder_from_set(set: &DictionarySet) -> Result<Decoder, DictSetError> {
    set.decoder()
}

/// Sets a decoder's limits.
pub(crate) fn set_decoder_limits(decoder: &mut Decoder, l: TpLimits) {
    decoder.set_limits(limits(l));
}

/// Decodes `packet` against `base` into `out` (left empty on error).
pub(crate) fn decode(
    decoder: &mut Decoder,
    packet: &[u8],
    base: Base<'_>,
    out: &mut Snapshot,
) -> Result<TpPacketInfo, DecodeError> {
    decoder
        .decode_into(packet, baseline(base), out)
        .map(packet_info_of)
}

/// A flag C passed as a byte: 0 is false, anything else true (as C's own
/// truth), so no byte value is undefined behaviour.
pub(crate) fn flag(byte: u8) -> bool {
    byte != 0
}

/// The default server settings.
pub(crate) fn default_server_config() -> TpServerConfig {
    let c = ServerConfig::default();
    TpServerConfig {
        history: c.history,
        level: c.level,
        checksum: u8::from(c.checksum),
        share_encodes: u8::from(c.share_encodes),
        first_sequence: c.first_sequence,
        limits: default_limits(),
    }
}

/// A session server for `schema` with settings `c`, compressing with
/// `set`'s dictionaries if given (its keyframe dictionary for full
/// snapshots).
pub(crate) fn server(
    schema: Schema,
    set: Option<&DictionarySet>,
    c: &TpServerConfig,
) -> Result<Server, SessionError> {
    Server::new(schema, server_config(set, c))
}

/// The session server settings `c`, with `set`'s dictionaries if given.
pub(crate) fn server_config(set: Option<&DictionarySet>, c: &TpServerConfig) -> ServerConfig {
    let config = ServerConfig {
        history: c.history,
        level: c.level,
        limits: limits(c.limits),
        checksum: flag(c.checksum),
        first_sequence: c.first_sequence,
        share_encodes: flag(c.share_encodes),
        ..ServerConfig::default()
    };
    match set {
        None => config,
        Some(set) => ServerConfig {
            dictionary: set.dictionary(DictKind::Delta).cloned(),
            keyframe_dictionary: set.dictionary(DictKind::Keyframe).cloned(),
            ..config
        },
    }
}

/// Adds (or resets) client `id`.
pub(crate) fn connect(server: &mut Server, id: u16) {
    server.connect(id);
}

/// Removes client `id`; returns whether it was connected.
pub(crate) fn disconnect(server: &mut Server, id: u16) -> bool {
    server.disconnect(id)
}

/// The current tick's sequence.
pub(crate) fn sequence(server: &Server) -> u16 {
    server.sequence()
}

/// Starts a tick with `world`; returns its sequence.
pub(crate) fn begin_tick(server: &mut Server, world: Arc<Snapshot>) -> u16 {
    server.begin_tick(world)
}

/// This tick's packet for client `id`, with the whole world in view.
pub(crate) fn send(server: &mut Server, id: u16) -> Result<Arc<[u8]>, SessionError> {
    server.send(id, &View::all())
}

/// Takes a message that arrived on client `id`'s connection: its ack and
/// its request for a full snapshot are that client's (a message names no
/// client).
pub(crate) fn handle_message_from(
    server: &mut Server,
    id: u16,
    message: &[u8],
) -> Result<(), SessionError> {
    server.handle_message(id, message).map(|_| ())
}

/// The server's counters.
pub(crate) fn server_stats(server: &Server) -> TpServerStats {
    let s = server.stats();
    TpServerStats {
        packets: s.packets,
        full: s.full,
        encodes: s.encodes,
        bytes: s.bytes,
    }
}

/// The session client settings `c`, holding `set`'s dictionaries if
/// given.
pub(crate) fn client_config(set: Option<&DictionarySet>, c: &TpClientConfig) -> ClientConfig {
    let config = ClientConfig {
        history: c.history,
        max_jump: c.max_jump,
        resync_after: c.resync_after,
        limits: limits(c.limits),
        ..ClientConfig::default()
    };
    match set {
        None => config,
        Some(set) => ClientConfig {
            dictionaries: set.dictionaries().iter().map(|(_, d)| d.clone()).collect(),
            ..config
        },
    }
}

/// The default client settings.
pub(crate) fn default_client_config() -> TpClientConfig {
    let c = ClientConfig::default();
    TpClientConfig {
        history: c.history,
        max_jump: c.max_jump,
        resync_after: c.resync_after,
        limits: default_limits(),
    }
}

/// A session client for `schema` with settings `c`, holding `set`'s
/// dictionaries if given.
pub(crate) fn client(
    schema: Schema,
    set: Option<&DictionarySet>,
    c: &TpClientConfig,
) -> Result<Client, SessionError> {
    let config = client_config(set, c);
    let Some(set) = set else {
        return Client::new(schema, config);
    };
    let mut client = Client::new(schema, config)?;
    // Packets do not always name their dictionary: agree on the set's, as
    // a server made with the same set announces them.
    let hello = Hello {
        schema_id: set.schema().id(),
        dictionary: set.dictionary(DictKind::Delta).map(|d| d.id()),
        keyframe_dictionary: set.dictionary(DictKind::Keyframe).map(|d| d.id()),
        limits: limits(c.limits),
    };
    client.answer(&hello.to_bytes())?;
    Ok(client)
}

/// Applies one packet: what happened, and for a dropped packet the reason.
pub(crate) fn receive(client: &mut Client, packet: &[u8]) -> (TpReceived, Option<String>) {
    let r = client.receive(packet);
    let (outcome, sequence, baseline) = match &r {
        Received::Applied { sequence, baseline } => (TpOutcome::Applied, *sequence, *baseline),
        Received::Dropped(DropReason::Stale { sequence, .. }) => {
            (TpOutcome::Stale, *sequence, None)
        }
        Received::Dropped(DropReason::TooFarAhead { sequence, .. }) => {
            (TpOutcome::TooFarAhead, *sequence, None)
        }
        Received::Dropped(DropReason::UnknownBaseline { sequence, baseline }) => {
            (TpOutcome::UnknownBaseline, *sequence, Some(*baseline))
        }
        Received::Dropped(DropReason::Undecodable(_)) => (TpOutcome::Undecodable, 0, None),
        Received::Dropped(_) => (TpOutcome::Other, 0, None),
    };
    let reason = match r {
        Received::Dropped(d) => Some(d.to_string()),
        Received::Applied { .. } => None,
    };
    let result = TpReceived {
        outcome,
        sequence,
        has_baseline: baseline.is_some(),
        baseline: baseline.unwrap_or(0),
    };
    (result, reason)
}

/// The newest applied snapshot and its sequence.
pub(crate) fn latest(client: &Client) -> Option<(u16, &Snapshot)> {
    client.latest()
}

/// The client's counters.
pub(crate) fn client_stats(client: &Client) -> TpClientStats {
    let s = client.stats();
    TpClientStats {
        applied: s.applied,
        full: s.full,
        stale: s.stale,
        too_far_ahead: s.too_far_ahead,
        resyncs: s.resyncs,
        unknown_baseline: s.unknown_baseline,
        undecodable: s.undecodable,
    }
}

/// The message (ack and full-snapshot request) the client sends now.
pub(crate) fn message(client: &Client) -> Vec<u8> {
    client.message().to_bytes()
}
