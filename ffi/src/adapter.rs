//! The one place that calls tickpack's encoder, decoder, dictionary-set and
//! session entry points, so that a change of their signatures touches this
//! file only. Schemas, snapshots and sections are used directly.

#![forbid(unsafe_code)]

use std::sync::Arc;

use tickpack::dictset::{DictSetError, DictionarySet, SetEncoder};
use tickpack::session::{
    Client, ClientConfig, ClientStats, Received, Server, ServerConfig, ServerStats, SessionError,
    View,
};
use tickpack::{
    Baseline, DecodeError, Decoder, EncodeError, Limits, PacketHeader, Schema, Snapshot,
};

/// A baseline as the C API passes it: its sequence and its state.
pub(crate) type Base<'a> = Option<(u16, &'a Snapshot)>;

fn baseline(base: Base<'_>) -> Option<Baseline<'_>> {
    base.map(|(sequence, snapshot)| Baseline { sequence, snapshot })
}

/// An encoder without dictionary, or one using a dictionary set's.
// Lives inside a handle's heap slot, one per stream: the size is no concern.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Encoder {
    Plain(tickpack::Encoder),
    Set(SetEncoder),
}

impl Encoder {
    pub(crate) fn new(schema: Schema, level: i32) -> Self {
        Self::Plain(tickpack::Encoder::with_level(schema, level))
    }

    pub(crate) fn from_set(set: &DictionarySet, level: i32) -> Result<Self, DictSetError> {
        set.encoder(level).map(Self::Set)
    }

    pub(crate) fn set_checksum(&mut self, on: bool) {
        match self {
            Self::Plain(e) => e.set_checksum(on),
            Self::Set(e) => e.set_checksum(on),
        }
    }

    pub(crate) fn set_limits(&mut self, limits: Limits) {
        match self {
            Self::Plain(e) => e.set_limits(limits),
            Self::Set(e) => e.set_limits(limits),
        }
    }

    /// Encodes `snapshot` as packet `sequence` against `base` into `out`.
    pub(crate) fn encode(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        base: Base<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        match self {
            Self::Plain(e) => e.encode_to_vec(snapshot, sequence, baseline(base), out),
            Self::Set(e) => e.encode_to_vec(snapshot, sequence, baseline(base), out),
        }
    }

    /// An upper bound on the packet size for `snapshot` against `base`.
    pub(crate) fn max_encoded_len(&mut self, snapshot: &Snapshot, base: Base<'_>) -> usize {
        let b = base.map(|(_, s)| s);
        match self {
            Self::Plain(e) => e.max_encoded_len(snapshot, b),
            Self::Set(e) => {
                let kind = tickpack::dictset::DictKind::of(base.is_some());
                e.encoder_mut(kind).max_encoded_len(snapshot, b)
            }
        }
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
pub(crate) fn set_decoder_limits(decoder: &mut Decoder, limits: Limits) {
    decoder.set_limits(limits);
}

/// Decodes `packet` against `base` into `out` (left empty on error).
pub(crate) fn decode(
    decoder: &mut Decoder,
    packet: &[u8],
    base: Base<'_>,
    out: &mut Snapshot,
) -> Result<PacketHeader, DecodeError> {
    decoder.decode_into(packet, baseline(base), out)
}

/// A session server for `schema`, compressing with `set`'s dictionaries if
/// given (its keyframe dictionary for full snapshots).
pub(crate) fn server(
    schema: Schema,
    set: Option<&DictionarySet>,
    config: ServerConfig,
) -> Result<Server, SessionError> {
    let config = match set {
        None => config,
        Some(set) => ServerConfig {
            dictionary: set.dictionary(tickpack::dictset::DictKind::Delta).cloned(),
            keyframe_dictionary: set
                .dictionary(tickpack::dictset::DictKind::Keyframe)
                .cloned(),
            ..config
        },
    };
    Server::new(schema, config)
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

/// Takes a client's message; returns its client id.
pub(crate) fn handle_message(server: &mut Server, message: &[u8]) -> Result<u16, SessionError> {
    server.handle_message(message).map(|(id, _)| id)
}

/// The server's counters.
pub(crate) fn server_stats(server: &Server) -> ServerStats {
    server.stats()
}

/// A session client for `schema` holding `set`'s dictionaries if given.
pub(crate) fn client(
    schema: Schema,
    set: Option<&DictionarySet>,
    config: ClientConfig,
) -> Result<Client, SessionError> {
    let config = match set {
        None => config,
        Some(set) => ClientConfig {
            dictionaries: set.dictionaries().iter().map(|(_, d)| d.clone()).collect(),
            ..config
        },
    };
    Client::new(schema, config)
}

/// Applies one packet.
pub(crate) fn receive(client: &mut Client, packet: &[u8]) -> Received {
    client.receive(packet)
}

/// The newest applied snapshot and its sequence.
pub(crate) fn latest(client: &Client) -> Option<(u16, &Snapshot)> {
    client.latest()
}

/// The client's counters.
pub(crate) fn client_stats(client: &Client) -> ClientStats {
    client.stats()
}

/// The message (ack and full-snapshot request) the client sends now.
pub(crate) fn message(client: &Client, client_id: u16) -> Vec<u8> {
    client.message(client_id).to_bytes()
}
