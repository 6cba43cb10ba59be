//! The lossless transforms `train` applies itself: the searches of
//! `suggest` (a grid, FORMAT.md 4.5; an integration, 4.9) and a unit
//! vector test (4.10: float arrays whose squares sum to 1) run on the
//! training packets' (baseline, current) record pairs, and each candidate
//! is kept when the held-out packets come out smaller with it, so a capture
//! recorded with the plain schema gets them through the set's schema.
//!
//! Both transforms are lossless by construction (a value off the grid or
//! off the prediction is coded bit for bit), so the held-out bytes are the
//! only test. A candidate the schema refuses (an integration that closes a
//! cycle of integrations, 4.9) is reported, not applied.

#![forbid(unsafe_code)]

use tickpack::{Integrate, Schema};
use tickpack_sets::dictset::TransformChoice;

use crate::integrals::{read, search, PairSample};
use crate::measure::Job;
use crate::suggest::{layout, next};
use crate::TrainerError;

/// One transform of one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A lossless grid of this step.
    Grid(f64),
    /// An integration.
    Integrate(Integrate),
    /// A unit vector.
    Unit,
}

/// A float array is a unit vector candidate when at least this share of
/// the records sampled hold one (squares summing to 1 within
/// [`UNIT_TOLERANCE`]); the held-out bytes then decide.
const UNIT_SHARE: f64 = 0.9;
const UNIT_TOLERANCE: f64 = 1e-4;

/// Whether the `len` elements of type `ty` at `offset` of `record` are a
/// unit vector (within [`UNIT_TOLERANCE`]).
fn is_unit(record: &[u8], offset: usize, len: usize, ty: tickpack::Primitive) -> bool {
    let sum: f64 = (0..len)
        .map(|e| read(record, offset + e * ty.size(), ty))
        .map(|x| x * x)
        .sum();
    (sum - 1.0).abs() <= UNIT_TOLERANCE
}

/// A transform of field `field` of section `section`.
#[derive(Debug, Clone, PartialEq)]
pub struct Transform {
    /// The section (entity type) index.
    pub section: usize,
    /// The field index.
    pub field: usize,
    /// What it is.
    pub kind: Kind,
}

/// What the search found in the training packets.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// Candidates, grids first, in field order.
    pub candidates: Vec<Transform>,
}

/// Runs the grid and integration searches on the (baseline, current)
/// record pairs of `jobs` (packets with a baseline; keyframes are skipped).
/// Fields that are quantised or already declare the transform are left out.
pub fn find(schema: &Schema, jobs: &[Job<'_>]) -> Found {
    let (mut stats, at) = layout(schema);
    let mut pairs = PairSample::for_schema(schema);
    let mut rng = 0x7a4f_u64;
    // Per field of `at`: records holding a unit vector, records seen.
    let mut units = vec![(0u64, 0u64); at.len()];
    for job in jobs {
        let Some((bseq, base)) = job.baseline else {
            continue;
        };
        let gap = job.sequence.wrapping_sub(bseq);
        for (si, (sec, ty)) in job
            .snapshot
            .sections()
            .iter()
            .zip(schema.sections())
            .enumerate()
        {
            let Some(bsec) = base.sections().get(si) else {
                continue;
            };
            let fields: Vec<usize> = (0..at.len()).filter(|&k| at[k].0 == si).collect();
            for (id, rb) in sec.iter() {
                let ra = bsec.get(id);
                for &k in &fields {
                    let (_, fi, off) = at[k];
                    let f = &ty.fields()[fi];
                    let w = f.ty.size();
                    if f.ty.is_float() && f.len >= 2 {
                        units[k].0 += u64::from(is_unit(rb, off, f.len, f.ty));
                        units[k].1 += 1;
                    }
                    for e in 0..f.len {
                        stats[k].value(read(rb, off + e * w, f.ty));
                    }
                    if let Some(ra) = ra.filter(|ra| *ra != rb) {
                        for e in 0..f.len {
                            let o = off + e * w;
                            stats[k].change(read(ra, o, f.ty), read(rb, o, f.ty), &mut rng);
                        }
                    }
                }
                if let (Some(ra), Some(sample)) = (ra.filter(|ra| *ra != rb), pairs.get_mut(si)) {
                    sample.offer(ra, rb, gap, next(&mut rng));
                }
            }
        }
    }
    let mut out = Found::default();
    for (st, &(si, fi, _)) in stats.iter().zip(&at) {
        let ty = &schema.sections()[si];
        let quantised = ty.quantization().get(fi).is_some_and(Option::is_some);
        let declared = ty.grids().nth(fi).flatten().is_some();
        if quantised || declared {
            continue;
        }
        if let Some((step, ..)) = st.grid() {
            out.candidates.push(Transform {
                section: si,
                field: fi,
                kind: Kind::Grid(step),
            });
        }
    }
    for ((&(si, fi, _), &(hits, seen)), ty) in at
        .iter()
        .zip(&units)
        .zip(at.iter().map(|&(si, ..)| &schema.sections()[si]))
    {
        let quantised = ty.quantization().get(fi).is_some_and(Option::is_some);
        let declared = ty.units().get(fi) == Some(&true);
        if !quantised && !declared && seen > 0 && hits as f64 >= UNIT_SHARE * seen as f64 {
            out.candidates.push(Transform {
                section: si,
                field: fi,
                kind: Kind::Unit,
            });
        }
    }
    // Integrations, those that save most first: when two depend on each
    // other (a cycle), the schema refuses the later.
    let mut integrations = Vec::new();
    for (si, (ty, sample)) in schema.sections().iter().zip(&pairs).enumerate() {
        for s in search(ty, sample) {
            let Some(fi) = ty.fields().iter().position(|f| f.name == s.field) else {
                continue;
            };
            let saved = (s.bits.0 - s.bits.1) * ty.fields()[fi].len as f64 * sample.seen() as f64;
            integrations.push((
                saved,
                Transform {
                    section: si,
                    field: fi,
                    kind: Kind::Integrate(Integrate::new(&s.velocity, &s.time, s.scale)),
                },
            ));
        }
    }
    integrations.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.candidates
        .extend(integrations.into_iter().map(|(_, t)| t));
    out
}

/// `schema` with `transforms` declared on top of what it declares
/// (operators, quantisation, grids, integrations, unit fields, default
/// records kept).
pub fn apply(schema: &Schema, transforms: &[Transform]) -> Result<Schema, TrainerError> {
    let mut b = Schema::builder();
    for (s, ty) in schema.sections().iter().enumerate() {
        b = b.entity(ty.name());
        let grids: Vec<Option<f64>> = ty.grids().collect();
        for (i, (f, q)) in ty.fields().iter().zip(ty.quantization()).enumerate() {
            b = b.field_with(f.clone());
            if let Some(q) = q {
                b = b.quantize(*q);
            }
            let mine = || transforms.iter().filter(|t| t.section == s && t.field == i);
            let grid = grids.get(i).copied().flatten().or_else(|| {
                mine().find_map(|t| match t.kind {
                    Kind::Grid(step) => Some(step),
                    _ => None,
                })
            });
            if let Some(step) = grid {
                b = b.grid(step);
            }
            let integrate = ty.integrations().get(i).cloned().flatten().or_else(|| {
                mine().find_map(|t| match &t.kind {
                    Kind::Integrate(d) => Some(d.clone()),
                    _ => None,
                })
            });
            if let Some(d) = integrate {
                b = b.integrate(d);
            }
            if ty.units().get(i) == Some(&true) || mine().any(|t| t.kind == Kind::Unit) {
                b = b.unit();
            }
        }
        if ty.default_record().iter().any(|&x| x != 0) {
            b = b.default_record(ty.default_record());
        }
    }
    Ok(b.build()?)
}

/// What [`choose`] kept and refused.
#[derive(Debug, Clone, Default)]
pub struct Chosen {
    /// The transforms kept, in candidate order.
    pub kept: Vec<Transform>,
    /// Their manifest entries.
    pub choices: Vec<TransformChoice>,
    /// Candidates the schema refused with the ones kept before them, and
    /// why.
    pub refused: Vec<(Transform, String)>,
}

/// Keeps, one candidate at a time in order, each transform that makes
/// `cost` smaller: the held-out blocks' bytes of the schema with the
/// transforms kept so far, then (where those tie) the held-out model
/// bytes, when known. Blocks first: the model's estimate, from a table
/// trained on a sample, is too noisy to overrule them, but a transform
/// that changes only rows coded as masks and values (a unit field, while
/// the blocks go as byte planes) is seen by the model alone.
pub fn choose(
    schema: &Schema,
    candidates: &[Transform],
    mut cost: impl FnMut(&Schema) -> Result<(u64, Option<u64>), TrainerError>,
) -> Result<Chosen, TrainerError> {
    let mut kept: Vec<Transform> = Vec::new();
    let mut choices = Vec::new();
    let mut refused = Vec::new();
    let mut best = cost(schema)?;
    for t in candidates {
        let mut trial = kept.clone();
        trial.push(t.clone());
        // A candidate the schema refuses (an integration that closes a
        // cycle of integrations; a grid on an integer field cannot come from
        // the search, but a hand-made list might) is skipped.
        let with = match apply(schema, &trial) {
            Ok(with) => with,
            Err(e) => {
                refused.push((t.clone(), e.to_string()));
                continue;
            }
        };
        let c = cost(&with)?;
        let model_smaller = matches!((c.1, best.1), (Some(a), Some(b)) if a < b);
        if c.0 < best.0 || (c.0 == best.0 && model_smaller) {
            let ty = &schema.sections()[t.section];
            choices.push(TransformChoice {
                entity: ty.name().to_owned(),
                field: ty.fields()[t.field].name.clone(),
                grid: match t.kind {
                    Kind::Grid(step) => Some(step),
                    _ => None,
                },
                integrate: match &t.kind {
                    Kind::Integrate(d) => Some(d.clone()),
                    _ => None,
                },
                unit: t.kind == Kind::Unit,
                held_out_bytes: [best.0, c.0],
                held_out_model_bytes: best.1.zip(c.1).map(|(a, b)| [a, b]),
            });
            best = c;
            kept = trial;
        }
    }
    Ok(Chosen {
        kept,
        choices,
        refused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack::{DeltaOp, Primitive};

    fn schema() -> Schema {
        Schema::builder()
            .entity("e")
            .field_with(tickpack::Field {
                name: "vel".into(),
                ty: Primitive::F32,
                len: 2,
                delta: Some(DeltaOp::Xor),
            })
            .field("ms", Primitive::I32, 1)
            .field("pos", Primitive::F32, 2)
            .field("yaw", Primitive::F32, 1)
            .grid(0.5)
            .default_record(&[1; 24])
            .build()
            .unwrap()
    }

    #[test]
    fn applying_keeps_what_the_schema_declares() {
        let s = schema();
        let t = [
            Transform {
                section: 0,
                field: 2,
                kind: Kind::Integrate(Integrate::new("vel", "ms", 0.001)),
            },
            Transform {
                section: 0,
                field: 0,
                kind: Kind::Grid(0.25),
            },
        ];
        let out = apply(&s, &t).unwrap();
        let (a, b) = (&s.sections()[0], &out.sections()[0]);
        assert_eq!(a.fields(), b.fields());
        assert_eq!(a.default_record(), b.default_record());
        let grids: Vec<Option<f64>> = b.grids().collect();
        assert_eq!(grids, [Some(0.25), None, None, Some(0.5)]);
        assert_eq!(
            b.integrations()[2],
            Some(Integrate::new("vel", "ms", 0.001))
        );
        assert_eq!(apply(&s, &[]).unwrap(), s);
    }

    #[test]
    fn only_transforms_that_shrink_the_cost_are_kept() {
        let s = schema();
        let grid = |field, step| Transform {
            section: 0,
            field,
            kind: Kind::Grid(step),
        };
        // The cost: 100, less 10 for a grid on `vel`, more 5 for one on `pos`.
        let cost = |x: &Schema| {
            let g: Vec<Option<f64>> = x.sections()[0].grids().collect();
            Ok((
                100 - if g[0].is_some() { 10 } else { 0 } + if g[2].is_some() { 5 } else { 0 },
                None,
            ))
        };
        let Chosen { kept, choices, .. } =
            choose(&s, &[grid(2, 1.0), grid(0, 0.25)], cost).unwrap();
        assert_eq!(kept, [grid(0, 0.25)]);
        assert_eq!(choices.len(), 1);
        assert_eq!(
            (choices[0].field.as_str(), choices[0].held_out_bytes),
            ("vel", [100, 90])
        );
        assert_eq!(choices[0].describe(), "grid 0.25");
    }
}
