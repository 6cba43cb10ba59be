//! The transforms between a section and its share of the payload:
//!
//! 1. [`align`]: match entities with the baseline by id (removed, changed,
//!    spawned).
//! 2. [`values`]: each changed record against its baseline record, each
//!    spawned record against its recalled record ([`crate::Recall`]) or
//!    else the type's default record (all zeros unless the schema sets
//!    one), element by element: which elements changed, and each changed
//!    element's kind and value.
//! 3. [`tokens`]: all of that as one [`SectionTokens`] per section, walked
//!    in wire order into a [`TokenSink`] (and read back from a
//!    [`TokenSource`] by [`decode_section`]).
//! 4. [`layout`]: the zstd path's sink and source, which write the walk as
//!    bytes (the source in [`byte_source`]).
//! 5. [`planes`]: the byte layout's other row mode, chosen per section per
//!    packet ([`choose_planes`]): whole-record deltas as byte planes.
//! 6. [`integrate`]: the prediction of integrated fields, which a changed
//!    row's integrated elements are coded against.
//!
//! The encoder's side is here; the decoder's (`decode`) rebuilds a section
//! row by row.

pub(crate) mod align;
mod byte_source;
#[cfg(target_arch = "x86_64")]
mod count_sse2;
mod decode;
mod decode_planes;
mod hint;
pub(crate) mod integrate;
pub(crate) mod layout;
#[cfg(test)]
mod mask_tests;
pub(crate) mod planes;
#[cfg(target_arch = "x86_64")]
mod planes_apply_sse2;
#[cfg(target_arch = "x86_64")]
mod planes_delta_sse2;
pub(crate) mod predict;
#[cfg(target_arch = "x86_64")]
mod predict_sse2;
mod record_apply;
#[cfg(target_arch = "x86_64")]
mod record_apply_sse2;
mod record_delta;
#[cfg(target_arch = "x86_64")]
mod record_delta_sse2;
mod sets;
#[cfg(target_arch = "x86_64")]
mod sse2;
pub(crate) mod tokens;
mod transpose;
#[cfg(target_arch = "x86_64")]
mod transpose_sse2;
mod unit;
pub(crate) mod values;
#[cfg(target_arch = "x86_64")]
mod zigzag_sse2;

use crate::schema::{DeltaOp, EntityType};
use crate::snapshot::{Section, SectionRef};
pub(crate) use decode::{decode_section, DecodeScratch};
pub(crate) use tokens::{SectionTokens, Token, TokenSource};
use values::Element;

/// Writes into `out` the baseline section as predicted from `b0` and the
/// older prior `b1` at equal distances: every entity of `b0`, with its
/// [`DeltaOp::Predict`] fields replaced by `2·b0 − b1` when the entity is
/// also in `b1` ([`predict::predict_spaced`] scales by other distances).
/// Changed rows code their values against it; whether they changed is
/// judged against `b0`.
///
/// [`DeltaOp::Predict`]: crate::DeltaOp::Predict
pub(crate) fn predict_section(
    ty: &EntityType,
    b0: &SectionRef<'_>,
    b1: &SectionRef<'_>,
    out: &mut Section,
) {
    let rs = ty.record_size();
    out.clear_for(rs);
    let (ids, records) = out.parts_mut();
    ids.extend_from_slice(b0.ids());
    records.extend_from_slice(b0.records());
    // A type with one predicted span (adjacent predicted fields of one
    // width form one) predicts it directly.
    let mut predicted = ty.spans().iter().filter(|s| s.op == DeltaOp::Predict);
    let single = match (predicted.next(), predicted.next()) {
        (Some(s), None) => Some(s),
        _ => None,
    };
    let (b1_ids, b1_records) = (b1.ids(), b1.records());
    // The span's width is matched once, not per record.
    let b0_ids = b0.ids();
    match single {
        Some(s) => {
            let r = s.offset..s.offset + s.len;
            let lanes = match s.width {
                1 => predict::lanes_u8,
                2 => predict::lanes_u16,
                4 => predict::lanes_u32,
                _ => predict::lanes_u64,
            };
            predict_matched(b0_ids, b1_ids, b1_records, records, rs, |b1_rec, rec| {
                lanes(&b1_rec[r.clone()], &mut rec[r.clone()]);
            });
        }
        None => predict_matched(b0_ids, b1_ids, b1_records, records, rs, |b1_rec, rec| {
            predict::predict(ty.spans(), b1_rec, rec)
        }),
    }
}

/// Runs `f(b1 record, record)` on each record of `records` (of the ids
/// `ids`, `rs` bytes each) whose id `b1_ids` also has.
#[inline(always)]
fn predict_matched(
    ids: &[u32],
    b1_ids: &[u32],
    b1_records: &[u8],
    records: &mut [u8],
    rs: usize,
    f: impl Fn(&[u8], &mut [u8]),
) {
    let mut j = 0;
    for (&id, rec) in ids.iter().zip(records.chunks_exact_mut(rs.max(1))) {
        while b1_ids.get(j).is_some_and(|&b| b < id) {
            j += 1;
        }
        if b1_ids.get(j) == Some(&id) {
            if let Some(b1_rec) = b1_records.get(j * rs..(j + 1) * rs) {
                f(b1_rec, rec);
            }
        }
    }
}

impl EncodeScratch {
    /// The section's alignment with what [`encode_section`] was given as
    /// its baseline.
    pub(crate) fn alignment(&self) -> &align::Alignment {
        &self.align
    }
}

/// Encoder scratch for one section, reused between packets.
#[derive(Debug, Default)]
pub(crate) struct EncodeScratch {
    /// The packet's tick distance from its baseline (integrated fields
    /// over ticks, FORMAT.md 4.9); set by the encoder before each packet.
    pub(crate) ticks: u16,
    align: align::Alignment,
    /// A spawned entity's recalled record.
    reference: Vec<u8>,
    /// The section's tokens for the packet being built.
    pub(crate) tokens: SectionTokens,
    /// Row deltas of the byte-plane mode, one record each (unless
    /// `direct`).
    rows: Vec<u8>,
    /// [`row_deltas`] wrote the rows straight into `planes` (every record
    /// byte in exactly one plane), leaving `rows` stale.
    direct: bool,
    /// [`encode_section`] left the byte-plane rows to [`build_rows`]: until
    /// they are built, [`settle_planes`] keeps masks and values.
    rows_deferred: bool,
    /// The section's rows as byte planes (when it has rows).
    pub(crate) planes: Vec<u8>,
    /// Where each record byte's plane starts ([`planes::split`]).
    starts: Vec<usize>,
    /// The row mode the estimate chose ([`choose_planes`]).
    pub(crate) mode: RowMode,
    /// The rows are built but the estimate has not run yet
    /// ([`settle_planes`]); until it does, the mode is `Tokens`.
    pub(crate) pending: bool,
    /// The payload bytes of the section's rows as the estimate left them:
    /// the planes when it chose them, else masks and values (0 before it
    /// ran).
    pub(crate) row_bytes: usize,
    /// What the section's last full estimate found ([`hint::PlanesHint`]).
    hint: Option<hint::PlanesHint>,
    /// Settled as byte planes by the middle estimate before the payload
    /// size that lets the encoder take it is known: the encoder confirms
    /// it, or has the section coded in full ([`complete_section`]).
    pub(crate) tentative: bool,
    /// The non-zero bytes of `rows` and the zero runs of `planes`, when a
    /// prediction counted them and left the section to the full estimate.
    counted: Option<(usize, usize)>,
    /// The spans and record size [`EncodeScratch::plan`] was built for,
    /// and the section's [`record_delta::DeltaPlan`] (`None` when its
    /// layout has none) with whether rows in memory take it: when it has
    /// no tail lanes and pays ([`record_delta::DeltaPlan::pays`]); rows
    /// written straight into the planes always take it.
    plan: Option<PlanFor>,
}

/// The spans and record size of [`EncodeScratch::plan`], the section's
/// [`record_delta::DeltaPlan`] and whether rows in memory take it.
type PlanFor = (
    Vec<crate::schema::Span>,
    usize,
    Option<(record_delta::DeltaPlan, bool)>,
);

/// Appends to `t` one row: the elements of `cur` that differ from `reference`.
/// The elements tile the record in order: a wide record (where a row
/// typically changes few of its elements) is compared sixteen bytes at a
/// time and only the elements of differing words are looked at; a narrow
/// one element by element.
#[inline]
fn encode_row(elements: &[Element], cur: &[u8], reference: &[u8], t: &mut SectionTokens) {
    let mut push = |i: usize, e: Element| {
        if let Some((kind, value)) = values::encode_changed(e, cur, reference) {
            t.elems.push(Token {
                element: i as u32,
                kind,
                value,
            });
        }
    };
    let len = cur.len().min(reference.len());
    if len < WIDE_RECORD {
        for (i, &e) in elements.iter().enumerate() {
            push(i, e);
        }
    } else {
        let (mut at, mut i) = (0usize, 0usize);
        while at < len && i < elements.len() {
            let end = (at + 16).min(len);
            if word(cur, at, end) == word(reference, at, end) {
                at = end;
                continue;
            }
            // Elements ending before `at` lie in equal words; those starting
            // before `end` are compared whole.
            let mut reach = end;
            while let Some(&e) = elements.get(i) {
                let (o, w) = (usize::from(e.offset), usize::from(e.width));
                if o >= end {
                    break;
                }
                if o + w > at {
                    push(i, e);
                }
                reach = reach.max(o + w);
                i += 1;
            }
            at = reach;
        }
    }
    t.row_end.push(t.elems.len() as u32);
}

/// Records from this size on are compared word by word in [`encode_row`].
const WIDE_RECORD: usize = 128;

/// Bytes `at..end` (at most sixteen) of `record` as an integer.
#[inline]
fn word(record: &[u8], at: usize, end: usize) -> u128 {
    match record.get(at..at + 16) {
        Some(w) if end == at + 16 => {
            let mut b = [0u8; 16];
            b.copy_from_slice(w);
            u128::from_le_bytes(b)
        }
        _ => {
            let mut w = [0u8; 16];
            let tail = record.get(at..end).unwrap_or_default();
            w[..tail.len()].copy_from_slice(tail);
            u128::from_le_bytes(w)
        }
    }
}

/// Fills `s.tokens` with the section `cur` coded against `base`, and
/// decides its row mode ([`choose_planes`]; `order` is the section's plane
/// order, [`planes::order`]). A spawned entity is coded against the record
/// `recalled(id, out)` writes into `out` when it returns `true`, else
/// against the default record; a section coded against the recall always
/// sends masks and values. `defer_planes`: build the byte-plane rows but
/// leave the estimate to [`settle_planes`]. `predict`: `Some` when the
/// caller sends no recall, settles now and has room for byte planes
/// whatever the rows are; then a section whose recent packets went as
/// byte planes may go so again without its rows coded as masks and values
/// ([`hint::PlanesHint`]). It holds the payload size above which the caller
/// resolves [`RowMode::Either`] by the middle estimate (`usize::MAX` when
/// it always compresses both).
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_section<E>(
    ty: &EntityType,
    elements: &[Element],
    order: &[u16],
    base: &SectionRef<'_>,
    pred: Option<&SectionRef<'_>>,
    cur: &SectionRef<'_>,
    recalled: impl FnMut(u32, &mut [u8]) -> Result<bool, E>,
    defer_planes: bool,
    predict: Option<usize>,
    s: &mut EncodeScratch,
) -> Result<(), E> {
    // Entities change or not against the baseline; the rows of a
    // predicted section (`pred`, same ids) code values against it.
    align::align(base, cur, &mut s.align);
    let (base, baseline) = match pred {
        Some(p) => (p, Some(base)),
        None => (base, None),
    };
    let (a, t) = (&s.align, &mut s.tokens);
    t.clear();
    t.base_len = base.len();
    t.removed.extend_from_slice(&a.removed);
    t.changed.extend_from_slice(&a.changed);
    t.spawned
        .extend(a.spawned.iter().map(|&j| cur.ids()[j as usize]));
    s.planes.clear();
    s.direct = false;
    s.rows_deferred = false;
    s.mode = RowMode::Tokens;
    s.pending = false;
    s.tentative = false;
    s.row_bytes = 0;
    s.counted = None;
    let n = a.changed_rows.len() + a.spawned.len();
    if let Some(middle_above) = predict.filter(|_| !defer_planes && n >= EARLY_STOP_ROWS) {
        if hint::predict_planes(ty, order, base, cur, middle_above, s) {
            return Ok(());
        }
    }
    code_rows(ty, elements, base, baseline, cur, recalled, s)?;
    let t = &s.tokens;
    if n == 0 || t.recall {
        s.hint = None;
        return Ok(());
    }
    // A prediction that was not clear built the rows already. A deferred
    // estimate may never run (a model stream takes the packet): its rows
    // wait for `build_rows`.
    if !s.pending {
        if defer_planes {
            s.rows_deferred = true;
        } else {
            row_deltas(ty, order, base, cur, s);
        }
    }
    s.pending = true;
    if !defer_planes {
        settle_planes(elements.len(), order, ty.record_size(), s);
    }
    Ok(())
}

/// Builds the byte-plane rows [`encode_section`] deferred, against the
/// same `base` and `cur`, so that the estimate can weigh them.
pub(crate) fn build_rows(
    ty: &EntityType,
    order: &[u16],
    base: &SectionRef<'_>,
    cur: &SectionRef<'_>,
    s: &mut EncodeScratch,
) {
    if core::mem::take(&mut s.rows_deferred) {
        row_deltas(ty, order, base, cur, s);
    }
}

/// Codes a [`EncodeScratch::tentative`] section's rows as masks and values
/// after all, and runs the full estimate on them (its rows and planes are
/// built). `base` is the predicted section when `baseline` is `Some`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn complete_section(
    ty: &EntityType,
    elements: &[Element],
    order: &[u16],
    base: &SectionRef<'_>,
    baseline: Option<&SectionRef<'_>>,
    cur: &SectionRef<'_>,
    s: &mut EncodeScratch,
) {
    let t = &mut s.tokens;
    t.recalled.clear();
    t.row_end.clear();
    t.planes = false;
    s.tentative = false;
    s.mode = RowMode::Tokens;
    // A section predicted without a recall codes none.
    let no_recall = |_: u32, _: &mut [u8]| Ok::<bool, core::convert::Infallible>(false);
    if code_rows(ty, elements, base, baseline, cur, no_recall, s).is_ok() {
        s.pending = true;
        settle_planes(elements.len(), order, ty.record_size(), s);
    }
}

/// Appends to `s.tokens` the section's rows as masks and values: changed
/// rows against their baseline record (integrated elements against their
/// prediction), spawned rows against their recalled record when
/// `recalled` gives one, else the type's default record. With `baseline`
/// (a predicted section: `base` is the prediction) a changed row's mask
/// is judged against the baseline record, its values against `base`.
fn code_rows<E>(
    ty: &EntityType,
    elements: &[Element],
    base: &SectionRef<'_>,
    baseline: Option<&SectionRef<'_>>,
    cur: &SectionRef<'_>,
    mut recalled: impl FnMut(u32, &mut [u8]) -> Result<bool, E>,
    s: &mut EncodeScratch,
) -> Result<(), E> {
    let (a, t) = (&s.align, &mut s.tokens);
    let integrators = ty.integrators();
    let units = ty.unit_fields();
    for &(ci, bi) in &a.changed_rows {
        let (c, b) = (cur.record(ci as usize), base.record(bi as usize));
        if !units.is_empty() {
            // The mask against the baseline record, the implied elements'
            // values against their implied values (FORMAT.md 4.10).
            let b0 = baseline.map_or(b, |b0| b0.record(bi as usize));
            let start = t.elems.len();
            predict::encode_row(elements, c, b0, b, t);
            let row = &mut t.elems[start..];
            for u in units {
                // A row's tokens are in element order.
                if let Ok(k) = row.binary_search_by_key(&u.element, |tok| tok.element) {
                    // `None` only past a record, and records have the
                    // schema's size (checked before the pipeline).
                    row[k].value = unit::encode_value(u, c, b0).unwrap_or(row[k].value);
                }
            }
        } else if let Some(b0) = baseline {
            predict::encode_row(elements, c, b0.record(bi as usize), b, t);
        } else if integrators.is_empty() {
            encode_row(elements, c, b, t);
        } else {
            // Integrated elements are coded against their prediction, and
            // after the row's other values (FORMAT.md 4.9).
            s.reference.resize(b.len(), 0);
            integrate::reference(integrators, b, c, s.ticks, &mut s.reference);
            let start = t.elems.len();
            encode_row(elements, c, &s.reference, t);
            integrate::values_last(integrators, &mut t.elems[start..]);
        }
    }
    s.reference.resize(ty.record_size(), 0);
    for &j in &a.spawned {
        let id = cur.ids()[j as usize];
        let recall = recalled(id, &mut s.reference)?;
        t.recalled.push(recall);
        t.recall |= recall;
        let reference = if recall {
            &s.reference[..]
        } else {
            ty.default_record()
        };
        encode_row(elements, cur.record(j as usize), reference, t);
    }
    Ok(())
}

/// Writes into `s.rows` the section's rows as byte-plane row deltas:
/// changed rows against their baseline record, spawned rows against the
/// spawned record before them. On x86_64 a section of at least
/// [`EARLY_STOP_ROWS`] rows whose layout has a [`record_delta::DeltaPlan`]
/// and whose `order` gives every record byte one plane has its rows
/// written straight into `s.planes` instead ([`EncodeScratch::direct`]).
pub(super) fn row_deltas(
    ty: &EntityType,
    order: &[u16],
    base: &SectionRef<'_>,
    cur: &SectionRef<'_>,
    s: &mut EncodeScratch,
) {
    let rs = ty.record_size();
    let spans = ty.spans();
    if !matches!(&s.plan, Some((p, r, _)) if p == spans && *r == rs) {
        let plan = record_delta::DeltaPlan::with_tail(spans, rs).map(|p| {
            let pays = p.pays(spans) && p.tail().is_empty();
            (p, pays)
        });
        s.plan = Some((spans.to_vec(), rs, plan));
    }
    s.direct = false;
    #[cfg(target_arch = "x86_64")]
    if direct_planes(ty, order, base, cur, s) {
        s.direct = true;
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = order;
    let a = &s.align;
    // The spans tile the record (records have no padding): every byte is
    // written below, so the buffer is not cleared first.
    s.rows
        .resize((a.changed_rows.len() + a.spawned.len()) * rs, 0);
    let (changed, spawned) = s.rows.split_at_mut(a.changed_rows.len() * rs);
    match s.plan.as_ref().and_then(|p| p.2.as_ref()) {
        Some((plan, true)) => {
            plan.delta_rows(cur.records(), base.records(), &a.changed_rows, changed)
        }
        _ => planes::delta_rows(
            spans,
            rs,
            cur.records(),
            base.records(),
            &a.changed_rows,
            changed,
        ),
    }
    let mut rows = spawned.chunks_exact_mut(rs);
    let mut prev = ty.default_record();
    for (&j, row) in a.spawned.iter().zip(&mut rows) {
        let rec = cur.record(j as usize);
        planes::row_delta(ty.spans(), rec, prev, row);
        prev = rec;
    }
}

/// The rows of [`row_deltas`] written straight into `s.planes` (in
/// `order`) by the section's [`record_delta::DeltaPlan`], when the
/// section has one, at least [`EARLY_STOP_ROWS`] rows and `order` gives
/// every record byte exactly one plane; otherwise `false` with the planes
/// empty.
#[cfg(target_arch = "x86_64")]
fn direct_planes(
    ty: &EntityType,
    order: &[u16],
    base: &SectionRef<'_>,
    cur: &SectionRef<'_>,
    s: &mut EncodeScratch,
) -> bool {
    let Some((plan, _)) = s.plan.as_ref().and_then(|p| p.2.as_ref()) else {
        return false;
    };
    let a = &s.align;
    let rs = ty.record_size();
    let n = a.changed_rows.len() + a.spawned.len();
    if n < EARLY_STOP_ROWS
        || order.len() != rs
        || !transpose::plane_starts(order, n, rs, &mut s.starts)
    {
        return false;
    }
    let (changed, spawned) = (&a.changed_rows[..], &a.spawned[..]);
    let (cur, base) = (cur.records(), base.records());
    let default = ty.default_record();
    // Record `j` of `cur`.
    let spawned_record = |j: usize| {
        let at = *spawned.get(j)? as usize * rs;
        cur.get(at..at + rs)
    };
    let row = |k: usize| {
        if let Some(&(c, b)) = changed.get(k) {
            let (c, b) = (c as usize * rs, b as usize * rs);
            return Some((cur.get(c..c + rs)?, base.get(b..b + rs)?));
        }
        let j = k - changed.len();
        let prev = match j.checked_sub(1) {
            Some(p) => spawned_record(p)?,
            None => default,
        };
        Some((spawned_record(j)?, prev))
    };
    s.planes.clear();
    s.planes.resize(n * rs, 0);
    let first = planes_delta_sse2::Pairs {
        pairs: changed,
        cur,
        reference: base,
    };
    if planes_delta_sse2::delta_planes(plan, n, first, row, &s.starts, &mut s.planes) {
        return true;
    }
    s.planes.clear();
    false
}

/// The row mode of a section whose byte-plane rows [`encode_section`]
/// built (`record_size` bytes each): sets `mode`, the planes and the
/// tokens' plane flag. Nothing when the estimate already ran.
pub(crate) fn settle_planes(
    elements: usize,
    order: &[u16],
    record_size: usize,
    s: &mut EncodeScratch,
) {
    if !core::mem::take(&mut s.pending) {
        return;
    }
    let t = &mut s.tokens;
    if s.rows_deferred {
        // No rows to weigh: masks and values, which every packet may send.
        s.hint = None;
        s.counted = None;
        s.row_bytes = token_row_bytes(elements, t);
        return;
    }
    let n = t.row_end.len();
    let rs = record_size;
    // The planes hold the same bytes as the rows, so their cost at one
    // byte per zero run is at least the count of non-zero bytes (plus one
    // when there are zeros): when that already reaches the rows' cost as
    // masks and values, the mode is `Tokens` without a look at the planes.
    let tokens = token_row_bytes(elements, t);
    let counted = s.counted.take();
    // The planes hold the rows' bytes when the rows went straight there.
    let built = if s.direct { &s.planes } else { &s.rows };
    let nonzero = counted.map_or_else(|| planes::count_nonzero(built), |c| c.0);
    s.hint = None;
    s.row_bytes = tokens;
    if nonzero + usize::from(nonzero < n * rs) >= tokens {
        s.planes.clear();
        return;
    }
    if n < EARLY_STOP_ROWS {
        // Few rows: their zero runs are counted from the rows until they
        // settle the mode, and the planes built only when they may be sent.
        let runs = planes::zero_runs_of_rows(order, &s.rows, n, rs, tokens - nonzero);
        s.mode = choose_planes(tokens, nonzero, runs);
        if s.mode != RowMode::Tokens {
            planes::split(order, &s.rows, n, rs, &mut s.planes, &mut s.starts);
        }
    } else {
        // The planes are built to count their zero runs, and kept when
        // they may be sent.
        if s.planes.is_empty() && !s.direct {
            planes::split(order, &s.rows, n, rs, &mut s.planes, &mut s.starts);
        }
        let runs = counted.map_or_else(|| planes::zero_runs(&s.planes), |c| c.1);
        s.mode = choose_planes(tokens, nonzero, runs);
        if s.mode == RowMode::Tokens {
            s.planes.clear();
        }
        s.hint = Some(hint::PlanesHint::new(tokens, nonzero));
    }
    t.planes = s.mode == RowMode::Planes;
    if t.planes {
        s.row_bytes = s.planes.len();
    }
}

/// Sections with fewer rows count their planes' zero runs from the rows,
/// stopping once the planes lose (Quake 3 packets: a few wide rows, almost
/// always masks and values); sections with more build the planes (eight
/// rows at a time) and count a word at a time.
pub(super) const EARLY_STOP_ROWS: usize = 16;

/// The payload bytes the rows of `t` take as masks, kind bits and values
/// (FORMAT.md, "Rows"); the kind bits of changed rows are side bits
/// (FORMAT.md, "Payload bytes"), counted as whole bytes over the section,
/// a spawned row's take bytes of their own.
pub(crate) fn token_row_bytes(elements: usize, t: &SectionTokens) -> usize {
    let groups = elements.div_ceil(tokens::GROUP);
    let mut bytes = 0usize;
    let mut kinds = 0usize;
    for r in 0..t.row_end.len() {
        // One pass over the row: the groups it marks, its kind bits and
        // its values' varint lengths.
        let (mut marked, mut last) = (0usize, usize::MAX);
        let (mut row_kinds, mut values) = (0usize, 0usize);
        for tok in t.row(r) {
            let g = tok.element as usize / tokens::GROUP;
            marked += usize::from(g != last);
            last = g;
            row_kinds += usize::from(tok.kind.bit().is_some());
            values += layout::varint_len(tok.value);
        }
        bytes += if groups > 1 {
            groups.div_ceil(8) + marked
        } else {
            1
        };
        if r < t.changed.len() {
            kinds += row_kinds;
        } else {
            bytes += row_kinds.div_ceil(8);
        }
        bytes += values;
    }
    bytes + kinds.div_ceil(8)
}

/// The row mode the estimate gives a section with rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RowMode {
    /// Masks and values: the planes cost more even with cheap zero runs.
    #[default]
    Tokens,
    /// Byte planes: they cost less even with dear zero runs.
    Planes,
    /// Between the two: the encoder compresses both and keeps the smaller,
    /// or, for a large payload, takes the middle estimate: `planes` when
    /// the planes cost less at one and a quarter bytes per zero run.
    Either {
        /// The middle estimate's choice.
        planes: bool,
    },
}

/// The row mode of a section with rows, from `tokens`, the bytes of its
/// rows as masks and values ([`token_row_bytes`]), against the estimated
/// cost of its byte planes: every non-zero byte (`nonzero` of them) costs
/// one and every run of zero bytes in plane order (`runs`,
/// [`planes::zero_runs`]) costs what zstd spends on a sequence, between one
/// and three bytes. Planes costing less than the rows even at three bytes
/// per zero run are [`RowMode::Planes`], planes costing more even at one
/// byte per run are [`RowMode::Tokens`], the rest [`RowMode::Either`]
/// (with the choice at one and a quarter bytes per run). Deterministic.
pub(crate) fn choose_planes(tokens: usize, nonzero: usize, runs: usize) -> RowMode {
    if nonzero + 3 * runs < tokens {
        RowMode::Planes
    } else if nonzero + runs < tokens {
        RowMode::Either {
            planes: 4 * nonzero + 5 * runs < 4 * tokens,
        }
    } else {
        RowMode::Tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::DeltaOp;

    #[test]
    fn varint_len_counts_seven_bit_groups() {
        for bits in 0..=64u32 {
            for v in [u64::MAX >> (64 - bits.max(1)), 1u64 << bits.min(63), 0] {
                let mut want = 1;
                while want < 10 && v >> (7 * want) != 0 {
                    want += 1;
                }
                assert_eq!(layout::varint_len(v), want, "{v:#x}");
            }
        }
    }

    #[test]
    fn encode_row_finds_every_changed_element() {
        // Widths 1, 2, 4 and 8 tiling 37 bytes (narrow), five times over
        // (185 bytes: wide, words straddled).
        let widths = [1u8, 4, 8, 2, 1, 8, 4, 1, 2, 4, 2];
        for copies in [1, 5] {
            check_rows(&widths.repeat(copies));
        }
    }

    fn check_rows(widths: &[u8]) {
        let mut elements = Vec::new();
        let mut offset = 0u16;
        for &width in widths {
            elements.push(Element {
                offset,
                width,
                op: DeltaOp::Int,
                float: false,
                grid: None,
            });
            offset += u16::from(width);
        }
        let len = usize::from(offset);
        let mut x = 0x9e37_79b9_u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for _ in 0..2000 {
            let reference: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let mut cur = reference.clone();
            for _ in 0..next() % 4 {
                let at = next() as usize % len;
                cur[at] = cur[at].wrapping_add(1 + (next() % 255) as u8);
            }
            let mut t = SectionTokens::default();
            encode_row(&elements, &cur, &reference, &mut t);
            let expected: Vec<Token> = elements
                .iter()
                .enumerate()
                .filter(|&(_, &e)| {
                    let r = usize::from(e.offset)..usize::from(e.offset) + usize::from(e.width);
                    cur[r.clone()] != reference[r]
                })
                .map(|(i, &e)| {
                    let (kind, value) = values::encode(e, &cur, &reference);
                    Token {
                        element: i as u32,
                        kind,
                        value,
                    }
                })
                .collect();
            assert_eq!(t.elems, expected);
            assert_eq!(t.row_end, vec![expected.len() as u32]);
        }
    }
}
