//! The racing lobby: 64 cars on a closed 3.1 km circuit, 60 Hz.
//!
//! The circuit lies in the x-z plane (y up) around [`TRACK_CENTRE`], far
//! enough from the origin that positions have the float exponents of a real
//! map. It is a loop of straights and arcs: four 90° corners of radius 150,
//! 60, 100 and 90 m and a fast S-bend, with a few metres of elevation.
//!
//! Each car follows a racing line (outside, apex, outside) with its own lane
//! preference and skill, plans its braking from the curvature up to 300 m
//! ahead, follows or overtakes the car in front, and steers and throttles
//! through low-passed controls with a little noise.

use core::f64::consts::TAU;

use tickpack::{Primitive, Schema};

use super::math::{Quat, V3};
use super::rng::SplitMix64;
use super::{snapshot_of, Scenario};

/// Cars in the lobby (entity ids `0..CAR_COUNT`).
pub const CAR_COUNT: usize = 64;
/// World position of the middle of the circuit's bounding box, metres.
pub const TRACK_CENTRE: [f64; 3] = [1500.0, 20.0, -800.0];

const DT: f64 = 1.0 / super::TICK_RATE as f64;
/// Ticks simulated before the first recorded one, so the field is settled.
const WARM_UP: usize = 180;
/// 3 position + 4 rotation + 3 velocity + steering + throttle (f32) + lap (u16).
const RECORD_SIZE: usize = 12 * 4 + 2;
/// Half the drivable width, metres.
const HALF_WIDTH: f64 = 6.0;
/// Height of a car's reference point above the road, metres.
const RIDE_HEIGHT: f64 = 0.45;

/// The racing lobby's schema: one entity type `car` with `position [f32; 3]`,
/// `rotation [f32; 4]` (quaternion x, y, z, w), `velocity [f32; 3]` (m/s),
/// `steering f32` (-1..1), `throttle f32` (-1..1, negative is braking) and
/// `lap u16`: 50 bytes per car. Every field uses its default delta operator.
#[allow(
    clippy::expect_used,
    reason = "a fixed, valid schema: the builder cannot reject it"
)]
pub fn racing_schema() -> Schema {
    Schema::builder()
        .entity("car")
        .field("position", Primitive::F32, 3)
        .field("rotation", Primitive::F32, 4)
        .field("velocity", Primitive::F32, 3)
        .field("steering", Primitive::F32, 1)
        .field("throttle", Primitive::F32, 1)
        .field("lap", Primitive::U16, 1)
        .build()
        // Cannot fail: a fixed schema: distinct field names, non-zero lengths, one entity type; pinned by the scenarios' tests.
        .expect("racing schema is valid")
}

/// Records `ticks` ticks of a 64-car race (entity ids `0..64`, every car
/// present and moving at 30-80 m/s in every tick). The same `seed` gives the
/// same bytes.
pub fn racing_lobby(seed: u64, ticks: usize) -> Scenario {
    let schema = racing_schema();
    let track = Track::new();
    let mut race = Race::new(&track, seed);
    for _ in 0..WARM_UP {
        race.step();
    }
    let mut out = Vec::with_capacity(ticks);
    for _ in 0..ticks {
        out.push(snapshot_of(&schema, race.records()));
        race.step();
    }
    Scenario {
        name: "racing lobby",
        schema,
        ticks: out,
    }
}

/// One piece of the centre line: a straight (`k == 0`) or an arc of signed
/// curvature `k`, starting at `s0` with position `(u0, v0)` and heading `h0`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    s0: f64,
    len: f64,
    k: f64,
    u0: f64,
    v0: f64,
    h0: f64,
}

impl Segment {
    /// Plan position and heading at distance `t` into the segment.
    fn at(&self, t: f64) -> (f64, f64, f64) {
        let h = self.h0 + self.k * t;
        if self.k == 0.0 {
            (self.u0 + t * self.h0.cos(), self.v0 + t * self.h0.sin(), h)
        } else {
            (
                self.u0 + (h.sin() - self.h0.sin()) / self.k,
                self.v0 - (h.cos() - self.h0.cos()) / self.k,
                h,
            )
        }
    }
}

/// The centre line at one distance.
#[derive(Debug, Clone, Copy)]
struct TrackPoint {
    /// Centre of the road, world space.
    pos: V3,
    /// Unit direction of travel in the horizontal plane.
    forward: V3,
    /// Horizontal unit normal, towards the inside of positive-curvature corners.
    normal: V3,
    /// Heading in the plan (u, v) plane, radians.
    heading: f64,
    /// Signed curvature, 1/m.
    k: f64,
    /// dy/ds.
    slope: f64,
}

#[derive(Debug, Clone)]
struct Track {
    segments: Vec<Segment>,
    length: f64,
    /// World x, z of plan point (0, 0).
    origin: (f64, f64),
}

impl Track {
    fn new() -> Self {
        let arc = |r: f64, deg: f64| (r * deg.abs().to_radians(), deg.signum() / r);
        // (length, curvature); entries 8 and 10 are the straights that close
        // the loop, solved below.
        let mut plan = [
            (900.0, 0.0),
            arc(150.0, 90.0),
            (300.0, 0.0),
            arc(60.0, 90.0),
            (250.0, 0.0),
            arc(200.0, 20.0),
            arc(200.0, -40.0),
            arc(200.0, 20.0),
            (0.0, 0.0),
            arc(100.0, 90.0),
            (0.0, 0.0),
            arc(90.0, 90.0),
        ];
        // Straight 8 runs along -u and straight 10 along -v: their lengths are
        // what is left of the open loop's end point.
        let (end_u, end_v, _) = lay(&plan).1;
        plan[8].0 = end_u;
        plan[10].0 = end_v;
        let (segments, _) = lay(&plan);
        let length = segments.iter().map(|s| s.len).sum();
        let mut track = Self {
            segments,
            length,
            origin: (0.0, 0.0),
        };
        let (mut lo_u, mut hi_u, mut lo_v, mut hi_v) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        let mut s = 0.0;
        while s < length {
            let (u, v, _) = track.plan_at(s).0;
            (lo_u, hi_u, lo_v, hi_v) = (lo_u.min(u), hi_u.max(u), lo_v.min(v), hi_v.max(v));
            s += 5.0;
        }
        track.origin = (
            TRACK_CENTRE[0] - 0.5 * (lo_u + hi_u),
            TRACK_CENTRE[2] - 0.5 * (lo_v + hi_v),
        );
        track
    }

    /// Plan position and heading at `s` (any real, wrapped), and the curvature.
    fn plan_at(&self, s: f64) -> ((f64, f64, f64), f64) {
        let s = s.rem_euclid(self.length);
        let seg = self
            .segments
            .iter()
            .rev()
            .find(|g| g.s0 <= s)
            .unwrap_or(&self.segments[0]);
        (seg.at(s - seg.s0), seg.k)
    }

    fn curvature(&self, s: f64) -> f64 {
        self.plan_at(s).1
    }

    fn point(&self, s: f64) -> TrackPoint {
        let ((u, v, h), k) = self.plan_at(s);
        let p = TAU * s / self.length;
        let y = TRACK_CENTRE[1] + 3.0 * p.sin() + 1.5 * (3.0 * p + 0.7).sin();
        let slope = (3.0 * p.cos() + 4.5 * (3.0 * p + 0.7).cos()) * TAU / self.length;
        TrackPoint {
            pos: V3::new(self.origin.0 + u, y, self.origin.1 + v),
            forward: V3::new(h.cos(), 0.0, h.sin()),
            normal: V3::new(-h.sin(), 0.0, h.cos()),
            heading: h,
            k,
            slope,
        }
    }

    /// Lateral offset of the racing line: outside before a corner, inside
    /// through it, back out on exit.
    fn racing_line(&self, s: f64) -> f64 {
        let bend = |s: f64| (self.curvature(s) * 120.0).clamp(-1.0, 1.0);
        let inside = [-30.0, -15.0, 0.0, 15.0, 30.0]
            .iter()
            .map(|&x| bend(s + x))
            .sum::<f64>()
            / 5.0;
        let setup = bend(s + 70.0) * (1.0 - bend(s).abs());
        (4.0 * inside - 2.5 * setup).clamp(-4.5, 4.5)
    }

    /// The fastest this driver will go at `s`: the corner speed of every
    /// point up to 300 m ahead, plus what braking can take off before it.
    fn speed_limit(&self, s: f64, skill: f64) -> f64 {
        let (lateral, brake) = (16.5 * skill, 10.0 * skill);
        let mut limit = 80.0 * skill;
        for step in 0..=30 {
            let x = f64::from(step) * 10.0;
            let k = self.curvature(s + x).abs();
            if k > 1e-6 {
                limit = limit.min((lateral / k + 2.0 * brake * x).sqrt());
            }
        }
        limit
    }
}

/// Lays out `plan` from the plan origin heading +u; returns the segments and
/// the end position and heading.
fn lay(plan: &[(f64, f64)]) -> (Vec<Segment>, (f64, f64, f64)) {
    let mut segments = Vec::with_capacity(plan.len());
    let (mut s, mut end) = (0.0, (0.0, 0.0, 0.0));
    for &(len, k) in plan {
        let seg = Segment {
            s0: s,
            len,
            k,
            u0: end.0,
            v0: end.1,
            h0: end.2,
        };
        end = seg.at(len);
        s += len;
        segments.push(seg);
    }
    (segments, end)
}

#[derive(Debug, Clone)]
struct Car {
    /// Distance driven along the centre line since the race start, metres.
    s: f64,
    /// Lateral offset from the centre line, metres, and its rate.
    d: f64,
    d_vel: f64,
    /// Speed along the road, m/s, and its last rate of change.
    v: f64,
    accel: f64,
    /// 0.9..1: scales power, top speed, cornering and braking.
    skill: f64,
    /// Preferred offset from the racing line.
    lane: f64,
    steering: f64,
    throttle: f64,
    /// Slow random walks added to the controls.
    steer_noise: f64,
    throttle_noise: f64,
    /// Lateral target while overtaking, and seconds left of the move.
    pass: Option<f64>,
    pass_left: f64,
    /// Phase of the chassis wobble.
    phase: f64,
}

#[derive(Debug)]
struct Race<'t> {
    track: &'t Track,
    cars: Vec<Car>,
    rng: SplitMix64,
    time: f64,
}

impl<'t> Race<'t> {
    fn new(track: &'t Track, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed ^ 0x7261_6369_6e67);
        // The field strung out over about a kilometre, in loose packs.
        let mut s = 4.0 * track.length + rng.range(0.0, track.length);
        let cars = (0..CAR_COUNT)
            .map(|_| {
                let lane = rng.range(-2.5, 2.5);
                s -= if rng.chance(0.15) {
                    rng.range(30.0, 60.0)
                } else {
                    rng.range(6.0, 16.0)
                };
                Car {
                    s,
                    d: lane,
                    d_vel: 0.0,
                    v: 45.0,
                    accel: 0.0,
                    skill: rng.range(0.9, 1.0),
                    lane,
                    steering: 0.0,
                    throttle: 0.0,
                    steer_noise: 0.0,
                    throttle_noise: 0.0,
                    pass: None,
                    pass_left: 0.0,
                    phase: rng.range(0.0, TAU),
                }
            })
            .collect();
        Self {
            track,
            cars,
            rng,
            time: 0.0,
        }
    }

    fn step(&mut self) {
        let track = self.track;
        let others: Vec<(f64, f64, f64)> = self.cars.iter().map(|c| (c.s, c.d, c.v)).collect();
        let smooth = |rate: f64| 1.0 - (-DT * rate).exp();
        for (i, car) in self.cars.iter_mut().enumerate() {
            let rng = &mut self.rng;
            let mut target = track.speed_limit(car.s, car.skill);

            // The nearest car ahead in this car's lane, if any.
            let ahead = others
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &(s, d, v))| ((s - car.s).rem_euclid(track.length), d, v))
                .filter(|&(gap, d, _)| gap < 40.0 && (d - car.d).abs() < 2.6)
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if car.pass.is_some() {
                car.pass_left -= DT;
                if car.pass_left <= 0.0 {
                    car.pass = None;
                }
            }
            if let Some((gap, d, v)) = ahead {
                if car.pass.is_none() && target > v + 1.0 && gap < 25.0 && rng.chance(0.05) {
                    let side = if d > 0.0 { d - 3.8 } else { d + 3.8 };
                    car.pass = Some(side.clamp(-5.5, 5.5));
                    car.pass_left = rng.range(3.0, 5.0);
                } else if car.pass.is_none() {
                    target = target.min(v + (gap - 12.0) * 0.5);
                }
            }

            // Longitudinal: throttle towards the target speed.
            car.throttle_noise = car.throttle_noise * 0.98 + rng.range(-0.01, 0.01);
            let wanted = ((target - car.v) * 0.4).clamp(-1.0, 1.0) + car.throttle_noise;
            car.throttle = (car.throttle + (wanted - car.throttle) * smooth(6.0)).clamp(-1.0, 1.0);
            let engine = 16.0 * car.skill * (1.0 - car.v / 110.0).max(0.0);
            let drive = if car.throttle >= 0.0 {
                car.throttle * engine
            } else {
                car.throttle * 12.0
            };
            car.accel = drive - 0.0004 * car.v * car.v - 0.1;
            car.v = (car.v + car.accel * DT).max(5.0);

            // Lateral: ease towards the racing line or the passing lane.
            let lane_target = car
                .pass
                .unwrap_or_else(|| track.racing_line(car.s) + car.lane)
                .clamp(-5.5, 5.5);
            let d_vel_target = ((lane_target - car.d) * 0.8).clamp(-3.0, 3.0);
            let yaw_before = car.d_vel.atan2(car.v);
            car.d_vel += (d_vel_target - car.d_vel) * smooth(3.0);
            car.d = (car.d + car.d_vel * DT).clamp(-HALF_WIDTH, HALF_WIDTH);
            let yaw_rate = (car.d_vel.atan2(car.v) - yaw_before) / DT;

            car.s += car.v * DT;

            // Steering: the wheel angle of the path curvature, normalised to
            // a 0.15 rad lock.
            let path_k = track.curvature(car.s) + yaw_rate / car.v;
            car.steer_noise = car.steer_noise * 0.97 + rng.range(-0.004, 0.004);
            let wheel = ((2.8 * path_k).atan() / 0.15 + car.steer_noise).clamp(-1.0, 1.0);
            car.steering += (wheel - car.steering) * smooth(10.0);
        }
        self.time += DT;
    }

    /// The current state of every car as records, in id order.
    fn records(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(CAR_COUNT * RECORD_SIZE);
        let t = self.time;
        for car in &self.cars {
            let p = self.track.point(car.s);
            let pos = p.pos + p.normal * car.d + V3::new(0.0, RIDE_HEIGHT, 0.0);
            let vel = p.forward * car.v + p.normal * car.d_vel + V3::new(0.0, p.slope * car.v, 0.0);

            let lateral_g = car.v * car.v * p.k / 9.81;
            let drift = 0.01 * lateral_g;
            let yaw = p.heading + car.d_vel.atan2(car.v) + drift;
            let pitch = p.slope.atan() + 0.0004 * car.accel + 0.0015 * (car.phase + 13.0 * t).sin();
            let roll = -0.02 * lateral_g + 0.001 * (1.7 * car.phase + 9.0 * t).sin();
            // Forward is body +x, up +y: yaw about world y (plan heading h
            // points along (cos h, 0, sin h), a rotation of -h about +y), then
            // pitch about body z, then roll about body x.
            let q = Quat::from_axis_angle(V3::new(0.0, 1.0, 0.0), -yaw)
                .mul(Quat::from_axis_angle(V3::new(0.0, 0.0, 1.0), pitch))
                .mul(Quat::from_axis_angle(V3::new(1.0, 0.0, 0.0), roll));

            let floats = [
                pos.x,
                pos.y,
                pos.z,
                q.x,
                q.y,
                q.z,
                q.w,
                vel.x,
                vel.y,
                vel.z,
                car.steering,
                car.throttle,
            ];
            for f in floats {
                out.extend_from_slice(&(f as f32).to_le_bytes());
            }
            let lap = (car.s / self.track.length)
                .floor()
                .clamp(0.0, f64::from(u16::MAX)) as u16;
            out.extend_from_slice(&lap.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_at(rec: &[u8], i: usize) -> f32 {
        f32::from_le_bytes(rec[4 * i..4 * i + 4].try_into().unwrap())
    }

    #[test]
    fn track_closes_and_has_the_planned_length() {
        let t = Track::new();
        let last = t.segments[t.segments.len() - 1];
        let (u, v, h) = last.at(last.len);
        assert!(u.abs() < 1e-6 && v.abs() < 1e-6, "loop ends at ({u}, {v})");
        assert!((h - TAU).abs() < 1e-9, "loop ends heading {h}");
        assert!((2000.0..4000.0).contains(&t.length), "{}", t.length);
        assert!(t.segments.iter().all(|g| g.len > 0.0));
        let (a, b) = (t.point(0.0), t.point(t.length - 1e-9));
        assert!((a.pos - b.pos).len() < 1e-3);
    }

    #[test]
    fn record_layout_matches_schema() {
        let s = racing_schema();
        assert_eq!(s.sections()[0].record_size(), RECORD_SIZE);
        let sc = racing_lobby(1, 2);
        assert_eq!(sc.ticks[0].sections()[0].len(), CAR_COUNT);
        assert_eq!(sc.ticks[0].raw_len(), CAR_COUNT * RECORD_SIZE);
    }

    #[test]
    fn cars_stay_on_track_at_racing_speeds() {
        let track = Track::new();
        let centre: Vec<V3> = (0..track.length as usize)
            .map(|s| track.point(s as f64).pos)
            .collect();
        let sc = racing_lobby(7, 600);
        let (mut min_v, mut max_v) = (f32::MAX, f32::MIN);
        for (t, snap) in sc.ticks.iter().enumerate().step_by(20) {
            for (id, rec) in snap.sections()[0].iter() {
                let pos = V3::new(
                    f64::from(f32_at(rec, 0)),
                    f64::from(f32_at(rec, 1)),
                    f64::from(f32_at(rec, 2)),
                );
                let near = centre
                    .iter()
                    .min_by(|a, b| {
                        let (da, db) = (**a - pos, **b - pos);
                        (da.x * da.x + da.z * da.z).total_cmp(&(db.x * db.x + db.z * db.z))
                    })
                    .unwrap();
                let off = pos - *near;
                let lateral = (off.x * off.x + off.z * off.z).sqrt();
                assert!(
                    lateral < HALF_WIDTH + 1.0,
                    "car {id} at tick {t} is {lateral} m off the centre line"
                );
                assert!(
                    (off.y - RIDE_HEIGHT).abs() < 0.5,
                    "car {id} at tick {t}: height {}",
                    off.y
                );
                let q: Vec<f32> = (3..7).map(|i| f32_at(rec, i)).collect();
                let norm = q.iter().map(|c| c * c).sum::<f32>();
                assert!((norm - 1.0).abs() < 1e-4);
                let v = (4..7)
                    .map(|i| f32_at(rec, i + 3))
                    .map(|c| c * c)
                    .sum::<f32>()
                    .sqrt();
                (min_v, max_v) = (min_v.min(v), max_v.max(v));
                for c in [f32_at(rec, 10), f32_at(rec, 11)] {
                    assert!((-1.0..=1.0).contains(&c));
                }
                let lap = u16::from_le_bytes([rec[48], rec[49]]);
                assert!((3..=6).contains(&lap), "lap {lap}");
            }
        }
        println!("speeds {min_v:.1}..{max_v:.1} m/s");
        assert!(min_v > 24.0 && max_v < 85.0, "speeds {min_v}..{max_v}");
        assert!(max_v > 60.0, "nobody reaches racing speed: {max_v}");
    }

    #[test]
    fn positions_are_far_from_the_origin() {
        let sc = racing_lobby(3, 1);
        for (_, rec) in sc.ticks[0].sections()[0].iter() {
            let x = f32_at(rec, 0);
            let z = f32_at(rec, 2);
            assert!(x > 100.0 && z < -100.0, "{x} {z}");
        }
    }

    #[test]
    fn overtakes_happen() {
        // Progress along the track is not in the record: rank the race itself.
        let track = Track::new();
        let mut race = Race::new(&track, 11);
        let rank = |r: &Race<'_>| {
            let mut ids: Vec<usize> = (0..CAR_COUNT).collect();
            ids.sort_by(|&a, &b| r.cars[b].s.total_cmp(&r.cars[a].s));
            ids
        };
        let first = rank(&race);
        for _ in 0..1200 {
            race.step();
        }
        let moved = rank(&race)
            .iter()
            .zip(&first)
            .filter(|(a, b)| a != b)
            .count();
        println!("{moved} of {CAR_COUNT} race positions changed in 20 s");
        assert!(moved > 0);
    }
}
