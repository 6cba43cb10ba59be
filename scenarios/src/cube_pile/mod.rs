//! The cube pile: the scene of Glenn Fiedler's 2015 networked-physics
//! compression challenge, in the challenge's exact record format.
//!
//! 900 cubes of 1 m stand in a 30 × 30 grid, 1.7 m apart, on a floor at
//! z = 0 (z up). Cube 0 is the player: a 1.8 m cube that rolls from waypoint
//! to waypoint, pauses now and then, sometimes jumps, and knocks the others
//! about. The physics is a small deterministic approximation, believable
//! rather than exact: bodies collide as spheres (impulses with restitution
//! and friction, positional correction), hard hits make cubes tumble, the
//! floor has Coulomb friction and turns the face nearest to it flat, and
//! slow cubes fall asleep until something hits them.
//!
//! Records are 8 little-endian `i32` ([`CUBE_FIELDS`]), quantised as in
//! Glenn Fiedler's 2015 snapshot compression challenge: smallest-three
//! quaternion with 9-bit components, positions in 1/512 m.

use tickpack::{Primitive, Schema};

use super::math::{Quat, V3};
use super::rng::SplitMix64;
use super::{snapshot_of, Scenario};

/// Bodies in the scene: the player cube (id 0) and a 30 × 30 grid.
pub const CUBE_COUNT: usize = 1 + GRID * GRID;
/// The record's fields in order, each one `i32`.
pub const CUBE_FIELDS: [&str; 8] = [
    "orientation_largest",
    "orientation_a",
    "orientation_b",
    "orientation_c",
    "position_x",
    "position_y",
    "position_z",
    "interacting",
];

const GRID: usize = 30;
const SPACING: f64 = 1.7;
const CUBE_HALF: f64 = 0.5;
const PLAYER_HALF: f64 = 0.9;
const G: f64 = 9.81;
const DT: f64 = 1.0 / super::TICK_RATE as f64;
const SUBSTEPS: usize = 2;
/// Invisible walls keep every body inside the ±16383/512 m position range.
const WALL: f64 = 31.0;
/// Broad phase: a 2D grid of 2 m cells over [-32, 32) m.
const CELL: f64 = 2.0;
const CELLS: usize = 32;
const RESTITUTION: f64 = 0.3;
const FLOOR_FRICTION: f64 = 0.5;
const CONTACT_FRICTION: f64 = 0.4;
/// While gathering, the player pulls cubes within this distance (m) to it.
const GATHER_RADIUS: f64 = 6.0;
/// Ticks a cube stays marked as interacting after the player touched it.
const INTERACT_TICKS: usize = 30;
/// Consecutive slow ticks before a cube sleeps.
const SLEEP_TICKS: u32 = 12;

/// The cube pile's schema: one entity type `cube` with the eight `i32`
/// fields of [`CUBE_FIELDS`] (32 bytes per cube), default delta operators.
#[allow(
    clippy::expect_used,
    reason = "a fixed, valid schema: the builder cannot reject it"
)]
pub fn cube_schema() -> Schema {
    CUBE_FIELDS
        .iter()
        .fold(Schema::builder().entity("cube"), |b, name| {
            b.field(name, Primitive::I32, 1)
        })
        .build()
        // Cannot fail: a fixed schema of eight distinct i32 fields; pinned by the scenarios' tests.
        .expect("cube schema is valid")
}

/// Records `ticks` ticks of the cube pile (901 cubes, ids `0..901`, cube 0
/// the player). Tick 0 is the initial grid at rest. The same `seed` gives the
/// same bytes.
pub fn cube_pile(seed: u64, ticks: usize) -> Scenario {
    let schema = cube_schema();
    let mut world = World::new(seed);
    let mut out = Vec::with_capacity(ticks);
    for _ in 0..ticks {
        out.push(snapshot_of(&schema, world.records()));
        world.step();
    }
    Scenario {
        name: "cube pile",
        schema,
        ticks: out,
    }
}

/// An idle server: the cube pile's first tick repeated `ticks` times.
/// Every delta packet is the floor cost of a packet with nothing changed.
pub fn idle(ticks: usize) -> Scenario {
    let schema = cube_schema();
    let frame = snapshot_of(&schema, World::new(0).records());
    Scenario {
        name: "idle",
        schema,
        ticks: vec![frame; ticks],
    }
}

#[derive(Debug, Clone, Copy)]
struct Body {
    pos: V3,
    vel: V3,
    rot: Quat,
    /// Angular velocity, world space, rad/s.
    spin: V3,
    half: f64,
    /// Collision sphere radius.
    radius: f64,
    inv_mass: f64,
    awake: bool,
    on_floor: bool,
    /// Consecutive slow ticks.
    quiet: u32,
    /// Tick the player last touched this body.
    touched: Option<usize>,
}

impl Body {
    fn new(pos: V3, half: f64, radius: f64, mass: f64, awake: bool) -> Self {
        Self {
            pos,
            vel: V3::default(),
            rot: Quat::IDENTITY,
            spin: V3::default(),
            half,
            radius,
            inv_mass: 1.0 / mass,
            awake,
            on_floor: true,
            quiet: 0,
            touched: None,
        }
    }

    /// Height of the centre above the floor when the lowest corner touches it.
    fn floor_height(&self) -> f64 {
        let [a, b, c] = self.rot.axes();
        self.half * (a.z.abs() + b.z.abs() + c.z.abs())
    }

    /// The body axis nearest to world up, signed to point up.
    fn up_axis(&self) -> V3 {
        let axes = self.rot.axes();
        let mut best = axes[0];
        for a in &axes[1..] {
            if a.z.abs() > best.z.abs() {
                best = *a;
            }
        }
        if best.z < 0.0 {
            -best
        } else {
            best
        }
    }

    /// Turns the body so one face lies exactly flat.
    fn square_up(&mut self) {
        let up = self.up_axis();
        let axis = up.cross(UP);
        let s = axis.len();
        if s > 1e-12 {
            let angle = s.atan2(up.dot(UP));
            self.rot = Quat::from_axis_angle(axis * (1.0 / s), angle)
                .mul(self.rot)
                .normalized();
        }
    }
}

const UP: V3 = V3::new(0.0, 0.0, 1.0);

/// What the player is doing.
#[derive(Debug, Clone, Copy)]
struct Driver {
    waypoint: (f64, f64),
    speed: f64,
    /// Ticks left standing still.
    pause: u32,
    /// Ticks left of gathering: like the original demo's player, it pulls
    /// nearby cubes along in a clump, then lets them go.
    gather: u32,
    /// Ticks until the next gathering starts.
    next_gather: u32,
}

#[derive(Debug)]
struct World {
    bodies: Vec<Body>,
    driver: Driver,
    rng: SplitMix64,
    tick: usize,
    /// Broad-phase scratch: bodies sorted by cell, and where each cell starts.
    order: Vec<u32>,
    starts: Vec<u32>,
    cell_of: Vec<u32>,
}

impl World {
    fn new(seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed ^ 0x6375_6265_7069_6c65);
        let mut bodies = Vec::with_capacity(CUBE_COUNT);
        bodies.push(Body::new(
            V3::new(0.0, -26.3, PLAYER_HALF),
            PLAYER_HALF,
            PLAYER_HALF + 0.1,
            // The player is driven, not pushed: infinitely heavy.
            f64::INFINITY,
            true,
        ));
        let mid = (GRID as f64 - 1.0) / 2.0;
        for row in 0..GRID {
            for col in 0..GRID {
                let pos = V3::new(
                    (col as f64 - mid) * SPACING,
                    (row as f64 - mid) * SPACING,
                    CUBE_HALF,
                );
                bodies.push(Body::new(pos, CUBE_HALF, CUBE_HALF, 1.0, false));
            }
        }
        let driver = Driver {
            waypoint: (rng.range(-15.0, 15.0), rng.range(-20.0, 0.0)),
            speed: rng.range(4.0, 7.0),
            pause: 0,
            gather: 0,
            next_gather: rng.range(60.0, 180.0) as u32,
        };
        Self {
            bodies,
            driver,
            rng,
            tick: 0,
            order: vec![0; CUBE_COUNT],
            starts: vec![0; CELLS * CELLS + 1],
            cell_of: vec![0; CUBE_COUNT],
        }
    }

    fn step(&mut self) {
        self.drive();
        let h = DT / SUBSTEPS as f64;
        for _ in 0..SUBSTEPS {
            for b in self.bodies.iter_mut().filter(|b| b.awake) {
                b.vel.z -= G * h;
            }
            self.collide();
            for (i, b) in self.bodies.iter_mut().enumerate().filter(|(_, b)| b.awake) {
                integrate(b, i == 0, h);
            }
        }
        for b in self.bodies[1..].iter_mut().filter(|b| b.awake) {
            let slow = b.vel.len() < 0.1 && b.spin.len() < 0.2;
            b.quiet = if slow { b.quiet + 1 } else { 0 };
            if b.quiet >= SLEEP_TICKS {
                b.square_up();
                if b.on_floor {
                    b.pos.z = b.half;
                }
                (b.vel, b.spin, b.awake, b.quiet) = (V3::default(), V3::default(), false, 0);
            }
        }
        self.tick += 1;
    }

    /// The player's controls: roll towards the waypoint, pause, jump,
    /// gather cubes.
    fn drive(&mut self) {
        let (rng, d) = (&mut self.rng, &mut self.driver);
        let (player, cubes) = self.bodies.split_at_mut(1);
        let p = &mut player[0];
        if d.gather > 0 {
            d.gather -= 1;
            for c in cubes.iter_mut() {
                let to = V3::new(p.pos.x - c.pos.x, p.pos.y - c.pos.y, 0.0);
                let dist = to.len();
                if dist < GATHER_RADIUS && dist > 1e-6 {
                    let pull = 25.0 * (1.0 - 0.5 * dist / GATHER_RADIUS);
                    c.vel += to * (pull * DT / dist);
                    // Drag towards the player's motion keeps the clump together.
                    c.vel += (p.vel - c.vel) * 0.05;
                    (c.awake, c.quiet, c.touched) = (true, 0, Some(self.tick));
                }
            }
        }
        let mut want = V3::default();
        if d.pause > 0 {
            d.pause -= 1;
        } else {
            let to = V3::new(d.waypoint.0 - p.pos.x, d.waypoint.1 - p.pos.y, 0.0);
            let dist = to.len();
            if dist < 1.5 {
                d.waypoint = (rng.range(-22.0, 22.0), rng.range(-22.0, 22.0));
                d.speed = rng.range(3.5, 7.5);
                if rng.chance(0.3) {
                    d.pause = rng.range(20.0, 120.0) as u32;
                }
            } else {
                want = to * (d.speed / dist);
            }
        }
        if d.gather == 0 {
            if d.next_gather == 0 {
                d.gather = rng.range(90.0, 270.0) as u32;
                d.next_gather = rng.range(120.0, 600.0) as u32;
            } else {
                d.next_gather -= 1;
            }
        }
        let mut dv = want - V3::new(p.vel.x, p.vel.y, 0.0);
        let max = 12.0 * DT;
        if dv.len() > max {
            dv = dv * (max / dv.len());
        }
        p.vel += dv;
        if p.on_floor && d.pause == 0 && rng.chance(1.0 / 400.0) {
            p.vel.z = 5.0;
        }
        // A rolling cube: spin about the horizontal axis across its motion.
        let roll = UP.cross(V3::new(p.vel.x, p.vel.y, 0.0)) * (1.0 / p.half);
        p.spin += (roll - p.spin) * 0.2;
    }

    /// One pass of sphere contacts between awake bodies and everything near.
    fn collide(&mut self) {
        self.sort_into_cells();
        for i in 0..self.bodies.len() {
            if !self.bodies[i].awake {
                continue;
            }
            let c = self.cell_of[i] as usize;
            let (cx, cy) = (c % CELLS, c / CELLS);
            for ny in cy.saturating_sub(1)..(cy + 2).min(CELLS) {
                for nx in cx.saturating_sub(1)..(cx + 2).min(CELLS) {
                    let cell = ny * CELLS + nx;
                    for k in self.starts[cell]..self.starts[cell + 1] {
                        let j = self.order[k as usize] as usize;
                        // Awake pairs once, from the lower index.
                        if j == i || (self.bodies[j].awake && j < i) {
                            continue;
                        }
                        self.contact(i, j);
                    }
                }
            }
        }
    }

    fn sort_into_cells(&mut self) {
        let cell = |p: V3| {
            let c = |v: f64| {
                ((v + CELL * CELLS as f64 / 2.0) / CELL)
                    .floor()
                    .clamp(0.0, CELLS as f64 - 1.0) as usize
            };
            (c(p.y) * CELLS + c(p.x)) as u32
        };
        self.starts.fill(0);
        for (b, c) in self.bodies.iter().zip(&mut self.cell_of) {
            *c = cell(b.pos);
            self.starts[*c as usize + 1] += 1;
        }
        for k in 1..self.starts.len() {
            self.starts[k] += self.starts[k - 1];
        }
        let mut next = self.starts.clone();
        for (i, &c) in self.cell_of.iter().enumerate() {
            self.order[next[c as usize] as usize] = i as u32;
            next[c as usize] += 1;
        }
    }

    /// Resolves the contact between awake body `i` and body `j`.
    fn contact(&mut self, i: usize, j: usize) {
        let (mut a, mut b) = (self.bodies[i], self.bodies[j]);
        let d = b.pos - a.pos;
        let reach = a.radius + b.radius;
        let dist2 = d.dot(d);
        if dist2 >= (reach + 0.1) * (reach + 0.1) || dist2 < 1e-12 {
            return;
        }
        let dist = dist2.sqrt();
        let n = d * (1.0 / dist);
        let depth = reach - dist;
        if !b.awake {
            // A sleeper wakes when hit, pushed, or left without support.
            let approach = (a.vel - b.vel).dot(n);
            let perched = b.pos.z > b.half + 0.05;
            if depth > 0.02 || (depth > 0.0 && approach > 0.25) || perched {
                (b.awake, b.quiet) = (true, 0);
            }
        }
        let ia = a.inv_mass;
        let ib = if b.awake { b.inv_mass } else { 0.0 };
        if depth > 0.0 && ia + ib > 0.0 {
            let closing = (b.vel - a.vel).dot(n);
            if closing < 0.0 {
                let jn = -(1.0 + RESTITUTION) * closing / (ia + ib);
                let (va, vb) = (a.vel, b.vel);
                a.vel -= n * (jn * ia);
                b.vel += n * (jn * ib);
                let rel = b.vel - a.vel;
                let slide = rel - n * rel.dot(n);
                let s = slide.len();
                if s > 1e-9 {
                    let jt = (s / (ia + ib)).min(CONTACT_FRICTION * jn);
                    let t = slide * (1.0 / s);
                    a.vel += t * (jt * ia);
                    b.vel -= t * (jt * ib);
                }
                if i != 0 {
                    let dv = a.vel - va;
                    self.tumble(&mut a, dv);
                }
                if j != 0 {
                    let dv = b.vel - vb;
                    self.tumble(&mut b, dv);
                }
            }
            let push = (depth - 0.005).max(0.0) * 0.8 / (ia + ib);
            a.pos -= n * (push * ia);
            b.pos += n * (push * ib);
            if i == 0 {
                b.touched = Some(self.tick);
            }
            if j == 0 {
                a.touched = Some(self.tick);
            }
        }
        self.bodies[i] = a;
        self.bodies[j] = b;
    }

    /// A cube hit hard enough starts to roll over and spin.
    fn tumble(&mut self, b: &mut Body, dv: V3) {
        let flat = V3::new(dv.x, dv.y, 0.0);
        let m = flat.len();
        if m > 0.5 {
            b.spin += UP.cross(flat) * (self.rng.range(0.2, 0.9) / b.half);
            b.spin.z += self.rng.range(-0.6, 0.6) * m;
        }
    }

    /// Every body as a quantised record, in id order.
    fn records(&self) -> Vec<u8> {
        let player = self.bodies[0].pos;
        let recent = |b: &Body| b.touched.is_some_and(|t| self.tick - t < INTERACT_TICKS);
        let near = |b: &Body| {
            let d = b.pos - player;
            d.x * d.x + d.y * d.y < 2.5 * 2.5
        };
        let flags: Vec<bool> = self.bodies.iter().map(|b| recent(b) || near(b)).collect();
        let player_busy = flags[1..].iter().any(|&f| f);
        let mut out = Vec::with_capacity(CUBE_COUNT * 32);
        for (i, b) in self.bodies.iter().enumerate() {
            let interacting = if i == 0 { player_busy } else { flags[i] };
            for v in quantise(b, interacting) {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }
}

/// Moves one awake body by `h` seconds: position, orientation, floor, walls.
fn integrate(b: &mut Body, player: bool, h: f64) {
    b.pos += b.vel * h;
    b.rot = b.rot.integrate(b.spin, h);
    let floor = b.floor_height();
    if b.pos.z <= floor {
        b.pos.z = floor;
        if b.vel.z < 0.0 {
            b.vel.z = if b.vel.z < -1.0 { -0.2 * b.vel.z } else { 0.0 };
        }
    }
    b.on_floor = b.pos.z <= floor + 0.02;
    for (p, v) in [(&mut b.pos.x, &mut b.vel.x), (&mut b.pos.y, &mut b.vel.y)] {
        let limit = WALL - b.radius;
        if p.abs() > limit {
            *p = p.clamp(-limit, limit);
            *v *= -0.3;
        }
    }
    if b.pos.z > 14.0 {
        b.vel.z = b.vel.z.min(0.0);
    }
    if b.on_floor && !player {
        // Coulomb friction on the sliding velocity.
        let speed = V3::new(b.vel.x, b.vel.y, 0.0).len();
        let stop = FLOOR_FRICTION * G * h;
        let k = if speed > stop {
            (speed - stop) / speed
        } else {
            0.0
        };
        (b.vel.x, b.vel.y) = (b.vel.x * k, b.vel.y * k);
        // Gravity tips the cube onto its nearest face; the floor damps the spin.
        b.spin += b.up_axis().cross(UP) * (30.0 * h);
        b.spin = b.spin * (-11.0 * h).exp();
    }
}

/// One of the three smallest quaternion components to 9 bits, with the
/// challenge's exact decimal constants (not `FRAC_1_SQRT_2` and `SQRT_2`:
/// the rounding of values near a step must match the original data).
#[allow(
    clippy::approx_constant,
    reason = "the 2015 format's literal constants"
)]
fn quantise_component(c: f64) -> i32 {
    ((c + 0.707107) / 1.414214 * 511.0 + 0.5)
        .floor()
        .clamp(0.0, 511.0) as i32
}

/// The challenge's quantisation of one body (the module docs).
fn quantise(b: &Body, interacting: bool) -> [i32; 8] {
    let mut q = b.rot.normalized().to_array();
    let mut largest = 0;
    for i in 1..4 {
        if q[i].abs() > q[largest].abs() {
            largest = i;
        }
    }
    if q[largest] < 0.0 {
        q = q.map(|c| -c);
    }
    let mut out = [0i32; 8];
    out[0] = largest as i32;
    let smallest = q.iter().enumerate().filter(|&(i, _)| i != largest);
    for (slot, (_, &c)) in out[1..4].iter_mut().zip(smallest) {
        *slot = quantise_component(c);
    }
    let units = |v: f64| (v * 512.0 + 0.5).floor();
    out[4] = units(b.pos.x).clamp(-16383.0, 16383.0) as i32;
    out[5] = units(b.pos.y).clamp(-16383.0, 16383.0) as i32;
    out[6] = units(b.pos.z).clamp(0.0, 8191.0) as i32;
    out[7] = i32::from(interacting);
    out
}

#[cfg(test)]
mod tests;
