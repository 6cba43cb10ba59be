//! `suggest`: helps pick quantisation steps from a capture. For every float
//! field it prints the observed range, the distribution of tick-to-tick
//! changes of an entity's value, and at a few candidate steps the bits a
//! value needs: the range in codes (a keyframe's cost) and the entropy of
//! the change in codes (what a delta costs after a good entropy coder),
//! with the largest error the step allows.
//!
//! It also looks for a lossless grid (FORMAT.md 4.5): a step among
//! [`GRID_STEPS`] whose whole multiples hold (nearly) every value of the
//! field while fewer are integral, such as angles sent as 16-bit fractions
//! of a turn. A grid loses nothing, so it is suggested on its own, before
//! any quantisation.
//!
//! And it looks for integrated fields (FORMAT.md 4.9, [`crate::integrals`]):
//! a float field that moves by another field's velocity over a time field,
//! with the fitted scale.
//!
//! It reads the capture once, in bounded memory: per field a fixed
//! histogram, a count per candidate grid and a reservoir of at most
//! [`SAMPLES`] tick-to-tick pairs, fewer when the float fields' reservoirs
//! would hold more than [`SAMPLE_PAIR_BYTES`] together.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt::Write;
use std::io::BufReader;
use std::path::Path;

use tickpack::{Primitive, Snapshot};
use tickpack_sets::capture::{CaptureReader, Record};

use crate::integrals::{read, search, PairSample, Suggestion};
use crate::TrainerError;

/// Candidate steps when none are given.
pub const DEFAULT_STEPS: [f64; 5] = [0.0001, 0.001, 0.01, 0.1, 1.0];
/// Most candidate steps `suggest` takes: each is a column of the report
/// and a pass over every float field's samples.
pub const MAX_STEPS: usize = 32;
/// Most tick-to-tick pairs kept per field.
pub const SAMPLES: usize = 50_000;
/// Most bytes the float fields' reservoirs of pairs hold together (each
/// keeps at least 16 pairs): a schema may declare thousands of float fields.
pub const SAMPLE_PAIR_BYTES: usize = 16 << 20;
/// Upper edges of the change histogram's buckets (the last is open).
const EDGES: [f64; 8] = [0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0];
/// Candidate grid steps, coarsest first: a turn in 256 and 65,536 parts
/// (degrees), binary fractions, decimal fractions.
pub const GRID_STEPS: [f64; 14] = [
    360.0 / 256.0,
    0.5,
    0.25,
    0.125,
    0.1,
    0.0625,
    1.0 / 32.0,
    0.01,
    1.0 / 128.0,
    360.0 / 65536.0,
    1.0 / 256.0,
    0.001,
    1.0 / 1024.0,
    1.0 / 4096.0,
];
/// Share of a field's finite values a grid must hold to be considered.
const GRID_SHARE: f64 = 0.9;
/// How much smaller a grid must make the sampled changes (their bits, as
/// the codec codes a value) to be suggested: a finer grid makes the step
/// counts of integral values larger.
const GRID_GAIN: f64 = 0.9;

/// What is gathered for one float field (all its elements together).
#[derive(Debug, Clone)]
pub(crate) struct FieldStats {
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
    /// Most pairs kept.
    cap: usize,
    seen_pairs: u64,
    /// Finite values that are integral (not -0.0), and that lie on each of
    /// [`GRID_STEPS`].
    integral: u64,
    on_grid: [u64; GRID_STEPS.len()],
}

impl FieldStats {
    fn new(section: &str, name: &str, ty: Primitive, len: usize, cap: usize) -> Self {
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
            cap,
            seen_pairs: 0,
            integral: 0,
            on_grid: [0; GRID_STEPS.len()],
        }
    }

    pub(crate) fn value(&mut self, x: f64) {
        self.values += 1;
        if !x.is_finite() {
            self.non_finite += 1;
            return;
        }
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        let zero_sign = x == 0.0 && x.is_sign_negative();
        if x.fract() == 0.0 && !zero_sign {
            self.integral += 1;
        }
        for (n, &step) in self.on_grid.iter_mut().zip(&GRID_STEPS) {
            if on_grid(x, step, self.ty) {
                *n += 1;
            }
        }
    }

    /// Among the candidate grids holding at least [`GRID_SHARE`] of the
    /// finite values, the one whose sampled changes cost the fewest bits,
    /// when that is below [`GRID_GAIN`] times their bits without a grid:
    /// `(step, share of values on it, bits per change without, with)`.
    pub(crate) fn grid(&self) -> Option<(f64, f64, f64, f64)> {
        let finite = (self.values - self.non_finite) as f64;
        let changed: Vec<(f64, f64)> = self
            .pairs
            .iter()
            .copied()
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .collect();
        if finite == 0.0 || changed.is_empty() {
            return None;
        }
        let bits = |step: Option<f64>| {
            let sum: u64 = changed
                .iter()
                .map(|&(a, b)| u64::from(change_bits(a, b, step, self.ty)))
                .sum();
            sum as f64 / changed.len() as f64
        };
        let plain = bits(None);
        GRID_STEPS
            .iter()
            .zip(&self.on_grid)
            .filter(|&(_, &n)| n as f64 >= GRID_SHARE * finite)
            .map(|(&step, &n)| (step, n as f64 / finite, plain, bits(Some(step))))
            .min_by(|a, b| a.3.total_cmp(&b.3))
            .filter(|g| g.3 < GRID_GAIN * plain)
    }

    pub(crate) fn change(&mut self, a: f64, b: f64, rng: &mut u64) {
        if !(a.is_finite() && b.is_finite()) {
            return;
        }
        let d = (b - a).abs();
        let i = EDGES.iter().position(|&e| d <= e).unwrap_or(EDGES.len());
        self.buckets[i] += 1;
        self.changes += 1;
        // Reservoir sampling (algorithm R) with a fixed-seed generator.
        self.seen_pairs += 1;
        if self.pairs.len() < self.cap {
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
pub(crate) fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Whether `x` (a finite value of a field of type `ty`) is a whole
/// multiple of `step` as the codec's grid coding sees it (FORMAT.md 4.5):
/// `k · step` in binary64, rounded to the field's type, gives back `x`'s
/// bits, with `|k|` at most 2^24 (`f32`) or 2^53 (`f64`), and `x` not -0.0.
fn on_grid(x: f64, step: f64, ty: Primitive) -> bool {
    let limit = if ty == Primitive::F32 {
        f64::from(1u32 << 24)
    } else {
        (1u64 << 53) as f64
    };
    let k = (x / step).round();
    if k.abs() > limit {
        return false;
    }
    let y = (k as i64) as f64 * step;
    if ty == Primitive::F32 {
        (y as f32).to_bits() == (x as f32).to_bits()
    } else {
        y.to_bits() == x.to_bits()
    }
}

/// The bit length of the value the codec sends for a change from `a` to
/// `b` (FORMAT.md 4.5): the zigzag difference of their whole values
/// (integral, or step counts on `grid`) when both have one, else of their
/// bit patterns.
pub(crate) fn change_bits(a: f64, b: f64, grid: Option<f64>, ty: Primitive) -> u32 {
    let whole = |x: f64| match grid {
        Some(step) => on_grid(x, step, ty).then(|| (x / step).round() as i64),
        None => {
            let limit: u64 = if ty == Primitive::F32 {
                1 << 24
            } else {
                1 << 53
            };
            (x.fract() == 0.0 && x.abs() <= limit as f64 && !(x == 0.0 && x.is_sign_negative()))
                .then_some(x as i64)
        }
    };
    let zigzag = |d: i64| ((d << 1) ^ (d >> 63)) as u64;
    let d = match (whole(a), whole(b)) {
        (Some(ka), Some(kb)) => zigzag(kb.wrapping_sub(ka)),
        _ if ty == Primitive::F32 => {
            let d = (b as f32).to_bits().wrapping_sub((a as f32).to_bits()) as i32;
            zigzag(i64::from(d))
        }
        _ => zigzag(b.to_bits().wrapping_sub(a.to_bits()) as i64),
    };
    64 - d.leading_zeros()
}

/// Float fields of a schema: (section, field index, offset) per stats entry.
pub(crate) fn layout(schema: &tickpack::Schema) -> (Vec<FieldStats>, Vec<(usize, usize, usize)>) {
    let floats = schema
        .sections()
        .iter()
        .flat_map(|t| t.fields())
        .filter(|f| f.ty.is_float())
        .count();
    let pair = core::mem::size_of::<(f64, f64)>();
    let cap = (SAMPLE_PAIR_BYTES / pair / floats.max(1)).clamp(16, SAMPLES);
    let mut stats = Vec::new();
    let mut at = Vec::new();
    for (si, t) in schema.sections().iter().enumerate() {
        for (fi, (f, &off)) in t.fields().iter().zip(t.offsets()).enumerate() {
            if f.ty.is_float() {
                stats.push(FieldStats::new(t.name(), &f.name, f.ty, f.len, cap));
                at.push((si, fi, off));
            }
        }
    }
    (stats, at)
}

/// Gathers the statistics of every float field of the capture at `path`
/// and renders them, with bits per value at `steps`.
pub fn suggest(path: &Path, steps: &[f64]) -> Result<String, TrainerError> {
    if steps.len() > MAX_STEPS {
        return Err(TrainerError::TooManySteps {
            given: steps.len(),
            max: MAX_STEPS,
        });
    }
    let f = std::fs::File::open(path).map_err(|e| TrainerError::io(path, e))?;
    let mut r =
        CaptureReader::new(BufReader::new(f)).map_err(crate::captures::capture_err(path))?;
    let schema = r.header().schema.clone();
    let (mut stats, at) = layout(&schema);
    let mut pairs = PairSample::for_schema(&schema);
    let mut prev: Option<Snapshot> = None;
    let mut prev_tick: Option<u64> = None;
    let mut rng = 0x5eed_u64;
    let mut ticks = 0u64;
    while let Some(rec) = r
        .next_record()
        .map_err(crate::captures::capture_err(path))?
    {
        let Record::Tick { tick, snapshot } = rec else {
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
        // The tick distance between the two snapshots, as a packet's.
        let gap = prev_tick.map_or(1, |p: u64| tick.wrapping_sub(p) as u16);
        prev_tick = Some(tick);
        if let Some(p) = &prev {
            for ((sa, sb), sample) in p.sections().iter().zip(snapshot.sections()).zip(&mut pairs) {
                for (id, rb) in sb.iter() {
                    if let Some(ra) = sa.get(id).filter(|ra| *ra != rb) {
                        sample.offer(ra, rb, gap, next(&mut rng));
                    }
                }
            }
        }
        prev = Some(snapshot.clone());
    }
    let integrals: Vec<Suggestion> = schema
        .sections()
        .iter()
        .zip(&pairs)
        .flat_map(|(ty, sample)| search(ty, sample))
        .collect();
    Ok(render(path, ticks, &stats, &integrals, steps))
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

fn render(
    path: &Path,
    ticks: u64,
    stats: &[FieldStats],
    integrals: &[Suggestion],
    steps: &[f64],
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "capture {}: {ticks} ticks", path.display());
    // Integrations of integer fields (clocks); floats' go with their field.
    for g in integrals.iter().filter(|g| {
        !stats
            .iter()
            .any(|st| g.field == st.name && g.section == st.section)
    }) {
        let _ = writeln!(
            s,
            "\n`{}`.`{}` moves by `{}` over `{}`: predicted, an element of a changed record costs \
             {:.1} bits instead of {:.1}; declare `integrate = {{ velocity = \"{}\", time = \"{}\", scale = {} }}` \
             (lossless)",
            g.section, g.field, g.velocity, g.time, g.bits.1, g.bits.0, g.velocity, g.time, g.scale,
        );
    }
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
        if let Some((step, share, plain, grid)) = st.grid() {
            let finite = (st.values - st.non_finite).max(1) as f64;
            let _ = writeln!(
                s,
                "  {:.2}% of the values lie on a grid of {step} ({:.2}% are integral): a change \
                 costs {grid:.1} bits instead of {plain:.1}; declare `grid = {step}` (lossless)",
                100.0 * share,
                100.0 * st.integral as f64 / finite
            );
        }
        if let Some(g) = integrals
            .iter()
            .find(|g| g.field == st.name && g.section == st.section)
        {
            let _ = writeln!(
                s,
                "  moves by `{}` over `{}`: predicted, an element of a changed record costs {:.1} \
                 bits instead of {:.1}; \
                 declare `integrate = {{ velocity = \"{}\", time = \"{}\", scale = {} }}` \
                 (lossless)",
                g.velocity, g.time, g.bits.1, g.bits.0, g.velocity, g.time, g.scale,
            );
        }
        if st.unit_norm && st.values > 0 {
            let _ = writeln!(
                s,
                "  every value has unit norm: a rotation? `smallest_three = 10` costs 32 bits, 0.27° at most; \
                 or, exactly, declare `unit = true` (lossless: the last element is coded against \
                 what the others imply)"
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
