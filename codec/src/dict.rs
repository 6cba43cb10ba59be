//! zstd dictionaries: raw bytes plus a 32-bit id that goes on the wire.
//! Prepared (digested) once per encoder or decoder, reused for every block.

#![forbid(unsafe_code)]

use std::sync::Arc;

/// A zstd dictionary (trained with `zstd --train` or the tickpack trainer,
/// or any raw content) and the id packets name it by.
#[derive(Clone, PartialEq, Eq)]
pub struct Dictionary {
    id: u32,
    bytes: Arc<[u8]>,
}

impl core::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Dictionary")
            .field("id", &format_args!("{:#010x}", self.id))
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl Dictionary {
    /// Wraps dictionary bytes under `id`.
    pub fn new(id: u32, bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            id,
            bytes: bytes.into(),
        }
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
