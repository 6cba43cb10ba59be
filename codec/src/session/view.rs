//! Interest management: which entities one client sees.

#![forbid(unsafe_code)]

use std::sync::Arc;

use crate::snapshot::Snapshot;

/// The entities a client sees: everything, or per section a set of ids.
/// Cheap to clone (shared); two views compare equal when they select the
/// same ids, which is what lets clients share one encode.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct View(Option<Arc<Vec<Vec<u32>>>>);

impl View {
    /// Every entity of every section.
    pub fn all() -> Self {
        Self(None)
    }

    /// Per section, the ids visible (any order; duplicates ignored).
    /// Sections past the end of `sections` see nothing.
    pub fn filter(mut sections: Vec<Vec<u32>>) -> Self {
        for s in &mut sections {
            s.sort_unstable();
            s.dedup();
        }
        Self(Some(Arc::new(sections)))
    }

    /// Whether this is [`View::all`].
    pub fn is_all(&self) -> bool {
        self.0.is_none()
    }

    /// Writes the part of `world` this view sees into `out`.
    pub fn apply(&self, world: &Snapshot, out: &mut Snapshot) {
        out.clone_from(world);
        let Some(filter) = &self.0 else { return };
        for (i, sec) in out.sections_mut().iter_mut().enumerate() {
            let keep: &[u32] = filter.get(i).map_or(&[], Vec::as_slice);
            sec.retain_ids(keep);
        }
    }

    /// Heap bytes this view holds (shared between clones).
    pub fn heap_bytes(&self) -> usize {
        self.0
            .as_ref()
            .map_or(0, |f| f.iter().map(|s| s.capacity() * 4 + 24).sum())
    }
}
