//! The datagram formats of the connection layer (all integers
//! little-endian). Byte 0's low four bits are the packet kind.
//!
//! | kind | name | layout | bytes |
//! |---|---|---|---|
//! | 0 | request | kind, version (8), protocol id (8), token expiry (8), token nonce (24), sealed private token (169), request nonce (8), zero padding | 256 |
//! | 1 | challenge | kind, nonce (24), XChaCha-sealed: request nonce (8), server nonce (32), challenge token (167) | 248 |
//! | 2 | response | kind, challenge token (167) | 168 |
//! | 3 | denied | kind, nonce (24), XChaCha-sealed: the request nonce or the first 8 bytes of the server nonce it answers | 49 |
//! | 4 | keep-alive | connected header, sealed body (server: slot u16, max clients u16; client: empty) | |
//! | 5 | payload | connected header, sealed payload (1 or more bytes) | |
//! | 6 | disconnect | connected header, sealed empty body | |
//! | 7 | path | connected header, sealed 8-byte token (the server's challenge to a new client address; the client echoes it) | |
//! | 8 | ping | connected header, sealed 8-byte id (the ping's own sequence) | |
//! | 9 | pong | connected header, sealed 8-byte id of the ping it answers | |
//!
//! The private token holds the client id, timeout, both token keys and up
//! to four server addresses (a count, then per address: family 4 or 6,
//! port, 16 IP bytes). A connected header is the kind byte with the
//! sequence's byte count (1-8) in its high four bits, the sequence in that
//! many bytes, and, on packets from the client only, the client's slot
//! (u16). The body is sealed with ChaCha20-Poly1305 under the direction's
//! connection key with nonce = four zero bytes then the sequence (u64), and
//! additional data = version, protocol id, the header bytes. A connection
//! key is HKDF-SHA256 of the token's key for that direction, with the
//! server nonce as salt and version then `c2s` or `s2c` as info. The
//! challenge token is the challenge sequence (u64) then, sealed under the
//! server's challenge key with that sequence as nonce and version and
//! protocol id as additional data, the client id, timeout, both token keys,
//! the challenge's expiry, the token's expiry, the server nonce and the
//! address the challenge was sent to (143 bytes + 16). A response opens
//! from any address; the connection starts at the challenged one.

use super::crypto::{
    fill_random, open_x, seal_x, Key, PacketKey, SERVER_NONCE_BYTES, TAG_BYTES, XNONCE_BYTES,
};
use super::token::{ConnectToken, Reader, ADDRESS_BYTES, PRIVATE_TOKEN_BYTES, TOKEN_HEAD_BYTES};
use super::{ConnError, VERSION};

pub(crate) const REQUEST: u8 = 0;
pub(crate) const CHALLENGE: u8 = 1;
pub(crate) const RESPONSE: u8 = 2;
pub(crate) const DENIED: u8 = 3;
pub(crate) const KEEPALIVE: u8 = 4;
pub(crate) const PAYLOAD: u8 = 5;
pub(crate) const DISCONNECT: u8 = 6;
pub(crate) const PATH: u8 = 7;
pub(crate) const PING: u8 = 8;
pub(crate) const PONG: u8 = 9;

/// Bytes of the random nonce a client puts in its requests, which the
/// server's challenge and denial repeat (sealed) so that a client takes no
/// reply to an earlier request.
pub(crate) const REQUEST_NONCE_BYTES: usize = 8;
/// Bytes of a denial's body.
pub(crate) const DENIED_BODY_BYTES: usize = 8;

/// Bytes of a connection request. Larger than any reply a server sends to
/// an address that has not proven it receives there.
pub const REQUEST_BYTES: usize = 256;
const REQUEST_USED: usize =
    1 + VERSION.len() + 8 + 8 + XNONCE_BYTES + PRIVATE_TOKEN_BYTES + REQUEST_NONCE_BYTES;
/// Bytes of the challenge token's sealed body: token head, challenge
/// expiry, token expiry, server nonce, the address challenged.
pub(crate) const CHALLENGE_PLAIN_BYTES: usize =
    TOKEN_HEAD_BYTES + 8 + 8 + SERVER_NONCE_BYTES + ADDRESS_BYTES;
/// Bytes of a challenge token: sequence, sealed body.
pub(crate) const CHALLENGE_TOKEN_BYTES: usize = 8 + CHALLENGE_PLAIN_BYTES + TAG_BYTES;
/// Bytes of a challenge packet's body.
pub(crate) const CHALLENGE_BODY_BYTES: usize =
    REQUEST_NONCE_BYTES + SERVER_NONCE_BYTES + CHALLENGE_TOKEN_BYTES;
/// Bytes of a challenge packet.
pub const CHALLENGE_BYTES: usize = 1 + XNONCE_BYTES + CHALLENGE_BODY_BYTES + TAG_BYTES;
/// Bytes of a response packet.
pub const RESPONSE_BYTES: usize = 1 + CHALLENGE_TOKEN_BYTES;
/// Bytes of a denied packet.
pub const DENIED_BYTES: usize = 1 + XNONCE_BYTES + DENIED_BODY_BYTES + TAG_BYTES;
/// Most bytes a server adds to a payload (kind, 8-byte sequence, tag).
pub const SERVER_OVERHEAD: usize = 1 + 8 + TAG_BYTES;
/// Most bytes a client adds to a payload (kind, 8-byte sequence, slot, tag).
pub const CLIENT_OVERHEAD: usize = SERVER_OVERHEAD + 2;

const _: () = assert!(REQUEST_USED <= REQUEST_BYTES);
const _: () = assert!(CHALLENGE_BYTES < REQUEST_BYTES && DENIED_BYTES < RESPONSE_BYTES);

/// The fields of a connection request.
pub(crate) struct Request {
    pub(crate) protocol_id: u64,
    pub(crate) expires_at: u64,
    pub(crate) nonce: [u8; XNONCE_BYTES],
    pub(crate) private: [u8; PRIVATE_TOKEN_BYTES],
    pub(crate) request_nonce: [u8; REQUEST_NONCE_BYTES],
}

pub(crate) fn write_request(
    token: &ConnectToken,
    request_nonce: &[u8; REQUEST_NONCE_BYTES],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(REQUEST_BYTES);
    out.push(REQUEST);
    out.extend_from_slice(&VERSION);
    out.extend_from_slice(&token.protocol_id.to_le_bytes());
    out.extend_from_slice(&token.expires_at.to_le_bytes());
    out.extend_from_slice(&token.nonce);
    out.extend_from_slice(&token.private);
    out.extend_from_slice(request_nonce);
    out.resize(REQUEST_BYTES, 0);
    out
}

pub(crate) fn parse_request(datagram: &[u8]) -> Result<Request, ConnError> {
    check_len(datagram, REQUEST_BYTES)?;
    let mut r = Reader(&datagram[1..]);
    if r.array::<8>() != VERSION {
        return Err(ConnError::Version);
    }
    Ok(Request {
        protocol_id: u64::from_le_bytes(r.array()),
        expires_at: u64::from_le_bytes(r.array()),
        nonce: r.array(),
        private: r.array(),
        request_nonce: r.array(),
    })
}

/// Errors unless `datagram` is exactly `expected` bytes.
pub(crate) fn check_len(datagram: &[u8], expected: usize) -> Result<(), ConnError> {
    if datagram.len() == expected {
        Ok(())
    } else {
        Err(ConnError::BadLength {
            len: datagram.len(),
            expected,
        })
    }
}

/// Longest header a sealed packet has: kind, 8 sequence bytes, slot.
const MAX_HEADER: usize = 1 + 8 + 2;

/// The additional data of a sealed packet: version, protocol id, header
/// (at most [`MAX_HEADER`] bytes), on the stack.
struct Aad {
    bytes: [u8; 16 + MAX_HEADER],
    len: usize,
}

impl Aad {
    fn new(protocol_id: u64, header: &[u8]) -> Self {
        let mut bytes = [0u8; 16 + MAX_HEADER];
        bytes[..8].copy_from_slice(&VERSION);
        bytes[8..16].copy_from_slice(&protocol_id.to_le_bytes());
        let n = header.len().min(MAX_HEADER);
        bytes[16..16 + n].copy_from_slice(&header[..n]);
        Self { bytes, len: 16 + n }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A challenge or denied packet: `kind`, a random nonce, `body` sealed
/// with XChaCha20-Poly1305 under the server-to-client key.
pub(crate) fn seal_handshake(
    kind: u8,
    protocol_id: u64,
    key: &Key,
    body: &[u8],
) -> Result<Vec<u8>, ConnError> {
    let mut nonce = [0u8; XNONCE_BYTES];
    fill_random(&mut nonce)?;
    let mut out = Vec::with_capacity(1 + XNONCE_BYTES + body.len() + TAG_BYTES);
    out.push(kind);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(body);
    let tag = seal_x(
        key,
        &nonce,
        Aad::new(protocol_id, &[kind]).as_slice(),
        &mut out[1 + XNONCE_BYTES..],
    )?;
    out.extend_from_slice(&tag);
    Ok(out)
}

/// Opens [`seal_handshake`]'s packet in place and returns its body.
pub(crate) fn open_handshake<'a>(
    datagram: &'a mut [u8],
    protocol_id: u64,
    key: &Key,
) -> Result<&'a [u8], ConnError> {
    let Some(body_len) = datagram.len().checked_sub(1 + XNONCE_BYTES + TAG_BYTES) else {
        return Err(ConnError::Truncated {
            len: datagram.len(),
            min: 1 + XNONCE_BYTES + TAG_BYTES,
        });
    };
    let (head, rest) = datagram.split_at_mut(1 + XNONCE_BYTES);
    let (body, tag) = rest.split_at_mut(body_len);
    let mut nonce = [0u8; XNONCE_BYTES];
    nonce.copy_from_slice(&head[1..]);
    let mut tag_bytes = [0u8; TAG_BYTES];
    tag_bytes.copy_from_slice(tag);
    open_x(
        key,
        &nonce,
        Aad::new(protocol_id, &head[..1]).as_slice(),
        body,
        &tag_bytes,
    )?;
    Ok(body)
}

/// The header of a connected packet (keep-alive, payload, disconnect).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub(crate) kind: u8,
    pub(crate) sequence: u64,
    pub(crate) slot: Option<u16>,
    pub(crate) len: usize,
}

/// Reads a connected header; `with_slot` on the server (client packets).
pub(crate) fn parse_header(datagram: &[u8], with_slot: bool) -> Result<Header, ConnError> {
    let Some(&prefix) = datagram.first() else {
        return Err(ConnError::Truncated { len: 0, min: 1 });
    };
    let kind = prefix & 0x0f;
    if !matches!(kind, KEEPALIVE | PAYLOAD | DISCONNECT | PATH | PING | PONG) {
        return Err(ConnError::UnexpectedKind { kind });
    }
    let seq_bytes = usize::from(prefix >> 4);
    if !(1..=8).contains(&seq_bytes) {
        return Err(ConnError::BadSequenceLength { bytes: seq_bytes });
    }
    let len = 1 + seq_bytes + if with_slot { 2 } else { 0 };
    if datagram.len() < len + TAG_BYTES {
        return Err(ConnError::Truncated {
            len: datagram.len(),
            min: len + TAG_BYTES,
        });
    }
    let mut seq = [0u8; 8];
    seq[..seq_bytes].copy_from_slice(&datagram[1..1 + seq_bytes]);
    let slot = with_slot.then(|| u16::from_le_bytes([datagram[len - 2], datagram[len - 1]]));
    Ok(Header {
        kind,
        sequence: u64::from_le_bytes(seq),
        slot,
        len,
    })
}

/// Writes a connected packet into `out` (cleared first).
#[allow(clippy::too_many_arguments)]
pub(crate) fn seal_packet(
    kind: u8,
    sequence: u64,
    slot: Option<u16>,
    protocol_id: u64,
    key: &PacketKey,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ConnError> {
    let seq_bytes = (8 - sequence.leading_zeros() as usize / 8).max(1);
    out.clear();
    out.reserve(1 + seq_bytes + 2 + payload.len() + TAG_BYTES);
    out.push(kind | (seq_bytes as u8) << 4);
    out.extend_from_slice(&sequence.to_le_bytes()[..seq_bytes]);
    if let Some(slot) = slot {
        out.extend_from_slice(&slot.to_le_bytes());
    }
    let header_len = out.len();
    out.extend_from_slice(payload);
    let aad = Aad::new(protocol_id, &out[..header_len]);
    let tag = key.seal(sequence, aad.as_slice(), &mut out[header_len..])?;
    out.extend_from_slice(&tag);
    Ok(())
}

/// Authenticates and decrypts a connected packet in place; returns its body.
pub(crate) fn open_packet<'a>(
    datagram: &'a mut [u8],
    header: &Header,
    protocol_id: u64,
    key: &PacketKey,
) -> Result<&'a [u8], ConnError> {
    let Some(body_len) = datagram.len().checked_sub(header.len + TAG_BYTES) else {
        return Err(ConnError::Truncated {
            len: datagram.len(),
            min: header.len + TAG_BYTES,
        });
    };
    let (head, rest) = datagram.split_at_mut(header.len);
    let (body, tag) = rest.split_at_mut(body_len);
    let mut tag_bytes = [0u8; TAG_BYTES];
    tag_bytes.copy_from_slice(tag);
    key.open(
        header.sequence,
        Aad::new(protocol_id, head).as_slice(),
        body,
        &tag_bytes,
    )?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the sealed packet layout: prefix, little-endian sequence,
    /// slot, ciphertext, tag (ChaCha20-Poly1305, nonce 0000 || sequence,
    /// additional data version || protocol id || header).
    #[test]
    fn golden_payload_packet() {
        let key = PacketKey::new(&Key::from_bytes([0x42; 32]));
        let mut out = Vec::new();
        seal_packet(
            PAYLOAD,
            0x0102,
            Some(7),
            0x1122_3344_5566_7788,
            &key,
            b"tickpack",
            &mut out,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            &hex[..10],
            "2502010700",
            "prefix 0x25, sequence 02 01, slot 07 00"
        );
        assert_eq!(out.len(), 1 + 2 + 2 + 8 + TAG_BYTES);
        assert_eq!(hex, GOLDEN);
        let header = parse_header(&out, true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (header.kind, header.sequence, header.slot),
            (PAYLOAD, 0x0102, Some(7))
        );
        let body = open_packet(&mut out, &header, 0x1122_3344_5566_7788, &key)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(body, b"tickpack");
    }

    /// The same bytes come out of an independent implementation (Python's
    /// `cryptography` ChaCha20Poly1305 over OpenSSL) given the key, nonce
    /// and additional data this module documents.
    const GOLDEN: &str = "250201070052961a5255df2f9ff05a7425177ba9ce61eaa1836266192a";
}
