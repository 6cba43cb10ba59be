//! Seeded generators for property tests: the primitive and delta-operator
//! lists every generator draws from (`predict` included), a proptest
//! strategy for schemas (feature `proptest`, default on), and random snapshots that evolve tick to tick.
//! The fuzzer-driven twins are in [`arb`](crate::arb).

use std::collections::BTreeMap;

#[cfg(feature = "proptest")]
use proptest::prelude::*;
use tickpack::{DeltaOp, Field, Primitive, Schema, Section, Snapshot};

use crate::rng::SplitMix64;

/// Every primitive type.
pub const PRIMITIVES: [Primitive; 10] = [
    Primitive::U8,
    Primitive::I8,
    Primitive::U16,
    Primitive::I16,
    Primitive::U32,
    Primitive::I32,
    Primitive::U64,
    Primitive::I64,
    Primitive::F32,
    Primitive::F64,
];

/// Every delta operator, and `None` for the type's default.
pub const DELTA_OPS: [Option<DeltaOp>; 6] = [
    None,
    Some(DeltaOp::Sub),
    Some(DeltaOp::Xor),
    Some(DeltaOp::Int),
    Some(DeltaOp::None),
    Some(DeltaOp::Predict),
];

/// A schema from per-type field choices: `(primitive index, array length,
/// operator index)` into [`PRIMITIVES`] and [`DELTA_OPS`] (taken modulo
/// their lengths). Types are named `type0..`, fields `f0..`.
///
/// # Panics
/// If the choices make an invalid schema (no types, a type with no fields,
/// a length of 0 or too large a record): a generator bug.
pub fn schema_of(types: &[Vec<(usize, usize, usize)>]) -> Schema {
    let mut b = Schema::builder();
    for (t, fields) in types.iter().enumerate() {
        b = b.entity(&format!("type{t}"));
        for (f, &(p, len, op)) in fields.iter().enumerate() {
            b = b.field_with(Field {
                name: format!("f{f}"),
                ty: PRIMITIVES[p % PRIMITIVES.len()],
                len,
                delta: DELTA_OPS[op % DELTA_OPS.len()],
            });
        }
    }
    match b.build() {
        Ok(s) => s,
        Err(e) => panic!("generated schema rejected: {e:?}"),
    }
}

#[cfg(feature = "proptest")]
/// Schemas of 1..4 entity types with 1..6 fields each, any primitive, array
/// length 1..4, any operator (see [`schema_of`]).
pub fn schema_strategy() -> impl Strategy<Value = Schema> {
    schema_strategy_with(DELTA_OPS.len())
}

#[cfg(feature = "proptest")]
/// As [`schema_strategy`], with operators drawn from the first `ops` of
/// [`DELTA_OPS`] only (5 leaves out `predict`, for paths that take no prior).
pub fn schema_strategy_with(ops: usize) -> impl Strategy<Value = Schema> {
    proptest::collection::vec(
        proptest::collection::vec((0..PRIMITIVES.len(), 1usize..4, 0..ops.max(1)), 1..6),
        1..4,
    )
    .prop_map(|types| schema_of(&types))
}

/// A random snapshot: up to `max` entities per section with ids below
/// `id_range`, random records.
pub fn random_snapshot(
    schema: &Schema,
    rng: &mut SplitMix64,
    max: usize,
    id_range: u32,
) -> Snapshot {
    let mut sections = Vec::new();
    for ty in schema.sections() {
        let mut map = BTreeMap::new();
        for _ in 0..rng.below(max as u64 + 1) {
            let id = rng.below(u64::from(id_range)) as u32;
            map.insert(id, rng.bytes(ty.record_size()));
        }
        sections.push(section_from_map(map, ty.record_size()));
    }
    snapshot_of(schema, sections)
}

/// The next tick after `prev`: some entities despawn, some spawn, some
/// change a little (one byte or one small integer step), one in ten is
/// rewritten, most stay the same.
pub fn evolve(schema: &Schema, prev: &Snapshot, rng: &mut SplitMix64, id_range: u32) -> Snapshot {
    let mut sections = Vec::new();
    for (ty, sec) in schema.sections().iter().zip(prev.sections()) {
        let rs = ty.record_size();
        let mut map = BTreeMap::new();
        for (id, rec) in sec.iter() {
            match rng.below(10) {
                0 => {}
                1..=3 => {
                    let mut rec = rec.to_vec();
                    let at = rng.below(rec.len() as u64) as usize;
                    if let Some(b) = rec.get_mut(at) {
                        *b = b.wrapping_add(rng.below(5) as u8);
                    }
                    map.insert(id, rec);
                }
                4 => {
                    map.insert(id, rng.bytes(rs));
                }
                _ => {
                    map.insert(id, rec.to_vec());
                }
            }
        }
        for _ in 0..rng.below(4) {
            let id = rng.below(u64::from(id_range)) as u32;
            map.insert(id, rng.bytes(rs));
        }
        sections.push(section_from_map(map, rs));
    }
    snapshot_of(schema, sections)
}

/// A section from ids and records of `rs` bytes each.
///
/// # Panics
/// If a record is not `rs` bytes long: a generator bug.
pub fn section_from_map(map: BTreeMap<u32, Vec<u8>>, rs: usize) -> Section {
    let ids: Vec<u32> = map.keys().copied().collect();
    let records: Vec<u8> = map.into_values().flatten().collect();
    match Section::from_parts(ids, records, rs) {
        Ok(s) => s,
        Err(e) => panic!("generated section rejected: {e:?}"),
    }
}

fn snapshot_of(schema: &Schema, sections: Vec<Section>) -> Snapshot {
    match Snapshot::from_sections(schema, sections) {
        Ok(s) => s,
        Err(e) => panic!("generated snapshot rejected: {e:?}"),
    }
}
