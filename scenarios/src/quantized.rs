//! The racing and arena scenarios with quantisation declared in their
//! schemas: the same simulations, every tick quantised as a server would
//! before sending it.

use tickpack::quant::{AngleUnit, Quantize};
use tickpack::{DeltaOp, Field, Primitive, Schema};

use super::{arena_shooter, racing_lobby, Scenario};

/// The racing schema with quantisation declared (same record layout as
/// [`racing_schema`](super::racing_schema), a different schema id):
///
/// - `position`: 1 mm fixed point within ±4096 m of the origin (clamped): a
///   car at 80 m/s moves about 1,333 steps per tick, 11 bits of change
///   instead of three noisy mantissa bytes;
/// - `rotation`: smallest three, 10 bits per component: at most 0.28° of
///   rotation error (1.2 cm at the end of a 5 m car);
/// - `velocity`: 0.01 m/s within ±200 m/s (clamped): 0.17 mm of
///   extrapolation error per tick;
/// - `steering`, `throttle`: 8 bits, steps of 1/127 within -1..1 (clamped),
///   finer than any input device the scenario models;
/// - `lap` stays a plain `u16`.
///
/// Position, rotation and velocity are coded with [`DeltaOp::Predict`]: on
/// integer codes the linear prediction from two acked baselines is exact
/// arithmetic, and a car that keeps its speed leaves a residual of a few
/// steps (measured in the demo's session part: 833 bytes per client per
/// tick without prediction, 645 with it).
#[allow(
    clippy::expect_used,
    reason = "a fixed, valid schema: the builder cannot reject it"
)]
pub fn racing_schema_quantized() -> Schema {
    Schema::builder()
        .entity("car")
        .field_with(Field {
            name: "position".into(),
            ty: Primitive::F32,
            len: 3,
            delta: Some(DeltaOp::Predict),
        })
        .quantize(Quantize::step(0.001).with_range(-4096.0, 4096.0).clamped())
        .field_with(Field {
            name: "rotation".into(),
            ty: Primitive::F32,
            len: 4,
            delta: Some(DeltaOp::Predict),
        })
        .quantize(Quantize::smallest_three(10))
        .field_with(Field {
            name: "velocity".into(),
            ty: Primitive::F32,
            len: 3,
            delta: Some(DeltaOp::Predict),
        })
        .quantize(Quantize::step(0.01).with_range(-200.0, 200.0).clamped())
        .field("steering", Primitive::F32, 1)
        .quantize(Quantize::step(1.0 / 127.0).with_range(-1.0, 1.0).clamped())
        .field("throttle", Primitive::F32, 1)
        .quantize(Quantize::step(1.0 / 127.0).with_range(-1.0, 1.0).clamped())
        .field("lap", Primitive::U16, 1)
        .build()
        // Cannot fail: a fixed schema whose quantisations have positive steps and ordered ranges; pinned by the scenarios' tests.
        .expect("quantised racing schema is valid")
}

/// [`racing_lobby`] under [`racing_schema_quantized`]: the same race, every
/// tick quantised as a server would before sending it.
pub fn racing_lobby_quantized(seed: u64, ticks: usize) -> Scenario {
    racing_lobby(seed, ticks).quantized("racing lobby, quantised", racing_schema_quantized())
}

/// The arena schema with quantisation declared (same record layout as
/// [`arena_schema`](super::arena_schema)): positions 1 mm within ±4096 m (clamped), velocities
/// 0.01 m/s within ±200 m/s (clamped, the rifle flies at 90), yaw and pitch
/// 16-bit angles in radians (0.0055° steps). Integer fields stay as they
/// are. Positions, and projectile velocities (constant between bounces),
/// are coded with [`DeltaOp::Predict`]: exact on integer codes.
#[allow(
    clippy::expect_used,
    reason = "a fixed, valid schema: the builder cannot reject it"
)]
pub fn arena_schema_quantized() -> Schema {
    let pos = Quantize::step(0.001).with_range(-4096.0, 4096.0).clamped();
    let vel = Quantize::step(0.01).with_range(-200.0, 200.0).clamped();
    let angle = Quantize::angle(16, AngleUnit::Radians);
    let predicted = |name: &str| Field {
        name: name.into(),
        ty: Primitive::F32,
        len: 3,
        delta: Some(DeltaOp::Predict),
    };
    Schema::builder()
        .entity("player")
        .field_with(predicted("position"))
        .quantize(pos)
        .field("velocity", Primitive::F32, 3)
        .quantize(vel)
        .field("yaw", Primitive::F32, 1)
        .quantize(angle)
        .field("pitch", Primitive::F32, 1)
        .quantize(angle)
        .field("health", Primitive::U8, 1)
        .field("armor", Primitive::U8, 1)
        .field("weapon", Primitive::U8, 1)
        .field("flags", Primitive::U8, 1)
        .field("ammo", Primitive::U16, 1)
        .field("frags", Primitive::I16, 1)
        .entity("projectile")
        .field_with(predicted("position"))
        .quantize(pos)
        .field_with(predicted("velocity"))
        .quantize(vel)
        .field("owner", Primitive::U16, 1)
        .field("kind", Primitive::U8, 1)
        .field("bounces", Primitive::U8, 1)
        .build()
        // Cannot fail: as above, for the arena's fields.
        .expect("quantised arena schema is valid")
}

/// [`arena_shooter`] under [`arena_schema_quantized`], every tick quantised.
pub fn arena_shooter_quantized(seed: u64, ticks: usize) -> Scenario {
    arena_shooter(seed, ticks).quantized("arena shooter, quantised", arena_schema_quantized())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tick is quantised, and off the original by no more than each
    /// field declares.
    #[test]
    fn quantised_scenarios_stay_within_their_bounds() {
        for (orig, q) in [
            (racing_lobby(2, 30), racing_lobby_quantized(2, 30)),
            (arena_shooter(2, 30), arena_shooter_quantized(2, 30)),
        ] {
            let mut max = Vec::new();
            for (a, b) in orig.ticks.iter().zip(&q.ticks) {
                assert_eq!(q.schema.check_quantized(b), Ok(()));
                tickpack::quant::snapshot_errors(&q.schema, a, b, &mut max);
            }
            for (ty, m) in q.schema.sections().iter().zip(&max) {
                for ((f, qz), e) in ty.fields().iter().zip(ty.quantization()).zip(m) {
                    let bound = qz.map_or(0.0, |qz| qz.max_error(f.ty));
                    assert!(*e <= bound, "{}: {}: {e} > {bound}", q.name, f.name);
                }
            }
        }
    }
}
