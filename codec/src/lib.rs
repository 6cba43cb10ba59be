#![doc = include_str!("../../README.md")]
// `unsafe` is denied workspace-wide, and every module file but one opens
// with `#![forbid(unsafe_code)]`. The exception is `block/zstd_raw.rs`, which
// wraps zstd's raw block API; a crate-level forbid would not let it opt in.

mod block;
pub mod capture;
mod decoder;
mod dict;
pub mod dictset;
mod encoder;
mod error;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod fuzz_props;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals;
mod limits;
mod packet;
mod pipeline;
pub mod quant;
pub mod schema;
pub mod session;
mod snapshot;
pub mod transport;
mod wire;

pub mod format {
    #![doc = include_str!("../FORMAT.md")]
}

pub use block::{
    BlockHeader, BlockType, HuffmanError, HuffmanTable, BLOCK_HEADER_LEN, MAX_BLOCK_CONTENT,
};
pub use decoder::Decoder;
pub use dict::Dictionary;
pub use encoder::{Baseline, Encoder, Entropy, DEFAULT_LEVEL};
pub use error::{DecodeError, DictionaryError, EncodeError, SchemaError, SnapshotError};
pub use limits::Limits;
pub use packet::{PacketHeader, FORMAT_VERSION, MAX_BASELINE_DISTANCE, MAX_HEADER_LEN};
pub use schema::{
    DeltaOp, EntityType, Field, PodField, PodLayout, Primitive, PrimitiveType, Schema,
    SchemaBuilder,
};
pub use snapshot::{Section, SectionRef, Snapshot};

/// Encodes `snapshot` in one call (no dictionary, default level and limits).
/// For a stream of packets keep an [`Encoder`] instead: it reuses its zstd
/// context and buffers.
pub fn encode(
    schema: &Schema,
    snapshot: &Snapshot,
    sequence: u16,
    baseline: Option<Baseline<'_>>,
) -> Result<Vec<u8>, EncodeError> {
    Encoder::new(schema.clone()).encode(snapshot, sequence, baseline)
}

/// Decodes `packet` in one call (no dictionary, default limits).
pub fn decode(
    schema: &Schema,
    packet: &[u8],
    baseline: Option<Baseline<'_>>,
) -> Result<(PacketHeader, Snapshot), DecodeError> {
    Decoder::new(schema.clone()).decode(packet, baseline)
}
