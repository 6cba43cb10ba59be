//! Properties the fuzz targets assert, shared with the regression test that
//! replays committed crash inputs (`codec/tests/fuzz_regressions.rs`).
//!
//! Each property takes raw fuzzer bytes, builds its inputs from them with
//! [`arbitrary::Unstructured`], and panics only if the property is violated.
//! Running out of input bytes is never a failure: generators fall back to
//! zeros and small sizes. The fuzz targets in `fuzz/fuzz_targets/` are
//! one-liners calling these functions, one target per property, named after
//! it; [`PROPERTIES`] lists them for the regression test.

use std::collections::BTreeMap;

use arbitrary::{Result as AResult, Unstructured};

use tickpack::internals::{
    set_decode, set_encode, BlockHeader, BlockType, Blocks, BLOCK_HEADER_LEN,
};
use tickpack::{
    decode, encode, Baseline, Checksum, DecodeError, Decoder, DeltaOp, Dictionary, EncodeError,
    Encoder, EntityType, Limits, PacketHeader, PacketIds, Recall, Schema, Section, SectionRef,
    Snapshot, MAX_BASELINE_DISTANCE, MAX_BLOCK_CONTENT, MAX_HEADER_LEN,
};

/// A property: panics on the input that violates it.
pub type Property = fn(&[u8]);

/// Every property by name: the fuzz target of the same name calls it.
pub const PROPERTIES: &[(&str, Property)] = &[
    ("decode_corrupt", decode_corrupt),
    ("roundtrip", roundtrip),
    ("no_output_leak", no_output_leak),
    ("header_roundtrip", header_roundtrip),
    ("subset_roundtrip", subset_roundtrip),
    ("blocks_decode", blocks_decode),
    ("session_ops", session_ops),
    ("capture_read", capture_read),
    ("dictset_load", dictset_load),
    ("fragment_reassembly", fragment_reassembly),
    ("chunk_receiver", chunk_receiver),
    ("model_decode", model_decode),
    ("model_table_load", model_table_load),
    ("model_block_decode", model_block_decode),
    ("conn_packets", conn_packets),
    ("quant_roundtrip", quant_roundtrip),
    ("net_endpoint", net_endpoint),
];

/// The id the fuzzed decoders register their dictionary under.
pub const DICT_ID: u32 = 0xd1c7_0001;

use crate::arb::*;
use crate::rng::SplitMix64;

mod conn;
mod decode;
mod dictset;
mod model;
mod net;
mod packets;
mod quant;
mod roundtrip;
mod session;
mod transport;

use conn::*;
use decode::*;
use dictset::*;
use model::*;
use net::*;
use packets::*;
use quant::*;
use roundtrip::*;
use session::*;
use transport::*;

/// The per-client baseline state machine, server and client sides, driven
/// by an arbitrary list of operations (tick and send, deliver, drop,
/// duplicate, reorder, ack, garbage ack, garbage packet, request full,
/// a second client joining late) for two clients that each see the world
/// whole or through the tick's filter (so they share encodes across
/// chains that began on different ticks), under the default limits or
/// ones small enough that recalls evict on most steps. After every step:
/// whatever a client applied equals what the server sent it for that
/// sequence, its newest state is a state the server sent it, the server's
/// baseline only moves forward and is a snapshot it sent, and no packet
/// the server made is ever undecodable.
pub fn session_ops(data: &[u8]) {
    let _ = session_ops_inner(&mut Unstructured::new(data));
}

/// Arbitrary bytes, or a valid capture truncated or with bytes changed,
/// read as a `.tpcap` with tight limits: ticks come out or a typed error
/// naming an offset within the input, never a panic; an intact capture
/// reads back exactly what was written.
pub fn capture_read(data: &[u8]) {
    let _ = capture_read_inner(&mut Unstructured::new(data));
}

/// Arbitrary manifest bytes and dictionary files, or the shipped racing set
/// (manifest, dictionaries and model table) with bytes changed, its sizes,
/// hashes and ids often recomputed afterwards so that the damage reaches
/// the parsers behind them, loaded as a dictionary set: `Ok` or a typed
/// error, never a panic; a loaded set's dictionaries match their manifest,
/// and the intact set loads.
pub fn dictset_load(data: &[u8]) {
    let _ = dictset_load_inner(&mut Unstructured::new(data));
}

/// Arbitrary bytes decoded as a packet, with an arbitrary small schema, an
/// optional baseline and prior (passed with the sequences the packet names),
/// an optional registered dictionary and optionally tight [`Limits`]. Some
/// inputs get a valid header (or valid header and blocks, or are a valid
/// packet with mutations) so decoding reaches blocks and payload parsing.
///
/// Decoding must return `Ok` or `Err`, never panic. A successful decode must
/// give a well-formed snapshot that respects the limits and survives a
/// re-encode/decode round trip.
pub fn decode_corrupt(data: &[u8]) {
    let _ = decode_corrupt_inner(&mut Unstructured::new(data));
}

/// A schema with every kind of quantisation, snapshots of plausible values
/// and float specials: [`Schema::quantize`] is idempotent and gives
/// snapshots [`Schema::check_quantized`] accepts, which encode and decode
/// (keyframe and delta) to themselves; a corrupted delta decodes to an error
/// or to values inside every declaration.
pub fn quant_roundtrip(data: &[u8]) {
    let _ = quant_roundtrip_inner(&mut Unstructured::new(data));
}

/// Arbitrary schema (every [`DeltaOp`]), snapshot, baseline, prior,
/// dictionary, level, limits, checksum and sequence numbers (across the u16
/// wrap): encode then decode gives the identical snapshot and header, through
/// [`Encoder::encode`], [`Encoder::encode_into`] (exactly sized and
/// [`Encoder::max_encoded_len`]-sized buffers), [`Encoder::encode_to_vec`],
/// [`Encoder::encode_sections`], [`Reference::predicted`](tickpack::Reference::predicted) and the
/// one-shot [`encode`]/[`decode`]. Encoder errors must be justified by the
/// inputs.
pub fn roundtrip(data: &[u8]) {
    let _ = roundtrip_inner(&mut Unstructured::new(data));
}

/// Decoding a (valid or corrupt) packet into a [`Snapshot`] full of junk, with
/// a decoder that already decoded another packet, gives the same result as a
/// fresh decoder into a fresh snapshot; on error the output is left empty.
pub fn no_output_leak(data: &[u8]) {
    let _ = no_output_leak_inner(&mut Unstructured::new(data));
}

/// [`PacketHeader::parse`] then [`PacketHeader::write`] reproduces the parsed
/// prefix exactly; write then parse of an arbitrary header (baseline distance
/// 1..=32767) is the identity; [`BlockHeader`] `to_bytes`/`from_bytes` are
/// inverse.
pub fn header_roundtrip(data: &[u8]) {
    // The raw bytes as a header prefix.
    if let Ok((h, n)) = PacketHeader::parse(data) {
        assert!(n <= MAX_HEADER_LEN && n <= data.len(), "header length {n}");
        if let Some(d) = h.baseline_distance() {
            assert!((1..=MAX_BASELINE_DISTANCE).contains(&d), "distance {d}");
        }
        if let Some(p) = h.prior {
            let Some(b) = h.baseline else {
                panic!("a prior without a baseline: {h:?}")
            };
            let total = h.sequence.wrapping_sub(p);
            assert!(
                b != p
                    && (1..=MAX_BASELINE_DISTANCE).contains(&total)
                    && total > h.sequence.wrapping_sub(b),
                "prior {p} not strictly before baseline {b} within 32767 of {}",
                h.sequence
            );
        }
        let mut out = Vec::new();
        h.write(&mut out);
        assert_eq!(out, &data[..n], "parse then write of {h:?}");
    }
    let _ = header_roundtrip_inner(&mut Unstructured::new(data));
}

/// Entity-set coding: encode then decode is the identity for arbitrary
/// non-empty subsets, never larger than a bitmap and its head; decoding
/// arbitrary bytes never panics and gives ascending indices below the
/// universe.
pub fn subset_roundtrip(data: &[u8]) {
    let _ = subset_roundtrip_inner(&mut Unstructured::new(data));
}

/// Block coding: decoding arbitrary bytes under a cap never panics and never
/// regenerates more than the cap; encode then decode of arbitrary payloads is
/// the identity.
pub fn blocks_decode(data: &[u8]) {
    let _ = blocks_decode_inner(&mut Unstructured::new(data));
}

/// Fragment reassembly under arbitrary configs and hostile datagrams
/// (garbage, honest parts with header fields changed, drops, duplicates,
/// reordering, time jumps): `handle` never panics, buffered bytes and piles
/// never exceed the caps, nothing longer than the largest allowed packet
/// comes out. Then honest parts only, in an arbitrary order with
/// duplicates: every packet reassembles exactly, once.
pub fn fragment_reassembly(data: &[u8]) {
    let _ = fragment_reassembly_inner(&mut Unstructured::new(data));
}

/// Chunk receiver and sender fed arbitrary or mutated slices and acks:
/// typed errors, never a panic, acks within their size bound, no chunk
/// above the receiver's limit. Then an honest transfer over a link whose
/// drops, duplicates and delays the input picks completes, and the chunk
/// read equals the chunk sent.
pub fn chunk_receiver(data: &[u8]) {
    let _ = chunk_receiver_inner(&mut Unstructured::new(data));
}

/// Arbitrary tokens under a trained, unrelated, arbitrary or uniform model
/// table: encode then decode is the identity and the stream has no
/// trailing bytes; arbitrary bytes under the table decode to values or typed errors
/// for any sequence of calls, never a panic.
pub fn model_decode(data: &[u8]) {
    let _ = model_decode_inner(&mut Unstructured::new(data));
}

/// Arbitrary bytes, or a valid model table damaged, loaded under the
/// default or a small slot limit: a table within the limit with every
/// probability in 1..=4095 that reloads identically, or a typed error;
/// an intact table loads back exactly.
pub fn model_table_load(data: &[u8]) {
    let _ = model_table_load_inner(&mut Unstructured::new(data));
}

/// A packet coded as one model block (table trained on it) decodes to the
/// snapshot encoded; the packet damaged (bytes changed, truncated,
/// extended) decodes to a snapshot or a typed error, never a panic.
pub fn model_block_decode(data: &[u8]) {
    let _ = model_block_decode_inner(&mut Unstructured::new(data));
}

/// The connection layer fed arbitrary datagrams at both ends, mutations of
/// honest packets and replays, between honest traffic: nothing forged or
/// mutated is ever delivered, every honest packet is delivered once, and
/// nothing hostile moves the client or ends the connection.
pub fn conn_packets(data: &[u8]) {
    let _ = conn_packets_inner(&mut Unstructured::new(data));
}

/// Arbitrary datagrams at the server (from the honest client's address or
/// another) and at the client, mutated and replayed honest datagrams, and
/// ticks: every call returns, the server refuses whatever comes from
/// another address, the honest client's applied state is always what the
/// server sent it, and nothing ends its connection.
pub fn net_endpoint(data: &[u8]) {
    let _ = net_endpoint_inner(&mut Unstructured::new(data));
}
