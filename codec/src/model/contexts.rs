//! The context map of the model block: turns the context numbers of the
//! payload walk (class, section, spawned row, index) into dense model
//! contexts, conditioned on tokens already coded in the same row.
//!
//! Dense layout, per section `s` with `E` elements (`F` of them floats
//! that may carry a kind bit) in `G` mask groups, in section order. Each
//! condition multiplies the contexts it splits by its number of states when
//! it is on ([`ContextConfig`]), by 1 when off:
//! `R` row kinds (changed, spawned against the default record, spawned
//! against the recall; the last two merged without
//! [`ContextConfig::recall_rows`]), `P` previous bit of the row (0, 1),
//! `H` element history (unknown, unchanged, changed), `K` kinds of a float
//! value (none, integral, bits), `V` value history buckets (6), `W` the
//! previous value of the row (none, class 1-4, class 5 and above).
//!
//! | bit contexts | count |
//! |---|---|
//! | set membership bit, per set (removed, changed) | 2 |
//! | mask group bit, per row kind, group, previous group bit | `R·G·P` |
//! | mask element bit, per row kind, element, history, previous element bit | `R·E·H·P` |
//! | kind bit, per row kind, float element | `R·F` |
//! | changed-entity flag, per baseline history (unknown, unchanged, changed), previous flag | `C` = 6 with [`ContextConfig::changed_flags`], else 0 |
//!
//! | value contexts | count |
//! |---|---|
//! | section flags; set head, per set; set gap, per set; spawn count; spawn gap; recall rank gap | 8 |
//! | element value, per row kind, element, kind (floats only), value history, previous value of the row | `R·(E − F + F·K)·V·W` |
//!
//! The "previous" conditions start each row at 0: a row starts with its
//! first mask token (group 0 when `G > 1`, else element 0). The *history*
//! of an element is what the caller knows of it from an older reference
//! (the prior): whether it changed between the prior and the baseline, and
//! the bit-length class of that change; set it with
//! [`RowState::set_element_history`] / [`RowState::set_value_history`]
//! before the element's mask bit and value (unknown when not set). The
//! *previous value* of a row is the class (bit length of its zigzag form)
//! of the last element value coded in the row, in the row's coding order
//! (FORMAT.md 4.9), none before its first.

use super::runs::{ElementRun, GroupRun};
use super::{ModelError, ModelShape};

/// Context classes of the payload walk (the top 4 bits of a context
/// number), as `pipeline::tokens::ctx` numbers them.
pub(crate) mod class {
    pub(crate) const SECTION: u32 = 0;
    pub(crate) const SET_HEAD: u32 = 1;
    pub(crate) const SET_GAP: u32 = 2;
    pub(crate) const SET_BIT: u32 = 3;
    pub(crate) const SPAWN_COUNT: u32 = 4;
    pub(crate) const SPAWN_GAP: u32 = 5;
    pub(crate) const MASK_GROUP: u32 = 6;
    pub(crate) const MASK_ELEMENT: u32 = 7;
    pub(crate) const KIND: u32 = 8;
    pub(crate) const VALUE: u32 = 9;
}

/// Elements per mask group.
const GROUP: u32 = 8;
/// Changed-flag contexts per section: baseline history (unknown,
/// unchanged, changed) times previous flag.
const CHANGED_FLAGS: u64 = 6;
/// Row kinds: changed, spawned, recalled.
const ROW_KINDS: u32 = 3;
/// Kind conditions of a value: no kind bit, integral, bit pattern.
const KINDS: u32 = 3;
/// Element history states: unknown, unchanged, changed.
const MASK_HISTORY: u32 = 3;
/// Value history buckets: unknown or unchanged, then classes 1-2, 3-5,
/// 6-9, 10-14, 15 and above.
const VALUE_HISTORY: u32 = 6;
/// Previous-value states: none yet in the row, class 1-4 (or 0), 5 and
/// above.
const VALUE_PREV: u32 = 3;

/// Which conditions the map uses. Turning one off merges the contexts it
/// splits, and shrinks the shape. The codec's model block uses
/// [`ContextConfig::BLOCK`]; the others are for measuring what each
/// condition gains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextConfig {
    /// Mask bits conditioned on the previous mask bit of the row.
    pub mask_prev: bool,
    /// Values conditioned on their kind bit.
    pub value_kind: bool,
    /// Mask bits conditioned on the element's history.
    pub mask_history: bool,
    /// Values conditioned on the element's history.
    pub value_history: bool,
    /// Separate contexts for changed and spawned rows.
    pub row_kind: bool,
    /// Separate contexts for spawned rows coded against the recall (with
    /// `row_kind`; else they share the other spawned rows' contexts).
    pub recall_rows: bool,
    /// The changed set as one flag per kept entity, conditioned on whether
    /// the entity changed at the baseline ([`crate::History`]) and on the
    /// previous flag (table flag [`ContextConfig::FLAG_CHANGED`]).
    pub changed_flags: bool,
    /// Element values conditioned on the class of the value coded before
    /// them in the same row (table flag [`ContextConfig::FLAG_VALUE_PREV`]).
    pub value_prev: bool,
}

impl ContextConfig {
    /// Every condition on.
    pub const ALL: Self = Self {
        mask_prev: true,
        mask_history: true,
        value_kind: true,
        value_history: true,
        row_kind: true,
        recall_rows: true,
        changed_flags: true,
        value_prev: true,
    };
    /// What the model block codes with: every condition that needs no prior
    /// (the encoder has one only for schemas that predict), recalled rows
    /// sharing the spawned rows' contexts (their own gain 0.3 % on the
    /// Quake 3 demos, not worth a shape that trained tables lack).
    pub const BLOCK: Self = Self {
        mask_history: false,
        value_history: false,
        recall_rows: false,
        changed_flags: false,
        value_prev: false,
        ..Self::ALL
    };

    /// Table flag: the changed sets are coded as flags
    /// ([`ContextConfig::changed_flags`]).
    pub const FLAG_CHANGED: u16 = 1;
    /// Table flag: a changed row's mask bits and values are conditioned on
    /// the element's change at the baseline ([`ContextConfig::mask_history`],
    /// [`ContextConfig::value_history`], from [`crate::History`]).
    pub const FLAG_ELEMENTS: u16 = 2;
    /// Table flag: element values are conditioned on the value coded
    /// before them in the same row ([`ContextConfig::value_prev`]).
    pub const FLAG_VALUE_PREV: u16 = 4;
    /// The table flags whose contexts read the baseline's history
    /// ([`crate::History`]).
    pub const HISTORY_FLAGS: u16 = Self::FLAG_CHANGED | Self::FLAG_ELEMENTS;
    /// Every table flag this version knows.
    pub const KNOWN_FLAGS: u16 = Self::FLAG_CHANGED | Self::FLAG_ELEMENTS | Self::FLAG_VALUE_PREV;

    /// [`ContextConfig::BLOCK`] with the conditions a table's flags turn
    /// on.
    pub const fn block(flags: u16) -> Self {
        let elements = flags & Self::FLAG_ELEMENTS != 0;
        Self {
            changed_flags: flags & Self::FLAG_CHANGED != 0,
            mask_history: elements,
            value_history: elements,
            value_prev: flags & Self::FLAG_VALUE_PREV != 0,
            ..Self::BLOCK
        }
    }

    fn n(on: bool, states: u32) -> u32 {
        if on {
            states
        } else {
            1
        }
    }
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self::ALL
    }
}

#[derive(Debug, Clone)]
struct SectionLayout {
    elements: u32,
    groups: u32,
    /// First bit context of each kind: set bits, group bits, element bits,
    /// kind bits.
    set_bits: u32,
    group_bits: u32,
    element_bits: u32,
    kind_bits: u32,
    /// Float elements.
    floats: u32,
    /// First changed-flag context (with [`ContextConfig::changed_flags`]).
    changed_bits: u32,
    /// First value context: sets and spawns, then element values.
    value_base: u32,
    /// Value contexts of one row kind.
    values_per_row_kind: u32,
    /// Per element: its rank among the floats (`u32::MAX` for others) and
    /// its first value context within a row kind.
    float_rank: Vec<u32>,
    value_at: Vec<u32>,
    /// Per element: its dense contexts in row kind 0, what
    /// [`ContextMap::value_context`] and [`ContextMap::bit_context`]
    /// derive for it, computed once (row kind `rk` adds
    /// `rk · values_per_row_kind` and `rk · floats`).
    element_contexts: Vec<ElementContexts>,
}

/// The dense contexts of one element in row kind 0 (or, from
/// [`ContextMap::element_contexts`], in a given row kind).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ElementContexts {
    /// Value context with kind, history and previous value 0.
    pub(crate) value: u32,
    /// Bit context of the kind bit (floats only, else `u32::MAX`).
    pub(crate) kind_bit: u32,
    /// Value contexts per kind of the element's value (0 when the value
    /// is not conditioned on a kind).
    pub(crate) kind_stride: u32,
}

/// The element contexts of one section's rows of one row kind, from
/// [`ContextMap::row_contexts`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowContexts<'m> {
    /// The section's elements in row kind 0.
    elements: &'m [ElementContexts],
    /// What the row kind adds to value contexts and to kind-bit contexts.
    value: u32,
    kind_bit: u32,
}

impl RowContexts<'_> {
    /// Element `index`'s contexts, if the section has it.
    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<ElementContexts> {
        let x = self.elements.get(index as usize)?;
        Some(ElementContexts {
            value: x.value + self.value,
            kind_bit: if x.kind_bit == u32::MAX {
                u32::MAX
            } else {
                x.kind_bit + self.kind_bit
            },
            kind_stride: x.kind_stride,
        })
    }

    /// [`RowContexts::get`] without the kind bit: the value context (kind
    /// and history 0) and the value contexts per kind.
    #[inline]
    pub(crate) fn value(&self, index: u32) -> Option<(u32, u32)> {
        let x = self.elements.get(index as usize)?;
        Some((x.value + self.value, x.kind_stride))
    }
}

/// Dense contexts for one schema (its sections' element counts).
#[derive(Debug, Clone)]
pub struct ContextMap {
    sections: Vec<SectionLayout>,
    shape: ModelShape,
    config: ContextConfig,
    /// The configuration's state counts.
    n: Counts,
    /// The row-kind index of walk row kinds 0, 1 and 2.
    row_kinds: [u32; 3],
    /// All ones when values are conditioned on their history, else 0.
    value_history_mask: u32,
    /// All ones when values are conditioned on the row's previous value,
    /// else 0.
    value_prev_mask: u32,
}

/// What the map remembers of the tokens coded so far in the current row,
/// and the caller's history of the next element.
#[derive(Debug, Clone, Copy, Default)]
pub struct RowState {
    pub(super) prev_group: bool,
    pub(super) prev_element: bool,
    /// Element and value of the last kind bit, until its value is coded.
    pub(super) kind: Option<(u32, bool)>,
    pub(super) history: u32,
    /// The previous value of the row: 0 none, else its state
    /// ([`RowState::note_value_class`]).
    pub(super) prev_value: u32,
}

impl RowState {
    /// Sets the history of the element whose mask bit comes next: `None`
    /// unknown, else whether it changed between the prior and the baseline.
    pub fn set_element_history(&mut self, changed: Option<bool>) {
        self.history = match changed {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        };
    }

    /// Sets the history of the element whose value comes next: the
    /// bit-length class of its previous change (prior to baseline, as the
    /// same kind of value), `None` or `Some(0)` when unknown or unchanged.
    pub fn set_value_history(&mut self, class: Option<u32>) {
        // A table rather than a match: the classes of neighbouring values
        // differ unpredictably, and the match's branches mispredicted.
        const BUCKETS: [u32; 16] = [0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5];
        let c = class.unwrap_or(0).min(15) as usize;
        self.history = BUCKETS.get(c).copied().unwrap_or(5);
    }

    /// Records the element value coded last in the row (its zigzag form),
    /// for the next value's context; clears the element's kind and history.
    #[inline]
    pub(crate) fn note_value_class(&mut self, zigzag: u64) {
        self.prev_value = if zigzag < 16 { 1 } else { 2 };
        self.kind = None;
        self.history = 0;
    }

    /// Records an element mask bit ([`ContextMap::note_bit`] for class
    /// [`class::MASK_ELEMENT`]).
    #[inline]
    pub(crate) fn note_element(&mut self, bit: bool) {
        self.prev_element = bit;
        self.history = 0;
    }

    /// Records a mask group bit ([`ContextMap::note_bit`] for class
    /// [`class::MASK_GROUP`]).
    #[inline]
    pub(crate) fn note_group(&mut self, bit: bool) {
        self.prev_group = bit;
    }

    /// Forgets the previous row; keeps the history the caller set for the
    /// token that starts this row.
    fn start_row(&mut self) {
        *self = Self {
            history: self.history,
            ..Self::default()
        };
    }
}

/// State counts of the conditions, for one configuration.
#[derive(Debug, Clone, Copy)]
struct Counts {
    r: u32,
    p: u32,
    h: u32,
    k: u32,
    v: u32,
    w: u32,
}

impl ContextMap {
    /// The map for sections whose elements are listed in `floats`: one
    /// entry per element, `true` where the element may carry a kind bit.
    pub fn new(floats: &[Vec<bool>], config: ContextConfig) -> Result<Self, ModelError> {
        let n = Self::counts(config);
        let mut sections = Vec::with_capacity(floats.len());
        let (mut bits, mut values) = (0u64, 0u64);
        let too_many = |n: u64| ModelError::TooManySlots {
            slots: n,
            limit: u64::from(u32::MAX),
        };
        let narrow = |n: u64| u32::try_from(n).map_err(|_| too_many(n));
        for section in floats {
            let e = narrow(section.len() as u64)?;
            let mut float_rank = Vec::with_capacity(section.len());
            let mut value_at = Vec::with_capacity(section.len());
            let (mut f, mut at) = (0u32, 0u64);
            for &float in section {
                value_at.push(narrow(at)?);
                if float {
                    float_rank.push(f);
                    f += 1;
                    at += u64::from(n.k * n.v * n.w);
                } else {
                    float_rank.push(u32::MAX);
                    at += u64::from(n.v * n.w);
                }
            }
            let g = e.div_ceil(GROUP);
            let (r, p, h) = (u64::from(n.r), u64::from(n.p), u64::from(n.h));
            let group_bits = bits + 2;
            let element_bits = group_bits + r * u64::from(g) * p;
            let kind_bits = element_bits + r * u64::from(e) * h * p;
            let mut element_contexts = Vec::with_capacity(section.len());
            for (i, &float) in section.iter().enumerate() {
                let kind_bit = if float {
                    narrow(kind_bits + u64::from(float_rank[i]))?
                } else {
                    u32::MAX
                };
                element_contexts.push(ElementContexts {
                    value: narrow(values + 8 + u64::from(value_at[i]))?,
                    kind_bit,
                    kind_stride: if float && config.value_kind {
                        n.v * n.w
                    } else {
                        0
                    },
                });
            }
            let changed_bits = kind_bits + r * u64::from(f);
            sections.push(SectionLayout {
                elements: e,
                groups: g,
                set_bits: narrow(bits)?,
                group_bits: narrow(group_bits)?,
                element_bits: narrow(element_bits)?,
                kind_bits: narrow(kind_bits)?,
                floats: f,
                changed_bits: narrow(changed_bits)?,
                value_base: narrow(values)?,
                values_per_row_kind: narrow(at)?,
                float_rank,
                value_at,
                element_contexts,
            });
            bits = changed_bits
                + if config.changed_flags {
                    CHANGED_FLAGS
                } else {
                    0
                };
            values += 8 + r * at;
        }
        let shape = ModelShape {
            bit_contexts: narrow(bits)?,
            value_contexts: narrow(values)?,
        };
        let row_kinds = [0, 1, 2].map(|row| Self::row_kind_of(config, row));
        Ok(Self {
            sections,
            shape,
            config,
            n,
            row_kinds,
            value_history_mask: if config.value_history { u32::MAX } else { 0 },
            value_prev_mask: if config.value_prev { u32::MAX } else { 0 },
        })
    }

    /// The row-kind index of walk row kind `row` (0..3) under `config`.
    fn row_kind_of(config: ContextConfig, row: u32) -> u32 {
        match row {
            1 | 2 if !config.row_kind => 0,
            2 if !config.recall_rows => 1,
            r => r,
        }
    }

    /// The dense contexts of the element of walk context `ctx` (any
    /// class) in its row kind, if its section, row kind and element exist.
    #[inline]
    pub(crate) fn element_contexts(&self, ctx: u32) -> Option<ElementContexts> {
        self.row_contexts(ctx >> 16).get(ctx & 0xffff)
    }

    /// The element contexts of the rows of a walk context's section and
    /// row kind, given as its bits 16 and up (`ctx >> 16`; the class bits
    /// are ignored): for a decoder to look up once per row. Empty when the
    /// section or row kind does not exist.
    #[inline]
    pub(crate) fn row_contexts(&self, key: u32) -> RowContexts<'_> {
        let (row, sec) = ((key >> 6) & 3, key & 0x3f);
        match (
            self.sections.get(sec as usize),
            self.row_kinds.get(row as usize),
        ) {
            (Some(s), Some(&rk)) => RowContexts {
                elements: &s.element_contexts,
                // Within the shape, as the layout's sums are.
                value: rk * s.values_per_row_kind,
                kind_bit: rk * s.floats,
            },
            _ => RowContexts {
                elements: &[],
                value: 0,
                kind_bit: 0,
            },
        }
    }

    fn counts(c: ContextConfig) -> Counts {
        Counts {
            r: match (c.row_kind, c.recall_rows) {
                (false, _) => 1,
                (true, false) => ROW_KINDS - 1,
                (true, true) => ROW_KINDS,
            },
            p: ContextConfig::n(c.mask_prev, 2),
            h: ContextConfig::n(c.mask_history, MASK_HISTORY),
            k: ContextConfig::n(c.value_kind, KINDS),
            v: ContextConfig::n(c.value_history, VALUE_HISTORY),
            w: ContextConfig::n(c.value_prev, VALUE_PREV),
        }
    }

    /// The bit context of the changed flag of a kept entity of section
    /// `section` whose baseline history is `state` (0 unknown, 1 unchanged,
    /// 2 changed, [`kept_states`](crate::history)) after a flag `prev`;
    /// `None` without [`ContextConfig::changed_flags`] or past the schema.
    #[inline]
    pub(crate) fn changed_flag(&self, section: usize, state: u8, prev: bool) -> Option<u32> {
        if !self.config.changed_flags || state > 2 {
            return None;
        }
        let s = self.sections.get(section)?;
        Some(s.changed_bits + u32::from(state) * 2 + u32::from(prev))
    }

    /// Elements of section `section` (0 past the schema).
    #[inline]
    pub(crate) fn elements(&self, section: usize) -> usize {
        self.sections
            .get(section)
            .map_or(0, |s| s.elements as usize)
    }

    /// Whether changed rows are conditioned on their elements' history.
    #[inline]
    pub(crate) fn element_history(&self) -> bool {
        self.config.mask_history || self.config.value_history
    }

    /// The model shape the map's contexts fill.
    pub fn shape(&self) -> ModelShape {
        self.shape
    }

    /// The configuration the map was built with.
    pub fn config(&self) -> ContextConfig {
        self.config
    }

    /// The dense bit context of walk context `ctx`, given (and updating, at
    /// a row's start) the row state. Call [`ContextMap::note_bit`] once the
    /// bit is known.
    #[inline]
    pub fn bit_context(&self, state: &mut RowState, ctx: u32) -> Result<u32, ModelError> {
        if ctx >> 28 == class::KIND {
            if let Some(x) = self
                .element_contexts(ctx)
                .filter(|x| x.kind_bit != u32::MAX)
            {
                return Ok(x.kind_bit);
            }
        }
        let (cls, row, sec, index) = split(ctx);
        let s = self.section(sec, ctx)?;
        let c = self.config;
        let n = self.n;
        let rk = self.row_kind(row, ctx)?;
        let dense = match cls {
            class::SET_BIT if index < 2 => s.set_bits + index,
            class::MASK_GROUP if index < s.groups => {
                if index == 0 {
                    state.start_row();
                }
                let prev = u32::from(state.prev_group && c.mask_prev);
                s.group_bits + (rk * s.groups + index) * n.p + prev
            }
            class::MASK_ELEMENT if index < s.elements => {
                if index == 0 && s.groups == 1 {
                    state.start_row();
                }
                let prev = u32::from(state.prev_element && c.mask_prev);
                let hist = if c.mask_history { state.history } else { 0 };
                s.element_bits + ((rk * s.elements + index) * n.h + hist) * n.p + prev
            }
            class::KIND if index < s.elements && s.float_rank[index as usize] != u32::MAX => {
                s.kind_bits + rk * s.floats + s.float_rank[index as usize]
            }
            _ => return Err(bad(ctx, self.shape.bit_contexts)),
        };
        Ok(dense)
    }

    /// The contexts of `n` element mask bits starting with walk context
    /// `ctx` (class [`class::MASK_ELEMENT`]), the same as `n` calls of
    /// [`ContextMap::bit_context`] for `ctx`, `ctx + 1`, …, each followed by
    /// [`ContextMap::note_bit`] (use [`RowState::note_element`]); starts
    /// the row as `bit_context` would. `None` when one of them would be an
    /// error.
    #[inline]
    pub(crate) fn element_run(&self, state: &mut RowState, ctx: u32, n: u32) -> Option<ElementRun> {
        let (cls, row, sec, index) = split(ctx);
        let s = self.sections.get(sec as usize)?;
        let rk = *self.row_kinds.get(row as usize)?;
        if cls != class::MASK_ELEMENT || index.checked_add(n)? > s.elements {
            return None;
        }
        if index == 0 && s.groups == 1 && n > 0 {
            state.start_row();
        }
        let (h, p) = (self.n.h, self.n.p);
        Some(ElementRun {
            base: s.element_bits + (rk * s.elements + index) * h * p,
            stride: h * p,
            p,
            mask_history: self.config.mask_history,
            mask_prev: self.config.mask_prev,
        })
    }

    /// The contexts of `n` mask group bits starting with walk context `ctx`
    /// (class [`class::MASK_GROUP`]), the same as `n` calls of
    /// [`ContextMap::bit_context`] for `ctx`, `ctx + 1`, …, each followed by
    /// [`ContextMap::note_bit`] (use [`RowState::note_group`]); starts the
    /// row as `bit_context` would. `None` when one of them would be an
    /// error.
    #[inline]
    pub(crate) fn group_run(&self, state: &mut RowState, ctx: u32, n: u32) -> Option<GroupRun> {
        let (cls, row, sec, index) = split(ctx);
        let s = self.sections.get(sec as usize)?;
        let rk = *self.row_kinds.get(row as usize)?;
        if cls != class::MASK_GROUP || index.checked_add(n)? > s.groups {
            return None;
        }
        if index == 0 && n > 0 {
            state.start_row();
        }
        Some(GroupRun {
            base: s.group_bits + (rk * s.groups + index) * self.n.p,
            stride: self.n.p,
            mask_prev: self.config.mask_prev,
        })
    }

    /// Records the decision coded in walk context `ctx`.
    #[inline]
    pub fn note_bit(&self, state: &mut RowState, ctx: u32, bit: bool) {
        let (cls, _, _, index) = split(ctx);
        match cls {
            class::MASK_GROUP => state.prev_group = bit,
            class::MASK_ELEMENT => state.note_element(bit),
            class::KIND => state.kind = Some((index, bit)),
            _ => {}
        }
    }

    /// The dense value context of walk context `ctx`, and whether the value
    /// is signed (an element value, coded as zigzag).
    #[inline]
    pub fn value_context(&self, state: &RowState, ctx: u32) -> Result<(u32, bool), ModelError> {
        if ctx >> 28 == class::VALUE {
            if let Some(x) = self.element_contexts(ctx) {
                let kind = match state.kind {
                    Some((k, bit)) if k == ctx & 0xffff => 1 + u32::from(!bit),
                    _ => 0,
                };
                return Ok((
                    x.value + kind * x.kind_stride + self.value_offset(state),
                    true,
                ));
            }
        }
        self.other_value_context(state, ctx)
    }

    /// The value context offset of the row state's history and previous
    /// value (0 for a condition that is off), as
    /// [`ContextMap::value_context`] adds it.
    #[inline]
    pub(crate) fn value_offset(&self, state: &RowState) -> u32 {
        (state.history & self.value_history_mask) * self.n.w
            + (state.prev_value & self.value_prev_mask)
    }

    /// [`ContextMap::value_context`] of the contexts it has no shortcut for.
    #[inline(never)]
    fn other_value_context(&self, state: &RowState, ctx: u32) -> Result<(u32, bool), ModelError> {
        let (cls, row, sec, index) = split(ctx);
        let s = self.section(sec, ctx)?;
        let c = self.config;
        let n = self.n;
        let rk = self.row_kind(row, ctx)?;
        let local = match cls {
            class::SECTION if index == 0 => 0,
            class::SET_HEAD if index < 2 => 1 + index,
            class::SET_GAP if index < 2 => 3 + index,
            // Index 1: the recalled count and the recall ranks (4.1).
            class::SPAWN_COUNT if index < 2 => 5,
            class::SPAWN_GAP if index == 0 => 6,
            class::SPAWN_GAP if index == 1 => 7,
            class::VALUE if index < s.elements => {
                let e = index as usize;
                let float = s.float_rank[e] != u32::MAX;
                let kind = match state.kind {
                    Some((k, bit)) if k == index && c.value_kind && float => 1 + u32::from(!bit),
                    _ => 0,
                };
                let at = rk * s.values_per_row_kind
                    + s.value_at[e]
                    + kind * n.v * n.w
                    + self.value_offset(state);
                return Ok((s.value_base + 8 + at, true));
            }
            _ => return Err(bad(ctx, self.shape.value_contexts)),
        };
        Ok((s.value_base + local, false))
    }

    /// Records the value coded in walk context `ctx` (`zigzag`: the value
    /// as coded, zigzag for an element value).
    #[inline]
    pub fn note_value(&self, state: &mut RowState, ctx: u32, zigzag: u64) {
        if split(ctx).0 == class::VALUE {
            state.note_value_class(zigzag);
        }
    }

    /// The row-kind index of walk row kind `row` (0 changed, 1 spawned,
    /// 2 recalled) under the configuration.
    #[inline]
    fn row_kind(&self, row: u32, ctx: u32) -> Result<u32, ModelError> {
        self.row_kinds
            .get(row as usize)
            .copied()
            .ok_or_else(|| bad(ctx, self.shape.bit_contexts))
    }

    #[inline]
    fn section(&self, sec: u32, ctx: u32) -> Result<&SectionLayout, ModelError> {
        self.sections
            .get(sec as usize)
            .ok_or_else(|| bad(ctx, self.shape.bit_contexts))
    }
}

/// `class << 28 | row << 22 | section << 16 | index`.
#[inline]
fn split(ctx: u32) -> (u32, u32, u32, u32) {
    (ctx >> 28, (ctx >> 22) & 3, (ctx >> 16) & 0x3f, ctx & 0xffff)
}

fn bad(ctx: u32, count: u32) -> ModelError {
    ModelError::WalkContext { ctx, count }
}

#[cfg(test)]
mod tests {
    use super::super::runs::MaskRun;
    use super::*;

    fn ctx(class: u32, row: u32, sec: u32, index: u32) -> u32 {
        class << 28 | row << 22 | sec << 16 | index
    }

    #[test]
    fn element_runs_give_the_contexts_of_single_bits() {
        let floats = vec![vec![false; 5], (0..20).map(|i| i % 3 == 0).collect()];
        let mut x = 0x1234_5679_u32;
        for config in [ContextConfig::ALL, ContextConfig::BLOCK] {
            let map = ContextMap::new(&floats, config).unwrap();
            for (sec, f) in floats.iter().enumerate() {
                let e = f.len() as u32;
                for row in 0..3 {
                    let (mut a, mut b) = (RowState::default(), RowState::default());
                    for first in (0..e).step_by(GROUP as usize) {
                        let n = (e - first).min(GROUP);
                        let c0 = ctx(class::MASK_ELEMENT, row, sec as u32, first);
                        let run = map.element_run(&mut b, c0, n).unwrap();
                        // The caller sets the history of the run's first
                        // element; the bits clear it.
                        let history = Some(x & 2 == 2).filter(|_| x & 4 == 4);
                        a.set_element_history(history);
                        b.set_element_history(history);
                        let bits = run.bits(&b);
                        assert!(bits.fits(n, map.shape().bit_contexts));
                        let mut prev = bits.prev;
                        for k in 0..n {
                            x ^= x << 13;
                            x ^= x >> 17;
                            x ^= x << 5;
                            let bit = x & 1 == 1;
                            let want = map.bit_context(&mut a, c0 + k).unwrap();
                            assert_eq!(bits.context(k, prev), want, "{config:?} {sec} {row} {k}");
                            map.note_bit(&mut a, c0 + k, bit);
                            prev = bit;
                        }
                        ElementRun::note(&mut b, prev);
                    }
                }
                // Group runs give the contexts of single group bits too.
                let g = e.div_ceil(GROUP);
                for row in 0..3 {
                    let (mut a, mut b) = (RowState::default(), RowState::default());
                    let c0 = ctx(class::MASK_GROUP, row, sec as u32, 0);
                    let run = map.group_run(&mut b, c0, g).unwrap();
                    let bits = run.bits(&b);
                    assert!(bits.fits(g, map.shape().bit_contexts));
                    let mut prev = bits.prev;
                    for k in 0..g {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let bit = x & 1 == 1;
                        let want = map.bit_context(&mut a, c0 + k).unwrap();
                        assert_eq!(bits.context(k, prev), want, "{config:?} {sec} {row} {k}");
                        map.note_bit(&mut a, c0 + k, bit);
                        prev = bit;
                    }
                    GroupRun::note(&mut b, prev);
                    assert!(map.group_run(&mut b, c0, g + 1).is_none());
                }
                // Past the section's elements: no run.
                let c = ctx(class::MASK_ELEMENT, 0, sec as u32, e - 1);
                assert!(map.element_run(&mut RowState::default(), c, 2).is_none());
            }
        }
    }
}
