//! `inspect`: what a capture, a dictionary file, a model table, a manifest
//! or a set directory contains.

#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::fmt::Write;
use std::io::{BufReader, Read};
use std::path::Path;

use tickpack::model::{ModelTable, DEFAULT_MAX_SLOTS, PRIOR};
use tickpack::Schema;
use tickpack_sets::capture::{CaptureReader, Record, MAGIC};
use tickpack_sets::dictset::{
    sha256_hex, DictSetError, DictionarySet, Manifest, SetLimits, MANIFEST_FILE,
};

use crate::captures::op_name;
use crate::TrainerError;

/// The magic number of a zstd dictionary (`ZSTD_MAGIC_DICTIONARY`, little-endian).
const ZSTD_DICT_MAGIC: [u8; 4] = [0x37, 0xa4, 0x30, 0xec];

/// The magic number of a model table (FORMAT.md, "Model block").
const MODEL_MAGIC: [u8; 4] = *b"TPCM";

/// The largest model table [`ModelTable::from_bytes`] loads: 24 bytes of
/// header and checksum, the presence bitmap and a probability for every one
/// of [`DEFAULT_MAX_SLOTS`] slots.
pub const MAX_MODEL_BYTES: u64 =
    24 + DEFAULT_MAX_SLOTS.div_ceil(8) as u64 + 2 * DEFAULT_MAX_SLOTS as u64;

/// What `inspect` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    /// The description printed.
    pub text: String,
    /// The file is damaged: a capture that does not read to its end record
    /// with every checksum good, or a set that does not verify.
    pub damaged: bool,
}

/// Describes `path`: a set directory, or a file told by its first bytes (a
/// capture also by its `.tpcap` extension, a model table by `.model`). A
/// model table that does not load is [`TrainerError::Model`].
pub fn inspect(path: &Path) -> Result<Inspected, TrainerError> {
    if path.is_dir() {
        return Ok(set_dir(path, &path.join(MANIFEST_FILE)));
    }
    let mut head = [0u8; 8];
    let n = {
        let mut f = std::fs::File::open(path).map_err(|e| TrainerError::io(path, e))?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(TrainerError::io(path, e)),
            }
        }
        n
    };
    // A `.tpcap` damaged in its first bytes is still a damaged capture.
    if (n == 8 && head == MAGIC) || path.extension().is_some_and(|e| e == "tpcap") {
        return capture(path);
    }
    if n >= 4 && head[..4] == ZSTD_DICT_MAGIC {
        return dictionary(path).map(|text| Inspected {
            text,
            damaged: false,
        });
    }
    if (n >= 4 && head[..4] == MODEL_MAGIC) || path.extension().is_some_and(|e| e == "model") {
        return model_file(path).map(|text| Inspected {
            text,
            damaged: false,
        });
    }
    if head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        let dir = path.parent().unwrap_or(Path::new("."));
        return Ok(set_dir(dir, path));
    }
    Err(TrainerError::Usage(format!(
        "{}: not a capture, a zstd dictionary, a model table or a manifest",
        path.display()
    )))
}

fn schema_lines(s: &mut String, schema: &Schema) {
    let _ = writeln!(s, "schema {:#010x}", schema.id());
    for t in schema.sections() {
        let _ = writeln!(
            s,
            "  entity type `{}`: {}-byte records",
            t.name(),
            t.record_size()
        );
        let mut rows = vec![vec![
            "    field".to_owned(),
            "type".to_owned(),
            "len".to_owned(),
            "delta".to_owned(),
        ]];
        if t.is_quantized() {
            rows[0].push("quantize".to_owned());
        }
        let grids: Vec<Option<f64>> = t.grids().collect();
        let has_grid = grids.iter().any(Option::is_some);
        let has_integrate = t.integrations().iter().any(Option::is_some);
        if has_grid {
            rows[0].push("grid".to_owned());
        }
        if has_integrate {
            rows[0].push("integrate".to_owned());
        }
        let has_unit = t.units().iter().any(|&u| u);
        if has_unit {
            rows[0].push("unit".to_owned());
        }
        for (i, (f, q)) in t.fields().iter().zip(t.quantization()).enumerate() {
            let mut row = vec![
                format!("    {}", f.name),
                format!("{:?}", f.ty).to_lowercase(),
                f.len.to_string(),
                op_name(f.delta_op()),
            ];
            if t.is_quantized() {
                row.push(q.map_or_else(|| "-".to_owned(), |q| q.to_string()));
            }
            if has_grid {
                let g = grids.get(i).copied().flatten();
                row.push(g.map_or_else(|| "-".to_owned(), |g| g.to_string()));
            }
            if has_integrate {
                let d = t.integrations().get(i).and_then(Option::as_ref);
                row.push(d.map_or_else(
                    || "-".to_owned(),
                    |d| format!("{} over {} x {}", d.velocity, d.time, d.scale),
                ));
            }
            if has_unit {
                let u = t.units().get(i) == Some(&true);
                row.push(if u { "yes" } else { "-" }.to_owned());
            }
            rows.push(row);
        }
        *s += &crate::table::render(&rows);
    }
}

fn capture(path: &Path) -> Result<Inspected, TrainerError> {
    let f = std::fs::File::open(path).map_err(|e| TrainerError::io(path, e))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut r =
        CaptureReader::new(BufReader::new(f)).map_err(crate::captures::capture_err(path))?;
    let h = r.header().clone();
    let mut s = String::new();
    let _ = writeln!(s, "capture {} ({size} bytes)", path.display());
    let _ = writeln!(
        s,
        "game {:?}, version {:?}, {} Hz",
        h.game, h.version, h.tick_rate
    );
    schema_lines(&mut s, &h.schema);
    let (mut ticks, mut sent, mut raw) = (0u64, 0u64, 0u64);
    let (mut first, mut last) = (None, 0u64);
    let (mut min_e, mut max_e) = (usize::MAX, 0usize);
    let mut clients = BTreeSet::new();
    let mut damaged = false;
    let status = loop {
        match r.next_record() {
            Ok(Some(Record::Tick { tick, snapshot })) => {
                ticks += 1;
                first.get_or_insert(tick);
                last = tick;
                raw += snapshot.raw_len() as u64;
                min_e = min_e.min(snapshot.entity_count());
                max_e = max_e.max(snapshot.entity_count());
            }
            Ok(Some(Record::Sent(x))) => {
                sent += 1;
                clients.insert(x.client);
            }
            Ok(None) => break "complete (end record present, every checksum good)".to_owned(),
            Err(e) => {
                damaged = true;
                break format!("DAMAGED: {e}; the {ticks} ticks before it are intact");
            }
        }
    };
    match first {
        Some(f) => {
            let _ = writeln!(
                s,
                "ticks: {ticks} ({f}..={last}), entities per tick {min_e}..={max_e}"
            );
            let _ = writeln!(
                s,
                "disk: {:.1} bytes per tick against {:.1} record bytes per tick",
                size as f64 / ticks as f64,
                raw as f64 / ticks as f64
            );
        }
        None => {
            let _ = writeln!(s, "ticks: 0");
        }
    }
    let _ = writeln!(s, "sent records: {sent} ({} clients)", clients.len());
    let _ = writeln!(s, "status: {status}");
    Ok(Inspected { text: s, damaged })
}

/// Reads `path` whole if it holds at most `limit` bytes, reading no more
/// than one byte past the limit (a set loads no larger file).
fn read_capped(path: &Path, limit: usize) -> Result<Vec<u8>, DictSetError> {
    let io = |e: std::io::Error| DictSetError::Io {
        file: path.to_owned(),
        kind: e.kind(),
        message: e.to_string(),
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    f.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() > limit {
        return Err(DictSetError::TooLarge {
            file: path.display().to_string(),
            limit,
        });
    }
    Ok(bytes)
}

fn dictionary(path: &Path) -> Result<String, TrainerError> {
    let bytes = read_capped(path, SetLimits::default().max_dictionary_bytes)?;
    let sha = sha256_hex(&bytes);
    let zid = bytes
        .get(4..8)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "zstd dictionary {} ({} bytes), zstd dictionary id {zid}, sha256 {sha}",
        path.display(),
        bytes.len()
    );
    membership(path, &mut s, |m| {
        let d = m.dictionaries.iter().find(|d| d.sha256 == sha)?;
        Some(format!(
            "in set {} {} ({:#010x}): the {} dictionary, id {:#010x} on the wire",
            m.game,
            m.version,
            m.set_id,
            d.kind.name(),
            d.id
        ))
    });
    Ok(s)
}

/// Reads and loads the model table at `path`, refusing a file larger than
/// [`MAX_MODEL_BYTES`] without reading it whole. Gives its bytes too.
pub fn load_model(path: &Path) -> Result<(Vec<u8>, ModelTable), TrainerError> {
    let f = std::fs::File::open(path).map_err(|e| TrainerError::io(path, e))?;
    let mut bytes = Vec::new();
    f.take(MAX_MODEL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| TrainerError::io(path, e))?;
    if bytes.len() as u64 > MAX_MODEL_BYTES {
        return Err(TrainerError::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("larger than any model table ({MAX_MODEL_BYTES} bytes)"),
            ),
        ));
    }
    match ModelTable::from_bytes(&bytes) {
        Ok(table) => Ok((bytes, table)),
        Err(error) => Err(TrainerError::Model {
            file: path.display().to_string(),
            error,
        }),
    }
}

/// What a loaded model table holds: its contexts, its probability slots and
/// how many of them are stored (the rest are at one half).
fn model_facts(table: &ModelTable) -> String {
    let shape = table.shape();
    let stored = table
        .probabilities()
        .iter()
        .filter(|&&p| p != PRIOR)
        .count();
    format!(
        "{} bit contexts, {} value contexts: {} slots, {stored} stored (the rest at one half)",
        shape.bit_contexts,
        shape.value_contexts,
        shape.slots()
    )
}

fn model_file(path: &Path) -> Result<String, TrainerError> {
    let (bytes, table) = load_model(path)?;
    let sha = sha256_hex(&bytes);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "model table {} ({} bytes), sha256 {sha}",
        path.display(),
        bytes.len()
    );
    let _ = writeln!(s, "{}", model_facts(&table));
    membership(path, &mut s, |m| {
        let d = m
            .dictionaries
            .iter()
            .find(|d| d.model.as_ref().is_some_and(|f| f.sha256 == sha))?;
        Some(format!(
            "in set {} {} ({:#010x}): the {} dictionary's model table",
            m.game,
            m.version,
            m.set_id,
            d.kind.name()
        ))
    });
    Ok(s)
}

/// Appends which set the file at `path` belongs to, by the manifest beside
/// it: `describe`'s line for the entry naming the file, else why none does.
fn membership(path: &Path, s: &mut String, describe: impl Fn(&Manifest) -> Option<String>) {
    let dir = path.parent().unwrap_or(Path::new("."));
    let manifest = read_capped(
        &dir.join(MANIFEST_FILE),
        SetLimits::default().max_manifest_bytes,
    )
    .ok()
    .and_then(|m| serde_json::from_slice::<Manifest>(&m).ok());
    let line = match manifest {
        Some(m) => describe(&m).unwrap_or_else(|| {
            "not listed by the manifest beside it (damaged, or from another set)".into()
        }),
        None => "no readable manifest beside it".into(),
    };
    let _ = writeln!(s, "{line}");
}

fn set_dir(dir: &Path, manifest: &Path) -> Inspected {
    let damaged = |text: String| Inspected {
        text,
        damaged: true,
    };
    let mut s = String::new();
    // The limits `DictionarySet::load` reads a set under.
    let limits = SetLimits::default();
    let text = match read_capped(manifest, limits.max_manifest_bytes) {
        Ok(t) => t,
        Err(e) => return damaged(format!("{e}\n")),
    };
    let verified = DictionarySet::from_manifest(&text, |file| {
        read_capped(&dir.join(file), limits.max_dictionary_bytes)
    });
    let m = match (&verified, serde_json::from_slice::<Manifest>(&text)) {
        (Ok(set), _) => set.manifest().clone(),
        (Err(_), Ok(m)) => m,
        (Err(e), Err(_)) => return damaged(format!("manifest {}: {e}\n", manifest.display())),
    };
    let _ = writeln!(
        s,
        "dictionary set {} {} in {}: set {:#010x}",
        m.game,
        m.version,
        dir.display(),
        m.set_id
    );
    let _ = writeln!(
        s,
        "verified: {}",
        match &verified {
            Ok(_) => "yes (sizes, sha256, ids)".to_owned(),
            Err(e) => format!("NO: {e}"),
        }
    );
    if let Ok(set) = &verified {
        schema_lines(&mut s, set.schema());
    }
    let _ = writeln!(s, "captured schema {:#010x}", m.base_schema_id);
    if m.transforms.is_empty() {
        let _ = writeln!(s, "transforms applied by training: none");
    }
    for t in &m.transforms {
        let _ = writeln!(
            s,
            "transform applied by training: {}.{}: {} (held-out {} -> {} B{})",
            t.entity,
            t.field,
            t.describe(),
            t.held_out_bytes[0],
            t.held_out_bytes[1],
            crate::train::model_bytes(t)
        );
    }
    for d in &m.dictionaries {
        let _ = writeln!(
            s,
            "{} dictionary {}: {} bytes (asked {}), id {:#010x}, sha256 {}",
            d.kind.name(),
            d.file,
            d.size,
            d.max_size,
            d.id,
            d.sha256
        );
        if let Some(f) = &d.model {
            // Only a verified set's tables are loaded: an unverified
            // manifest's file names are not trusted.
            let loaded = verified
                .as_ref()
                .ok()
                .and_then(|set| set.dictionary(d.kind).and_then(tickpack::Dictionary::model));
            let facts = loaded.map_or_else(
                || "not loaded (the set does not verify)".to_owned(),
                model_facts,
            );
            let _ = writeln!(
                s,
                "{} model table {}: {} bytes, {facts}, sha256 {}",
                d.kind.name(),
                f.file,
                f.size,
                f.sha256
            );
        }
    }
    let t = &m.training;
    let _ = writeln!(
        s,
        "trained by {} on {} capture(s): {} ticks, {} held out; baselines: {}",
        t.trainer,
        t.captures.len(),
        t.train_ticks,
        t.held_out_ticks,
        t.baselines
    );
    let me = &m.measured;
    let _ = writeln!(
        s,
        "held-out delta packets: {:.1} B untrained, {:.1} B with the set; keyframes {:.1} -> {:.1} B",
        me.bytes_per_snapshot_without,
        me.bytes_per_snapshot_with,
        me.keyframe_bytes_without,
        me.keyframe_bytes_with
    );
    Inspected {
        text: s,
        damaged: verified.is_err(),
    }
}
