//! Pipeline stages exposed for the bench and fuzz crates (feature
//! `internals`). Not a stable API: use [`Encoder`](crate::Encoder) and
//! [`Decoder`](crate::Decoder).

#![forbid(unsafe_code)]

use crate::block;
pub use crate::block::{BlockHeader, BlockType, BLOCK_HEADER_LEN};
use crate::error::DecodeError;
use crate::pipeline::{delta, planes, soa, subset};
use crate::schema::EntityType;
use crate::wire::Reader;

/// SoA stage: `n` records of `ty` to one column per field.
pub fn to_columns(ty: &EntityType, rows: &[u8], n: usize, out: &mut [u8]) {
    soa::to_columns(rows, n, ty.record_size(), ty.columns(), out);
}

/// Inverse of [`to_columns`].
pub fn from_columns(ty: &EntityType, cols: &[u8], n: usize, rows: &mut [u8]) {
    soa::from_columns(cols, n, ty.record_size(), ty.columns(), rows);
}

/// Planes stage: the columns of [`to_columns`] to byte planes, in the
/// wire's significance-major order.
pub fn to_planes(ty: &EntityType, cols: &[u8], n: usize, out: &mut [u8]) {
    planes::split_all(ty.planes(), cols, n, out);
}

/// Inverse of [`to_planes`].
pub fn from_planes(ty: &EntityType, planes_in: &[u8], n: usize, cols: &mut [u8]) {
    planes::join_all(ty.planes(), planes_in, n, cols);
}

/// Delta stage over `n` records against `n` reference records.
pub fn delta_encode(ty: &EntityType, cur: &[u8], reference: &[u8], out: &mut [u8]) {
    let rs = ty.record_size();
    for ((c, r), o) in cur
        .chunks_exact(rs)
        .zip(reference.chunks_exact(rs))
        .zip(out.chunks_exact_mut(rs))
    {
        delta::encode(ty.spans(), c, r, o);
    }
}

/// Inverse of [`delta_encode`].
pub fn delta_decode(ty: &EntityType, d: &[u8], reference: &[u8], out: &mut [u8]) {
    let rs = ty.record_size();
    for ((c, r), o) in d
        .chunks_exact(rs)
        .zip(reference.chunks_exact(rs))
        .zip(out.chunks_exact_mut(rs))
    {
        delta::decode(ty.spans(), c, r, o);
    }
}

/// Entity-set coding of `members` (ascending, `< universe`).
pub fn subset_encode(universe: usize, members: &[u32], out: &mut Vec<u8>) {
    subset::encode(universe, members, out);
}

/// Inverse of [`subset_encode`]; `None` for a malformed set.
pub fn subset_decode(data: &[u8], universe: usize, out: &mut Vec<u32>) -> Option<usize> {
    let mut r = Reader::new(data);
    subset::decode(&mut r, universe, out).ok()?;
    Some(r.pos())
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

/// Huffman block body for `data` (1..=8192 bytes) under `table`.
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
