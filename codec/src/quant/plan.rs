//! The quantised fields of one entity type and the three record transforms:
//! quantise (value to nearest representable value), to codes (value to
//! integer code, in place) and from codes (back, refusing invalid codes).
//!
//! Records are always `record_size` bytes and slot offsets were checked
//! against it when the schema was built.

#![forbid(unsafe_code)]

use super::float::{Float, F32, F64};
use super::{quat, scalar};
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
/// `min..=max`; `Err((field, element))` names the first that does not.
fn int_in_range(s: &Slot, min: i64, max: i64, rec: &[u8]) -> Result<(), (usize, usize)> {
    for e in 0..s.len {
        let v = read_int(rec, s.offset + e * s.ty.size(), s.ty);
        if v < i128::from(min) || v > i128::from(max) {
            return Err((s.field, e));
        }
    }
    Ok(())
}

/// Replaces every quantised value of `rec` by its code. `Err((field,
/// element))` names a value that is not exactly a representable value.
pub(crate) fn to_codes(slots: &[Slot], rec: &mut [u8]) -> Result<(), (usize, usize)> {
    for s in slots {
        match s.kind {
            Kind::Int { min, max, .. } => int_in_range(s, min, max, rec)?,
            _ if s.ty == Primitive::F32 => slot_to_codes::<F32>(s, rec)?,
            _ => slot_to_codes::<F64>(s, rec)?,
        }
    }
    Ok(())
}

/// [`to_codes`] for the float slot `s`, of element type `T`.
#[inline]
fn slot_to_codes<T: Float>(s: &Slot, rec: &mut [u8]) -> Result<(), (usize, usize)> {
    let field = &mut rec[s.offset..s.offset + s.len * T::WIDTH];
    match s.kind {
        Kind::Fixed { step, lo, hi, .. } => {
            let (lo, hi) = (lo as f64, hi as f64);
            for (e, b) in field.chunks_exact_mut(T::WIDTH).enumerate() {
                let x = T::read(b);
                let q = scalar::fixed_code(x, step);
                // NaN fails the range test. The value is rebuilt from the
                // integer code, so that -0.0 (code 0, value +0.0) fails.
                if !(q >= lo && q <= hi) {
                    return Err((s.field, e));
                }
                let q = q as i64;
                if T::round(q as f64 * step).to_bits() != x.to_bits() {
                    return Err((s.field, e));
                }
                T::write_code(b, q);
            }
        }
        Kind::Angle { bits, step, turn } => {
            for (e, b) in field.chunks_exact_mut(T::WIDTH).enumerate() {
                let x = T::read(b);
                if !x.is_finite() {
                    return Err((s.field, e));
                }
                let q = scalar::angle_code(x, bits, turn);
                if T::round(q as f64 * step).to_bits() != x.to_bits() {
                    return Err((s.field, e));
                }
                T::write_code(b, q);
            }
        }
        Kind::Quat { m, s: st } => {
            let x = quat_read(rec, s.offset, s.ty);
            let (k, q) = quat::code_of(&x, m, st, s.ty).ok_or((s.field, 0))?;
            let field = &mut rec[s.offset..s.offset + 4 * T::WIDTH];
            for (b, v) in field
                .chunks_exact_mut(T::WIDTH)
                .zip([k as i64, q[0], q[1], q[2]])
            {
                T::write_code(b, v);
            }
        }
        Kind::Int { min, max, .. } => int_in_range(s, min, max, rec)?,
    }
    Ok(())
}

/// Replaces every code of `rec` by its value. `Err((field, element))` names
/// a code outside its limits (or non-canonical quaternion codes).
pub(crate) fn from_codes(slots: &[Slot], rec: &mut [u8]) -> Result<(), (usize, usize)> {
    for s in slots {
        match s.kind {
            Kind::Int { min, max, .. } => int_in_range(s, min, max, rec)?,
            _ if s.ty == Primitive::F32 => slot_from_codes::<F32>(s, rec)?,
            _ => slot_from_codes::<F64>(s, rec)?,
        }
    }
    Ok(())
}

/// [`from_codes`] for the float slot `s`, of element type `T`.
#[inline]
fn slot_from_codes<T: Float>(s: &Slot, rec: &mut [u8]) -> Result<(), (usize, usize)> {
    match s.kind {
        Kind::Fixed { step, lo, hi, .. } => {
            let field = &mut rec[s.offset..s.offset + s.len * T::WIDTH];
            for (e, b) in field.chunks_exact_mut(T::WIDTH).enumerate() {
                let q = T::read_code(b);
                if q < lo || q > hi {
                    return Err((s.field, e));
                }
                T::write(b, q as f64 * step);
            }
        }
        Kind::Angle { bits, step, .. } => {
            let field = &mut rec[s.offset..s.offset + s.len * T::WIDTH];
            for (e, b) in field.chunks_exact_mut(T::WIDTH).enumerate() {
                let q = T::read_code(b);
                if !scalar::angle_code_ok(q, bits) {
                    return Err((s.field, e));
                }
                T::write(b, q as f64 * step);
            }
        }
        Kind::Quat { m, s: st } => {
            let field = &mut rec[s.offset..s.offset + 4 * T::WIDTH];
            let mut c = [0i64; 4];
            for (v, b) in c.iter_mut().zip(field.chunks_exact(T::WIDTH)) {
                *v = T::read_code(b);
            }
            let [k, q @ ..] = c;
            if !(0..4).contains(&k) {
                return Err((s.field, 0));
            }
            if let Some(j) = q.iter().position(|c| c.abs() > m) {
                return Err((s.field, j + 1));
            }
            let v = quat::canonical_value(k as usize, q, m, st, s.ty).ok_or((s.field, 0))?;
            for (b, c) in field.chunks_exact_mut(T::WIDTH).zip(v) {
                T::write(b, c);
            }
        }
        Kind::Int { min, max, .. } => int_in_range(s, min, max, rec)?,
    }
    Ok(())
}

/// Reads element `e` of a float field as `f64` (for error measurement).
pub(crate) fn read_float(rec: &[u8], offset: usize, ty: Primitive, e: usize) -> f64 {
    read_f(rec, offset + e * ty.size(), ty)
}

/// Reads element `e` of an integer field (for error measurement).
pub(crate) fn read_integer(rec: &[u8], offset: usize, ty: Primitive, e: usize) -> i128 {
    read_int(rec, offset + e * ty.size(), ty)
}
