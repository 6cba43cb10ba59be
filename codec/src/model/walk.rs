//! The model block's side of the payload walk: a [`TokenSink`] that codes
//! the walk's tokens with a [`ModelEncoder`] (or counts them into
//! [`ModelStats`]) and the [`TokenSource`] that reads them back, both
//! through the schema's [`ContextMap`].

#![forbid(unsafe_code)]

use super::coder::RunSink;
use super::runs::{BitRun, MaskRun};
use super::{
    ContextConfig, ContextMap, ModelDecoder, ModelEncoder, ModelError, ModelStats, ModelTable,
    RowState,
};
use crate::error::DecodeError;
use crate::pipeline::tokens::{self, TokenSink, TokenSource};
use crate::pipeline::values::Element;
use crate::pipeline::EncodeScratch;

/// Hands walk tokens to a [`ModelSink`] under their dense contexts. The
/// first context the map does not know is kept and later tokens dropped.
pub(crate) struct WalkSink<'m, S> {
    map: &'m ContextMap,
    state: RowState,
    sink: S,
    error: Option<ModelError>,
}

impl<'m, S: RunSink> WalkSink<'m, S> {
    pub(crate) fn new(map: &'m ContextMap, sink: S) -> Self {
        Self {
            map,
            state: RowState::default(),
            sink,
            error: None,
        }
    }

    /// The sink, or the first error.
    pub(crate) fn finish(self) -> Result<S, ModelError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.sink),
        }
    }
}

impl<S: RunSink> TokenSink for WalkSink<'_, S> {
    fn bit(&mut self, ctx: u32, bit: bool) {
        if self.error.is_some() {
            return;
        }
        match self.map.bit_context(&mut self.state, ctx) {
            Ok(c) => {
                self.sink.bit(c, bit);
                self.map.note_bit(&mut self.state, ctx, bit);
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn uint(&mut self, ctx: u32, v: u64) {
        if self.error.is_some() {
            return;
        }
        match self.map.value_context(&self.state, ctx) {
            Ok((c, true)) => self.sink.sint(c, v),
            Ok((c, false)) => self.sink.uint(c, v),
            Err(e) => {
                self.error = Some(e);
                return;
            }
        }
        self.map.note_value(&mut self.state, ctx);
    }

    fn groups(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u64) {
        let ctx = tokens::ctx::make(tokens::ctx::MASK_GROUP, section, row, first);
        if self.error.is_some() {
            return;
        }
        let run = self.map.group_run(&mut self.state, ctx, n as u32);
        self.mask_bits(ctx, n, bits, run);
    }

    fn set_bits(&mut self, section: usize, which: usize, n: usize, bits: u64) {
        if self.error.is_some() {
            return;
        }
        // One context for the whole bitmap, which leaves the row state as
        // it is.
        let ctx = tokens::ctx::make(tokens::ctx::SET_BIT, section, 0, which);
        match self.map.bit_context(&mut self.state, ctx) {
            Ok(c) => self.sink.bit_run(&BitRun::same(c), n as u32, bits),
            Err(e) => self.error = Some(e),
        }
    }

    fn group(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u8) {
        let ctx = tokens::ctx::make(tokens::ctx::MASK_ELEMENT, section, row, first);
        if self.error.is_some() {
            return;
        }
        let run = self.map.element_run(&mut self.state, ctx, n as u32);
        self.mask_bits(ctx, n, u64::from(bits), run);
    }
}

impl<S: RunSink> WalkSink<'_, S> {
    /// Codes the `n` mask bits of `bits` from walk context `ctx` on, with
    /// `run`'s contexts when there is a run (else bit by bit, which
    /// records the error).
    fn mask_bits<R: MaskRun>(&mut self, ctx: u32, n: usize, bits: u64, run: Option<R>) {
        let Some(run) = run else {
            for k in 0..n {
                self.bit(ctx + k as u32, (bits >> k) & 1 == 1);
            }
            return;
        };
        self.sink.bit_run(&run.bits(&self.state), n as u32, bits);
        if let Some(last) = n.checked_sub(1) {
            R::note(&mut self.state, (bits >> last) & 1 == 1);
        }
    }
}

/// Reads walk tokens from a model stream.
pub(crate) struct WalkSource<'m, 't, 'a> {
    map: &'m ContextMap,
    state: RowState,
    dec: ModelDecoder<'t, 'a>,
    /// Packet offset of the stream, for errors.
    offset: usize,
}

impl<'m, 't, 'a> WalkSource<'m, 't, 'a> {
    pub(crate) fn new(map: &'m ContextMap, dec: ModelDecoder<'t, 'a>, offset: usize) -> Self {
        Self {
            map,
            state: RowState::default(),
            dec,
            offset,
        }
    }

    fn err(&self, error: ModelError) -> DecodeError {
        DecodeError::Model {
            offset: self.offset,
            error,
        }
    }

    /// Checks that the stream has no bytes left unread.
    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        let offset = self.offset;
        self.dec
            .finish()
            .map_err(|error| DecodeError::Model { offset, error })
    }
}

impl TokenSource for WalkSource<'_, '_, '_> {
    fn bit(&mut self, ctx: u32) -> Result<bool, DecodeError> {
        let c = self
            .map
            .bit_context(&mut self.state, ctx)
            .map_err(|e| self.err(e))?;
        let bit = self.dec.bit(c).map_err(|e| self.err(e))?;
        self.map.note_bit(&mut self.state, ctx, bit);
        Ok(bit)
    }

    #[inline]
    fn uint(&mut self, ctx: u32) -> Result<u64, DecodeError> {
        let (c, signed) = self
            .map
            .value_context(&self.state, ctx)
            .map_err(|e| self.err(e))?;
        let v = self.dec.value(c, signed).map_err(|e| self.err(e))?;
        self.map.note_value(&mut self.state, ctx);
        Ok(v)
    }

    fn groups(
        &mut self,
        section: usize,
        row: u32,
        first: usize,
        n: usize,
    ) -> Result<u64, DecodeError> {
        let ctx = tokens::ctx::make(tokens::ctx::MASK_GROUP, section, row, first);
        let run = self.map.group_run(&mut self.state, ctx, n as u32);
        self.mask_bits(ctx, n, run)
    }

    fn set_bits(&mut self, section: usize, which: usize, n: usize) -> Result<u64, DecodeError> {
        // One context for the whole bitmap, which leaves the row state as
        // it is.
        let ctx = tokens::ctx::make(tokens::ctx::SET_BIT, section, 0, which);
        let c = self
            .map
            .bit_context(&mut self.state, ctx)
            .map_err(|e| self.err(e))?;
        self.dec
            .bit_run(&BitRun::same(c), n as u32)
            .map_err(|e| self.err(e))
    }

    fn group(
        &mut self,
        section: usize,
        row: u32,
        first: usize,
        n: usize,
    ) -> Result<u8, DecodeError> {
        let ctx = tokens::ctx::make(tokens::ctx::MASK_ELEMENT, section, row, first);
        let run = self.map.element_run(&mut self.state, ctx, n as u32);
        // A mask group has at most 8 elements.
        Ok((self.mask_bits(ctx, n, run)? & 0xff) as u8)
    }
}

impl WalkSource<'_, '_, '_> {
    /// Reads `n` mask bits from walk context `ctx` on, with `run`'s
    /// contexts when there is a run (else bit by bit, which reports the
    /// error).
    fn mask_bits<R: MaskRun>(
        &mut self,
        ctx: u32,
        n: usize,
        run: Option<R>,
    ) -> Result<u64, DecodeError> {
        let mut bits = 0u64;
        let Some(run) = run else {
            for k in 0..n {
                bits |= u64::from(self.bit(ctx + k as u32)?) << k;
            }
            return Ok(bits);
        };
        let bits = self
            .dec
            .bit_run(&run.bits(&self.state), n as u32)
            .map_err(|e| self.err(e))?;
        if let Some(last) = n.checked_sub(1) {
            R::note(&mut self.state, (bits >> last) & 1 == 1);
        }
        Ok(bits)
    }
}

/// The context map of a schema whose sections have `elements`; `None` when
/// the schema is too large for one.
pub(crate) fn context_map(elements: &[Vec<Element>]) -> Option<ContextMap> {
    let floats: Vec<Vec<bool>> = elements
        .iter()
        .map(|s| s.iter().map(|e| e.float).collect())
        .collect();
    ContextMap::new(&floats, ContextConfig::BLOCK).ok()
}

/// Walks the tokens of every section (all sets, then all rows) into `sink`,
/// in the order the byte layout writes them.
pub(crate) fn walk_sections(
    sink: &mut impl TokenSink,
    scratch: &[EncodeScratch],
    elements: &[Vec<Element>],
) {
    for (i, s) in scratch.iter().enumerate() {
        tokens::write_meta(sink, i, &s.tokens, false);
    }
    for (i, s) in scratch.iter().enumerate() {
        tokens::write_rows(sink, i, elements[i].len(), &s.tokens);
    }
}

/// The model stream of the sections' tokens, written into `out`.
pub(crate) fn encode_sections(
    map: &ContextMap,
    table: &ModelTable,
    scratch: &[EncodeScratch],
    elements: &[Vec<Element>],
    out: Vec<u8>,
) -> Result<Vec<u8>, ModelError> {
    let mut sink = WalkSink::new(map, ModelEncoder::new(table, out));
    walk_sections(&mut sink, scratch, elements);
    sink.finish()?.finish()
}

/// Hands every token to both sinks.
struct Both<'a, A, B>(&'a mut A, B);

impl<A: TokenSink, B: TokenSink> TokenSink for Both<'_, A, B> {
    #[inline]
    fn bit(&mut self, ctx: u32, bit: bool) {
        self.0.bit(ctx, bit);
        self.1.bit(ctx, bit);
    }
    #[inline]
    fn uint(&mut self, ctx: u32, v: u64) {
        self.0.uint(ctx, v);
        self.1.uint(ctx, v);
    }
    #[inline]
    fn groups(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u64) {
        self.0.groups(section, row, first, n, bits);
        self.1.groups(section, row, first, n, bits);
    }
    #[inline]
    fn group(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u8) {
        self.0.group(section, row, first, n, bits);
        self.1.group(section, row, first, n, bits);
    }
    #[inline]
    fn set_bits(&mut self, section: usize, which: usize, n: usize, bits: u64) {
        self.0.set_bits(section, which, n, bits);
        self.1.set_bits(section, which, n, bits);
    }
}

/// [`encode_sections`] while `other` (sizing the payload of the same
/// walk, every row as masks and values) receives every token too: one
/// walk instead of two.
pub(crate) fn encode_sections_sized<T: TokenSink>(
    map: &ContextMap,
    table: &ModelTable,
    scratch: &[EncodeScratch],
    elements: &[Vec<Element>],
    out: Vec<u8>,
    other: &mut T,
) -> Result<Vec<u8>, ModelError> {
    let mut both = Both(other, WalkSink::new(map, ModelEncoder::new(table, out)));
    walk_sections(&mut both, scratch, elements);
    both.1.finish()?.finish()
}

/// Counts the sections' tokens into `stats` (tokens the map does not know,
/// or outside `stats`' shape, are recorded in `stats`' error).
pub(crate) fn count_sections(
    map: &ContextMap,
    stats: &mut ModelStats,
    scratch: &[EncodeScratch],
    elements: &[Vec<Element>],
) {
    let mut sink = WalkSink::new(map, &mut *stats);
    walk_sections(&mut sink, scratch, elements);
    if let Err(e) = sink.finish() {
        stats.record_error(e);
    }
}
