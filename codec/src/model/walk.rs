//! The model block's side of the payload walk: a [`TokenSink`] that codes
//! the walk's tokens with a [`ModelEncoder`] (or counts them into
//! [`ModelStats`]) and the [`TokenSource`] that reads them back, both
//! through the schema's [`ContextMap`].

use super::coder::RunSink;
use super::contexts::RowContexts;
use super::rowhist::{changed_bases, RowHistory};
use super::runs::{BitRun, ElementRun, GroupRun, MaskRun};
use super::{
    ContextConfig, ContextMap, ModelDecoder, ModelEncoder, ModelError, ModelStats, ModelTable,
    RowState,
};
use crate::error::DecodeError;
use crate::history::{kept_states, History};
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
    /// The element contexts of the section and row kind last coded (walk
    /// context bits 16 and up `row_key`, `u32::MAX` before the first).
    row_key: u32,
    row: RowContexts<'m>,
    /// Per section, the baseline history of each kept entity
    /// ([`kept_states`]); none: every entity unknown.
    kept: &'m [Vec<u8>],
    /// Per section, the history bytes of each changed row's elements
    /// (rows one after the other), and the row being coded.
    rows: &'m [Vec<u8>],
    track: RowHistory,
}

impl<'m, S: RunSink> WalkSink<'m, S> {
    pub(crate) fn new(map: &'m ContextMap, sink: S) -> Self {
        Self {
            map,
            state: RowState::default(),
            sink,
            error: None,
            row_key: u32::MAX,
            row: map.row_contexts(u32::MAX),
            kept: &[],
            rows: &[],
            track: RowHistory::default(),
        }
    }

    /// The sink with the kept entities' baseline history of each section.
    pub(crate) fn with_kept(self, kept: &'m [Vec<u8>]) -> Self {
        Self { kept, ..self }
    }

    /// The sink with the changed rows' element history of each section.
    pub(crate) fn with_rows(self, rows: &'m [Vec<u8>]) -> Self {
        Self { rows, ..self }
    }

    /// Starts a row of `section` (walk row kind `row`) for the element
    /// history.
    fn start_row(&mut self, section: usize, row: u32) {
        let e = self.map.elements(section);
        if let Some(r) = self.track.start(section, row) {
            let bytes = self
                .rows
                .get(section)
                .and_then(|v| v.get(r * e..(r + 1) * e));
            if let Some(b) = bytes {
                self.track.fill_from(b, e);
            }
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

impl<S> WalkSink<'_, S> {
    /// Whether changed sets are coded as per-entity flags (table flag
    /// [`ContextConfig::FLAG_CHANGED`](super::ContextConfig::FLAG_CHANGED)).
    #[cfg(feature = "internals")]
    pub(crate) fn changed_flags(&self) -> bool {
        self.map.config().changed_flags
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
        if self.map.element_history() && tokens::ctx::class(ctx) == tokens::ctx::VALUE {
            let e = tokens::ctx::index(ctx) as usize;
            self.state.set_value_history(self.track.class(e));
        }
        match self.map.value_context(&self.state, ctx) {
            Ok((c, true)) => self.sink.sint(c, v),
            Ok((c, false)) => self.sink.uint(c, v),
            Err(e) => {
                self.error = Some(e);
                return;
            }
        }
        self.map.note_value(&mut self.state, ctx, v);
    }

    fn groups(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u64) {
        let ctx = tokens::ctx::make(tokens::ctx::MASK_GROUP, section, row, first);
        if self.error.is_some() {
            return;
        }
        if first == 0 && self.map.element_history() {
            self.start_row(section, row);
        }
        let run = self.map.group_run(&mut self.state, ctx, n as u32);
        self.mask_bits(ctx, n, bits, run);
    }

    fn changed_set(&mut self, section: usize, kept: usize, _removed: &[u32], members: &[u32]) {
        // The kept entities' states came with the sink (`with_kept`).
        if !self.map.config().changed_flags {
            tokens::write_set(self, section, 1, kept, members);
            return;
        }
        if self.error.is_some() || kept == 1 {
            return;
        }
        let states = self.kept.get(section).map_or(&[][..], Vec::as_slice);
        let (mut next, mut prev) = (members.iter().peekable(), false);
        for k in 0..kept {
            let bit = next.next_if(|&&m| m as usize == k).is_some();
            let state = states.get(k).copied().unwrap_or(0);
            let Some(c) = self.map.changed_flag(section, state, prev) else {
                let ctx = tokens::ctx::make(tokens::ctx::SET_BIT, section, 0, 1);
                self.error = Some(ModelError::WalkContext {
                    ctx,
                    count: self.map.shape().bit_contexts,
                });
                return;
            };
            self.sink.bit(c, bit);
            prev = bit;
        }
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
        if self.map.element_history() {
            // One bit at a time, each after its element's history.
            if first == 0 && self.map.elements(section) <= tokens::GROUP {
                self.start_row(section, row);
            }
            // The group's dense contexts once (bit by bit where that is an
            // error, which records it); each bit adds its element's history.
            let Some(run) = self.map.element_run(&mut self.state, ctx, n as u32) else {
                for k in 0..n {
                    self.state.set_element_history(self.track.mask(first + k));
                    self.bit(ctx + k as u32, (bits >> k) & 1 == 1);
                }
                return;
            };
            let offsets = history_offsets(&self.track, &run, first, n);
            let bits = u64::from(bits);
            self.sink
                .bit_run_offsets(&run.bits(&self.state), n as u32, bits, &offsets);
            if let Some(last) = n.checked_sub(1) {
                self.state.note_element((bits >> last) & 1 == 1);
            }
            return;
        }
        let run = self.map.element_run(&mut self.state, ctx, n as u32);
        self.mask_bits(ctx, n, u64::from(bits), run);
    }

    /// The group bits, then each marked group's element bits, with the
    /// row's runs resolved once (as single mask tokens when the map has
    /// no runs for the row).
    #[inline]
    fn row_mask(&mut self, section: usize, row: u32, elements: usize, bits: u64) {
        if self.error.is_some() {
            return;
        }
        if self.map.element_history() {
            tokens::write_row_mask_by_tokens(self, section, row, elements, bits);
            return;
        }
        let RowMaskRuns {
            groups,
            gctx,
            ectx,
            runs,
        } = row_mask_runs(self.map, &mut self.state, section, row, elements);
        let Some((group_run, element_run)) = runs else {
            tokens::write_row_mask_by_tokens(self, section, row, elements, bits);
            return;
        };
        let mut marked = tokens::marked_groups(bits);
        self.mask_bits(gctx, groups, marked, Some(group_run));
        while marked != 0 {
            let first = marked.trailing_zeros() as usize * tokens::GROUP;
            marked &= marked - 1;
            let n = (elements - first).min(tokens::GROUP);
            // `element_run` of the group's first element, from the row's.
            let run = ElementRun {
                base: element_run.base + first as u32 * element_run.stride,
                ..element_run
            };
            let group_bits = u64::from((bits >> first) as u8);
            self.mask_bits(ectx + first as u32, n, group_bits, Some(run));
        }
    }

    /// The element's dense contexts resolved once for both tokens (the
    /// walk contexts as single tokens when the map has none).
    #[inline]
    fn element(&mut self, section: usize, row: u32, element: usize, kind: Option<bool>, v: u64) {
        if self.error.is_some() {
            return;
        }
        if self.map.element_history() {
            self.state.set_value_history(self.track.class(element));
        }
        let ctx = tokens::ctx::make(tokens::ctx::VALUE, section, row, element);
        // Bits 28 and up are the class, the same for every value.
        let key = ctx >> 16;
        if key != self.row_key {
            self.row = self.map.row_contexts(key);
            self.row_key = key;
        }
        let Some(x) = self
            .row
            .get(ctx & 0xffff)
            .filter(|x| kind.is_none() || x.kind_bit != u32::MAX)
        else {
            tokens::element_by_tokens(self, section, row, element, kind, v);
            return;
        };
        let value = x.value + self.map.value_offset(&self.state);
        let kind = match kind {
            Some(bit) => {
                self.sink.bit(x.kind_bit, bit);
                1 + u32::from(!bit)
            }
            // A kind bit given before (as a single token) for this element.
            None => match self.state.kind {
                Some((k, bit)) if k == ctx & 0xffff => 1 + u32::from(!bit),
                _ => 0,
            },
        };
        self.sink.sint(value + kind * x.kind_stride, v);
        self.state.note_value_class(v);
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

/// A row mask's groups, the walk contexts of its first group bit and first
/// element bit, and its group and element runs when it has more than one
/// group and the map has runs for it (else the row goes token by token).
struct RowMaskRuns {
    groups: usize,
    gctx: u32,
    ectx: u32,
    runs: Option<(GroupRun, ElementRun)>,
}

/// [`RowMaskRuns`] of a row of `elements` elements. Neither lookup changes
/// the row state when it finds no run (nor does the element run of a row of
/// more than one group); the group run starts the row.
#[inline(always)]
fn row_mask_runs(
    map: &ContextMap,
    state: &mut RowState,
    section: usize,
    row: u32,
    elements: usize,
) -> RowMaskRuns {
    let groups = elements.div_ceil(tokens::GROUP);
    let gctx = tokens::ctx::make(tokens::ctx::MASK_GROUP, section, row, 0);
    let ectx = tokens::ctx::make(tokens::ctx::MASK_ELEMENT, section, row, 0);
    let runs = if groups > 1 {
        map.element_run(state, ectx, elements as u32)
            .and_then(|e| Some((map.group_run(state, gctx, groups as u32)?, e)))
    } else {
        None
    };
    RowMaskRuns {
        groups,
        gctx,
        ectx,
        runs,
    }
}

/// Reads walk tokens from a model stream.
pub(crate) struct WalkSource<'m, 't, 'a> {
    map: &'m ContextMap,
    state: RowState,
    dec: ModelDecoder<'t, 'a>,
    /// Packet offset of the stream, for errors.
    offset: usize,
    /// The element contexts of the section and row kind last read (walk
    /// context bits 16 and up `row_key`, `u32::MAX` before the first).
    row_key: u32,
    row: RowContexts<'m>,
    /// The baseline's history, and the kept entities' states of the
    /// section being read ([`kept_states`]).
    history: Option<&'m History>,
    kept: Vec<u8>,
    /// Per section, the baseline index of each changed row's entity, and
    /// the row being read.
    bases: Vec<Vec<u32>>,
    track: RowHistory,
}

impl<'m, 't, 'a> WalkSource<'m, 't, 'a> {
    pub(crate) fn new(map: &'m ContextMap, dec: ModelDecoder<'t, 'a>, offset: usize) -> Self {
        Self {
            map,
            state: RowState::default(),
            dec,
            offset,
            row_key: u32::MAX,
            row: map.row_contexts(u32::MAX),
            history: None,
            kept: Vec::new(),
            bases: Vec::new(),
            track: RowHistory::default(),
        }
    }

    /// Starts a row of `section` (walk row kind `row`) for the element
    /// history.
    fn start_row(&mut self, section: usize, row: u32) {
        let e = self.map.elements(section);
        let (Some(r), Some(h)) = (self.track.start(section, row), self.history) else {
            return;
        };
        let base = self.bases.get(section).and_then(|b| b.get(r)).copied();
        let bytes = base.map_or(&[][..], |b| h.row(section, b as usize));
        self.track.fill_from(bytes, e);
    }

    /// The source reading against the baseline's history.
    pub(crate) fn with_history(self, history: Option<&'m History>) -> Self {
        Self { history, ..self }
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
        if self.map.element_history() && tokens::ctx::class(ctx) == tokens::ctx::VALUE {
            let e = tokens::ctx::index(ctx) as usize;
            self.state.set_value_history(self.track.class(e));
        }
        let (c, signed) = self
            .map
            .value_context(&self.state, ctx)
            .map_err(|e| self.err(e))?;
        let v = self.dec.value(c, signed).map_err(|e| self.err(e))?;
        self.map.note_value(&mut self.state, ctx, v);
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
        if first == 0 && self.map.element_history() {
            self.start_row(section, row);
        }
        let run = self.map.group_run(&mut self.state, ctx, n as u32);
        self.mask_bits(ctx, n, run)
    }

    #[inline(always)]
    fn inline_floats(&self) -> bool {
        true
    }

    /// The group bits, then each marked group's element bits, with the
    /// row's element contexts resolved once (the single-group row, and a
    /// row the map has no runs for, as single mask tokens).
    #[inline]
    fn row_mask(
        &mut self,
        section: usize,
        row: u32,
        elements: usize,
    ) -> Result<Result<u64, ()>, DecodeError> {
        if self.map.element_history() {
            return tokens::read_mask_bits_by_tokens(self, section, row, elements);
        }
        let RowMaskRuns {
            groups,
            gctx,
            ectx,
            runs,
        } = row_mask_runs(self.map, &mut self.state, section, row, elements);
        let Some((group_run, element_run)) = runs else {
            return tokens::read_mask_bits_by_tokens(self, section, row, elements);
        };
        let mut marked = self.mask_bits(gctx, groups, Some(group_run))?;
        let mut changed = 0u64;
        while marked != 0 {
            let first = marked.trailing_zeros() as usize * tokens::GROUP;
            marked &= marked - 1;
            let n = (elements - first).min(tokens::GROUP);
            // `element_run` of the group's first element, from the row's.
            let run = ElementRun {
                base: element_run.base + first as u32 * element_run.stride,
                ..element_run
            };
            let bits = self.mask_bits(ectx + first as u32, n, Some(run))? & 0xff;
            if bits == 0 {
                return Ok(Err(()));
            }
            changed |= bits << first;
        }
        Ok(Ok(changed))
    }

    /// The element's dense contexts resolved once for both tokens (the
    /// walk contexts as the single-token path when the map has none).
    #[inline(always)]
    fn float_value(
        &mut self,
        section: usize,
        row: u32,
        element: usize,
        kind_bit: bool,
    ) -> Result<(bool, u64), DecodeError> {
        let ctx = tokens::ctx::make(tokens::ctx::VALUE, section, row, element);
        // Bits 28 and up are the class, the same for every value.
        let key = ctx >> 16;
        if key != self.row_key {
            self.row = self.map.row_contexts(key);
            self.row_key = key;
        }
        let index = ctx & 0xffff;
        if self.map.element_history() {
            self.state.set_value_history(self.track.class(element));
        }
        let hist = self.map.value_offset(&self.state);
        let got = if kind_bit {
            let Some(x) = self.row.get(index).filter(|x| x.kind_bit != u32::MAX) else {
                return tokens::float_value_by_tokens(self, section, row, element, kind_bit);
            };
            self.dec
                .flagged_value(x.kind_bit, x.value + hist, x.kind_stride)
        } else {
            let Some((value, stride)) = self.row.value(index) else {
                return tokens::float_value_by_tokens(self, section, row, element, kind_bit);
            };
            // A kind bit read before (as a single token) for this element.
            let kind = match self.state.kind {
                Some((k, bit)) if k == index => 1 + u32::from(!bit),
                _ => 0,
            };
            self.dec
                .value(value + hist + kind * stride, true)
                .map(|v| (false, v))
        };
        let got = got.map_err(|e| self.err(e))?;
        self.state.note_value_class(got.1);
        Ok(got)
    }

    fn changed_set(
        &mut self,
        section: usize,
        kept: usize,
        removed: &[u32],
        out: &mut Vec<u32>,
    ) -> Result<Result<(), ()>, DecodeError> {
        if !self.map.config().changed_flags {
            let read = tokens::read_set(self, section, 1, kept, out);
            self.note_changed(section, removed, out);
            return read;
        }
        out.clear();
        if kept == 1 {
            out.push(0);
            self.note_changed(section, removed, out);
            return Ok(Ok(()));
        }
        let base_len = kept + removed.len();
        kept_states(self.history, section, base_len, removed, &mut self.kept);
        let mut prev = false;
        for k in 0..kept {
            let state = self.kept.get(k).copied().unwrap_or(0);
            let Some(c) = self.map.changed_flag(section, state, prev) else {
                let ctx = tokens::ctx::make(tokens::ctx::SET_BIT, section, 0, 1);
                let count = self.map.shape().bit_contexts;
                return Err(self.err(ModelError::WalkContext { ctx, count }));
            };
            prev = self.dec.bit(c).map_err(|e| self.err(e))?;
            if prev {
                out.push(k as u32);
            }
        }
        self.note_changed(section, removed, out);
        Ok(if out.is_empty() { Err(()) } else { Ok(()) })
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
        if self.map.element_history() {
            // One bit at a time, each after its element's history.
            if first == 0 && self.map.elements(section) <= tokens::GROUP {
                self.start_row(section, row);
            }
            let n = n.min(8);
            let mut bits = 0u8;
            // The group's dense contexts once (bit by bit where that is an
            // error, which reports it); each bit adds its element's history.
            let Some(run) = self.map.element_run(&mut self.state, ctx, n as u32) else {
                for k in 0..n {
                    self.state.set_element_history(self.track.mask(first + k));
                    bits |= u8::from(self.bit(ctx + k as u32)?) << k;
                }
                return Ok(bits);
            };
            // The encoder's contexts (`RunSink::bit_run_offsets`), bit by
            // bit: a run read at once is no faster here.
            let offsets = history_offsets(&self.track, &run, first, n);
            let bits_run = run.bits(&self.state);
            let mut prev = bits_run.prev;
            for (k, &o) in (0..n as u32).zip(&offsets) {
                let c = bits_run.offset_context(k, prev, o);
                prev = self.dec.bit(c).map_err(|e| self.err(e))?;
                bits |= u8::from(prev) << k;
            }
            if n > 0 {
                self.state.note_element(prev);
            }
            return Ok(bits);
        }
        let run = self.map.element_run(&mut self.state, ctx, n as u32);
        // A mask group has at most 8 elements.
        Ok((self.mask_bits(ctx, n, run)? & 0xff) as u8)
    }
}

impl WalkSource<'_, '_, '_> {
    /// Records the baseline index of each changed row of `section` when
    /// rows are conditioned on their elements' history.
    fn note_changed(&mut self, section: usize, removed: &[u32], changed: &[u32]) {
        if !self.map.element_history() || self.history.is_none() {
            return;
        }
        if self.bases.len() <= section {
            self.bases.resize_with(section + 1, Vec::new);
        }
        if let Some(b) = self.bases.get_mut(section) {
            changed_bases(changed, removed, b);
        }
    }

    /// Reads `n` mask bits from walk context `ctx` on, with `run`'s
    /// contexts when there is a run (else bit by bit, which reports the
    /// error).
    #[inline(always)]
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

/// The context offsets of the `n` (at most 8) mask bits of `run` from
/// element `first` on, from the row's element history: what both ends add
/// to each bit's context.
#[inline]
fn history_offsets(track: &RowHistory, run: &ElementRun, first: usize, n: usize) -> [u32; 8] {
    let mut offsets = [0u32; 8];
    if run.mask_history {
        let n = n.min(offsets.len());
        track.mask_offsets(first, run.p, &mut offsets[..n]);
    }
    offsets
}

/// The context map of a schema whose sections have `elements`; `None` when
/// the schema is too large for one.
pub(crate) fn context_map(elements: &[Vec<Element>], flags: u16) -> Option<ContextMap> {
    let floats: Vec<Vec<bool>> = elements
        .iter()
        .map(|s| s.iter().map(|e| e.float).collect())
        .collect();
    ContextMap::new(&floats, ContextConfig::block(flags)).ok()
}

/// The context maps of a schema, one per table flag combination, built
/// when a table with those flags is first attached.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContextMaps {
    /// Index: table flags.
    maps: Vec<Option<ContextMap>>,
}

impl ContextMaps {
    /// The maps of a schema whose sections have `elements` (the map of
    /// flags 0 built now).
    pub(crate) fn new(elements: &[Vec<Element>]) -> Self {
        Self {
            maps: vec![context_map(elements, 0)],
        }
    }

    /// The map of table flags `flags` (`None`: unknown flags, not built
    /// yet, or a schema too large for one).
    #[inline]
    pub(crate) fn get(&self, flags: u16) -> Option<&ContextMap> {
        self.maps.get(usize::from(flags))?.as_ref()
    }

    /// The map of the flags of `table` when it has the map's shape.
    #[inline]
    pub(crate) fn for_table(&self, table: &ModelTable) -> Option<&ContextMap> {
        self.get(table.flags())
            .filter(|m| m.shape() == table.shape())
    }

    /// Builds the map of `flags` (known flags only) if not built yet.
    pub(crate) fn build(&mut self, elements: &[Vec<Element>], flags: u16) {
        if flags & !ContextConfig::KNOWN_FLAGS != 0 {
            return;
        }
        let i = usize::from(flags);
        if self.maps.len() <= i {
            self.maps.resize(i + 1, None);
        }
        if self.maps[i].is_none() {
            self.maps[i] = context_map(elements, flags);
        }
    }
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
    kept: &[Vec<u8>],
    rows: &[Vec<u8>],
    out: Vec<u8>,
) -> Result<Vec<u8>, ModelError> {
    let mut sink = WalkSink::new(map, ModelEncoder::new(table, out))
        .with_kept(kept)
        .with_rows(rows);
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
    #[inline]
    fn element(&mut self, section: usize, row: u32, element: usize, kind: Option<bool>, v: u64) {
        self.0.element(section, row, element, kind, v);
        self.1.element(section, row, element, kind, v);
    }
    #[inline]
    fn row_mask(&mut self, section: usize, row: u32, elements: usize, bits: u64) {
        self.0.row_mask(section, row, elements, bits);
        self.1.row_mask(section, row, elements, bits);
    }
    #[inline]
    fn changed_set(&mut self, section: usize, kept: usize, removed: &[u32], members: &[u32]) {
        self.0.changed_set(section, kept, removed, members);
        self.1.changed_set(section, kept, removed, members);
    }
}

/// [`encode_sections`] while `other` (sizing the payload of the same
/// walk, every row as masks and values) receives every token too: one
/// walk instead of two.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_sections_sized<T: TokenSink>(
    map: &ContextMap,
    table: &ModelTable,
    scratch: &[EncodeScratch],
    elements: &[Vec<Element>],
    kept: &[Vec<u8>],
    rows: &[Vec<u8>],
    out: Vec<u8>,
    other: &mut T,
) -> Result<Vec<u8>, ModelError> {
    let mut both = Both(
        other,
        WalkSink::new(map, ModelEncoder::new(table, out))
            .with_kept(kept)
            .with_rows(rows),
    );
    walk_sections(&mut both, scratch, elements);
    both.1.finish()?.finish()
}

/// Hands the sections' tokens, under their dense contexts, to `sink`;
/// the first token the map does not know is the error.
#[cfg(feature = "internals")]
pub(crate) fn record_sections(
    map: &ContextMap,
    sink: &mut dyn super::ModelSink,
    scratch: &[EncodeScratch],
    elements: &[Vec<Element>],
    kept: &[Vec<u8>],
    rows: &[Vec<u8>],
) -> Result<(), ModelError> {
    let mut walk = WalkSink::new(map, sink).with_kept(kept).with_rows(rows);
    walk_sections(&mut walk, scratch, elements);
    walk.finish().map(drop)
}

/// Counts the sections' tokens into `stats` (tokens the map does not know,
/// or outside `stats`' shape, are recorded in `stats`' error).
pub(crate) fn count_sections(
    map: &ContextMap,
    stats: &mut ModelStats,
    scratch: &[EncodeScratch],
    elements: &[Vec<Element>],
    kept: &[Vec<u8>],
    rows: &[Vec<u8>],
) {
    let mut sink = WalkSink::new(map, &mut *stats)
        .with_kept(kept)
        .with_rows(rows);
    walk_sections(&mut sink, scratch, elements);
    if let Err(e) = sink.finish() {
        stats.record_error(e);
    }
}

#[cfg(test)]
#[path = "walk_tests.rs"]
mod tests;
