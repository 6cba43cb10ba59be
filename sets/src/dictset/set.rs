//! A loaded dictionary set: assembling one, its accessors, and the encoder
//! and decoder made from it.

use std::fmt;

use super::id::*;
use super::*;
use tickpack::model::ModelTable;
use tickpack::Decoder;
use tickpack::Dictionary;
use tickpack::Encoder;
use tickpack::KeyframeDictionary;
use tickpack::Schema;

/// How two schemas lay records out differently (see [`same_layout`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutMismatch {
    /// A different number of entity types.
    EntityTypes {
        /// In the first schema.
        a: usize,
        /// In the second.
        b: usize,
    },
    /// Entity type `index` differs in name or field count.
    EntityType {
        /// Its index in both schemas.
        index: usize,
        /// Its name in the first schema.
        a: String,
        /// Its name in the second.
        b: String,
    },
    /// A field differs in name, type or length.
    Field {
        /// The entity type's name (first schema).
        entity: String,
        /// The field as the first schema declares it (`name: type x len`).
        a: String,
        /// The field as the second declares it.
        b: String,
    },
    /// An entity type's default record differs.
    DefaultRecord {
        /// The entity type's name.
        entity: String,
    },
}

impl fmt::Display for LayoutMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EntityTypes { a, b } => write!(f, "{a} entity types against {b}"),
            Self::EntityType { a, b, .. } => write!(f, "entity type `{a}` against `{b}`"),
            Self::Field { entity, a, b } => write!(f, "field `{entity}.{a}` against `{b}`"),
            Self::DefaultRecord { entity } => write!(f, "default record of `{entity}`"),
        }
    }
}

impl std::error::Error for LayoutMismatch {}

/// Whether `a` and `b` lay records out the same way (entity types, field
/// names, types, lengths and default records), whatever their operators.
pub fn same_layout(a: &Schema, b: &Schema) -> Result<(), LayoutMismatch> {
    if a.sections().len() != b.sections().len() {
        return Err(LayoutMismatch::EntityTypes {
            a: a.sections().len(),
            b: b.sections().len(),
        });
    }
    for (index, (x, y)) in a.sections().iter().zip(b.sections()).enumerate() {
        if x.name() != y.name() || x.fields().len() != y.fields().len() {
            return Err(LayoutMismatch::EntityType {
                index,
                a: x.name().to_string(),
                b: y.name().to_string(),
            });
        }
        for (f, g) in x.fields().iter().zip(y.fields()) {
            if f.name != g.name || f.ty != g.ty || f.len != g.len {
                return Err(LayoutMismatch::Field {
                    entity: x.name().to_string(),
                    a: format!("{} ({:?} x{})", f.name, f.ty, f.len),
                    b: format!("{} ({:?} x{})", g.name, g.ty, g.len),
                });
            }
        }
        if x.default_record() != y.default_record() {
            return Err(LayoutMismatch::DefaultRecord {
                entity: x.name().to_string(),
            });
        }
    }
    Ok(())
}

/// A loaded, verified dictionary set for one game version.
#[derive(Debug, Clone)]
pub struct DictionarySet {
    pub(super) manifest: Manifest,
    pub(super) schema: Schema,
    pub(super) dictionaries: Vec<(DictKind, Dictionary)>,
}

impl DictionarySet {
    /// Assembles a new set (what the trainer does): computes the dictionary
    /// ids, hashes and the set id, and fills the manifest's `format`, ids,
    /// schema and dictionary entries. `manifest` supplies the rest (game,
    /// version, fields, training, measured); its `fields` are rebuilt from
    /// `schema` when empty. Dictionary files are named `<kind>.dict`.
    pub fn assemble(
        mut manifest: Manifest,
        schema: Schema,
        base_schema_id: u32,
        dictionaries: Vec<(DictKind, Vec<u8>, u64)>,
    ) -> Result<Self, DictSetError> {
        check_name(&manifest.game)?;
        check_name(&manifest.version)?;
        manifest.format = MANIFEST_FORMAT;
        manifest.schema_id = schema.id();
        manifest.base_schema_id = base_schema_id;
        manifest.schema =
            serde_json::from_str(&schema.to_json()).map_err(|e| DictSetError::Manifest {
                message: e.to_string(),
            })?;
        manifest.default_records = if schema
            .sections()
            .iter()
            .all(|t| t.default_record().iter().all(|&b| b == 0))
        {
            Vec::new()
        } else {
            schema
                .sections()
                .iter()
                .map(|t| {
                    let r = t.default_record();
                    r.iter().any(|&b| b != 0).then(|| hex(r))
                })
                .collect()
        };
        let mut choices = Vec::new();
        for t in schema.sections() {
            for f in t.fields() {
                let old = manifest
                    .fields
                    .iter()
                    .find(|c| c.entity == t.name() && c.field == f.name);
                choices.push(FieldChoice {
                    entity: t.name().to_owned(),
                    field: f.name.clone(),
                    delta: f.delta_op(),
                    held_out_bytes: old.map(|c| c.held_out_bytes.clone()).unwrap_or_default(),
                });
            }
        }
        manifest.fields = choices;
        let mut dicts = Vec::new();
        manifest.dictionaries.clear();
        for (kind, bytes, max_size) in dictionaries {
            if dicts.iter().any(|(k, _)| *k == kind) {
                return Err(DictSetError::DuplicateKind { kind });
            }
            let id = dictionary_id(&manifest.game, &manifest.version, schema.id(), kind, &bytes);
            manifest.dictionaries.push(DictionaryEntry {
                kind,
                id,
                file: format!("{}.dict", kind.name()),
                size: bytes.len() as u64,
                sha256: sha256_hex(&bytes),
                max_size,
                model: None,
            });
            dicts.push((kind, Dictionary::new(id, bytes)));
        }
        let ids: Vec<(DictKind, u32)> = dicts.iter().map(|(k, d)| (*k, d.id())).collect();
        manifest.set_id = set_id(&manifest.game, &manifest.version, schema.id(), &ids);
        Ok(Self {
            manifest,
            schema,
            dictionaries: dicts,
        })
    }

    /// Attaches a trained context-model table to the dictionary of `kind`:
    /// its packets may then be one model block where that beats the blocks.
    /// The table is saved as `<kind>.model`, listed with its size and hash
    /// in the manifest, and goes into the dictionary and set ids.
    pub fn with_model(mut self, kind: DictKind, table: &ModelTable) -> Result<Self, DictSetError> {
        let missing = || DictSetError::Manifest {
            message: format!("no {} dictionary to attach a model table to", kind.name()),
        };
        let (game, version, schema_id) = (
            self.manifest.game.clone(),
            self.manifest.version.clone(),
            self.manifest.schema_id,
        );
        let slot = self
            .dictionaries
            .iter_mut()
            .find(|(k, _)| *k == kind)
            .ok_or_else(missing)?;
        let bytes = slot.1.bytes().to_vec();
        let model_bytes = table.to_bytes();
        let id = dictionary_id_with(&game, &version, schema_id, kind, &bytes, Some(&model_bytes));
        slot.1 = Dictionary::new(id, bytes).with_model(table.clone());
        let entry = self
            .manifest
            .dictionaries
            .iter_mut()
            .find(|e| e.kind == kind)
            .ok_or_else(missing)?;
        entry.model = Some(ModelFile {
            file: format!("{}.model", kind.name()),
            size: model_bytes.len() as u64,
            sha256: sha256_hex(&model_bytes),
        });
        entry.id = id;
        let ids: Vec<(DictKind, u32)> = self
            .dictionaries
            .iter()
            .map(|(k, d)| (*k, d.id()))
            .collect();
        self.manifest.set_id = set_id(&game, &version, schema_id, &ids);
        Ok(self)
    }

    /// The manifest as pretty-printed JSON (what [`DictionarySet::save`] writes).
    pub fn manifest_json(&self) -> String {
        // A manifest holds strings, numbers and maps with string keys only.
        serde_json::to_string_pretty(&self.manifest).unwrap_or_default() + "\n"
    }

    /// The set id.
    pub fn id(&self) -> u32 {
        self.manifest.set_id
    }

    /// Game name.
    pub fn game(&self) -> &str {
        &self.manifest.game
    }

    /// Game version.
    pub fn version(&self) -> &str {
        &self.manifest.version
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The schema with the trained operators: build encoders and decoders
    /// with it (or use [`DictionarySet::encoder`] and
    /// [`DictionarySet::decoder`]).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The dictionary for packets of `kind`, if the set has one.
    pub fn dictionary(&self, kind: DictKind) -> Option<&Dictionary> {
        self.dictionaries
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, d)| d)
    }

    /// Every dictionary with its kind.
    pub fn dictionaries(&self) -> &[(DictKind, Dictionary)] {
        &self.dictionaries
    }

    /// Whether the set's delta packets read their baseline's
    /// [`History`](tickpack::History): then the encoder must be given each
    /// baseline's history (the session does this), or its bytes grow.
    pub fn uses_history(&self) -> bool {
        self.dictionary(DictKind::Delta)
            .is_some_and(Dictionary::uses_history)
    }

    /// Checks the set was trained for `schema`'s layout (its operators may
    /// differ: the set's replace them).
    pub fn fits(&self, schema: &Schema) -> Result<(), DictSetError> {
        same_layout(&self.schema, schema).map_err(|reason| DictSetError::LayoutMismatch {
            reason: reason.to_string(),
        })
    }

    /// An encoder with the set's schema, its delta dictionary for deltas
    /// and its keyframe dictionary for keyframes (none if the set has no
    /// keyframe dictionary), with their model tables.
    pub fn encoder(&self, level: i32) -> Result<Encoder, DictSetError> {
        let mut e = Encoder::with_level(self.schema.clone(), level);
        e.set_dictionary(self.dictionary(DictKind::Delta))
            .map_err(DictSetError::Dictionary)?;
        let keyframes = match self.dictionary(DictKind::Keyframe) {
            Some(d) => KeyframeDictionary::Own(d),
            None => KeyframeDictionary::None,
        };
        e.set_keyframe_dictionary(keyframes)
            .map_err(DictSetError::Dictionary)?;
        Ok(e)
    }

    /// A decoder with the set's schema holding all its dictionaries.
    pub fn decoder(&self) -> Result<Decoder, DictSetError> {
        let mut d = Decoder::new(self.schema.clone());
        self.add_to(&mut d)?;
        Ok(d)
    }

    /// Adds the set's dictionaries to `decoder` (whose schema must be the
    /// set's to decode its packets).
    /// Packets that use a dictionary without naming it (deltas) are then
    /// decoded with this set's ([`Decoder::agree`]).
    pub fn add_to(&self, decoder: &mut Decoder) -> Result<(), DictSetError> {
        for (_, d) in &self.dictionaries {
            decoder
                .add_dictionary(d)
                .map_err(DictSetError::Dictionary)?;
        }
        self.agree(decoder)
    }

    /// Makes `decoder` (which holds this set's dictionaries) decode packets
    /// that do not name their dictionary with this set's.
    pub fn agree(&self, decoder: &mut Decoder) -> Result<(), DictSetError> {
        let id = |k| self.dictionary(k).map(|d| d.id());
        decoder
            .agree(id(DictKind::Delta), id(DictKind::Keyframe))
            .map_err(DictSetError::Decode)
    }
}
