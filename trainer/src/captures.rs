//! Loading captures, and schema helpers shared by the commands.

#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tickpack::capture::{Capture, CaptureHeader, CaptureLimits, CaptureOptions, CaptureWriter};
use tickpack::dictset::same_layout;
use tickpack::{DeltaOp, Field, Schema};

use crate::TrainerError;

/// A capture loaded for training or evaluation.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where it came from.
    pub path: PathBuf,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
    /// Its contents.
    pub capture: Capture,
}

impl Loaded {
    /// Index of the first held-out tick: the latest `fraction` of the ticks
    /// are held out (at least one when there are two ticks or more).
    pub fn split(&self, fraction: f64) -> usize {
        held_out_start(self.capture.ticks.len(), fraction)
    }
}

/// Index of the first held-out tick of `n` when the latest `fraction` are
/// held out.
pub fn held_out_start(n: usize, fraction: f64) -> usize {
    if n < 2 || fraction <= 0.0 {
        return n;
    }
    let held = ((n as f64) * fraction).round().max(1.0) as usize;
    n - held.min(n - 1)
}

/// Reads whole captures; every capture must have the first one's layout.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Loaded>, TrainerError> {
    if paths.is_empty() {
        return Err(TrainerError::Usage("no capture given".into()));
    }
    let mut out: Vec<Loaded> = Vec::with_capacity(paths.len());
    for p in paths {
        let bytes = std::fs::read(p).map_err(|e| TrainerError::io(p, e))?;
        let capture = Capture::read(&bytes[..], CaptureLimits::default()).map_err(|error| {
            TrainerError::Capture {
                file: p.display().to_string(),
                error,
            }
        })?;
        if let Some(first) = out.first() {
            same_layout(&first.capture.header.schema, &capture.header.schema).map_err(
                |reason| TrainerError::SchemaMismatch {
                    file: p.display().to_string(),
                    reason,
                },
            )?;
        }
        out.push(Loaded {
            path: p.clone(),
            sha256: tickpack::dictset::sha256_hex(&bytes),
            capture,
        });
    }
    Ok(out)
}

/// `schema` with operator `ops[section][field]` on every field.
pub fn with_ops(schema: &Schema, ops: &[Vec<DeltaOp>]) -> Result<Schema, TrainerError> {
    let mut b = Schema::builder();
    for (ty, ops) in schema.sections().iter().zip(ops) {
        b = b.entity(ty.name());
        for (f, op) in ty.fields().iter().zip(ops) {
            b = b.field_with(Field {
                delta: Some(*op),
                ..f.clone()
            });
        }
        if ty.default_record().iter().any(|&x| x != 0) {
            b = b.default_record(ty.default_record());
        }
    }
    Ok(b.build()?)
}

/// The operator of every field of `schema`.
pub fn ops_of(schema: &Schema) -> Vec<Vec<DeltaOp>> {
    schema
        .sections()
        .iter()
        .map(|t| t.fields().iter().map(Field::delta_op).collect())
        .collect()
}

/// The lowercase name of an operator, as in schemas.
pub fn op_name(op: DeltaOp) -> String {
    serde_json::to_value(op)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{op:?}").to_lowercase())
}

/// Opens `path` for a new capture with `header`.
pub fn create_capture(
    path: &Path,
    header: &CaptureHeader,
) -> Result<CaptureWriter<BufWriter<File>>, TrainerError> {
    let f = File::create(path).map_err(|e| TrainerError::io(path, e))?;
    CaptureWriter::new(BufWriter::new(f), header, CaptureOptions::default()).map_err(|error| {
        TrainerError::Capture {
            file: path.display().to_string(),
            error,
        }
    })
}

/// Finishes a capture started with [`create_capture`]; returns its size.
pub fn finish_capture(path: &Path, w: CaptureWriter<BufWriter<File>>) -> Result<u64, TrainerError> {
    let mut inner = w.finish().map_err(|error| TrainerError::Capture {
        file: path.display().to_string(),
        error,
    })?;
    inner.flush().map_err(|e| TrainerError::io(path, e))?;
    drop(inner);
    let meta = std::fs::metadata(path).map_err(|e| TrainerError::io(path, e))?;
    Ok(meta.len())
}

/// Wraps a capture error with its file name.
pub fn capture_err(path: &Path) -> impl Fn(tickpack::capture::CaptureError) -> TrainerError + '_ {
    move |error| TrainerError::Capture {
        file: path.display().to_string(),
        error,
    }
}
