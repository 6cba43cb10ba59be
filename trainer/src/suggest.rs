//! `suggest`: helps pick quantisation steps from a capture. For every float
//! field it prints the observed range, the distribution of tick-to-tick
//! changes of an entity's value, and at a few candidate steps the bits a
//! value needs: the range in codes (a keyframe's cost) and the entropy of
//! the change in codes (what a delta costs after a good entropy coder),
//! with the largest error the step allows.
//!
//! It reads the capture once, in bounded memory: per field a fixed
//! histogram and a reservoir of at most [`SAMPLES`] tick-to-tick pairs.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt::Write;
use std::io::BufReader;
use std::path::Path;

use tickpack::capture::{CaptureReader, Record};
use tickpack::{Primitive, Snapshot};

use crate::TrainerError;

/// Candidate steps when none are given.
pub const DEFAULT_STEPS: [f64; 5] = [0.0001, 0.001, 0.01, 0.1, 1.0];
/// Most tick-to-tick pairs kept per field.
pub const SAMPLES: usize = 50_000;
/// Upper edges of the change histogram's buckets (the last is open).
const EDGES: [f64; 8] = [0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0];

/// What is gathered for one float field (all its elements together).
#[derive(Debug, Clone)]
struct FieldStats {
    section: String,
    name: String,
    ty: Primitive,
    len: usize,
    values: u64,
    non_finite: u64,
    min: f64,
    max: f64,
    /// Counts of |change| per bucket of [`EDGES`], then one above.
    buckets: [u64; EDGES.len() + 1],
    changes: u64,
    /// Whether every record's four elements had unit norm (len 4 only).
    unit_norm: bool,
    /// A uniform sample of (previous, current) pairs.
    pairs: Vec<(f64, f64)>,
    seen_pairs: u64,
}

impl FieldStats {
    fn new(section: &str, name: &str, ty: Primitive, len: usize) -> Self {
        Self {
            section: section.to_owned(),
            name: name.to_owned(),
            ty,
            len,
            values: 0,
            non_finite: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            buckets: [0; EDGES.len() + 1],
            changes: 0,
            unit_norm: len == 4,
            pairs: Vec::new(),
            seen_pairs: 0,
        }
    }

    fn value(&mut self, x: f64) {
        self.values += 1;
        if x.is_finite() {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        } else {
            self.non_finite += 1;
        }
    }

    fn change(&mut self, a: f64, b: f64, rng: &mut u64) {
        if !(a.is_finite() && b.is_finite()) {
            return;
        }
        let d = (b - a).abs();
        let i = EDGES.iter().position(|&e| d <= e).unwrap_or(EDGES.len());
        self.buckets[i] += 1;
        self.changes += 1;
        // Reservoir sampling (algorithm R) with a fixed-seed generator.
        self.seen_pairs += 1;
        if self.pairs.len() < SAMPLES {
            self.pairs.push((a, b));
        } else {
            let j = next(rng) % self.seen_pairs;
            if let Some(slot) = self.pairs.get_mut(j as usize) {
                *slot = (a, b);
            }
        }
    }
}

/// SplitMix64 step.
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn read(rec: &[u8], at: usize, ty: Primitive) -> f64 {
    match ty {
        Primitive::F32 => rec
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(f64::NAN, |b| f64::from(f32::from_le_bytes(b))),
        _ => rec
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(f64::NAN, f64::from_le_bytes),
    }
}

/// Float fields of a schema: (section, field index, offset) per stats entry.
fn layout(schema: &tickpack::Schema) -> (Vec<FieldStats>, Vec<(usize, usize, usize)>) {
    let mut stats = Vec::new();
    let mut at = Vec::new();
    for (si, t) in schema.sections().iter().enumerate() {
        for (fi, (f, &off)) in t.fields().iter().zip(t.offsets()).enumerate() {
            if f.ty.is_float() {
                stats.push(FieldStats::new(t.name(), &f.name, f.ty, f.len));
                at.push((si, fi, off));
            }
        }
    }
    (stats, at)
}

/// Gathers the statistics of every float field of the capture at `path`
/// and renders them, with bits per value at `steps`.
pub fn suggest(path: &Path, steps: &[f64]) -> Result<String, TrainerError> {
    let f = std::fs::File::open(path).map_err(|e| TrainerError::io(path, e))?;
    let mut r =
        CaptureReader::new(BufReader::new(f)).map_err(crate::captures::capture_err(path))?;
    let schema = r.header().schema.clone();
    let (mut stats, at) = layout(&schema);
    let mut prev: Option<Snapshot> = None;
    let mut rng = 0x5eed_u64;
    let mut ticks = 0u64;
    while let Some(rec) = r
        .next_record()
        .map_err(crate::captures::capture_err(path))?
    {
        let Record::Tick { snapshot, .. } = rec else {
            continue;
        };
        ticks += 1;
        for (st, &(si, _, off)) in stats.iter_mut().zip(&at) {
            let Some(sec) = snapshot.sections().get(si) else {
                continue;
            };
            let w = st.ty.size();
            for (_, record) in sec.iter() {
                let mut norm = 0.0;
                for e in 0..st.len {
                    let x = read(record, off + e * w, st.ty);
                    st.value(x);
                    norm += x * x;
                }
                if st.len == 4 && (norm.sqrt() - 1.0).abs() > 1e-3 {
                    st.unit_norm = false;
                }
            }
            let Some(p) = prev.as_ref().and_then(|p| p.sections().get(si)) else {
                continue;
            };
            // Entities present in both ticks, by a merge walk over sorted ids.
            let (a, b) = (p.ids(), sec.ids());
            let (mut i, mut j) = (0, 0);
            while i < a.len() && j < b.len() {
                match a[i].cmp(&b[j]) {
                    core::cmp::Ordering::Less => i += 1,
                    core::cmp::Ordering::Greater => j += 1,
                    core::cmp::Ordering::Equal => {
                        let (ra, rb) = (p.get(a[i]), sec.get(b[j]));
                        if let (Some(ra), Some(rb)) = (ra, rb) {
                            for e in 0..st.len {
                                let o = off + e * w;
                                st.change(read(ra, o, st.ty), read(rb, o, st.ty), &mut rng);
                            }
                        }
                        i += 1;
                        j += 1;
                    }
                }
            }
        }
        prev = Some(snapshot.clone());
    }
    Ok(render(path, ticks, &stats, steps))
}

/// Shannon entropy, in bits per value, of the change in codes at `step`.
fn delta_entropy(pairs: &[(f64, f64)], step: f64) -> f64 {
    let mut counts: HashMap<i64, u64> = HashMap::new();
    for &(a, b) in pairs {
        let d = (b / step).round_ties_even() - (a / step).round_ties_even();
        *counts.entry(d.clamp(-9e18, 9e18) as i64).or_default() += 1;
    }
    let n = pairs.len() as f64;
    let h: f64 = counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum();
    // A single outcome sums to -0.0.
    h.abs()
}

fn render(path: &Path, ticks: u64, stats: &[FieldStats], steps: &[f64]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "capture {}: {ticks} ticks", path.display());
    if stats.is_empty() {
        let _ = writeln!(s, "no float fields: nothing to quantise");
        return s;
    }
    for st in stats {
        let ty = format!("{:?}", st.ty).to_lowercase();
        let _ = writeln!(
            s,
            "\n`{}`.`{}` ({ty} x{}): {} values, range [{}, {}]{}",
            st.section,
            st.name,
            st.len,
            st.values,
            st.min,
            st.max,
            if st.non_finite > 0 {
                format!(
                    ", {} NaN or infinite (quantising refuses them)",
                    st.non_finite
                )
            } else {
                String::new()
            }
        );
        if st.changes > 0 {
            let mut line = String::from("  |change| per tick:");
            let mut lo = "0".to_owned();
            for (i, &c) in st.buckets.iter().enumerate() {
                if c == 0 {
                    if let Some(e) = EDGES.get(i) {
                        lo = format!("{e}");
                    }
                    continue;
                }
                let pct = 100.0 * c as f64 / st.changes as f64;
                let label = match EDGES.get(i) {
                    Some(0.0) => "=0".to_owned(),
                    Some(&e) => format!("{lo}..{e}"),
                    None => format!(">{lo}"),
                };
                let _ = write!(line, " {label} {pct:.1}%");
                if let Some(e) = EDGES.get(i) {
                    lo = format!("{e}");
                }
            }
            let _ = writeln!(s, "{line}");
        }
        if st.unit_norm && st.values > 0 {
            let _ = writeln!(
                s,
                "  every value has unit norm: a rotation? `smallest_three = 10` costs 32 bits, 0.27° at most"
            );
        }
        // No finite value seen: nothing to quantise.
        if st.min > st.max {
            continue;
        }
        let mut rows = vec![vec![
            "  step".to_owned(),
            "max error".to_owned(),
            "range bits".to_owned(),
            "delta bits (entropy)".to_owned(),
        ]];
        for &step in steps {
            let span =
                ((st.max / step).round_ties_even() - (st.min / step).round_ties_even()).abs();
            let range_bits = (span + 1.0).log2().ceil();
            let delta = if st.pairs.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.2}", delta_entropy(&st.pairs, step))
            };
            rows.push(vec![
                format!("  {step}"),
                format!("{}", step / 2.0),
                format!("{range_bits}"),
                delta,
            ]);
        }
        s += &crate::table::render(&rows);
    }
    let _ = writeln!(
        s,
        "\nrange bits: what one value costs without a baseline; delta bits: what a\n\
         tick-to-tick change costs after an ideal entropy coder (full precision f32\n\
         changes cost up to 32). Declare the chosen step with\n\
         `quantize = {{ step = S, range = [MIN, MAX] }}` in the schema."
    );
    s
}
