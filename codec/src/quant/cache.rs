//! The code forms of recently coded snapshots. A baseline is usually a
//! snapshot the same encoder sent, or the same decoder rebuilt, a few
//! packets earlier, and the same baseline serves several packets until the
//! next acknowledgement: converting it to codes again for every packet
//! would cost more than coding the packet. An entry keeps a snapshot's
//! values with its codes; a lookup compares the whole values, so an entry
//! only ever stands for the very snapshot it was made from.

#![forbid(unsafe_code)]

use super::codes;
use crate::error::SnapshotError;
use crate::schema::Schema;
use crate::snapshot::{SectionRef, Snapshot};

/// Default most entries: room for a baseline and a prior twice as far
/// back at the usual acknowledgement distances (6 to 8 packets at 60 Hz
/// and 100 ms round trips), with losses.
pub(crate) const DEFAULT_ENTRIES: usize = 32;
/// Default most bytes of values and codes of all entries together.
pub(crate) const DEFAULT_BYTES: usize = 4 << 20;
/// Fewest entries whatever the budget: the snapshot, its baseline and its
/// prior.
const MIN_ENTRIES: usize = 3;

#[derive(Debug, Default)]
struct Entry {
    sequence: u16,
    values: Snapshot,
    codes: Snapshot,
    /// When the entry was last used (`0`: empty).
    used: u64,
}

/// Recently converted snapshots, least recently used replaced first.
#[derive(Debug)]
pub(crate) struct CodeCache {
    entries: Vec<Entry>,
    clock: u64,
    max_entries: usize,
    max_bytes: usize,
}

impl Default for CodeCache {
    fn default() -> Self {
        Self::new(DEFAULT_ENTRIES, DEFAULT_BYTES)
    }
}

impl CodeCache {
    /// A cache of at most `max_entries` snapshots and `max_bytes` bytes of
    /// values and codes together (but always 3 snapshots).
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            entries: Vec::new(),
            clock: 0,
            max_entries: max_entries.max(MIN_ENTRIES),
            max_bytes,
        }
    }

    /// The index of the entry holding the code form of `values` (sent or
    /// rebuilt as `sequence`), converting it into a new entry when no
    /// entry holds those values. Refuses values that are not quantised.
    pub(crate) fn code_form(
        &mut self,
        schema: &Schema,
        sequence: u16,
        values: &Snapshot,
    ) -> Result<usize, SnapshotError> {
        self.clock += 1;
        if let Some(i) = self
            .entries
            .iter()
            .position(|e| e.used != 0 && e.sequence == sequence && e.values == *values)
        {
            self.entries[i].used = self.clock;
            return Ok(i);
        }
        let i = self.free(values.raw_len());
        let e = &mut self.entries[i];
        e.used = 0;
        codes::snapshot_to_codes(schema, values, &mut e.codes)?;
        copy(&mut e.values, values.sections().iter().map(|s| s.as_ref()));
        e.sequence = sequence;
        e.used = self.clock;
        Ok(i)
    }

    /// The codes of entry `i` (from [`code_form`](Self::code_form)).
    pub(crate) fn codes(&self, i: usize) -> &Snapshot {
        &self.entries[i].codes
    }

    /// Keeps `codes` as the code form of `values` (sent or rebuilt as
    /// `sequence`). The caller guarantees that converting `values` gives
    /// exactly `codes`; `codes` is left holding an old entry's buffers.
    pub(crate) fn insert<'v>(
        &mut self,
        sequence: u16,
        values: impl Iterator<Item = SectionRef<'v>>,
        codes: &mut Snapshot,
    ) {
        self.clock += 1;
        let i = self.free(codes.raw_len());
        let e = &mut self.entries[i];
        core::mem::swap(&mut e.codes, codes);
        copy(&mut e.values, values);
        e.sequence = sequence;
        e.used = self.clock;
    }

    /// The index of an empty or the least recently used entry, for a
    /// snapshot of about `bytes` record bytes.
    fn free(&mut self, bytes: usize) -> usize {
        let cap = (self.max_bytes / (2 * bytes.max(1))).clamp(MIN_ENTRIES, self.max_entries);
        if self.entries.len() < cap {
            self.entries.push(Entry::default());
            return self.entries.len() - 1;
        }
        let mut oldest = 0;
        for (i, e) in self.entries.iter().enumerate() {
            if e.used < self.entries[oldest].used {
                oldest = i;
            }
        }
        oldest
    }
}

/// Copies `src` into `dst`, reusing `dst`'s buffers.
fn copy<'s>(dst: &mut Snapshot, src: impl Iterator<Item = SectionRef<'s>>) {
    let mut n = 0;
    for (i, s) in src.enumerate() {
        n = i + 1;
        dst.set_section(i, &s);
    }
    dst.truncate_sections(n);
}
