//! The server's challenge token: what the server needs to give a client a
//! slot, sealed under a key only the server knows, with the address the
//! challenge went to (the address the client proved it receives at), so the
//! server keeps no state per challenge. An echo opens from anywhere: a
//! client whose NAT rebinds between its challenge and its welcome still
//! gets its slot, at the challenged address, and its welcome at the new
//! one; only a path check moves the connection there.

use std::net::SocketAddr;

use super::crypto::{Key, PacketKey, SERVER_NONCE_BYTES, TAG_BYTES};
use super::packet::{CHALLENGE_PLAIN_BYTES, CHALLENGE_TOKEN_BYTES};
use super::token::{read_address, write_address, PrivateToken, Reader, TOKEN_HEAD_BYTES};
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
    /// Where the challenge was sent: the client receives there.
    pub(crate) to: SocketAddr,
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

    /// Seals `challenge`.
    pub(crate) fn seal(
        &mut self,
        challenge: &Challenge,
        protocol_id: u64,
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
        let (nonce, to) = rest[16..].split_at_mut(SERVER_NONCE_BYTES);
        nonce.copy_from_slice(&challenge.server_nonce);
        to.copy_from_slice(&write_address(challenge.to));
        let tag = self.key.seal(sequence, &aad(protocol_id), &mut plain)?;
        let mut token = [0u8; CHALLENGE_TOKEN_BYTES];
        token[..8].copy_from_slice(&sequence.to_le_bytes());
        token[8..8 + CHALLENGE_PLAIN_BYTES].copy_from_slice(&plain);
        token[8 + CHALLENGE_PLAIN_BYTES..].copy_from_slice(&tag);
        Ok(token)
    }

    /// Opens an echoed challenge token.
    pub(crate) fn open(
        &self,
        token: &[u8; CHALLENGE_TOKEN_BYTES],
        protocol_id: u64,
    ) -> Result<Challenge, ConnError> {
        let mut r = Reader(token);
        let sequence = u64::from_le_bytes(r.array());
        let mut plain: [u8; CHALLENGE_PLAIN_BYTES] = r.array();
        let tag: [u8; TAG_BYTES] = r.array();
        self.key
            .open(sequence, &aad(protocol_id), &mut plain, &tag)?;
        let mut r = Reader(&plain);
        Ok(Challenge {
            private: PrivateToken::read(&r.array()),
            expires_at: u64::from_le_bytes(r.array()),
            token_expires_at: u64::from_le_bytes(r.array()),
            server_nonce: r.array(),
            // Only this server writes the family: an unknown one is a bug.
            to: read_address(&r.array()).ok_or(ConnError::Forged)?,
        })
    }
}

/// The additional data of a challenge token: version and protocol id.
fn aad(protocol_id: u64) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&VERSION);
    bytes[8..].copy_from_slice(&protocol_id.to_le_bytes());
    bytes
}
