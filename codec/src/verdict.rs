//! Carrying a row-mode trial's outcome over the next packets of a
//! quantised schema, so that an outcome that holds does not cost two compressions
//! per packet.
//!
//! The trial (`Encoder::row_mode_trial`) compresses the payload with its
//! undecided sections (`RowMode::Either`) as masks and values and as byte
//! planes and keeps the smaller. When one form won by more than
//! [`CLEAR_MARGIN`] of the smaller, or by less than [`CLOSE_MARGIN`] (so
//! that either would do), the next packets with the
//! same sections undecided (and of the same kind, delta or keyframe, so
//! with the same dictionary) take that form without the trial, for
//! [`VERDICT_LIFE`] packets in all; then the trial runs again. A clear
//! outcome that repeats the one before it lives twice as long as that
//! one did, up to [`MAX_VERDICT_LIFE`] packets. Encoder state only: a
//! decoder reads each section's row mode from its flags.
//!
//! While byte planes are the live outcome, the delta packets it decides
//! also let its sections skip their masks and values where their recent
//! estimates predict planes ([`Verdict::planes_ahead`], then
//! `pipeline::hint`): without that, every packet coded its rows both ways
//! only to have the outcome pick the planes. The margins and lives were
//! chosen by measurement (docs/benchmarks.md, "Encoder shortcuts").

/// The share of the smaller candidate by which the winner must beat the
/// other for its outcome to be carried over: one fourteenth.
const CLEAR_MARGIN: (usize, usize) = (1, 14);

/// The share of the smaller candidate under which the other is close
/// enough for the outcome to be carried over as well: one fiftieth (either
/// form would do, and the trial costs more than the bytes it saves).
const CLOSE_MARGIN: (usize, usize) = (1, 50);

/// Packets a clear outcome decides, the trial's own included.
const VERDICT_LIFE: u8 = 8;

/// Packets a clear outcome decides at most, after repeats.
const MAX_VERDICT_LIFE: u8 = 32;

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
    /// Packets it decides in all (set with the outcome).
    life: u8,
    /// The winner of the last trial, if its outcome was clear, and its
    /// undecided sections.
    last: Option<usize>,
    last_either: Vec<bool>,
    /// The packet being built was counted by [`Verdict::planes_ahead`].
    counted: bool,
}

impl Verdict {
    /// Forgets the outcome (the dictionary or entropy setting changed).
    pub(crate) fn clear(&mut self) {
        self.winner = None;
        self.counted = false;
    }

    /// Whether byte planes are the live outcome for the delta packet about
    /// to be built; if so, that packet counts against the outcome's life
    /// here (and not again in [`Verdict::take`]).
    pub(crate) fn planes_ahead(&mut self) -> bool {
        if self.winner != Some(1) || self.keyframe || self.age >= self.life {
            return false;
        }
        self.age += 1;
        self.counted = true;
        true
    }

    /// Whether section `i` was undecided in the trial of the live outcome.
    pub(crate) fn undecided(&self, i: usize) -> bool {
        self.either.get(i).copied().unwrap_or(false)
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
        if self.age >= self.life
            || self.keyframe != keyframe
            || either.len() != self.either.len()
            || !either.zip(&self.either).all(|(a, &b)| a == b)
        {
            self.winner = None;
            return None;
        }
        if !core::mem::take(&mut self.counted) {
            self.age += 1;
        }
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
        self.counted = false;
        let last = self.last.take();
        let Some(planes) = planes else {
            return;
        };
        let (num, den) = CLEAR_MARGIN;
        let (lo, hi) = (tokens.min(planes), tokens.max(planes));
        let clear = (hi - lo).saturating_mul(den) > lo.saturating_mul(num);
        let (num, den) = CLOSE_MARGIN;
        let close = (hi - lo).saturating_mul(den) < lo.saturating_mul(num);
        if !clear && !close {
            return;
        }
        let winner = usize::from(planes < tokens);
        core::mem::swap(&mut self.either, &mut self.last_either);
        self.either.clear();
        self.either.extend(either);
        let repeat =
            last == Some(winner) && self.keyframe == keyframe && self.either == self.last_either;
        self.life = if repeat {
            self.life.saturating_mul(2).min(MAX_VERDICT_LIFE)
        } else {
            VERDICT_LIFE
        };
        self.winner = Some(winner);
        self.last = Some(winner);
        self.keyframe = keyframe;
        self.age = 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_or_close_outcome_lives_for_its_packets_and_the_same_sections() {
        let mut v = Verdict::default();
        // Won by 5%: neither clear (1/14) nor close (1/50).
        v.note(false, [true, false].into_iter(), 100, Some(95));
        assert_eq!(v.take(false, [true, false].into_iter()), None);
        v.note(false, [true, false].into_iter(), 100, Some(97));
        assert_eq!(v.take(false, [true, false].into_iter()), None);
        // Won by 1%: close, carried (ties: masks and values).
        v.note(false, [true, false].into_iter(), 100, Some(99));
        assert_eq!(v.take(false, [true, false].into_iter()), Some(1));
        v.note(false, [true, false].into_iter(), 100, Some(100));
        assert_eq!(v.take(false, [true, false].into_iter()), Some(0));
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

    /// Packets a clear outcome just noted decides for delta packets (or
    /// keyframes) with `either` undecided, the trial's own included.
    fn life(v: &mut Verdict, keyframe: bool, either: &[bool]) -> usize {
        1 + core::iter::from_fn(|| v.take(keyframe, either.iter().copied())).count()
    }

    #[test]
    fn repeated_outcomes_live_longer_and_a_change_starts_again() {
        let mut v = Verdict::default();
        let mut lives = Vec::new();
        for planes in [80, 80, 80, 80, 120, 120, 97, 80] {
            v.note(false, [true].into_iter(), 100, Some(planes));
            lives.push(life(&mut v, false, &[true]));
        }
        // Planes win four times (8, 16, 32, 32 packets), then lose (8,
        // 16); an unclear trial (97 against 100) decides nothing and ends
        // the run.
        assert_eq!(lives, [8, 16, 32, 32, 8, 16, 1, 8]);
        // Other undecided sections or another kind of packet start again.
        v.note(false, [true].into_iter(), 100, Some(80));
        assert_eq!(life(&mut v, false, &[true]), 16);
        v.note(false, [true, true].into_iter(), 100, Some(80));
        assert_eq!(life(&mut v, false, &[true, true]), 8);
        v.note(true, [true, true].into_iter(), 100, Some(80));
        assert_eq!(life(&mut v, true, &[true, true]), 8);
    }

    #[test]
    fn planes_ahead_counts_each_packet_once() {
        let mut v = Verdict::default();
        v.note(false, [true, false].into_iter(), 100, Some(80));
        let mut packets = 1;
        while v.planes_ahead() {
            assert!(v.undecided(0) && !v.undecided(1) && !v.undecided(2));
            // A packet whose section stayed undecided takes the outcome
            // without counting again.
            if packets % 2 == 0 {
                assert_eq!(v.take(false, [true, false].into_iter()), Some(1));
            }
            packets += 1;
        }
        assert_eq!(packets, usize::from(VERDICT_LIFE));
        // Masks and values, or a keyframe's outcome, are not ahead.
        v.note(false, [true].into_iter(), 80, Some(100));
        assert!(!v.planes_ahead());
        v.note(true, [true].into_iter(), 100, Some(80));
        assert!(!v.planes_ahead());
    }
}
