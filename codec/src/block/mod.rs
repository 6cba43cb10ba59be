//! Blocks: the payload cut into pieces of at most [`MAX_BLOCK_CONTENT`]
//! bytes, each behind a 2-byte header and stored raw, run-length, or as a raw
//! zstd block, whichever is smallest.
//!
//! ```text
//! bit  0      Last_Block   1 on the packet's final block
//! bits 1-2    Block_Type   0 raw, 1 RLE, 2 zstd, 3 Huffman (the dictionary's table)
//! bits 3-15   Block_Size   size - 1: raw/RLE = content bytes, zstd = compressed bytes
//! ```
//! The header is a little-endian `u16`. A block's content never exceeds
//! 32768 bytes, so a compressed block may regenerate at most that much.

// This file holds no code: `header` and `stream` open with
// `#![forbid(unsafe_code)]`; `zstd_raw` is the crate's one unsafe module.

// Block framing is crate-private; the `internals` feature re-exports it
// (doc-hidden) for the fuzz properties.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
mod header;
mod huffman;
mod matcher;
mod stream;
mod zstd_raw;

pub use header::MAX_BLOCK_CONTENT;
#[cfg(not(feature = "internals"))]
pub(crate) use header::{BlockHeader, BlockType};
#[cfg(feature = "internals")]
pub use header::{BlockHeader, BlockType, BLOCK_HEADER_LEN};
pub use huffman::{HuffmanError, HuffmanTable};
pub(crate) use stream::{
    decode_blocks, encode_blocks, max_blocks_len, small_block_level, Coders, ZstdBlocks,
    SMALL_BLOCK,
};
pub(crate) use zstd_raw::{CDict, DDict};
