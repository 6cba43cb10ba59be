//! The code forms of recently coded snapshots. A baseline is usually a
//! snapshot the same encoder sent, or the same decoder rebuilt, a few
//! packets earlier, and the same baseline serves several packets until the
//! next acknowledgement: converting it to codes again for every packet
//! would cost more than coding the packet. An entry keeps a snapshot's
//! values with its codes; a lookup compares the whole values, so an entry
//! only ever stands for the very snapshot it was made from.

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
    /// The most record bytes its values held since it was emptied: what
    /// its buffers are sized for.
    held: usize,
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
        let bytes = values.raw_len();
        let i = self.free(bytes);
        let e = &mut self.entries[i];
        e.used = 0;
        e.held = e.held.max(bytes);
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
        let bytes = codes.raw_len();
        let i = self.free(bytes);
        let e = &mut self.entries[i];
        e.held = e.held.max(bytes);
        core::mem::swap(&mut e.codes, codes);
        copy(&mut e.values, values);
        e.sequence = sequence;
        e.used = self.clock;
    }

    /// The index of the entry to fill with a snapshot of `bytes` record
    /// bytes (values and codes take twice that): an emptied or a new one,
    /// or the least recently used. Entries that would take the cache past
    /// its bytes (counted as what each entry's buffers were last sized
    /// for) give their memory back, least recently used first, down to
    /// the 3 entries one packet needs; their places stay, so that the
    /// indices handed out keep naming their entries.
    fn free(&mut self, bytes: usize) -> usize {
        let budget = self.max_bytes.max(MIN_ENTRIES.saturating_mul(2 * bytes));
        loop {
            let held: usize = self.entries.iter().map(|e| 2 * e.held).sum();
            // What the entries hold once entry `i` (or a new one) is refilled.
            let refilled = |i: Option<usize>| {
                let h = i.map_or(0, |i| self.entries[i].held);
                held - 2 * h + 2 * h.max(bytes)
            };
            let live = self.entries.iter().filter(|e| e.used != 0).count();
            let empty = self.entries.iter().position(|e| e.used == 0);
            if live < MIN_ENTRIES || (live < self.max_entries && refilled(empty) <= budget) {
                return empty.unwrap_or_else(|| {
                    self.entries.push(Entry::default());
                    self.entries.len() - 1
                });
            }
            let Some(oldest) = (0..self.entries.len())
                .filter(|&i| self.entries[i].used != 0)
                .min_by_key(|&i| self.entries[i].used)
            else {
                return empty.unwrap_or(0);
            };
            if refilled(Some(oldest)) <= budget {
                return oldest;
            }
            self.entries[oldest] = Entry::default();
        }
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
