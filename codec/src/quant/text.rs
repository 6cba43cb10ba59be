//! The text form (JSON/TOML) of a field with its optional `quantize` key:
//!
//! - fixed point: `quantize = { step = 0.001, range = [-4096, 4096], out_of_range = "clamp" }`
//!   (`range` and `out_of_range` optional, `out_of_range` is `"error"` by default);
//! - bounded integer: `quantize = { range = [0, 255] }` (with `out_of_range` optional);
//! - unit quaternion: `quantize = { smallest_three = 10 }`;
//! - angle: `quantize = { angle_bits = 16, unit = "degrees" }` (`unit` required:
//!   `"degrees"` or `"radians"`).
//!
//! and its optional `grid = 0.0054931640625` and
//! `integrate = { velocity = "velocity", time = "commandTime", scale = 0.001 }`
//! and `unit = true`.

use serde::{Deserialize, Serialize};

use super::{AngleUnit, OutOfRange, Quantize};
use crate::schema::{DeltaOp, Field, Integrate, Primitive};

/// A field as the text form writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FieldDef {
    name: String,
    #[serde(rename = "type")]
    ty: Primitive,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    len: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delta: Option<DeltaOp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    quantize: Option<QuantizeDef>,
    /// A lossless float grid step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    grid: Option<f64>,
    /// Integration over a velocity and a time field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    integrate: Option<Integrate>,
    /// A unit vector (FORMAT.md 4.10).
    #[serde(default, skip_serializing_if = "is_false")]
    unit: bool,
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn one() -> usize {
    1
}

fn is_one(v: &usize) -> bool {
    *v == 1
}

/// A number that keeps integers exact.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(untagged)]
enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn float(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PolicyDef {
    Error,
    Clamp,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum UnitDef {
    Degrees,
    Radians,
}

/// The `quantize` key.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuantizeDef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    range: Option<[Number; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    out_of_range: Option<PolicyDef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    smallest_three: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    angle_bits: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unit: Option<UnitDef>,
}

impl QuantizeDef {
    fn to_quantize(&self, ty: Primitive) -> Result<Quantize, String> {
        let policy = match self.out_of_range {
            None | Some(PolicyDef::Error) => OutOfRange::Error,
            Some(PolicyDef::Clamp) => OutOfRange::Clamp,
        };
        let only = |what: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(format!("`{what}` takes no other quantize keys"))
            }
        };
        if let Some(bits) = self.smallest_three {
            only(
                "smallest_three",
                self.step.is_none()
                    && self.range.is_none()
                    && self.out_of_range.is_none()
                    && self.angle_bits.is_none()
                    && self.unit.is_none(),
            )?;
            return Ok(Quantize::SmallestThree { bits });
        }
        if let Some(bits) = self.angle_bits {
            only(
                "angle_bits",
                self.step.is_none() && self.range.is_none() && self.out_of_range.is_none(),
            )?;
            let unit = match self.unit {
                Some(UnitDef::Degrees) => AngleUnit::Degrees,
                Some(UnitDef::Radians) => AngleUnit::Radians,
                None => return Err("`angle_bits` needs `unit = \"degrees\"` or \"radians\"".into()),
            };
            return Ok(Quantize::Angle { bits, unit });
        }
        if self.unit.is_some() {
            return Err("`unit` belongs to `angle_bits`".into());
        }
        match (self.step, self.range) {
            (Some(step), range) => Ok(Quantize::Fixed {
                step,
                range: range.map(|[a, b]| [a.float(), b.float()]),
                out_of_range: policy,
            }),
            (None, Some([Number::Int(min), Number::Int(max)])) if !ty.is_float() => {
                Ok(Quantize::Range {
                    min,
                    max,
                    out_of_range: policy,
                })
            }
            (None, Some(_)) => {
                Err("a `range` without `step` needs an integer field and integer bounds".into())
            }
            (None, None) => {
                Err("quantize needs `step`, `range`, `smallest_three` or `angle_bits`".into())
            }
        }
    }

    fn from_quantize(q: &Quantize) -> Self {
        let policy = |p: OutOfRange| match p {
            OutOfRange::Error => None,
            OutOfRange::Clamp => Some(PolicyDef::Clamp),
        };
        match *q {
            Quantize::Fixed {
                step,
                range,
                out_of_range,
            } => Self {
                step: Some(step),
                range: range.map(|r| r.map(Number::Float)),
                out_of_range: policy(out_of_range),
                ..Self::default()
            },
            Quantize::Range {
                min,
                max,
                out_of_range,
            } => Self {
                range: Some([Number::Int(min), Number::Int(max)]),
                out_of_range: policy(out_of_range),
                ..Self::default()
            },
            Quantize::SmallestThree { bits } => Self {
                smallest_three: Some(bits),
                ..Self::default()
            },
            Quantize::Angle { bits, unit } => Self {
                angle_bits: Some(bits),
                unit: Some(match unit {
                    AngleUnit::Degrees => UnitDef::Degrees,
                    AngleUnit::Radians => UnitDef::Radians,
                }),
                ..Self::default()
            },
        }
    }
}

impl FieldDef {
    /// The text form of a field and its declaration.
    pub(crate) fn new(
        field: &Field,
        quantize: Option<&Quantize>,
        grid: Option<f64>,
        integrate: Option<&Integrate>,
        unit: bool,
    ) -> Self {
        Self {
            name: field.name.clone(),
            ty: field.ty,
            len: field.len,
            delta: field.delta,
            quantize: quantize.map(QuantizeDef::from_quantize),
            grid,
            integrate: integrate.cloned(),
            unit,
        }
    }

    /// The field's `unit` key.
    pub(crate) fn unit(&self) -> bool {
        self.unit
    }

    /// The field's `grid` key.
    pub(crate) fn grid(&self) -> Option<f64> {
        self.grid
    }

    /// The field's `integrate` key.
    pub(crate) fn integrate(&self) -> Option<Integrate> {
        self.integrate.clone()
    }

    /// The field and its declaration; `Err` says what is wrong with the
    /// `quantize` key.
    pub(crate) fn into_parts(self) -> Result<(Field, Option<Quantize>), (String, String)> {
        let q = match &self.quantize {
            None => None,
            Some(d) => Some(d.to_quantize(self.ty).map_err(|e| (self.name.clone(), e))?),
        };
        Ok((
            Field {
                name: self.name,
                ty: self.ty,
                len: self.len,
                delta: self.delta,
            },
            q,
        ))
    }
}
