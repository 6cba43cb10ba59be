//! The quantised fields of one entity type and the three record transforms:
//! quantise (value to nearest representable value), to codes (value to
//! integer code, in place) and from codes (back, refusing invalid codes).
//!
//! Records are always `record_size` bytes and slot offsets were checked
//! against it when the schema was built.

use super::code4::{self, Code};
use super::float::{Float, F32, F64};
use super::{quat, quat_f32, scalar, scale4};
use crate::schema::Primitive;

/// A validated declaration with its derived constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    /// Fixed point: codes `lo..=hi`.
    Fixed {
        step: f64,
        lo: i64,
        hi: i64,
        clamp: bool,
    },
    /// Bounded integer.
    Int { min: i64, max: i64, clamp: bool },
    /// Smallest three, `m = 2^(bits−1) − 1`, `s` the component step.
    Quat { m: i64, s: f64 },
    /// Angle in `bits` bits per turn.
    Angle { bits: u8, step: f64, turn: f64 },
}

// Parameters are finite (checked when the schema is built).
impl Eq for Kind {}

/// One quantised field in a record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slot {
    /// Field index in the entity type.
    pub(crate) field: usize,
    /// Byte offset in the record.
    pub(crate) offset: usize,
    /// Element type.
    pub(crate) ty: Primitive,
    /// Array length.
    pub(crate) len: usize,
    /// The declaration.
    pub(crate) kind: Kind,
}

impl Eq for Slot {}

/// Why a value could not be quantised: the field index, the element and
/// what went wrong.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fault {
    pub(crate) field: usize,
    pub(crate) element: usize,
    pub(crate) what: FaultKind,
}

/// The kinds of [`Fault`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum FaultKind {
    NotFinite,
    OutOfRange { value: f64, min: f64, max: f64 },
    ZeroQuaternion,
}

// The element accessors below copy fixed widths (a copy of a variable
// length would call `memcpy` once per element).

/// The `N` bytes of `rec` at `at`.
#[inline]
fn bytes<const N: usize>(rec: &[u8], at: usize) -> [u8; N] {
    let mut b = [0u8; N];
    b.copy_from_slice(&rec[at..at + N]);
    b
}

/// Writes the low `ty.size()` bytes of `v` (little-endian) at `at`.
#[inline]
fn put(rec: &mut [u8], at: usize, ty: Primitive, v: u64) {
    let b = v.to_le_bytes();
    match ty.size() {
        1 => rec[at] = b[0],
        2 => rec[at..at + 2].copy_from_slice(&b[..2]),
        4 => rec[at..at + 4].copy_from_slice(&b[..4]),
        _ => rec[at..at + 8].copy_from_slice(&b),
    }
}

fn read_f(rec: &[u8], at: usize, ty: Primitive) -> f64 {
    match ty {
        Primitive::F32 => f64::from(f32::from_le_bytes(bytes(rec, at))),
        _ => f64::from_le_bytes(bytes(rec, at)),
    }
}

fn write_f(rec: &mut [u8], at: usize, ty: Primitive, v: f64) {
    match ty {
        Primitive::F32 => put(rec, at, ty, u64::from((v as f32).to_bits())),
        _ => put(rec, at, ty, v.to_bits()),
    }
}

fn read_int(rec: &[u8], at: usize, ty: Primitive) -> i128 {
    match ty {
        Primitive::U8 => rec[at].into(),
        Primitive::I8 => (rec[at] as i8).into(),
        Primitive::U16 => u16::from_le_bytes(bytes(rec, at)).into(),
        Primitive::I16 => i16::from_le_bytes(bytes(rec, at)).into(),
        Primitive::U32 => u32::from_le_bytes(bytes(rec, at)).into(),
        Primitive::I32 => i32::from_le_bytes(bytes(rec, at)).into(),
        Primitive::U64 => u64::from_le_bytes(bytes(rec, at)).into(),
        _ => i64::from_le_bytes(bytes(rec, at)).into(),
    }
}

/// Writes an integer known to fit the type (two's complement, little-endian).
fn write_int(rec: &mut [u8], at: usize, ty: Primitive, v: i64) {
    put(rec, at, ty, v as u64);
}

fn quat_read(rec: &[u8], at: usize, ty: Primitive) -> [f64; 4] {
    let w = ty.size();
    [0, 1, 2, 3].map(|i| read_f(rec, at + i * w, ty))
}

/// Replaces every quantised value of `rec` by the nearest representable
/// value (clamping where declared).
pub(crate) fn quantize(slots: &[Slot], rec: &mut [u8]) -> Result<(), Fault> {
    for s in slots {
        let w = s.ty.size();
        let fault = |element, what| Fault {
            field: s.field,
            element,
            what,
        };
        match s.kind {
            Kind::Fixed {
                step,
                lo,
                hi,
                clamp,
            } => {
                for e in 0..s.len {
                    let at = s.offset + e * w;
                    let x = read_f(rec, at, s.ty);
                    if !x.is_finite() {
                        return Err(fault(e, FaultKind::NotFinite));
                    }
                    let q = scalar::fixed_code(x, step);
                    let (lo_f, hi_f) = (lo as f64, hi as f64);
                    let q = if q < lo_f || q > hi_f {
                        if !clamp {
                            return Err(fault(
                                e,
                                FaultKind::OutOfRange {
                                    value: x,
                                    min: scalar::value(lo, step, s.ty),
                                    max: scalar::value(hi, step, s.ty),
                                },
                            ));
                        }
                        q.clamp(lo_f, hi_f)
                    } else {
                        q
                    };
                    write_f(rec, at, s.ty, scalar::value(q as i64, step, s.ty));
                }
            }
            Kind::Int { min, max, clamp } => {
                for e in 0..s.len {
                    let at = s.offset + e * w;
                    let v = read_int(rec, at, s.ty);
                    if v < i128::from(min) || v > i128::from(max) {
                        if !clamp {
                            return Err(fault(
                                e,
                                FaultKind::OutOfRange {
                                    value: v as f64,
                                    min: min as f64,
                                    max: max as f64,
                                },
                            ));
                        }
                        let c = v.clamp(i128::from(min), i128::from(max));
                        write_int(rec, at, s.ty, c as i64);
                    }
                }
            }
            Kind::Angle { bits, step, turn } => {
                for e in 0..s.len {
                    let at = s.offset + e * w;
                    let x = read_f(rec, at, s.ty);
                    if !x.is_finite() {
                        return Err(fault(e, FaultKind::NotFinite));
                    }
                    let q = scalar::angle_code(x, bits, turn);
                    write_f(rec, at, s.ty, scalar::value(q, step, s.ty));
                }
            }
            Kind::Quat { m, s: st } => {
                let x = quat_read(rec, s.offset, s.ty);
                if let Some(e) = x.iter().position(|c| !c.is_finite()) {
                    return Err(fault(e, FaultKind::NotFinite));
                }
                let v =
                    quat::quantize(&x, m, st, s.ty).ok_or(fault(0, FaultKind::ZeroQuaternion))?;
                for (i, c) in v.iter().enumerate() {
                    write_f(rec, s.offset + i * w, s.ty, *c);
                }
            }
        }
    }
    Ok(())
}

/// Checks that every element of the bounded-integer slot `s` lies in
/// `min..=max`; `Err(element)` names the first that does not.
fn int_in_range(s: &Slot, min: i64, max: i64, rec: &[u8]) -> Result<(), usize> {
    for e in 0..s.len {
        let v = read_int(rec, s.offset + e * s.ty.size(), s.ty);
        if v < i128::from(min) || v > i128::from(max) {
            return Err(e);
        }
    }
    Ok(())
}

/// Runs `f` on each record of `records` (`rs` bytes each) in order;
/// `Err((record, element))` names the first it refuses and the element.
#[inline(always)]
fn each(
    records: &mut [u8],
    rs: usize,
    mut f: impl FnMut(&mut [u8]) -> Result<(), usize>,
) -> Result<(), (usize, usize)> {
    for (i, rec) in records.chunks_exact_mut(rs.max(1)).enumerate() {
        f(rec).map_err(|e| (i, e))?;
    }
    Ok(())
}

/// Which transform [`slot_each`] applies.
#[derive(Clone, Copy)]
enum Way {
    ToCodes,
    FromCodes,
}

/// Applies `way` to slot `s` of every record of `records` (`rs` bytes
/// each), one loop per kind and element type. `Err((record, element))`
/// names the first refused value.
fn slot_each(s: &Slot, way: Way, records: &mut [u8], rs: usize) -> Result<(), (usize, usize)> {
    match (s.kind, way) {
        (Kind::Int { min, max, .. }, _) => each(records, rs, |rec| int_in_range(s, min, max, rec)),
        (Kind::Fixed { step, lo, hi, .. }, Way::ToCodes) if s.ty == Primitive::F32 => {
            // An `f32` code is an `i32`: limits beyond it clamp to it
            // (`i32::MIN` stands for refused lanes), unless no `i32` is
            // within them.
            let (lo, hi) = (lo.max(i64::from(i32::MIN) + 1), hi.min(i64::from(i32::MAX)));
            match (i32::try_from(lo), i32::try_from(hi)) {
                (Ok(lo), Ok(hi)) if lo <= hi => {
                    f32_to_codes(s, Code::Fixed { step, lo, hi }, records, rs)
                }
                _ => slot_to_codes::<F32>(s, records, rs),
            }
        }
        (Kind::Angle { bits, step, turn }, Way::ToCodes) if s.ty == Primitive::F32 && bits < 32 => {
            f32_to_codes(s, Code::Angle { bits, step, turn }, records, rs)
        }
        (Kind::Quat { m, s: st }, Way::ToCodes)
            if s.ty == Primitive::F32 && s.offset + 16 <= rs =>
        {
            quat_f32::to_codes(s.offset, m, st, records, rs)
        }
        (_, Way::ToCodes) if s.ty == Primitive::F32 => slot_to_codes::<F32>(s, records, rs),
        (_, Way::ToCodes) => slot_to_codes::<F64>(s, records, rs),
        (Kind::Fixed { step, lo, hi, .. }, Way::FromCodes) if s.ty == Primitive::F32 => {
            scaled_f32_from_codes(s, lo, hi, step, records, rs)
        }
        (Kind::Angle { bits, step, .. }, Way::FromCodes) if s.ty == Primitive::F32 => {
            // `scalar::angle_code_ok`'s range.
            let half = 1i64 << (bits - 1);
            scaled_f32_from_codes(s, -half, half - 1, step, records, rs)
        }
        (Kind::Quat { m, s: st }, Way::FromCodes)
            if s.ty == Primitive::F32 && s.offset + 16 <= rs =>
        {
            quat_f32::from_codes(s.offset, m, st, records, rs)
        }
        (_, Way::FromCodes) if s.ty == Primitive::F32 => slot_from_codes::<F32>(s, records, rs),
        (_, Way::FromCodes) => slot_from_codes::<F64>(s, records, rs),
    }
}

/// [`slot_to_codes`] of a fixed-step `f32` slot coded as `c`: four
/// records at a time ([`code4`]), the rest one at a time.
fn f32_to_codes(s: &Slot, c: Code, records: &mut [u8], rs: usize) -> Result<(), (usize, usize)> {
    let done = code4::fours(s.offset, s.len, c, records, rs)?;
    let rest = records.get_mut(done * rs..).unwrap_or_default();
    slot_to_codes::<F32>(s, rest, rs).map_err(|(i, e)| (i + done, e))
}

/// [`slot_from_codes`] of an `f32` slot whose values are `code · step` for
/// codes in `lo..=hi`: four records at a time ([`scale4`]), the rest one
/// at a time.
fn scaled_f32_from_codes(
    s: &Slot,
    lo: i64,
    hi: i64,
    step: f64,
    records: &mut [u8],
    rs: usize,
) -> Result<(), (usize, usize)> {
    // An `f32` code is an `i32`: limits beyond it clamp to it, unless no
    // `i32` is within them.
    let (lo32, hi32) = (lo.max(i64::from(i32::MIN)), hi.min(i64::from(i32::MAX)));
    let (Ok(lo32), Ok(hi32)) = (i32::try_from(lo32), i32::try_from(hi32)) else {
        return slot_from_codes::<F32>(s, records, rs);
    };
    let done = scale4::fours(s.offset, s.len, lo32, hi32, step, records, rs)?;
    let rest = records.get_mut(done * rs..).unwrap_or_default();
    slot_from_codes::<F32>(s, rest, rs).map_err(|(i, e)| (i + done, e))
}

/// Applies `way` to every record of `records` (`rs` bytes each), slot by
/// slot. `Err((record, field, element))` names the first refused value in
/// record order (within a record, slot order), as converting record by
/// record would.
fn records_each(
    slots: &[Slot],
    way: Way,
    records: &mut [u8],
    rs: usize,
) -> Result<(), (usize, usize, usize)> {
    for (j, s) in slots.iter().enumerate() {
        let Err((i, element)) = slot_each(s, way, records, rs) else {
            continue;
        };
        // An earlier record may hold a refused value in a later slot (those
        // slots are still untouched): the first such wins.
        let later = slots.get(j + 1..).unwrap_or_default();
        let mut copy = Vec::new();
        for (r, rec) in records.chunks_exact(rs.max(1)).take(i).enumerate() {
            copy.clear();
            copy.extend_from_slice(rec);
            for t in later {
                if let Err((_, e)) = slot_each(t, way, &mut copy, rs) {
                    return Err((r, t.field, e));
                }
            }
        }
        return Err((i, s.field, element));
    }
    Ok(())
}

/// Replaces every quantised value of `rec` by its code. `Err((field,
/// element))` names a value that is not exactly a representable value.
pub(crate) fn to_codes(slots: &[Slot], rec: &mut [u8]) -> Result<(), (usize, usize)> {
    let rs = rec.len();
    records_each(slots, Way::ToCodes, rec, rs).map_err(|(_, field, element)| (field, element))
}

/// [`to_codes`] for every record of `records` (`rs` bytes each).
/// `Err((record, field, element))` names the first refused value.
pub(crate) fn records_to_codes(
    slots: &[Slot],
    records: &mut [u8],
    rs: usize,
) -> Result<(), (usize, usize, usize)> {
    records_each(slots, Way::ToCodes, records, rs)
}

/// The code of fixed-point value `x` of element type `T` (codes `lo..=hi`
/// as floats), or `None` when `x` is not exactly a representable value.
#[inline(always)]
pub(super) fn fixed_to_code<T: Float>(x: f64, step: f64, lo: f64, hi: f64) -> Option<i64> {
    let q = scalar::fixed_code(x, step);
    // NaN fails the range test. The value is rebuilt from the integer
    // code, so that -0.0 (code 0, value +0.0) fails.
    if !(q >= lo && q <= hi) {
        return None;
    }
    let q = q as i64;
    (T::round(q as f64 * step).to_bits() == x.to_bits()).then_some(q)
}

/// The code of angle `x` of element type `T`, or `None` when `x` is not
/// exactly a representable value.
#[inline(always)]
pub(super) fn angle_to_code<T: Float>(x: f64, bits: u8, step: f64, turn: f64) -> Option<i64> {
    if !x.is_finite() {
        return None;
    }
    let q = scalar::angle_code(x, bits, turn);
    (T::round(q as f64 * step).to_bits() == x.to_bits()).then_some(q)
}

/// [`to_codes`] for the float slot `s` of each record, of element type `T`.
pub(super) fn slot_to_codes<T: Float>(
    s: &Slot,
    records: &mut [u8],
    rs: usize,
) -> Result<(), (usize, usize)> {
    let at = s.offset..s.offset + s.len * T::WIDTH;
    match s.kind {
        Kind::Fixed { step, lo, hi, .. } => {
            let (lo, hi) = (lo as f64, hi as f64);
            each(records, rs, |rec| {
                for (e, b) in rec[at.clone()].chunks_exact_mut(T::WIDTH).enumerate() {
                    let q = fixed_to_code::<T>(T::read(b), step, lo, hi).ok_or(e)?;
                    T::write_code(b, q);
                }
                Ok(())
            })
        }
        Kind::Angle { bits, step, turn } => each(records, rs, |rec| {
            for (e, b) in rec[at.clone()].chunks_exact_mut(T::WIDTH).enumerate() {
                let q = angle_to_code::<T>(T::read(b), bits, step, turn).ok_or(e)?;
                T::write_code(b, q);
            }
            Ok(())
        }),
        Kind::Quat { m, s: st } => each(records, rs, |rec| {
            let field = &mut rec[s.offset..s.offset + 4 * T::WIDTH];
            let mut x = [0f64; 4];
            for (v, b) in x.iter_mut().zip(field.chunks_exact(T::WIDTH)) {
                *v = T::read(b);
            }
            let (k, q) = quat::code_of(&x, m, st, s.ty).ok_or(0usize)?;
            for (b, v) in field
                .chunks_exact_mut(T::WIDTH)
                .zip([k as i64, q[0], q[1], q[2]])
            {
                T::write_code(b, v);
            }
            Ok(())
        }),
        Kind::Int { min, max, .. } => each(records, rs, |rec| int_in_range(s, min, max, rec)),
    }
}

/// Replaces every code of the records of `records` (`rs` bytes each) by
/// its value. `Err((record, field, element))` names the first code outside
/// its limits (or non-canonical quaternion codes).
pub(crate) fn records_from_codes(
    slots: &[Slot],
    records: &mut [u8],
    rs: usize,
) -> Result<(), (usize, usize, usize)> {
    records_each(slots, Way::FromCodes, records, rs)
}

/// [`records_from_codes`] for the float slot `s` of each record, of
/// element type `T`.
pub(super) fn slot_from_codes<T: Float>(
    s: &Slot,
    records: &mut [u8],
    rs: usize,
) -> Result<(), (usize, usize)> {
    let at = s.offset..s.offset + s.len * T::WIDTH;
    match s.kind {
        Kind::Fixed { step, lo, hi, .. } => each(records, rs, |rec| {
            for (e, b) in rec[at.clone()].chunks_exact_mut(T::WIDTH).enumerate() {
                let q = T::read_code(b);
                if q < lo || q > hi {
                    return Err(e);
                }
                T::write(b, q as f64 * step);
            }
            Ok(())
        }),
        Kind::Angle { bits, step, .. } => each(records, rs, |rec| {
            for (e, b) in rec[at.clone()].chunks_exact_mut(T::WIDTH).enumerate() {
                let q = T::read_code(b);
                if !scalar::angle_code_ok(q, bits) {
                    return Err(e);
                }
                T::write(b, q as f64 * step);
            }
            Ok(())
        }),
        Kind::Quat { m, s: st } => each(records, rs, |rec| {
            let field = &mut rec[s.offset..s.offset + 4 * T::WIDTH];
            let mut c = [0i64; 4];
            for (v, b) in c.iter_mut().zip(field.chunks_exact(T::WIDTH)) {
                *v = T::read_code(b);
            }
            let [k, q @ ..] = c;
            if !(0..4).contains(&k) {
                return Err(0);
            }
            if let Some(j) = q.iter().position(|c| c.unsigned_abs() > m.unsigned_abs()) {
                return Err(j + 1);
            }
            let v = quat::canonical_value(k as usize, q, m, st, s.ty).ok_or(0usize)?;
            for (b, c) in field.chunks_exact_mut(T::WIDTH).zip(v) {
                T::write(b, c);
            }
            Ok(())
        }),
        Kind::Int { min, max, .. } => each(records, rs, |rec| int_in_range(s, min, max, rec)),
    }
}

/// Reads element `e` of a float field as `f64` (for error measurement).
pub(crate) fn read_float(rec: &[u8], offset: usize, ty: Primitive, e: usize) -> f64 {
    read_f(rec, offset + e * ty.size(), ty)
}

/// Reads element `e` of an integer field (for error measurement).
pub(crate) fn read_integer(rec: &[u8], offset: usize, ty: Primitive, e: usize) -> i128 {
    read_int(rec, offset + e * ty.size(), ty)
}
