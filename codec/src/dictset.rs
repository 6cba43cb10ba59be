//! Dictionary sets: trained dictionaries and per-field choices for one game
//! version, loaded from `dictionaries/<game>/<version>/manifest.json`.
//!
//! A set is a directory with a [`Manifest`] (`manifest.json`) and up to two
//! zstd dictionaries, one for keyframes and one for delta packets. The
//! manifest also carries the schema with the delta operator the trainer
//! chose for each field: packets made with a set use that schema (so its id
//! is on the wire) and the dictionary of their kind (so its id is too).
//!
//! Loading checks everything against the manifest: each file's size and
//! SHA-256, each dictionary id against its bytes, the schema id against the
//! schema, and the set id against all of it; damage gives a typed
//! [`DictSetError`]. [`DictionarySets`] holds several sets side by side
//! (two versions of a game during a rollover) and picks the set a packet
//! needs by its dictionary id.
//!
//! ```no_run
//! use tickpack::dictset::DictionarySet;
//! # fn world() -> tickpack::Snapshot { unimplemented!() }
//! let set = DictionarySet::load("dictionaries/cube-pile/1")?;
//! let mut enc = set.encoder(tickpack::DEFAULT_LEVEL)?;
//! let mut dec = set.decoder()?;
//! let packet = enc.encode(&world(), 0, None)?;
//! let (_, snapshot) = dec.decode(&packet, None)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod manifest;
mod registry;

use core::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use manifest::{
    Candidate, CaptureSource, DictKind, DictionaryEntry, FieldChoice, Manifest, Measured, Training,
    MANIFEST_FORMAT,
};
pub use registry::DictionarySets;

use crate::block::HuffmanTable;
use crate::capture::rebuild_schema;
use crate::decoder::Decoder;
use crate::dict::Dictionary;
use crate::encoder::{Baseline, Encoder};
use crate::error::{DecodeError, DictionaryError, EncodeError, SchemaError};
use crate::limits::Limits;
use crate::schema::Schema;
use crate::snapshot::Snapshot;

/// The manifest's file name in a set's directory.
pub const MANIFEST_FILE: &str = "manifest.json";

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

/// An error loading, saving or using a dictionary set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DictSetError {
    /// A file could not be read or written.
    Io {
        /// The file.
        file: PathBuf,
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
    /// A file is larger than the configured limit.
    TooLarge {
        /// The file.
        file: String,
        /// The limit, bytes.
        limit: usize,
    },
    /// `manifest.json` is not valid JSON of the manifest's form.
    Manifest {
        /// The parser's message (with line and column).
        message: String,
    },
    /// The manifest format is not one this crate reads.
    UnsupportedFormat {
        /// Format found.
        format: u32,
    },
    /// A game or version name is empty, longer than 255 bytes, or holds a
    /// path separator.
    BadName {
        /// The name.
        name: String,
    },
    /// The manifest's schema does not load.
    Schema(SchemaError),
    /// The manifest's schema does not have the id the manifest states.
    SchemaIdMismatch {
        /// Id in the manifest.
        expected: u32,
        /// Id of the schema it holds.
        actual: u32,
    },
    /// The field list disagrees with the schema.
    FieldMismatch {
        /// Entity type.
        entity: String,
        /// Field.
        field: String,
    },
    /// A dictionary file name is not a plain file name.
    BadFileName {
        /// The name.
        file: String,
    },
    /// Two dictionaries of the same kind.
    DuplicateKind {
        /// The kind.
        kind: DictKind,
    },
    /// A dictionary file does not have the size the manifest states.
    SizeMismatch {
        /// The file.
        file: String,
        /// Size in the manifest.
        expected: u64,
        /// Size of the file.
        actual: u64,
    },
    /// A dictionary file's SHA-256 differs from the manifest's: the file is
    /// damaged or not the one trained.
    Sha256Mismatch {
        /// The file.
        file: String,
        /// Hash in the manifest.
        expected: String,
        /// Hash of the file.
        actual: String,
    },
    /// A dictionary id does not match the dictionary's bytes and the set.
    IdMismatch {
        /// The file.
        file: String,
        /// Id in the manifest.
        expected: u32,
        /// Id computed.
        actual: u32,
    },
    /// The set id does not match the manifest's contents.
    SetIdMismatch {
        /// Id in the manifest.
        expected: u32,
        /// Id computed.
        actual: u32,
    },
    /// zstd rejected a dictionary.
    Dictionary(DictionaryError),
    /// No set held has this dictionary id.
    UnknownDictionary {
        /// The id the packet names.
        id: u32,
    },
    /// No set held has this schema id.
    UnknownSchema {
        /// The id the packet names.
        id: u32,
    },
    /// A set being added has a dictionary id already held by another set.
    IdCollision {
        /// The id.
        id: u32,
    },
    /// A set for this game version is already held.
    DuplicateSet {
        /// Game.
        game: String,
        /// Version.
        version: String,
    },
    /// The set was trained for a schema with another layout.
    LayoutMismatch {
        /// What differs, in words.
        reason: String,
    },
    /// A packet did not decode.
    Decode(DecodeError),
}

impl DictSetError {
    fn io(file: &Path, e: &std::io::Error) -> Self {
        Self::Io {
            file: file.to_path_buf(),
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl fmt::Display for DictSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, message, .. } => write!(f, "{}: {message}", file.display()),
            Self::TooLarge { file, limit } => write!(f, "{file} is larger than {limit} bytes"),
            Self::Manifest { message } => write!(f, "manifest: {message}"),
            Self::UnsupportedFormat { format } => {
                write!(f, "unsupported manifest format {format}")
            }
            Self::BadName { name } => write!(f, "bad game or version name {name:?}"),
            Self::Schema(e) => write!(f, "manifest schema: {e}"),
            Self::SchemaIdMismatch { expected, actual } => write!(
                f,
                "manifest schema has id {actual:#010x}, manifest says {expected:#010x}"
            ),
            Self::FieldMismatch { entity, field } => write!(
                f,
                "manifest field choice {entity}.{field} disagrees with its schema"
            ),
            Self::BadFileName { file } => write!(f, "bad dictionary file name {file:?}"),
            Self::DuplicateKind { kind } => {
                write!(f, "two {} dictionaries in one set", kind.name())
            }
            Self::SizeMismatch {
                file,
                expected,
                actual,
            } => write!(f, "{file} has {actual} bytes, manifest says {expected}"),
            Self::Sha256Mismatch {
                file,
                expected,
                actual,
            } => write!(
                f,
                "{file} is damaged: sha256 {actual}, manifest says {expected}"
            ),
            Self::IdMismatch {
                file,
                expected,
                actual,
            } => write!(
                f,
                "{file} has dictionary id {actual:#010x}, manifest says {expected:#010x}"
            ),
            Self::SetIdMismatch { expected, actual } => write!(
                f,
                "manifest contents give set id {actual:#010x}, manifest says {expected:#010x}"
            ),
            Self::Dictionary(e) => write!(f, "{e}"),
            Self::UnknownDictionary { id } => write!(f, "no set holds dictionary {id:#010x}"),
            Self::UnknownSchema { id } => write!(f, "no set has schema {id:#010x}"),
            Self::IdCollision { id } => {
                write!(f, "dictionary id {id:#010x} is already held by another set")
            }
            Self::DuplicateSet { game, version } => {
                write!(f, "a set for {game} {version} is already held")
            }
            Self::LayoutMismatch { reason } => write!(f, "set does not fit the schema: {reason}"),
            Self::Decode(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DictSetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Schema(e) => Some(e),
            Self::Dictionary(e) => Some(e),
            Self::Decode(e) => Some(e),
            _ => None,
        }
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn hash32(parts: &[&[u8]]) -> u32 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let d = h.finalize();
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// The id of a dictionary: the first 4 bytes (little-endian) of a SHA-256
/// over the game, the version, the schema id, the kind and the dictionary
/// bytes. Two versions (or two games, schemas or kinds) get unrelated ids;
/// a chance collision is caught by [`DictionarySets::insert`].
pub fn dictionary_id(
    game: &str,
    version: &str,
    schema_id: u32,
    kind: DictKind,
    bytes: &[u8],
) -> u32 {
    hash32(&[
        b"tickpack dictionary id 1",
        game.as_bytes(),
        version.as_bytes(),
        &schema_id.to_le_bytes(),
        kind.name().as_bytes(),
        bytes,
    ])
}

/// [`dictionary_id`] over the dictionary bytes followed by the Huffman
/// table's 128 bytes when there is one.
fn dictionary_id_with(
    game: &str,
    version: &str,
    schema_id: u32,
    kind: DictKind,
    bytes: &[u8],
    table: Option<&HuffmanTable>,
) -> u32 {
    match table {
        None => dictionary_id(game, version, schema_id, kind, bytes),
        Some(t) => {
            let mut all = bytes.to_vec();
            all.extend_from_slice(&t.to_bytes());
            dictionary_id(game, version, schema_id, kind, &all)
        }
    }
}

fn parse_huffman(h: &str) -> Result<HuffmanTable, DictSetError> {
    let bytes = unhex(h).ok_or_else(|| DictSetError::Manifest {
        message: "huffman table is not hex".into(),
    })?;
    HuffmanTable::from_bytes(&bytes).map_err(|e| DictSetError::Manifest {
        message: format!("huffman table: {e}"),
    })
}

/// The id of a set: a SHA-256 (first 4 bytes) over the game, the version,
/// the schema id (which covers every per-field operator choice) and each
/// dictionary's kind and id. Different choices give a different set id.
pub fn set_id(game: &str, version: &str, schema_id: u32, dictionaries: &[(DictKind, u32)]) -> u32 {
    let mut parts: Vec<Vec<u8>> = vec![
        b"tickpack set id 1".to_vec(),
        game.as_bytes().to_vec(),
        version.as_bytes().to_vec(),
        schema_id.to_le_bytes().to_vec(),
    ];
    let mut d = dictionaries.to_vec();
    d.sort();
    for (kind, id) in d {
        parts.push(kind.name().as_bytes().to_vec());
        parts.push(id.to_le_bytes().to_vec());
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    hash32(&refs)
}

fn check_name(name: &str) -> Result<(), DictSetError> {
    if name.is_empty()
        || name.len() > 255
        || name.contains(['/', '\\', '\0'])
        || name == "."
        || name == ".."
    {
        return Err(DictSetError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

fn check_file_name(file: &str) -> Result<(), DictSetError> {
    let ok = !file.is_empty()
        && file.len() <= 255
        && !file.starts_with('.')
        && file
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if !ok {
        return Err(DictSetError::BadFileName {
            file: file.to_owned(),
        });
    }
    Ok(())
}

/// Whether `a` and `b` lay records out the same way (entity types, field
/// names, types, lengths and default records), whatever their operators.
pub fn same_layout(a: &Schema, b: &Schema) -> Result<(), String> {
    if a.sections().len() != b.sections().len() {
        return Err(format!(
            "{} entity types against {}",
            a.sections().len(),
            b.sections().len()
        ));
    }
    for (x, y) in a.sections().iter().zip(b.sections()) {
        if x.name() != y.name() || x.fields().len() != y.fields().len() {
            return Err(format!("entity type `{}` against `{}`", x.name(), y.name()));
        }
        for (f, g) in x.fields().iter().zip(y.fields()) {
            if f.name != g.name || f.ty != g.ty || f.len != g.len {
                return Err(format!(
                    "field `{}.{}` ({:?} x{}) against `{}` ({:?} x{})",
                    x.name(),
                    f.name,
                    f.ty,
                    f.len,
                    g.name,
                    g.ty,
                    g.len
                ));
            }
        }
        if x.default_record() != y.default_record() {
            return Err(format!("default record of `{}`", x.name()));
        }
    }
    Ok(())
}

/// A loaded, verified dictionary set for one game version.
#[derive(Debug, Clone)]
pub struct DictionarySet {
    manifest: Manifest,
    schema: Schema,
    dictionaries: Vec<(DictKind, Dictionary)>,
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
        let m: Manifest = serde_json::from_slice(manifest).map_err(|e| DictSetError::Manifest {
            message: e.to_string(),
        })?;
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
        let all_fields: Vec<(&str, &crate::Field)> = schema
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
            let table = match &e.huffman {
                None => None,
                Some(h) => Some(parse_huffman(h)?),
            };
            let id = dictionary_id_with(
                &m.game,
                &m.version,
                m.schema_id,
                e.kind,
                &bytes,
                table.as_ref(),
            );
            if id != e.id {
                return Err(DictSetError::IdMismatch {
                    file: e.file.clone(),
                    expected: e.id,
                    actual: id,
                });
            }
            let mut dict = Dictionary::new(id, bytes);
            if let Some(t) = table {
                dict = dict.with_huffman(t);
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
                huffman: None,
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

    /// Attaches a trained Huffman table to the dictionary of `kind`: its
    /// packets may then use Huffman blocks where they beat zstd. The
    /// table goes into the manifest and into the dictionary and set ids.
    pub fn with_huffman(
        mut self,
        kind: DictKind,
        table: &HuffmanTable,
    ) -> Result<Self, DictSetError> {
        let missing = || DictSetError::Manifest {
            message: format!("no {} dictionary to attach a Huffman table to", kind.name()),
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
        let id = dictionary_id_with(&game, &version, schema_id, kind, &bytes, Some(table));
        slot.1 = Dictionary::new(id, bytes).with_huffman(table.clone());
        let entry = self
            .manifest
            .dictionaries
            .iter_mut()
            .find(|e| e.kind == kind)
            .ok_or_else(missing)?;
        entry.huffman = Some(hex(&table.to_bytes()));
        entry.id = id;
        let ids: Vec<(DictKind, u32)> = self
            .dictionaries
            .iter()
            .map(|(k, d)| (*k, d.id()))
            .collect();
        self.manifest.set_id = set_id(&game, &version, schema_id, &ids);
        Ok(self)
    }

    /// Writes the dictionary files and `manifest.json` into `dir`
    /// (created if missing).
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), DictSetError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| DictSetError::io(dir, &e))?;
        for (e, (_, d)) in self.manifest.dictionaries.iter().zip(&self.dictionaries) {
            let p = dir.join(&e.file);
            std::fs::write(&p, d.bytes()).map_err(|err| DictSetError::io(&p, &err))?;
        }
        let text = self.manifest_json();
        let p = dir.join(MANIFEST_FILE);
        std::fs::write(&p, text).map_err(|e| DictSetError::io(&p, &e))
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

    /// Checks the set was trained for `schema`'s layout (its operators may
    /// differ: the set's replace them).
    pub fn fits(&self, schema: &Schema) -> Result<(), DictSetError> {
        same_layout(&self.schema, schema).map_err(|reason| DictSetError::LayoutMismatch { reason })
    }

    /// An encoder using the set's schema and, per packet, the dictionary of
    /// its kind.
    pub fn encoder(&self, level: i32) -> Result<SetEncoder, DictSetError> {
        let make = |kind| -> Result<Encoder, DictSetError> {
            let mut e = Encoder::with_level(self.schema.clone(), level);
            e.set_dictionary(self.dictionary(kind))
                .map_err(DictSetError::Dictionary)?;
            Ok(e)
        };
        Ok(SetEncoder {
            keyframe: make(DictKind::Keyframe)?,
            delta: make(DictKind::Delta)?,
        })
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
    rebuild_schema(&plain, |_, _| None, |s| defaults[s].clone()).map_err(DictSetError::Schema)
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

/// An encoder for a [`DictionarySet`]: keyframes with the keyframe
/// dictionary, deltas with the delta dictionary, both under the set's
/// schema. Made by [`DictionarySet::encoder`].
#[derive(Debug)]
pub struct SetEncoder {
    keyframe: Encoder,
    delta: Encoder,
}

impl SetEncoder {
    /// Encodes like [`Encoder::encode`], with the dictionary of the packet's kind.
    pub fn encode(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        baseline: Option<Baseline<'_>>,
    ) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.encode_to_vec(snapshot, sequence, baseline, &mut out)?;
        Ok(out)
    }

    /// Like [`SetEncoder::encode`], replacing the contents of `out`.
    pub fn encode_to_vec(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        baseline: Option<Baseline<'_>>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        self.encoder_mut(DictKind::of(baseline.is_some()))
            .encode_to_vec(snapshot, sequence, baseline, out)
    }

    /// Like [`Encoder::encode_predicted_to_vec`]: a delta against `baseline`
    /// with `prior` as the older baseline for `predict` fields.
    pub fn encode_predicted_to_vec(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        baseline: Baseline<'_>,
        prior: Baseline<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        self.delta
            .encode_predicted_to_vec(snapshot, sequence, baseline, prior, out)
    }

    /// The encoder used for packets of `kind`.
    pub fn encoder_mut(&mut self, kind: DictKind) -> &mut Encoder {
        match kind {
            DictKind::Keyframe => &mut self.keyframe,
            DictKind::Delta => &mut self.delta,
        }
    }

    /// Sets the limits of both encoders.
    pub fn set_limits(&mut self, limits: Limits) {
        self.keyframe.set_limits(limits);
        self.delta.set_limits(limits);
    }

    /// Turns packet checksums on or off for both encoders.
    pub fn set_checksum(&mut self, on: bool) {
        self.keyframe.set_checksum(on);
        self.delta.set_checksum(on);
    }

    /// The set's schema.
    pub fn schema(&self) -> &Schema {
        self.delta.schema()
    }
}
