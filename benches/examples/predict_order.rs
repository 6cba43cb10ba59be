//! How much a second-order prediction would save on racing, before
//! building it: for every float of every car, the bit length of the
//! zigzagged difference of its bit pattern (as an integer, the way the
//! pipeline's `Predict` fields code it) from four guesses made from the
//! snapshots `d`, `2d` and `3d` ticks back: none (the baseline), linear
//! (`2·b0 − b1`, today's), quadratic (`3·b0 − 3·b1 + b2`) and half the
//! quadratic term. The sums approximate a packet's value bits (the head
//! symbols' cost comes on top); the last line takes the best guess per
//! field, as a trained set would choose it. A last line prices `rot.w`
//! against the value a unit quaternion implies from `x`, `y` and `z`
//! (`sqrt(1 − x² − y² − z²)` in binary64, rounded to `f32`, `w`'s sign),
//! which needs no earlier snapshot at all.
//!
//! ```sh
//! cargo run --release -p tickpack-benches --example predict_order -- 6
//! ```
//!
//! Arguments: `[d] [ticks]` (default `6 600`; seed 7, as the README's eval).

use std::error::Error;

use tickpack_scenarios::racing_lobby;

const FIELDS: [&str; 12] = [
    "pos.x", "pos.y", "pos.z", "rot.x", "rot.y", "rot.z", "rot.w", "vel.x", "vel.y", "vel.z",
    "steering", "throttle",
];
const GUESSES: [&str; 4] = ["none", "linear", "quadratic", "half-quad"];

/// Bit length of the zigzag of `r`.
fn class(r: i64) -> u32 {
    64 - (((r << 1) ^ (r >> 63)) as u64).leading_zeros()
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let d: usize = args.get(1).map_or(Ok(6), |s| s.parse())?;
    let ticks: usize = args.get(2).map_or(Ok(600), |s| s.parse())?;
    let sc = racing_lobby(7, ticks);
    let section = |t: usize| sc.ticks.get(t).and_then(|s| s.sections().first());
    let mut bits = [[0u64; 4]; FIELDS.len()];
    let mut packets = 0u64;
    let mut derived_w = 0u64;
    for t in 3 * d..sc.ticks.len() {
        let (Some(c), Some(b0), Some(b1), Some(b2)) = (
            section(t),
            section(t - d),
            section(t - 2 * d),
            section(t - 3 * d),
        ) else {
            continue;
        };
        for (k, &id) in c.ids().iter().enumerate() {
            let rs = c.record_size();
            let Some(cur) = c.records().get(k * rs..(k + 1) * rs) else {
                continue;
            };
            let (Some(r0), Some(r1), Some(r2)) = (b0.get(id), b1.get(id), b2.get(id)) else {
                continue;
            };
            let float = |i: usize| {
                cur.get(4 * i..4 * i + 4)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map_or(0.0, f32::from_le_bytes)
            };
            let (x, y, z, w) = (float(3), float(4), float(5), float(6));
            let sq = |v: f32| f64::from(v) * f64::from(v);
            let implied = (1.0 - sq(x) - sq(y) - sq(z)).max(0.0).sqrt() as f32;
            let implied = if w.is_sign_negative() {
                -implied
            } else {
                implied
            };
            let bits_of = |v: f32| i64::from(v.to_bits() as i32);
            derived_w += u64::from(class(bits_of(w) - bits_of(implied)));
            for (f, field) in bits.iter_mut().enumerate() {
                let at = 4 * f;
                let lane = |r: &[u8]| {
                    r.get(at..at + 4)
                        .and_then(|b| <[u8; 4]>::try_from(b).ok())
                        .map_or(0, |b| i64::from(i32::from_le_bytes(b)))
                };
                let (x, x0, x1, x2) = (lane(cur), lane(r0), lane(r1), lane(r2));
                let guesses = [
                    x0,
                    2 * x0 - x1,
                    3 * x0 - 3 * x1 + x2,
                    2 * x0 - x1 + (x0 - 2 * x1 + x2) / 2,
                ];
                for (g, guess) in field.iter_mut().zip(guesses) {
                    *g += u64::from(class(x - guess));
                }
            }
        }
        packets += 1;
    }
    let per = |b: u64| b as f64 / packets.max(1) as f64;
    println!("racing, seed 7, d = {d}: value bits per packet by guess ({packets} packets)");
    println!(
        "{:10} {:>10} {:>10} {:>10} {:>10}",
        "field", GUESSES[0], GUESSES[1], GUESSES[2], GUESSES[3]
    );
    let mut total = [0f64; 4];
    let (mut best_today, mut best_any) = (0f64, 0f64);
    for (name, field) in FIELDS.iter().zip(&bits) {
        let row: Vec<f64> = field.iter().map(|&b| per(b)).collect();
        println!(
            "{name:10} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            row[0], row[1], row[2], row[3]
        );
        for (t, r) in total.iter_mut().zip(&row) {
            *t += r;
        }
        best_today += row[0].min(row[1]);
        best_any += row.iter().copied().fold(f64::MAX, f64::min);
    }
    println!(
        "{:10} {:>10.0} {:>10.0} {:>10.0} {:>10.0}",
        "total", total[0], total[1], total[2], total[3]
    );
    println!(
        "best per field: none or linear {best_today:.0}, any guess {best_any:.0} ({:+.1}%)",
        100.0 * (best_any / best_today - 1.0)
    );
    println!(
        "rot.w against the unit quaternion's x, y, z: {:.1}",
        per(derived_w)
    );
    Ok(())
}
