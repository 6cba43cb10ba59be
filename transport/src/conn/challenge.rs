//! The server's challenge token: what the server needs to give a client a
//! slot, sealed under a key only the server knows and bound to the address
//! the challenge went to, so the server keeps no state per challenge and
//! only an echo from that address opens it.

use std::net::{IpAddr, SocketAddr};

use super::crypto::{Key, PacketKey, SERVER_NONCE_BYTES, TAG_BYTES};
use super::packet::{CHALLENGE_PLAIN_BYTES, CHALLENGE_TOKEN_BYTES};
use super::token::{PrivateToken, Reader, TOKEN_HEAD_BYTES};
use super::{ConnError, VERSION};

/// What a challenge token carries.
#[derive(Debug, Clone)]
pub(crate) struct Challenge {
    pub(crate) private: PrivateToken,
    /// Seconds since the Unix epoch after which the echo is refused.
    pub(crate) expires_at: u64,
    /// The connect token's expiry (how long it is remembered as used).
    pub(crate) token_expires_at: u64,
    /// The server's nonce of the connection this challenge starts.
    pub(crate) server_nonce: [u8; SERVER_NONCE_BYTES],
}

/// Seals and opens challenge tokens.
#[derive(Debug)]
pub(crate) struct Challenger {
    key: PacketKey,
    sequence: u64,
}

impl Challenger {
    /// A challenger with a fresh random key.
    pub(crate) fn new() -> Result<Self, ConnError> {
        Ok(Self {
            key: PacketKey::new(&Key::generate()?),
            sequence: 0,
        })
    }

    /// Seals `challenge` for a challenge sent to `to`.
    pub(crate) fn seal(
        &mut self,
        challenge: &Challenge,
        protocol_id: u64,
        to: SocketAddr,
    ) -> Result<[u8; CHALLENGE_TOKEN_BYTES], ConnError> {
        let sequence = self.sequence;
        self.sequence += 1;
        let mut plain = [0u8; CHALLENGE_PLAIN_BYTES];
        let mut head = [0u8; TOKEN_HEAD_BYTES];
        challenge.private.write(&mut head);
        let (h, rest) = plain.split_at_mut(TOKEN_HEAD_BYTES);
        h.copy_from_slice(&head);
        rest[..8].copy_from_slice(&challenge.expires_at.to_le_bytes());
        rest[8..16].copy_from_slice(&challenge.token_expires_at.to_le_bytes());
        rest[16..].copy_from_slice(&challenge.server_nonce);
        let aad = ChallengeAad::new(protocol_id, to);
        let tag = self.key.seal(sequence, aad.as_slice(), &mut plain)?;
        let mut token = [0u8; CHALLENGE_TOKEN_BYTES];
        token[..8].copy_from_slice(&sequence.to_le_bytes());
        token[8..8 + CHALLENGE_PLAIN_BYTES].copy_from_slice(&plain);
        token[8 + CHALLENGE_PLAIN_BYTES..].copy_from_slice(&tag);
        Ok(token)
    }

    /// Opens a challenge token echoed from `from`.
    pub(crate) fn open(
        &self,
        token: &[u8; CHALLENGE_TOKEN_BYTES],
        protocol_id: u64,
        from: SocketAddr,
    ) -> Result<Challenge, ConnError> {
        let mut r = Reader(token);
        let sequence = u64::from_le_bytes(r.array());
        let mut plain: [u8; CHALLENGE_PLAIN_BYTES] = r.array();
        let tag: [u8; TAG_BYTES] = r.array();
        // Sealed with the address the challenge went to: an echo from
        // anywhere else (a copy, or the token's holder spoofing a victim's
        // address) fails here and gets nothing.
        let aad = ChallengeAad::new(protocol_id, from);
        self.key.open(sequence, aad.as_slice(), &mut plain, &tag)?;
        let mut r = Reader(&plain);
        Ok(Challenge {
            private: PrivateToken::read(&r.array()),
            expires_at: u64::from_le_bytes(r.array()),
            token_expires_at: u64::from_le_bytes(r.array()),
            server_nonce: r.array(),
        })
    }
}

/// The additional data of a challenge token: version, protocol id, and
/// the address the challenge was sent to (family, port, IP), on the stack.
struct ChallengeAad {
    bytes: [u8; 16 + 1 + 2 + 16],
    len: usize,
}

impl ChallengeAad {
    fn new(protocol_id: u64, to: SocketAddr) -> Self {
        let mut bytes = [0u8; 16 + 1 + 2 + 16];
        bytes[..8].copy_from_slice(&VERSION);
        bytes[8..16].copy_from_slice(&protocol_id.to_le_bytes());
        bytes[17..19].copy_from_slice(&to.port().to_le_bytes());
        let len = match to.ip() {
            IpAddr::V4(ip) => {
                bytes[16] = 4;
                bytes[19..23].copy_from_slice(&ip.octets());
                23
            }
            IpAddr::V6(ip) => {
                bytes[16] = 6;
                bytes[19..35].copy_from_slice(&ip.octets());
                35
            }
        };
        Self { bytes, len }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}
