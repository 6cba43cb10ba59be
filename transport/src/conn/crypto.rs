//! The AEAD calls the connection layer makes, over RustCrypto's
//! `chacha20poly1305` (no primitive is implemented here).
//!
//! Packets use ChaCha20-Poly1305 (RFC 8439) with a 96-bit nonce made of four
//! zero bytes and the packet's 64-bit sequence, little-endian; connect tokens
//! use XChaCha20-Poly1305 with a random 192-bit nonce.

use chacha20poly1305::aead::rand_core::RngCore;
use chacha20poly1305::aead::{AeadInPlace, KeyInit, OsRng};
use chacha20poly1305::{ChaCha20Poly1305, Nonce, Tag, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use sha2::Sha256;

use super::ConnError;

/// Bytes of a key.
pub const KEY_BYTES: usize = 32;
/// Bytes of the authentication tag every sealed message carries.
pub const TAG_BYTES: usize = 16;
/// Bytes of a connect token's nonce.
pub(crate) const XNONCE_BYTES: usize = 24;

/// A 256-bit symmetric key: the backend's private key, or one direction's
/// packet key of one connection.
///
/// `Debug` prints no key material.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; KEY_BYTES]);

impl Key {
    /// A key from the operating system's random number generator.
    pub fn generate() -> Result<Self, ConnError> {
        let mut bytes = [0u8; KEY_BYTES];
        fill_random(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// A key from its 32 bytes (for example the backend's private key read
    /// from its configuration).
    pub const fn from_bytes(bytes: [u8; KEY_BYTES]) -> Self {
        Self(bytes)
    }

    /// The key's 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; KEY_BYTES] {
        &self.0
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

/// Bytes of the random nonce a server picks for each connection.
pub(crate) const SERVER_NONCE_BYTES: usize = 32;

/// One direction's packet key of one connection: HKDF-SHA256 (RFC 5869,
/// RustCrypto's `hkdf`) of the token's key for that direction, salted with
/// the server's nonce for this connection, so that two connections under
/// one token (on two servers, or one after the other) never share a key,
/// and so never a key and nonce.
pub(crate) fn connection_key(
    token_key: &Key,
    server_nonce: &[u8; SERVER_NONCE_BYTES],
    label: &[u8; 3],
) -> Result<Key, ConnError> {
    let mut info = [0u8; 8 + 3];
    info[..8].copy_from_slice(&super::VERSION);
    info[8..].copy_from_slice(label);
    let mut out = [0u8; KEY_BYTES];
    // 32 bytes is far below HKDF-SHA256's 8,160-byte limit, so this cannot
    // fail; the error is mapped rather than unwrapped.
    Hkdf::<Sha256>::new(Some(server_nonce), &token_key.0)
        .expand(&info, &mut out)
        .map_err(|_| ConnError::Seal)?;
    Ok(Key(out))
}

/// Fills `out` from the operating system's random number generator.
pub(crate) fn fill_random(out: &mut [u8]) -> Result<(), ConnError> {
    OsRng.try_fill_bytes(out).map_err(|_| ConnError::Random)
}

fn packet_nonce(sequence: u64) -> Nonce {
    let mut nonce = [0u8; 12];
    nonce[4..].copy_from_slice(&sequence.to_le_bytes());
    Nonce::from(nonce)
}

/// One key set up as a ChaCha20-Poly1305 cipher once, for every packet of
/// a direction (or the server's challenge tokens).
#[derive(Clone)]
pub(crate) struct PacketKey(ChaCha20Poly1305);

impl PacketKey {
    pub(crate) fn new(key: &Key) -> Self {
        Self(ChaCha20Poly1305::new(&key.0.into()))
    }

    /// Encrypts `buf` in place with the nonce for `sequence` and returns
    /// the tag to append.
    pub(crate) fn seal(
        &self,
        sequence: u64,
        aad: &[u8],
        buf: &mut [u8],
    ) -> Result<[u8; TAG_BYTES], ConnError> {
        let tag = self
            .0
            .encrypt_in_place_detached(&packet_nonce(sequence), aad, buf)
            .map_err(|_| ConnError::Seal)?;
        Ok(tag.into())
    }

    /// Checks `tag` and decrypts `buf` in place; on failure `buf` must not
    /// be used.
    pub(crate) fn open(
        &self,
        sequence: u64,
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8; TAG_BYTES],
    ) -> Result<(), ConnError> {
        self.0
            .decrypt_in_place_detached(&packet_nonce(sequence), aad, buf, Tag::from_slice(tag))
            .map_err(|_| ConnError::Forged)
    }
}

impl std::fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PacketKey(..)")
    }
}

/// Seals `buf` in place with XChaCha20-Poly1305 and an explicit 192-bit
/// nonce; returns the tag.
pub(crate) fn seal_x(
    key: &Key,
    nonce: &[u8; XNONCE_BYTES],
    aad: &[u8],
    buf: &mut [u8],
) -> Result<[u8; TAG_BYTES], ConnError> {
    let cipher = XChaCha20Poly1305::new(&key.0.into());
    let tag = cipher
        .encrypt_in_place_detached(XNonce::from_slice(nonce), aad, buf)
        .map_err(|_| ConnError::Seal)?;
    Ok(tag.into())
}

/// Opens `buf` in place with XChaCha20-Poly1305 and an explicit 192-bit
/// nonce.
pub(crate) fn open_x(
    key: &Key,
    nonce: &[u8; XNONCE_BYTES],
    aad: &[u8],
    buf: &mut [u8],
    tag: &[u8; TAG_BYTES],
) -> Result<(), ConnError> {
    let cipher = XChaCha20Poly1305::new(&key.0.into());
    cipher
        .decrypt_in_place_detached(XNonce::from_slice(nonce), aad, buf, Tag::from_slice(tag))
        .map_err(|_| ConnError::Forged)
}
