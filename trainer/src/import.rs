//! `import`: captures from data users already have.
//!
//! - [`fiedler`]: the 2015 networked-physics compression challenge file
//!   (`delta_data.bin`: frames of 901 cubes × 8 little-endian `i32`, no
//!   header). Entity id = cube index, tick = frame index, schema =
//!   `tickpack_scenarios::cube_schema()`.
//! - [`jsonl`]: JSON lines, documented in the README ("Trainer"): a header
//!   line with game, version and schema, then one line per tick.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use tickpack::capture::{CaptureHeader, SentRecord};
use tickpack::{Primitive, Schema, Section, Snapshot};
use tickpack_scenarios::{cube_schema, CUBE_COUNT, CUBE_FIELDS};

use crate::captures::{capture_err, create_capture, finish_capture};
use crate::TrainerError;

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
/// [`CUBE_COUNT`] × 8 little-endian `i32` and nothing else.
pub fn fiedler(
    input: &Path,
    output: &Path,
    game: &str,
    version: &str,
) -> Result<Imported, TrainerError> {
    let schema = cube_schema();
    let frame = CUBE_COUNT * CUBE_FIELDS.len() * 4;
    let mut r = BufReader::new(File::open(input).map_err(|e| TrainerError::io(input, e))?);
    let mut w = create_capture(
        output,
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
        w.tick(tick, &snap).map_err(capture_err(output))?;
        tick += 1;
    }
    if tick == 0 {
        return Err(TrainerError::Import {
            file: input.display().to_string(),
            at: "byte 0".into(),
            message: "no frames".into(),
        });
    }
    let bytes = finish_capture(output, w)?;
    Ok(Imported { ticks: tick, bytes })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderLine {
    game: String,
    version: String,
    #[serde(default)]
    tick_rate: u32,
    schema: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TickLine {
    tick: u64,
    /// Absent: no send recorded; `null`: sent whole; a tick: sent against it.
    #[serde(default, deserialize_with = "present")]
    baseline: Option<Option<u64>>,
    #[serde(default)]
    sections: BTreeMap<String, Vec<Map<String, Value>>>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(d).map(Some)
}

/// Imports JSON lines (README, "Trainer"). Each tick with a `baseline`
/// becomes a recorded send (client 0), so real ack patterns survive.
pub fn jsonl(input: &Path, output: &Path) -> Result<Imported, TrainerError> {
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
    let h: HeaderLine =
        serde_json::from_slice(&buf).map_err(|e| err(n, format!("header line: {e}")))?;
    let schema = Schema::from_json(&h.schema.to_string())
        .map_err(|e| err(n, format!("header schema: {e}")))?;
    let header = CaptureHeader::new(&h.game, &h.version, h.tick_rate, schema.clone());
    let mut w = create_capture(output, &header)?;
    let mut prev: Option<u64> = None;
    let mut ticks = 0u64;
    let mut record = Vec::new();
    while let Some(n) = next_line(&mut buf)? {
        let t: TickLine =
            serde_json::from_slice(&buf).map_err(|e| err(n, format!("tick line: {e}")))?;
        if prev.is_some_and(|p| t.tick <= p) {
            return Err(err(
                n,
                format!("tick {} does not follow tick {}", t.tick, prev.unwrap_or(0)),
            ));
        }
        let mut snap = Snapshot::new(&schema);
        for (name, entities) in &t.sections {
            let Some(s) = schema.sections().iter().position(|ty| ty.name() == name) else {
                return Err(err(n, format!("unknown entity type `{name}`")));
            };
            let ty = &schema.sections()[s];
            let mut rows: Vec<(u32, Vec<u8>)> = Vec::with_capacity(entities.len());
            for e in entities {
                let id = e
                    .get("id")
                    .and_then(Value::as_u64)
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| err(n, format!("`{name}` entity without a u32 `id`")))?;
                record.clear();
                record.resize(ty.record_size(), 0);
                for (key, _) in e.iter().filter(|(k, _)| k.as_str() != "id") {
                    if !ty.fields().iter().any(|f| &f.name == key) {
                        return Err(err(n, format!("`{name}` has no field `{key}`")));
                    }
                }
                for (f, &off) in ty.fields().iter().zip(ty.offsets()) {
                    let v = e.get(&f.name).ok_or_else(|| {
                        err(n, format!("`{name}` entity {id} lacks field `{}`", f.name))
                    })?;
                    let items: Vec<&Value> = match (f.len, v) {
                        (1, Value::Array(_)) => {
                            return Err(err(n, format!("field `{}` is a scalar", f.name)))
                        }
                        (1, v) => vec![v],
                        (len, Value::Array(a)) if a.len() == len => a.iter().collect(),
                        (len, _) => {
                            return Err(err(
                                n,
                                format!("field `{}` needs an array of {len} values", f.name),
                            ))
                        }
                    };
                    let size = f.ty.size();
                    for (i, item) in items.into_iter().enumerate() {
                        let at = off + i * size;
                        put_value(f.ty, item, &mut record[at..at + size])
                            .map_err(|m| err(n, format!("entity {id}, field `{}`: {m}", f.name)))?;
                    }
                }
                rows.push((id, record.clone()));
            }
            rows.sort_by_key(|r| r.0);
            if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(err(
                    n,
                    format!("entity {} appears twice in `{name}`", w[0].0),
                ));
            }
            let sec = snap
                .section_mut(s)
                .ok_or_else(|| err(n, "section index".into()))?;
            for (id, rec) in rows {
                sec.insert(id, &rec)
                    .map_err(|e| err(n, format!("entity {id}: {e}")))?;
            }
        }
        w.tick(t.tick, &snap).map_err(capture_err(output))?;
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
            w.sent(&sent).map_err(capture_err(output))?;
        }
        prev = Some(t.tick);
        ticks += 1;
    }
    let bytes = finish_capture(output, w)?;
    Ok(Imported { ticks, bytes })
}

/// Writes one element of type `ty` from a JSON value: integers in range
/// for integer types; numbers or `{"bits": N}` for floats.
fn put_value(ty: Primitive, v: &Value, out: &mut [u8]) -> Result<(), String> {
    let int = || -> Result<i128, String> {
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
            .ok_or_else(|| format!("expected an integer, got {v}"))
    };
    let range = |x: i128, lo: i128, hi: i128| -> Result<i128, String> {
        if (lo..=hi).contains(&x) {
            Ok(x)
        } else {
            Err(format!("{x} is out of range for {ty:?}"))
        }
    };
    let bits = || -> Option<u64> {
        let o = v.as_object()?;
        if o.len() != 1 {
            return None;
        }
        o.get("bits")?.as_u64()
    };
    match ty {
        Primitive::U8 => out.copy_from_slice(&[range(int()?, 0, 255)? as u8]),
        Primitive::I8 => out.copy_from_slice(&(range(int()?, -128, 127)? as i8).to_le_bytes()),
        Primitive::U16 => {
            out.copy_from_slice(&(range(int()?, 0, u16::MAX.into())? as u16).to_le_bytes())
        }
        Primitive::I16 => out.copy_from_slice(
            &(range(int()?, i16::MIN.into(), i16::MAX.into())? as i16).to_le_bytes(),
        ),
        Primitive::U32 => {
            out.copy_from_slice(&(range(int()?, 0, u32::MAX.into())? as u32).to_le_bytes())
        }
        Primitive::I32 => out.copy_from_slice(
            &(range(int()?, i32::MIN.into(), i32::MAX.into())? as i32).to_le_bytes(),
        ),
        Primitive::U64 => {
            out.copy_from_slice(&(range(int()?, 0, u64::MAX.into())? as u64).to_le_bytes())
        }
        Primitive::I64 => out.copy_from_slice(
            &(range(int()?, i64::MIN.into(), i64::MAX.into())? as i64).to_le_bytes(),
        ),
        Primitive::F32 => {
            let x = match (v.as_f64(), bits()) {
                (Some(x), _) => x as f32,
                (None, Some(b)) => f32::from_bits(
                    u32::try_from(b).map_err(|_| format!("bits {b} do not fit an f32"))?,
                ),
                _ => return Err(format!("expected a number or {{\"bits\": N}}, got {v}")),
            };
            out.copy_from_slice(&x.to_le_bytes());
        }
        Primitive::F64 => {
            let x = match (v.as_f64(), bits()) {
                (Some(x), _) => x,
                (None, Some(b)) => f64::from_bits(b),
                _ => return Err(format!("expected a number or {{\"bits\": N}}, got {v}")),
            };
            out.copy_from_slice(&x.to_le_bytes());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_range_checked_and_floats_take_bits() {
        let mut b = [0u8; 4];
        put_value(
            Primitive::F32,
            &serde_json::json!({"bits": 0x7fc0_0001u32}),
            &mut b,
        )
        .unwrap();
        assert_eq!(u32::from_le_bytes(b), 0x7fc0_0001);
        put_value(Primitive::F32, &serde_json::json!(-2.5), &mut b).unwrap();
        assert_eq!(f32::from_le_bytes(b), -2.5);
        put_value(Primitive::I32, &serde_json::json!(-7), &mut b).unwrap();
        assert_eq!(i32::from_le_bytes(b), -7);
        assert!(put_value(Primitive::I32, &serde_json::json!(1.5), &mut b).is_err());
        assert!(put_value(Primitive::U32, &serde_json::json!(-1), &mut b).is_err());
        let mut one = [0u8; 1];
        assert!(put_value(Primitive::U8, &serde_json::json!(256), &mut one).is_err());
        assert!(put_value(
            Primitive::F32,
            &serde_json::json!({"bits": 1u64 << 33}),
            &mut b
        )
        .is_err());
    }
}
