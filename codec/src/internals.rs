//! Pipeline stages exposed for the bench and fuzz crates (feature
//! `internals`). Not a stable API: use [`Encoder`](crate::Encoder) and
//! [`Decoder`](crate::Decoder).

use crate::block;
pub use crate::block::{BlockHeader, BlockType, BLOCK_HEADER_LEN};
use crate::error::DecodeError;
use crate::model::{ModelError, ModelSink};
use crate::pipeline::layout::{ByteSink, ByteSource};
use crate::pipeline::tokens;
use crate::wire::Reader;
use crate::{Decoder, EncodeError, Encoder, Reference, Snapshot};

/// The payload stage backwards: rebuilds `out` from `payload` (what
/// [`Encoder::payload`](crate::Encoder::payload) gives, before blocks)
/// against `baseline` and `prior`.
pub fn payload_decode(
    decoder: &mut Decoder,
    payload: &[u8],
    baseline: Option<&Snapshot>,
    prior: Option<&Snapshot>,
    out: &mut Snapshot,
) -> Result<(), DecodeError> {
    decoder.decode_payload_into(payload, baseline, prior, out)
}

/// Hands to `sink`, in coding order, the model tokens (decisions and
/// values under their dense contexts) of the packet `encoder` would build
/// against `reference`: what a model block codes, for coder prototypes.
/// The inner result is the first token outside the context map.
pub fn model_tokens<'r>(
    encoder: &mut Encoder,
    snapshot: &Snapshot,
    sequence: u16,
    reference: impl Into<Reference<'r>>,
    sink: &mut dyn ModelSink,
) -> Result<Result<(), ModelError>, EncodeError> {
    encoder.record_model_tokens(snapshot, sequence, reference.into(), sink)
}

/// Entity-set coding of a non-empty `members` (ascending, `< universe`),
/// as the payload bytes of one set (FORMAT.md, "Entity sets").
pub fn set_encode(universe: usize, members: &[u32], out: &mut Vec<u8>) {
    let mut sink = ByteSink::default();
    sink.clear();
    tokens::write_set(&mut sink, 0, 0, universe, members);
    out.extend_from_slice(sink.bytes());
}

/// Reads a non-empty subset of `0..universe` from the start of `data` into
/// `out`; returns the bytes used, or `None` if malformed.
pub fn set_decode(data: &[u8], universe: usize, out: &mut Vec<u32>) -> Option<usize> {
    let mut src = ByteSource::new(data);
    tokens::read_set(&mut src, 0, 0, universe, out).ok()?.ok()?;
    src.consumed().ok()
}

/// A block coder without dictionary, at zstd `level`.
pub struct Blocks(block::ZstdBlocks, Vec<u8>);

impl Blocks {
    /// New coder.
    pub fn new(level: i32) -> Self {
        Self(block::ZstdBlocks::new(level), Vec::new())
    }

    /// Encodes `payload` (non-empty) as blocks, returning the bytes.
    pub fn encode(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(payload, &mut out);
        out
    }

    /// Replaces `out` with `payload` encoded as blocks, reusing its
    /// capacity and this coder's scratch.
    pub fn encode_into(&mut self, payload: &[u8], out: &mut Vec<u8>) {
        out.clear();
        block::encode_blocks(
            &mut self.0,
            block::Coders {
                zstd: true,
                ..Default::default()
            },
            payload,
            &mut self.1,
            out,
        );
    }

    /// Decodes blocks into `out`, regenerating at most `max` bytes.
    pub fn decode(
        &mut self,
        data: &[u8],
        max: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DecodeError> {
        block::decode_blocks(&mut self.0, None, None, &mut Reader::new(data), max, out)
    }
}

/// Huffman block body for `data` (1..=32768 bytes) under `table`.
pub fn huffman_encode(table: &crate::HuffmanTable, data: &[u8], out: &mut Vec<u8>) {
    table.encode(data, out);
}

/// Decodes a Huffman block body into `out` (cleared first).
pub fn huffman_decode(
    table: &crate::HuffmanTable,
    body: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), crate::HuffmanError> {
    out.clear();
    let mut r = Reader::new(body);
    let n = r.varint().map_err(|_| crate::HuffmanError::Truncated)? as usize;
    if n > crate::MAX_BLOCK_CONTENT || n > (body.len() - r.pos()) * 8 {
        return Err(crate::HuffmanError::BadCount { count: n });
    }
    table.decode(&body[r.pos()..], n, out)
}
