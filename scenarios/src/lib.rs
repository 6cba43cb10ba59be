//! Deterministic game-state recordings to measure tickpack on.
//!
//! Each scenario is a small simulation, seeded, that records one
//! [`Snapshot`] per 60 Hz tick:
//!
//! - [`racing_lobby`]: 64 cars racing on a 3 km circuit far from the origin
//!   (f32 positions, quaternions, velocities and controls);
//! - [`cube_pile`]: the 2015 networked-physics compression challenge scene
//!   (901 cubes, 8 quantised `i32` per cube, most at rest);
//! - [`idle`]: nothing moves, for the per-packet header floor;
//! - [`arena_shooter`]: 32 players and 200-320 projectiles that spawn and
//!   despawn every tick, two sections, with per-client views ([`arena_view`]).
//!
//! [`racing_lobby_quantized`] and [`arena_shooter_quantized`] are the racing
//! and arena recordings under schemas that declare quantisation;
//! [`racing_lobby_quantized_view`] is what one client of the UDP lobby is
//! sent of the quantised race (far cars every 4th tick).

// Crate-wide: no module here needs `unsafe`.
#![forbid(unsafe_code)]

mod arena;
mod cube_pile;
mod math;
mod quantized;
mod racing;
pub mod raw;
pub mod rng;

use tickpack::{Schema, Section, Snapshot};

pub use arena::{
    arena_client_view, arena_schema, arena_shooter, arena_view, ARENA_CENTRE, GRENADE_TICKS,
    PLAYER_COUNT, RIFLE_TICKS, VIEW_RADIUS,
};
pub use cube_pile::{cube_pile, cube_schema, idle, CUBE_COUNT, CUBE_FIELDS};
pub use quantized::{
    arena_schema_quantized, arena_shooter_quantized, car_positions, racing_lobby_quantized,
    racing_lobby_quantized_view, racing_schema_quantized, LOBBY_TIERS,
};
pub use racing::{racing_lobby, racing_schema, CAR_COUNT, TRACK_CENTRE};

/// Simulation ticks per second of every scenario.
pub const TICK_RATE: u32 = 60;

/// A recording: a schema and one snapshot per tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// Short name for tables and bench ids.
    pub name: &'static str,
    /// The schema every snapshot follows (one entity type).
    pub schema: Schema,
    /// Snapshots in tick order, [`TICK_RATE`] per second.
    pub ticks: Vec<Snapshot>,
}

impl Scenario {
    /// Record bytes of tick `i`: what a naive sender sends, ids not counted.
    pub fn raw_len(&self, i: usize) -> usize {
        self.ticks.get(i).map_or(0, Snapshot::raw_len)
    }

    /// The same recording under `schema`, which must have the same record
    /// layout (typically the scenario's schema with quantisation declared,
    /// every range clamped), each tick passed through
    /// [`Schema::quantize`] as a server does before sending.
    #[allow(
        clippy::expect_used,
        reason = "the quantised schemas of this crate share their scenario's layout and clamp \
                  every range, and the simulations produce finite values only"
    )]
    pub fn quantized(&self, name: &'static str, schema: Schema) -> Scenario {
        let ticks = self
            .ticks
            .iter()
            .map(|t| {
                let mut s = Snapshot::from_sections(&schema, t.sections().to_vec())
                    // Cannot fail: the quantised schema declares the same fields, so the same record sizes, as the lossless one.
                    .expect("same record layout");
                schema
                    .quantize(&mut s)
                    // Cannot fail: the simulation produces finite values, and every ranged field is declared clamped.
                    .expect("finite values, clamped ranges");
                s
            })
            .collect();
        Scenario {
            name,
            schema,
            ticks,
        }
    }
}

/// Entities whose record differs between `a` and `b`, plus entities present
/// in only one of them (all sections).
pub fn changed_entities(a: &Snapshot, b: &Snapshot) -> usize {
    let mut n = 0;
    for (sa, sb) in a.sections().iter().zip(b.sections()) {
        for (id, rec) in sa.iter() {
            if sb.get(id) != Some(rec) {
                n += 1;
            }
        }
        n += sb.ids().iter().filter(|&&id| sa.get(id).is_none()).count();
    }
    n
}

/// A one-section snapshot of `records` (entity ids `0..n`, `n` records of
/// the section's size, concatenated).
#[allow(
    clippy::expect_used,
    reason = "ids are 0..n ascending, records hold n whole records of the schema's size, and the \
              schema has exactly this one section: both constructors accept that by construction"
)]
fn snapshot_of(schema: &Schema, records: Vec<u8>) -> Snapshot {
    let rs = schema.sections()[0].record_size();
    let n = records.len() / rs;
    let ids = (0..n as u32).collect();
    // Cannot fail: ids 0..n are ascending and unique, and records hold n whole records.
    let section = Section::from_parts(ids, records, rs).expect("scenario section is well formed");
    Snapshot::from_sections(schema, vec![section]).expect("scenario snapshot fits its schema")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_counts_records_and_membership() {
        let schema = cube_schema();
        let a = snapshot_of(&schema, vec![0; 3 * 32]);
        let mut b = a.clone();
        assert_eq!(changed_entities(&a, &b), 0);
        b.section_mut(0).unwrap().insert(1, &[1; 32]).unwrap();
        assert_eq!(changed_entities(&a, &b), 1);
        b.section_mut(0).unwrap().insert(9, &[0; 32]).unwrap();
        assert_eq!(changed_entities(&a, &b), 2);
        b.section_mut(0).unwrap().remove(0);
        assert_eq!(changed_entities(&a, &b), 3);
    }

    #[test]
    fn same_seed_same_ticks() {
        assert_eq!(racing_lobby(42, 120), racing_lobby(42, 120));
        assert_eq!(cube_pile(42, 240), cube_pile(42, 240));
        assert_ne!(racing_lobby(1, 10).ticks[9], racing_lobby(2, 10).ticks[9]);
        assert_ne!(cube_pile(1, 240).ticks[239], cube_pile(2, 240).ticks[239]);
    }
}
