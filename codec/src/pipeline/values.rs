//! Element values: how one element of a record is coded against its
//! reference element (FORMAT.md, "Values").
//!
//! An element is one scalar of a field (array items count separately). Its
//! value is a `u64` and, for floats, a kind:
//!
//! - `Int`/`Predict` on integers: the zigzag of the wrapping difference
//!   `cur - ref` at the element's width.
//! - `Int`/`Predict` on floats where the reference is *integral* (finite,
//!   a whole number, |x| ≤ 2^24 for `f32` or 2^53 for `f64`, not `-0.0`):
//!   a kind bit. If the current value is integral too, the value is the
//!   zigzag of the integer difference ([`Kind::Integral`]); otherwise the
//!   zigzag of the wrapping bit-pattern difference ([`Kind::Bits`]).
//! - `Int`/`Predict` on floats whose reference is not integral: the zigzag
//!   of the bit-pattern difference, no kind bit ([`Kind::BitsOnly`]).
//! - `Sub`, `Xor`: the per-byte difference or XOR, read as a little-endian
//!   integer of the element's width. `None`: the current value itself.

use crate::schema::{DeltaOp, EntityType};

/// How an element's value was coded; decides whether a kind bit is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An integer element, or any element under `Sub`, `Xor` or `None`: no kind bit.
    Int,
    /// A float coded as the difference of two whole numbers: kind bit 1.
    Integral,
    /// A float with an integral reference, coded by bit pattern: kind bit 0.
    Bits,
    /// A float whose reference is not integral, coded by bit pattern: no kind bit.
    BitsOnly,
}

impl Kind {
    /// Whether the element sends a kind bit, and which.
    pub(crate) fn bit(self) -> Option<bool> {
        match self {
            Kind::Integral => Some(true),
            Kind::Bits => Some(false),
            Kind::Int | Kind::BitsOnly => None,
        }
    }
}

/// How an element is laid out and coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Element {
    /// Byte offset in the record.
    pub(crate) offset: u16,
    /// Width in bytes: 1, 2, 4 or 8.
    pub(crate) width: u8,
    /// Delta operator.
    pub(crate) op: DeltaOp,
    /// Whether the element is an `f32`/`f64` coded with `Int`/`Predict`.
    pub(crate) float: bool,
    /// The bits of the field's grid step (`f64`), if it declares one: then
    /// "integral" means a whole number of steps.
    pub(crate) grid: Option<u64>,
}

/// The elements of `ty` in record order.
pub(crate) fn elements(ty: &EntityType) -> Vec<Element> {
    let mut out = Vec::new();
    for (((f, &off), q), g) in ty
        .fields()
        .iter()
        .zip(ty.offsets())
        .zip(ty.quantization())
        .zip(ty.grids())
    {
        let w = f.ty.size();
        let op = f.delta_op();
        // A quantised float arrives here as its integer code (crate::quant).
        let float =
            |op| f.ty.is_float() && q.is_none() && matches!(op, DeltaOp::Int | DeltaOp::Predict);
        for i in 0..f.len {
            // The implied element of a unit field is coded against its
            // implied value (FORMAT.md 4.10).
            let implied = ty
                .unit_fields()
                .iter()
                .any(|u| u.element as usize == out.len());
            let op = if implied { DeltaOp::Predict } else { op };
            out.push(Element {
                offset: (off + i * w) as u16,
                width: w as u8,
                op,
                // Its value is a bit-pattern difference, without a kind bit.
                float: float(op) && !implied,
                grid: g.map(f64::to_bits),
            });
        }
    }
    out
}

/// The most payload bytes one row of these elements takes: its mask (group
/// bits, one byte per group), its kind bits and its values at their
/// longest varints.
pub(crate) fn max_row_len(elements: &[Element]) -> usize {
    let groups = elements.len().div_ceil(8);
    let values: usize = elements
        .iter()
        .map(|e| match e.width {
            1 => 2,
            2 => 3,
            4 => 5,
            _ => 10,
        })
        .sum();
    groups.div_ceil(8) + groups + elements.len().div_ceil(8) + values
}

/// Why an element value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadValue;

#[inline]
fn load(bytes: &[u8]) -> u64 {
    match *bytes {
        [a] => u64::from(a),
        [a, b] => u64::from(u16::from_le_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => {
            let mut b = [0u8; 8];
            let n = bytes.len().min(8);
            b[..n].copy_from_slice(&bytes[..n]);
            u64::from_le_bytes(b)
        }
    }
}

/// Whether `a` and `b` hold the same bytes at `r` (`a.get(r) ==
/// b.get(r)`): elements of four or eight bytes compare as integers, where
/// the slice compare is a `memcmp` call per element.
#[inline(always)]
pub(crate) fn same_at(a: &[u8], b: &[u8], r: core::ops::Range<usize>) -> bool {
    match (a.get(r.clone()), b.get(r)) {
        (Some(x), Some(y)) => match (x.len(), <&[u8; 4]>::try_from(x), <&[u8; 4]>::try_from(y)) {
            (_, Ok(x), Ok(y)) => x == y,
            (8, _, _) => <&[u8; 8]>::try_from(x).ok() == <&[u8; 8]>::try_from(y).ok(),
            _ => x == y,
        },
        (x, y) => x == y,
    }
}

/// Element `e` of `record` as an integer.
#[inline]
fn element(e: Element, record: &[u8]) -> u64 {
    let at = usize::from(e.offset);
    load(&record[at..at + usize::from(e.width)])
}

/// [`element`] as one eight-byte load: of the eight bytes from its
/// offset, masked to its width, or near the record's end of the eight
/// bytes that end with it, shifted down.
#[inline(always)]
fn element_wide(e: Element, record: &[u8]) -> u64 {
    let at = usize::from(e.offset);
    let end = at + usize::from(e.width);
    if let Some(w) = record.get(at..at + 8) {
        return u64::from_le_bytes(eight(w)) & mask(e.width);
    }
    match end.checked_sub(8).and_then(|start| record.get(start..end)) {
        Some(w) => u64::from_le_bytes(eight(w)) >> (8 * (8 - u32::from(e.width))),
        None => element(e, record),
    }
}

/// Writes `v` (of the element's width) as element `e` of `record` with one
/// eight-byte store where the record has the eight bytes [`element_wide`]
/// loads.
#[inline(always)]
fn put_element(e: Element, v: u64, record: &mut [u8]) {
    let at = usize::from(e.offset);
    let end = at + usize::from(e.width);
    let m = mask(e.width);
    if let Some(w) = record.get_mut(at..at + 8) {
        let old = u64::from_le_bytes(eight(w));
        w.copy_from_slice(&((old & !m) | v).to_le_bytes());
        return;
    }
    match end
        .checked_sub(8)
        .and_then(|start| record.get_mut(start..end))
    {
        Some(w) => {
            let shift = 8 * (8 - u32::from(e.width));
            let old = u64::from_le_bytes(eight(w));
            w.copy_from_slice(&((old & !(m << shift)) | v << shift).to_le_bytes());
        }
        None => store(v, &mut record[at..end]),
    }
}

/// Eight bytes as an array.
#[inline(always)]
fn eight(w: &[u8]) -> [u8; 8] {
    let mut b = [0u8; 8];
    b.copy_from_slice(w);
    b
}

#[inline]
fn store(v: u64, out: &mut [u8]) {
    // One fixed-width store per width (a copy of a variable length would
    // call `memcpy`).
    let b = v.to_le_bytes();
    match out.len() {
        1 => out.copy_from_slice(&b[..1]),
        2 => out.copy_from_slice(&b[..2]),
        4 => out.copy_from_slice(&b[..4]),
        8 => out.copy_from_slice(&b),
        n => out.copy_from_slice(&b[..n]),
    }
}

/// The low `width` (1 to 8) bytes of a `u64` set.
#[inline]
pub(crate) fn mask(width: u8) -> u64 {
    u64::MAX >> ((64 - 8 * u32::from(width)) & 63)
}

/// Zigzag of the `width`-byte wrapping difference `c - r`.
#[inline]
pub(crate) fn zigzag_diff(c: u64, r: u64, width: u8) -> u64 {
    let bits = 8 * u32::from(width);
    let d = c.wrapping_sub(r) & mask(width);
    // Sign-extend the difference to 64 bits, then zigzag at 64 bits and
    // keep `bits` bits: the same as zigzag at the element's width.
    let s = ((d << (64 - bits)) as i64) >> (64 - bits);
    (((s << 1) ^ (s >> 63)) as u64) & mask(width)
}

#[inline]
pub(crate) fn unzigzag_add(z: u64, r: u64, width: u8) -> u64 {
    let d = (z >> 1) ^ (z & 1).wrapping_neg();
    r.wrapping_add(d) & mask(width)
}

#[inline]
fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag64(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// The whole number an integral float holds, if it is integral and at
/// most `2^24` (`f32`) or `2^53` (`f64`) in magnitude; not for `-0.0`.
/// A round trip through an integer, exact in that range, rather than
/// branches on the exponent, which mispredict on values near 1.
#[inline(always)]
fn integral(bits: u64, width: u8) -> Option<i64> {
    let (whole, back, bits, max) = if width == 4 {
        let w = f32::from_bits(bits as u32) as i64;
        (
            w,
            u64::from((w as f32).to_bits()),
            bits & 0xffff_ffff,
            1u64 << 24,
        )
    } else {
        let w = f64::from_bits(bits) as i64;
        (w, (w as f64).to_bits(), bits, 1u64 << 53)
    };
    (back == bits && whole.unsigned_abs() <= max).then_some(whole)
}

/// The float bits of a whole number within the integral range.
#[inline]
fn from_integral(v: i64, width: u8) -> Option<u64> {
    if width == 4 {
        (v.unsigned_abs() <= 1 << 24).then(|| u64::from((v as f32).to_bits()))
    } else {
        (v.unsigned_abs() <= 1 << 53).then(|| (v as f64).to_bits())
    }
}

/// Whole values of element `e`: the integral value, or with a grid the
/// whole number of steps `k` whose `k · step` (binary64, rounded to the
/// element's type) has exactly these bits (`-0.0`, NaN and infinities have
/// none; `|k|` at most 2^24 for `f32`, 2^53 for `f64`).
#[inline(always)]
fn whole(e: Element, bits: u64) -> Option<i64> {
    match e.grid {
        None => integral(bits, e.width),
        Some(_) => whole_on_grid(e, bits),
    }
}

/// [`whole`] of an element with a grid.
#[inline(never)]
fn whole_on_grid(e: Element, bits: u64) -> Option<i64> {
    let Some(step) = e.grid.map(f64::from_bits) else {
        return integral(bits, e.width);
    };
    let x = if e.width == 4 {
        f64::from(f32::from_bits(bits as u32))
    } else {
        f64::from_bits(bits)
    };
    let k = (x / step).round();
    // NaN and infinities fail the range test; the round trip rejects -0.0
    // and values off the grid.
    if !k.is_finite() || k.abs() > grid_limit(e.width) as f64 {
        return None;
    }
    let k = k as i64;
    (from_whole(e, k) == Some(bits)).then_some(k)
}

fn grid_limit(width: u8) -> u64 {
    if width == 4 {
        1 << 24
    } else {
        1 << 53
    }
}

/// The float bits of whole value `k` of element `e` (see [`whole`]).
#[inline]
fn from_whole(e: Element, k: i64) -> Option<u64> {
    let Some(step) = e.grid.map(f64::from_bits) else {
        return from_integral(k, e.width);
    };
    if k.unsigned_abs() > grid_limit(e.width) {
        return None;
    }
    let x = k as f64 * step;
    Some(if e.width == 4 {
        u64::from((x as f32).to_bits())
    } else {
        x.to_bits()
    })
}

/// Codes element `e` of `cur` against `reference` (whole records).
#[inline]
pub(crate) fn encode(e: Element, cur: &[u8], reference: &[u8]) -> (Kind, u64) {
    let r = usize::from(e.offset)..usize::from(e.offset) + usize::from(e.width);
    let (c, b) = (&cur[r.clone()], &reference[r]);
    match e.op {
        DeltaOp::Int | DeltaOp::Predict => {
            let (cv, bv) = (load(c), load(b));
            if e.float {
                if let Some(bi) = whole(e, bv) {
                    return match whole(e, cv) {
                        Some(ci) => (Kind::Integral, zigzag64(ci - bi)),
                        None => (Kind::Bits, zigzag_diff(cv, bv, e.width)),
                    };
                }
                return (Kind::BitsOnly, zigzag_diff(cv, bv, e.width));
            }
            (Kind::Int, zigzag_diff(cv, bv, e.width))
        }
        DeltaOp::Sub => {
            let mut v = 0u64;
            for (i, (&c, &b)) in c.iter().zip(b).enumerate() {
                v |= u64::from(c.wrapping_sub(b)) << (8 * i);
            }
            (Kind::Int, v)
        }
        DeltaOp::Xor => (Kind::Int, load(c) ^ load(b)),
        DeltaOp::None => (Kind::Int, load(c)),
    }
}

/// A changed row's element of a predicted section that is an integer
/// (or a quantised code) under `Int` or `Predict`: `None` when it equals
/// its baseline value, else the zigzag of its difference from the
/// prediction ([`Kind::Int`]; what [`encode`] gives), each side loaded once.
#[inline(always)]
pub(crate) fn int_against(e: Element, cur: &[u8], base: &[u8], pred: &[u8]) -> Option<u64> {
    let c = element_wide(e, cur);
    if c == element_wide(e, base) {
        return None;
    }
    Some(zigzag_diff(c, element_wide(e, pred), e.width))
}

/// [`encode`] of an element that [`differs`], `None` for one that does
/// not: each side loaded once.
#[inline(always)]
pub(crate) fn encode_changed(e: Element, cur: &[u8], reference: &[u8]) -> Option<(Kind, u64)> {
    if e.float && e.width == 4 && e.grid.is_none() {
        if let Some(coded) = encode_f32_changed(usize::from(e.offset), cur, reference) {
            return coded;
        }
    }
    let (cv, bv) = (element_wide(e, cur), element_wide(e, reference));
    if cv == bv {
        return None;
    }
    Some(match e.op {
        DeltaOp::Int | DeltaOp::Predict if e.float => match whole(e, bv) {
            Some(bi) => match whole(e, cv) {
                Some(ci) => (Kind::Integral, zigzag64(ci - bi)),
                None => (Kind::Bits, zigzag_diff(cv, bv, e.width)),
            },
            None => (Kind::BitsOnly, zigzag_diff(cv, bv, e.width)),
        },
        DeltaOp::Int | DeltaOp::Predict => (Kind::Int, zigzag_diff(cv, bv, e.width)),
        DeltaOp::Sub => encode(e, cur, reference),
        DeltaOp::Xor => (Kind::Int, cv ^ bv),
        DeltaOp::None => (Kind::Int, cv),
    })
}

/// [`encode_changed`] of an `f32` element without grid at byte `at` (the
/// common float): fixed four-byte loads and 32-bit arithmetic, no width
/// or operator to match. `None` when a record is too short (the general
/// path then reports it as it does).
#[inline(always)]
fn encode_f32_changed(at: usize, cur: &[u8], reference: &[u8]) -> Option<Option<(Kind, u64)>> {
    let end = at.checked_add(4)?;
    let c = u32::from_le_bytes(cur.get(at..end)?.try_into().ok()?);
    let r = u32::from_le_bytes(reference.get(at..end)?.try_into().ok()?);
    if c == r {
        return Some(None);
    }
    let zigzag32 = |d: u32| u64::from(((d << 1) as i32 ^ ((d as i32) >> 31)) as u32);
    Some(Some(match integral(u64::from(r), 4) {
        Some(ri) => match integral(u64::from(c), 4) {
            Some(ci) => (Kind::Integral, zigzag64(ci - ri)),
            None => (Kind::Bits, zigzag32(c.wrapping_sub(r))),
        },
        None => (Kind::BitsOnly, zigzag32(c.wrapping_sub(r))),
    }))
}

/// [`decode`] of a value of element `e` that is not a float (so of
/// [`Kind::Int`]), refusing, besides what `decode` refuses, a value that
/// leaves the element as `reference` has it (a changed element must
/// change): `reference` and `out` are whole records, each side loaded and
/// stored once.
#[inline(always)]
pub(crate) fn decode_changed(
    e: Element,
    v: u64,
    reference: &[u8],
    out: &mut [u8],
) -> Result<(), BadValue> {
    if v & !mask(e.width) != 0 {
        return Err(BadValue);
    }
    let r = element_wide(e, reference);
    let c = match e.op {
        DeltaOp::Int | DeltaOp::Predict => unzigzag_add(v, r, e.width),
        DeltaOp::Sub => sub_bytes(v, r, e.width),
        DeltaOp::Xor => v ^ r,
        DeltaOp::None => v,
    };
    if c == r {
        return Err(BadValue);
    }
    put_element(e, c, out);
    Ok(())
}

/// Value `v` of a `Sub` element of `width` bytes applied to reference
/// element `r`: byte by byte, each wrapping on its own.
#[inline(always)]
fn sub_bytes(v: u64, r: u64, width: u8) -> u64 {
    let mut c = 0u64;
    for i in 0..usize::from(width) {
        let (vb, rb) = ((v >> (8 * i)) as u8, (r >> (8 * i)) as u8);
        c |= u64::from(vb.wrapping_add(rb)) << (8 * i);
    }
    c
}

/// The reference side of a float element: its bits and its whole value
/// (`Some` when the element sends a kind bit), computed once for
/// [`kind_of`](FloatReference::kind) and [`decode_float_changed`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct FloatReference {
    bits: u64,
    whole: Option<i64>,
}

impl FloatReference {
    /// Element `e` of record `reference`.
    #[inline(always)]
    pub(crate) fn new(e: Element, reference: &[u8]) -> Self {
        let at = usize::from(e.offset);
        let bits = match e.width {
            4 => load_fixed::<4>(reference, at),
            8 => load_fixed::<8>(reference, at),
            _ => None,
        }
        .unwrap_or_else(|| element(e, reference));
        Self {
            bits,
            whole: whole(e, bits),
        }
    }

    /// [`kind_before_bit`] of the element.
    #[inline(always)]
    pub(crate) fn kind(&self) -> Kind {
        if self.whole.is_some() {
            Kind::Bits
        } else {
            Kind::BitsOnly
        }
    }
}

/// [`decode`] of float element `e` (`e.float`) against the reference
/// `r` (as [`Kind::Integral`] when `integral`, else by bit pattern), then
/// the check that the element [`differs`] from the reference: the same
/// values refused, the reference loaded once and the element stored once.
#[inline(always)]
pub(crate) fn decode_float_changed(
    e: Element,
    r: FloatReference,
    integral: bool,
    v: u64,
    out: &mut [u8],
) -> Result<(), BadValue> {
    match e.width {
        4 => float_changed_fixed::<4>(e, r, integral, v, out),
        8 => float_changed_fixed::<8>(e, r, integral, v, out),
        _ => float_changed(e, r, integral, v, out),
    }
}

/// The `W` bytes of `record` from `at` as a little-endian integer, if the
/// record has them.
#[inline(always)]
fn load_fixed<const W: usize>(record: &[u8], at: usize) -> Option<u64> {
    let mut b = [0u8; 8];
    b.get_mut(..W)?
        .copy_from_slice(record.get(at..at.checked_add(W)?)?);
    Some(u64::from_le_bytes(b))
}

/// [`decode_float_changed`] of an element of width `W` (`e.width`): the
/// width's mask a constant, the store of fixed size.
#[inline(always)]
fn float_changed_fixed<const W: usize>(
    e: Element,
    r: FloatReference,
    integral: bool,
    v: u64,
    out: &mut [u8],
) -> Result<(), BadValue> {
    let m = u64::MAX >> (64 - 8 * W as u32);
    let c = match e.op {
        DeltaOp::Int | DeltaOp::Predict if !integral => {
            if v & !m != 0 {
                return Err(BadValue);
            }
            let d = (v >> 1) ^ (v & 1).wrapping_neg();
            r.bits.wrapping_add(d) & m
        }
        _ => return float_changed(e, r, integral, v, out),
    };
    if c == r.bits {
        return Err(BadValue);
    }
    let at = usize::from(e.offset);
    match at.checked_add(W).and_then(|end| out.get_mut(at..end)) {
        Some(o) => o.copy_from_slice(&c.to_le_bytes()[..W]),
        None => put_element(e, c, out),
    }
    Ok(())
}

/// The reference side of an `f32` element without grid at byte `at`, as
/// [`FloatReference::new`] gives it, with a fixed four-byte load: its bits
/// and whole value (`Some`: the element sends a kind bit). `None` when the
/// record is too short (the general path then decides).
#[inline(always)]
pub(crate) fn f32_reference(at: usize, reference: &[u8]) -> Option<(u32, Option<i64>)> {
    let r = u32::from_le_bytes(reference.get(at..at.checked_add(4)?)?.try_into().ok()?);
    Some((r, integral(u64::from(r), 4)))
}

/// [`decode_float_changed`] of an `f32` element without grid at byte
/// `at` against its [`f32_reference`] `(r, whole)`, with 32-bit
/// arithmetic and a fixed four-byte store: the same values refused.
#[inline(always)]
pub(crate) fn decode_f32_changed(
    at: usize,
    (r, whole): (u32, Option<i64>),
    integral: bool,
    v: u64,
    out: &mut [u8],
) -> Result<(), BadValue> {
    let c = if integral {
        let ci = whole
            .and_then(|ri| ri.checked_add(unzigzag64(v)))
            .ok_or(BadValue)?;
        from_integral(ci, 4).ok_or(BadValue)? as u32
    } else {
        if v >> 32 != 0 {
            return Err(BadValue);
        }
        let v = v as u32;
        r.wrapping_add((v >> 1) ^ (v & 1).wrapping_neg())
    };
    if c == r {
        return Err(BadValue);
    }
    let o = at
        .checked_add(4)
        .and_then(|end| out.get_mut(at..end))
        .ok_or(BadValue)?;
    o.copy_from_slice(&c.to_le_bytes());
    Ok(())
}

/// [`decode_float_changed`] of any element.
#[inline(never)]
fn float_changed(
    e: Element,
    r: FloatReference,
    integral: bool,
    v: u64,
    out: &mut [u8],
) -> Result<(), BadValue> {
    let c = if integral {
        let bi = r.whole.ok_or(BadValue)?;
        let ci = bi.checked_add(unzigzag64(v)).ok_or(BadValue)?;
        let bits = from_whole(e, ci).ok_or(BadValue)?;
        // On a grid two step counts may round to one float: only the one
        // the encoder would send is accepted.
        if e.grid.is_some() && whole(e, bits) != Some(ci) {
            return Err(BadValue);
        }
        bits
    } else {
        int_value(e, v, r.bits)?
    };
    if c == r.bits {
        return Err(BadValue);
    }
    put_element(e, c, out);
    Ok(())
}

/// The element `e` that value `v` (not [`Kind::Integral`]) makes of
/// reference element `r`; refuses a value wider than the element.
#[inline(always)]
fn int_value(e: Element, v: u64, r: u64) -> Result<u64, BadValue> {
    if v & !mask(e.width) != 0 {
        return Err(BadValue);
    }
    Ok(match e.op {
        DeltaOp::Int | DeltaOp::Predict => unzigzag_add(v, r, e.width),
        DeltaOp::Sub => sub_bytes(v, r, e.width),
        DeltaOp::Xor => v ^ r,
        DeltaOp::None => v,
    })
}

#[cfg(test)]
#[path = "values_tests.rs"]
mod tests;
