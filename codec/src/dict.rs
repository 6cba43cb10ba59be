//! zstd dictionaries: raw bytes plus a 32-bit id that goes on the wire.
//! Prepared (digested) once per encoder or decoder, reused for every block.

use std::sync::Arc;

use crate::model::ModelTable;

/// A zstd dictionary (trained with `zstd --train` or the tickpack trainer,
/// or any raw content) and the id packets name it by.
#[derive(Clone, PartialEq, Eq)]
pub struct Dictionary {
    id: u32,
    bytes: Arc<[u8]>,
    model: Option<Arc<ModelTable>>,
}

impl core::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Dictionary")
            .field("id", &format_args!("{:#010x}", self.id))
            .field("len", &self.bytes.len())
            .field("model", &self.model.as_ref().map(|m| m.shape()))
            .finish()
    }
}

impl Dictionary {
    /// Wraps dictionary bytes under `id`.
    pub fn new(id: u32, bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            id,
            bytes: bytes.into(),
            model: None,
        }
    }

    /// Attaches a trained context-model table: the payload may then be
    /// coded as one model block (the header's `MODEL` flag) when that is smaller than the
    /// blocks. The table must have the shape of the schema's context map
    /// (`model::ContextMap` with `ContextConfig::BLOCK`, feature
    /// `training`; [`Encoder::model_shape`](crate::Encoder) gives it); an
    /// encoder ignores a table of another shape.
    pub fn with_model(mut self, table: ModelTable) -> Self {
        self.model = Some(Arc::new(table));
        self
    }

    /// The attached model table.
    pub fn model(&self) -> Option<&ModelTable> {
        self.model.as_deref()
    }

    /// Whether packets coded with this dictionary's model table read their
    /// baseline's [`History`](crate::History) (a table trained with
    /// history contexts): only then need both ends keep histories.
    pub fn uses_history(&self) -> bool {
        self.model
            .as_ref()
            .is_some_and(|t| t.flags() & crate::model::ContextConfig::HISTORY_FLAGS != 0)
    }

    pub(crate) fn model_arc(&self) -> Option<Arc<ModelTable>> {
        self.model.clone()
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
