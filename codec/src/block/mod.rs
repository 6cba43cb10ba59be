//! Blocks: the payload cut into pieces of at most [`MAX_BLOCK_CONTENT`]
//! bytes, each behind a header and stored raw, run-length or as a raw zstd
//! block, whichever is smallest (FORMAT.md 3.2).
//!
//! ```text
//! byte 0   bit 0 Last_Block (1 on the packet's final block), bits 1-3
//!          Block_Type: 0 raw, 1 RLE, 2 zstd; 3 (Huffman, retired in
//!          format 3) and 4 (the model block, announced by the packet
//!          header instead) are reserved; bits 4-7 zero
//! not last: u16 LE Block_Size - 1
//! last, RLE: varint Block_Size; last, other types: the rest of the packet
//! ```
//! A block's content never exceeds 32768 bytes, so a compressed block may
//! regenerate at most that much.

// Block framing is crate-private; the `internals` feature re-exports it
// (doc-hidden) for the fuzz properties.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
mod header;
mod matcher;
mod stream;

#[cfg(not(feature = "internals"))]
pub(crate) use header::BLOCK_HEADER_LEN;
pub use header::MAX_BLOCK_CONTENT;
#[cfg(feature = "internals")]
pub use header::{BlockHeader, BlockType, BLOCK_HEADER_LEN};
pub(crate) use stream::{
    decode_blocks, encode_blocks, max_blocks_len, small_block_level, Coders, ZstdBlocks,
    SMALL_BLOCK,
};
pub(crate) use tickpack_zstd::{CDict, DDict};
