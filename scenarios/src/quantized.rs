//! The racing and arena scenarios with quantisation declared in their
//! schemas: the same simulations, every tick quantised as a server would
//! before sending it.

use tickpack::quant::{AngleUnit, Quantize};
use tickpack::{DeltaOp, Field, Primitive, Schema, Snapshot};
use tickpack_session::{RateTiers, View};

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

/// The UDP lobby's rate tiers (`RateTiers::default()`): cars within 100 m
/// of the viewer every tick, within 200 m every 2nd, beyond every 4th.
pub const LOBBY_TIERS: RateTiers = RateTiers {
    near: 100.0,
    far: 200.0,
    stagger: false,
};

/// What the client in car `seed % 63 + 1` is sent of
/// [`racing_lobby_quantized`] under [`LOBBY_TIERS`] when no packet is held
/// back: the first tick whole, then each tick the cars due (a car goes out
/// once its interval has passed since it was last sent; car `i` starts
/// `i % 4` ticks into its interval), the others left out. A recording of
/// one client's view, to train a dictionary set on the deltas such a
/// client gets: near cars changed every tick, far cars leaving and coming
/// back (spawned rows).
pub fn racing_lobby_quantized_view(seed: u64, ticks: usize) -> Scenario {
    let world = racing_lobby_quantized(seed, ticks);
    let viewer = (seed % 63 + 1) as u32;
    let mut last: Vec<Option<u32>> = vec![None; super::CAR_COUNT];
    let mut out = Vec::with_capacity(world.ticks.len());
    let (mut send, mut skip) = (Vec::new(), Vec::new());
    for (t, snap) in world.ticks.iter().enumerate() {
        let cars = car_positions(snap);
        let at = cars
            .iter()
            .find(|(id, _)| *id == viewer)
            .map_or([0.0; 3], |c| c.1);
        let entities = cars.iter().map(|&(id, pos)| {
            let l = last.get(id as usize).copied().flatten();
            (id, pos, l)
        });
        send.clear();
        skip.clear();
        LOBBY_TIERS.select_due(t as u32, at, entities, &mut send, &mut skip);
        // The first tick sends every car (the client's first snapshot),
        // dated so that car `i`'s interval starts `i % 4` ticks early.
        let stagger = |id: u32| if t == 0 { id % 4 } else { 0 };
        for &id in &send {
            if let Some(l) = last.get_mut(id as usize) {
                *l = Some((t as u32).wrapping_sub(stagger(id)));
            }
        }
        let mut seen = Snapshot::default();
        View::filter(vec![send.clone()]).apply(snap, &mut seen);
        out.push(seen);
    }
    Scenario {
        name: "racing lobby, quantised, one client's view",
        schema: world.schema,
        ticks: out,
    }
}

/// Every car of a racing snapshot (either racing schema: the record starts
/// with the position as three `f32`) with its position, in id order.
pub fn car_positions(world: &Snapshot) -> Vec<(u32, [f32; 3])> {
    let position = |record: &[u8]| {
        let f = |i: usize| {
            record
                .get(i * 4..i * 4 + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map_or(0.0, f32::from_le_bytes)
        };
        [f(0), f(1), f(2)]
    };
    world
        .sections()
        .first()
        .map(|s| s.iter().map(|(id, rec)| (id, position(rec))).collect())
        .unwrap_or_default()
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

    /// The view recording holds, each tick, the near cars and the far cars
    /// due, with the world's records; no car is left out 4 ticks in a row.
    #[test]
    fn the_view_recording_leaves_far_cars_out_at_most_3_ticks() {
        let world = racing_lobby_quantized(5, 40);
        let view = racing_lobby_quantized_view(5, 40);
        let mut gap = vec![0u32; crate::CAR_COUNT];
        let (mut partial, mut total) = (0, 0);
        for (w, v) in world.ticks.iter().zip(&view.ticks) {
            let (ws, vs) = (&w.sections()[0], &v.sections()[0]);
            assert!(vs.len() <= ws.len());
            partial += usize::from(vs.len() < ws.len());
            total += vs.len();
            for (id, rec) in vs.iter() {
                assert_eq!(ws.get(id), Some(rec));
            }
            for (id, g) in gap.iter_mut().enumerate() {
                *g = if vs.get(id as u32).is_some() {
                    0
                } else {
                    *g + 1
                };
                assert!(*g < 4, "car {id} unsent for 4 ticks");
            }
        }
        assert!(partial > 30, "far cars are left out: {partial} of 40 ticks");
        assert_eq!(LOBBY_TIERS, RateTiers::default());
        assert!(total > 40 * 16, "near cars are sent: {total}");
    }

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
