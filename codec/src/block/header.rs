//! The 2-byte block header.

/// Most content bytes one block carries.
pub const MAX_BLOCK_CONTENT: usize = 32768;
/// Largest block header: the type byte and a last RLE block's size as a
/// varint of up to 3 bytes (other blocks: a 2-byte size or none).
pub const BLOCK_HEADER_LEN: usize = 4;

/// The `Block_Type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockType {
    /// Content stored as is.
    Raw = 0,
    /// One byte repeated `Block_Size` times.
    Rle = 1,
    /// A raw zstd block (no frame) regenerating the content.
    Zstd = 2,
    // 3 was the static Huffman block, retired in format 3 (FORMAT.md 3.2),
    // and 4 the model block, which the packet header's MODEL flag now
    // announces without a block header: both reserved.
}

/// A parsed block header.
///
/// ```text
/// byte 0   bit 0 Last_Block, bits 1-3 Block_Type (0-2), bits 4-7 zero
/// not last: u16 LE Block_Size - 1 (1..=32768)
/// last, RLE: varint Block_Size (1..=32768)
/// last, other types: nothing; the body is the rest of the packet
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// Whether this is the packet's final block.
    pub last: bool,
    /// How the block is stored.
    pub block_type: BlockType,
    /// Content bytes (raw, RLE) or compressed bytes (zstd),
    /// 1..=32768. Not written for the last block, except an RLE block's.
    pub size: usize,
}

impl BlockHeader {
    /// Appends the header; `size` must be 1..=32768.
    pub fn write(self, out: &mut Vec<u8>) {
        debug_assert!((1..=MAX_BLOCK_CONTENT).contains(&self.size));
        out.push(u8::from(self.last) | ((self.block_type as u8) << 1));
        match (self.last, self.block_type) {
            (false, _) => out.extend_from_slice(&((self.size - 1) as u16).to_le_bytes()),
            (true, BlockType::Rle) => crate::wire::put_varint(out, self.size as u32),
            (true, _) => {}
        }
    }

    /// Parses a header from the start of `bytes` (the rest of a packet),
    /// returning it and its length. A last block other than RLE takes all
    /// the bytes after its header as its body.
    #[cfg(feature = "internals")]
    pub fn parse(bytes: &[u8]) -> Result<(Self, usize), crate::DecodeError> {
        let mut r = crate::wire::Reader::new(bytes);
        let h = Self::read(&mut r)?;
        Ok((h, r.pos()))
    }

    /// Reads a header; a last block other than RLE extends to the end of `r`.
    pub(crate) fn read(r: &mut crate::wire::Reader<'_>) -> Result<Self, crate::DecodeError> {
        use crate::DecodeError;
        let b = r.u8()?;
        let last = b & 1 == 1;
        let block_type = match (b >> 1) & 0x7f {
            0 => BlockType::Raw,
            1 => BlockType::Rle,
            2 => BlockType::Zstd,
            _ => return Err(DecodeError::ReservedBits { flags: b }),
        };
        let at = r.pos();
        let size = match (last, block_type) {
            (false, _) => {
                let v = usize::from(r.u16_le()?) + 1;
                if v > MAX_BLOCK_CONTENT {
                    return Err(DecodeError::BadBlockSize { offset: at });
                }
                v
            }
            (true, BlockType::Rle) => {
                let v = r.varint()? as usize;
                if v == 0 || v > MAX_BLOCK_CONTENT {
                    return Err(DecodeError::BadBlockSize { offset: at });
                }
                v
            }
            (true, _) => {
                if r.remaining() == 0 {
                    return Err(DecodeError::Truncated {
                        offset: at,
                        needed: 1,
                    });
                }
                if r.remaining() > MAX_BLOCK_CONTENT {
                    return Err(DecodeError::BadBlockSize { offset: at });
                }
                r.remaining()
            }
        };
        Ok(Self {
            last,
            block_type,
            size,
        })
    }
}
