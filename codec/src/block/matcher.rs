//! Which zstd match finder compresses a block without a dictionary: the
//! level's own, or a sparse one that takes fewer, longer matches.
//!
//! At levels 1-3, zstd's parameters for blocks of up to 16 KiB look for
//! matches of 4 or 5 bytes. On payloads of short varints and masks such
//! matches barely pay for their sequence, and finding and coding them is
//! most of the time zstd spends: the sparse finder (`fast` strategy,
//! matches of at least [`SPARSE_MIN_MATCH`] bytes, a small hash table) is
//! faster and often smaller. On payloads of raw floats the level's finder is smaller.
//! So the encoder probes: every [`PROBE_MIN`]th eligible block is
//! compressed both ways and keeps the smaller; the sizes of recent probes
//! decide the finder for the blocks in between, and probes grow rarer
//! (up to one in [`PROBE_MAX`]) while they agree. Ties go to the sparse one,
//! the faster.
//!
//! This is encoder state only: a decoder reads either block alike.
//! The probes pay on payloads of varints and masks and cost nothing
//! measurable elsewhere (docs/benchmarks.md, "Encoder shortcuts").

/// The shortest match the sparse finder takes: zstd's longest minimum.
pub(crate) const SPARSE_MIN_MATCH: u32 = 7;

/// The sparse finder's hash table: 2^8 entries, 1 KiB. Measured against
/// 2^9 and 2^10 (`scene_replay <scenario> 1 plain`): a view 1953.0 B
/// against 1959.1 and 1962.8, quantised racing 527.2 against 529.1 and
/// 530.3, the quantised arena 1836.0 against 1843.1 and 1848.7, racing
/// 2246.2 against 2244.5 and 2244.3 (the probes take the sparse finder
/// for some of its blocks), with the fewest instructions.
pub(crate) const SPARSE_HASH_LOG: u32 = 8;

/// Eligible blocks of a size class from one probe to the next, the probe
/// included: at first and after a probe that disagreed with the choice.
const PROBE_MIN: u8 = 16;

/// The most blocks between probes, reached while probes agree.
const PROBE_MAX: u8 = 64;

/// The blocks the choice applies to: over 1 KiB (smaller ones are
/// compressed a level lower, `fast` already) and up to 16 KiB (above, zstd's
/// level parameters ask for longer matches and larger tables).
const TUNED: core::ops::RangeInclusive<usize> = 1025..=16 * 1024;

/// Blocks are probed and decided in four classes by size (1-2, 2-4, 4-8
/// and 8-16 KiB), so that payloads of different shapes (a row-mode trial
/// compresses the same rows as masks and values and as byte planes, of
/// different sizes) do not decide for each other.
const CLASSES: usize = 4;

/// The choices of the size classes.
#[derive(Debug, Default)]
pub(crate) struct Finders([FinderChoice; CLASSES]);

impl Finders {
    /// The size class of a block of `len` bytes, if the choice applies.
    fn class(len: usize) -> Option<usize> {
        if !TUNED.contains(&len) {
            return None;
        }
        // 1025..=16384: ilog2 of 1024..=16383 is 10..=13.
        Some((len - 1).ilog2() as usize - 10)
    }

    /// The plan for a block of `len` bytes.
    pub(crate) fn plan(&mut self, len: usize) -> Plan {
        match Self::class(len).and_then(|c| self.0.get_mut(c)) {
            Some(choice) => choice.next(),
            None => Plan::Use(Finder::Level),
        }
    }

    /// Notes a probe of a block of `len` bytes (see [`FinderChoice::note`]).
    pub(crate) fn note(&mut self, len: usize, level: usize, sparse: usize) {
        if let Some(choice) = Self::class(len).and_then(|c| self.0.get_mut(c)) {
            choice.note(level, sparse);
        }
    }
}

/// The finder for one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finder {
    /// The level's parameters.
    Level,
    /// `fast`, matches of at least [`SPARSE_MIN_MATCH`] bytes.
    Sparse,
}

impl Finder {
    /// The parameters the zstd wrapper takes for this finder.
    pub(crate) fn zstd(self) -> tickpack_zstd::Finder {
        match self {
            Finder::Level => tickpack_zstd::Finder::Level,
            Finder::Sparse => tickpack_zstd::Finder::Sparse {
                min_match: SPARSE_MIN_MATCH,
                hash_log: SPARSE_HASH_LOG,
            },
        }
    }
}

/// What the next eligible block does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Compress with both finders, keep the smaller, report the sizes.
    Probe,
    /// Compress with this finder only.
    Use(Finder),
}

/// The probes' outcome so far, for one size class.
#[derive(Debug)]
pub(crate) struct FinderChoice {
    /// Eligible blocks until the next probe (0: the next one probes).
    until_probe: u8,
    /// Blocks from one probe to the next: [`PROBE_MIN`], doubling up to
    /// [`PROBE_MAX`] while probes agree with the choice.
    interval: u8,
    /// Recent probes' compressed sizes, older probes weighing less.
    level_bytes: u32,
    sparse_bytes: u32,
}

impl Default for FinderChoice {
    fn default() -> Self {
        Self {
            until_probe: 0,
            interval: PROBE_MIN,
            level_bytes: 0,
            sparse_bytes: 0,
        }
    }
}

impl FinderChoice {
    /// The plan for the next eligible block.
    pub(crate) fn next(&mut self) -> Plan {
        if self.until_probe == 0 {
            self.until_probe = self.interval - 1;
            return Plan::Probe;
        }
        self.until_probe -= 1;
        Plan::Use(self.finder())
    }

    /// Notes a probe's compressed sizes (the block's own size where a
    /// finder did not shrink it).
    pub(crate) fn note(&mut self, level: usize, sparse: usize) {
        let before = self.finder();
        // Each probe counts fully, the ones before it a quarter less each
        // time: the sums stay below 4 blocks' worth.
        let add = |sum: u32, n: usize| {
            (sum - sum / 4).saturating_add(u32::try_from(n).unwrap_or(u32::MAX))
        };
        self.level_bytes = add(self.level_bytes, level);
        self.sparse_bytes = add(self.sparse_bytes, sparse);
        let own = if sparse <= level {
            Finder::Sparse
        } else {
            Finder::Level
        };
        self.interval = if own == before && before == self.finder() {
            self.interval.saturating_mul(2).min(PROBE_MAX)
        } else {
            PROBE_MIN
        };
        self.until_probe = self.interval - 1;
    }

    /// The finder recent probes favour.
    pub(crate) fn finder(&self) -> Finder {
        if self.sparse_bytes <= self.level_bytes {
            Finder::Sparse
        } else {
            Finder::Level
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plans of the next `n` blocks of `len` bytes.
    fn plans(f: &mut Finders, len: usize, n: usize) -> Vec<Plan> {
        (0..n).map(|_| f.plan(len)).collect()
    }

    #[test]
    fn blocks_outside_the_classes_keep_the_level() {
        let mut f = Finders::default();
        for len in [1, 1024, 16 * 1024 + 1, 32 * 1024] {
            assert_eq!(plans(&mut f, len, 3), [Plan::Use(Finder::Level); 3]);
        }
    }

    #[test]
    fn each_class_probes_first_then_takes_the_smaller() {
        let mut f = Finders::default();
        assert_eq!(f.plan(2000), Plan::Probe);
        f.note(2000, 500, 450);
        // The probe agreed with the default (ties: sparse): the interval
        // doubles at once.
        let n = 2 * usize::from(PROBE_MIN) - 1;
        assert_eq!(plans(&mut f, 2000, n), vec![Plan::Use(Finder::Sparse); n]);
        // Another class has its own probes.
        assert_eq!(f.plan(9000), Plan::Probe);
        f.note(9000, 3000, 3300);
        assert_eq!(f.plan(9000), Plan::Use(Finder::Level));
        assert_eq!(f.plan(2000), Plan::Probe);
        // Equal sums go to the sparse finder.
        f.note(2000, 1025, 1000);
        assert_eq!(f.plan(2000), Plan::Use(Finder::Sparse));
    }

    /// The blocks from each probe to the next over `blocks` blocks, every
    /// probe noted with `sizes(i)` for the `i`-th probe.
    fn gaps(
        c: &mut FinderChoice,
        blocks: usize,
        sizes: impl Fn(usize) -> (usize, usize),
    ) -> Vec<usize> {
        let mut probes = Vec::new();
        for b in 0..blocks {
            if c.next() == Plan::Probe {
                let (level, sparse) = sizes(probes.len());
                c.note(level, sparse);
                probes.push(b);
            }
        }
        probes.windows(2).map(|w| w[1] - w[0]).collect()
    }

    #[test]
    fn agreeing_probes_grow_rarer_and_a_disagreeing_one_resets() {
        let mut c = FinderChoice::default();
        assert_eq!(gaps(&mut c, 225, |_| (100, 90)), [32, 64, 64, 64]);
        // The fifth probe is won by the level's finder; the choice stays
        // (older probes outweigh it) but the interval starts again.
        let mut c = FinderChoice::default();
        let g = gaps(&mut c, 300, |i| if i == 4 { (100, 105) } else { (100, 90) });
        assert_eq!(g[..6], [32, 64, 64, 64, 16, 32]);
        assert_eq!(c.finder(), Finder::Sparse);
    }

    #[test]
    fn recent_probes_weigh_more() {
        let mut c = FinderChoice::default();
        for _ in 0..8 {
            c.note(1000, 900);
        }
        assert_eq!(c.finder(), Finder::Sparse);
        // Three probes the level's finder wins by more than the eight
        // before it lost by turn the choice.
        for _ in 0..3 {
            c.note(1000, 1100);
        }
        assert_eq!(c.finder(), Finder::Level);
    }
}
