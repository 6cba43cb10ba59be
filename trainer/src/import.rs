//! `import`: captures from data users already have.
//!
//! - [`fiedler`]: the 2015 networked-physics compression challenge file
//!   (`delta_data.bin`: frames of 901 cubes × 8 little-endian `i32`, no
//!   header). Entity id = cube index, tick = frame index, schema =
//!   `tickpack_scenarios::cube_schema()`.
//! - [`jsonl`]: JSON lines, documented in docs/guide.md ("Trainer"): a header
//!   line with game, version and schema, then one line per tick.

#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;
use tickpack::{Schema, Section, Snapshot};
use tickpack_scenarios::{cube_schema, CUBE_COUNT, CUBE_FIELDS};
use tickpack_sets::capture::{CaptureHeader, CaptureLimits, SentRecord};

use crate::captures::{capture_err, create_capture};
use crate::jsonl::{explain, parse_tick};
use crate::output::check_output;
use crate::TrainerError;

/// The UTF-8 byte order mark, skipped at the start of a JSON-lines file.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// Longest JSON line accepted (bytes). A line is read up to this and no further.
pub const MAX_JSONL_LINE: usize = 64 << 20;

/// What an import wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    /// Ticks written.
    pub ticks: u64,
    /// Capture size, bytes.
    pub bytes: u64,
}

/// Imports a 2015 challenge file: `INPUT` holds frames of
/// [`CUBE_COUNT`] × 8 little-endian `i32` and nothing else. `output` is
/// refused if it is `input`, or if it exists without `force`.
pub fn fiedler(
    input: &Path,
    output: &Path,
    force: bool,
    game: &str,
    version: &str,
) -> Result<Imported, TrainerError> {
    check_output(&[input], output, force)?;
    let schema = cube_schema();
    let frame = CUBE_COUNT * CUBE_FIELDS.len() * 4;
    let mut r = BufReader::new(File::open(input).map_err(|e| TrainerError::io(input, e))?);
    let mut w = create_capture(
        &[input],
        output,
        force,
        &CaptureHeader::new(game, version, 60, schema.clone()),
    )?;
    let ids: Vec<u32> = (0..CUBE_COUNT as u32).collect();
    let mut buf = vec![0u8; frame];
    let mut tick = 0u64;
    loop {
        let mut got = 0;
        while got < frame {
            match r.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TrainerError::io(input, e)),
            }
        }
        if got == 0 {
            break;
        }
        if got < frame {
            return Err(TrainerError::Import {
                file: input.display().to_string(),
                at: format!("byte {}", tick * frame as u64),
                message: format!(
                    "frame {tick} has {got} of {frame} bytes: the file is not whole frames of \
                     {CUBE_COUNT} cubes x 8 i32"
                ),
            });
        }
        let section = Section::from_parts(ids.clone(), buf.clone(), frame / CUBE_COUNT)
            .map_err(|e| TrainerError::Encode(e.into()))?;
        let snap = Snapshot::from_sections(&schema, vec![section])
            .map_err(|e| TrainerError::Encode(e.into()))?;
        w.writer.tick(tick, &snap).map_err(capture_err(output))?;
        tick += 1;
    }
    if tick == 0 {
        return Err(TrainerError::Import {
            file: input.display().to_string(),
            at: "byte 0".into(),
            message: "no frames".into(),
        });
    }
    let bytes = w.finish()?;
    Ok(Imported { ticks: tick, bytes })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderLine<'a> {
    game: String,
    version: String,
    #[serde(default)]
    tick_rate: u32,
    #[serde(borrow)]
    schema: &'a RawValue,
}

/// Imports JSON lines (docs/guide.md, "Trainer") into `output` (refused if it is
/// `input`, or exists without `force`). Each tick with a `baseline` becomes
/// a recorded send (client 0), so real ack patterns survive. A UTF-8 byte
/// order mark before the header is skipped.
pub fn jsonl(input: &Path, output: &Path, force: bool) -> Result<Imported, TrainerError> {
    check_output(&[input], output, force)?;
    let f = File::open(input).map_err(|e| TrainerError::io(input, e))?;
    let mut r = BufReader::new(f);
    let file = input.display().to_string();
    let err = |line: usize, message: String| TrainerError::Import {
        file: file.clone(),
        at: format!("line {line}"),
        message,
    };
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    let mut next_line = |buf: &mut Vec<u8>| -> Result<Option<usize>, TrainerError> {
        loop {
            buf.clear();
            let n = (&mut r)
                .take(MAX_JSONL_LINE as u64 + 1)
                .read_until(b'\n', buf)
                .map_err(|e| TrainerError::io(input, e))?;
            if n == 0 {
                return Ok(None);
            }
            line_no += 1;
            if buf.len() > MAX_JSONL_LINE {
                return Err(TrainerError::Import {
                    file: input.display().to_string(),
                    at: format!("line {line_no}"),
                    message: format!("line longer than {MAX_JSONL_LINE} bytes"),
                });
            }
            if line_no == 1 && buf.starts_with(BOM) {
                buf.drain(..BOM.len());
            }
            if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                return Ok(Some(line_no));
            }
        }
    };

    let Some(n) = next_line(&mut buf)? else {
        return Err(err(
            1,
            "empty input: the first line must be the header".into(),
        ));
    };
    let h: HeaderLine = serde_json::from_slice(&buf)
        .map_err(|e| err(n, format!("header line: {}", explain(&buf, &e))))?;
    let schema =
        Schema::from_json(h.schema.get()).map_err(|e| err(n, format!("header schema: {e}")))?;
    let header = CaptureHeader::new(&h.game, &h.version, h.tick_rate, schema.clone());
    let mut w = create_capture(&[input], output, force, &header)?;
    let max_entities = CaptureLimits::default().decoder.max_entities_per_section;
    let mut prev: Option<u64> = None;
    let mut ticks = 0u64;
    while let Some(n) = next_line(&mut buf)? {
        let mut t = parse_tick(&buf, &schema, max_entities)
            .map_err(|m| err(n, format!("tick line: {m}")))?;
        // A schema that declares quantisation gets the values its server
        // would have sent (unchanged if they already are quantised).
        schema
            .quantize(&mut t.snapshot)
            .map_err(|e| err(n, format!("tick line: {e}")))?;
        if prev.is_some_and(|p| t.tick <= p) {
            return Err(err(
                n,
                format!("tick {} does not follow tick {}", t.tick, prev.unwrap_or(0)),
            ));
        }
        w.writer
            .tick(t.tick, &t.snapshot)
            .map_err(capture_err(output))?;
        if let Some(b) = t.baseline {
            if let Some(b) = b {
                if b >= t.tick || t.tick - b > u64::from(tickpack::MAX_BASELINE_DISTANCE) {
                    return Err(err(
                        n,
                        format!("baseline {b} is not 1..=32767 ticks before tick {}", t.tick),
                    ));
                }
            }
            let sent = SentRecord {
                client: 0,
                sequence: t.tick as u16,
                baseline: b.map(|b| b as u16),
                prior: None,
                bytes: 0,
            };
            w.writer.sent(&sent).map_err(capture_err(output))?;
        }
        prev = Some(t.tick);
        ticks += 1;
    }
    let bytes = w.finish()?;
    Ok(Imported { ticks, bytes })
}
