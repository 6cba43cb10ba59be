//! The token API the block encoder drives: [`ModelSink`] (implemented by
//! [`ModelEncoder`] and [`ModelStats`](super::ModelStats)) and its inverse,
//! [`ModelDecoder`].

use super::classes::{leaf_of, plain, ClassCdf};
#[cfg(test)]
use super::classes::{symbol, FREQ_BITS};
use super::range::{RangeDecoder, RangeEncoder};
use super::runs::BitRun;
use super::value::{get_rest, get_sign, DecisionSource, SIGN_SLOT};
#[cfg(test)]
use super::value::{put_sint, put_uint, Decisions};
use super::{ModelError, ModelStats, ModelTable};

/// Where the tokens of a model block go: coded, counted for training, or
/// priced.
///
/// Context indices are the caller's: `bit` contexts and value contexts are
/// separate index spaces, each below its count in the
/// [`ModelShape`](super::ModelShape).
pub trait ModelSink {
    /// One binary decision in bit context `ctx`.
    fn bit(&mut self, ctx: u32, bit: bool);
    /// An unsigned value in value context `ctx`.
    fn uint(&mut self, ctx: u32, v: u64);
    /// A signed value, given as its zigzag form (`0, -1, 1, -2, …` →
    /// `0, 1, 2, 3, …`), in value context `ctx`: its magnitude is coded as
    /// [`uint`](Self::uint) would, then a modelled sign.
    fn sint(&mut self, ctx: u32, zigzag: u64);
}

impl<T: ModelSink + ?Sized> ModelSink for &mut T {
    fn bit(&mut self, ctx: u32, bit: bool) {
        (**self).bit(ctx, bit);
    }
    fn uint(&mut self, ctx: u32, v: u64) {
        (**self).uint(ctx, v);
    }
    fn sint(&mut self, ctx: u32, zigzag: u64) {
        (**self).sint(ctx, zigzag);
    }
}

/// A [`ModelSink`] that takes a run of mask bits in one call (the same
/// decisions as one [`ModelSink::bit`] per bit).
pub(crate) trait RunSink: ModelSink {
    /// The low `n` bits of `bits`, bit `k` in context
    /// [`run.context(k, previous bit)`](BitRun::context).
    fn bit_run(&mut self, run: &BitRun, n: u32, bits: u64) {
        let mut prev = run.prev;
        for k in 0..n {
            let bit = (bits >> k) & 1 == 1;
            self.bit(run.context(k, prev), bit);
            prev = bit;
        }
    }

    /// [`bit_run`](Self::bit_run) with bit `k` in context
    /// `run.context(k, prev) + first[k]` (`run.first` unused): a run of
    /// element bits each after its own element history.
    fn bit_run_offsets(&mut self, run: &BitRun, n: u32, bits: u64, first: &[u32; 8]) {
        let mut prev = run.prev;
        for (k, &f) in (0..n).zip(first) {
            let bit = (bits >> k) & 1 == 1;
            self.bit(run.offset_context(k, prev, f), bit);
            prev = bit;
        }
    }
}

impl RunSink for &mut ModelStats {}

/// Any sink, a run as one decision per bit (the bench crate's token
/// recorder, through `internals::model_tokens`).
#[cfg(feature = "internals")]
impl RunSink for &mut dyn ModelSink {}

/// Codes tokens with a [`ModelTable`]'s static probabilities.
///
/// A context index outside the table is remembered and returned by
/// [`finish`](Self::finish); later tokens are dropped.
#[derive(Debug)]
pub struct ModelEncoder<'t> {
    table: &'t ModelTable,
    rc: RangeEncoder,
    error: Option<ModelError>,
}

/// The range coder with one value context's probabilities and class
/// frequencies: the reference of [`RangeEncoder::value`].
#[cfg(test)]
struct EncodeWith<'a, 't>(&'a mut RangeEncoder, &'t ClassCdf);

#[cfg(test)]
impl Decisions for EncodeWith<'_, '_> {
    #[inline(always)]
    fn decision(&mut self, slot: usize, bit: bool) {
        // The head (below) takes every decision but the sign's.
        debug_assert_eq!(slot, SIGN_SLOT);
        self.0.bit(self.1.sign, bit);
    }
    #[inline(always)]
    fn raw(&mut self, v: u64, n: u32) {
        self.0.raw(v, n);
    }
    #[inline(always)]
    fn head(&mut self, _base: usize, class: u32, second: bool) {
        let leaf = class.min(63);
        let (start, freq) = self.1.range(symbol(leaf, second));
        self.0.symbol(FREQ_BITS, start, freq);
        if leaf == 63 {
            self.0.bit(self.1.top, class == 64);
        }
    }
}

impl<'t> ModelEncoder<'t> {
    /// An encoder writing into `out` (cleared first; pass a reused buffer to
    /// avoid allocating).
    pub fn new(table: &'t ModelTable, out: Vec<u8>) -> Self {
        Self {
            table,
            rc: RangeEncoder::new(out),
            error: None,
        }
    }

    /// Ends the block and returns its bytes: the coded stream, then the
    /// raw-bit stream byte-reversed.
    pub fn finish(self) -> Result<Vec<u8>, ModelError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.rc.finish()),
        }
    }

    /// The probabilities and head frequencies of value context `ctx`
    /// (`None` after an error, which this records when `ctx` is outside the
    /// table).
    #[inline]
    fn value_model(&mut self, ctx: u32) -> Option<&'t ClassCdf> {
        if self.error.is_some() {
            return None;
        }
        let probs = self.table.value_model(ctx);
        if probs.is_none() {
            self.error = Some(ModelError::ValueContext {
                ctx,
                count: self.table.shape().value_contexts,
            });
        }
        probs
    }
}

impl ModelSink for ModelEncoder<'_> {
    #[inline]
    fn bit(&mut self, ctx: u32, bit: bool) {
        let count = self.table.shape().bit_contexts;
        if self.error.is_some() {
            return;
        }
        if ctx >= count {
            self.error = Some(ModelError::BitContext { ctx, count });
            return;
        }
        self.rc.bit(self.table.prob(ctx as usize), bit);
    }

    #[inline]
    fn uint(&mut self, ctx: u32, v: u64) {
        if let Some(m) = self.value_model(ctx) {
            self.rc.value(m, v, false);
        }
    }

    #[inline]
    fn sint(&mut self, ctx: u32, zigzag: u64) {
        if let Some(m) = self.value_model(ctx) {
            self.rc.value(m, zigzag, true);
        }
    }
}

impl RunSink for ModelEncoder<'_> {
    #[inline]
    fn bit_run(&mut self, run: &BitRun, n: u32, bits: u64) {
        let count = self.table.shape().bit_contexts;
        let probs = self.table.probabilities();
        if let (Some(pairs), None) = (run.pairs(n, count, probs), &self.error) {
            self.rc.bit_pairs(bits, run.prev, pairs);
            return;
        }
        if self.error.is_some() || !run.fits(n, count) || probs.len() < count as usize {
            // Bit by bit, which records the error.
            let mut prev = run.prev;
            for k in 0..n {
                let bit = (bits >> k) & 1 == 1;
                self.bit(run.context(k, prev), bit);
                prev = bit;
            }
            return;
        }
        self.rc.bit_seq(n, bits, run.prev, |k, prev| {
            probs[run.context(k, prev) as usize]
        });
    }

    #[inline]
    fn bit_run_offsets(&mut self, run: &BitRun, n: u32, bits: u64, first: &[u32; 8]) {
        let count = self.table.shape().bit_contexts;
        let probs = self.table.probabilities();
        let n = n.min(8);
        if self.error.is_some()
            || !offsets_fit(run, n, first, count)
            || probs.len() < count as usize
        {
            // Bit by bit, which records the error.
            let mut prev = run.prev;
            for k in 0..n {
                let bit = (bits >> k) & 1 == 1;
                self.bit(run.offset_context(k, prev, first[k as usize]), bit);
                prev = bit;
            }
            return;
        }
        self.rc.bit_seq(n, bits, run.prev, |k, prev| {
            let c = run.base + k * run.stride + run.step * u32::from(prev) + first[k as usize];
            probs[c as usize]
        });
    }
}

/// Whether every context of [`RunSink::bit_run_offsets`]' run of `n` bits
/// (at most 8) is below `count` (then none of them overflows either).
#[inline]
fn offsets_fit(run: &BitRun, n: u32, first: &[u32; 8], count: u32) -> bool {
    let Some(last) = n.checked_sub(1) else {
        return true;
    };
    let widest = first.iter().take(n as usize).copied().max().unwrap_or(0);
    last.checked_mul(run.stride)
        .and_then(|span| span.checked_add(widest))
        .and_then(|span| span.checked_add(run.base))
        .and_then(|c| c.checked_add(run.step))
        .is_some_and(|c| c < count)
}

/// Decodes the tokens a [`ModelEncoder`] coded with the same table.
///
/// Every call does bounded work (one head symbol, at most 2 modelled
/// decisions and 62 raw bits per value) and allocates nothing; bytes past the end read as zero,
/// so the caller's structure (counts checked against its limits) bounds the
/// whole decode. [`finish`](Self::finish) checks the block's end (FORMAT.md,
/// "End of a block": no byte unread, the raw stream in place, zero padding).
#[derive(Debug, Clone)]
pub struct ModelDecoder<'t, 'a> {
    table: &'t ModelTable,
    rc: RangeDecoder<'a>,
}

/// The range decoder with one value context's probabilities and class
/// frequencies.
struct DecodeWith<'a, 'b, 't>(&'a mut RangeDecoder<'b>, &'t ClassCdf);

impl DecisionSource for DecodeWith<'_, '_, '_> {
    #[inline(always)]
    fn decision(&mut self, slot: usize) -> bool {
        // The head (below) takes every decision but the sign's.
        debug_assert_eq!(slot, SIGN_SLOT);
        self.0.bit(self.1.sign)
    }
    #[inline(always)]
    fn raw(&mut self, n: u32) -> Result<u64, ModelError> {
        self.0.raw(n)
    }
    #[cfg(test)]
    fn head(&mut self, _base: usize) -> Result<(u32, bool), ModelError> {
        let classes = self.1;
        let (leaf, second) = leaf_of(self.0.symbol(FREQ_BITS, |t| classes.find(t))?);
        let top = leaf == 63 && self.0.bit(classes.top);
        Ok((leaf + u32::from(top), second))
    }
}

/// A value (zigzag when `signed`) coded with `d`'s value context: the
/// decisions of `value::get_uint` (and `value::get_sint`), with the value
/// bits above the raw bits of leaves 0..=62 taken from their head symbol.
#[inline(always)]
fn decode_value(d: &mut DecodeWith<'_, '_, '_>, signed: bool) -> Result<u64, ModelError> {
    let classes = d.1;
    let s = d.0.head_symbol(classes)?;
    let magnitude = match plain(s) {
        Some((top, raw)) => top | d.0.raw(raw)?,
        None => {
            let (leaf, second) = leaf_of(s);
            let top = d.0.bit(classes.top);
            get_rest(d, leaf + u32::from(top), second)?
        }
    };
    if signed {
        get_sign(d, 0, magnitude)
    } else {
        Ok(magnitude)
    }
}

impl<'t, 'a> ModelDecoder<'t, 'a> {
    /// Starts decoding `input`.
    pub fn new(table: &'t ModelTable, input: &'a [u8]) -> Result<Self, ModelError> {
        Ok(Self {
            table,
            rc: RangeDecoder::new(input)?,
        })
    }

    /// One binary decision in bit context `ctx`.
    #[inline]
    pub fn bit(&mut self, ctx: u32) -> Result<bool, ModelError> {
        let count = self.table.shape().bit_contexts;
        if ctx >= count {
            return Err(ModelError::BitContext { ctx, count });
        }
        Ok(self.rc.bit(self.table.prob(ctx as usize)))
    }

    /// An unsigned value in value context `ctx`.
    #[inline]
    pub fn uint(&mut self, ctx: u32) -> Result<u64, ModelError> {
        self.value(ctx, false)
    }

    /// A signed value in value context `ctx`, returned in zigzag form.
    #[inline]
    pub fn sint(&mut self, ctx: u32) -> Result<u64, ModelError> {
        self.value(ctx, true)
    }

    /// A value in value context `ctx`, signed (zigzag) or not. The decoder
    /// state is copied into a local for the value's steps, which keeps it
    /// in registers.
    #[inline(always)]
    pub(crate) fn value(&mut self, ctx: u32, signed: bool) -> Result<u64, ModelError> {
        let m = self.value_model(ctx)?;
        // On the decoder in place: a copy in and out (the derived `Clone`)
        // cost more than the loads and stores it saved.
        decode_value(&mut DecodeWith(&mut self.rc, m), signed)
    }

    /// A decision in bit context `kind_ctx`, then a signed (zigzag) value
    /// in value context `value_ctx + (1 + !bit) · stride`: the same as
    /// [`ModelDecoder::bit`] then [`ModelDecoder::value`] in one call.
    #[inline]
    pub(crate) fn flagged_value(
        &mut self,
        kind_ctx: u32,
        value_ctx: u32,
        stride: u32,
    ) -> Result<(bool, u64), ModelError> {
        let count = self.table.shape().bit_contexts;
        if kind_ctx >= count {
            return Err(ModelError::BitContext {
                ctx: kind_ctx,
                count,
            });
        }
        let bit = self.rc.bit(self.table.prob(kind_ctx as usize));
        let m = self.value_model(value_ctx + (1 + u32::from(!bit)) * stride)?;
        let v = decode_value(&mut DecodeWith(&mut self.rc, m), true)?;
        Ok((bit, v))
    }

    /// The low `n` bits of a run coded by [`RunSink::bit_run`] (bit `k`
    /// from context [`run.context(k, previous bit)`](BitRun::context)).
    #[inline]
    pub(crate) fn bit_run(&mut self, run: &BitRun, n: u32) -> Result<u64, ModelError> {
        let count = self.table.shape().bit_contexts;
        let probs = self.table.probabilities();
        if let Some(pairs) = run.pairs(n, count, probs) {
            return Ok(self.rc.bit_pairs(run.prev, pairs));
        }
        let mut prev = run.prev;
        let mut bits = 0u64;
        if !run.fits(n, count) || probs.len() < count as usize {
            // Bit by bit, which reports the error.
            for k in 0..n {
                let bit = self.bit(run.context(k, prev))?;
                bits |= u64::from(bit) << k;
                prev = bit;
            }
            return Ok(bits);
        }
        Ok(self.rc.bit_seq(n, prev, |k| {
            let c = run.context(k, false) as usize;
            (probs[c], probs[c + run.step as usize])
        }))
    }

    /// Checks the block's end: no byte neither stream read (`Trailing`),
    /// the raw stream where the flush puts it (`Overlap`), its unread
    /// padding zero (`Padding`).
    pub fn finish(self) -> Result<(), ModelError> {
        self.rc.finish()
    }

    #[inline]
    fn value_model(&self, ctx: u32) -> Result<&'t ClassCdf, ModelError> {
        self.table.value_model(ctx).ok_or(ModelError::ValueContext {
            ctx,
            count: self.table.shape().value_contexts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::value::{get_sint, get_uint};
    use super::super::{ModelShape, VALUE_SLOTS};
    use super::*;

    /// Decodes the same bytes with [`decode_value`] and with the reference
    /// `get_uint` / `get_sint`, value by value, until both fail.
    fn compare(cdf: &ClassCdf, bytes: &[u8], signs: u64) {
        let (Ok(mut fast), Ok(mut reference)) =
            (RangeDecoder::new(bytes), RangeDecoder::new(bytes))
        else {
            return;
        };
        for i in 0..64 {
            let signed = (signs >> i) & 1 == 1;
            let got = decode_value(&mut DecodeWith(&mut fast, cdf), signed);
            let mut d = DecodeWith(&mut reference, cdf);
            let want = if signed {
                get_sint(&mut d, 0)
            } else {
                get_uint(&mut d, 0)
            };
            assert_eq!(got, want, "value {i}");
            if got.is_err() {
                return;
            }
            assert_eq!(fast, reference, "value {i}");
        }
    }

    #[test]
    fn bit_runs_code_as_single_bits() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let shape = ModelShape {
            bit_contexts: 200,
            value_contexts: 0,
        };
        let mut pairs_runs = 0;
        for _ in 0..400 {
            let probs: Vec<u16> = (0..200).map(|_| 1 + (next() % 4095) as u16).collect();
            let table = ModelTable::from_probabilities(shape, probs).unwrap();
            // Runs of pairs (stride 2, previous bit one on), others, and
            // runs reaching past the table.
            let runs: Vec<(BitRun, u32, u64)> = (0..1 + next() % 12)
                .map(|_| {
                    let r = next();
                    let pairs = !r.is_multiple_of(3);
                    let run = BitRun {
                        base: (r >> 8) as u32 % if r & 64 == 0 { 80 } else { 200 },
                        stride: if pairs { 2 } else { (r >> 20) as u32 % 4 },
                        step: if pairs { 1 } else { (r >> 24) as u32 % 2 },
                        first: if pairs { 0 } else { (r >> 28) as u32 % 3 },
                        prev: r & 128 == 128,
                    };
                    let n = [0, 1, 2, 7, 8, 15, 16, 17, 64][(r >> 32) as usize % 9];
                    pairs_runs += usize::from(run.pairs(n, 200, table.probabilities()).is_some());
                    (run, n, next())
                })
                .collect();
            let (mut runs_enc, mut bits_enc) = (
                ModelEncoder::new(&table, Vec::new()),
                ModelEncoder::new(&table, Vec::new()),
            );
            for (run, n, bits) in &runs {
                runs_enc.bit_run(run, *n, *bits);
                let mut prev = run.prev;
                for k in 0..*n {
                    let bit = (bits >> k) & 1 == 1;
                    bits_enc.bit(run.context(k, prev), bit);
                    prev = bit;
                }
            }
            let (got, want) = (runs_enc.finish(), bits_enc.finish());
            assert_eq!(got, want);
            // Read back, and from arbitrary bytes: the run reader against
            // bit by bit.
            let junk: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
            for bytes in [want.unwrap_or_default(), junk] {
                let (Ok(mut a), Ok(mut b)) = (
                    ModelDecoder::new(&table, &bytes),
                    ModelDecoder::new(&table, &bytes),
                ) else {
                    continue;
                };
                for (run, n, _) in &runs {
                    let got = a.bit_run(run, *n);
                    let mut prev = run.prev;
                    let mut want = Ok(0u64);
                    for k in 0..*n {
                        match b.bit(run.context(k, prev)) {
                            Ok(bit) => {
                                want = want.map(|w| w | u64::from(bit) << k);
                                prev = bit;
                            }
                            Err(e) => {
                                want = Err(e);
                                break;
                            }
                        }
                    }
                    assert_eq!(got, want);
                    if got.is_err() {
                        break;
                    }
                    assert_eq!(a.rc, b.rc);
                }
            }
        }
        assert!(pairs_runs > 1000);
    }

    /// Codes `values` (value, signed) with [`RangeEncoder::value`] and with
    /// the reference decisions of `put_uint` / `put_sint`, between bits
    /// of probability `p0`, into buffers of capacity `cap`.
    fn encode_both(cdf: &ClassCdf, values: &[(u64, bool)], p0: u16, cap: usize) {
        let mut fast = RangeEncoder::new(Vec::with_capacity(cap));
        let mut reference = RangeEncoder::new(Vec::with_capacity(cap));
        for (i, &(v, signed)) in values.iter().enumerate() {
            fast.value(cdf, v, signed);
            let mut e = EncodeWith(&mut reference, cdf);
            if signed {
                put_sint(&mut e, 0, v);
            } else {
                put_uint(&mut e, 0, v);
            }
            let bit = i % 3 != 0;
            fast.bit(p0, bit);
            reference.bit(p0, bit);
        }
        assert_eq!(fast.finish(), reference.finish(), "{values:?}");
    }

    /// A xorshift64 sequence from `x`.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// The node probabilities of a test's table `t`: even at 0, then
    /// random, a third of them near 0 and a third near 1.
    fn random_probs(t: usize, next: &mut impl FnMut() -> u64) -> [u16; VALUE_SLOTS] {
        let mut probs = [2048u16; VALUE_SLOTS];
        if t > 0 {
            for p in probs.iter_mut() {
                let r = next();
                *p = match r % 3 {
                    0 => 1 + (r >> 8) as u16 % 4095,
                    1 => 4095 - (r >> 8) as u16 % 32,
                    _ => 1 + (r >> 8) as u16 % 32,
                };
            }
        }
        probs
    }

    #[test]
    fn value_encoder_matches_the_reference() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut ff_runs = 0;
        for t in 0..300 {
            let probs = random_probs(t, &mut next);
            let cdf = ClassCdf::from_nodes(&probs);
            // Every class 0..=64, signed and not, one value each.
            let every: Vec<(u64, bool)> = (0..=64u32)
                .flat_map(|c| {
                    let v = match c {
                        0 => 0,
                        64 => next() | 1 << 63,
                        c => (next() >> (64 - c)) | 1 << (c - 1),
                    };
                    [(v, false), (v, true)]
                })
                .collect();
            encode_both(&cdf, &every, 2048, 0);
            // Random runs of 0, 1, 15, 16, 17 and 64 values of random
            // classes; near-certain bits between them make runs of 0xff
            // bytes that carries pass through.
            for n in [0, 1, 15, 16, 17, 64] {
                let values: Vec<(u64, bool)> = (0..n)
                    .map(|_| (next() >> (next() % 65).min(63), next() & 1 == 1))
                    .collect();
                let p0 = [1, 2048, 4095, 4095][(next() % 4) as usize];
                encode_both(&cdf, &values, p0, (next() % 100) as usize);
                let mut rc = RangeEncoder::new(Vec::new());
                for &(v, signed) in &values {
                    rc.value(&cdf, v, signed);
                    rc.bit(p0, true);
                }
                ff_runs += usize::from(rc.finish().windows(2).any(|w| w == [0xff, 0xff]));
            }
        }
        assert!(ff_runs > 100, "{ff_runs}");
    }

    #[test]
    fn value_decoder_matches_the_reference() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for t in 0..300 {
            let probs = random_probs(t, &mut next);
            let cdf = ClassCdf::from_nodes(&probs);
            // Arbitrary bytes: every class, corrupt targets and raw digits.
            for _ in 0..20 {
                let len = (next() % 48) as usize;
                let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                compare(&cdf, &bytes, next());
            }
            // Values the encoder coded, classes 0..=64.
            let shape = ModelShape {
                bit_contexts: 0,
                value_contexts: 1,
            };
            let table = ModelTable::from_probabilities(shape, probs.to_vec()).unwrap();
            let signs = next();
            let mut enc = ModelEncoder::new(&table, Vec::new());
            for i in 0..64 {
                let v = next() >> (next() % 65).min(63) >> u32::from(i % 3 == 0);
                if (signs >> i) & 1 == 1 {
                    enc.sint(0, v);
                } else {
                    enc.uint(0, v);
                }
            }
            compare(&cdf, &enc.finish().unwrap(), signs);
        }
    }
}
