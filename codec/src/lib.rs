//! Per-tick game state compression for multiplayer servers.
//!
//! A [`Schema`] declares entity types as fixed-size records of primitive
//! fields; a [`Snapshot`] holds one tick's entities, by id, per type. The
//! [`Encoder`] turns a snapshot into a packet: alone (a keyframe) or as a
//! delta against a [`Baseline`] the receiver already holds, with each
//! field's delta operator, the records split into byte planes and the
//! result coded in raw, run-length or zstd blocks or a context-model block. The [`Decoder`]
//! reverses it bit for bit (floats and NaN payloads included), and returns
//! a typed [`DecodeError`] for any bad input, within [`Limits`] it is given.
//! The wire format is specified in [`format`](mod@format).
//!
//! ```
//! use tickpack::{Baseline, Decoder, Encoder, Primitive, Schema, Snapshot};
//!
//! let schema = Schema::builder()
//!     .entity("car")
//!     .field("pos", Primitive::F32, 3)
//!     .field("lap", Primitive::U16, 1)
//!     .build()?;
//! let mut tick0 = Snapshot::new(&schema);
//! for id in 0..8u32 {
//!     let mut record = [0u8; 14];
//!     record[..4].copy_from_slice(&(id as f32 * 10.0).to_le_bytes());
//!     tick0.section_mut(0).unwrap().insert(id, &record)?;
//! }
//! let mut tick1 = tick0.clone();
//! tick1.section_mut(0).unwrap().insert(3, &[1; 14])?;
//!
//! let mut encoder = Encoder::new(schema.clone());
//! let mut decoder = Decoder::new(schema);
//! let keyframe = encoder.encode(&tick0, 0, None)?;
//! let (_, got0) = decoder.decode(&keyframe, None)?;
//! assert_eq!(got0, tick0);
//!
//! // The client acked sequence 0: send tick 1 as a delta against it.
//! let base = Baseline { sequence: 0, snapshot: &got0 };
//! let delta = encoder.encode(&tick1, 1, Some(base))?;
//! let (header, got1) = decoder.decode(&delta, Some(base))?;
//! assert_eq!((header.baseline, &got1), (Some(0), &tick1));
//! assert!(delta.len() < keyframe.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Beyond single packets: the `tickpack-session` crate keeps per-client
//! acked baselines (sans-IO), `tickpack-sets` records traffic to `.tpcap`
//! files and loads trained dictionary sets, and `tickpack-transport` has
//! the transport pieces (fragments, reliable chunks, pacing, jitter
//! buffer). This crate does no file, thread or socket I/O.
//!
//! # Features
//!
//! | feature | default | adds |
//! |---------|---------|------|
//! | `serde` | yes | [`Schema::from_json`], [`Schema::from_toml`], [`Schema::to_json`] (serde, serde_json, toml) |
//! | `training` | no | the whole [`model`] module (coder, statistics, context map) and the encoder's training hooks (`Encoder::payload`, `model_shape`, `model_tokens`) |
//! | `internals` | no | doc-hidden pipeline stages for the benches and fuzz properties; not a stable API |
//!
//! With `default-features = false` the crate depends on `tickpack-zstd`
//! (zstd's raw block API), bytemuck, xxhash-rust (snapshot checksums) and
//! `tickpack-seq` only.

// The one unsafe module, zstd's raw block API, is the `tickpack-zstd` crate.
#![forbid(unsafe_code)]

// The README's examples run as doc tests too.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

mod block;
mod decoder;
mod dict;
mod encoder;
mod error;
mod history;
// Pipeline stages and block framing for the criterion benches (which time
// each stage alone) and tickpack-testkit's fuzz properties (which feed block
// headers and entity subsets directly). Doc-hidden, off by default, not a
// stable API: moving these into those crates would mean making the pipeline
// public.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals;
mod limits;
pub mod model;
mod packet;
mod pipeline;
pub mod quant;
mod recall;
pub mod schema;
mod snapshot;
mod verdict;
pub mod wire;

pub mod format {
    #![doc = include_str!("../FORMAT.md")]
}

pub use block::MAX_BLOCK_CONTENT;
pub use decoder::Decoder;
pub use dict::Dictionary;
pub use encoder::{Encoder, Entropy, KeyframeDictionary, DEFAULT_LEVEL};
pub use error::{DecodeError, DictionaryError, EncodeError, SchemaError, SnapshotError};
pub use history::History;
pub use limits::Limits;
pub use packet::{
    Checksum, PacketHeader, PacketIds, FORMAT_VERSION, MAX_BASELINE_DISTANCE, MAX_HEADER_LEN,
};
pub use recall::Recall;
pub use schema::{
    DeltaOp, EntityType, Field, Grid, Integrate, PodCoding, PodField, PodLayout, Primitive,
    PrimitiveType, Schema, SchemaBuilder, UnitVector,
};
pub use snapshot::{Baseline, Reference, Section, SectionRef, Snapshot};

/// Encodes `snapshot` in one call (no dictionary, default level and limits).
/// For a stream of packets keep an [`Encoder`] instead: it reuses its zstd
/// context and buffers.
pub fn encode<'r>(
    schema: &Schema,
    snapshot: &Snapshot,
    sequence: u16,
    reference: impl Into<Reference<'r>>,
) -> Result<Vec<u8>, EncodeError> {
    Encoder::new(schema.clone()).encode(snapshot, sequence, reference)
}

/// Decodes `packet` in one call (no dictionary, default limits).
pub fn decode<'r>(
    schema: &Schema,
    packet: &[u8],
    reference: impl Into<Reference<'r>>,
) -> Result<(PacketHeader, Snapshot), DecodeError> {
    Decoder::new(schema.clone()).decode(packet, reference)
}
