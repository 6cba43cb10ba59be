//! Constants and byte-level helpers of the capture format (CAPTURE.md).

/// The 8 bytes every capture starts with: `\x89 T P C \r \n \x1a \n`.
pub const MAGIC: [u8; 8] = [0x89, b'T', b'P', b'C', b'\r', b'\n', 0x1a, b'\n'];

/// The capture format version this crate writes (it reads 1 as well).
pub const CAPTURE_VERSION: u8 = 2;
/// Captures of this version hold packets in the header layout before
/// format 3's short distances and `MODEL` flag (CAPTURE.md, 3.1).
pub(crate) const CAPTURE_VERSION_OLD_HEADERS: u8 = 1;

/// Bytes before the header body: magic, version, flags, body length.
pub(crate) const PREAMBLE_LEN: usize = 14;

/// Record kinds (CAPTURE.md, section 4).
pub(crate) const KIND_TICK: u8 = 1;
pub(crate) const KIND_SENT: u8 = 2;
pub(crate) const KIND_END: u8 = 3;
/// Kinds from here up are extensions a reader skips.
pub(crate) const KIND_EXTENSION: u8 = 0x80;

/// `SENT` flag bit 0: a baseline sequence follows.
pub(crate) const SENT_BASELINE: u8 = 0x01;
/// `SENT` flag bit 1: a prior baseline sequence follows (needs bit 0).
pub(crate) const SENT_PRIOR: u8 = 0x02;

/// The record checksum: the low 32 bits of xxh3-64 (seed 0).
pub(crate) fn checksum(parts: &[&[u8]]) -> u32 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in parts {
        h.update(p);
    }
    h.digest() as u32
}

/// Appends `v` as a minimal unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Why a varint was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The bytes ran out inside it.
    Truncated,
    /// Too long, not minimal, or above the maximum.
    Malformed,
}

/// Reads a minimal varint of at most `max` from `data` at `*pos`.
pub(crate) fn get_varint(data: &[u8], pos: &mut usize, max: u64) -> Result<u64, VarintError> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *data.get(*pos + i).ok_or(VarintError::Truncated)?;
        let group = u64::from(b & 0x7f);
        if i == 9 && group > 1 {
            return Err(VarintError::Malformed);
        }
        v |= group << (7 * i);
        if b & 0x80 == 0 {
            if i > 0 && group == 0 {
                return Err(VarintError::Malformed);
            }
            if v > max {
                return Err(VarintError::Malformed);
            }
            *pos += i + 1;
            return Ok(v);
        }
    }
    Err(VarintError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_roundtrip_and_reject_padding() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut pos = 0;
            assert_eq!(get_varint(&out, &mut pos, u64::MAX), Ok(v));
            assert_eq!(pos, out.len());
        }
        let mut pos = 0;
        assert_eq!(
            get_varint(&[0x80, 0x00], &mut pos, u64::MAX),
            Err(VarintError::Malformed)
        );
        assert_eq!(
            get_varint(&[0x80], &mut pos, u64::MAX),
            Err(VarintError::Truncated)
        );
        assert_eq!(
            get_varint(
                &[0xff, 0xff, 0xff, 0xff, 0x10],
                &mut pos,
                u64::from(u32::MAX)
            ),
            Err(VarintError::Malformed)
        );
        assert_eq!(
            get_varint(&[0xff; 10], &mut pos, u64::MAX),
            Err(VarintError::Malformed)
        );
    }
}
