//! Connect tokens: what a backend hands a client (over its own secure
//! channel, e.g. HTTPS) so that the client may connect to a server holding
//! the same private key.
//!
//! The token's private part is sealed with XChaCha20-Poly1305 under the
//! private key; the client cannot read or change it and forwards it in its
//! connection request. The public part gives the client the two packet keys
//! the private part also carries.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use super::crypto::{fill_random, open_x, seal_x, Key, KEY_BYTES, TAG_BYTES, XNONCE_BYTES};
use super::{ConnError, VERSION};

/// Most server addresses a connect token names.
pub const MAX_SERVER_ADDRESSES: usize = 4;
/// Bytes of one encoded address: family (0 none, 4, 6), port, 16 IP bytes.
pub(crate) const ADDRESS_BYTES: usize = 1 + 2 + 16;
/// Bytes of the address list: a count, then [`MAX_SERVER_ADDRESSES`] slots.
const ADDRESSES_BYTES: usize = 1 + MAX_SERVER_ADDRESSES * ADDRESS_BYTES;
/// Bytes of the client id, timeout and both keys (also the head of the
/// server's challenge token).
pub(crate) const TOKEN_HEAD_BYTES: usize = 8 + 4 + 2 * KEY_BYTES;
/// Bytes of the private part before sealing: the head, then the server
/// addresses.
pub(crate) const PRIVATE_PLAIN_BYTES: usize = TOKEN_HEAD_BYTES + ADDRESSES_BYTES;
/// Bytes of the sealed private part.
pub const PRIVATE_TOKEN_BYTES: usize = PRIVATE_PLAIN_BYTES + TAG_BYTES;
/// Bytes of [`ConnectToken::to_bytes`].
pub const CONNECT_TOKEN_BYTES: usize = VERSION.len()
    + 8
    + 8
    + 8
    + 4
    + XNONCE_BYTES
    + PRIVATE_TOKEN_BYTES
    + 2 * KEY_BYTES
    + ADDRESSES_BYTES;

/// A connect token as the client holds it.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectToken {
    /// The game's protocol id; a server refuses tokens of other protocols.
    pub protocol_id: u64,
    /// The client's id, chosen by the backend.
    pub client_id: u64,
    /// Seconds since the Unix epoch after which no server accepts the token.
    pub expires_at: u64,
    /// Seconds without an authenticated packet after which either side
    /// drops the connection.
    pub timeout_secs: u32,
    /// Nonce of the sealed private part.
    pub nonce: [u8; XNONCE_BYTES],
    /// The private part, sealed under the server's private key.
    pub private: [u8; PRIVATE_TOKEN_BYTES],
    /// Key of the client's packets.
    pub client_to_server_key: Key,
    /// Key of the server's packets.
    pub server_to_client_key: Key,
    /// The servers the token is for (also sealed in the private part): a
    /// server configured with its public addresses refuses a token that
    /// names none of them. Empty for [`ConnectToken::issue`]'s tokens.
    pub server_addresses: Vec<SocketAddr>,
}

impl std::fmt::Debug for ConnectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectToken")
            .field("protocol_id", &self.protocol_id)
            .field("client_id", &self.client_id)
            .field("expires_at", &self.expires_at)
            .field("timeout_secs", &self.timeout_secs)
            .field("server_addresses", &self.server_addresses)
            .finish_non_exhaustive()
    }
}

/// The private part after the server opened it.
#[derive(Debug, Clone)]
pub(crate) struct PrivateToken {
    pub(crate) client_id: u64,
    pub(crate) timeout_secs: u32,
    pub(crate) client_to_server_key: Key,
    pub(crate) server_to_client_key: Key,
}

impl PrivateToken {
    pub(crate) fn write(&self, out: &mut [u8; TOKEN_HEAD_BYTES]) {
        out[..8].copy_from_slice(&self.client_id.to_le_bytes());
        out[8..12].copy_from_slice(&self.timeout_secs.to_le_bytes());
        out[12..44].copy_from_slice(self.client_to_server_key.as_bytes());
        out[44..76].copy_from_slice(self.server_to_client_key.as_bytes());
    }

    pub(crate) fn read(bytes: &[u8; TOKEN_HEAD_BYTES]) -> Self {
        let mut r = Reader(bytes);
        Self {
            client_id: u64::from_le_bytes(r.array()),
            timeout_secs: u32::from_le_bytes(r.array()),
            client_to_server_key: Key::from_bytes(r.array()),
            server_to_client_key: Key::from_bytes(r.array()),
        }
    }
}

/// Encodes up to [`MAX_SERVER_ADDRESSES`] addresses.
fn write_addresses(addrs: &[SocketAddr]) -> Result<[u8; ADDRESSES_BYTES], ConnError> {
    if addrs.len() > MAX_SERVER_ADDRESSES {
        return Err(ConnError::TooManyAddresses {
            count: addrs.len(),
            max: MAX_SERVER_ADDRESSES,
        });
    }
    let mut out = [0u8; ADDRESSES_BYTES];
    out[0] = addrs.len() as u8;
    for (slot, addr) in out[1..].chunks_exact_mut(ADDRESS_BYTES).zip(addrs) {
        if let Ok(slot) = <&mut [u8; ADDRESS_BYTES]>::try_from(slot) {
            *slot = write_address(*addr);
        }
    }
    Ok(out)
}

/// Encodes one address: family 4 or 6, port, 16 IP bytes.
pub(crate) fn write_address(addr: SocketAddr) -> [u8; ADDRESS_BYTES] {
    let mut slot = [0u8; ADDRESS_BYTES];
    slot[1..3].copy_from_slice(&addr.port().to_le_bytes());
    match addr.ip() {
        IpAddr::V4(ip) => {
            slot[0] = 4;
            slot[3..7].copy_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            slot[0] = 6;
            slot[3..19].copy_from_slice(&ip.octets());
        }
    }
    slot
}

/// Decodes [`write_address`]' bytes (`None` for an unknown family).
pub(crate) fn read_address(slot: &[u8; ADDRESS_BYTES]) -> Option<SocketAddr> {
    let mut r = Reader(slot);
    let [family] = r.array::<1>();
    let port = u16::from_le_bytes(r.array());
    let ip: [u8; 16] = r.array();
    let ip = match family {
        4 => IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])),
        6 => IpAddr::V6(Ipv6Addr::from(ip)),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Decodes [`write_addresses`]' bytes; unknown families and slots past the
/// count are skipped (the bytes were authenticated, so only a buggy issuer
/// writes them).
fn read_addresses(bytes: &[u8; ADDRESSES_BYTES]) -> Vec<SocketAddr> {
    let count = usize::from(bytes[0]).min(MAX_SERVER_ADDRESSES);
    bytes[1..]
        .chunks_exact(ADDRESS_BYTES)
        .take(count)
        .filter_map(|slot| read_address(<&[u8; ADDRESS_BYTES]>::try_from(slot).ok()?))
        .collect()
}

/// The additional data the private part is sealed with.
fn private_aad(protocol_id: u64, expires_at: u64) -> [u8; 24] {
    let mut aad = [0u8; 24];
    aad[..8].copy_from_slice(&VERSION);
    aad[8..16].copy_from_slice(&protocol_id.to_le_bytes());
    aad[16..].copy_from_slice(&expires_at.to_le_bytes());
    aad
}

impl ConnectToken {
    /// Issues a token for `client_id`, valid from `now` (time since the Unix
    /// epoch) for `valid_for`, with fresh random packet keys, naming no
    /// server: only servers without configured public addresses accept
    /// it. Prefer [`ConnectToken::issue_for`].
    pub fn issue(
        private_key: &Key,
        protocol_id: u64,
        client_id: u64,
        now: Duration,
        valid_for: Duration,
        timeout: Duration,
    ) -> Result<Self, ConnError> {
        Self::issue_for(
            private_key,
            protocol_id,
            client_id,
            &[],
            now,
            valid_for,
            timeout,
        )
    }

    /// Issues a token for `client_id` to connect to one of `servers` (at
    /// most [`MAX_SERVER_ADDRESSES`], the addresses the servers are
    /// configured with as public), valid from `now` (time since the Unix
    /// epoch) for `valid_for`, with fresh random packet keys.
    pub fn issue_for(
        private_key: &Key,
        protocol_id: u64,
        client_id: u64,
        servers: &[SocketAddr],
        now: Duration,
        valid_for: Duration,
        timeout: Duration,
    ) -> Result<Self, ConnError> {
        let addresses = write_addresses(servers)?;
        let mut nonce = [0u8; XNONCE_BYTES];
        fill_random(&mut nonce)?;
        let private = PrivateToken {
            client_id,
            timeout_secs: u32::try_from(timeout.as_secs().max(1)).unwrap_or(u32::MAX),
            client_to_server_key: Key::generate()?,
            server_to_client_key: Key::generate()?,
        };
        let expires_at = now.as_secs().saturating_add(valid_for.as_secs());
        let mut plain = [0u8; PRIVATE_PLAIN_BYTES];
        let mut head = [0u8; TOKEN_HEAD_BYTES];
        private.write(&mut head);
        plain[..TOKEN_HEAD_BYTES].copy_from_slice(&head);
        plain[TOKEN_HEAD_BYTES..].copy_from_slice(&addresses);
        let tag = seal_x(
            private_key,
            &nonce,
            &private_aad(protocol_id, expires_at),
            &mut plain,
        )?;
        let mut sealed = [0u8; PRIVATE_TOKEN_BYTES];
        sealed[..PRIVATE_PLAIN_BYTES].copy_from_slice(&plain);
        sealed[PRIVATE_PLAIN_BYTES..].copy_from_slice(&tag);
        Ok(Self {
            protocol_id,
            client_id,
            expires_at,
            timeout_secs: private.timeout_secs,
            nonce,
            private: sealed,
            client_to_server_key: private.client_to_server_key,
            server_to_client_key: private.server_to_client_key,
            server_addresses: servers.to_vec(),
        })
    }

    /// The token as [`CONNECT_TOKEN_BYTES`] bytes, for the backend to hand
    /// to the client. They contain the packet keys: send them only over an
    /// encrypted channel.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(CONNECT_TOKEN_BYTES);
        out.extend_from_slice(&VERSION);
        out.extend_from_slice(&self.protocol_id.to_le_bytes());
        out.extend_from_slice(&self.client_id.to_le_bytes());
        out.extend_from_slice(&self.expires_at.to_le_bytes());
        out.extend_from_slice(&self.timeout_secs.to_le_bytes());
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&self.private);
        out.extend_from_slice(self.client_to_server_key.as_bytes());
        out.extend_from_slice(self.server_to_client_key.as_bytes());
        // At most MAX_SERVER_ADDRESSES by construction; a caller who pushed
        // more gets the first ones (the private part holds the real list).
        let listed =
            &self.server_addresses[..self.server_addresses.len().min(MAX_SERVER_ADDRESSES)];
        out.extend_from_slice(&write_addresses(listed).unwrap_or([0; ADDRESSES_BYTES]));
        out
    }

    /// Reads [`ConnectToken::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ConnError> {
        let Ok(bytes) = <&[u8; CONNECT_TOKEN_BYTES]>::try_from(bytes) else {
            return Err(ConnError::BadLength {
                len: bytes.len(),
                expected: CONNECT_TOKEN_BYTES,
            });
        };
        let mut r = Reader(bytes);
        if r.array::<8>() != VERSION {
            return Err(ConnError::Version);
        }
        Ok(Self {
            protocol_id: u64::from_le_bytes(r.array()),
            client_id: u64::from_le_bytes(r.array()),
            expires_at: u64::from_le_bytes(r.array()),
            timeout_secs: u32::from_le_bytes(r.array()),
            nonce: r.array(),
            private: r.array(),
            client_to_server_key: Key::from_bytes(r.array()),
            server_to_client_key: Key::from_bytes(r.array()),
            server_addresses: read_addresses(&r.array()),
        })
    }
}

/// Opens a request's private part under the server's private key.
pub(crate) fn open_private(
    private_key: &Key,
    protocol_id: u64,
    expires_at: u64,
    nonce: &[u8; XNONCE_BYTES],
    sealed: &[u8; PRIVATE_TOKEN_BYTES],
) -> Result<(PrivateToken, Vec<SocketAddr>), ConnError> {
    let mut plain = [0u8; PRIVATE_PLAIN_BYTES];
    plain.copy_from_slice(&sealed[..PRIVATE_PLAIN_BYTES]);
    let mut tag = [0u8; TAG_BYTES];
    tag.copy_from_slice(&sealed[PRIVATE_PLAIN_BYTES..]);
    open_x(
        private_key,
        nonce,
        &private_aad(protocol_id, expires_at),
        &mut plain,
        &tag,
    )?;
    let mut r = Reader(&plain);
    let head = PrivateToken::read(&r.array());
    Ok((head, read_addresses(&r.array())))
}

/// Reads fixed-size fields from a buffer whose length was checked first.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl Reader<'_> {
    /// The next `N` bytes; zeros past the end (callers check lengths first).
    pub(crate) fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
}
