//! Training counts: a [`ModelSink`] that counts every modelled decision per
//! probability slot, and prices token streams under a table.

use super::table::{check_slots, ModelShape, DEFAULT_MAX_SLOTS};
use super::value::{put_sint, put_uint, Decisions, VALUE_SLOTS};
use super::{ModelError, ModelSink, ModelTable};
use crate::model::range::PROB_ONE;

/// Counts of 0 and 1 decisions per slot of a [`ModelShape`], plus raw bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStats {
    shape: ModelShape,
    counts: Vec<[u64; 2]>,
    raw_bits: u64,
    error: Option<ModelError>,
}

struct Count<'a>(&'a mut [[u64; 2]], &'a mut u64);

impl Decisions for Count<'_> {
    #[inline]
    fn decision(&mut self, slot: usize, bit: bool) {
        self.0[slot][usize::from(bit)] += 1;
    }
    #[inline]
    fn raw(&mut self, _v: u64, n: u32) {
        *self.1 += u64::from(n);
    }
}

impl ModelStats {
    /// Empty counts for `shape` (at most [`DEFAULT_MAX_SLOTS`] slots).
    pub fn new(shape: ModelShape) -> Result<Self, ModelError> {
        let slots = check_slots(shape, DEFAULT_MAX_SLOTS)?;
        Ok(Self {
            shape,
            counts: vec![[0; 2]; slots],
            raw_bits: 0,
            error: None,
        })
    }

    /// The shape counted.
    pub fn shape(&self) -> ModelShape {
        self.shape
    }

    /// Per slot: decisions that were 0, decisions that were 1.
    pub fn counts(&self) -> &[[u64; 2]] {
        &self.counts
    }

    /// Raw (unmodelled) bits counted.
    pub fn raw_bits(&self) -> u64 {
        self.raw_bits
    }

    /// The first out-of-range context a token used, if any (such tokens are
    /// not counted).
    pub fn error(&self) -> Option<ModelError> {
        self.error
    }

    pub(crate) fn record_error(&mut self, e: ModelError) {
        self.error.get_or_insert(e);
    }

    /// Adds `other`'s counts (and keeps its error when `self` has none:
    /// the tokens `other` did not count are missing from the sum too).
    pub fn merge(&mut self, other: &ModelStats) -> Result<(), ModelError> {
        if self.shape != other.shape {
            return Err(self.shape.mismatch(&other.shape));
        }
        if let Some(e) = other.error {
            self.error.get_or_insert(e);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            a[0] += b[0];
            a[1] += b[1];
        }
        self.raw_bits += other.raw_bits;
        Ok(())
    }

    /// Bits the counted tokens cost when coded with `table` (ideal code
    /// lengths, raw bits included; class leaves and second bits priced by
    /// their decisions, which the coder's head-symbol frequencies follow to
    /// within their quantisation to `2^15`; the range coder adds at most
    /// about two bytes per stream).
    pub fn cost_bits(&self, table: &ModelTable) -> Result<f64, ModelError> {
        if self.shape != table.shape() {
            return Err(self.shape.mismatch(&table.shape()));
        }
        let one = f64::from(PROB_ONE);
        let mut bits = self.raw_bits as f64;
        for (&[n0, n1], &p) in self.counts.iter().zip(table.probabilities()) {
            let p0 = f64::from(p) / one;
            bits -= n0 as f64 * p0.log2() + n1 as f64 * (1.0 - p0).log2();
        }
        Ok(bits)
    }

    /// Per slot range `[start, end)`, the bits its decisions cost under
    /// `table` (for measuring what a group of contexts gains; slots past
    /// the counts or the table are not priced).
    pub fn slot_cost_bits(&self, table: &ModelTable, start: usize, end: usize) -> f64 {
        let one = f64::from(PROB_ONE);
        let end = end.min(self.counts.len()).min(table.probabilities().len());
        let start = start.min(end);
        self.counts[start..end]
            .iter()
            .zip(&table.probabilities()[start..end])
            .map(|(&[n0, n1], &p)| {
                let p0 = f64::from(p) / one;
                -(n0 as f64 * p0.log2() + n1 as f64 * (1.0 - p0).log2())
            })
            .sum()
    }

    fn value_base(&mut self, ctx: u32) -> Option<usize> {
        if ctx >= self.shape.value_contexts {
            self.error.get_or_insert(ModelError::ValueContext {
                ctx,
                count: self.shape.value_contexts,
            });
            return None;
        }
        Some(self.shape.bit_contexts as usize + ctx as usize * VALUE_SLOTS)
    }
}

impl ModelSink for ModelStats {
    #[inline]
    fn bit(&mut self, ctx: u32, bit: bool) {
        match self.counts.get_mut(ctx as usize) {
            Some(c) if ctx < self.shape.bit_contexts => c[usize::from(bit)] += 1,
            _ => {
                self.error.get_or_insert(ModelError::BitContext {
                    ctx,
                    count: self.shape.bit_contexts,
                });
            }
        }
    }

    #[inline]
    fn uint(&mut self, ctx: u32, v: u64) {
        if let Some(base) = self.value_base(ctx) {
            put_uint(&mut Count(&mut self.counts, &mut self.raw_bits), base, v);
        }
    }

    #[inline]
    fn sint(&mut self, ctx: u32, zigzag: u64) {
        if let Some(base) = self.value_base(ctx) {
            put_sint(
                &mut Count(&mut self.counts, &mut self.raw_bits),
                base,
                zigzag,
            );
        }
    }
}
