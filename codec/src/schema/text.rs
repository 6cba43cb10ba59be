//! The text forms of a schema (JSON and TOML, behind the `serde` feature):
//! loading with [`Schema::from_json`] / [`Schema::from_toml`] and writing
//! with [`Schema::to_json`]; rebuilding a schema read from text with the
//! delta operators and default records stored beside it.

#![forbid(unsafe_code)]

use super::{EntityType, Field, Schema};
use crate::error::SchemaError;
use crate::quant::text::FieldDef;

pub(super) fn one() -> usize {
    1
}

pub(super) fn is_one(v: &usize) -> bool {
    *v == 1
}

/// The serde form of an entity type.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EntityTypeDef {
    name: String,
    fields: Vec<FieldDef>,
}

/// The serde form of a schema (JSON or TOML).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaDef {
    entities: Vec<EntityTypeDef>,
}

impl Schema {
    /// Loads a schema from JSON text: `{"entities": [{"name", "fields":
    /// [{"name", "type", "len"?, "delta"?, "quantize"?, "grid"?, "integrate"?}]}]}`
    /// (`quantize`: see [`quant`](crate::quant); `grid`: a step, see
    /// [`SchemaBuilder::grid`](super::SchemaBuilder::grid); `integrate`:
    /// `{"velocity", "time", "scale"}`, see
    /// [`SchemaBuilder::integrate`](super::SchemaBuilder::integrate)). Needs
    /// the `serde` feature.
    pub fn from_json(text: &str) -> Result<Self, SchemaError> {
        let def: SchemaDef = serde_json::from_str(text).map_err(|e| SchemaError::Parse {
            message: e.to_string(),
        })?;
        Self::from_def(def)
    }

    /// Loads a schema from TOML text: an array of tables `[[entities]]`,
    /// each with `name` and
    /// `fields = [{ name, type, len?, delta?, quantize?, grid?, integrate? }]`.
    /// Needs the `serde` feature.
    pub fn from_toml(text: &str) -> Result<Self, SchemaError> {
        let def: SchemaDef = toml::from_str(text).map_err(|e| SchemaError::Parse {
            message: e.to_string(),
        })?;
        Self::from_def(def)
    }

    /// The schema as JSON text ([`Schema::from_json`] reads it back).
    /// Default records are not part of the text form. Needs the `serde`
    /// feature.
    pub fn to_json(&self) -> String {
        let def = SchemaDef {
            entities: self
                .sections
                .iter()
                .map(|e| EntityTypeDef {
                    name: e.name.clone(),
                    fields: e
                        .fields
                        .iter()
                        .zip(&e.quant)
                        .zip(e.grids())
                        .zip(&e.integrate)
                        .map(|(((f, q), g), i)| FieldDef::new(f, q.as_ref(), g, i.as_ref()))
                        .collect(),
                })
                .collect(),
        };
        // Serializing plain strings and integers cannot fail.
        serde_json::to_string(&def).unwrap_or_default()
    }

    fn from_def(def: SchemaDef) -> Result<Self, SchemaError> {
        let sections = def
            .entities
            .into_iter()
            .map(|e| {
                let grid: Vec<Option<f64>> = e.fields.iter().map(FieldDef::grid).collect();
                let integrate: Vec<_> = e.fields.iter().map(FieldDef::integrate).collect();
                let (fields, quant) = e
                    .fields
                    .into_iter()
                    .map(FieldDef::into_parts)
                    .collect::<Result<(Vec<_>, Vec<_>), _>>()
                    .map_err(|(field, reason)| SchemaError::BadQuantize { field, reason })?;
                EntityType::new(e.name, fields, quant, grid, integrate, None)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_sections(sections)
    }
}

/// Rebuilds `base` with per-field delta operators from `ops` (section,
/// field) and default records from `defaults` (section; `None` keeps the
/// base's). Names, types, lengths, quantisation, grids and integrations are
/// kept.
#[cfg(any(feature = "capture", feature = "dictset"))]
pub(crate) fn rebuild_schema(
    base: &Schema,
    ops: impl Fn(usize, usize) -> Option<super::DeltaOp>,
    defaults: impl Fn(usize) -> Option<Vec<u8>>,
) -> Result<Schema, crate::SchemaError> {
    let mut b = Schema::builder();
    for (s, ty) in base.sections().iter().enumerate() {
        b = b.entity(ty.name());
        for (i, (f, q)) in ty.fields().iter().zip(ty.quantization()).enumerate() {
            b = b.field_with(Field {
                delta: ops(s, i).or(f.delta),
                ..f.clone()
            });
            if let Some(q) = q {
                b = b.quantize(*q);
            }
            if let Some(Some(step)) = ty.grids().nth(i) {
                b = b.grid(step);
            }
            if let Some(Some(d)) = ty.integrations().get(i) {
                b = b.integrate(d.clone());
            }
        }
        let rec = defaults(s).unwrap_or_else(|| ty.default_record().to_vec());
        if rec.iter().any(|&x| x != 0) {
            b = b.default_record(&rec);
        }
    }
    b.build()
}
