//! Whether extrapolating a rotation by a quaternion product would code
//! smaller than today's component-wise `predict`, before building it
//! (issue 37, item 4): for every car of the racing lobby (seed 7), the
//! bit length of the zigzagged difference between each rotation
//! component's `f32` bit pattern and three guesses made from the
//! snapshots `d` and `2d` ticks back: the baseline `q0`, today's linear
//! `2·q0 − q1` on the bit patterns (`predict`), and the quaternion product
//! `(q0 · q1⁻¹) · q0` (the rotation from the prior to the baseline applied
//! once more, in binary64, normalised, rounded to `f32`, sign chosen
//! nearest `q0`). `w` is also priced against what `x`, `y`, `z` imply (the
//! unit field of FORMAT.md 4.10), as the shipped set codes it.
//!
//! ```sh
//! cargo run --release -p tickpack-benches --example rotation_predict -- 6
//! ```
//!
//! Arguments: `[d] [ticks]` (default `6 600`).

use std::error::Error;

use tickpack_scenarios::racing_lobby;

const COMPONENTS: [&str; 4] = ["rot.x", "rot.y", "rot.z", "rot.w"];
const GUESSES: [&str; 3] = ["baseline", "linear", "product"];
/// Byte offset of the rotation in a racing record (after the position).
const ROT: usize = 12;

/// Bit length of the zigzag of `r`.
fn class(r: i64) -> u32 {
    64 - (((r << 1) ^ (r >> 63)) as u64).leading_zeros()
}

fn quat(rec: &[u8]) -> Option<[f32; 4]> {
    let mut q = [0f32; 4];
    for (k, c) in q.iter_mut().enumerate() {
        let at = ROT + 4 * k;
        *c = f32::from_le_bytes(rec.get(at..at + 4)?.try_into().ok()?);
    }
    Some(q)
}

/// The Hamilton product `a · b`, components x, y, z, w.
fn mul(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    let [ax, ay, az, aw] = a;
    let [bx, by, bz, bw] = b;
    [
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ]
}

/// `(q0 · q1⁻¹) · q0` in binary64, normalised, rounded to `f32`, on `q0`'s
/// side of the double cover.
fn product(q0: [f32; 4], q1: [f32; 4]) -> [f32; 4] {
    let a = q0.map(f64::from);
    let b = q1.map(f64::from);
    let inv = [-b[0], -b[1], -b[2], b[3]];
    let mut p = mul(mul(a, inv), a);
    let n = p.iter().map(|x| x * x).sum::<f64>().sqrt();
    let dot: f64 = p.iter().zip(&a).map(|(x, y)| x * y).sum();
    let s = if dot < 0.0 { -1.0 / n } else { 1.0 / n };
    p = p.map(|x| x * s);
    p.map(|x| x as f32)
}

fn bits(x: f32) -> i64 {
    i64::from(x.to_bits() as i32)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let d: usize = args.get(1).map_or(Ok(6), |s| s.parse())?;
    let ticks: usize = args.get(2).map_or(Ok(600), |s| s.parse())?;
    let sc = racing_lobby(7, ticks);
    let section = |t: usize| sc.ticks.get(t).and_then(|s| s.sections().first());
    let mut sums = [[0u64; 3]; 4];
    let mut implied = [0u64; 3];
    let mut packets = 0u64;
    for t in 2 * d..sc.ticks.len() {
        let (Some(c), Some(b0), Some(b1)) = (section(t), section(t - d), section(t - 2 * d)) else {
            continue;
        };
        for (id, rec) in c.iter() {
            let (Some(q), Some(q0), Some(q1)) = (
                quat(rec),
                b0.get(id).and_then(quat),
                b1.get(id).and_then(quat),
            ) else {
                continue;
            };
            let linear: [i64; 4] = core::array::from_fn(|k| 2 * bits(q0[k]) - bits(q1[k]));
            let prod = product(q0, q1);
            for k in 0..4 {
                let guesses = [bits(q0[k]), linear[k], bits(prod[k])];
                for (g, guess) in guesses.iter().enumerate() {
                    sums[k][g] += u64::from(class(bits(q[k]) - guess));
                }
            }
            // `w` against what the other components imply, when each of the
            // three guesses is used for x, y, z: the unit field codes
            // only the residual of `w`.
            let sq = |v: f32| f64::from(v) * f64::from(v);
            let p = (1.0 - (sq(q[0]) + sq(q[1]) + sq(q[2]))).max(0.0).sqrt() as f32;
            let p = if q0[3].is_sign_negative() { -p } else { p };
            for s in &mut implied {
                *s += u64::from(class(bits(q[3]) - bits(p)));
            }
        }
        packets += 1;
    }
    let per = |b: u64| b as f64 / packets.max(1) as f64;
    println!(
        "racing, seed 7, d = {d}: rotation value bits per packet by guess ({packets} packets)"
    );
    println!(
        "{:8} {:>10} {:>10} {:>10}",
        "", GUESSES[0], GUESSES[1], GUESSES[2]
    );
    let mut total = [0f64; 3];
    for (name, row) in COMPONENTS.iter().zip(&sums) {
        println!(
            "{name:8} {:>10.1} {:>10.1} {:>10.1}",
            per(row[0]),
            per(row[1]),
            per(row[2])
        );
        for (t, &r) in total.iter_mut().zip(row) {
            *t += per(r);
        }
    }
    println!(
        "{:8} {:>10.0} {:>10.0} {:>10.0}",
        "total", total[0], total[1], total[2]
    );
    let xyz: Vec<f64> = (0..3)
        .map(|g| total[g] - per(sums[3][g]) + per(implied[g]))
        .collect();
    println!(
        "{:8} {:>10.0} {:>10.0} {:>10.0}   (x, y, z by the guess, w implied)",
        "unit", xyz[0], xyz[1], xyz[2]
    );
    Ok(())
}
