//! Integrated fields: a numeric field declared as the integral of a
//! velocity field (or a constant rate) over a time field of the same record
//! or over the packet's tick distance (FORMAT.md 4.9), such as a position
//! that moves by its velocity times the time elapsed, or a clock. A changed
//! entity's value is then coded against the value its baseline record
//! would have reached, not against the baseline value itself.

use super::{Field, Primitive};
use crate::error::SchemaError;

/// What [`SchemaBuilder::integrate`](super::SchemaBuilder::integrate)
/// declares on a numeric field: the field moves by `velocity × Δtime × scale`.
///
/// `velocity` names a field of the same entity type with as many elements
/// as the integrated field (element `j` drives element `j`), or is
/// [`Integrate::ONE`] (a constant rate of 1: a clock); `time` names a scalar
/// field, or is [`Integrate::TICKS`] (the packet's distance in ticks from its
/// baseline, for records that carry no time). Named fields are numeric, not
/// quantised, declared anywhere in the type (a row codes the integrated
/// elements' values after all others, FORMAT.md 4.9), and may be integrated
/// themselves unless that makes a cycle. `scale` converts time units to the velocity's (0.001 for a
/// velocity per second and a time in milliseconds; 0.05 for a velocity per
/// second over ticks of 50 ms).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Integrate {
    /// The velocity field's name.
    pub velocity: String,
    /// The time field's name.
    pub time: String,
    /// Velocity units per time unit.
    pub scale: f64,
}

impl Integrate {
    /// The velocity name of a constant rate of 1 (reserved: never a field).
    pub const ONE: &'static str = "@1";
    /// The time name of the packet's tick distance (reserved: never a field).
    pub const TICKS: &'static str = "@ticks";

    /// `velocity` over `time`, at `scale`.
    pub fn new(velocity: &str, time: &str, scale: f64) -> Self {
        Self {
            velocity: velocity.to_owned(),
            time: time.to_owned(),
            scale,
        }
    }
}

/// Scales compare by their bits, so equality is an equivalence (a NaN
/// scale, which schemas refuse, equals itself).
impl PartialEq for Integrate {
    fn eq(&self, other: &Self) -> bool {
        self.velocity == other.velocity
            && self.time == other.time
            && self.scale.to_bits() == other.scale.to_bits()
    }
}

impl Eq for Integrate {}

/// One integrated element, resolved to record offsets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Integrator {
    /// The element's index in the record (array items counted singly).
    pub(crate) element: u32,
    pub(crate) offset: usize,
    pub(crate) ty: Primitive,
    /// The velocity element; `None`: the constant 1.
    pub(crate) velocity: Option<(usize, Primitive)>,
    /// The time field; `None`: the packet's tick distance.
    pub(crate) time: Option<(usize, Primitive)>,
    pub(crate) scale: f64,
    /// 1 for a field integrated from fields that are not, `n + 1` for one
    /// integrated from a level-`n` field (FORMAT.md 4.9).
    pub(crate) level: u32,
    /// The field declares a grid (its values are then not snapped to
    /// whole numbers, FORMAT.md 4.9).
    pub(crate) grid: bool,
}

impl PartialEq for Integrator {
    fn eq(&self, other: &Self) -> bool {
        (
            self.element,
            self.offset,
            self.ty,
            self.velocity,
            self.time,
            self.grid,
            self.level,
        ) == (
            other.element,
            other.offset,
            other.ty,
            other.velocity,
            other.time,
            other.grid,
            other.level,
        ) && self.scale.to_bits() == other.scale.to_bits()
    }
}

impl Eq for Integrator {}

/// Checks the declarations `integrate` (one per field, `None` where not
/// declared) against the fields, and returns the elements they resolve
/// to, in element order. `quantised(i)`: whether field `i` is quantised;
/// `grid(i)`: whether it declares a grid.
pub(crate) fn resolve(
    fields: &[Field],
    offsets: &[usize],
    integrate: &[Option<Integrate>],
    quantised: impl Fn(usize) -> bool,
    grid: impl Fn(usize) -> bool,
) -> Result<Vec<Integrator>, SchemaError> {
    let mut out = Vec::new();
    let mut element = 0u32;
    // Each declared field's velocity and time fields (`None`: reserved).
    let mut deps: Vec<Option<[Option<usize>; 2]>> = vec![None; fields.len()];
    for (i, f) in fields.iter().enumerate() {
        let first = element;
        element += f.len as u32;
        let Some(d) = integrate.get(i).and_then(Option::as_ref) else {
            continue;
        };
        let bad = |reason: String| SchemaError::BadIntegrate {
            field: f.name.clone(),
            reason,
        };
        if quantised(i) {
            return Err(bad("the field is quantised".into()));
        }
        if !(d.scale.is_finite() && d.scale > 0.0) {
            return Err(bad("the scale is not a positive finite number".into()));
        }
        let find = |name: &str, what: &str| {
            let j = fields
                .iter()
                .position(|g| g.name == name)
                .filter(|&j| j != i)
                .ok_or_else(|| bad(format!("no {what} field `{name}` beside it")))?;
            if quantised(j) {
                return Err(bad(format!("the {what} field `{name}` is quantised")));
            }
            Ok(j)
        };
        let v = (d.velocity != Integrate::ONE)
            .then(|| find(&d.velocity, "velocity"))
            .transpose()?;
        let t = (d.time != Integrate::TICKS)
            .then(|| find(&d.time, "time"))
            .transpose()?;
        if let Some(v) = v.filter(|&v| fields[v].len != f.len) {
            return Err(bad(format!(
                "the velocity field `{}` has {} elements, the field {}",
                d.velocity, fields[v].len, f.len
            )));
        }
        if t.is_some_and(|t| fields[t].len != 1) {
            return Err(bad(format!("the time field `{}` is an array", d.time)));
        }
        deps[i] = Some([v, t]);
        for k in 0..f.len {
            out.push(Integrator {
                element: first + k as u32,
                offset: offsets[i] + k * f.ty.size(),
                ty: f.ty,
                velocity: v.map(|v| (offsets[v] + k * fields[v].ty.size(), fields[v].ty)),
                time: t.map(|t| (offsets[t], fields[t].ty)),
                scale: d.scale,
                grid: grid(i),
                level: 0,
            });
        }
    }
    // Levels: a field integrated from fields that are not is level 1, one
    // integrated from a level-`n` field at most is level `n + 1` (its
    // velocity and time are final once that level is decoded, 4.9). In a
    // cycle the levels grow without end: past the field count, it is one.
    let mut level = vec![0u32; fields.len()];
    for _ in 0..=fields.len() {
        let mut moved = false;
        for i in 0..fields.len() {
            if let Some(d) = deps[i] {
                let l = 1 + d.iter().flatten().map(|&j| level[j]).max().unwrap_or(0);
                moved |= l != level[i];
                level[i] = l;
            }
        }
        if !moved {
            break;
        }
    }
    if let Some(i) = (0..fields.len()).find(|&i| level[i] as usize > fields.len()) {
        return Err(SchemaError::BadIntegrate {
            field: fields[i].name.clone(),
            reason: "its velocity or time is integrated from it".into(),
        });
    }
    // `out` holds the declared fields' elements in field order.
    let mut at = 0usize;
    for (i, f) in fields.iter().enumerate() {
        if deps[i].is_some() {
            for o in out.iter_mut().skip(at).take(f.len) {
                o.level = level[i];
            }
            at += f.len;
        }
    }
    Ok(out)
}

/// The declaration's part of the schema id: the indices of the velocity
/// and time fields (`u32::MAX` for [`Integrate::ONE`] and
/// [`Integrate::TICKS`]) and the scale's bits.
pub(crate) fn id_bytes(fields: &[Field], d: &Integrate, out: &mut Vec<u8>) {
    for (name, reserved) in [(&d.velocity, Integrate::ONE), (&d.time, Integrate::TICKS)] {
        let j = if name == reserved {
            u32::MAX
        } else {
            fields.iter().position(|g| &g.name == name).unwrap_or(0) as u32
        };
        out.extend_from_slice(&j.to_le_bytes());
    }
    out.extend_from_slice(&d.scale.to_bits().to_le_bytes());
}
