//! The packet header (FORMAT.md, 3.1).
//!
//! ```text
//! offset  size  field
//! 0       1     flags (bits 4-7); bits 0-3: the version (3) on a keyframe,
//!               a delta's baseline distance if 1..=15 (else 0 and a varint)
//!                 bit 4 BASELINE    a delta: a baseline distance follows
//!                 bit 5 DICTIONARY  blocks use the dictionary agreed for the packet's kind
//!                 bit 6 MODEL       the payload is one model block, without a block header
//!                 bit 7 EXTENDED    an extension byte follows the sequence
//! 1       2     sequence, u16 LE
//! 3       1     extension (if EXTENDED): bits 0-1 checksum length (0, 1, 2),
//!               bit 2 PRIOR (deltas only), bits 3-7 the prior distance
//!               if 1..=31 (else 0 and a varint)
//! ..      4     schema id, u32 LE (keyframes: no BASELINE)
//! ..      4     dictionary id, u32 LE (keyframes with DICTIONARY)
//! ..      1-3   baseline distance, varint, 16..=32767 (deltas, if not in byte 0)
//! ..      1-3   prior distance from the baseline, varint, >= 32 (if PRIOR and not in the extension)
//! ..      1-2   checksum of the decoded snapshot, LE (if checksum length > 0)
//! ```
//!
//! A typical delta is 3 bytes: flags with the distance, and the sequence.

use crate::error::DecodeError;
use crate::wire::{put_varint, Reader};

/// The wire format version this crate writes and reads.
pub const FORMAT_VERSION: u8 = 3;
/// Largest baseline distance (half the sequence space, so wrapping
/// comparisons stay unambiguous).
pub const MAX_BASELINE_DISTANCE: u16 = 0x7fff;
/// Largest header size.
pub const MAX_HEADER_LEN: usize = 1 + 2 + 1 + 4 + 4 + 3 + 3 + 2;

const FLAG_BASELINE: u8 = 0x10;
const FLAG_DICTIONARY: u8 = 0x20;
/// The payload is one model block whose block header is left out (FORMAT.md
/// 3.1): the encoder sets it once it knows which coder won.
pub(crate) const FLAG_MODEL: u8 = 0x40;
const FLAG_EXTENDED: u8 = 0x80;
const EXT_CHECKSUM: u8 = 0x03;
const EXT_PRIOR: u8 = 0x04;
/// Extension bits 3-7: the prior distance when it is 1..=31.
const EXT_PRIOR_SHIFT: u32 = 3;

/// A distance held in `short` (a header field of `max_short` at most) when
/// not zero, else in the varint that follows, which must be above
/// `max_short` (a shorter distance has one spelling) and at most `max`.
fn short_or_varint(
    r: &mut Reader<'_>,
    short: u8,
    max_short: u8,
    max: u32,
) -> Result<u32, DecodeError> {
    if short != 0 {
        return if u32::from(short) <= max {
            Ok(u32::from(short))
        } else {
            Err(DecodeError::BadVarint { offset: r.pos() })
        };
    }
    let start = r.pos();
    let d = r.varint()?;
    if d <= u32::from(max_short) {
        return Err(DecodeError::BadBaselineDistance);
    }
    if d > max {
        return Err(DecodeError::BadVarint { offset: start });
    }
    Ok(d)
}

/// The checksum a packet carries, if any: the low 8 or 16 bits of the
/// decoded snapshot's checksum ([`Snapshot::checksum`](crate::Snapshot::checksum)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Checksum {
    /// No checksum.
    #[default]
    None,
    /// One byte.
    U8(u8),
    /// Two bytes.
    U16(u16),
}

impl Checksum {
    /// Its width in bytes (0, 1 or 2).
    pub fn width(self) -> usize {
        match self {
            Checksum::None => 0,
            Checksum::U8(_) => 1,
            Checksum::U16(_) => 2,
        }
    }

    /// Whether there is no checksum.
    pub fn is_none(self) -> bool {
        self == Checksum::None
    }

    /// The checksum of `len` bytes (0, 1 or 2; more counts as 2) of `full`.
    pub fn of_len(len: usize, full: u64) -> Self {
        match len {
            0 => Checksum::None,
            1 => Checksum::U8(full as u8),
            _ => Checksum::U16(full as u16),
        }
    }

    /// Whether `full` (a [`Snapshot::checksum`](crate::Snapshot::checksum)
    /// before truncation) agrees with this checksum.
    pub fn matches(self, full: u64) -> bool {
        self == Self::of_len(self.width(), full)
    }
}

/// The ids a packet may carry so that a decoder can check them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketIds {
    /// Schema id of the sender.
    pub schema_id: u32,
    /// Id of the dictionary the blocks use, if the packet uses one.
    pub dictionary_id: Option<u32>,
}

/// A parsed packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketHeader {
    /// Sequence of this snapshot.
    pub sequence: u16,
    /// Sequence of the baseline it is a delta against, if any.
    pub baseline: Option<u16>,
    /// Sequence of the older baseline that, with `baseline`, predicts the
    /// fields coded with [`DeltaOp::Predict`](crate::DeltaOp::Predict).
    /// Only with a baseline.
    pub prior: Option<u16>,
    /// Whether the blocks use a dictionary: the one `ids` names, or else
    /// the one agreed for the packet's kind (keyframe or delta).
    pub dictionary: bool,
    /// Whether the payload is one model block, sent without its block
    /// header (FORMAT.md 3.1, "Model block").
    pub model: bool,
    /// The schema and dictionary ids: every keyframe carries them, so a
    /// decoder with another schema says so at once; deltas never do (`None`).
    /// [`PacketHeader::write`] writes a keyframe's (zeros for `None`).
    pub ids: Option<PacketIds>,
    /// Checksum of the snapshot the packet decodes to, if sent.
    pub checksum: Checksum,
}

impl PacketHeader {
    /// Parses a header from the start of `packet`, returning it and its length.
    pub fn parse(packet: &[u8]) -> Result<(Self, usize), DecodeError> {
        let mut r = Reader::new(packet);
        let h = Self::read(&mut r)?;
        Ok((h, r.pos()))
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let b0 = r.u8()?;
        let flags = b0 & 0xf0;
        // A delta's low four bits are its baseline distance (the version
        // was checked on the keyframe its baseline descends from).
        let delta = flags & FLAG_BASELINE != 0;
        if !delta && b0 & 0x0f != FORMAT_VERSION {
            return Err(DecodeError::UnsupportedVersion { version: b0 & 0x0f });
        }
        let sequence = r.u16_le()?;
        let ext = if flags & FLAG_EXTENDED != 0 {
            let e = r.u8()?;
            // An extension byte of zero would be a second spelling of no
            // extension; a prior distance needs PRIOR.
            if e == 0
                || e & EXT_CHECKSUM == 3
                || (e & EXT_PRIOR != 0 && !delta)
                || (e & EXT_PRIOR == 0 && e >> EXT_PRIOR_SHIFT != 0)
            {
                return Err(DecodeError::ReservedBits { flags: e });
            }
            e
        } else {
            0
        };
        let dictionary = flags & FLAG_DICTIONARY != 0;
        // Every keyframe names its schema, so no other bytes decode as one;
        // deltas are decoded against a snapshot the decoder produced.
        let ids = if !delta {
            let schema_id = r.u32_le()?;
            let dictionary_id = if dictionary { Some(r.u32_le()?) } else { None };
            Some(PacketIds {
                schema_id,
                dictionary_id,
            })
        } else {
            None
        };
        let baseline = if delta {
            let d = short_or_varint(r, b0 & 0x0f, 0x0f, u32::from(MAX_BASELINE_DISTANCE))?;
            Some(sequence.wrapping_sub(d as u16))
        } else {
            None
        };
        let prior = match baseline {
            Some(b) if ext & EXT_PRIOR != 0 => {
                // The prior must stay within half the sequence space of the packet.
                let room = u32::from(MAX_BASELINE_DISTANCE - sequence.wrapping_sub(b));
                let d = short_or_varint(r, ext >> EXT_PRIOR_SHIFT, 0x1f, room)?;
                Some(b.wrapping_sub(d as u16))
            }
            _ => None,
        };
        let checksum = match ext & EXT_CHECKSUM {
            0 => Checksum::None,
            1 => Checksum::U8(r.u8()?),
            _ => Checksum::U16(r.u16_le()?),
        };
        Ok(Self {
            sequence,
            baseline,
            prior,
            dictionary,
            model: flags & FLAG_MODEL != 0,
            ids,
            checksum,
        })
    }

    /// Distance from the baseline to this packet (1..=32767), if a delta.
    pub fn baseline_distance(&self) -> Option<u16> {
        self.baseline.map(|b| self.sequence.wrapping_sub(b))
    }

    /// Appends the header. A baseline more than 32767 sequences back (or
    /// equal to the sequence) cannot be expressed; the encoder checks that.
    /// `ids` are written only on a keyframe, and their dictionary id only
    /// when `dictionary` is set.
    pub fn write(&self, out: &mut Vec<u8>) {
        let distance = self.baseline_distance();
        let prior = match (self.baseline, self.prior) {
            (Some(b), Some(p)) => Some(b.wrapping_sub(p)),
            _ => None,
        };
        let short = |d: u16, max: u8| if d <= u16::from(max) { d as u8 } else { 0 };
        let mut b0 = match distance {
            Some(d) => FLAG_BASELINE | short(d, 0x0f),
            None => FORMAT_VERSION,
        };
        let mut ext = self.checksum.width() as u8;
        if let Some(p) = prior {
            ext |= EXT_PRIOR | short(p, 0x1f) << EXT_PRIOR_SHIFT;
        }
        if self.dictionary {
            b0 |= FLAG_DICTIONARY;
        }
        if self.model {
            b0 |= FLAG_MODEL;
        }
        if ext != 0 {
            b0 |= FLAG_EXTENDED;
        }
        out.push(b0);
        out.extend_from_slice(&self.sequence.to_le_bytes());
        if ext != 0 {
            out.push(ext);
        }
        if self.baseline.is_none() {
            let ids = self.ids.unwrap_or(PacketIds {
                schema_id: 0,
                dictionary_id: None,
            });
            out.extend_from_slice(&ids.schema_id.to_le_bytes());
            if self.dictionary {
                out.extend_from_slice(&ids.dictionary_id.unwrap_or(0).to_le_bytes());
            }
        }
        if let Some(d) = distance.filter(|&d| short(d, 0x0f) == 0) {
            put_varint(out, u32::from(d));
        }
        if let Some(p) = prior.filter(|&p| short(p, 0x1f) == 0) {
            put_varint(out, u32::from(p));
        }
        match self.checksum {
            Checksum::None => {}
            Checksum::U8(c) => out.push(c),
            Checksum::U16(c) => out.extend_from_slice(&c.to_le_bytes()),
        }
    }

    /// The seed binding a checksum to what the packet was decoded against:
    /// its baseline, prior and the dictionary used (`dictionary_id`).
    pub fn checksum_seed(&self, dictionary_id: Option<u32>) -> u64 {
        let base = self.baseline.map_or(0x1_0000, u64::from);
        let dict = dictionary_id.map_or(0, |d| (1 << 17) | (u64::from(d) << 32));
        let prior = self.prior.map_or(0, |p| (u64::from(p) + 1).rotate_left(47));
        (base | dict) ^ prior
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn header_roundtrip(schema_id: u32, sequence: u16, dist in proptest::option::of(1u16..=0x4000), pdist in proptest::option::of(1u16..=0x3fff), dictionary: bool, dictionary_id: u32, model: bool, checksum in 0usize..3, sum: u16) {
            let baseline = dist.map(|d| sequence.wrapping_sub(d));
            let prior = baseline.and_then(|b| pdist.map(|p| b.wrapping_sub(p)));
            let ids = baseline.is_none().then_some(PacketIds { schema_id, dictionary_id: dictionary.then_some(dictionary_id) });
            let h = PacketHeader { sequence, baseline, prior, dictionary, model, ids, checksum: Checksum::of_len(checksum, u64::from(sum)) };
            let mut out = Vec::new();
            h.write(&mut out);
            prop_assert!(out.len() <= MAX_HEADER_LEN);
            let (back, n) = PacketHeader::parse(&out).unwrap();
            prop_assert_eq!(back, h);
            prop_assert_eq!(n, out.len());
        }

        #[test]
        fn parse_then_write_is_identity(bytes in proptest::collection::vec(any::<u8>(), 0..20)) {
            if let Ok((h, n)) = PacketHeader::parse(&bytes) {
                let mut out = Vec::new();
                h.write(&mut out);
                prop_assert_eq!(&out[..], &bytes[..n]);
            }
        }
    }

    #[test]
    fn typical_delta_is_three_bytes() {
        let h = PacketHeader {
            sequence: 0x0102,
            baseline: Some(0x00ff),
            prior: None,
            dictionary: true,
            model: true,
            ids: None,
            checksum: Checksum::None,
        };
        let mut out = Vec::new();
        h.write(&mut out);
        assert_eq!(out, [0x73, 0x02, 0x01], "distance 3 in byte 0");
        // Distance 16 and a prior 32 back take varints; 15 and 31 do not.
        let far = PacketHeader {
            baseline: Some(0x0102 - 16),
            prior: Some(0x0102 - 16 - 32),
            ..h
        };
        let mut out = Vec::new();
        far.write(&mut out);
        assert_eq!(out, [0xf0, 0x02, 0x01, 0x04, 16, 32]);
        let near = PacketHeader {
            baseline: Some(0x0102 - 15),
            prior: Some(0x0102 - 15 - 31),
            ..h
        };
        let mut out = Vec::new();
        near.write(&mut out);
        assert_eq!(out, [0xff, 0x02, 0x01, 0x04 | 31 << 3]);
    }

    #[test]
    fn rejects() {
        assert_eq!(
            PacketHeader::parse(&[0x01, 0, 0]),
            Err(DecodeError::UnsupportedVersion { version: 1 })
        );
        assert_eq!(
            PacketHeader::parse(&[0x62, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]),
            Err(DecodeError::UnsupportedVersion { version: 2 }),
            "a format-2 keyframe"
        );
        assert_eq!(
            PacketHeader::parse(&[0x83, 0, 0, 0x04]),
            Err(DecodeError::ReservedBits { flags: 0x04 }),
            "PRIOR on a keyframe"
        );
        assert_eq!(
            PacketHeader::parse(&[0x83, 0, 0, 0x03]),
            Err(DecodeError::ReservedBits { flags: 0x03 }),
            "checksum length 3"
        );
        assert_eq!(
            PacketHeader::parse(&[0x91, 0, 0, 0x08]),
            Err(DecodeError::ReservedBits { flags: 0x08 }),
            "a prior distance without PRIOR"
        );
        assert_eq!(
            PacketHeader::parse(&[0x03, 0xff, 0x7c]),
            Err(DecodeError::Truncated {
                offset: 3,
                needed: 4
            }),
            "a keyframe without the schema id"
        );
        assert_eq!(
            PacketHeader::parse(&[0x90, 0, 0x40, 0x04, 0xff, 0xff, 0x01, 0x20]),
            Err(DecodeError::BadVarint { offset: 7 }),
            "prior more than 32767 behind the packet"
        );
        assert_eq!(
            PacketHeader::parse(&[0x90, 0xff, 0x7f, 0xfc, 0xff, 0xff, 0x01]),
            Err(DecodeError::BadVarint { offset: 7 }),
            "a short prior more than 32767 behind the packet"
        );
        assert_eq!(
            PacketHeader::parse(&[0x90, 0, 0, 0x04, 0x10, 0xff, 0xff, 0xff, 0xff, 0x0f]),
            Err(DecodeError::BadVarint { offset: 5 })
        );
        assert_eq!(
            PacketHeader::parse(&[0x10, 5, 0, 0]),
            Err(DecodeError::BadBaselineDistance)
        );
        assert_eq!(
            PacketHeader::parse(&[0x10, 5, 0, 15]),
            Err(DecodeError::BadBaselineDistance),
            "distance 15 belongs in byte 0"
        );
        assert_eq!(
            PacketHeader::parse(&[0x91, 5, 0, 0x04, 31]),
            Err(DecodeError::BadBaselineDistance),
            "prior distance 31 belongs in the extension"
        );
        assert_eq!(
            PacketHeader::parse(&[0x10, 5, 0, 0x80, 0x80, 0x02]),
            Err(DecodeError::BadVarint { offset: 3 })
        );
        assert_eq!(
            PacketHeader::parse(&[0x23, 5, 0, 1, 2, 3, 4, 5]),
            Err(DecodeError::Truncated {
                offset: 7,
                needed: 3
            })
        );
    }
}
