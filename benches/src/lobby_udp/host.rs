//! The game server: authenticated connections, the session server (and a
//! shadow pricing `View::all()`), per client a connect chunk, a
//! fragmenter and a token bucket. Counts the bytes it sends to and
//! receives from every address, to show it amplifies nothing.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickpack::Snapshot;
use tickpack_session::{ClientMessage, RateTiers, Server, ServerConfig, View};
use tickpack_transport::conn::{self, ServerEvent};
use tickpack_transport::{
    ChunkConfig, ChunkSender, Conformance, FragmentConfig, Fragmenter, Paced, TokenBucket,
    TokenBucketConfig,
};

use super::traffic::{Traffic, TrafficTable};
use super::{Channel, Clock, WIRE_OVERHEAD};

/// Views kept per client for the final check: the newest snapshot a
/// client applied is rarely older than this many ticks.
const VIEWS_KEPT: usize = 1024;

/// The server's side of one connected client.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(crate) slot: u16,
    chunk: ChunkSender,
    /// Sequence of the connect snapshot the chunk carries.
    pub(crate) chunk_seq: u16,
    /// Regular snapshots flow (the chunk was acked).
    pub(crate) live: bool,
    frag: Fragmenter,
    bucket: TokenBucket,
    pub(crate) stats: PeerStats,
    /// Per car id, the tick it was last sent to this client.
    last_sent: Vec<Option<u32>>,
    /// The views of the last snapshots sent, by sequence (for the check).
    pub(crate) views: VecDeque<(u16, View)>,
}

/// What one peer cost and saw.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PeerStats {
    /// Session packet bytes and count, regular snapshots only.
    pub(crate) bytes: u64,
    pub(crate) ticks: u64,
    /// What `View::all()` would have cost the same client.
    pub(crate) all_bytes: u64,
    /// Full snapshots on the regular path (after the connect chunk).
    pub(crate) resyncs: u64,
    pub(crate) green: u64,
    pub(crate) yellow: u64,
    pub(crate) held_back: u64,
    pub(crate) cars_sent: u64,
    pub(crate) cars_held: u64,
    pub(crate) addr_changes: u64,
}

/// The server side of the lobby.
pub(crate) struct Host {
    pub(crate) conn: conn::Server,
    pub(crate) server: Server,
    shadow: Server,
    rates: RateTiers,
    far: super::FarCars,
    frag_cfg: FragmentConfig,
    chunk_cfg: ChunkConfig,
    bucket_cfg: TokenBucketConfig,
    /// By session id (the connect token's client id).
    pub(crate) peers: HashMap<u16, Peer>,
    pub(crate) traffic: TrafficTable,
    /// Addresses that proved they receive there (connected clients').
    pub(crate) verified: HashSet<SocketAddr>,
    /// Datagrams refused by the connection layer / bad session messages.
    pub(crate) rejected: u64,
    pub(crate) bad_messages: u64,
    pub(crate) tick_of_seq: HashMap<u16, usize>,
    max_clients: u16,
    out: Vec<u8>,
    /// Time spent in the session server's `begin_tick` and `send` (the
    /// snapshots the clients get; the `View::all` shadow not counted).
    pub(crate) encode_time: Duration,
    /// Ticks that `encode_time` covers.
    pub(crate) encode_ticks: u64,
}

impl Host {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        conn: conn::Server,
        server_cfg: ServerConfig,
        schema: &tickpack::Schema,
        frag_cfg: FragmentConfig,
        chunk_cfg: ChunkConfig,
        bucket_cfg: TokenBucketConfig,
        max_clients: u16,
        far: super::FarCars,
        rates: RateTiers,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        Ok(Self {
            conn,
            server: Server::new(schema.clone(), server_cfg.clone())?,
            shadow: Server::new(schema.clone(), server_cfg)?,
            rates,
            far,
            frag_cfg,
            chunk_cfg,
            bucket_cfg,
            peers: HashMap::new(),
            traffic: TrafficTable::default(),
            verified: HashSet::new(),
            rejected: 0,
            bad_messages: 0,
            tick_of_seq: HashMap::new(),
            max_clients,
            out: Vec::new(),
            encode_time: Duration::ZERO,
            encode_ticks: 0,
        })
    }

    /// Seals `body` on `channel` for `slot` and queues it.
    fn send(&mut self, clock: &Clock, slot: u16, channel: Channel, body: &[u8], out: &mut Outbox) {
        let mut payload = Vec::with_capacity(1 + body.len());
        payload.push(channel as u8);
        payload.extend_from_slice(body);
        if let Ok(to) = self.conn.send(clock.unix(), slot, &payload, &mut self.out) {
            let datagram = std::mem::take(&mut self.out);
            self.traffic.sent(to, datagram.len());
            out.push((to, datagram));
        }
    }

    /// One server tick: every live client gets its snapshot.
    pub(crate) fn tick(
        &mut self,
        clock: &Clock,
        k: usize,
        world: &Arc<Snapshot>,
        out: &mut Outbox,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let started = Instant::now();
        let seq = self.server.begin_tick(world.clone());
        let mut encoding = started.elapsed();
        self.shadow.begin_tick(world.clone());
        self.tick_of_seq.insert(seq, k);
        let cars = tickpack_scenarios::car_positions(world);
        let mut ids: Vec<u16> = self.peers.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(peer) = self.peers.get_mut(&id) else {
                continue;
            };
            if !peer.live {
                continue;
            }
            let view = super::view_for(&self.rates, self.far, k, id, &cars, &peer.last_sent);
            let full_before = self.server.stats().full;
            let started = Instant::now();
            let packet = self.server.send(id, &view)?;
            encoding += started.elapsed();
            peer.stats.all_bytes += self.shadow.send(id, &View::all())?.len() as u64;
            peer.stats.ticks += 1;
            let paced = peer.frag.split_paced(
                &packet,
                &mut peer.bucket,
                clock.since_start,
                WIRE_OVERHEAD,
            )?;
            let Paced::Send { parts, conformance } = paced else {
                peer.stats.held_back += 1;
                continue;
            };
            match conformance {
                Conformance::Yellow => peer.stats.yellow += 1,
                _ => peer.stats.green += 1,
            }
            peer.stats.resyncs += self.server.stats().full - full_before;
            let sent = view.sent_ids(0).unwrap_or(&[]);
            for &car in sent {
                if let Some(slot) = peer.last_sent.get_mut(car as usize) {
                    *slot = Some(k as u32);
                }
            }
            peer.views.push_back((seq, view.clone()));
            if peer.views.len() > VIEWS_KEPT {
                peer.views.pop_front();
            }
            peer.stats.bytes += packet.len() as u64;
            peer.stats.cars_sent += sent.len() as u64;
            peer.stats.cars_held += (cars.len() - sent.len()) as u64;
            let slot = peer.slot;
            for part in parts {
                self.send(clock, slot, Channel::Fragment, &part, out);
            }
        }
        self.encode_time += encoding;
        self.encode_ticks += 1;
        Ok(())
    }

    /// Connect-chunk slices, keep-alives and handshake replies.
    pub(crate) fn poll(&mut self, clock: &Clock, out: &mut Outbox) {
        self.conn.handle_timeout(clock.unix());
        while let Some(t) = self.conn.poll_transmit() {
            self.traffic.sent(t.to, t.datagram.len());
            out.push((t.to, t.datagram));
        }
        let mut slices = Vec::new();
        for peer in self.peers.values_mut().filter(|p| !p.live) {
            for _ in 0..64 {
                let Some(slice) = peer
                    .chunk
                    .poll_transmit_paced(clock.since_start, &mut peer.bucket)
                else {
                    break;
                };
                slices.push((peer.slot, slice));
            }
        }
        for (slot, slice) in slices {
            self.send(clock, slot, Channel::Slice, &slice, out);
        }
    }

    /// Handles one datagram from `from`.
    pub(crate) fn handle(
        &mut self,
        clock: &Clock,
        k: usize,
        from: SocketAddr,
        datagram: &mut [u8],
        out: &mut Outbox,
    ) -> Result<(), Box<dyn std::error::Error>> {
        self.traffic.received(from, datagram.len());
        let payload = match self.conn.handle_datagram(clock.unix(), from, datagram) {
            Ok(Some((slot, payload))) => Some((slot, payload.to_vec())),
            Ok(None) => None,
            Err(_) => {
                self.rejected += 1;
                None
            }
        };
        self.connection_events(clock, k, out)?;
        let Some((slot, payload)) = payload else {
            return Ok(());
        };
        let Some(id) = self
            .conn
            .client_id(slot)
            .and_then(|c| u16::try_from(c).ok())
        else {
            return Ok(());
        };
        let (Some(&channel), Some(body)) = (payload.first(), payload.get(1..)) else {
            self.bad_messages += 1;
            return Ok(());
        };
        let Some(peer) = self.peers.get_mut(&id) else {
            return Ok(());
        };
        match Channel::from_byte(channel) {
            Some(Channel::Message) => match ClientMessage::parse(body) {
                // The session id is the authenticated slot's, never the
                // message's own field.
                Ok(m) => {
                    if m.request_full {
                        self.server.request_full(id)?;
                        self.shadow.request_full(id)?;
                    }
                    if let Some(ack) = m.ack {
                        self.server.ack(id, ack)?;
                        self.shadow.ack(id, ack)?;
                    }
                }
                Err(_) => self.bad_messages += 1,
            },
            Some(Channel::ChunkAck) if !peer.live => {
                if peer.chunk.handle_ack(body).is_err() {
                    self.bad_messages += 1;
                }
                if peer.chunk.stats().chunks_sent >= 1 {
                    // Every slice acked: the client holds that snapshot.
                    peer.live = true;
                    self.server.ack(id, peer.chunk_seq)?;
                    self.shadow.ack(id, peer.chunk_seq)?;
                }
            }
            Some(Channel::ChunkAck) => {} // a late ack of the finished chunk
            _ => self.bad_messages += 1,
        }
        Ok(())
    }

    fn connection_events(
        &mut self,
        clock: &Clock,
        k: usize,
        out: &mut Outbox,
    ) -> Result<(), Box<dyn std::error::Error>> {
        while let Some(event) = self.conn.poll_event() {
            match event {
                ServerEvent::Connected {
                    slot,
                    client_id,
                    addr,
                } => {
                    self.verified.insert(addr);
                    let Ok(id) = u16::try_from(client_id) else {
                        continue;
                    };
                    if k == 0 || id == 0 || id > self.max_clients {
                        self.conn.disconnect(clock.unix(), slot);
                        continue;
                    }
                    self.connect(clock, k, slot, id, out)?;
                }
                ServerEvent::Migrated { slot, to, .. } => {
                    self.verified.insert(to);
                    let id = self
                        .conn
                        .client_id(slot)
                        .and_then(|c| u16::try_from(c).ok());
                    if let Some(peer) = id.and_then(|id| self.peers.get_mut(&id)) {
                        peer.stats.addr_changes += 1;
                    }
                }
                ServerEvent::Disconnected { client_id, .. } => {
                    if let Ok(id) = u16::try_from(client_id) {
                        self.peers.remove(&id);
                        self.server.disconnect(id);
                        self.shadow.disconnect(id);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A newly connected client: its first (full) snapshot goes out as a
    /// chunk.
    fn connect(
        &mut self,
        clock: &Clock,
        k: usize,
        slot: u16,
        id: u16,
        out: &mut Outbox,
    ) -> Result<(), Box<dyn std::error::Error>> {
        self.server.connect(id);
        self.shadow.connect(id);
        let first = self.server.send(id, &View::all())?;
        self.shadow.send(id, &View::all())?;
        let mut chunk = ChunkSender::new(self.chunk_cfg);
        chunk.send(first.to_vec())?;
        self.peers.insert(
            id,
            Peer {
                slot,
                chunk,
                chunk_seq: self.server.sequence(),
                live: false,
                frag: Fragmenter::new(self.frag_cfg),
                bucket: TokenBucket::new(self.bucket_cfg),
                stats: PeerStats::default(),
                // Stagger: car `i` is first due `i % 4` ticks early.
                last_sent: (0..64u32)
                    .map(|i| Some((k as u32).saturating_sub(i % 4)))
                    .collect(),
                views: VecDeque::new(),
            },
        );
        self.poll(clock, out);
        Ok(())
    }

    /// Addresses never verified that were sent more than they sent.
    pub(crate) fn amplified(&self) -> Vec<(SocketAddr, Traffic)> {
        self.traffic.amplified(&self.verified)
    }
}

/// Datagrams for the server socket's link.
pub(crate) type Outbox = Vec<(SocketAddr, Vec<u8>)>;
