//! Quantisation declared in the schema: a field sent at the precision the
//! game needs instead of its full bits.
//!
//! A quantised field holds, in every snapshot the codec sees, a
//! *dequantised* value: the float (or integer) that its integer code stands
//! for. The server applies [`Schema::quantize`](crate::Schema::quantize) to
//! its world once per tick, before it encodes and before it keeps the
//! snapshot as a baseline. From then on the encoder, every baseline and
//! ring entry, every shared encode, the checksum and the client's decoded
//! snapshot all hold exactly the same values: the client reconstructs
//! bit for bit what the server deltas against next tick, so no error
//! accumulates. A snapshot that was not quantised is refused by the encoder
//! ([`SnapshotError::NotQuantized`](crate::SnapshotError::NotQuantized)) instead
//! of being rounded silently.
//!
//! On the wire the coded value of a quantised field is its integer code, in
//! the field's own record slot (see FORMAT.md, "Quantised fields"): deltas
//! and the entropy stages work on small integers instead of noisy mantissas.
//!
//! All arithmetic is IEEE 754 binary64 with round-to-nearest-even: one
//! division, one multiplication, `round_ties_even`, `sqrt` and conversions,
//! never fused, never a library function whose result may differ between
//! platforms. Two machines that agree on the schema agree on every bit.
//!
//! ```
//! use tickpack::{quant::Quantize, Primitive, Schema, Snapshot};
//! let schema = Schema::builder()
//!     .entity("car")
//!     .field("pos", Primitive::F32, 3)
//!     .quantize(Quantize::step(0.001).with_range(-4096.0, 4096.0))
//!     .build()?;
//! let mut world = Snapshot::new(&schema);
//! let pos: Vec<u8> = [1.23456f32, -7.0, 0.0004].iter().flat_map(|v| v.to_le_bytes()).collect();
//! world.section_mut(0).unwrap().insert(1, &pos)?;
//! schema.quantize(&mut world)?;
//! let rec = world.sections()[0].get(1).unwrap();
//! assert_eq!(f32::from_le_bytes(rec[..4].try_into()?), 1.235);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod cache;
mod code4;
pub(crate) mod codes;
mod error;
mod float;
mod fours;
pub(crate) mod layout;
mod measure;
pub(crate) mod plan;
mod quat;
mod quat_f32;
mod scalar;
mod scale4;
#[cfg(target_arch = "x86_64")]
mod scale4_sse2;
#[cfg(feature = "serde")]
pub(crate) mod text;

pub use codes::snapshot_to_codes;
pub use error::QuantizeError;
pub use measure::{field_errors, snapshot_errors};

use crate::schema::Primitive;

/// What happens to a value outside a declared range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OutOfRange {
    /// [`QuantizeError::OutOfRange`].
    #[default]
    Error,
    /// The nearest value inside the range is used.
    Clamp,
}

/// The unit of an angle field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AngleUnit {
    /// A full turn is 360.
    Degrees,
    /// A full turn is 2π ([`core::f64::consts::TAU`]).
    Radians,
}

impl AngleUnit {
    /// One full turn in this unit.
    pub const fn turn(self) -> f64 {
        match self {
            Self::Degrees => 360.0,
            Self::Radians => core::f64::consts::TAU,
        }
    }
}

/// Largest code magnitude of a fixed-point `f32` field: below it every code
/// survives a trip through `f32` (the rounding error of the dequantised
/// value stays under a quarter step).
pub const MAX_F32_CODE: i64 = 1 << 22;
/// Largest code magnitude of a fixed-point `f64` field.
pub const MAX_F64_CODE: i64 = 1 << 50;
/// Smallest and largest `smallest_three` bits per component.
pub const SMALLEST_THREE_BITS: (u8, u8) = (4, 20);
/// Most `angle_bits` for `f32` fields (`f64` fields allow 50).
pub const MAX_F32_ANGLE_BITS: u8 = 23;

/// How one field is quantised. Declared with
/// [`SchemaBuilder::quantize`](crate::SchemaBuilder::quantize) or the
/// `quantize` key of a field in the JSON/TOML form, and part of the schema
/// id.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Quantize {
    /// Fixed point (`f32`/`f64` fields, any length): the code is
    /// `round_ties_even(x / step)`, the value `code · step`. Codes are
    /// limited to `ceil(min / step − 2^-20) ..= floor(max / step + 2^-20)`
    /// when a range is declared (the slack keeps a bound that is a multiple
    /// of the step despite rounding: `0.3 / 0.1` is `2.9999999999999996`),
    /// else to ±[`MAX_F32_CODE`] / ±[`MAX_F64_CODE`].
    Fixed {
        /// The quantum, positive.
        step: f64,
        /// Inclusive `[min, max]` of the values, if declared.
        range: Option<[f64; 2]>,
        /// What a value whose code falls outside the limits does.
        out_of_range: OutOfRange,
    },
    /// A bounded integer (integer fields, any length): values outside
    /// `min..=max` are out of range. The code is the value itself.
    Range {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
        /// What a value outside the range does.
        out_of_range: OutOfRange,
    },
    /// A rotation as a unit quaternion (`f32`/`f64`, length 4, any
    /// component order), coded "smallest three": the index of the largest
    /// component, then the other three in `bits` bits each.
    SmallestThree {
        /// Bits per component, 4 to 20.
        bits: u8,
    },
    /// An angle (`f32`/`f64`, any length), wrapped to a half-open turn
    /// `[-turn/2, turn/2)` and coded in `bits` bits.
    Angle {
        /// Bits per angle: `2^bits` steps per turn.
        bits: u8,
        /// Degrees or radians.
        unit: AngleUnit,
    },
}

impl Quantize {
    /// Fixed point with quantum `step`, no range, out-of-range is an error.
    pub const fn step(step: f64) -> Self {
        Self::Fixed {
            step,
            range: None,
            out_of_range: OutOfRange::Error,
        }
    }

    /// A bounded integer `min..=max`, out-of-range is an error.
    pub const fn int_range(min: i64, max: i64) -> Self {
        Self::Range {
            min,
            max,
            out_of_range: OutOfRange::Error,
        }
    }

    /// A unit quaternion in `bits` bits per component.
    pub const fn smallest_three(bits: u8) -> Self {
        Self::SmallestThree { bits }
    }

    /// An angle in `bits` bits per turn.
    pub const fn angle(bits: u8, unit: AngleUnit) -> Self {
        Self::Angle { bits, unit }
    }

    /// Declares the value range of a fixed-point field (other kinds are
    /// returned unchanged).
    pub const fn with_range(self, min: f64, max: f64) -> Self {
        match self {
            Self::Fixed {
                step, out_of_range, ..
            } => Self::Fixed {
                step,
                range: Some([min, max]),
                out_of_range,
            },
            other => other,
        }
    }

    /// Clamps out-of-range values instead of refusing them (fixed point and
    /// bounded integers; other kinds are returned unchanged).
    pub const fn clamped(self) -> Self {
        match self {
            Self::Fixed { step, range, .. } => Self::Fixed {
                step,
                range,
                out_of_range: OutOfRange::Clamp,
            },
            Self::Range { min, max, .. } => Self::Range {
                min,
                max,
                out_of_range: OutOfRange::Clamp,
            },
            other => other,
        }
    }

    /// The largest reconstruction error of one value, in the field's unit
    /// (radians of rotation for [`Quantize::SmallestThree`]), not counting
    /// clamping: half a step, plus a quarter step for the roundings by the
    /// code limits. For `f32` fields that is the rounding of the result to
    /// `f32`; for `f64` fields `x / step` and `code · step` each round by
    /// up to an eighth of a step at ±[`MAX_F64_CODE`] codes (angles of 50
    /// bits: at a turn from zero; an angle further out than a turn rounds
    /// `x / turn` by up to `|x / turn| · 2^(bits − 53)` steps). For
    /// quaternions see FORMAT.md, "Quantised fields", for the derivation.
    /// Integers are exact (0).
    pub fn max_error(&self, ty: Primitive) -> f64 {
        // Half a step and a quarter.
        let slack = 1.5;
        match *self {
            Self::Fixed { step, .. } => 0.5 * step * slack,
            Self::Range { .. } => 0.0,
            Self::Angle { bits, unit } => 0.5 * scalar::angle_step(bits, unit) * slack,
            Self::SmallestThree { bits } => quat::max_angle(bits, ty),
        }
    }

    /// Checks the declaration against the field it is attached to.
    pub(crate) fn check(&self, ty: Primitive, len: usize) -> Result<plan::Kind, String> {
        let float = ty.is_float();
        match *self {
            Self::Fixed {
                step,
                range,
                out_of_range,
            } => {
                if !float {
                    return Err("`step` needs an f32 or f64 field".into());
                }
                scalar::fixed(ty, step, range, out_of_range)
            }
            Self::Range {
                min,
                max,
                out_of_range,
            } => {
                if float {
                    return Err("an integer `range` needs an integer field; floats take `step` with `range`".into());
                }
                scalar::int_range(ty, min, max, out_of_range)
            }
            Self::SmallestThree { bits } => {
                if !float || len != 4 {
                    return Err("`smallest_three` needs an f32 or f64 field of length 4".into());
                }
                quat::check(bits)
            }
            Self::Angle { bits, unit } => {
                if !float {
                    return Err("`angle_bits` needs an f32 or f64 field".into());
                }
                scalar::angle(ty, bits, unit)
            }
        }
    }

    /// Bytes identifying the declaration, for the schema id.
    pub(crate) fn id_bytes(&self, out: &mut Vec<u8>) {
        let policy = |p: OutOfRange| match p {
            OutOfRange::Error => 0u8,
            OutOfRange::Clamp => 1,
        };
        match *self {
            Self::Fixed {
                step,
                range,
                out_of_range,
            } => {
                out.push(1);
                out.extend_from_slice(&step.to_bits().to_le_bytes());
                match range {
                    None => out.push(0),
                    Some([lo, hi]) => {
                        out.push(1);
                        out.extend_from_slice(&lo.to_bits().to_le_bytes());
                        out.extend_from_slice(&hi.to_bits().to_le_bytes());
                    }
                }
                out.push(policy(out_of_range));
            }
            Self::Range {
                min,
                max,
                out_of_range,
            } => {
                out.push(2);
                out.extend_from_slice(&min.to_le_bytes());
                out.extend_from_slice(&max.to_le_bytes());
                out.push(policy(out_of_range));
            }
            Self::SmallestThree { bits } => out.extend_from_slice(&[3, bits]),
            Self::Angle { bits, unit } => out.extend_from_slice(&[
                4,
                bits,
                match unit {
                    AngleUnit::Degrees => 0,
                    AngleUnit::Radians => 1,
                },
            ]),
        }
    }
}

/// The declaration in the words of the text form, for tables and logs:
/// `step 0.001 in [-4096, 4096], clamp`, `range [0, 255]`,
/// `smallest_three 10`, `angle_bits 16 degrees`.
impl core::fmt::Display for Quantize {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let policy = |p: OutOfRange| match p {
            OutOfRange::Error => "",
            OutOfRange::Clamp => ", clamp",
        };
        match *self {
            Self::Fixed {
                step,
                range,
                out_of_range,
            } => {
                write!(f, "step {step}")?;
                if let Some([lo, hi]) = range {
                    write!(f, " in [{lo}, {hi}]")?;
                }
                write!(f, "{}", policy(out_of_range))
            }
            Self::Range {
                min,
                max,
                out_of_range,
            } => write!(f, "range [{min}, {max}]{}", policy(out_of_range)),
            Self::SmallestThree { bits } => write!(f, "smallest_three {bits}"),
            Self::Angle { bits, unit } => write!(
                f,
                "angle_bits {bits} {}",
                match unit {
                    AngleUnit::Degrees => "degrees",
                    AngleUnit::Radians => "radians",
                }
            ),
        }
    }
}

/// Equal when every parameter has the same bits.
impl PartialEq for Quantize {
    fn eq(&self, other: &Self) -> bool {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        self.id_bytes(&mut a);
        other.id_bytes(&mut b);
        a == b
    }
}

impl Eq for Quantize {}
