//! Carrying a row-mode trial's outcome over the next packets of a
//! quantised schema, so that a clear winner does not cost two compressions
//! per packet.
//!
//! The trial (`Encoder::row_mode_trial`) compresses the payload with its
//! undecided sections (`RowMode::Either`) as masks and values and as byte
//! planes and keeps the smaller. When one form won
//! by more than [`CLEAR_MARGIN`] of the smaller, the next packets with the
//! same sections undecided (and of the same kind, delta or keyframe, so
//! with the same dictionary) take that form without the trial, for
//! [`VERDICT_LIFE`] packets in all; then the trial runs again. Encoder
//! state only: a decoder reads each section's row mode from its flags.
//!
//! Measured on the quantised racing lobby and arena with and without a
//! trained dictionary (`scene_replay`): at that margin every carried
//! outcome was the trial's own, and a margin of 1/16 or a life of 16 let
//! some packets grow.

#![forbid(unsafe_code)]

/// The share of the smaller candidate by which the winner must beat the
/// other for its outcome to be carried over: one tenth.
const CLEAR_MARGIN: (usize, usize) = (1, 10);

/// Packets a clear outcome decides, the trial's own included.
const VERDICT_LIFE: u8 = 8;

/// The last clear trial outcome.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// The winner (`0`: masks and values, `1`: byte planes), while live.
    winner: Option<usize>,
    /// Which sections were undecided in the trial.
    either: Vec<bool>,
    keyframe: bool,
    /// Packets decided by it so far, the trial's own included.
    age: u8,
}

impl Verdict {
    /// Forgets the outcome (the dictionary or entropy setting changed).
    pub(crate) fn clear(&mut self) {
        self.winner = None;
    }

    /// The outcome to take without a trial for a packet whose undecided
    /// sections are `either` (one flag per section), if a live one was
    /// made for the same sections and kind of packet.
    pub(crate) fn take(
        &mut self,
        keyframe: bool,
        either: impl ExactSizeIterator<Item = bool>,
    ) -> Option<usize> {
        let w = self.winner?;
        if self.age >= VERDICT_LIFE
            || self.keyframe != keyframe
            || either.len() != self.either.len()
            || !either.zip(&self.either).all(|(a, &b)| a == b)
        {
            self.winner = None;
            return None;
        }
        self.age += 1;
        Some(w)
    }

    /// Notes a trial's outcome: the blocks' lengths of both candidates
    /// (`planes` `None` when the byte planes did not fit the payload limit)
    /// for a packet whose undecided sections are `either`.
    pub(crate) fn note(
        &mut self,
        keyframe: bool,
        either: impl Iterator<Item = bool>,
        tokens: usize,
        planes: Option<usize>,
    ) {
        self.winner = None;
        let Some(planes) = planes else {
            return;
        };
        let (num, den) = CLEAR_MARGIN;
        let (lo, hi) = (tokens.min(planes), tokens.max(planes));
        if (hi - lo).saturating_mul(den) <= lo.saturating_mul(num) {
            return;
        }
        self.winner = Some(usize::from(planes < tokens));
        self.either.clear();
        self.either.extend(either);
        self.keyframe = keyframe;
        self.age = 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_outcome_lives_for_its_packets_and_the_same_sections() {
        let mut v = Verdict::default();
        v.note(false, [true, false].into_iter(), 100, Some(95));
        assert_eq!(v.take(false, [true, false].into_iter()), None);
        v.note(false, [true, false].into_iter(), 100, Some(80));
        for _ in 1..VERDICT_LIFE {
            assert_eq!(v.take(false, [true, false].into_iter()), Some(1));
        }
        assert_eq!(v.take(false, [true, false].into_iter()), None);
        v.note(false, [true, false].into_iter(), 80, Some(100));
        assert_eq!(v.take(true, [true, false].into_iter()), None);
        v.note(false, [true, false].into_iter(), 80, Some(100));
        assert_eq!(v.take(false, [true, true].into_iter()), None);
        v.note(false, [true].into_iter(), 80, None);
        assert_eq!(v.take(false, [true].into_iter()), None);
    }
}
