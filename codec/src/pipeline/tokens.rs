//! The logical content of a packet's payload, before any serialisation, and
//! the one walk that turns it into a sequence of tokens.
//!
//! A packet is, per section: its entity sets (removed, changed, spawned) and
//! one *row* per changed or spawned entity: the element change mask and, for
//! every changed element, an optional kind bit and a value. [`SectionTokens`]
//! holds exactly that. [`write_meta`] and [`write_rows`] walk it in wire
//! order and hand every decision to a [`TokenSink`] as a bit or an unsigned
//! integer with a *context* number ([`ctx`]); the readers in
//! [`super`] walk the same order through a [`TokenSource`]. The zstd layout
//! ([`super::layout`]) is one sink/source pair; an entropy coder with
//! per-context statistics is another.
//!
//! Walk order (FORMAT.md, "Payload"):
//!
//! 1. For each section: which of its sets are non-empty, then each
//!    non-empty one: the removed set over the baseline, the changed set over
//!    the kept entities, the spawn list.
//! 2. For each section, for each row (changed entities in kept order, then
//!    spawned ones in id order): the element mask, then per changed element
//!    in element order its kind bit (floats with an integral reference
//!    only) and its value.

pub(crate) use super::sets::{read_set, write_set};
use super::values::Kind;
use crate::error::DecodeError;

/// Context numbers: `class << 28 | row << 22 | section << 16 | index`.
/// `row` is the row kind of mask, kind and value tokens ([`ctx::CHANGED`],
/// [`ctx::SPAWNED`], [`ctx::RECALLED`]), 0 for the others; `index` is the
/// element, the group, or the set (0 removed, 1 changed).
pub(crate) mod ctx {
    /// Row kind: a kept entity's changed row, against its baseline record.
    pub(crate) const CHANGED: u32 = 0;
    /// Row kind: a spawned entity's row against the type's default record.
    pub(crate) const SPAWNED: u32 = 1;
    /// Row kind: a spawned entity's row against its recalled record.
    pub(crate) const RECALLED: u32 = 2;

    /// Which of the section's sets are non-empty: bit 0 removed, bit 1
    /// changed, bit 2 spawned; bit 3: spawned rows against the recall; bit
    /// 4 (byte layout only): the rows are byte planes.
    pub(crate) const SECTION: u32 = 0;
    /// A non-empty set's head: 0 for a bitmap, else the member count of a
    /// list; index: 0 removed, 1 changed.
    pub(crate) const SET_HEAD: u32 = 1;
    /// Gap before the next member of a list-mode set.
    pub(crate) const SET_GAP: u32 = 2;
    /// One membership bit of a bitmap-mode set.
    pub(crate) const SET_BIT: u32 = 3;
    /// Number of spawned entities minus one.
    pub(crate) const SPAWN_COUNT: u32 = 4;
    /// Gap before the next spawned id.
    pub(crate) const SPAWN_GAP: u32 = 5;
    /// Whether any element of a group of 8 changed; index: the group.
    pub(crate) const MASK_GROUP: u32 = 6;
    /// Whether one element changed; index: the element.
    pub(crate) const MASK_ELEMENT: u32 = 7;
    /// The kind bit of a float element (1 integral); index: the element.
    pub(crate) const KIND: u32 = 8;
    /// An element value; index: the element.
    pub(crate) const VALUE: u32 = 9;

    /// The context number of a decision.
    #[inline]
    pub(crate) const fn make(class: u32, section: usize, row: u32, index: usize) -> u32 {
        (class << 28) | (row << 22) | ((section as u32) << 16) | index as u32
    }

    /// The class of a context number.
    #[inline]
    pub(crate) const fn class(ctx: u32) -> u32 {
        ctx >> 28
    }

    /// The row kind of a context number (0 for tokens outside rows).
    #[inline]
    pub(crate) const fn row(ctx: u32) -> u32 {
        (ctx >> 22) & 0x3f
    }

    /// The index of a context number.
    #[inline]
    pub(crate) const fn index(ctx: u32) -> u32 {
        ctx & 0xffff
    }
}

/// Elements per mask group.
pub(crate) const GROUP: usize = 8;

/// Receives the decisions of a payload in wire order.
pub(crate) trait TokenSink {
    /// One binary decision.
    fn bit(&mut self, ctx: u32, bit: bool);
    /// One unsigned integer.
    fn uint(&mut self, ctx: u32, v: u64);
    /// The `n` (1..=64) group bits of one row's mask starting at group
    /// `first`: bit `k` of `bits` for group `first + k`. The same decisions
    /// as `n` calls of [`TokenSink::bit`].
    fn groups(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u64) {
        for k in 0..n {
            self.bit(
                ctx::make(ctx::MASK_GROUP, section, row, first + k),
                (bits >> k) & 1 == 1,
            );
        }
    }
    /// `n` (1..=64) membership bits of a bitmap-mode set (`which`: 0
    /// removed, 1 changed), bit `k` of `bits` first to last. The same
    /// decisions as `n` calls of [`TokenSink::bit`] in the set's
    /// [`ctx::SET_BIT`] context.
    fn set_bits(&mut self, section: usize, which: usize, n: usize, bits: u64) {
        for k in 0..n {
            self.bit(
                ctx::make(ctx::SET_BIT, section, 0, which),
                (bits >> k) & 1 == 1,
            );
        }
    }
    /// The `n` (1..=8) element bits of one mask group starting at element
    /// `first` (a multiple of 8): bit `k` of `bits` for element `first + k`.
    /// The same decisions as `n` calls of [`TokenSink::bit`].
    fn group(&mut self, section: usize, row: u32, first: usize, n: usize, bits: u8) {
        for k in 0..n {
            self.bit(
                ctx::make(ctx::MASK_ELEMENT, section, row, first + k),
                (bits >> k) & 1 == 1,
            );
        }
    }
    /// The element mask of a row of more than 8 and at most 64 elements,
    /// whose changed elements are `bits` (bit `e` for element `e`): the
    /// group bits, then each marked group's element bits, as
    /// [`TokenSink::groups`] and [`TokenSink::group`] take them.
    #[inline]
    fn row_mask(&mut self, section: usize, row: u32, elements: usize, bits: u64) {
        write_row_mask_by_tokens(self, section, row, elements, bits);
    }
    /// The non-empty changed set `members` of a section over its `kept`
    /// entities (the baseline's minus `removed`): as [`write_set`] writes
    /// it, except in a model stream whose table codes it as flags.
    #[inline]
    fn changed_set(&mut self, section: usize, kept: usize, removed: &[u32], members: &[u32]) {
        let _ = removed;
        write_set(self, section, 1, kept, members);
    }
    /// The kind bit (if any) and the value of changed element `element`
    /// of a row of kind `row`: the same decisions as [`TokenSink::bit`] in
    /// the element's [`ctx::KIND`] context, then [`TokenSink::uint`] in
    /// its [`ctx::VALUE`] context.
    #[inline]
    fn element(&mut self, section: usize, row: u32, element: usize, kind: Option<bool>, v: u64) {
        element_by_tokens(self, section, row, element, kind, v);
    }
}

/// [`TokenSink::element`] as single tokens: the kind bit (if any), then
/// the value, each under its walk context.
#[inline]
pub(crate) fn element_by_tokens<S: TokenSink + ?Sized>(
    sink: &mut S,
    section: usize,
    row: u32,
    element: usize,
    kind: Option<bool>,
    v: u64,
) {
    if let Some(bit) = kind {
        sink.bit(ctx::make(ctx::KIND, section, row, element), bit);
    }
    sink.uint(ctx::make(ctx::VALUE, section, row, element), v);
}

/// Gives back the decisions a [`TokenSink`] received, in the same order.
/// Every method fails with a typed error on malformed input.
pub(crate) trait TokenSource {
    /// One binary decision.
    fn bit(&mut self, ctx: u32) -> Result<bool, DecodeError>;
    /// One unsigned integer.
    fn uint(&mut self, ctx: u32) -> Result<u64, DecodeError>;
    /// The changed set, as [`TokenSink::changed_set`] gave it; `Err(())`
    /// when malformed ([`read_set`]).
    #[inline]
    fn changed_set(
        &mut self,
        section: usize,
        kept: usize,
        removed: &[u32],
        out: &mut Vec<u32>,
    ) -> Result<Result<(), ()>, DecodeError> {
        let _ = removed;
        read_set(self, section, 1, kept, out)
    }
    /// The group bits of one row's mask, as [`TokenSink::groups`] gave them.
    fn groups(
        &mut self,
        section: usize,
        row: u32,
        first: usize,
        n: usize,
    ) -> Result<u64, DecodeError> {
        let mut bits = 0u64;
        for k in 0..n {
            if self.bit(ctx::make(ctx::MASK_GROUP, section, row, first + k))? {
                bits |= 1 << k;
            }
        }
        Ok(bits)
    }
    /// Membership bits of a bitmap-mode set, as [`TokenSink::set_bits`]
    /// gave them.
    fn set_bits(&mut self, section: usize, which: usize, n: usize) -> Result<u64, DecodeError> {
        let mut bits = 0u64;
        for k in 0..n {
            if self.bit(ctx::make(ctx::SET_BIT, section, 0, which))? {
                bits |= 1 << k;
            }
        }
        Ok(bits)
    }
    /// The element bits of one mask group, as [`TokenSink::group`] gave them.
    fn group(
        &mut self,
        section: usize,
        row: u32,
        first: usize,
        n: usize,
    ) -> Result<u8, DecodeError> {
        let mut bits = 0u8;
        for k in 0..n {
            if self.bit(ctx::make(ctx::MASK_ELEMENT, section, row, first + k))? {
                bits |= 1 << k;
            }
        }
        Ok(bits)
    }
    /// [`read_mask_bits`]: the element mask of a row of at most 64
    /// elements, as bits.
    #[inline]
    fn row_mask(
        &mut self,
        section: usize,
        row: u32,
        elements: usize,
    ) -> Result<Result<u64, ()>, DecodeError> {
        read_mask_bits_by_tokens(self, section, row, elements)
    }
    /// Whether a row's float elements are read in the loop over its
    /// elements (else out of line), and its other values through
    /// [`TokenSource::float_value`] too: for sources where values are
    /// most of the work and that resolve their contexts per row.
    #[inline(always)]
    fn inline_floats(&self) -> bool {
        false
    }
    /// The kind bit (when `kind_bit`, else `false`) and the value of
    /// changed float element `element` of a row of kind `row`: the same
    /// decisions as [`TokenSource::bit`] in the element's [`ctx::KIND`]
    /// context, then [`TokenSource::uint`] in its [`ctx::VALUE`] context.
    #[inline]
    fn float_value(
        &mut self,
        section: usize,
        row: u32,
        element: usize,
        kind_bit: bool,
    ) -> Result<(bool, u64), DecodeError> {
        float_value_by_tokens(self, section, row, element, kind_bit)
    }
    /// The `n` bytes of a byte-plane section (section `section`). Only the
    /// byte layout has them; other sources refuse.
    fn raw(&mut self, section: usize, n: usize) -> Result<&[u8], DecodeError> {
        let _ = n;
        Err(DecodeError::BadEntitySet { section })
    }
}

/// [`TokenSource::float_value`] as single tokens: the kind bit (when
/// `kind_bit`), then the value, each under its walk context.
#[inline]
pub(crate) fn float_value_by_tokens<S: TokenSource + ?Sized>(
    src: &mut S,
    section: usize,
    row: u32,
    element: usize,
    kind_bit: bool,
) -> Result<(bool, u64), DecodeError> {
    let bit = kind_bit && src.bit(ctx::make(ctx::KIND, section, row, element))?;
    let v = src.uint(ctx::make(ctx::VALUE, section, row, element))?;
    Ok((bit, v))
}

/// One changed element of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    /// Element index in the record (array items count separately).
    pub(crate) element: u32,
    /// How the value is coded; [`Kind::bit`] says whether a kind bit is sent.
    pub(crate) kind: Kind,
    /// The value (see [`super::values`]).
    pub(crate) value: u64,
}

/// One section's share of a payload.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SectionTokens {
    /// Entities in the (predicted) baseline section: the universe of `removed`.
    pub(crate) base_len: usize,
    /// Indices into the baseline section of entities that are gone, ascending.
    pub(crate) removed: Vec<u32>,
    /// Indices into the kept entities (baseline minus removed, in id order)
    /// whose record changed, ascending.
    pub(crate) changed: Vec<u32>,
    /// Ids of entities not in the baseline, ascending.
    pub(crate) spawned: Vec<u32>,
    /// Whether the spawned rows are coded against the recall (section flag
    /// bit 3): then each spawned entity the recall holds is.
    pub(crate) recall: bool,
    /// Per spawned entity: whether its row is coded against its recalled
    /// record (else the default record). Filled by the encoder.
    pub(crate) recalled: Vec<bool>,
    /// With `recall`: the recall ranks (FORMAT.md 4.7's order) of the
    /// spawned entities the recall holds, ascending. The encoder fills it
    /// beside `spawned`; the decoder reads it and `spawned` holds only the
    /// other spawned ids until it resolves the ranks.
    pub(crate) ranks: Vec<u32>,
    /// Per row (changed rows, then spawned rows): the end of its elements
    /// in `elems`. Row `r` holds `elems[row_end[r - 1]..row_end[r]]`.
    pub(crate) row_end: Vec<u32>,
    /// The changed elements of every row, rows in order, ascending element
    /// index within a row.
    pub(crate) elems: Vec<Token>,
    /// Whether the rows travel as byte planes ([`super::planes`]) instead
    /// of masks and values (the byte layout only). `row_end` and `elems`
    /// still describe the rows, except in a section the encoder predicted
    /// as planes ([`super::hint`]): there every row is empty.
    pub(crate) planes: bool,
}

impl SectionTokens {
    /// Clears everything, keeping capacity.
    pub(crate) fn clear(&mut self) {
        self.base_len = 0;
        self.removed.clear();
        self.changed.clear();
        self.spawned.clear();
        self.recall = false;
        self.recalled.clear();
        self.ranks.clear();
        self.row_end.clear();
        self.elems.clear();
        self.planes = false;
    }

    /// Kept entities: baseline minus removed.
    pub(crate) fn kept(&self) -> usize {
        self.base_len - self.removed.len()
    }

    /// Whether the section has nothing to say (no removal, change or spawn).
    pub(crate) fn is_idle(&self) -> bool {
        self.removed.is_empty() && self.changed.is_empty() && self.spawned.is_empty()
    }

    /// The row kind of row `r` (a [`ctx`] row kind).
    pub(crate) fn row_kind(&self, r: usize) -> u32 {
        match r.checked_sub(self.changed.len()) {
            None => ctx::CHANGED,
            Some(j) if self.recalled.get(j) == Some(&true) => ctx::RECALLED,
            Some(_) => ctx::SPAWNED,
        }
    }

    /// The changed elements of row `r`.
    pub(crate) fn row(&self, r: usize) -> &[Token] {
        let start = if r == 0 {
            0
        } else {
            self.row_end[r - 1] as usize
        };
        &self.elems[start..self.row_end[r] as usize]
    }
}

/// Section flag bit 4: the section's rows are byte planes.
pub(crate) const FLAG_PLANES: u64 = 16;

/// Walks one section's entity sets into `sink`; `planes`: flag the rows as
/// byte planes (only when `t` has rows).
pub(crate) fn write_meta(
    sink: &mut impl TokenSink,
    section: usize,
    t: &SectionTokens,
    planes: bool,
) {
    let flags = u64::from(!t.removed.is_empty())
        | u64::from(!t.changed.is_empty()) << 1
        | u64::from(!t.spawned.is_empty()) << 2
        | u64::from(t.recall) << 3
        | if planes { FLAG_PLANES } else { 0 };
    sink.uint(ctx::make(ctx::SECTION, section, 0, 0), flags);
    if !t.removed.is_empty() {
        write_set(sink, section, 0, t.base_len, &t.removed);
    }
    if !t.changed.is_empty() {
        sink.changed_set(section, t.kept(), &t.removed, &t.changed);
    }
    if !t.spawned.is_empty() {
        let n = t.spawned.len() as u64;
        if t.recall {
            // The count and whether any spawned entity is not recalled,
            // then (if so) how many are; the recalled ones by their ranks
            // in the recall, ascending; then the others by id (FORMAT.md
            // 4.1).
            let some_fresh = t.ranks.len() as u64 != n;
            sink.uint(
                ctx::make(ctx::SPAWN_COUNT, section, 0, 0),
                (n - 1) << 1 | u64::from(some_fresh),
            );
            if some_fresh {
                sink.uint(
                    ctx::make(ctx::SPAWN_COUNT, section, 0, 1),
                    t.ranks.len() as u64 - 1,
                );
            }
            let mut next = 0u32;
            for &r in &t.ranks {
                sink.uint(
                    ctx::make(ctx::SPAWN_GAP, section, 0, 1),
                    u64::from(r - next),
                );
                next = r.wrapping_add(1);
            }
        } else {
            sink.uint(ctx::make(ctx::SPAWN_COUNT, section, 0, 0), n - 1);
        }
        let mut next = 0u32;
        let fresh = t
            .spawned
            .iter()
            .enumerate()
            .filter(|&(j, _)| !(t.recall && t.recalled.get(j) == Some(&true)));
        for (_, &id) in fresh {
            sink.uint(
                ctx::make(ctx::SPAWN_GAP, section, 0, 0),
                u64::from(id - next),
            );
            next = id.wrapping_add(1);
        }
    }
}

/// A decoded snapshot's size so far, its limit, and the cost of one entity
/// of the section being read (record size + 4 id bytes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SnapshotBudget {
    pub(crate) used: usize,
    pub(crate) limit: usize,
    pub(crate) per_entity: usize,
}

/// Reads one section's entity sets into `t` (its `base_len` set by the
/// caller), refusing more than `max_entities` entities in the section, and
/// a snapshot past `budget` before the spawned ids are read. `planes_ok`:
/// whether the byte-plane flag may be set (the byte layout).
pub(crate) fn read_meta(
    src: &mut impl TokenSource,
    section: usize,
    max_entities: usize,
    budget: SnapshotBudget,
    planes_ok: bool,
    t: &mut SectionTokens,
) -> Result<(), DecodeError> {
    let bad = DecodeError::BadEntitySet { section };
    let mut flags = src.uint(ctx::make(ctx::SECTION, section, 0, 0))?;
    t.planes = false;
    if planes_ok && flags & FLAG_PLANES != 0 {
        // Planes need rows (changed or spawned entities), and go without
        // the recall.
        if flags & 6 == 0 || flags & 8 != 0 {
            return Err(bad);
        }
        t.planes = true;
        flags &= !FLAG_PLANES;
    }
    // A set can only be non-empty over a non-empty universe; the recall
    // bit only with spawned entities.
    if flags > 15 || (flags & 1 != 0 && t.base_len == 0) || flags & 12 == 8 {
        return Err(bad);
    }
    t.recall = flags & 8 != 0;
    t.removed.clear();
    if flags & 1 != 0 {
        read_set(src, section, 0, t.base_len, &mut t.removed)?.map_err(|()| bad.clone())?;
    }
    let kept = t.kept();
    // A baseline the caller holds may itself be over the limit: what is
    // kept of it counts too.
    if kept > max_entities {
        return Err(DecodeError::TooManyEntities {
            section,
            count: kept,
            limit: max_entities,
        });
    }
    t.changed.clear();
    if flags & 2 != 0 {
        if kept == 0 {
            return Err(bad);
        }
        let mut changed = core::mem::take(&mut t.changed);
        let read = src.changed_set(section, kept, &t.removed, &mut changed);
        t.changed = changed;
        read?.map_err(|()| bad.clone())?;
    }
    t.spawned.clear();
    if flags & 4 == 0 {
        return Ok(());
    }
    // With the recall, bit 0 says whether some spawned entity is not
    // recalled (FORMAT.md 4.1).
    let count = src.uint(ctx::make(ctx::SPAWN_COUNT, section, 0, 0))?;
    let (n, some_fresh) = if t.recall {
        ((count >> 1) + 1, count & 1 == 1)
    } else {
        (count.saturating_add(1), false)
    };
    let room = max_entities - kept;
    if n > room as u64 {
        return Err(DecodeError::TooManyEntities {
            section,
            count: kept.saturating_add(usize::try_from(n).unwrap_or(usize::MAX)),
            limit: max_entities,
        });
    }
    let bytes = budget
        .used
        .saturating_add((kept + n as usize).saturating_mul(budget.per_entity));
    if bytes > budget.limit {
        return Err(DecodeError::SnapshotTooLarge {
            bytes,
            limit: budget.limit,
        });
    }
    // With the recall, the first `r` spawned are ranks in it (resolved by
    // the caller, which holds the recall), the others ids.
    let mut fresh = n;
    if t.recall {
        let r = if some_fresh {
            src.uint(ctx::make(ctx::SPAWN_COUNT, section, 0, 1))?
                .saturating_add(1)
        } else {
            n
        };
        if r > n || (some_fresh && r == n) {
            return Err(bad);
        }
        fresh = n - r;
        t.ranks.clear();
        let at = ctx::make(ctx::SPAWN_GAP, section, 0, 1);
        read_ascending(src, at, r, &bad, &mut t.ranks)?;
    }
    let at = ctx::make(ctx::SPAWN_GAP, section, 0, 0);
    read_ascending(
        src,
        at,
        fresh,
        &DecodeError::IdOverflow { section },
        &mut t.spawned,
    )
}

/// Reads `count` ascending values, sent as the first and then each one's
/// gap to the previous less one (walk context `at`), into `out`; a value
/// past `u32::MAX` is `past`. The caller bounds `count` by the limits.
fn read_ascending(
    src: &mut impl TokenSource,
    at: u32,
    count: u64,
    past: &DecodeError,
    out: &mut Vec<u32>,
) -> Result<(), DecodeError> {
    let mut next = 0u64;
    for _ in 0..count {
        let v = next + src.uint(at)?.min(1 << 33);
        if v > u64::from(u32::MAX) {
            return Err(past.clone());
        }
        out.push(v as u32);
        next = v + 1;
    }
    Ok(())
}

/// Resolves a section's recall ranks ([`SectionTokens::ranks`], read by
/// [`read_meta`]) against the baseline's recall into spawned ids, merged
/// with the other spawned ids in id order. A rank past the recall, or an id
/// sent as such that the recall holds (it has one spelling: its rank), is
/// `BadEntitySet`.
pub(crate) fn resolve_ranks(
    section: usize,
    recall: &crate::recall::Recall,
    scratch: &mut Vec<u64>,
    ids: &mut Vec<u32>,
    t: &mut SectionTokens,
) -> Result<(), DecodeError> {
    let bad = DecodeError::BadEntitySet { section };
    if t.spawned
        .iter()
        .any(|&id| recall.get(section, id).is_some())
    {
        return Err(bad);
    }
    ids.clear();
    if !recall.ids_at_ranks(section, &t.ranks, scratch, ids) {
        return Err(bad);
    }
    // Not in the recall and in it: never the same id.
    ids.extend_from_slice(&t.spawned);
    ids.sort_unstable();
    core::mem::swap(ids, &mut t.spawned);
    Ok(())
}

/// Walks the rows of one section into `sink`; `elements` is the entity
/// type's element count.
pub(crate) fn write_rows(
    sink: &mut impl TokenSink,
    section: usize,
    elements: usize,
    t: &SectionTokens,
) {
    let groups = elements.div_ceil(GROUP);
    let mut start = 0;
    for (r, &end) in t.row_end.iter().enumerate() {
        let spawned = t.row_kind(r);
        // `t.row(r)`, its start carried from the row before.
        let row = &t.elems[start..end as usize];
        start = end as usize;
        if groups == 1 {
            // One group, always sent (a spawned row may change nothing).
            let bits = row.iter().fold(0u8, |b, t| b | 1 << t.element);
            sink.group(section, spawned, 0, elements, bits);
        } else if elements <= 64 {
            // The row's elements as bits (bit `e` for element `e`).
            let bits = row.iter().fold(0u64, |b, t| b | 1 << (t.element & 63));
            sink.row_mask(section, spawned, elements, bits);
        } else if groups <= 64 {
            // One pass over the row: the marked groups and their element
            // bits; then the group bits and the marked groups in order.
            let (mut marked, mut element_bits) = (0u64, [0u8; 64]);
            for tok in row {
                let e = tok.element as usize;
                if let Some(b) = element_bits.get_mut(e / GROUP) {
                    *b |= 1 << (e % GROUP);
                    marked |= 1 << (e / GROUP);
                }
            }
            sink.groups(section, spawned, 0, groups, marked);
            while marked != 0 {
                let g = marked.trailing_zeros() as usize;
                marked &= marked - 1;
                let first = g * GROUP;
                sink.group(
                    section,
                    spawned,
                    first,
                    (elements - first).min(GROUP),
                    element_bits[g],
                );
            }
        } else {
            write_mask(sink, section, spawned, elements, row);
        }
        for tok in row {
            sink.element(
                section,
                spawned,
                tok.element as usize,
                tok.kind.bit(),
                tok.value,
            );
        }
    }
}

/// The marked groups of a row whose elements are `bits` (bit `e` for
/// element `e`): byte `g` is group `g`, marked when it is not zero (each
/// byte's bits folded into its lowest, those gathered into the top byte
/// of a product).
#[inline]
pub(crate) fn marked_groups(bits: u64) -> u64 {
    let mut any = bits | bits >> 4;
    any |= any >> 2;
    any |= any >> 1;
    (any & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// [`TokenSink::row_mask`] through [`TokenSink::groups`] and
/// [`TokenSink::group`].
#[inline]
pub(crate) fn write_row_mask_by_tokens<S: TokenSink + ?Sized>(
    sink: &mut S,
    section: usize,
    row: u32,
    elements: usize,
    bits: u64,
) {
    let groups = elements.div_ceil(GROUP);
    let mut marked = marked_groups(bits);
    sink.groups(section, row, 0, groups, marked);
    while marked != 0 {
        let g = marked.trailing_zeros() as usize;
        marked &= marked - 1;
        let first = g * GROUP;
        sink.group(
            section,
            row,
            first,
            (elements - first).min(GROUP),
            (bits >> first) as u8,
        );
    }
}

/// Writes the element mask of one row of a type with more than 64 mask
/// groups: its group bits 64 at a time, then the marked groups' element
/// bits in order.
pub(super) fn write_mask(
    sink: &mut impl TokenSink,
    section: usize,
    spawned: u32,
    elements: usize,
    row: &[Token],
) {
    let groups = elements.div_ceil(GROUP);
    let mut it = row.iter().peekable();
    let mut first = 0;
    while first < groups {
        let n = (groups - first).min(64);
        let mut bits = 0u64;
        while let Some(tok) = it.peek() {
            let g = tok.element as usize / GROUP;
            if g >= first + n {
                break;
            }
            bits |= 1 << (g - first);
            it.next();
        }
        sink.groups(section, spawned, first, n, bits);
        first += n;
    }
    // The row's elements are ascending.
    let mut i = 0;
    while let Some(t) = row.get(i) {
        let first = t.element as usize / GROUP * GROUP;
        let end = (first + GROUP).min(elements);
        let mut bits = 0u8;
        while let Some(t) = row.get(i).filter(|t| (t.element as usize) < end) {
            bits |= 1 << (t.element as usize - first);
            i += 1;
        }
        sink.group(section, spawned, first, end - first, bits);
    }
}

/// Reads one row's element mask into `changed` (element indices,
/// ascending); `Err(())` when a group is marked but empty. An empty mask
/// is returned as it is: whether the row may change nothing is the
/// caller's rule (FORMAT.md 4.3 and 4.9).
pub(crate) fn read_mask(
    src: &mut impl TokenSource,
    section: usize,
    row: u32,
    elements: usize,
    groups_scratch: &mut Vec<bool>,
    changed: &mut Vec<u32>,
) -> Result<Result<(), ()>, DecodeError> {
    let groups = elements.div_ceil(GROUP);
    changed.clear();
    groups_scratch.clear();
    if groups <= 1 {
        if read_group(src, section, row, elements, 0, changed)?.is_err() {
            return Ok(Err(()));
        }
    } else if groups <= 64 {
        // The marked groups' element bits, group by group: each marked
        // group changes something.
        let mut marked = src.groups(section, row, 0, groups)?;
        while marked != 0 {
            let first = marked.trailing_zeros() as usize * GROUP;
            marked &= marked - 1;
            let mut bits = src.group(section, row, first, (elements - first).min(GROUP))?;
            if bits == 0 {
                return Ok(Err(()));
            }
            while bits != 0 {
                changed.push((first + bits.trailing_zeros() as usize) as u32);
                bits &= bits - 1;
            }
        }
    } else {
        let mut first = 0;
        while first < groups {
            let n = (groups - first).min(64);
            let bits = src.groups(section, row, first, n)?;
            groups_scratch.extend((0..n).map(|k| (bits >> k) & 1 == 1));
            first += n;
        }
        for (g, &marked) in groups_scratch.iter().enumerate() {
            if marked && read_group(src, section, row, elements, g, changed)?.is_err() {
                return Ok(Err(()));
            }
        }
    }
    Ok(Ok(()))
}

/// [`read_mask`] of a row of at most 64 elements: the changed elements as
/// bits (bit `e` for element `e`), read with the same decisions in the same
/// order; `Err(())` where `read_mask` gives it.
#[inline]
pub(crate) fn read_mask_bits(
    src: &mut impl TokenSource,
    section: usize,
    row: u32,
    elements: usize,
) -> Result<Result<u64, ()>, DecodeError> {
    src.row_mask(section, row, elements)
}

/// [`read_mask_bits`] through [`TokenSource::groups`] and
/// [`TokenSource::group`].
#[inline]
pub(crate) fn read_mask_bits_by_tokens<S: TokenSource + ?Sized>(
    src: &mut S,
    section: usize,
    row: u32,
    elements: usize,
) -> Result<Result<u64, ()>, DecodeError> {
    debug_assert!(elements <= 64);
    let groups = elements.div_ceil(GROUP);
    let mut changed = 0u64;
    if groups <= 1 {
        changed = u64::from(src.group(section, row, 0, elements)?);
    } else {
        // The marked groups' element bits, group by group: each marked
        // group changes something.
        let mut marked = src.groups(section, row, 0, groups)?;
        while marked != 0 {
            let first = marked.trailing_zeros() as usize * GROUP;
            marked &= marked - 1;
            let bits = src.group(section, row, first, (elements - first).min(GROUP))?;
            if bits == 0 {
                return Ok(Err(()));
            }
            changed |= u64::from(bits) << first;
        }
    }
    Ok(Ok(changed))
}

/// Reads the element bits of mask group `g` of a row of `elements`
/// elements into `changed`; `Err(())` when the group is marked (it is when
/// it is read, except the single group of a row) but empty.
fn read_group(
    src: &mut impl TokenSource,
    section: usize,
    row: u32,
    elements: usize,
    g: usize,
    changed: &mut Vec<u32>,
) -> Result<Result<(), ()>, DecodeError> {
    let (first, end) = (g * GROUP, ((g + 1) * GROUP).min(elements));
    let before = changed.len();
    let mut bits = src.group(section, row, first, end - first)?;
    while bits != 0 {
        changed.push((first + bits.trailing_zeros() as usize) as u32);
        bits &= bits - 1;
    }
    // A marked group changes something, except the implied single group
    // of a row (whose emptiness the caller judges: a spawned row may equal
    // its reference, a changed row must not end up equal to its baseline).
    let single = elements.div_ceil(GROUP) <= 1;
    if changed.len() == before && !single {
        return Ok(Err(()));
    }
    Ok(Ok(()))
}
