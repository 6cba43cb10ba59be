//! The baseline history of the changed row the model walk is in: which
//! row of which section it is (rows are counted as they start), and each
//! element's history byte ([`crate::History::element`]) for the mask-bit
//! and value conditions of table flag `ContextConfig::FLAG_ELEMENTS`.

use crate::pipeline::tokens::ctx;

/// The history byte of an element the history does not cover.
pub(crate) const UNKNOWN: u8 = 0xff;

/// Which changed row the walk is in, and its elements' history bytes.
#[derive(Debug, Default)]
pub(crate) struct RowHistory {
    section: usize,
    /// Changed rows started in `section`.
    started: usize,
    /// The current row's bytes (empty: no history).
    cur: Vec<u8>,
}

impl RowHistory {
    /// Starts the next row of `section` of walk row kind `row`: the index
    /// of the section's changed row it is, `None` for spawned rows.
    pub(crate) fn start(&mut self, section: usize, row: u32) -> Option<usize> {
        if section != self.section {
            self.section = section;
            self.started = 0;
        }
        self.cur.clear();
        if row != ctx::CHANGED {
            return None;
        }
        self.started += 1;
        Some(self.started - 1)
    }

    /// Sets the current row's bytes to the first `n` of `bytes`, the rest
    /// [`UNKNOWN`].
    pub(crate) fn fill_from(&mut self, bytes: &[u8], n: usize) {
        self.cur.clear();
        let known = &bytes[..bytes.len().min(n)];
        self.cur.extend_from_slice(known);
        self.cur.resize(n, UNKNOWN);
    }

    /// Element `e`'s mask history: whether it changed at the baseline.
    #[inline]
    pub(crate) fn mask(&self, e: usize) -> Option<bool> {
        match self.cur.get(e) {
            None | Some(&UNKNOWN) => None,
            Some(&b) => Some(b != 0),
        }
    }

    /// The context offsets of mask bits `first..first + out.len()` from
    /// their elements' histories, as [`RowState::set_element_history`]
    /// of [`RowHistory::mask`] gives them (0 unknown, 1 unchanged, 2
    /// changed at the baseline), times `p`.
    ///
    /// [`RowState::set_element_history`]: super::RowState::set_element_history
    #[inline]
    pub(crate) fn mask_offsets(&self, first: usize, p: u32, out: &mut [u32]) {
        let bytes = self.cur.get(first..).unwrap_or(&[]);
        // Without branches (a row's histories vary unpredictably): unknown
        // 0, unchanged `p`, changed `2p`.
        for (k, o) in out.iter_mut().enumerate() {
            let b = bytes.get(k).copied().unwrap_or(UNKNOWN);
            let known = u32::from(b != UNKNOWN);
            *o = known * p * (1 + u32::from(b != 0));
        }
    }

    /// Element `e`'s value history: the class of its change at the
    /// baseline (0 unchanged).
    #[inline]
    pub(crate) fn class(&self, e: usize) -> Option<u32> {
        match self.cur.get(e) {
            None | Some(&UNKNOWN) => None,
            Some(&b) => Some(u32::from(b & 0x7f)),
        }
    }
}

/// The baseline index of each changed row's entity: kept entity `k`
/// (ascending in `changed`) is the baseline's entity `k` once the
/// `removed` ones (ascending) are skipped.
pub(crate) fn changed_bases(changed: &[u32], removed: &[u32], out: &mut Vec<u32>) {
    out.clear();
    let (mut j, mut skipped) = (0usize, 0u32);
    for &k in changed {
        let mut b = k + skipped;
        while removed.get(j).is_some_and(|&r| r <= b) {
            j += 1;
            skipped += 1;
            b += 1;
        }
        out.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_rows_map_to_their_baseline_entities() {
        // Baseline 0..8, removed 1, 2 and 6: kept 0 3 4 5 7.
        let mut out = Vec::new();
        changed_bases(&[0, 1, 3, 4], &[1, 2, 6], &mut out);
        assert_eq!(out, [0, 3, 5, 7]);
        changed_bases(&[2], &[], &mut out);
        assert_eq!(out, [2]);
    }
}
