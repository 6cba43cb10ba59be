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

/// Default [`ServerConfig::tick`] (and the jitter buffer's): 60 Hz.
pub const DEFAULT_TICK: Duration = Duration::from_micros(16_667);
/// Default [`ServerConfig::max_round_trip`] and
/// [`ClientConfig::max_round_trip`]: one second, 128 snapshots at 60 Hz.
pub const DEFAULT_MAX_ROUND_TRIP: Duration = Duration::from_secs(1);

/// The history for a round trip estimate: [`history_for`] of its
/// timeout (SRTT + 4 RTTVAR), within `least` and the history of
/// `max_round_trip`; the latter before the first sample (a ring too short
/// for the round trip turns every packet into a full snapshot, a long one
/// only costs its empty slots).
///
/// [`history_for`]: tickpack_session::history_for
pub(crate) fn history_for_rtt(
    tick: Duration,
    rtt: Option<tickpack_transport::conn::Rtt>,
    least: usize,
    max_round_trip: Duration,
) -> usize {
    let cap = session::history_for(tick, max_round_trip).max(least);
    rtt.map_or(cap, |r| session::history_for(tick, r.timeout()))
        .clamp(least, cap)
}

/// Whether a ring of `current` snapshots should become `wanted`: at once
/// to grow, and to shrink only by a quarter or more (an estimate that
/// wobbles does not reallocate every tick).
pub(crate) fn should_resize(current: usize, wanted: usize) -> bool {
    wanted > current || wanted < current - current / 4
}

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
    /// The codec session: history (each client's ring to begin with, and
    /// its least), dictionaries, limits, recall.
    pub session: session::ServerConfig,
    /// Time between [`Server::tick`](crate::Server::tick) calls: a
    /// client's ring is sized by
    /// [`history_for`](tickpack_session::history_for)`(tick, round trip)`.
    pub tick: Duration,
    /// The longest round trip a client's ring is sized for, whatever its
    /// estimate says (a peer can inflate its own): each client's ring holds
    /// at most `history_for(tick, max_round_trip)` snapshots.
    pub max_round_trip: Duration,
    /// Each client's byte budget: snapshots and connect chunk slices are
    /// paid from it, [`WIRE_OVERHEAD`] per datagram included.
    pub pacing: TokenBucketConfig,
    /// The connect chunk's sender (its own bandwidth cap, resend delay).
    pub chunk: ChunkConfig,
    /// Datagrams per connect chunk slice sent, 1 to 4 (each paid from the
    /// client's pacing; a copy the budget refuses is skipped): at high
    /// loss, the chunk and so the client's first snapshot arrive rounds of
    /// resends sooner. Default 2.
    pub chunk_copies: u8,
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
            tick: DEFAULT_TICK,
            max_round_trip: DEFAULT_MAX_ROUND_TRIP,
            pacing: TokenBucketConfig::for_rate(64_000)
                .with_min_burst((DEFAULT_MTU + UDP_IP_OVERHEAD) as u64),
            chunk: ChunkConfig {
                bandwidth: 125_000,
                packet_overhead: WIRE_OVERHEAD,
                resend: ResendDelay::Fixed(Duration::from_millis(100)),
                initial_burst: true,
                ..ChunkConfig::default()
            },
            chunk_copies: 2,
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
    /// The codec session: history (to begin with, and its least),
    /// dictionaries, limits.
    pub session: session::ClientConfig,
    /// The longest round trip the history is sized for (by
    /// [`history_for`](tickpack_session::history_for) of the connection's
    /// round trip estimate at the jitter buffer's tick).
    pub max_round_trip: Duration,
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
            max_round_trip: DEFAULT_MAX_ROUND_TRIP,
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
