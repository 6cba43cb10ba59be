//! The text forms of a schema (JSON and TOML, behind the `serde` feature):
//! loading with [`Schema::from_json`] / [`Schema::from_toml`] and writing
//! with [`Schema::to_json`]; rebuilding a schema read from text with the
//! delta operators and default records stored beside it.

use super::{EntityType, Schema};
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
    /// [{"name", "type", "len"?, "delta"?, "quantize"?, "grid"?, "integrate"?, "unit"?}]}]}`
    /// (`quantize`: see [`quant`](crate::quant); `grid`: a step, see
    /// [`SchemaBuilder::grid`](super::SchemaBuilder::grid); `integrate`:
    /// `{"velocity", "time", "scale"}`, see
    /// [`SchemaBuilder::integrate`](super::SchemaBuilder::integrate);
    /// `unit`: `true`, see [`SchemaBuilder::unit`](super::SchemaBuilder::unit)). Needs
    /// the `serde` feature.
    pub fn from_json(text: &str) -> Result<Self, SchemaError> {
        let def: SchemaDef = serde_json::from_str(text).map_err(|e| SchemaError::Parse {
            message: e.to_string(),
        })?;
        Self::from_def(def)
    }

    /// Loads a schema from TOML text: an array of tables `[[entities]]`,
    /// each with `name` and
    /// `fields = [{ name, type, len?, delta?, quantize?, grid?, integrate?, unit? }]`.
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
                        .zip(&e.unit)
                        .map(|((((f, q), g), i), &u)| {
                            FieldDef::new(f, q.as_ref(), g, i.as_ref(), u)
                        })
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
                let unit: Vec<bool> = e.fields.iter().map(FieldDef::unit).collect();
                let (fields, quant) = e
                    .fields
                    .into_iter()
                    .map(FieldDef::into_parts)
                    .collect::<Result<(Vec<_>, Vec<_>), _>>()
                    .map_err(|(field, reason)| SchemaError::BadQuantize { field, reason })?;
                EntityType::new(e.name, fields, quant, grid, integrate, unit, None)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_sections(sections)
    }
}
