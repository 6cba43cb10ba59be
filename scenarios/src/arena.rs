//! The arena shooter: 32 players and their projectiles, 60 Hz.
//!
//! A 120 m square arena far from the origin (so positions have the float
//! exponents of a real map). Players run between waypoints, jump, aim at the
//! nearest opponent and fire three weapons: a rifle (90 m/s, lives at most
//! [`RIFLE_TICKS`] ticks), rockets (25 m/s, until they hit a player or leave
//! the arena) and grenades (thrown, fall under gravity, bounce off the floor
//! and walls, explode after exactly [`GRENADE_TICKS`] ticks, hurting players
//! within 3 m). One grenade is thrown every tick (round robin), so after
//! warm-up projectiles spawn and despawn every tick; about 200-320
//! projectiles are in flight at once. Hits cost health; a
//! player at zero respawns at a random spawn point and the shooter scores.
//!
//! Two sections: `player` (ids `0..PLAYER_COUNT`) and `projectile` (ids
//! ascending in spawn order, never reused). [`arena_view`] cuts one player's
//! view out of a tick (itself plus every entity within a radius), the
//! interest management a real server does per client.

use tickpack::{Primitive, Schema, Section, Snapshot};

use super::math::V3;
use super::rng::SplitMix64;
use super::Scenario;

/// Players in the arena (section 0, ids `0..PLAYER_COUNT`).
pub const PLAYER_COUNT: usize = 32;
/// Ticks a rifle bullet lives unless it hits a player first.
pub const RIFLE_TICKS: u32 = 30;
/// Ticks from a grenade's throw to its explosion.
pub const GRENADE_TICKS: u32 = 90;
/// World position of the arena's centre on the floor, metres.
pub const ARENA_CENTRE: [f64; 3] = [-2400.0, 64.0, 1800.0];
/// The radius [`arena_client_view`] uses by default in the report, metres.
pub const VIEW_RADIUS: f32 = 40.0;

/// Player record: position, velocity (3 × f32 each), yaw, pitch (f32),
/// health, armor, weapon, flags (u8), ammo (u16), frags (i16).
const PLAYER_SIZE: usize = 8 * 4 + 4 + 2 + 2;
/// Projectile record: position, velocity (3 × f32 each), owner (u16), kind,
/// bounces (u8).
const PROJECTILE_SIZE: usize = 6 * 4 + 2 + 1 + 1;
const DT: f64 = 1.0 / super::TICK_RATE as f64;
const HALF: f64 = 60.0;
const GRAVITY: f64 = 9.81;
/// Ticks simulated before the first recorded one, so projectiles are in flight.
const WARM_UP: usize = 240;
/// No optional shots while this many projectiles fly (keeps the total at most 500).
const PROJECTILE_CAP: usize = 440;
const HIT_RADIUS: f64 = 0.9;

const RIFLE: u8 = 0;
const ROCKET: u8 = 1;
const GRENADE: u8 = 2;

/// The arena's schema: `player` (40 bytes) and `projectile` (28 bytes), as
/// described in the module docs. Every field uses its default delta operator.
#[allow(
    clippy::expect_used,
    reason = "a fixed, valid schema: the builder cannot reject it"
)]
pub fn arena_schema() -> Schema {
    Schema::builder()
        .entity("player")
        .field("position", Primitive::F32, 3)
        .field("velocity", Primitive::F32, 3)
        .field("yaw", Primitive::F32, 1)
        .field("pitch", Primitive::F32, 1)
        .field("health", Primitive::U8, 1)
        .field("armor", Primitive::U8, 1)
        .field("weapon", Primitive::U8, 1)
        .field("flags", Primitive::U8, 1)
        .field("ammo", Primitive::U16, 1)
        .field("frags", Primitive::I16, 1)
        .entity("projectile")
        .field("position", Primitive::F32, 3)
        .field("velocity", Primitive::F32, 3)
        .field("owner", Primitive::U16, 1)
        .field("kind", Primitive::U8, 1)
        .field("bounces", Primitive::U8, 1)
        .build()
        // Cannot fail: fixed schemas of distinct fields; pinned by the scenarios' tests.
        .expect("arena schema is valid")
}

/// Records `ticks` ticks of the arena (after a warm-up, so every recorded
/// tick has 200-500 entities). The same `seed` gives the same bytes.
pub fn arena_shooter(seed: u64, ticks: usize) -> Scenario {
    let schema = arena_schema();
    let mut world = Arena::new(seed);
    for _ in 0..WARM_UP {
        world.step();
    }
    let mut out = Vec::with_capacity(ticks);
    for _ in 0..ticks {
        out.push(world.snapshot(&schema));
        world.step();
    }
    Scenario {
        name: "arena shooter",
        schema,
        ticks: out,
    }
}

/// The part of `tick` that player `viewer` is sent: the viewer itself plus
/// every player and projectile within `radius` metres of it. A tick without
/// that player gives an empty view.
pub fn arena_view(tick: &Snapshot, viewer: u32, radius: f32) -> Snapshot {
    let sections = tick.sections();
    let centre = sections.first().and_then(|s| s.get(viewer)).map(read_pos);
    let r2 = radius * radius;
    let cut = |s: &Section, is_players: bool| {
        let (mut ids, mut recs) = (Vec::new(), Vec::new());
        if let Some(c) = centre {
            for (id, rec) in s.iter() {
                let p = read_pos(rec);
                let d2: f32 = (0..3).map(|k| (p[k] - c[k]) * (p[k] - c[k])).sum();
                if d2 <= r2 || (is_players && id == viewer) {
                    ids.push(id);
                    recs.extend_from_slice(rec);
                }
            }
        }
        Section::from_parts(ids, recs, s.record_size()).unwrap_or_else(|_| s.clone())
    };
    let cut_sections = sections
        .iter()
        .enumerate()
        .map(|(i, s)| cut(s, i == 0))
        .collect();
    Snapshot::from_sections(&arena_schema(), cut_sections).unwrap_or_default()
}

/// [`arena_view`] of every tick of `arena` for player `viewer`: what one
/// client receives, as its own scenario.
pub fn arena_client_view(arena: &Scenario, viewer: u32, radius: f32) -> Scenario {
    Scenario {
        name: "arena, one client's view",
        schema: arena.schema.clone(),
        ticks: arena
            .ticks
            .iter()
            .map(|t| arena_view(t, viewer, radius))
            .collect(),
    }
}

fn read_pos(rec: &[u8]) -> [f32; 3] {
    let f = |k: usize| {
        let b = rec.get(4 * k..4 * k + 4).unwrap_or(&[0; 4]);
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    };
    [f(0), f(1), f(2)]
}

#[derive(Debug, Clone)]
struct Player {
    pos: V3,
    vel: V3,
    yaw: f64,
    pitch: f64,
    health: u8,
    armor: u8,
    weapon: u8,
    firing: bool,
    ammo: u16,
    frags: i16,
    target: V3,
    cooldown: u32,
}

#[derive(Debug, Clone)]
struct Projectile {
    id: u32,
    pos: V3,
    vel: V3,
    owner: u16,
    kind: u8,
    bounces: u8,
    age: u32,
}

#[derive(Debug, Clone)]
struct Arena {
    rng: SplitMix64,
    players: Vec<Player>,
    projectiles: Vec<Projectile>,
    next_id: u32,
    tick: u64,
}

impl Arena {
    fn new(seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed ^ 0xa4e7_a5ee_d000_0001);
        let players = (0..PLAYER_COUNT)
            .map(|_| {
                let pos = random_point(&mut rng);
                Player {
                    pos,
                    vel: V3::default(),
                    yaw: rng.range(-core::f64::consts::PI, core::f64::consts::PI),
                    pitch: 0.0,
                    health: 100,
                    armor: (rng.range(0.0, 4.0) as u8) * 25,
                    weapon: (rng.range(0.0, 3.0) as u8).min(GRENADE),
                    firing: false,
                    ammo: 200,
                    frags: 0,
                    target: random_point(&mut rng),
                    cooldown: 0,
                }
            })
            .collect();
        Self {
            rng,
            players,
            projectiles: Vec::new(),
            next_id: 1000,
            tick: 0,
        }
    }

    fn step(&mut self) {
        self.tick += 1;
        self.move_players();
        self.fire();
        self.move_projectiles();
    }

    fn move_players(&mut self) {
        let n = self.players.len();
        for i in 0..n {
            let rng = &mut self.rng;
            let p = &mut self.players[i];
            let to = p.target - p.pos;
            let flat = V3::new(to.x, 0.0, to.z);
            if flat.len() < 2.0 || rng.chance(0.004) {
                p.target = random_point(rng);
            }
            // Run towards the waypoint at up to 7 m/s, strafing a little.
            let dir = if flat.len() > 1e-6 {
                flat * (1.0 / flat.len())
            } else {
                V3::default()
            };
            let strafe = V3::new(-dir.z, 0.0, dir.x) * rng.range(-1.5, 1.5);
            let want = dir * 7.0 + strafe;
            let accel = 30.0 * DT;
            for (v, w) in [(&mut p.vel.x, want.x), (&mut p.vel.z, want.z)] {
                *v += (w - *v).clamp(-accel, accel);
            }
            let on_ground = p.pos.y <= ARENA_CENTRE[1] + 1e-9;
            if on_ground && rng.chance(0.01) {
                p.vel.y = 5.0;
            }
            if !on_ground || p.vel.y > 0.0 {
                p.vel.y -= GRAVITY * DT;
            }
            p.pos += p.vel * DT;
            if p.pos.y < ARENA_CENTRE[1] {
                p.pos.y = ARENA_CENTRE[1];
                p.vel.y = 0.0;
            }
            p.pos.x = p
                .pos
                .x
                .clamp(ARENA_CENTRE[0] - HALF, ARENA_CENTRE[0] + HALF);
            p.pos.z = p
                .pos
                .z
                .clamp(ARENA_CENTRE[2] - HALF, ARENA_CENTRE[2] + HALF);
            if rng.chance(0.002) {
                p.weapon = (rng.range(0.0, 3.0) as u8).min(GRENADE);
            }
        }
        // Aim at the nearest opponent (smoothly).
        for i in 0..n {
            let me = self.players[i].pos;
            let nearest = (0..n)
                .filter(|&j| j != i)
                .map(|j| self.players[j].pos)
                .min_by(|a, b| {
                    let (da, db) = ((*a - me).len(), (*b - me).len());
                    da.total_cmp(&db)
                });
            if let Some(t) = nearest {
                let d = t - me;
                let yaw = d.z.atan2(d.x);
                let pitch = (d.y + 0.2).atan2(V3::new(d.x, 0.0, d.z).len().max(0.1));
                let p = &mut self.players[i];
                let mut dy = yaw - p.yaw;
                while dy > core::f64::consts::PI {
                    dy -= core::f64::consts::TAU;
                }
                while dy < -core::f64::consts::PI {
                    dy += core::f64::consts::TAU;
                }
                p.yaw += dy.clamp(-0.15, 0.15);
                if p.yaw > core::f64::consts::PI {
                    p.yaw -= core::f64::consts::TAU;
                } else if p.yaw < -core::f64::consts::PI {
                    p.yaw += core::f64::consts::TAU;
                }
                p.pitch += (pitch - p.pitch) * 0.2;
            }
        }
    }

    fn fire(&mut self) {
        for p in &mut self.players {
            p.firing = false;
            p.cooldown = p.cooldown.saturating_sub(1);
        }
        // The round-robin grenade: one every tick, whatever else happens.
        let rr = (self.tick % PLAYER_COUNT as u64) as usize;
        self.shoot(rr, GRENADE);
        for i in 0..self.players.len() {
            if self.projectiles.len() >= PROJECTILE_CAP {
                break;
            }
            let p = &self.players[i];
            if p.cooldown > 0 || !self.rng.chance(0.5) {
                continue;
            }
            let kind = p.weapon;
            self.shoot(i, kind);
            let cd = match kind {
                RIFLE => 3,
                ROCKET => 20,
                _ => 8,
            };
            self.players[i].cooldown = cd;
        }
    }

    fn shoot(&mut self, i: usize, kind: u8) {
        let p = &mut self.players[i];
        let aim = V3::new(
            p.yaw.cos() * p.pitch.cos(),
            p.pitch.sin(),
            p.yaw.sin() * p.pitch.cos(),
        );
        let (speed, lift) = match kind {
            RIFLE => (90.0, 0.0),
            ROCKET => (25.0, 0.0),
            _ => (16.0, 4.0),
        };
        let spread = V3::new(
            self.rng.range(-0.02, 0.02),
            self.rng.range(-0.02, 0.02),
            self.rng.range(-0.02, 0.02),
        );
        let vel = (aim + spread) * speed + V3::new(0.0, lift, 0.0) + p.vel * 0.5;
        let pos = p.pos + V3::new(0.0, 1.5, 0.0) + aim * 0.8;
        p.firing = true;
        p.ammo = if p.ammo == 0 { 200 } else { p.ammo - 1 };
        self.projectiles.push(Projectile {
            id: self.next_id,
            pos,
            vel,
            owner: i as u16,
            kind,
            bounces: 0,
            age: 0,
        });
        self.next_id += 1;
    }

    fn move_projectiles(&mut self) {
        let floor = ARENA_CENTRE[1];
        let mut hits: Vec<(usize, u16, u8)> = Vec::new();
        for q in &mut self.projectiles {
            q.age += 1;
            if q.kind == GRENADE {
                q.vel.y -= GRAVITY * DT;
            }
            q.pos += q.vel * DT;
            if q.kind == GRENADE {
                if q.pos.y < floor {
                    q.pos.y = floor + (floor - q.pos.y) * 0.4;
                    q.vel = V3::new(q.vel.x * 0.7, -q.vel.y * 0.45, q.vel.z * 0.7);
                    q.bounces = q.bounces.saturating_add(1);
                }
                for (p, v, c) in [
                    (&mut q.pos.x, &mut q.vel.x, ARENA_CENTRE[0]),
                    (&mut q.pos.z, &mut q.vel.z, ARENA_CENTRE[2]),
                ] {
                    if (*p - c).abs() > HALF {
                        *p = c + (*p - c).clamp(-HALF, HALF);
                        *v = -*v * 0.6;
                        q.bounces = q.bounces.saturating_add(1);
                    }
                }
            }
        }
        let players = &self.players;
        self.projectiles.retain(|q| {
            let outside = (q.pos.x - ARENA_CENTRE[0]).abs() > HALF + 5.0
                || (q.pos.z - ARENA_CENTRE[2]).abs() > HALF + 5.0
                || q.pos.y < floor - 1.0
                || q.pos.y > floor + 60.0;
            let expired = match q.kind {
                RIFLE => q.age >= RIFLE_TICKS,
                ROCKET => false,
                _ => q.age >= GRENADE_TICKS,
            };
            let centre = |p: &Player| p.pos + V3::new(0.0, 0.9, 0.0);
            if q.kind == GRENADE {
                // Grenades only end by exploding, on time.
                if expired {
                    for (j, p) in players.iter().enumerate() {
                        if (centre(p) - q.pos).len() < 3.0 {
                            hits.push((j, q.owner, q.kind));
                        }
                    }
                }
                return !expired;
            }
            let hit = players.iter().enumerate().find(|(j, p)| {
                *j != usize::from(q.owner) && (centre(p) - q.pos).len() < HIT_RADIUS
            });
            if let Some((j, _)) = hit {
                hits.push((j, q.owner, q.kind));
            }
            !(outside || expired || hit.is_some())
        });
        for (j, owner, kind) in hits {
            let dmg: u8 = match kind {
                RIFLE => 9,
                ROCKET => 60,
                _ => 35,
            };
            let killed = {
                let p = &mut self.players[j];
                let soak = dmg.min(p.armor) / 2;
                p.armor -= soak;
                p.health = p.health.saturating_sub(dmg - soak);
                p.health == 0
            };
            if killed {
                let pos = random_point(&mut self.rng);
                let p = &mut self.players[j];
                p.health = 100;
                p.armor = 0;
                p.pos = pos;
                p.vel = V3::default();
                p.frags = p.frags.saturating_sub(i16::from(usize::from(owner) == j));
                if let Some(o) = self.players.get_mut(usize::from(owner)) {
                    o.frags = o.frags.saturating_add(1);
                }
            }
        }
    }

    #[allow(
        clippy::expect_used,
        reason = "ids are ascending (players 0..n, projectiles in spawn order) and records are whole"
    )]
    fn snapshot(&self, schema: &Schema) -> Snapshot {
        let f = |out: &mut Vec<u8>, v: f64| out.extend_from_slice(&(v as f32).to_le_bytes());
        let mut recs = Vec::with_capacity(self.players.len() * PLAYER_SIZE);
        for p in &self.players {
            for v in [p.pos.x, p.pos.y, p.pos.z, p.vel.x, p.vel.y, p.vel.z] {
                f(&mut recs, v);
            }
            f(&mut recs, p.yaw);
            f(&mut recs, p.pitch);
            let flags = u8::from(p.firing) | (u8::from(p.pos.y > ARENA_CENTRE[1]) << 1);
            recs.extend_from_slice(&[p.health, p.armor, p.weapon, flags]);
            recs.extend_from_slice(&p.ammo.to_le_bytes());
            recs.extend_from_slice(&p.frags.to_le_bytes());
        }
        let players =
            Section::from_parts((0..self.players.len() as u32).collect(), recs, PLAYER_SIZE)
                // Cannot fail: ids 0..n are ascending and unique, and PLAYER_SIZE bytes were pushed per player.
                .expect("player section is well formed");
        let mut recs = Vec::with_capacity(self.projectiles.len() * PROJECTILE_SIZE);
        for q in &self.projectiles {
            for v in [q.pos.x, q.pos.y, q.pos.z, q.vel.x, q.vel.y, q.vel.z] {
                f(&mut recs, v);
            }
            recs.extend_from_slice(&q.owner.to_le_bytes());
            recs.extend_from_slice(&[q.kind, q.bounces]);
        }
        let ids = self.projectiles.iter().map(|q| q.id).collect();
        let projectiles = Section::from_parts(ids, recs, PROJECTILE_SIZE)
            // Cannot fail: projectile ids are handed out from a counter, so ascending and unique; PROJECTILE_SIZE bytes per projectile.
            .expect("projectile section is well formed");
        // Cannot fail: both sections were built with the record sizes of
        // `schema`'s two entity types, in its order.
        Snapshot::from_sections(schema, vec![players, projectiles])
            .expect("arena snapshot fits its schema")
    }
}

fn random_point(rng: &mut SplitMix64) -> V3 {
    V3::new(
        ARENA_CENTRE[0] + rng.range(-HALF, HALF),
        ARENA_CENTRE[1],
        ARENA_CENTRE[2] + rng.range(-HALF, HALF),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic() {
        assert_eq!(arena_shooter(3, 90), arena_shooter(3, 90));
        assert_ne!(arena_shooter(1, 5).ticks[4], arena_shooter(2, 5).ticks[4]);
    }

    #[test]
    fn entity_counts_in_range() {
        let sc = arena_shooter(1, 600);
        for (i, t) in sc.ticks.iter().enumerate() {
            let n = t.entity_count();
            assert!((200..=500).contains(&n), "tick {i}: {n} entities");
            assert_eq!(t.sections()[0].len(), PLAYER_COUNT);
        }
    }

    #[test]
    fn projectiles_spawn_and_despawn_every_tick() {
        let sc = arena_shooter(7, 300);
        for w in sc.ticks.windows(2) {
            let (a, b) = (&w[0].sections()[1], &w[1].sections()[1]);
            let spawned = b.ids().iter().filter(|&&id| a.get(id).is_none()).count();
            let gone = a.ids().iter().filter(|&&id| b.get(id).is_none()).count();
            assert!(spawned > 0 && gone > 0, "spawned {spawned}, gone {gone}");
        }
    }

    #[test]
    fn views_are_local_and_contain_the_viewer() {
        let sc = arena_shooter(1, 30);
        let v = arena_client_view(&sc, 5, VIEW_RADIUS);
        for (full, view) in sc.ticks.iter().zip(&v.ticks) {
            assert!(view.sections()[0].get(5).is_some());
            assert!(view.entity_count() < full.entity_count());
            assert!(view.check(&sc.schema).is_ok());
            let c = read_pos(full.sections()[0].get(5).unwrap());
            for s in view.sections() {
                for (_, rec) in s.iter() {
                    let p = read_pos(rec);
                    let d2: f32 = (0..3).map(|k| (p[k] - c[k]).powi(2)).sum();
                    assert!(d2 <= VIEW_RADIUS * VIEW_RADIUS + 1e-3);
                }
            }
        }
    }
}
