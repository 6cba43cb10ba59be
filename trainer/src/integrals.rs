//! `suggest`'s search for integrated fields (FORMAT.md 4.9): for every
//! numeric field, the velocity (a field of the same length, or the constant
//! 1 for a clock) and time (a scalar field, or the pair's tick distance for
//! records without one) of its entity type whose prediction
//! `b + ((v + v_b) / 2) · Δt · scale` makes its tick-to-tick changes
//! cheapest (time fields: scalars that change in at least half of the
//! changed records, the four that grew most often), with the scale
//! fitted (the median ratio, three significant digits, or a round value
//! near it when that predicts as well). It works on a uniform sample of at
//! most [`RECORD_PAIRS`] (previous, current) record pairs per entity type
//! and [`SAMPLE_BYTES`] in all, so memory stays bounded.

#![forbid(unsafe_code)]

use tickpack::{EntityType, Integrate, Primitive};

/// Most record pairs kept per entity type.
pub const RECORD_PAIRS: usize = 4096;
/// Most bytes the samples of all entity types hold together (each keeps
/// at least 16 pairs).
pub const SAMPLE_BYTES: usize = 64 << 20;
/// A prediction is suggested when it brings the sampled changes under this
/// share of their bits without it.
const GAIN: f64 = 0.85;

/// A uniform sample (reservoir) of changed record pairs of one entity type,
/// each with its distance in ticks.
#[derive(Debug, Clone, Default)]
pub(crate) struct PairSample {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    ticks: Vec<u16>,
    seen: u64,
    cap: usize,
}

impl PairSample {
    /// One sample per entity type of `schema`, within [`RECORD_PAIRS`] and
    /// [`SAMPLE_BYTES`].
    pub(crate) fn for_schema(schema: &tickpack::Schema) -> Vec<Self> {
        let n = schema.sections().len().max(1);
        schema
            .sections()
            .iter()
            .map(|t| Self {
                cap: (SAMPLE_BYTES / n / (2 * t.record_size()).max(1)).clamp(16, RECORD_PAIRS),
                ..Self::default()
            })
            .collect()
    }

    /// How many pairs were offered.
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    /// Offers one (previous, current) pair `ticks` apart; `draw` is a fresh
    /// random number.
    pub(crate) fn offer(&mut self, prev: &[u8], cur: &[u8], ticks: u16, draw: u64) {
        self.seen += 1;
        if self.pairs.len() < self.cap {
            self.pairs.push((prev.to_vec(), cur.to_vec()));
            self.ticks.push(ticks);
        } else {
            let k = (draw % self.seen) as usize;
            if let (Some(slot), Some(t)) = (self.pairs.get_mut(k), self.ticks.get_mut(k)) {
                *slot = (prev.to_vec(), cur.to_vec());
                *t = ticks;
            }
        }
    }
}

/// A suggested integration of one field.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// The entity type.
    pub section: String,
    /// The integrated field.
    pub field: String,
    /// The velocity field, or [`Integrate::ONE`](tickpack::Integrate::ONE).
    pub velocity: String,
    /// The time field, or [`Integrate::TICKS`](tickpack::Integrate::TICKS).
    pub time: String,
    /// The fitted scale.
    pub scale: f64,
    /// Mean bits of the field's elements in a changed record (a mask bit
    /// and the change where the reference is wrong) without and with the
    /// prediction.
    pub bits: (f64, f64),
}

/// Element `ty` of `rec` at `offset` as binary64 (`NaN` past the record).
#[inline]
pub(crate) fn read(rec: &[u8], offset: usize, ty: Primitive) -> f64 {
    rec.get(offset..)
        .and_then(|b| ty.to_f64(b))
        .unwrap_or(f64::NAN)
}

/// `x` rounded to three significant digits.
fn round3(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return x;
    }
    let p = 10f64.powi(2 - x.log10().floor() as i32);
    (x * p).round() / p
}

/// Most time fields tried per entity type: the search costs fields² ×
/// time fields × sampled changes, so a type of 256 changing scalars stays
/// a search of seconds, not hours.
const MAX_CLOCKS: usize = 4;

/// The time fields of `ty` to try: unquantised scalars that change in at
/// least half of the sampled pairs (a clock runs whenever an entity
/// changes), at most [`MAX_CLOCKS`] of them, those that grew in the most
/// pairs first (a clock only grows), then in declaration order.
fn clocks(ty: &EntityType, sample: &PairSample) -> Vec<usize> {
    let fields = ty.fields();
    let offsets = ty.offsets();
    let quantised = |i: usize| ty.quantization().get(i).is_some_and(Option::is_some);
    let mut ranked: Vec<(usize, usize)> = (0..fields.len())
        .filter(|&t| fields[t].len == 1 && !quantised(t))
        .filter_map(|t| {
            let r = offsets[t]..offsets[t] + fields[t].ty.size();
            let moved = sample
                .pairs
                .iter()
                .filter(|(a, b)| a.get(r.clone()) != b.get(r.clone()))
                .count();
            let grew = sample
                .pairs
                .iter()
                .filter(|(a, b)| {
                    read(b, offsets[t], fields[t].ty) > read(a, offsets[t], fields[t].ty)
                })
                .count();
            (moved * 2 >= sample.pairs.len()).then_some((t, grew))
        })
        .collect();
    ranked.sort_by_key(|&(t, grew)| (core::cmp::Reverse(grew), t));
    ranked.truncate(MAX_CLOCKS);
    ranked.into_iter().map(|(t, _)| t).collect()
}

/// The best integration of each numeric field of `ty` found in `sample`:
/// a float from any velocity field of its length or at the constant rate,
/// an integer at the constant rate (a clock), over any clock field or the
/// tick distance.
pub(crate) fn search(ty: &EntityType, sample: &PairSample) -> Vec<Suggestion> {
    let fields = ty.fields();
    let offsets = ty.offsets();
    let quantised = |i: usize| ty.quantization().get(i).is_some_and(Option::is_some);
    let grids: Vec<bool> = ty.grids().map(|g| g.is_some()).collect();
    // `None`: the tick distance.
    let times: Vec<Option<usize>> = clocks(ty, sample)
        .into_iter()
        .map(Some)
        .chain([None])
        .collect();
    let mut out = Vec::new();
    for (x, fx) in fields.iter().enumerate() {
        let declared = ty.integrations().get(x).is_some_and(Option::is_some);
        if quantised(x) || declared {
            continue;
        }
        // The changed elements of the field: (pair, element).
        let changed: Vec<(usize, usize)> = sample
            .pairs
            .iter()
            .enumerate()
            .flat_map(|(p, (a, b))| {
                (0..fx.len).filter_map(move |k| {
                    let at = offsets[x] + k * fx.ty.size();
                    (a.get(at..at + fx.ty.size()) != b.get(at..at + fx.ty.size())).then_some((p, k))
                })
            })
            .collect();
        if changed.is_empty() {
            continue;
        }
        // Mean bits of the field's elements in a changed record: nothing
        // where the reference is right (a prediction that moves an element
        // the record did not change costs too), else the change and its
        // mask bit.
        let elements = sample.pairs.len() * fx.len;
        let bits = |pred: &dyn Fn(usize, usize) -> f64| {
            let mut sum = 0u64;
            for (p, (_, b)) in sample.pairs.iter().enumerate() {
                for k in 0..fx.len {
                    let cur = read(b, offsets[x] + k * fx.ty.size(), fx.ty);
                    let r = pred(p, k);
                    if r.to_bits() != cur.to_bits() {
                        sum += 1 + u64::from(crate::suggest::change_bits(r, cur, None, fx.ty));
                    }
                }
            }
            sum as f64 / elements as f64
        };
        let base =
            |p: usize, k: usize| read(&sample.pairs[p].0, offsets[x] + k * fx.ty.size(), fx.ty);
        let plain = bits(&base);
        // v_mean · Δt of element k of pair p, with velocity field v (`None`:
        // 1) and time field t (`None`: the pair's ticks).
        let motion = |p: usize, k: usize, v: Option<usize>, t: Option<usize>| {
            let (a, b) = &sample.pairs[p];
            let vm = v.map_or(1.0, |v| {
                let fv = &fields[v];
                let vo = offsets[v] + k * fv.ty.size();
                (read(b, vo, fv.ty) + read(a, vo, fv.ty)) / 2.0
            });
            let dt = t.map_or_else(
                || f64::from(sample.ticks.get(p).copied().unwrap_or(0)),
                |t| read(b, offsets[t], fields[t].ty) - read(a, offsets[t], fields[t].ty),
            );
            vm * dt
        };
        // The prediction as the codec computes it (FORMAT.md 4.9: rounded
        // to an integer for an integer field, and over ticks for a whole
        // float without a grid; then to the field's type; the baseline
        // value when not finite).
        let predicted = |p: usize, k: usize, v: Option<usize>, t: Option<usize>, scale: f64| {
            let b = base(p, k);
            let mut q = b + motion(p, k, v, t) * scale;
            let whole = b.fract() == 0.0 && !(b == 0.0 && b.is_sign_negative());
            if !fx.ty.is_float()
                || (t.is_none() && whole && !grids.get(x).copied().unwrap_or(false))
            {
                q = q.round_ties_even() + 0.0;
            }
            let q = if fx.ty == Primitive::F32 {
                f64::from(q as f32)
            } else {
                q
            };
            if q.is_finite() {
                q
            } else {
                b
            }
        };
        let name = |f: Option<usize>, reserved: &str| {
            f.map_or(reserved.to_owned(), |f| fields[f].name.clone())
        };
        // Velocities: fields of the same length for a float, and the
        // constant rate.
        let velocities: Vec<Option<usize>> = fields
            .iter()
            .enumerate()
            .filter(|&(v, fv)| fx.ty.is_float() && v != x && fv.len == fx.len && !quantised(v))
            .map(|(v, _)| Some(v))
            .chain([None])
            .collect();
        let mut best: Option<(Suggestion, Option<usize>, Option<usize>)> = None;
        for &v in &velocities {
            for &t in &times {
                if t.is_some_and(|t| t == x || Some(t) == v) {
                    continue;
                }
                // The scale: the median of change / (v_mean · Δt) (robust to
                // teleports and respawns), rounded to three digits.
                let mut ratios: Vec<f64> = changed
                    .iter()
                    .filter_map(|&(p, k)| {
                        let m = motion(p, k, v, t);
                        let xo = offsets[x] + k * fx.ty.size();
                        let (a, b) = &sample.pairs[p];
                        let r = (read(b, xo, fx.ty) - read(a, xo, fx.ty)) / m;
                        (r.is_finite() && r > 0.0).then_some(r)
                    })
                    .collect();
                if ratios.len() * 2 < changed.len() {
                    continue;
                }
                ratios.sort_by(f64::total_cmp);
                let scale = round3(ratios[ratios.len() / 2]);
                let with = bits(&|p, k| predicted(p, k, v, t, scale));
                if best.as_ref().is_none_or(|b| with < b.0.bits.1) {
                    best = Some((
                        Suggestion {
                            section: ty.name().to_owned(),
                            field: fx.name.clone(),
                            velocity: name(v, Integrate::ONE),
                            time: name(t, Integrate::TICKS),
                            scale,
                            bits: (plain, with),
                        },
                        v,
                        t,
                    ));
                }
            }
        }
        // A round scale near the fitted one (a power of ten, a common tick
        // length in seconds or milliseconds, a whole number) when it
        // predicts at least as well.
        if let Some((b, v, t)) = &mut best {
            let decade = 10f64.powf(b.scale.log10().round());
            let fitted = b.scale;
            for c in [
                decade,
                1.0 / 60.0,
                1.0 / 30.0,
                1.0 / 20.0,
                1000.0 / 60.0,
                1000.0 / 30.0,
                50.0,
                fitted.round(),
            ] {
                if c / fitted > 0.5 && c / fitted < 2.0 {
                    let with = bits(&|p, k| predicted(p, k, *v, *t, c));
                    if with <= b.bits.1 {
                        b.scale = c;
                        b.bits.1 = with;
                    }
                }
            }
        }
        out.extend(best.map(|b| b.0).filter(|b| b.bits.1 < GAIN * b.bits.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack::Schema;

    fn record(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn at_most_four_clocks_are_tried_those_that_grow_first() {
        // 40 scalars that all change in every pair: 38 swing up and down,
        // fields 30 and 35 only grow.
        let mut b = Schema::builder().entity("e");
        for i in 0..40 {
            b = b.field(&format!("f{i}"), Primitive::F32, 1);
        }
        let schema = b.build().unwrap();
        let ty = &schema.sections()[0];
        let value = |i: usize, p: usize| match i {
            30 | 35 => p as f32,
            _ if p.is_multiple_of(2) => i as f32,
            _ => -(i as f32) - 1.0,
        };
        let sample = PairSample {
            pairs: (0..64)
                .map(|p| {
                    let a: Vec<f32> = (0..40).map(|i| value(i, p)).collect();
                    let b: Vec<f32> = (0..40).map(|i| value(i, p + 1)).collect();
                    (record(&a), record(&b))
                })
                .collect(),
            ticks: vec![1; 64],
            seen: 64,
            cap: 64,
        };
        let c = clocks(ty, &sample);
        assert_eq!(c.len(), MAX_CLOCKS);
        assert_eq!(&c[..2], &[30, 35]);
    }
}
