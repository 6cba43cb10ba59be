//! Reading a set from a directory or from manifest bytes (verifying sizes,
//! hashes and ids), and writing one back.

use std::io::Read;
use std::path::Path;

use super::id::*;
use super::*;
use tickpack::Dictionary;
use tickpack::Schema;

/// Caps on what loading a set may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetLimits {
    /// Largest `manifest.json`. Default 1 MiB.
    pub max_manifest_bytes: usize,
    /// Largest dictionary file. Default 1 MiB (trained sets are 16 KiB at most).
    pub max_dictionary_bytes: usize,
}

impl Default for SetLimits {
    fn default() -> Self {
        Self {
            max_manifest_bytes: 1 << 20,
            max_dictionary_bytes: 1 << 20,
        }
    }
}

impl DictionarySet {
    /// Loads the set in `dir` (`manifest.json` and its files) with default
    /// limits, verifying sizes, hashes and ids.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, DictSetError> {
        Self::load_with_limits(dir, SetLimits::default())
    }

    /// Loads the set in `dir` under `limits`.
    pub fn load_with_limits(
        dir: impl AsRef<Path>,
        limits: SetLimits,
    ) -> Result<Self, DictSetError> {
        let dir = dir.as_ref();
        let manifest = read_capped(&dir.join(MANIFEST_FILE), limits.max_manifest_bytes)?;
        Self::from_manifest(&manifest, |file| {
            read_capped(&dir.join(file), limits.max_dictionary_bytes)
        })
    }

    /// Builds a set from manifest bytes, fetching each dictionary file by
    /// name through `files` (for sets embedded with `include_bytes!` or
    /// fetched from elsewhere). Verifies like [`DictionarySet::load`].
    pub fn from_manifest(
        manifest: &[u8],
        mut files: impl FnMut(&str) -> Result<Vec<u8>, DictSetError>,
    ) -> Result<Self, DictSetError> {
        let bad = |e: serde_json::Error| DictSetError::Manifest {
            message: e.to_string(),
        };
        let v: serde_json::Value = serde_json::from_slice(manifest).map_err(bad)?;
        refuse_huffman_tables(&v)?;
        let m: Manifest = serde_json::from_value(v).map_err(bad)?;
        if m.format != MANIFEST_FORMAT {
            return Err(DictSetError::UnsupportedFormat { format: m.format });
        }
        check_name(&m.game)?;
        check_name(&m.version)?;
        let schema = manifest_schema(&m)?;
        if schema.id() != m.schema_id {
            return Err(DictSetError::SchemaIdMismatch {
                expected: m.schema_id,
                actual: schema.id(),
            });
        }
        let all_fields: Vec<(&str, &tickpack::Field)> = schema
            .sections()
            .iter()
            .flat_map(|t| t.fields().iter().map(move |f| (t.name(), f)))
            .collect();
        let mismatch = m.fields.len() != all_fields.len()
            || m.fields
                .iter()
                .zip(&all_fields)
                .any(|(c, (e, f))| c.entity != *e || c.field != f.name || c.delta != f.delta_op());
        if mismatch {
            let (entity, field) = m
                .fields
                .iter()
                .zip(&all_fields)
                .find(|(c, (e, f))| c.entity != *e || c.field != f.name || c.delta != f.delta_op())
                .map_or_else(
                    || (String::new(), String::new()),
                    |(c, _)| (c.entity.clone(), c.field.clone()),
                );
            return Err(DictSetError::FieldMismatch { entity, field });
        }
        // A transform the manifest lists must be in the schema as listed, so
        // `inspect` and `eval` never report one the packets do not use.
        for t in &m.transforms {
            let declared = schema
                .sections()
                .iter()
                .find(|ty| ty.name() == t.entity)
                .and_then(|ty| {
                    let i = ty.fields().iter().position(|f| f.name == t.field)?;
                    Some((
                        ty.grids().nth(i)?,
                        ty.integrations().get(i)?.clone(),
                        *ty.units().get(i)?,
                    ))
                });
            let holds = match (declared, t.grid, &t.integrate, t.unit) {
                (Some((Some(g), ..)), Some(step), None, false) => g.to_bits() == step.to_bits(),
                (Some((_, Some(d), _)), None, Some(i), false) => d == *i,
                (Some((.., true)), None, None, true) => true,
                _ => false,
            };
            if !holds {
                return Err(DictSetError::TransformMismatch {
                    entity: t.entity.clone(),
                    field: t.field.clone(),
                });
            }
        }
        let mut dictionaries = Vec::with_capacity(m.dictionaries.len());
        for e in &m.dictionaries {
            if dictionaries.iter().any(|(k, _)| *k == e.kind) {
                return Err(DictSetError::DuplicateKind { kind: e.kind });
            }
            check_file_name(&e.file)?;
            let bytes = files(&e.file)?;
            if bytes.len() as u64 != e.size {
                return Err(DictSetError::SizeMismatch {
                    file: e.file.clone(),
                    expected: e.size,
                    actual: bytes.len() as u64,
                });
            }
            let sha = sha256_hex(&bytes);
            if sha != e.sha256.to_ascii_lowercase() {
                return Err(DictSetError::Sha256Mismatch {
                    file: e.file.clone(),
                    expected: e.sha256.clone(),
                    actual: sha,
                });
            }
            let model = match &e.model {
                None => None,
                Some(f) => Some(load_model(f, &mut files)?),
            };
            let id = dictionary_id_with(
                &m.game,
                &m.version,
                m.schema_id,
                e.kind,
                &bytes,
                model.as_ref().map(|(b, _)| b.as_slice()),
            );
            if id != e.id {
                return Err(DictSetError::IdMismatch {
                    file: e.file.clone(),
                    expected: e.id,
                    actual: id,
                });
            }
            let mut dict = Dictionary::new(id, bytes);
            if let Some((_, t)) = model {
                dict = dict.with_model(t);
            }
            dictionaries.push((e.kind, dict));
        }
        let ids: Vec<(DictKind, u32)> = dictionaries.iter().map(|(k, d)| (*k, d.id())).collect();
        let actual = set_id(&m.game, &m.version, m.schema_id, &ids);
        if actual != m.set_id {
            return Err(DictSetError::SetIdMismatch {
                expected: m.set_id,
                actual,
            });
        }
        Ok(Self {
            manifest: m,
            schema,
            dictionaries,
        })
    }

    /// Writes the dictionary files and `manifest.json` into `dir`
    /// (created if missing).
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), DictSetError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| DictSetError::io(dir, &e))?;
        for (e, (_, d)) in self.manifest.dictionaries.iter().zip(&self.dictionaries) {
            let p = dir.join(&e.file);
            std::fs::write(&p, d.bytes()).map_err(|err| DictSetError::io(&p, &err))?;
            if let (Some(f), Some(t)) = (&e.model, d.model()) {
                let p = dir.join(&f.file);
                std::fs::write(&p, t.to_bytes()).map_err(|err| DictSetError::io(&p, &err))?;
            }
        }
        let text = self.manifest_json();
        let p = dir.join(MANIFEST_FILE);
        std::fs::write(&p, text).map_err(|e| DictSetError::io(&p, &e))
    }
}

/// Refuses a manifest whose dictionary entries carry a `huffman` table:
/// block type 3 was retired in format 3 (FORMAT.md 3.2), and the table's
/// bytes are part of the entry's dictionary id, so dropping it silently
/// would only fail later as an id mismatch.
fn refuse_huffman_tables(v: &serde_json::Value) -> Result<(), DictSetError> {
    let entries = v.get("dictionaries").and_then(serde_json::Value::as_array);
    for e in entries.into_iter().flatten() {
        if e.get("huffman").is_some() {
            let file = e.get("file").and_then(serde_json::Value::as_str);
            return Err(DictSetError::Manifest {
                message: format!(
                    "dictionary {} carries a Huffman table (block type 3, retired in \
                     format 3): retrain the set",
                    file.unwrap_or("?")
                ),
            });
        }
    }
    Ok(())
}

/// Reads a model table file, checking its size and hash before parsing it
/// (at most [`DEFAULT_MAX_SLOTS`](tickpack::model::DEFAULT_MAX_SLOTS) slots).
fn load_model(
    f: &ModelFile,
    files: &mut impl FnMut(&str) -> Result<Vec<u8>, DictSetError>,
) -> Result<(Vec<u8>, tickpack::model::ModelTable), DictSetError> {
    check_file_name(&f.file)?;
    let bytes = files(&f.file)?;
    if bytes.len() as u64 != f.size {
        return Err(DictSetError::SizeMismatch {
            file: f.file.clone(),
            expected: f.size,
            actual: bytes.len() as u64,
        });
    }
    let sha = sha256_hex(&bytes);
    if sha != f.sha256.to_ascii_lowercase() {
        return Err(DictSetError::Sha256Mismatch {
            file: f.file.clone(),
            expected: f.sha256.clone(),
            actual: sha,
        });
    }
    let table =
        tickpack::model::ModelTable::from_bytes(&bytes).map_err(|error| DictSetError::Model {
            file: f.file.clone(),
            error,
        })?;
    Ok((bytes, table))
}

/// The schema a manifest describes (operators and default records included).
fn manifest_schema(m: &Manifest) -> Result<Schema, DictSetError> {
    let plain = Schema::from_json(&m.schema.to_string()).map_err(DictSetError::Schema)?;
    if m.default_records.is_empty() {
        return Ok(plain);
    }
    if m.default_records.len() != plain.sections().len() {
        return Err(DictSetError::Manifest {
            message: "default_records must have one entry per entity type".into(),
        });
    }
    let mut defaults = Vec::with_capacity(m.default_records.len());
    for d in &m.default_records {
        defaults.push(match d {
            None => None,
            Some(h) => Some(unhex(h).ok_or_else(|| DictSetError::Manifest {
                message: "default record is not hex".into(),
            })?),
        });
    }
    plain
        .rebuild(|_, _| None, |s| defaults[s].clone())
        .map_err(DictSetError::Schema)
}

/// Reads `path`, refusing files above `limit` bytes without reading them whole.
fn read_capped(path: &Path, limit: usize) -> Result<Vec<u8>, DictSetError> {
    let f = std::fs::File::open(path).map_err(|e| DictSetError::io(path, &e))?;
    let mut out = Vec::new();
    f.take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| DictSetError::io(path, &e))?;
    if out.len() > limit {
        return Err(DictSetError::TooLarge {
            file: path.display().to_string(),
            limit,
        });
    }
    Ok(out)
}
