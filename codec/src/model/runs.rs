//! Runs of mask bits: the dense contexts of the bits of one mask group (or
//! of a row's group bits) in closed form, so that the coder takes the
//! whole run in one call instead of deriving every bit's context from its
//! walk context.

use super::contexts::RowState;

/// The dense contexts of a run of element mask bits of one row (a mask
/// group), from [`ContextMap::element_run`](super::ContextMap::element_run):
/// the per-bit work of [`ContextMap::bit_context`](super::ContextMap::bit_context)
/// done once for the run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ElementRun {
    /// Context of the run's first element with history and previous bit 0.
    pub(super) base: u32,
    /// Contexts per element.
    pub(super) stride: u32,
    /// States of the previous-bit condition (1 when off).
    pub(super) p: u32,
    pub(super) mask_history: bool,
    pub(super) mask_prev: bool,
}

/// The dense contexts of a run of mask group bits of one row, from
/// [`ContextMap::group_run`](super::ContextMap::group_run): the per-bit
/// work of [`ContextMap::bit_context`](super::ContextMap::bit_context) done
/// once for the run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupRun {
    /// Context of the run's first group with previous bit 0.
    pub(super) base: u32,
    /// Contexts per group (the states of the previous-bit condition).
    pub(super) stride: u32,
    pub(super) mask_prev: bool,
}

/// The contexts of a run from a given row state on, in closed form: bit
/// `k` is coded in context `base + k·stride + step·prev (+ first when k =
/// 0)`, where `prev` is 1 when the bit before it (for bit 0: `prev` here)
/// was 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BitRun {
    pub(crate) base: u32,
    pub(crate) stride: u32,
    /// Context offset of a previous bit 1 (0 when the condition is off).
    pub(crate) step: u32,
    /// Context offset of the first bit only (its element history).
    pub(crate) first: u32,
    /// The bit before the run.
    pub(crate) prev: bool,
}

impl BitRun {
    /// A run whose every bit is coded in context `c`.
    #[inline]
    pub(crate) fn same(c: u32) -> Self {
        Self {
            base: c,
            stride: 0,
            step: 0,
            first: 0,
            prev: false,
        }
    }

    /// The context of bit `k` when the bit before it is `prev`.
    #[inline]
    pub(crate) fn context(&self, k: u32, prev: bool) -> u32 {
        let first = if k == 0 { self.first } else { 0 };
        self.base + k * self.stride + first + self.step * u32::from(prev)
    }

    /// The context of bit `k` when the bit before it is `prev` and its
    /// own offset is `first` (`self.first` unused): a bit of an element
    /// run after its element's history. Saturated: a context past the
    /// table is an error its user reports.
    #[inline]
    pub(crate) fn offset_context(&self, k: u32, prev: bool, first: u32) -> u32 {
        self.base
            .saturating_add(k.saturating_mul(self.stride))
            .saturating_add(self.step.saturating_mul(u32::from(prev)))
            .saturating_add(first)
    }

    /// Whether every context of a run of `n` bits is below `count` (then
    /// [`BitRun::context`] does not overflow either).
    #[inline]
    pub(crate) fn fits(&self, n: u32, count: u32) -> bool {
        let Some(last) = n.checked_sub(1) else {
            return true;
        };
        last.checked_mul(self.stride)
            .map(|span| span.max(self.first))
            .and_then(|span| span.checked_add(self.base))
            .and_then(|c| c.checked_add(self.step))
            .is_some_and(|c| c < count)
    }
}

impl BitRun {
    /// The probabilities of a run of `n` bits (at most 64) as pairs (a
    /// 0 bit's context, then a 1 bit's), when its contexts are pairs in
    /// a row: stride 2, a previous 1 bit one context on, no first-bit
    /// offset, every context below `count` and in `probs`. `None` for
    /// other runs.
    #[inline]
    pub(crate) fn pairs<'p>(&self, n: u32, count: u32, probs: &'p [u16]) -> Option<&'p [u16]> {
        if self.stride != 2 || self.step != 1 || self.first != 0 || n > 64 {
            return None;
        }
        let end = self.base.checked_add(2 * n)?;
        if end > count {
            return None;
        }
        probs.get(self.base as usize..end as usize)
    }
}

/// What [`ElementRun`] and [`GroupRun`] share, for code that walks either:
/// a run's contexts start from the row state and continue from the run's
/// own bits (the row state takes the last one once the run is coded).
pub(crate) trait MaskRun {
    /// The run's contexts in closed form, from `state` on.
    fn bits(&self, state: &RowState) -> BitRun;
    /// Notes a bit of the run in the row state.
    fn note(state: &mut RowState, bit: bool);
}

impl MaskRun for ElementRun {
    #[inline]
    fn bits(&self, state: &RowState) -> BitRun {
        // Noting an element bit clears the history: only bit 0 has one.
        let hist = if self.mask_history { state.history } else { 0 };
        BitRun {
            base: self.base,
            stride: self.stride,
            step: u32::from(self.mask_prev),
            first: hist * self.p,
            prev: state.prev_element,
        }
    }
    #[inline]
    fn note(state: &mut RowState, bit: bool) {
        state.note_element(bit);
    }
}

impl MaskRun for GroupRun {
    #[inline]
    fn bits(&self, state: &RowState) -> BitRun {
        BitRun {
            base: self.base,
            stride: self.stride,
            step: u32::from(self.mask_prev),
            first: 0,
            prev: state.prev_group,
        }
    }
    #[inline]
    fn note(state: &mut RowState, bit: bool) {
        state.note_group(bit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_fit_exactly_below_the_count() {
        let run = BitRun {
            base: 10,
            stride: 4,
            step: 1,
            first: 2,
            prev: false,
        };
        // Last bit: 10 + 3·4 + 1 = 23.
        assert!(run.fits(4, 24) && !run.fits(4, 23));
        // One bit: 10 + 2 + 1 = 13.
        assert!(run.fits(1, 14) && !run.fits(1, 13));
        assert!(run.fits(0, 0));
        let far = BitRun {
            base: u32::MAX - 8,
            ..run
        };
        assert!(!far.fits(4, u32::MAX));
        assert_eq!(run.context(0, true), 13);
        assert_eq!(run.context(2, false), 18);
    }
}
