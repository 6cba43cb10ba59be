//! The raw snapshot: what a naive sender puts on the wire, and what plain
//! zstd frames compress in the report and in the trainer's `eval`. Per
//! section, in schema order: the entity count (`u32`), the ids (`u32`
//! each), then the records, all little-endian.

use core::fmt;

use tickpack::{Schema, Section, Snapshot, SnapshotError};

/// Writes `s` in the raw form into `out` (cleared first).
pub fn write(s: &Snapshot, out: &mut Vec<u8>) {
    out.clear();
    for sec in s.sections() {
        out.extend_from_slice(&(sec.len() as u32).to_le_bytes());
        for id in sec.ids() {
            out.extend_from_slice(&id.to_le_bytes());
        }
        out.extend_from_slice(sec.records());
    }
}

/// Bytes that are not a raw snapshot of the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RawError {
    /// The bytes end inside this section.
    Truncated {
        /// Section index.
        section: usize,
    },
    /// Bytes are left after the last section.
    Trailing {
        /// How many.
        len: usize,
    },
    /// The ids or records do not make a valid snapshot.
    Snapshot(SnapshotError),
}

impl fmt::Display for RawError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { section } => write!(f, "raw snapshot truncated in section {section}"),
            Self::Trailing { len } => write!(f, "{len} bytes after the raw snapshot"),
            Self::Snapshot(e) => write!(f, "raw snapshot: {e}"),
        }
    }
}

impl std::error::Error for RawError {}

/// Reads a raw snapshot of `schema` (the inverse of [`write`](fn@write)).
pub fn parse(schema: &Schema, mut b: &[u8]) -> Result<Snapshot, RawError> {
    let mut sections = Vec::with_capacity(schema.sections().len());
    for (section, e) in schema.sections().iter().enumerate() {
        let truncated = RawError::Truncated { section };
        let (n, rest) = b.split_first_chunk::<4>().ok_or(truncated.clone())?;
        let n = u32::from_le_bytes(*n) as usize;
        let rs = e.record_size();
        let ids_len = n.checked_mul(4).ok_or(truncated.clone())?;
        let need = n
            .checked_mul(rs)
            .and_then(|r| r.checked_add(ids_len))
            .ok_or(truncated.clone())?;
        let (body, rest) = rest.split_at_checked(need).ok_or(truncated)?;
        let (ids, recs) = body.split_at(ids_len);
        let ids = ids
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        sections.push(Section::from_parts(ids, recs.to_vec(), rs).map_err(RawError::Snapshot)?);
        b = rest;
    }
    if !b.is_empty() {
        return Err(RawError::Trailing { len: b.len() });
    }
    Snapshot::from_sections(schema, sections).map_err(RawError::Snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_damage() {
        let sc = crate::arena_shooter(2, 3);
        let mut v = Vec::new();
        write(&sc.ticks[2], &mut v);
        assert_eq!(parse(&sc.schema, &v), Ok(sc.ticks[2].clone()));
        assert!(matches!(
            parse(&sc.schema, &v[..v.len() - 1]),
            Err(RawError::Truncated { .. })
        ));
        v.push(0);
        assert_eq!(parse(&sc.schema, &v), Err(RawError::Trailing { len: 1 }));
        assert!(parse(&sc.schema, &[0xff; 4]).is_err());
    }
}
