//! Reconstruction error per field: what a game (or the lobby) reports next
//! to its bandwidth figures.

use super::plan::{read_float, read_integer};
use super::Quantize;
use crate::error::SnapshotError;
use crate::schema::{EntityType, Primitive, Schema};
use crate::snapshot::Snapshot;

/// Raises `max[f]` to the error of field `f` between an `original` record
/// and its `reconstructed` value, for every field `f < max.len()`:
///
/// - fixed point and other floats: the largest absolute difference of an
///   element (`0` when the bits are equal, `+∞` when exactly one is NaN);
/// - angles: the absolute difference wrapped to half a turn;
/// - [`Quantize::SmallestThree`]: the rotation angle between the two
///   quaternions, in radians, each normalised first;
/// - integers: the largest absolute difference.
///
/// Both records must have the entity type's record size.
pub fn field_errors(
    ty: &EntityType,
    original: &[u8],
    reconstructed: &[u8],
    max: &mut [f64],
) -> Result<(), SnapshotError> {
    for r in [original, reconstructed] {
        if r.len() != ty.record_size() {
            return Err(SnapshotError::RecordSize {
                expected: ty.record_size(),
                actual: r.len(),
            });
        }
    }
    let fields = ty.fields().iter().zip(ty.offsets()).zip(ty.quantization());
    for (((f, &off), q), m) in fields.zip(max.iter_mut()) {
        let err = match q {
            Some(Quantize::SmallestThree { .. }) if f.len == 4 => {
                let a = [0, 1, 2, 3].map(|e| read_float(original, off, f.ty, e));
                let b = [0, 1, 2, 3].map(|e| read_float(reconstructed, off, f.ty, e));
                rotation_angle(&a, &b)
            }
            Some(Quantize::Angle { unit, .. }) => (0..f.len)
                .map(|e| {
                    let d = read_float(original, off, f.ty, e)
                        - read_float(reconstructed, off, f.ty, e);
                    let turn = unit.turn();
                    (d - (d / turn).round_ties_even() * turn).abs()
                })
                .fold(0.0, f64::max),
            _ if f.ty.is_float() => (0..f.len)
                .map(|e| {
                    let (a, b) = (
                        read_float(original, off, f.ty, e),
                        read_float(reconstructed, off, f.ty, e),
                    );
                    float_diff(a, b, f.ty)
                })
                .fold(0.0, f64::max),
            _ => (0..f.len)
                .map(|e| {
                    (read_integer(original, off, f.ty, e)
                        - read_integer(reconstructed, off, f.ty, e))
                    .unsigned_abs() as f64
                })
                .fold(0.0, f64::max),
        };
        *m = m.max(err);
    }
    Ok(())
}

/// [`field_errors`] over whole snapshots: `max[section][field]` is raised
/// to the error of every entity present in both `original` (for example the
/// server's world before [`Schema::quantize`]) and `reconstructed` (what a
/// client decoded), matched by id. `max` is resized to the schema's shape;
/// sections that do not fit the schema are skipped.
pub fn snapshot_errors(
    schema: &Schema,
    original: &Snapshot,
    reconstructed: &Snapshot,
    max: &mut Vec<Vec<f64>>,
) {
    max.resize(schema.sections().len(), Vec::new());
    for (((ty, a), b), m) in schema
        .sections()
        .iter()
        .zip(original.sections())
        .zip(reconstructed.sections())
        .zip(max.iter_mut())
    {
        m.resize(ty.fields().len(), 0.0);
        for (id, rec) in a.iter() {
            if let Some(got) = b.get(id) {
                // Both records come from sections of the schema's size or are skipped.
                let _ = field_errors(ty, rec, got, m);
            }
        }
    }
}

fn float_diff(a: f64, b: f64, ty: Primitive) -> f64 {
    let same = match ty {
        Primitive::F32 => (a as f32).to_bits() == (b as f32).to_bits(),
        _ => a.to_bits() == b.to_bits(),
    };
    match (same, a.is_nan(), b.is_nan()) {
        (true, _, _) | (_, true, true) => 0.0,
        (_, true, false) | (_, false, true) => f64::INFINITY,
        _ => (a - b).abs(),
    }
}

/// The angle of the rotation between two quaternions, `4·asin(d/2)` with
/// `d` the distance between the normalised quaternions on the same side.
fn rotation_angle(a: &[f64; 4], b: &[f64; 4]) -> f64 {
    let norm = |x: &[f64; 4]| x.iter().map(|c| c * c).sum::<f64>().sqrt();
    let (na, nb) = (norm(a), norm(b));
    if !(na > 0.0 && nb > 0.0 && na.is_finite() && nb.is_finite()) {
        return f64::INFINITY;
    }
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let sign = if dot < 0.0 { -1.0 } else { 1.0 };
    let d = a
        .iter()
        .zip(b)
        .map(|(x, y)| {
            let e = x / na - sign * y / nb;
            e * e
        })
        .sum::<f64>()
        .sqrt();
    4.0 * (d / 2.0).min(1.0).asin()
}
