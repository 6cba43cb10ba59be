//! Reading captures in bounded memory, writing them safely, and schema
//! helpers shared by the commands.
//!
//! A command reads each capture once for its metadata ([`scan_all`]), plans
//! from that, then reads it again ([`Scanned::stream`], [`Scanned::load`])
//! keeping only the snapshots the plan still needs.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tickpack::{DeltaOp, Field, Schema, Snapshot};
use tickpack_sets::capture::{
    CaptureHeader, CaptureLimits, CaptureOptions, CaptureReader, CaptureWriter, Record, SentRecord,
};
use tickpack_sets::dictset::same_layout;

use crate::output::{check_output, Pending};
use crate::TrainerError;

/// Most sent records one tick of a capture may hold (one packet per client
/// per tick: far more clients than a server has).
pub const MAX_SENT_PER_TICK: usize = 65_536;

/// What the first pass over a capture learns about one tick: everything
/// but the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickMeta {
    /// The server's tick number.
    pub tick: u64,
    /// Packets recorded as sent in that tick.
    pub sent: Vec<SentRecord>,
    /// Bytes the snapshot takes in memory: ids and records.
    pub bytes: u64,
}

/// A capture read once without keeping its snapshots: the header, every
/// tick's number and sent records, and the file's hash. Its snapshots are
/// read again, as needed, by [`Scanned::stream`].
#[derive(Debug, Clone)]
pub struct Scanned {
    /// Where it came from.
    pub path: PathBuf,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
    /// Its header.
    pub header: CaptureHeader,
    /// Its ticks, in order.
    pub ticks: Vec<TickMeta>,
}

impl Scanned {
    /// Index of the first held-out tick: the latest `fraction` of the ticks
    /// are held out (at least one when there are two ticks or more).
    pub fn split(&self, fraction: f64) -> usize {
        held_out_start(self.ticks.len(), fraction)
    }

    /// Reads the capture again, calling `f(index, snapshot)` for every tick
    /// in order. Only the reader's current tick is in memory. A capture
    /// that no longer has the hash of the first reading is an error, after
    /// its ticks.
    pub fn stream(
        &self,
        mut f: impl FnMut(usize, &Snapshot) -> Result<(), TrainerError>,
    ) -> Result<(), TrainerError> {
        let p = &self.path;
        let file = File::open(p).map_err(|e| TrainerError::io(p, e))?;
        let mut input = Hashing {
            inner: file,
            hash: Sha256::new(),
        };
        let mut r = CaptureReader::with_limits(&mut input, CaptureLimits::default())
            .map_err(capture_err(p))?;
        if r.header() != &self.header {
            return Err(changed(p));
        }
        let mut i = 0usize;
        while let Some(rec) = r.next_record().map_err(capture_err(p))? {
            if let Record::Tick { tick, snapshot } = rec {
                if self.ticks.get(i).map(|t| t.tick) != Some(tick) {
                    return Err(changed(p));
                }
                f(i, snapshot)?;
                i += 1;
            }
        }
        drop(r);
        if i != self.ticks.len() || input.hex() != self.sha256 {
            return Err(changed(p));
        }
        Ok(())
    }

    /// The snapshots of the ticks `wanted` says yes to, read in one pass.
    pub fn load(
        &self,
        mut wanted: impl FnMut(usize) -> bool,
    ) -> Result<HashMap<usize, Snapshot>, TrainerError> {
        let mut out = HashMap::new();
        self.stream(|i, s| {
            if wanted(i) {
                out.insert(i, s.clone());
            }
            Ok(())
        })?;
        Ok(out)
    }
}

fn changed(p: &Path) -> TrainerError {
    TrainerError::Changed {
        file: p.display().to_string(),
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

/// Bytes a snapshot takes in memory: its ids and records, and the
/// structures that hold them, so that empty snapshots count too.
pub fn snapshot_bytes(s: &Snapshot) -> u64 {
    (size_of::<Snapshot>() + size_of_val(s.sections()) + s.raw_len() + 4 * s.entity_count()) as u64
}

/// Hashes what is read through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
}

impl<R> Hashing<R> {
    /// The SHA-256 of what was read, lowercase hex.
    fn hex(self) -> String {
        self.hash
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// Reads every capture once, keeping only what [`Scanned`] holds (memory
/// per tick: its number, its sent records, a size); every capture must have
/// the first one's layout. Damage anywhere is an error.
pub fn scan_all(paths: &[PathBuf]) -> Result<Vec<Scanned>, TrainerError> {
    if paths.is_empty() {
        return Err(TrainerError::Usage("no capture given".into()));
    }
    let mut out: Vec<Scanned> = Vec::with_capacity(paths.len());
    for p in paths {
        let file = File::open(p).map_err(|e| TrainerError::io(p, e))?;
        let mut input = Hashing {
            inner: file,
            hash: Sha256::new(),
        };
        let mut r = CaptureReader::with_limits(&mut input, CaptureLimits::default())
            .map_err(capture_err(p))?;
        let header = r.header().clone();
        if let Some(first) = out.first() {
            same_layout(&first.header.schema, &header.schema).map_err(|reason| {
                TrainerError::SchemaMismatch {
                    file: p.display().to_string(),
                    reason: reason.to_string(),
                }
            })?;
        }
        let mut ticks: Vec<TickMeta> = Vec::new();
        while let Some(rec) = r.next_record().map_err(capture_err(p))? {
            match rec {
                Record::Tick { tick, snapshot } => ticks.push(TickMeta {
                    tick,
                    sent: Vec::new(),
                    bytes: snapshot_bytes(snapshot),
                }),
                Record::Sent(s) => {
                    if let Some(t) = ticks.last_mut() {
                        if t.sent.len() >= MAX_SENT_PER_TICK {
                            return Err(TrainerError::TooManySent {
                                file: p.display().to_string(),
                                tick: t.tick,
                                limit: MAX_SENT_PER_TICK,
                            });
                        }
                        t.sent.push(s);
                    }
                }
            }
        }
        drop(r);
        let sha256 = input.hex();
        out.push(Scanned {
            path: p.clone(),
            sha256,
            header,
            ticks,
        });
    }
    Ok(out)
}

/// `schema` with operator `ops[section][field]` on every field.
pub fn with_ops(schema: &Schema, ops: &[Vec<DeltaOp>]) -> Result<Schema, TrainerError> {
    Ok(schema.rebuild(|s, i| ops.get(s).and_then(|o| o.get(i)).copied(), |_| None)?)
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

/// A capture being written to a temporary file beside its destination.
#[derive(Debug)]
pub struct NewCapture {
    path: PathBuf,
    pending: Pending,
    /// The writer: call [`CaptureWriter::tick`] and [`CaptureWriter::sent`].
    pub writer: CaptureWriter<BufWriter<File>>,
}

/// Starts the capture `path` with `header`, after refusing an output that
/// is one of `inputs` or that exists without `force` ([`check_output`]).
/// Nothing appears at `path` before [`NewCapture::finish`].
pub fn create_capture(
    inputs: &[&Path],
    path: &Path,
    force: bool,
    header: &CaptureHeader,
) -> Result<NewCapture, TrainerError> {
    check_output(inputs, path, force)?;
    let pending = Pending::new(path, force)?;
    let writer = CaptureWriter::new(pending.writer()?, header, CaptureOptions::default())
        .map_err(capture_err(path))?;
    Ok(NewCapture {
        path: path.to_owned(),
        pending,
        writer,
    })
}

impl NewCapture {
    /// Completes the capture and moves it to its destination; returns its size.
    pub fn finish(self) -> Result<u64, TrainerError> {
        let mut inner = self.writer.finish().map_err(capture_err(&self.path))?;
        inner.flush().map_err(|e| TrainerError::io(&self.path, e))?;
        drop(inner);
        self.pending.commit()
    }
}

/// Wraps a capture error with its file name.
pub fn capture_err(
    path: &Path,
) -> impl Fn(tickpack_sets::capture::CaptureError) -> TrainerError + '_ {
    move |error| TrainerError::Capture {
        file: path.display().to_string(),
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack::{Primitive, Section};

    #[test]
    fn an_empty_snapshot_is_charged_for_what_holds_it() {
        // Captures of empty snapshots held by the thousand (baselines far
        // back) must count against `max_held_bytes`.
        let schema = Schema::builder()
            .entity("a")
            .field("x", Primitive::F32, 1)
            .entity("b")
            .field("x", Primitive::F32, 1)
            .entity("c")
            .field("x", Primitive::F32, 1)
            .build()
            .unwrap();
        let empty = Snapshot::new(&schema);
        assert!(
            snapshot_bytes(&empty) >= (size_of::<Snapshot>() + 3 * size_of::<Section>()) as u64
        );
    }
}
