//! The context map of the model block: turns the context numbers of the
//! payload walk (class, section, spawned row, index) into dense model
//! contexts, conditioned on tokens already coded in the same row.
//!
//! Dense layout, per section `s` with `E` elements (`F` of them floats
//! that may carry a kind bit) in `G` mask groups, in section order; `R = 2`
//! row kinds (changed, spawned); `H` = 3 mask histories, 6 value histories:
//!
//! | bit contexts | count |
//! |---|---|
//! | set membership bit, per set (removed, changed) | 2 |
//! | mask group bit, per row kind, group, previous group bit of the row | `R·G·2` |
//! | mask element bit, per row kind, element, history, previous element bit of the row | `R·E·3·2` |
//! | kind bit, per row kind, float element | `R·F` |
//!
//! | value contexts | count |
//! |---|---|
//! | set mode, member count, gap, per set | 6 |
//! | spawn count, spawn gap | 2 |
//! | element value, per row kind, element, kind (floats: none, integral, bits), history | `R·(E + 2F)·6` |
//!
//! The "previous" conditions start each row at 0: a row starts with its
//! first mask token (group 0 when `G > 1`, else element 0). The *history*
//! of an element is what the caller knows of it from an older reference
//! (the prior): whether it changed between the prior and the baseline, and
//! the bit-length class of that change; set it with
//! [`RowState::set_element_history`] / [`RowState::set_value_history`]
//! before the element's mask bit and value (unknown when not set).

#![forbid(unsafe_code)]

use super::{ModelError, ModelShape};

/// Context classes of the payload walk (the top 4 bits of a context
/// number).
pub(crate) mod class {
    pub(crate) const SET_MODE: u32 = 0;
    pub(crate) const SET_COUNT: u32 = 1;
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
/// Row kinds: changed, spawned.
const ROW_KINDS: u32 = 2;
/// Kind conditions of a value: no kind bit, integral, bit pattern.
const KINDS: u32 = 3;
/// Element history states: unknown, unchanged, changed.
const MASK_HISTORY: u32 = 3;
/// Value history buckets: unknown or unchanged, then classes 1-2, 3-5,
/// 6-9, 10-14, 15 and above.
const VALUE_HISTORY: u32 = 6;

/// Which conditions the map uses; all on by default. Turning one off
/// merges its contexts (for measuring what each gains).
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
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            mask_prev: true,
            value_kind: true,
            mask_history: true,
            value_history: true,
            row_kind: true,
        }
    }
}

#[derive(Debug, Clone)]
struct SectionLayout {
    elements: u32,
    groups: u32,
    /// First bit context: set bits, then group, element and kind bits.
    bit_base: u32,
    /// Float elements.
    floats: u32,
    /// First value context: sets and spawns, then element values.
    value_base: u32,
    /// Value contexts of one row kind.
    values_per_row_kind: u32,
    /// Per element: its rank among the floats (`u32::MAX` for others) and
    /// its first value context within a row kind.
    float_rank: Vec<u32>,
    value_at: Vec<u32>,
}

/// Dense contexts for one schema (its sections' element counts).
#[derive(Debug, Clone)]
pub struct ContextMap {
    sections: Vec<SectionLayout>,
    shape: ModelShape,
    config: ContextConfig,
}

/// What the map remembers of the tokens coded so far in the current row,
/// and the caller's history of the next element.
#[derive(Debug, Clone, Copy, Default)]
pub struct RowState {
    prev_group: bool,
    prev_element: bool,
    /// Element and value of the last kind bit, until its value is coded.
    kind: Option<(u32, bool)>,
    history: u32,
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
        self.history = match class.unwrap_or(0) {
            0 => 0,
            1..=2 => 1,
            3..=5 => 2,
            6..=9 => 3,
            10..=14 => 4,
            _ => 5,
        };
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

impl ContextMap {
    /// The map for sections whose elements are listed in `floats`: one
    /// entry per element, `true` where the element may carry a kind bit.
    pub fn new(floats: &[Vec<bool>], config: ContextConfig) -> Result<Self, ModelError> {
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
                    at += u64::from(KINDS * VALUE_HISTORY);
                } else {
                    float_rank.push(u32::MAX);
                    at += u64::from(VALUE_HISTORY);
                }
            }
            let g = e.div_ceil(GROUP);
            sections.push(SectionLayout {
                elements: e,
                groups: g,
                bit_base: narrow(bits)?,
                floats: f,
                value_base: narrow(values)?,
                values_per_row_kind: narrow(at)?,
                float_rank,
                value_at,
            });
            let r = u64::from(ROW_KINDS);
            bits += 2
                + r * u64::from(g) * 2
                + r * u64::from(e) * u64::from(MASK_HISTORY) * 2
                + r * u64::from(f);
            values += 8 + r * at;
        }
        let shape = ModelShape {
            bit_contexts: narrow(bits)?,
            value_contexts: narrow(values)?,
        };
        Ok(Self {
            sections,
            shape,
            config,
        })
    }

    /// The model shape the map's contexts fill.
    pub fn shape(&self) -> ModelShape {
        self.shape
    }

    /// The dense bit context of walk context `ctx`, given (and updating, at
    /// a row's start) the row state. Call [`ContextMap::note_bit`] once the
    /// bit is known.
    pub fn bit_context(&self, state: &mut RowState, ctx: u32) -> Result<u32, ModelError> {
        let (cls, spawned, sec, index) = split(ctx);
        let s = self.section(sec, ctx)?;
        let rk = u32::from(spawned && self.config.row_kind);
        let groups = 2 + rk * s.groups * 2;
        let elements = 2 + ROW_KINDS * s.groups * 2 + rk * s.elements * MASK_HISTORY * 2;
        let kinds = 2 + ROW_KINDS * (s.groups + s.elements * MASK_HISTORY) * 2 + rk * s.floats;
        let local = match cls {
            class::SET_BIT if index < 2 => index,
            class::MASK_GROUP if index < s.groups => {
                if index == 0 {
                    state.start_row();
                }
                let prev = u32::from(state.prev_group && self.config.mask_prev);
                groups + index * 2 + prev
            }
            class::MASK_ELEMENT if index < s.elements => {
                if index == 0 && s.groups == 1 {
                    state.start_row();
                }
                let prev = u32::from(state.prev_element && self.config.mask_prev);
                let hist = if self.config.mask_history {
                    state.history
                } else {
                    0
                };
                elements + (index * MASK_HISTORY + hist) * 2 + prev
            }
            class::KIND if index < s.elements && s.float_rank[index as usize] != u32::MAX => {
                kinds + s.float_rank[index as usize]
            }
            _ => return Err(bad(ctx, self.shape.bit_contexts)),
        };
        Ok(s.bit_base + local)
    }

    /// Records the decision coded in walk context `ctx`.
    pub fn note_bit(&self, state: &mut RowState, ctx: u32, bit: bool) {
        let (cls, _, _, index) = split(ctx);
        match cls {
            class::MASK_GROUP => state.prev_group = bit,
            class::MASK_ELEMENT => {
                state.prev_element = bit;
                state.history = 0;
            }
            class::KIND => state.kind = Some((index, bit)),
            _ => {}
        }
    }

    /// The dense value context of walk context `ctx`, and whether the value
    /// is signed (an element value, coded as zigzag).
    pub fn value_context(&self, state: &RowState, ctx: u32) -> Result<(u32, bool), ModelError> {
        let (cls, spawned, sec, index) = split(ctx);
        let s = self.section(sec, ctx)?;
        let rk = u32::from(spawned && self.config.row_kind);
        let local = match cls {
            class::SET_MODE | class::SET_COUNT | class::SET_GAP if index < 2 => cls * 2 + index,
            class::SPAWN_COUNT if index == 0 => 6,
            class::SPAWN_GAP if index == 0 => 7,
            class::VALUE if index < s.elements => {
                let e = index as usize;
                let kind = match state.kind {
                    Some((k, bit))
                        if k == index && self.config.value_kind && s.float_rank[e] != u32::MAX =>
                    {
                        1 + u32::from(!bit)
                    }
                    _ => 0,
                };
                let hist = if self.config.value_history {
                    state.history
                } else {
                    0
                };
                let at = rk * s.values_per_row_kind + s.value_at[e] + kind * VALUE_HISTORY + hist;
                return Ok((s.value_base + 8 + at, true));
            }
            _ => return Err(bad(ctx, self.shape.value_contexts)),
        };
        Ok((s.value_base + local, false))
    }

    /// Records the value coded in walk context `ctx`.
    pub fn note_value(&self, state: &mut RowState, ctx: u32) {
        if split(ctx).0 == class::VALUE {
            state.kind = None;
            state.history = 0;
        }
    }

    fn section(&self, sec: u32, ctx: u32) -> Result<&SectionLayout, ModelError> {
        self.sections
            .get(sec as usize)
            .ok_or(bad(ctx, self.shape.bit_contexts))
    }
}

/// `class << 28 | spawned << 22 | section << 16 | index`.
fn split(ctx: u32) -> (u32, bool, u32, u32) {
    (
        ctx >> 28,
        (ctx >> 22) & 1 == 1,
        (ctx >> 16) & 0x3f,
        ctx & 0xffff,
    )
}

fn bad(ctx: u32, count: u32) -> ModelError {
    ModelError::WalkContext { ctx, count }
}
