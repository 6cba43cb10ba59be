//! The replay window: each authenticated sequence is accepted once, and
//! sequences more than [`REPLAY_WINDOW`] behind the newest are refused.

/// How far behind the newest accepted sequence a packet may still arrive
/// (reordered) and be accepted.
pub const REPLAY_WINDOW: u64 = 256;

const EMPTY: u64 = u64::MAX;

/// Accepted sequences of one direction of one connection, as in netcode.io:
/// slot `s % 256` remembers the newest accepted `s` that maps to it.
#[derive(Debug, Clone)]
pub(crate) struct ReplayWindow {
    newest: Option<u64>,
    seen: Box<[u64; REPLAY_WINDOW as usize]>,
}

/// Why [`ReplayWindow::check`] refused a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replay {
    /// Already accepted once.
    Duplicate,
    /// Older than the window.
    TooOld {
        /// The newest accepted sequence.
        newest: u64,
    },
}

impl ReplayWindow {
    pub(crate) fn new() -> Self {
        Self {
            newest: None,
            seen: Box::new([EMPTY; REPLAY_WINDOW as usize]),
        }
    }

    /// Whether `sequence` may be accepted; does not record it.
    pub(crate) fn check(&self, sequence: u64) -> Result<(), Replay> {
        if sequence == EMPTY {
            return Err(Replay::Duplicate);
        }
        if let Some(newest) = self.newest {
            if sequence.saturating_add(REPLAY_WINDOW) <= newest {
                return Err(Replay::TooOld { newest });
            }
        }
        let slot = self.seen[(sequence % REPLAY_WINDOW) as usize];
        if slot != EMPTY && slot >= sequence {
            return Err(Replay::Duplicate);
        }
        Ok(())
    }

    /// Records `sequence` (after its packet authenticated) and says whether
    /// it is the newest so far.
    pub(crate) fn accept(&mut self, sequence: u64) -> bool {
        self.seen[(sequence % REPLAY_WINDOW) as usize] = sequence;
        let newest = self.newest.is_none_or(|n| sequence > n);
        if newest {
            self.newest = Some(sequence);
        }
        newest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sequence_once_and_not_too_old() {
        let mut w = ReplayWindow::new();
        assert_eq!(w.check(5), Ok(()));
        assert!(w.accept(5));
        assert_eq!(w.check(5), Err(Replay::Duplicate));
        assert_eq!(w.check(3), Ok(()));
        assert!(!w.accept(3));
        assert_eq!(w.check(3), Err(Replay::Duplicate));
        assert!(w.accept(1000));
        assert_eq!(w.check(744), Err(Replay::TooOld { newest: 1000 }));
        assert_eq!(w.check(745), Ok(()));
        assert_eq!(w.check(1000), Err(Replay::Duplicate));
        assert_eq!(w.check(u64::MAX), Err(Replay::Duplicate));
    }
}
