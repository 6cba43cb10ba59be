//! The client-to-server message: the newest snapshot I applied, and
//! whether I need a full snapshot. It names no client: the connection it
//! arrives on does ([`Server::handle_message`](super::Server::handle_message)).
//!
//! ```text
//! offset size field
//! 0      1    flags: bit 0 ACK (an ack follows), bit 1 FULL (send a full snapshot); others 0
//! 1      2    ack sequence, u16 LE (if ACK)
//! ```

use tickpack::wire::Reader;
use tickpack::DecodeError;

const ACK: u8 = 1;
const FULL: u8 = 2;

/// A parsed client message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientMessage {
    /// Newest sequence applied, if any.
    pub ack: Option<u16>,
    /// The client wants a full snapshot (after a long outage or a checksum mismatch).
    pub request_full: bool,
}

impl ClientMessage {
    /// Largest encoded size.
    pub const MAX_LEN: usize = 3;

    /// Encodes the message (1 or 3 bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::MAX_LEN);
        let flags =
            if self.ack.is_some() { ACK } else { 0 } | if self.request_full { FULL } else { 0 };
        out.push(flags);
        if let Some(a) = self.ack {
            out.extend_from_slice(&a.to_le_bytes());
        }
        out
    }

    /// Parses a message; anything malformed is a typed error.
    pub fn parse(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let flags = r.u8()?;
        if flags & !(ACK | FULL) != 0 {
            return Err(DecodeError::ReservedBits { flags });
        }
        let ack = if flags & ACK != 0 {
            Some(r.u16_le()?)
        } else {
            None
        };
        if r.remaining() != 0 {
            return Err(DecodeError::TrailingBytes {
                count: r.remaining(),
            });
        }
        Ok(Self {
            ack,
            request_full: flags & FULL != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn inverse(ack: Option<u16>, request_full: bool) {
            let m = ClientMessage { ack, request_full };
            prop_assert_eq!(ClientMessage::parse(&m.to_bytes()), Ok(m));
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..8)) {
            if let Ok(m) = ClientMessage::parse(&bytes) {
                prop_assert_eq!(m.to_bytes(), bytes);
            }
        }
    }
}
