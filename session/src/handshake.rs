//! The handshake: server and client agree once per connection on the
//! schema, the dictionaries and the limits, so packets need not carry them
//! (a delta header is 3 bytes) and both ends derive the same recalls (the
//! limits decide what a recall evicts, FORMAT.md 4.7). The server sends its [`Hello`]
//! ([`Server::hello`](super::Server::hello)); the client checks it against
//! its own schema and dictionaries, agrees to them and answers with the
//! same hello ([`Client::answer`](super::Client::answer)); the server
//! connects the client only if the answer is its own hello
//! ([`Server::accept`](super::Server::accept)). A mismatch on either side
//! is a typed error at connect, not undecodable packets later.
//!
//! ```text
//! offset size field
//! 0      1    wire format version (2)
//! 1      4    schema id, u32 LE
//! 5      1    flags: bit 0 delta dictionary, bit 1 keyframe dictionary; others 0
//! 6      4    delta dictionary id, u32 LE (if bit 0)
//! ..     4    keyframe dictionary id, u32 LE (if bit 1)
//! ..     8    Limits::max_entities_per_section, u64 LE
//! ..     8    Limits::max_decoded_bytes, u64 LE
//! ..     8    Limits::max_snapshot_bytes, u64 LE
//! ```

use tickpack::wire::Reader;
use tickpack::DecodeError;
use tickpack::Limits;
use tickpack::FORMAT_VERSION;

const DELTA: u8 = 1;
const KEYFRAME: u8 = 2;

/// What the two ends of a connection agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hello {
    /// The schema id.
    pub schema_id: u32,
    /// The dictionary deltas are compressed with, if any.
    pub dictionary: Option<u32>,
    /// The dictionary keyframes are compressed with, if any.
    pub keyframe_dictionary: Option<u32>,
    /// The limits both ends encode, decode and evict recalls by.
    pub limits: Limits,
}

impl Hello {
    /// Largest encoded size.
    pub const MAX_LEN: usize = 38;

    /// Encodes the hello (30 to 38 bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::MAX_LEN);
        out.push(FORMAT_VERSION);
        out.extend_from_slice(&self.schema_id.to_le_bytes());
        let flags = if self.dictionary.is_some() { DELTA } else { 0 }
            | if self.keyframe_dictionary.is_some() {
                KEYFRAME
            } else {
                0
            };
        out.push(flags);
        for id in [self.dictionary, self.keyframe_dictionary]
            .into_iter()
            .flatten()
        {
            out.extend_from_slice(&id.to_le_bytes());
        }
        let l = &self.limits;
        for v in [
            l.max_entities_per_section,
            l.max_decoded_bytes,
            l.max_snapshot_bytes,
        ] {
            out.extend_from_slice(&(v as u64).to_le_bytes());
        }
        out
    }

    /// Parses a hello; anything malformed is a typed error.
    pub fn parse(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != FORMAT_VERSION {
            return Err(DecodeError::UnsupportedVersion { version });
        }
        let schema_id = r.u32_le()?;
        let flags = r.u8()?;
        if flags & !(DELTA | KEYFRAME) != 0 {
            return Err(DecodeError::ReservedBits { flags });
        }
        let dictionary = if flags & DELTA != 0 {
            Some(r.u32_le()?)
        } else {
            None
        };
        let keyframe_dictionary = if flags & KEYFRAME != 0 {
            Some(r.u32_le()?)
        } else {
            None
        };
        // A limit past this platform's `usize` is read as `usize::MAX`:
        // no end here has it, so the hello does not match.
        let mut limit = || -> Result<usize, DecodeError> {
            Ok(usize::try_from(r.u64_le()?).unwrap_or(usize::MAX))
        };
        let limits = Limits {
            max_entities_per_section: limit()?,
            max_decoded_bytes: limit()?,
            max_snapshot_bytes: limit()?,
        };
        if r.remaining() != 0 {
            return Err(DecodeError::TrailingBytes {
                count: r.remaining(),
            });
        }
        Ok(Self {
            schema_id,
            dictionary,
            keyframe_dictionary,
            limits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn inverse(
            schema_id: u32,
            dictionary: Option<u32>,
            keyframe_dictionary: Option<u32>,
            limits: (u32, u32, u32),
        ) {
            let limits = Limits {
                max_entities_per_section: limits.0 as usize,
                max_decoded_bytes: limits.1 as usize,
                max_snapshot_bytes: limits.2 as usize,
            };
            let h = Hello { schema_id, dictionary, keyframe_dictionary, limits };
            let b = h.to_bytes();
            prop_assert!(b.len() <= Hello::MAX_LEN);
            prop_assert_eq!(Hello::parse(&b), Ok(h));
        }

        #[test]
        fn parse_then_write_is_identity(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(h) = Hello::parse(&bytes) {
                prop_assert_eq!(h.to_bytes(), bytes);
            }
        }
    }

    #[test]
    fn rejects() {
        assert_eq!(
            Hello::parse(&[1, 0, 0, 0, 0, 0]),
            Err(DecodeError::UnsupportedVersion { version: 1 })
        );
        assert_eq!(
            Hello::parse(&[2, 0, 0, 0, 0, 0]),
            Err(DecodeError::UnsupportedVersion { version: 2 })
        );
        assert_eq!(
            Hello::parse(&[3, 0, 0, 0, 0, 4]),
            Err(DecodeError::ReservedBits { flags: 4 })
        );
        // A hello without its limits (24 bytes after the flags).
        assert!(matches!(
            Hello::parse(&[3, 0, 0, 0, 0, 0, 9]),
            Err(DecodeError::Truncated { .. })
        ));
        let mut long = vec![3, 0, 0, 0, 0, 0];
        long.extend_from_slice(&[0; 24]);
        assert!(Hello::parse(&long).is_ok());
        long.push(9);
        assert_eq!(
            Hello::parse(&long),
            Err(DecodeError::TrailingBytes { count: 1 })
        );
    }
}
