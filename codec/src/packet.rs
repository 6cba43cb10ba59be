//! The packet header.
//!
//! ```text
//! offset  size  field
//! 0       1     version (bits 0-3) | flags (bits 4-7)
//!                 bit 4 BASELINE    a baseline distance follows
//!                 bit 5 DICTIONARY  a dictionary id follows
//!                 bit 6 CHECKSUM    a checksum follows
//!                 bit 7 PRIOR       a prior baseline distance follows (needs BASELINE)
//! 1       4     schema id, u32 LE
//! 5       2     sequence, u16 LE
//! 7       1-3   baseline distance, varint, 1..=32767 (if BASELINE)
//! ..      1-3   prior distance from the baseline, varint, 1..=32767 (if PRIOR)
//! ..      4     dictionary id, u32 LE (if DICTIONARY)
//! ..      2     checksum of the decoded snapshot, u16 LE (if CHECKSUM)
//! ```

#![forbid(unsafe_code)]

use crate::error::DecodeError;
use crate::wire::{put_varint, Reader};

/// The wire format version this crate writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// Largest baseline distance (half the sequence space, so wrapping
/// comparisons stay unambiguous).
pub const MAX_BASELINE_DISTANCE: u16 = 0x7fff;
/// Largest header size.
pub const MAX_HEADER_LEN: usize = 1 + 4 + 2 + 3 + 3 + 4 + 2;

const FLAG_BASELINE: u8 = 0x10;
const FLAG_DICTIONARY: u8 = 0x20;
const FLAG_CHECKSUM: u8 = 0x40;
const FLAG_PRIOR: u8 = 0x80;

/// A parsed packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketHeader {
    /// Schema id of the sender.
    pub schema_id: u32,
    /// Sequence of this snapshot.
    pub sequence: u16,
    /// Sequence of the baseline it is a delta against, if any.
    pub baseline: Option<u16>,
    /// Sequence of the older baseline that, with `baseline`, predicts the
    /// fields coded with [`DeltaOp::Predict`](crate::DeltaOp::Predict).
    /// Only with a baseline.
    pub prior: Option<u16>,
    /// Dictionary the blocks were compressed with, if any.
    pub dictionary: Option<u32>,
    /// Checksum of the snapshot the packet decodes to, if sent
    /// (see [`Snapshot::checksum`](crate::Snapshot::checksum)).
    pub checksum: Option<u16>,
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
        let version = b0 & 0x0f;
        if version != FORMAT_VERSION {
            return Err(DecodeError::UnsupportedVersion { version });
        }
        let flags = b0 & 0xf0;
        if flags & FLAG_PRIOR != 0 && flags & FLAG_BASELINE == 0 {
            return Err(DecodeError::ReservedBits { flags });
        }
        let schema_id = r.u32_le()?;
        let sequence = r.u16_le()?;
        let baseline = if flags & FLAG_BASELINE != 0 {
            let start = r.pos();
            let d = r.varint()?;
            if d == 0 {
                return Err(DecodeError::BadBaselineDistance);
            }
            if d > u32::from(MAX_BASELINE_DISTANCE) {
                return Err(DecodeError::BadVarint { offset: start });
            }
            Some(sequence.wrapping_sub(d as u16))
        } else {
            None
        };
        let prior = match baseline {
            Some(b) if flags & FLAG_PRIOR != 0 => {
                let start = r.pos();
                let d = r.varint()?;
                if d == 0 {
                    return Err(DecodeError::BadBaselineDistance);
                }
                // The prior must stay within half the sequence space of the packet.
                let total = u64::from(sequence.wrapping_sub(b)) + u64::from(d);
                if total > u64::from(MAX_BASELINE_DISTANCE) {
                    return Err(DecodeError::BadVarint { offset: start });
                }
                Some(b.wrapping_sub(d as u16))
            }
            _ => None,
        };
        let dictionary = if flags & FLAG_DICTIONARY != 0 {
            Some(r.u32_le()?)
        } else {
            None
        };
        let checksum = if flags & FLAG_CHECKSUM != 0 {
            Some(r.u16_le()?)
        } else {
            None
        };
        Ok(Self {
            schema_id,
            sequence,
            baseline,
            prior,
            dictionary,
            checksum,
        })
    }

    /// Distance from the baseline to this packet (1..=32767), if a delta.
    pub fn baseline_distance(&self) -> Option<u16> {
        self.baseline.map(|b| self.sequence.wrapping_sub(b))
    }

    /// Appends the header. A baseline more than 32767 sequences back (or
    /// equal to the sequence) cannot be expressed; the encoder checks that.
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut b0 = FORMAT_VERSION;
        if self.baseline.is_some() {
            b0 |= FLAG_BASELINE;
        }
        if self.dictionary.is_some() {
            b0 |= FLAG_DICTIONARY;
        }
        if self.checksum.is_some() {
            b0 |= FLAG_CHECKSUM;
        }
        let prior = self.baseline.and(self.prior);
        if prior.is_some() {
            b0 |= FLAG_PRIOR;
        }
        out.push(b0);
        out.extend_from_slice(&self.schema_id.to_le_bytes());
        out.extend_from_slice(&self.sequence.to_le_bytes());
        if let Some(d) = self.baseline_distance() {
            put_varint(out, u32::from(d));
        }
        if let (Some(b), Some(p)) = (self.baseline, prior) {
            put_varint(out, u32::from(b.wrapping_sub(p)));
        }
        if let Some(id) = self.dictionary {
            out.extend_from_slice(&id.to_le_bytes());
        }
        if let Some(c) = self.checksum {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }

    /// The seed binding a checksum to this packet's baseline and dictionary.
    pub fn checksum_seed(&self) -> u64 {
        let base = self.baseline.map_or(0x1_0000, u64::from);
        let dict = self
            .dictionary
            .map_or(0, |d| (1 << 17) | (u64::from(d) << 32));
        base | dict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn header_roundtrip(schema_id: u32, sequence: u16, dist in proptest::option::of(1u16..=0x4000), pdist in proptest::option::of(1u16..=0x3fff), dictionary: Option<u32>, checksum: Option<u16>) {
            let baseline = dist.map(|d| sequence.wrapping_sub(d));
            let prior = baseline.and_then(|b| pdist.map(|p| b.wrapping_sub(p)));
            let h = PacketHeader { schema_id, sequence, baseline, prior, dictionary, checksum };
            let mut out = Vec::new();
            h.write(&mut out);
            prop_assert!(out.len() <= MAX_HEADER_LEN);
            let (back, n) = PacketHeader::parse(&out).unwrap();
            prop_assert_eq!(back, h);
            prop_assert_eq!(n, out.len());
        }

        #[test]
        fn parse_then_write_is_identity(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            if let Ok((h, n)) = PacketHeader::parse(&bytes) {
                let mut out = Vec::new();
                h.write(&mut out);
                prop_assert_eq!(&out[..], &bytes[..n]);
            }
        }
    }

    #[test]
    fn rejects() {
        assert_eq!(
            PacketHeader::parse(&[0x02, 0, 0, 0, 0, 0, 0]),
            Err(DecodeError::UnsupportedVersion { version: 2 })
        );
        assert_eq!(
            PacketHeader::parse(&[0x81, 0, 0, 0, 0, 0, 0]),
            Err(DecodeError::ReservedBits { flags: 0x80 }),
            "PRIOR without BASELINE"
        );
        assert_eq!(
            PacketHeader::parse(&[0x91, 0, 0, 0, 0, 0, 0x40, 0xff, 0xff, 0x01, 0x02]),
            Err(DecodeError::BadVarint { offset: 10 }),
            "prior more than 32767 behind the packet"
        );
        // Found by fuzzing: a prior distance near u32::MAX must not overflow.
        assert_eq!(
            PacketHeader::parse(&[0x91, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f]),
            Err(DecodeError::BadVarint { offset: 8 })
        );
        assert_eq!(
            PacketHeader::parse(&[0x11, 0, 0, 0, 0, 5, 0, 0]),
            Err(DecodeError::BadBaselineDistance)
        );
        assert_eq!(
            PacketHeader::parse(&[0x11, 0, 0, 0, 0, 5, 0, 0x80, 0x80, 0x02]),
            Err(DecodeError::BadVarint { offset: 7 })
        );
        assert_eq!(
            PacketHeader::parse(&[0x21, 0, 0, 0, 0, 5, 0, 1, 2]),
            Err(DecodeError::Truncated {
                offset: 7,
                needed: 2
            })
        );
    }
}
