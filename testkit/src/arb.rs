//! Generators driven by fuzzer bytes ([`arbitrary::Unstructured`]): schemas
//! (every primitive and every delta operator, `predict` included), limits,
//! dictionaries, records with float specials, entity ids and snapshots that
//! evolve tick to tick. Running out of bytes is never an error: the
//! generators fall back to zeros and small sizes.

use std::collections::BTreeMap;

use arbitrary::{Result as AResult, Unstructured};
use tickpack::{Dictionary, Field, Limits, Schema, Section, Snapshot};

use crate::gen::section_from_map;
pub use crate::gen::{DELTA_OPS, PRIMITIVES};
use crate::rng::SplitMix64;

/// The rest of the input.
pub fn rest<'a>(u: &mut Unstructured<'a>) -> AResult<&'a [u8]> {
    let n = u.len();
    u.bytes(n)
}

/// Float grid steps a schema may declare: binary fractions, an angle step,
/// steps that are not binary fractions, and one below `f32` precision.
const GRIDS: [f64; 5] = [0.25, 360.0 / 65536.0, 0.1, 0.001, 1e-9];

/// Scales an integrated field may declare: milliseconds, ticks at 60 Hz,
/// one, and one that makes every prediction overflow.
const SCALES: [f64; 4] = [0.001, 1.0 / 60.0, 1.0, 1e300];

/// A valid schema: 1..=`sections` entity types of 1..=`fields` fields, each
/// any primitive, array length 1..=`max_len`, any delta operator, sometimes
/// a float grid, sometimes integrated over earlier fields or (in a type
/// without integrations) a unit field, and sometimes a default record.
pub fn arb_schema(
    u: &mut Unstructured<'_>,
    sections: usize,
    fields: usize,
    max_len: usize,
) -> AResult<Schema> {
    let mut b = Schema::builder();
    for s in 0..u.int_in_range(1..=sections)? {
        b = b.entity(&format!("e{s}"));
        let mut size = 0;
        let mut lens = Vec::new();
        // A type has unit fields or integrated ones, never both.
        let units = u.ratio(1, 4)?;
        for f in 0..u.int_in_range(1..=fields)? {
            let ty = *u.choose(&PRIMITIVES)?;
            let len = u.int_in_range(1..=max_len)?;
            size += ty.size() * len;
            b = b.field_with(Field {
                name: format!("f{f}"),
                ty,
                len,
                delta: *u.choose(&DELTA_OPS)?,
            });
            if ty.is_float() && u.ratio(1, 3)? {
                b = b.grid(*u.choose(&GRIDS)?);
            }
            // Integrated over an earlier field of the same length (or at
            // the constant rate 1) and an earlier scalar (or the packet's
            // tick distance), any numeric types.
            // An earlier field may be integrated itself (a later level of
            // FORMAT.md 4.9; only earlier fields, so never a cycle).
            let velocity = match lens.iter().position(|&l| l == len) {
                Some(v) if u.ratio(2, 3)? => format!("f{v}"),
                _ => tickpack::Integrate::ONE.to_owned(),
            };
            let time = match lens.iter().position(|&l| l == 1) {
                Some(t) if u.ratio(1, 2)? => format!("f{t}"),
                _ => tickpack::Integrate::TICKS.to_owned(),
            };
            if units {
                if ty.is_float() && len >= 2 && u.ratio(1, 2)? {
                    b = b.unit();
                }
            } else if u.ratio(1, 3)? {
                b = b.integrate(tickpack::Integrate::new(
                    &velocity,
                    &time,
                    *u.choose(&SCALES)?,
                ));
            }
            lens.push(len);
        }
        if u.ratio(1, 4)? {
            let mut rec = Vec::with_capacity(size);
            arb_record(u, size, &[], &mut rec)?;
            b = b.default_record(&rec);
        }
    }
    match b.build() {
        Ok(s) => Ok(s),
        Err(e) => panic!("valid schema rejected: {e:?}"),
    }
}

/// Small limits, so both limit checks are reached.
pub fn arb_tight_limits(u: &mut Unstructured<'_>) -> AResult<Limits> {
    Ok(Limits {
        max_entities_per_section: u.int_in_range(0..=24)?,
        max_decoded_bytes: u.int_in_range(0..=3000)?,
        max_snapshot_bytes: u.int_in_range(0..=4000)?,
    })
}

/// A raw-content dictionary: fuzzer bytes, or record bytes of `base` so the
/// encoder finds matches in it. Never starts with zstd's dictionary magic.
pub fn arb_dictionary(
    u: &mut Unstructured<'_>,
    id: u32,
    base: Option<&Snapshot>,
) -> AResult<Dictionary> {
    let mut bytes = match base {
        Some(b) if u.ratio(1, 2)? => {
            let mut v: Vec<u8> = b
                .sections()
                .iter()
                .flat_map(|s| s.records().iter().copied())
                .collect();
            v.truncate(u.int_in_range(0..=4096)?);
            v
        }
        _ => {
            let n = u.int_in_range(0..=256)?;
            u.bytes(n.min(u.len()))?.to_vec()
        }
    };
    if bytes.len() < 16 && u.ratio(1, 2)? {
        bytes.resize(16, 0x5a);
    }
    if bytes.starts_with(&[0x37, 0xa4, 0x30, 0xec]) {
        bytes[0] = 0;
    }
    Ok(Dictionary::new(id, bytes))
}

/// One record of `rs` bytes appended to `out`: random bytes (NaN payloads and
/// all), a tweak of `prev`, a constant, or repeated float specials.
pub fn arb_record(
    u: &mut Unstructured<'_>,
    rs: usize,
    prev: &[u8],
    out: &mut Vec<u8>,
) -> AResult<()> {
    const SPECIALS: [u64; 6] = [
        0x7ff0_0000_0000_0001, // f64 signalling NaN with payload
        0xfff8_0000_dead_beef, // f64 negative quiet NaN with payload
        0x8000_0000_8000_0000, // -0.0 as f32 pairs
        0x7f80_0001_ffc0_1234, // f32 sNaN, f32 negative qNaN with payload
        0x7f80_0000_ff80_0000, // f32 inf, -inf
        0x0000_0001_0000_0001, // subnormals
    ];
    let start = out.len();
    match u.int_in_range(0u8..=5)? {
        0 | 1 => {
            for _ in 0..rs {
                out.push(u.arbitrary()?);
            }
        }
        2 if prev.len() == rs && rs > 0 => {
            out.extend_from_slice(prev);
            for _ in 0..u.int_in_range(0u8..=3)? {
                let at = start + u.int_in_range(0..=rs - 1)?;
                out[at] = out[at].wrapping_add(u.arbitrary()?);
            }
        }
        3 => {
            let b = *u.choose(&[0x00, 0xff, 0x7f, 0x80, 0x01])?;
            out.resize(start + rs, b);
        }
        4 => {
            let pat = u.choose(&SPECIALS)?.to_le_bytes();
            out.extend(pat.iter().copied().cycle().take(rs));
        }
        _ => out.resize(start + rs, 0),
    }
    Ok(())
}

/// Ascending entity ids: small, near `u32::MAX`, or anywhere, with gaps
/// mostly small.
pub fn arb_ids(u: &mut Unstructured<'_>, max: usize) -> AResult<Vec<u32>> {
    let n = u.int_in_range(0..=max)?;
    let mut id: u64 = match u.int_in_range(0u8..=3)? {
        0 | 1 => u.int_in_range(0..=8)?,
        2 => u64::from(u32::MAX) - u.int_in_range(0..=40)?,
        _ => u64::from(u.arbitrary::<u32>()?),
    };
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let Ok(v) = u32::try_from(id) else { break };
        ids.push(v);
        id += match u.int_in_range(0u8..=7)? {
            0..=5 => u.int_in_range(1..=3)?,
            6 => u.int_in_range(1..=1000)?,
            _ => 1 + u64::from(u.arbitrary::<u32>()?),
        };
    }
    Ok(ids)
}

/// A snapshot: per section either a few fuzzer-chosen entities or (if
/// `bulk`) sometimes many generated ones, enough to span several blocks.
pub fn arb_snapshot(u: &mut Unstructured<'_>, schema: &Schema, bulk: bool) -> AResult<Snapshot> {
    let mut sections = Vec::new();
    for ty in schema.sections() {
        let rs = ty.record_size();
        if bulk && u.ratio(1, 8)? {
            let n = u.int_in_range(1..=1200)?;
            let mut rng = SplitMix64::new(u.arbitrary()?);
            let mut map = BTreeMap::new();
            let mut id = rng.below(16) as u32;
            let mut prev = vec![0u8; rs];
            let noise = u.int_in_range(0u8..=3)?;
            for _ in 0..n {
                let rec = rng.record(&prev, noise);
                map.insert(id, rec.clone());
                prev = rec;
                id = id.saturating_add(1 + rng.below(3) as u32);
            }
            sections.push(section_from_map(map, rs));
        } else {
            let ids = arb_ids(u, 12)?;
            let mut records = Vec::with_capacity(ids.len() * rs);
            for i in 0..ids.len() {
                let prev = if i > 0 {
                    records[(i - 1) * rs..].to_vec()
                } else {
                    Vec::new()
                };
                arb_record(u, rs, &prev, &mut records)?;
            }
            match Section::from_parts(ids, records, rs) {
                Ok(s) => sections.push(s),
                Err(e) => panic!("generated section rejected: {e:?}"),
            }
        }
    }
    match Snapshot::from_sections(schema, sections) {
        Ok(s) => Ok(s),
        Err(e) => panic!("generated snapshot rejected: {e:?}"),
    }
}

/// The next tick after `base`: entities despawn, stay, change and spawn.
pub fn evolve_snapshot(
    u: &mut Unstructured<'_>,
    schema: &Schema,
    base: &Snapshot,
    bulk: bool,
) -> AResult<Snapshot> {
    let mut sections = Vec::new();
    for (ty, b) in schema.sections().iter().zip(base.sections()) {
        let rs = ty.record_size();
        let mut map: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        if b.len() > 32 || (bulk && u.ratio(1, 8)?) {
            // Generated evolution, for large sections.
            let mut rng = SplitMix64::new(u.arbitrary()?);
            let despawn = u.int_in_range(0..=64u64)?;
            let change = u.int_in_range(0..=256u64)?;
            let noise = u.int_in_range(0u8..=3)?;
            for (id, rec) in b.iter() {
                let r = rng.below(256);
                if r < despawn {
                    continue;
                }
                let rec = if rng.below(256) < change {
                    rng.record(rec, noise)
                } else {
                    rec.to_vec()
                };
                map.insert(id, rec);
            }
            let spawn = u.int_in_range(0..=b.len().min(400) + 8)?;
            let top = b.ids().last().map_or(64, |&t| u64::from(t) + 64);
            let mut prev = vec![0u8; rs];
            for _ in 0..spawn {
                let id = rng.below(top.min(u64::from(u32::MAX)) + 1) as u32;
                let rec = rng.record(&prev, noise);
                prev.clone_from(&rec);
                map.insert(id, rec);
            }
        } else {
            let mut rec = Vec::with_capacity(rs);
            for (id, old) in b.iter() {
                match u.int_in_range(0u8..=4)? {
                    0 => {}
                    1 | 2 => {
                        map.insert(id, old.to_vec());
                    }
                    _ => {
                        rec.clear();
                        arb_record(u, rs, old, &mut rec)?;
                        map.insert(id, rec.clone());
                    }
                }
            }
            let mut prev = Vec::new();
            for id in arb_ids(u, 6)? {
                rec.clear();
                arb_record(u, rs, &prev, &mut rec)?;
                prev.clone_from(&rec);
                map.insert(id, rec.clone());
            }
        }
        sections.push(section_from_map(map, rs));
    }
    match Snapshot::from_sections(schema, sections) {
        Ok(s) => Ok(s),
        Err(e) => panic!("evolved snapshot rejected: {e:?}"),
    }
}
