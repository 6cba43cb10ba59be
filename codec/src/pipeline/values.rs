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

#![forbid(unsafe_code)]

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
        let float = f.ty.is_float() && q.is_none() && matches!(op, DeltaOp::Int | DeltaOp::Predict);
        for i in 0..f.len {
            out.push(Element {
                offset: (off + i * w) as u16,
                width: w as u8,
                op,
                float,
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

/// Element `e` of `record` as an integer.
#[inline]
fn element(e: Element, record: &[u8]) -> u64 {
    let at = usize::from(e.offset);
    load(&record[at..at + usize::from(e.width)])
}

/// [`element`] as one eight-byte load: of the eight bytes from its
/// offset, masked to its width, or near the record's end of the eight
/// bytes that end with it, shifted down.
#[inline]
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
#[inline]
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
fn mask(width: u8) -> u64 {
    u64::MAX >> ((64 - 8 * u32::from(width)) & 63)
}

/// Zigzag of the `width`-byte wrapping difference `c - r`.
#[inline]
fn zigzag_diff(c: u64, r: u64, width: u8) -> u64 {
    let bits = 8 * u32::from(width);
    let d = c.wrapping_sub(r) & mask(width);
    // Sign-extend the difference to 64 bits, then zigzag at 64 bits and
    // keep `bits` bits: the same as zigzag at the element's width.
    let s = ((d << (64 - bits)) as i64) >> (64 - bits);
    (((s << 1) ^ (s >> 63)) as u64) & mask(width)
}

#[inline]
fn unzigzag_add(z: u64, r: u64, width: u8) -> u64 {
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

/// The whole number an integral float holds, if it is integral, from the
/// bit pattern alone (no float arithmetic): `mant_bits` mantissa bits,
/// exponent bias `bias`, integral range `2^max_pow`.
#[inline]
fn integral_bits(bits: u64, mant_bits: u32, exp_mask: u64, bias: i64, max_pow: i64) -> Option<i64> {
    let sign = bits >> (mant_bits + exp_mask.count_ones());
    let exp = ((bits >> mant_bits) & exp_mask) as i64 - bias;
    let mant = bits & ((1u64 << mant_bits) - 1);
    if exp < 0 {
        // |x| < 1: whole only as +0.0 (-0.0 is excluded).
        return (bits == 0).then_some(0);
    }
    if exp > max_pow || (exp == max_pow && mant != 0) {
        return None;
    }
    let frac_bits = i64::from(mant_bits) - exp;
    if frac_bits > 0 && mant & ((1u64 << frac_bits) - 1) != 0 {
        return None;
    }
    let m = mant | (1u64 << mant_bits);
    let whole = if frac_bits >= 0 {
        m >> frac_bits
    } else {
        m << -frac_bits
    } as i64;
    Some(if sign == 1 { -whole } else { whole })
}

/// The whole number an integral float holds, if it is integral.
#[inline]
fn integral(bits: u64, width: u8) -> Option<i64> {
    if width == 4 {
        integral_bits(bits & 0xffff_ffff, 23, 0xff, 127, 24)
    } else {
        integral_bits(bits, 52, 0x7ff, 1023, 53)
    }
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
#[inline]
fn whole(e: Element, bits: u64) -> Option<i64> {
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

/// The kind an element must be decoded as, before its kind bit (if any) is
/// read: `None` when the element has no kind bit.
#[inline]
pub(crate) fn kind_before_bit(e: Element, reference: &[u8]) -> Kind {
    if !e.float {
        return Kind::Int;
    }
    let r = usize::from(e.offset)..usize::from(e.offset) + usize::from(e.width);
    match whole(e, load(&reference[r])) {
        Some(_) => Kind::Bits,
        None => Kind::BitsOnly,
    }
}

/// Inverse of [`encode`]: writes element `e` of `out` from its kind and
/// value and the reference record. Refuses values wider than the element
/// and integral values outside the integral range.
#[inline(always)]
pub(crate) fn decode(
    e: Element,
    kind: Kind,
    v: u64,
    reference: &[u8],
    out: &mut [u8],
) -> Result<(), BadValue> {
    let r = usize::from(e.offset)..usize::from(e.offset) + usize::from(e.width);
    let (b, o) = (&reference[r.clone()], &mut out[r]);
    let bv = load(b);
    if kind == Kind::Integral {
        let bi = whole(e, bv).ok_or(BadValue)?;
        let ci = bi.checked_add(unzigzag64(v)).ok_or(BadValue)?;
        let bits = from_whole(e, ci).ok_or(BadValue)?;
        // On a grid two step counts may round to one float: only the one
        // the encoder would send is accepted.
        if e.grid.is_some() && whole(e, bits) != Some(ci) {
            return Err(BadValue);
        }
        store(bits, o);
        return Ok(());
    }
    if v & !mask(e.width) != 0 {
        return Err(BadValue);
    }
    match e.op {
        DeltaOp::Int | DeltaOp::Predict => store(unzigzag_add(v, bv, e.width), o),
        DeltaOp::Sub => {
            for (i, (o, &b)) in o.iter_mut().zip(b).enumerate() {
                *o = ((v >> (8 * i)) as u8).wrapping_add(b);
            }
        }
        DeltaOp::Xor => store(v ^ bv, o),
        DeltaOp::None => store(v, o),
    }
    Ok(())
}

/// [`encode`] of an element that [`differs`], `None` for one that does
/// not: each side loaded once.
#[inline(always)]
pub(crate) fn encode_changed(e: Element, cur: &[u8], reference: &[u8]) -> Option<(Kind, u64)> {
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
        DeltaOp::Sub => {
            // Byte by byte, each wrapping on its own.
            let mut c = 0u64;
            for i in 0..usize::from(e.width) {
                let (vb, rb) = ((v >> (8 * i)) as u8, (r >> (8 * i)) as u8);
                c |= u64::from(vb.wrapping_add(rb)) << (8 * i);
            }
            c
        }
        DeltaOp::Xor => v ^ r,
        DeltaOp::None => v,
    };
    if c == r {
        return Err(BadValue);
    }
    put_element(e, c, out);
    Ok(())
}

/// Whether elements `e` of `a` and `b` differ.
#[inline]
pub(crate) fn differs(e: Element, a: &[u8], b: &[u8]) -> bool {
    element(e, a) != element(e, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn el(width: u8, op: DeltaOp, float: bool) -> Element {
        Element {
            offset: 0,
            width,
            op,
            float,
            grid: None,
        }
    }

    fn rt(e: Element, c: u64, b: u64) -> (Kind, u64) {
        let w = usize::from(e.width);
        let (cb, bb) = (&c.to_le_bytes()[..w], &b.to_le_bytes()[..w]);
        let (k, v) = encode(e, cb, bb);
        // The encoder's one-load form agrees.
        let changed = differs(e, cb, bb).then_some((k, v));
        assert_eq!(encode_changed(e, cb, bb), changed);
        // The decoder knows from the reference whether a kind bit follows.
        assert_eq!(kind_before_bit(e, bb).bit().is_some(), k.bit().is_some());
        if k.bit().is_none() {
            assert_eq!(kind_before_bit(e, bb), k);
        }
        let mut out = vec![0xaa; w];
        decode(e, k, v, bb, &mut out).unwrap();
        assert_eq!(out, cb);
        (k, v)
    }

    proptest! {
        #[test]
        fn inverse(w in prop_oneof![Just(1u8), Just(2), Just(4), Just(8)], op in 0usize..5, c: u64, b: u64, small: i16) {
            let op = [DeltaOp::Sub, DeltaOp::Xor, DeltaOp::Int, DeltaOp::None, DeltaOp::Predict][op];
            let m = mask(w);
            rt(el(w, op, false), c & m, b & m);
            if w >= 4 && matches!(op, DeltaOp::Int | DeltaOp::Predict) {
                rt(el(w, op, true), c & m, b & m);
                // Whole numbers near each other.
                let (x, y) = (f64::from(small), f64::from(small) + 3.0);
                let (xb, yb) = if w == 4 {
                    (u64::from((x as f32).to_bits()), u64::from((y as f32).to_bits()))
                } else {
                    (x.to_bits(), y.to_bits())
                };
                prop_assert_eq!(rt(el(w, op, true), yb, xb), (Kind::Integral, 6));
            }
        }
    }

    proptest! {
        #[test]
        fn decode_changed_matches_decode(w in prop_oneof![Just(1u8), Just(2), Just(4), Just(8)], op in 0usize..5, v: u64, b: u64, at in 0usize..20, extra in 0usize..13, small in 0u64..4) {
            // An element anywhere in a record of `w` to `w + 12` bytes: with
            // eight bytes from its offset, with eight bytes before its end,
            // or in a record shorter than eight bytes.
            let op = [DeltaOp::Sub, DeltaOp::Xor, DeltaOp::Int, DeltaOp::None, DeltaOp::Predict][op];
            let len = usize::from(w) + extra;
            let at = at % (extra + 1);
            let e = Element { offset: at as u16, ..el(w, op, false) };
            let reference: Vec<u8> = (0..len as u64).map(|i| (b >> (i % 8 * 8)) as u8 ^ i as u8).collect();
            // Small values (0 among them), values of the element's width,
            // and values too wide for it.
            for v in [small, v & mask(w), v] {
                let (mut want, mut got) = (vec![0x5a; len], vec![0x5a; len]);
                let expected = decode(e, Kind::Int, v, &reference, &mut want)
                    .and_then(|()| if differs(e, &want, &reference) { Ok(()) } else { Err(BadValue) });
                let result = decode_changed(e, v, &reference, &mut got);
                prop_assert_eq!(result, expected);
                if result.is_ok() {
                    prop_assert_eq!(&got, &want);
                }
            }
        }
    }

    #[test]
    fn float_kinds() {
        let e = el(4, DeltaOp::Int, true);
        let f = |x: f32| u64::from(x.to_bits());
        assert_eq!(rt(e, f(1010.0), f(1000.0)), (Kind::Integral, 20));
        assert_eq!(rt(e, f(-3.0), f(2.0)), (Kind::Integral, 9));
        assert_eq!(rt(e, f(0.5), f(1000.0)).0, Kind::Bits);
        assert_eq!(rt(e, f(-0.0), f(0.0)).0, Kind::Bits);
        assert_eq!(rt(e, f(0.0), f(-0.0)).0, Kind::BitsOnly);
        assert_eq!(rt(e, f(f32::NAN), f(1.0)).0, Kind::Bits);
        assert_eq!(rt(e, f(2.0), f(33_554_432.0)).0, Kind::BitsOnly);
        assert_eq!(rt(e, f(16_777_216.0), f(0.0)), (Kind::Integral, 1 << 25));
        let mut o = [0; 4];
        let b = 16_777_216f32.to_bits().to_le_bytes();
        assert_eq!(decode(e, Kind::Integral, 2, &b, &mut o), Err(BadValue));
        assert_eq!(
            decode(e, Kind::Integral, 0, &[0, 0, 0xc0, 0x7f], &mut o),
            Err(BadValue)
        );
        assert_eq!(decode(e, Kind::Bits, 1 << 32, &b, &mut o), Err(BadValue));
    }

    proptest! {
        #[test]
        fn integral_matches_float_arithmetic(x: f32, y: f64, k in -20_000_000i64..20_000_000) {
            let reference32 = |x: f32| (x.is_finite() && x.trunc() == x && x.abs() <= 16_777_216.0
                && x.to_bits() != 0x8000_0000).then_some(x as i64);
            let reference64 = |x: f64| (x.is_finite() && x.trunc() == x && x.abs() <= 9_007_199_254_740_992.0
                && x.to_bits() != 0x8000_0000_0000_0000).then_some(x as i64);
            for v in [x, k as f32, (k as f32) + 0.5, -0.0, 0.0, f32::INFINITY, f32::NAN] {
                prop_assert_eq!(integral(u64::from(v.to_bits()), 4), reference32(v), "{}", v);
            }
            for v in [y, k as f64, (k as f64) * 1e9, (k as f64) + 0.25, -0.0] {
                prop_assert_eq!(integral(v.to_bits(), 8), reference64(v), "{}", v);
            }
        }
    }

    #[test]
    fn integer_zigzag() {
        assert_eq!(
            rt(el(4, DeltaOp::Int, false), (-3i32) as u32 as u64, 0),
            (Kind::Int, 5)
        );
        assert_eq!(rt(el(1, DeltaOp::Int, false), 0, 255), (Kind::Int, 2));
        assert_eq!(rt(el(8, DeltaOp::Int, false), 0, 1), (Kind::Int, 1));
        assert_eq!(
            rt(el(2, DeltaOp::Sub, false), 0x0100, 0x00ff),
            (Kind::Int, 0x0101)
        );
    }

    fn grid(width: u8, step: f64) -> Element {
        Element {
            grid: Some(step.to_bits()),
            ..el(width, DeltaOp::Int, true)
        }
    }

    proptest! {
        #[test]
        fn grid_values_round_trip_bit_exactly(ka in -70_000i64..70_000, kb in -70_000i64..70_000, noise: u32, step_at in 0usize..3) {
            let step = [360.0 / 65536.0, 0.1, 0.125][step_at];
            let e = grid(4, step);
            let on = |k: i64| u64::from(((k as f64 * step) as f32).to_bits());
            // Both on the grid: whole steps, the difference of the counts.
            let (k, v) = rt(e, on(ka), on(kb));
            if on(ka) != on(kb) && whole(e, on(ka)) == Some(ka) && whole(e, on(kb)) == Some(kb) {
                prop_assert_eq!(k, Kind::Integral);
                prop_assert_eq!(v, zigzag64(ka - kb));
            }
            // Off the grid (any bits, NaN included): bit-exact as without one.
            rt(e, u64::from(noise), on(kb));
            rt(e, on(ka), u64::from(noise));
            let e64 = grid(8, step);
            rt(e64, (ka as f64 * step).to_bits(), (kb as f64 * step).to_bits());
            rt(e64, u64::from(noise) << 20, (kb as f64 * step).to_bits());
        }
    }

    #[test]
    fn angle_steps_cost_a_few_bits() {
        // 90.0 and 90.0 + 3 steps of 360/65536 degrees.
        let e = grid(4, 360.0 / 65536.0);
        let a = u64::from(90.0f32.to_bits());
        let b = u64::from((((16384 + 3) as f64 * (360.0 / 65536.0)) as f32).to_bits());
        assert_eq!(rt(e, b, a), (Kind::Integral, zigzag64(3)));
        // Without the grid, 90.0 is integral and the other is not: bits.
        assert_eq!(rt(el(4, DeltaOp::Int, true), b, a).0, Kind::Bits);
        // -0.0 is never on a grid.
        let neg_zero = u64::from((-0.0f32).to_bits());
        assert_eq!(whole(e, neg_zero), None);
        assert_eq!(rt(e, neg_zero, a).0, Kind::Bits);
    }

    #[test]
    fn non_canonical_step_counts_are_rejected() {
        // With a step below f32 precision near 2^24 · step, neighbouring
        // counts round to one float; only the count `whole` finds decodes.
        let e = grid(4, 1e-3);
        let mut out = [0u8; 4];
        let mut rejected = 0;
        for k in (1i64 << 24) - 200..1 << 24 {
            let Some(r) = from_whole(e, k).filter(|&r| whole(e, r) == Some(k)) else {
                continue;
            };
            let Some(bits) = from_whole(e, k + 1) else {
                continue;
            };
            let got = decode(
                e,
                Kind::Integral,
                zigzag64(1),
                &r.to_le_bytes()[..4],
                &mut out,
            );
            if whole(e, bits) == Some(k + 1) {
                assert_eq!(got, Ok(()));
            } else {
                assert_eq!(got, Err(BadValue));
                rejected += 1;
            }
        }
        assert!(rejected > 0);
    }
}
