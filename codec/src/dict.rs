//! zstd dictionaries: raw bytes plus a 32-bit id that goes on the wire.
//! Prepared (digested) once per encoder or decoder, reused for every block.

#![forbid(unsafe_code)]

use std::sync::Arc;

use crate::block::HuffmanTable;

/// A zstd dictionary (trained with `zstd --train` or the tickpack trainer,
/// or any raw content) and the id packets name it by.
#[derive(Clone, PartialEq, Eq)]
pub struct Dictionary {
    id: u32,
    bytes: Arc<[u8]>,
    huffman: Option<Arc<HuffmanTable>>,
}

impl core::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Dictionary")
            .field("id", &format_args!("{:#010x}", self.id))
            .field("len", &self.bytes.len())
            .field("huffman", &self.huffman.is_some())
            .finish()
    }
}

impl Dictionary {
    /// Wraps dictionary bytes under `id`.
    pub fn new(id: u32, bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            id,
            bytes: bytes.into(),
            huffman: None,
        }
    }

    /// Attaches a trained Huffman table: blocks may then be stored as
    /// Huffman blocks (type 3) when that is smaller than zstd.
    pub fn with_huffman(mut self, table: HuffmanTable) -> Self {
        self.huffman = Some(Arc::new(table));
        self
    }

    /// The attached Huffman table.
    pub fn huffman(&self) -> Option<&HuffmanTable> {
        self.huffman.as_deref()
    }

    pub(crate) fn huffman_arc(&self) -> Option<Arc<HuffmanTable>> {
        self.huffman.clone()
    }

    /// The id carried in packet headers.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The dictionary bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
