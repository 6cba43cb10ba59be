//! The serde form of `manifest.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use tickpack::{DeltaOp, Integrate};

/// The manifest format version this crate writes and reads.
pub const MANIFEST_FORMAT: u32 = 1;

/// Which packets a dictionary compresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DictKind {
    /// Packets without a baseline (full snapshots).
    Keyframe,
    /// Packets coded against a baseline.
    Delta,
}

impl DictKind {
    /// Both kinds, in manifest order.
    pub const ALL: [DictKind; 2] = [DictKind::Keyframe, DictKind::Delta];

    /// The lowercase name used in manifests and file names.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Keyframe => "keyframe",
            Self::Delta => "delta",
        }
    }

    /// The kind of a packet with or without a baseline.
    pub const fn of(has_baseline: bool) -> Self {
        if has_baseline {
            Self::Delta
        } else {
            Self::Keyframe
        }
    }
}

/// `manifest.json`: what a dictionary set holds, how it was trained and what
/// it measured. Written by `tickpack-trainer train`, read by
/// [`DictionarySet::load`](super::DictionarySet::load).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// Game name.
    pub game: String,
    /// Game version.
    pub version: String,
    /// The set id: see [`set_id`](super::set_id). Checked on load.
    pub set_id: u32,
    /// Id of [`Manifest::schema`], the schema with the trained operators:
    /// the schema id in every packet made with this set.
    pub schema_id: u32,
    /// Id of the schema the captures were recorded with.
    pub base_schema_id: u32,
    /// The schema with the trained delta operators, in the form of
    /// [`Schema::to_json`](tickpack::Schema::to_json).
    pub schema: serde_json::Value,
    /// Default records (lowercase hex) per section, if any is not all zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_records: Vec<Option<String>>,
    /// The delta operator chosen for every field, with what each candidate
    /// measured.
    pub fields: Vec<FieldChoice>,
    /// The lossless transforms training applied: grids and integrations
    /// the set's schema declares and the captured schema did not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transforms: Vec<TransformChoice>,
    /// The dictionary files (at most one per kind).
    pub dictionaries: Vec<DictionaryEntry>,
    /// How the set was trained.
    #[serde(default)]
    pub training: Training,
    /// What it measured on held-out ticks.
    #[serde(default)]
    pub measured: Measured,
}

/// The operator chosen for one field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChoice {
    /// Entity type name.
    pub entity: String,
    /// Field name.
    pub field: String,
    /// The operator chosen (the one in [`Manifest::schema`]).
    pub delta: DeltaOp,
    /// Held-out bytes (all held-out delta packets, no dictionary) with each
    /// operator tried on this field, the others fixed; with
    /// [`Training::operators_by`] `model`, the model's bits / 8 instead.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held_out_bytes: BTreeMap<String, u64>,
}

/// A lossless transform training found in the captures and applied to one
/// field: a grid (FORMAT.md 4.5), an integration (4.9) or a unit vector
/// (4.10), exactly one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransformChoice {
    /// Entity type name.
    pub entity: String,
    /// Field name.
    pub field: String,
    /// The grid step, for a grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<f64>,
    /// The integration, for an integrated field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrate: Option<Integrate>,
    /// Whether the field is declared a unit vector.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unit: bool,
    /// Held-out delta bytes (no dictionary) without the transform and with
    /// it, the transforms kept before it in place.
    pub held_out_bytes: [u64; 2],
    /// The same packets' context-model bits / 8 (a table trained on a
    /// sample of the training packets), without and with it: a transform
    /// that leaves the blocks' bytes as they are is kept when these shrink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out_model_bytes: Option<[u64; 2]>,
}

impl TransformChoice {
    /// What it is, in a few words: `grid 0.5`, `integrate velocity over
    /// time x 0.001`, `unit vector`.
    pub fn describe(&self) -> String {
        match (&self.grid, &self.integrate) {
            (Some(step), _) => format!("grid {step}"),
            (None, Some(i)) => format!("integrate {} over {} x {}", i.velocity, i.time, i.scale),
            (None, None) if self.unit => "unit vector".to_owned(),
            (None, None) => "nothing".to_owned(),
        }
    }
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// One dictionary file. A `huffman` key (the static Huffman table of block
/// type 3, retired in format 3) makes the manifest refused on load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DictionaryEntry {
    /// Which packets it compresses.
    pub kind: DictKind,
    /// The id packets name it by: see [`dictionary_id`](super::dictionary_id).
    pub id: u32,
    /// File name in the set's directory (letters, digits, `.`, `_`, `-`).
    pub file: String,
    /// File size in bytes.
    pub size: u64,
    /// SHA-256 of the file, lowercase hex.
    pub sha256: String,
    /// The size the trainer was asked for (the file may be smaller).
    #[serde(default)]
    pub max_size: u64,
    /// A trained context-model table for the same packets (a model block),
    /// in its own file. Its bytes are part of the dictionary id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelFile>,
}

/// A model table file (FORMAT.md, "Model block").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFile {
    /// File name in the set's directory (letters, digits, `.`, `_`, `-`).
    pub file: String,
    /// File size in bytes.
    pub size: u64,
    /// SHA-256 of the file, lowercase hex.
    pub sha256: String,
}

/// How a set was trained (informational).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Training {
    /// Trainer name and version.
    pub trainer: String,
    /// The captures trained on.
    pub captures: Vec<CaptureSource>,
    /// Ticks in the training split (the earliest of each capture).
    pub train_ticks: u64,
    /// Ticks held out (the latest of each capture).
    pub held_out_ticks: u64,
    /// Fraction of each capture's ticks held out.
    pub held_out_fraction: f64,
    /// zstd level of the packets measured.
    pub level: i32,
    /// The dictionary training algorithm and its parameters.
    pub algorithm: String,
    /// Dictionary sizes tried, bytes.
    pub sizes_tried: Vec<u64>,
    /// Delta operators tried per field.
    pub ops_tried: Vec<DeltaOp>,
    /// How delta packets pick their baseline (recorded sends or an RTT model).
    pub baselines: String,
    /// One keyframe sample every this many ticks.
    pub keyframe_every: u64,
    /// What the operators were chosen by: `blocks` (held-out packets in
    /// zstd blocks; also sets from before the choice existed) or `model`
    /// (held-out model bits / 8, [`FieldChoice::held_out_bytes`] in those).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub operators_by: String,
    /// The model table's context flags when `train` was asked for one
    /// combination only; absent when every one was tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_flags: Option<u16>,
}

/// A capture a set was trained on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureSource {
    /// File name (no directories).
    pub file: String,
    /// SHA-256 of the file, lowercase hex.
    pub sha256: String,
    /// Ticks read.
    pub ticks: u64,
}

/// Mean bytes per packet on held-out ticks (informational).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Measured {
    /// Held-out delta packets measured.
    pub delta_packets: u64,
    /// Held-out keyframes measured.
    pub keyframes: u64,
    /// Mean bytes per snapshot (held-out delta packets) with the capture's
    /// own schema and no dictionary: what the codec does untrained.
    pub bytes_per_snapshot_without: f64,
    /// The same with this set: trained operators and dictionaries.
    pub bytes_per_snapshot_with: f64,
    /// The same with the trained operators but no dictionary.
    pub bytes_per_snapshot_ops_only: f64,
    /// Mean keyframe bytes, capture schema, no dictionary.
    pub keyframe_bytes_without: f64,
    /// Mean keyframe bytes with this set.
    pub keyframe_bytes_with: f64,
    /// Every dictionary candidate tried: kind, size and held-out mean.
    pub candidates: Vec<Candidate>,
}

/// One dictionary size tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Packets it was for.
    pub kind: DictKind,
    /// Size asked for (0: no dictionary).
    pub max_size: u64,
    /// Size the trainer produced.
    pub size: u64,
    /// Mean held-out packet bytes of that kind with it.
    pub bytes_mean: f64,
}
