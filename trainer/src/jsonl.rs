//! Parsing one tick line of a JSON-lines import straight into records.
//!
//! The line is never built as a generic JSON tree: entities are read one at
//! a time into the section's record buffer, so a line costs its records and
//! no more, and a section is refused as soon as it holds one entity more
//! than the capture limit. Duplicate keys (in the line, in `sections`, in an
//! entity) are errors, not "last one wins".

#![forbid(unsafe_code)]

use core::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use tickpack::{EntityType, Primitive, Schema, Section, Snapshot};

/// One parsed tick line.
#[derive(Debug, Clone, PartialEq)]
pub struct TickLine {
    /// The tick number.
    pub tick: u64,
    /// Absent: no send recorded; `Some(None)`: sent whole; `Some(Some(b))`:
    /// sent against tick `b`.
    pub baseline: Option<Option<u64>>,
    /// The world at that tick.
    pub snapshot: Snapshot,
}

/// Parses one tick line against `schema`; a section with more than
/// `max_entities` entities is refused while it is being read.
pub fn parse_tick(line: &[u8], schema: &Schema, max_entities: usize) -> Result<TickLine, String> {
    let mut d = serde_json::Deserializer::from_slice(line);
    let parsed = TickSeed {
        schema,
        max_entities,
    }
    .deserialize(&mut d)
    .and_then(|t| d.end().map(|()| t));
    parsed.map_err(|e| explain(line, &e))
}

/// The error text for a parse of one line: the column (serde_json's "line 1"
/// would be misleading), and a hint when the line holds a non-JSON float
/// literal.
pub fn explain(line: &[u8], e: &serde_json::Error) -> String {
    let mut m = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    if let Some(stripped) = m.strip_suffix(&at) {
        m = format!("{stripped} (column {})", e.column());
    }
    if e.is_syntax() {
        let col = e.column().saturating_sub(1);
        let near = &line[col.saturating_sub(1).min(line.len())..(col + 10).min(line.len())];
        let near = String::from_utf8_lossy(near).to_ascii_lowercase();
        if near.contains("nan") || near.contains("inf") {
            m += ": JSON has no NaN or Infinity literal; write such a float as \
                  {\"bits\": N}, N its IEEE-754 bit pattern";
        }
    }
    m
}

struct TickSeed<'a> {
    schema: &'a Schema,
    max_entities: usize,
}

impl<'de> DeserializeSeed<'de> for TickSeed<'_> {
    type Value = TickLine;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TickLine, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TickSeed<'_> {
    type Value = TickLine;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tick line: {\"tick\": N, \"sections\": {...}}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TickLine, A::Error> {
        let mut tick = None;
        let mut baseline = None;
        let mut snapshot = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "tick" if tick.is_none() => tick = Some(map.next_value::<u64>()?),
                "baseline" if baseline.is_none() => {
                    baseline = Some(map.next_value::<Option<u64>>()?);
                }
                "sections" if snapshot.is_none() => {
                    snapshot = Some(map.next_value_seed(SectionsSeed {
                        schema: self.schema,
                        max_entities: self.max_entities,
                    })?);
                }
                "tick" | "baseline" | "sections" => {
                    return Err(de::Error::custom(format!("key `{key}` appears twice")))
                }
                other => {
                    return Err(de::Error::unknown_field(
                        other,
                        &["tick", "baseline", "sections"],
                    ))
                }
            }
        }
        Ok(TickLine {
            tick: tick.ok_or_else(|| de::Error::missing_field("tick"))?,
            baseline,
            snapshot: snapshot.unwrap_or_else(|| Snapshot::new(self.schema)),
        })
    }
}

struct SectionsSeed<'a> {
    schema: &'a Schema,
    max_entities: usize,
}

impl<'de> DeserializeSeed<'de> for SectionsSeed<'_> {
    type Value = Snapshot;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Snapshot, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SectionsSeed<'_> {
    type Value = Snapshot;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of entity type name to a list of entities")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Snapshot, A::Error> {
        let types = self.schema.sections();
        let mut seen = vec![false; types.len()];
        let mut snap = Snapshot::new(self.schema);
        while let Some(name) = map.next_key::<String>()? {
            let Some(s) = types.iter().position(|t| t.name() == name) else {
                return Err(de::Error::custom(format!("unknown entity type `{name}`")));
            };
            if seen[s] {
                return Err(de::Error::custom(format!("section `{name}` appears twice")));
            }
            seen[s] = true;
            let section = map.next_value_seed(EntitiesSeed {
                ty: &types[s],
                max_entities: self.max_entities,
            })?;
            let slot = snap
                .section_mut(s)
                .ok_or_else(|| de::Error::custom("section index out of range"))?;
            *slot = section;
        }
        Ok(snap)
    }
}

struct EntitiesSeed<'a> {
    ty: &'a EntityType,
    max_entities: usize,
}

impl<'de> DeserializeSeed<'de> for EntitiesSeed<'_> {
    type Value = Section;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Section, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EntitiesSeed<'_> {
    type Value = Section;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of `{}` entities", self.ty.name())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Section, A::Error> {
        let name = self.ty.name();
        let rs = self.ty.record_size();
        let mut ids: Vec<u32> = Vec::new();
        let mut records: Vec<u8> = Vec::new();
        while let Some(id) = seq.next_element_seed(EntitySeed {
            ty: self.ty,
            records: &mut records,
        })? {
            ids.push(id);
            if ids.len() > self.max_entities {
                return Err(de::Error::custom(format!(
                    "`{name}` has more than {} entities (the capture limit)",
                    self.max_entities
                )));
            }
        }
        // Ids ascending, records following them.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i]);
        if let Some(w) = order.windows(2).find(|w| ids[w[0]] == ids[w[1]]) {
            return Err(de::Error::custom(format!(
                "entity {} appears twice in `{name}`",
                ids[w[0]]
            )));
        }
        let sorted_ids: Vec<u32> = order.iter().map(|&i| ids[i]).collect();
        let mut sorted = Vec::with_capacity(records.len());
        for &i in &order {
            sorted.extend_from_slice(&records[i * rs..(i + 1) * rs]);
        }
        Section::from_parts(sorted_ids, sorted, rs).map_err(de::Error::custom)
    }
}

/// One entity, appended to `records`; yields its id.
struct EntitySeed<'a> {
    ty: &'a EntityType,
    records: &'a mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for EntitySeed<'_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntitySeed<'_> {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a `{}` entity: an object with `id` and every field",
            self.ty.name()
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u32, A::Error> {
        let name = self.ty.name();
        let fields = self.ty.fields();
        let mut id: Option<u32> = None;
        let mut values: Vec<Option<Value>> = vec![None; fields.len()];
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                if id.is_some() {
                    return Err(de::Error::custom(format!("`{name}` entity has `id` twice")));
                }
                let v: Value = map.next_value_seed(&mut Bounded {
                    budget: 1,
                    what: "`id`",
                })?;
                id = Some(
                    v.as_u64()
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(|| {
                            de::Error::custom(format!("`{name}` entity without a u32 `id`"))
                        })?,
                );
                continue;
            }
            let Some(f) = fields.iter().position(|f| f.name == key) else {
                return Err(de::Error::custom(format!("`{name}` has no field `{key}`")));
            };
            if values[f].is_some() {
                return Err(de::Error::custom(format!(
                    "`{name}` entity has field `{key}` twice"
                )));
            }
            // An element may be `{"bits": N}` (two values), in an array.
            let what = format!("field `{key}`");
            let len = fields.get(f).map_or(1, |f| f.len);
            values[f] = Some(map.next_value_seed(&mut Bounded {
                budget: len.saturating_mul(3).saturating_add(1),
                what: &what,
            })?);
        }
        let id =
            id.ok_or_else(|| de::Error::custom(format!("`{name}` entity without a u32 `id`")))?;
        let start = self.records.len();
        self.records.resize(start + self.ty.record_size(), 0);
        let record = &mut self.records[start..];
        for ((f, &off), v) in fields.iter().zip(self.ty.offsets()).zip(&values) {
            let v = v.as_ref().ok_or_else(|| {
                de::Error::custom(format!("`{name}` entity {id} lacks field `{}`", f.name))
            })?;
            let items: Vec<&Value> = match (f.len, v) {
                (1, Value::Array(_)) => {
                    return Err(de::Error::custom(format!("field `{}` is a scalar", f.name)))
                }
                (1, v) => vec![v],
                (len, Value::Array(a)) if a.len() == len => a.iter().collect(),
                (len, _) => {
                    return Err(de::Error::custom(format!(
                        "field `{}` needs an array of {len} values",
                        f.name
                    )))
                }
            };
            let size = f.ty.size();
            for (i, item) in items.into_iter().enumerate() {
                let at = off + i * size;
                put_value(f.ty, item, &mut record[at..at + size]).map_err(|m| {
                    de::Error::custom(format!("entity {id}, field `{}`: {m}", f.name))
                })?;
            }
        }
        Ok(id)
    }
}

/// A JSON value of at most `budget` values (an array or object counts as
/// one, and so does each element and member): a field's value is built as
/// a tree only as large as the field could need, so a line of one huge
/// array costs its bytes, not a tree of 32 bytes a value.
struct Bounded<'a> {
    budget: usize,
    /// What the value is, for the error: "field `x`".
    what: &'a str,
}

impl Bounded<'_> {
    fn take<E: de::Error>(&mut self) -> Result<(), E> {
        match self.budget.checked_sub(1) {
            Some(b) => {
                self.budget = b;
                Ok(())
            }
            None => Err(E::custom(format!(
                "{} holds more JSON values than it can use",
                self.what
            ))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for &mut Bounded<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.take()?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(&mut *self)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut members = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(&mut *self)?;
            members.insert(k, v);
        }
        Ok(Value::Object(members))
    }
}

/// Writes one element of type `ty` from a JSON value: integers in range
/// for integer types; finite numbers in range, or `{"bits": N}`, for floats.
pub fn put_value(ty: Primitive, v: &Value, out: &mut [u8]) -> Result<(), String> {
    let int = || -> Result<i128, String> {
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
            .ok_or_else(|| format!("expected an integer, got {v}"))
    };
    let range = |x: i128, lo: i128, hi: i128| -> Result<i128, String> {
        if (lo..=hi).contains(&x) {
            Ok(x)
        } else {
            Err(format!("{x} is out of range for {ty:?}"))
        }
    };
    let bits = || -> Option<u64> {
        let o = v.as_object()?;
        if o.len() != 1 {
            return None;
        }
        o.get("bits")?.as_u64()
    };
    match ty {
        Primitive::U8 => out.copy_from_slice(&[range(int()?, 0, 255)? as u8]),
        Primitive::I8 => out.copy_from_slice(&(range(int()?, -128, 127)? as i8).to_le_bytes()),
        Primitive::U16 => {
            out.copy_from_slice(&(range(int()?, 0, u16::MAX.into())? as u16).to_le_bytes())
        }
        Primitive::I16 => out.copy_from_slice(
            &(range(int()?, i16::MIN.into(), i16::MAX.into())? as i16).to_le_bytes(),
        ),
        Primitive::U32 => {
            out.copy_from_slice(&(range(int()?, 0, u32::MAX.into())? as u32).to_le_bytes())
        }
        Primitive::I32 => out.copy_from_slice(
            &(range(int()?, i32::MIN.into(), i32::MAX.into())? as i32).to_le_bytes(),
        ),
        Primitive::U64 => {
            out.copy_from_slice(&(range(int()?, 0, u64::MAX.into())? as u64).to_le_bytes())
        }
        Primitive::I64 => out.copy_from_slice(
            &(range(int()?, i64::MIN.into(), i64::MAX.into())? as i64).to_le_bytes(),
        ),
        Primitive::F32 => {
            let x = match (v.as_f64(), bits()) {
                (Some(x), _) => {
                    let y = x as f32;
                    if !y.is_finite() {
                        return Err(format!(
                            "{x} overflows f32 (largest {:e}); give an infinity as {{\"bits\": N}}",
                            f32::MAX
                        ));
                    }
                    y
                }
                (None, Some(b)) => f32::from_bits(
                    u32::try_from(b).map_err(|_| format!("bits {b} do not fit an f32"))?,
                ),
                _ => return Err(format!("expected a number or {{\"bits\": N}}, got {v}")),
            };
            out.copy_from_slice(&x.to_le_bytes());
        }
        Primitive::F64 => {
            let x = match (v.as_f64(), bits()) {
                (Some(x), _) => x,
                (None, Some(b)) => f64::from_bits(b),
                _ => return Err(format!("expected a number or {{\"bits\": N}}, got {v}")),
            };
            out.copy_from_slice(&x.to_le_bytes());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_range_checked_and_floats_take_bits() {
        let mut b = [0u8; 4];
        put_value(
            Primitive::F32,
            &serde_json::json!({"bits": 0x7fc0_0001u32}),
            &mut b,
        )
        .unwrap();
        assert_eq!(u32::from_le_bytes(b), 0x7fc0_0001);
        put_value(Primitive::F32, &serde_json::json!(-2.5), &mut b).unwrap();
        assert_eq!(f32::from_le_bytes(b), -2.5);
        put_value(Primitive::I32, &serde_json::json!(-7), &mut b).unwrap();
        assert_eq!(i32::from_le_bytes(b), -7);
        assert!(put_value(Primitive::I32, &serde_json::json!(1.5), &mut b).is_err());
        assert!(put_value(Primitive::U32, &serde_json::json!(-1), &mut b).is_err());
        let mut one = [0u8; 1];
        assert!(put_value(Primitive::U8, &serde_json::json!(256), &mut one).is_err());
        assert!(put_value(
            Primitive::F32,
            &serde_json::json!({"bits": 1u64 << 33}),
            &mut b
        )
        .is_err());
        let e = put_value(Primitive::F32, &serde_json::json!(1e39), &mut b).unwrap_err();
        assert!(e.contains("overflows f32"), "{e}");
        put_value(
            Primitive::F32,
            &serde_json::json!(f64::from(f32::MAX)),
            &mut b,
        )
        .unwrap();
        assert_eq!(f32::from_le_bytes(b), f32::MAX);
    }
}
