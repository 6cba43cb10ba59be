//! The 2-byte block header.

#![forbid(unsafe_code)]

/// Most content bytes one block carries (13-bit size field, stored minus one).
pub const MAX_BLOCK_CONTENT: usize = 8192;
/// Bytes of block header.
pub const BLOCK_HEADER_LEN: usize = 2;

/// The `Block_Type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockType {
    /// Content stored as is.
    Raw = 0,
    /// One byte repeated `Block_Size` times.
    Rle = 1,
    /// A raw zstd block (no frame) regenerating the content.
    Zstd = 2,
    /// A trained static Huffman code: a varint regenerated length, then the
    /// codes (see [`HuffmanTable`](crate::HuffmanTable)).
    Huffman = 3,
}

/// A parsed block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// Whether this is the packet's final block.
    pub last: bool,
    /// How the block is stored.
    pub block_type: BlockType,
    /// Content bytes (raw, RLE) or compressed bytes (zstd), 1..=8192.
    pub size: usize,
}

impl BlockHeader {
    /// Packs the header; `size` must be 1..=8192.
    pub fn to_bytes(self) -> [u8; 2] {
        debug_assert!((1..=MAX_BLOCK_CONTENT).contains(&self.size));
        let v = u16::from(self.last)
            | ((self.block_type as u16) << 1)
            | (((self.size - 1) as u16) << 3);
        v.to_le_bytes()
    }

    /// Unpacks a header; every 16-bit value is a valid header.
    pub fn from_bytes(b: [u8; 2]) -> Self {
        let v = u16::from_le_bytes(b);
        let block_type = match (v >> 1) & 3 {
            0 => BlockType::Raw,
            1 => BlockType::Rle,
            2 => BlockType::Zstd,
            _ => BlockType::Huffman,
        };
        Self {
            last: v & 1 == 1,
            block_type,
            size: usize::from(v >> 3) + 1,
        }
    }
}
