//! The endpoints' settings.

use std::time::Duration;

use tickpack_session as session;
use tickpack_transport::chunk::MAX_SLICE_PACKET;
use tickpack_transport::conn::{Key, CLIENT_OVERHEAD, SERVER_OVERHEAD};
use tickpack_transport::{
    ChunkConfig, FragmentConfig, JitterConfig, ResendDelay, TokenBucketConfig, FRAGMENT_HEADER_LEN,
};

use crate::NetError;

/// Default largest datagram, connection layer included.
pub const DEFAULT_MTU: usize = 1200;
/// UDP/IPv4 header bytes, charged to a client's pacing per datagram.
pub const UDP_IP_OVERHEAD: usize = 28;
/// What pacing charges per datagram beyond its fragment: the channel
/// byte, the connection layer and UDP/IP.
pub const WIRE_OVERHEAD: usize = 1 + SERVER_OVERHEAD + UDP_IP_OVERHEAD;

/// How a [`Server`](crate::Server) runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The game's protocol id (in every connect token).
    pub protocol_id: u64,
    /// The key the backend seals connect tokens with.
    pub private_key: Key,
    /// Most clients at once, 1..=32767; a client's session id is its slot.
    pub max_clients: u16,
    /// Largest datagram sent or accepted, connection layer included.
    pub mtu: usize,
    /// Most fragments per snapshot; a larger snapshot is not sent (counted
    /// in [`PeerStats::too_large`](crate::PeerStats::too_large)).
    pub max_parts: u16,
    /// The codec session: history, dictionaries, limits, recall.
    pub session: session::ServerConfig,
    /// Each client's byte budget: snapshots and connect chunk slices are
    /// paid from it, [`WIRE_OVERHEAD`] per datagram included.
    pub pacing: TokenBucketConfig,
    /// The connect chunk's sender (its own bandwidth cap, resend delay).
    pub chunk: ChunkConfig,
    /// Malformed authenticated payloads a client may send before it is
    /// disconnected ([`DisconnectReason::BadTraffic`](crate::DisconnectReason::BadTraffic)).
    pub bad_payload_limit: u32,
}

impl ServerConfig {
    /// 64 clients, 1,200-byte datagrams, 64 kB/s per client, the session's
    /// defaults.
    pub fn new(protocol_id: u64, private_key: Key) -> Self {
        Self {
            protocol_id,
            private_key,
            max_clients: 64,
            mtu: DEFAULT_MTU,
            max_parts: FragmentConfig::default().max_parts,
            session: session::ServerConfig::default(),
            pacing: TokenBucketConfig::for_rate(64_000)
                .with_min_burst((DEFAULT_MTU + UDP_IP_OVERHEAD) as u64),
            chunk: ChunkConfig {
                bandwidth: 125_000,
                packet_overhead: WIRE_OVERHEAD,
                resend: ResendDelay::Fixed(Duration::from_millis(100)),
                initial_burst: true,
                ..ChunkConfig::default()
            },
            bad_payload_limit: 64,
        }
    }
}

/// How a [`Client`](crate::Client) runs.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Largest datagram, connection layer included: the server's.
    pub mtu: usize,
    /// Most fragments per snapshot: the server's.
    pub max_parts: u16,
    /// Snapshots being reassembled at once, and their bytes.
    pub max_piles: usize,
    /// Bytes held by snapshots being reassembled.
    pub max_buffered_bytes: usize,
    /// The codec session: history, dictionaries, limits.
    pub session: session::ClientConfig,
    /// The jitter buffer in front of the presented world.
    pub jitter: JitterConfig,
    /// Ticks the presented world keeps an entity no snapshot updated.
    pub linger: u32,
    /// Present only what each snapshot changed against its baseline (for
    /// servers that hold skipped entities at older records,
    /// [`Skipped::Held`](crate::Skipped::Held)).
    pub news_only: bool,
    /// The ack goes out when it changes, and at least this often.
    pub ack_refresh: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        let f = FragmentConfig::default();
        Self {
            mtu: DEFAULT_MTU,
            max_parts: f.max_parts,
            max_piles: f.max_piles,
            max_buffered_bytes: f.max_buffered_bytes,
            session: session::ClientConfig::default(),
            jitter: JitterConfig::default(),
            linger: 20,
            news_only: false,
            ack_refresh: Duration::from_millis(100),
        }
    }
}

/// The connection layer's largest payload for an MTU.
pub(crate) fn max_payload(mtu: usize) -> usize {
    mtu.saturating_sub(CLIENT_OVERHEAD)
}

/// The fragmenter's settings for an MTU: room for the channel byte and
/// the connection layer is kept. Errors if a chunk slice does not fit.
pub(crate) fn fragment_config(
    mtu: usize,
    max_parts: u16,
    max_piles: usize,
    max_buffered_bytes: usize,
) -> Result<FragmentConfig, NetError> {
    // A connect chunk slice goes out whole.
    let min = CLIENT_OVERHEAD + 1 + MAX_SLICE_PACKET.max(FRAGMENT_HEADER_LEN + 1);
    if mtu < min {
        return Err(NetError::MtuTooSmall { mtu, min });
    }
    Ok(FragmentConfig {
        mtu: max_payload(mtu) - 1,
        max_parts,
        max_piles,
        max_buffered_bytes,
        ..FragmentConfig::default()
    })
}
