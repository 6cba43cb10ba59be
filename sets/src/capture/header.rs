//! The file header: magic, version, and the body describing the capture.

use super::error::CaptureError;
use super::format::{checksum, CAPTURE_VERSION, CAPTURE_VERSION_OLD_HEADERS, MAGIC, PREAMBLE_LEN};
use super::CaptureHeader;
use tickpack::Schema;

fn check_name(name: &str) -> Result<(), CaptureError> {
    if name.is_empty() || name.len() > 255 {
        return Err(CaptureError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// The whole header: preamble, body, checksum.
pub(crate) fn encode(h: &CaptureHeader) -> Result<Vec<u8>, CaptureError> {
    check_name(&h.game)?;
    check_name(&h.version)?;
    let mut body = Vec::new();
    body.push(h.game.len() as u8);
    body.extend_from_slice(h.game.as_bytes());
    body.push(h.version.len() as u8);
    body.extend_from_slice(h.version.as_bytes());
    body.extend_from_slice(&h.tick_rate.to_le_bytes());
    body.extend_from_slice(&h.schema.id().to_le_bytes());
    let json = h.schema.to_json();
    body.extend_from_slice(&(json.len() as u32).to_le_bytes());
    body.extend_from_slice(json.as_bytes());
    for ty in h.schema.sections() {
        let rec = ty.default_record();
        if rec.iter().all(|&b| b == 0) {
            body.push(0);
        } else {
            body.push(1);
            body.extend_from_slice(rec);
        }
    }
    // A capture must read back with the default limits: a header a default
    // reader refuses would be a file the user cannot open without knowing
    // to raise them.
    let limit = super::CaptureLimits::default().max_header_bytes;
    if body.len() > limit {
        return Err(CaptureError::HeaderTooLarge {
            len: body.len() as u64,
            limit,
        });
    }
    let mut out = Vec::with_capacity(PREAMBLE_LEN + body.len() + 4);
    out.extend_from_slice(&MAGIC);
    out.push(CAPTURE_VERSION);
    out.push(0);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    let sum = checksum(&[&out]);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// Checks the preamble; returns the body length and the capture version.
pub(crate) fn parse_preamble(
    p: &[u8; PREAMBLE_LEN],
    limit: usize,
) -> Result<(usize, u8), CaptureError> {
    if p[..8] != MAGIC {
        return Err(CaptureError::BadMagic);
    }
    if p[8] != CAPTURE_VERSION && p[8] != CAPTURE_VERSION_OLD_HEADERS {
        return Err(CaptureError::UnsupportedVersion { version: p[8] });
    }
    if p[9] != 0 {
        return Err(CaptureError::ReservedBits { flags: p[9] });
    }
    let len = u32::from_le_bytes([p[10], p[11], p[12], p[13]]);
    if len as usize > limit {
        return Err(CaptureError::HeaderTooLarge {
            len: u64::from(len),
            limit,
        });
    }
    Ok((len as usize, p[8]))
}

/// A cursor over the header body; offsets are reported from the file start.
struct Body<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Body<'a> {
    fn bad(&self, reason: &'static str) -> CaptureError {
        CaptureError::BadHeader {
            offset: (PREAMBLE_LEN + self.pos) as u64,
            reason,
        }
    }

    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CaptureError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.bad(what))?;
        let s = self.data.get(self.pos..end).ok_or_else(|| self.bad(what))?;
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, CaptureError> {
        Ok(self.bytes(1, what)?[0])
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, CaptureError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn name(&mut self, what: &'static str) -> Result<String, CaptureError> {
        let n = self.u8(what)?;
        if n == 0 {
            return Err(self.bad(what));
        }
        let at = self.pos;
        let s = self.bytes(usize::from(n), what)?;
        String::from_utf8(s.to_vec()).map_err(|_| CaptureError::BadHeader {
            offset: (PREAMBLE_LEN + at) as u64,
            reason: "name is not UTF-8",
        })
    }
}

/// Parses the header body (its checksum already verified).
pub(crate) fn parse_body(data: &[u8]) -> Result<CaptureHeader, CaptureError> {
    let mut b = Body { data, pos: 0 };
    let game = b.name("game name missing or malformed")?;
    let version = b.name("game version missing or malformed")?;
    let tick_rate = b.u32("tick rate missing")?;
    let schema_id = b.u32("schema id missing")?;
    let json_len = b.u32("schema length missing")? as usize;
    let json = b.bytes(json_len, "schema text runs past the header")?;
    let json = core::str::from_utf8(json).map_err(|_| b.bad("schema text is not UTF-8"))?;
    let plain = Schema::from_json(json).map_err(CaptureError::Schema)?;
    let mut defaults = Vec::with_capacity(plain.sections().len());
    for ty in plain.sections() {
        match b.u8("default record flag missing")? {
            0 => defaults.push(None),
            1 => defaults.push(Some(
                b.bytes(ty.record_size(), "default record runs past the header")?
                    .to_vec(),
            )),
            _ => return Err(b.bad("default record flag is not 0 or 1")),
        }
    }
    if b.pos != data.len() {
        return Err(b.bad("bytes after the last default record"));
    }
    let schema = if defaults.iter().any(Option::is_some) {
        plain
            .rebuild(|_, _| None, |s| defaults[s].clone())
            .map_err(CaptureError::Schema)?
    } else {
        plain
    };
    if schema.id() != schema_id {
        return Err(CaptureError::SchemaIdMismatch {
            expected: schema_id,
            actual: schema.id(),
        });
    }
    Ok(CaptureHeader {
        game,
        version,
        tick_rate,
        schema,
    })
}
