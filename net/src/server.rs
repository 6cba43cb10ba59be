//! The server endpoint, sans-IO: authenticated connections, a codec
//! session per client, the connect chunk, fragments and pacing.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tickpack::{Schema, Snapshot};
use tickpack_session::{self as session, Hello};
use tickpack_transport::conn::{self, ServerEvent as ConnEvent};
use tickpack_transport::{ChunkSender, Conformance, FragmentHeader, TokenBucket};

use crate::channel::{self, Channel};
use crate::config::{fragment_config, history_for_rtt, max_payload, should_resize, WIRE_OVERHEAD};
use crate::peer::{Peer, PeerStats};
use crate::{ClientId, DisconnectReason, Handled, Interest, NetError, PayloadError, ServerConfig};

/// Buffers kept for reuse by [`Server::poll_transmit`].
const POOL: usize = 256;
/// Most connect chunk slices sealed per client per refill.
const SLICES_PER_POLL: usize = 64;

/// A change a [`Server`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// A client answered its challenge; its connect snapshot goes out
    /// with the next tick.
    ClientConnected {
        /// Its id on this server (its slot).
        client: ClientId,
        /// The user id its connect token names.
        user: u64,
        /// Its address.
        addr: SocketAddr,
    },
    /// The client holds its connect snapshot and agreed to the session
    /// hello: regular snapshots flow.
    ClientReady {
        /// The client.
        client: ClientId,
    },
    /// The client's new address (a NAT rebinding) echoed its path token:
    /// the slot's packets now go there. An authenticated packet from a new
    /// address alone moves nothing (it may be an on-path copy).
    ClientMigrated {
        /// The client.
        client: ClientId,
        /// Its new address.
        to: SocketAddr,
    },
    /// A client is gone; its slot is free.
    ClientDisconnected {
        /// Its former id.
        client: ClientId,
        /// The user id its connect token named.
        user: u64,
        /// Why.
        reason: DisconnectReason,
    },
}

/// Counters of the whole server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Datagrams the connection layer refused.
    pub rejected: u64,
    /// Authenticated payloads that were malformed.
    pub malformed: u64,
    /// Payloads the connection layer would not seal (a client whose new
    /// address is not verified yet, over its amplification budget).
    pub unsent: u64,
}

/// The server endpoint: datagrams in through [`handle`](Self::handle),
/// the world in once per tick through [`tick`](Self::tick), datagrams out
/// through [`poll_transmit`](Self::poll_transmit), changes out through
/// [`poll_event`](Self::poll_event). `now` is the time since the Unix
/// epoch (the connect tokens' clock).
#[derive(Debug)]
pub struct Server<I> {
    conn: conn::Server,
    session: session::Server,
    hello: Hello,
    hello_bytes: Vec<u8>,
    interest: I,
    config: ServerConfig,
    part_payload: usize,
    peers: Vec<Option<Peer>>,
    /// Why the server itself ended a slot's connection.
    ending: Vec<Option<DisconnectReason>>,
    tick: u32,
    transmits: VecDeque<(SocketAddr, Vec<u8>)>,
    pool: Vec<Vec<u8>>,
    events: VecDeque<ServerEvent>,
    scratch: Vec<u8>,
    stats: ServerStats,
}

impl<I: Interest> Server<I> {
    /// A server for `schema`, asking `interest` what each client sees.
    pub fn new(schema: Schema, config: ServerConfig, interest: I) -> Result<Self, NetError> {
        if config.max_clients == 0 || config.max_clients > 0x7fff {
            return Err(NetError::BadMaxClients {
                max_clients: config.max_clients,
            });
        }
        let frag = fragment_config(config.mtu, config.max_parts, 1, 0)?;
        let mut conn_cfg = conn::ServerConfig::new(config.protocol_id, config.private_key.clone());
        conn_cfg.max_clients = config.max_clients;
        conn_cfg.max_payload = max_payload(config.mtu);
        let session = session::Server::new(schema, config.session.clone())?;
        let hello = session.hello();
        let slots = usize::from(config.max_clients);
        Ok(Self {
            conn: conn::Server::new(conn_cfg)?,
            hello_bytes: hello.to_bytes(),
            hello,
            session,
            interest,
            part_payload: frag.part_payload(),
            config,
            peers: (0..slots).map(|_| None).collect(),
            ending: vec![None; slots],
            tick: 0,
            transmits: VecDeque::new(),
            pool: Vec::new(),
            events: VecDeque::new(),
            scratch: Vec::new(),
            stats: ServerStats::default(),
        })
    }

    /// Takes one datagram from `from` (decrypted in place).
    pub fn handle(&mut self, now: Duration, from: SocketAddr, datagram: &mut [u8]) -> Handled {
        let r = self.conn.handle_datagram(now, from, datagram);
        self.conn_events();
        match r {
            Ok(None) => Handled::Control,
            Ok(Some((slot, payload))) => self.payload(now, slot, payload),
            Err(e) => {
                self.stats.rejected += 1;
                Handled::Rejected(e)
            }
        }
    }

    fn payload(&mut self, now: Duration, slot: u16, payload: &[u8]) -> Handled {
        let Some(peer) = self
            .peers
            .get_mut(usize::from(slot))
            .and_then(Option::as_mut)
        else {
            return Handled::Control;
        };
        let error = match channel::split(payload) {
            None => PayloadError::UnknownChannel,
            Some((Channel::Message, body)) => match self.session.handle_message(slot, body) {
                Ok(_) => return Handled::Payload,
                Err(e) => PayloadError::Session(e),
            },
            Some((Channel::ChunkAck, _)) if peer.chunk_acked => return Handled::Payload,
            Some((Channel::ChunkAck, body)) => match peer.chunk.handle_ack(body) {
                Ok(()) => {
                    if peer.chunk.stats().chunks_sent >= 1 {
                        peer.chunk_acked = true;
                        // Every slice arrived: the client holds that snapshot.
                        let _ = self.session.ack(slot, peer.chunk_seq);
                        self.ready(slot);
                    }
                    return Handled::Payload;
                }
                Err(e) => PayloadError::Chunk(e),
            },
            Some((Channel::Answer, _)) if peer.answered => return Handled::Payload,
            Some((Channel::Answer, body)) => {
                if Hello::parse(body).is_ok_and(|h| h == self.hello) {
                    peer.answered = true;
                    self.ready(slot);
                    return Handled::Payload;
                }
                self.end(now, slot, DisconnectReason::Refused);
                return Handled::Malformed(PayloadError::HelloMismatch);
            }
            Some((Channel::Fragment | Channel::Slice, _)) => PayloadError::WrongDirection,
        };
        self.stats.malformed += 1;
        if let Some(peer) = self
            .peers
            .get_mut(usize::from(slot))
            .and_then(Option::as_mut)
        {
            peer.stats.malformed += 1;
            if peer.stats.malformed > u64::from(self.config.bad_payload_limit) {
                self.end(now, slot, DisconnectReason::BadTraffic);
            }
        }
        Handled::Malformed(error)
    }

    /// Regular snapshots flow once the chunk is acked and the hello agreed.
    fn ready(&mut self, slot: u16) {
        if let Some(peer) = self
            .peers
            .get_mut(usize::from(slot))
            .and_then(Option::as_mut)
        {
            if peer.chunk_acked && peer.answered && !peer.live {
                peer.live = true;
                self.events.push_back(ServerEvent::ClientReady {
                    client: ClientId(slot),
                });
            }
        }
    }

    /// Ends `slot`'s connection for `reason`.
    fn end(&mut self, now: Duration, slot: u16, reason: DisconnectReason) {
        if let Some(e) = self.ending.get_mut(usize::from(slot)) {
            *e = Some(reason);
        }
        self.conn.disconnect(now, slot);
        self.conn_events();
    }

    fn conn_events(&mut self) {
        while let Some(event) = self.conn.poll_event() {
            match event {
                ConnEvent::Connected {
                    slot,
                    client_id,
                    addr,
                } => {
                    let Some(p) = self.peers.get_mut(usize::from(slot)) else {
                        continue;
                    };
                    self.session.connect(slot);
                    *p = Some(Peer::new(
                        client_id,
                        ChunkSender::new(self.config.chunk),
                        TokenBucket::new(self.config.pacing),
                    ));
                    self.events.push_back(ServerEvent::ClientConnected {
                        client: ClientId(slot),
                        user: client_id,
                        addr,
                    });
                }
                ConnEvent::Migrated { slot, to, .. } => {
                    if let Some(p) = self
                        .peers
                        .get_mut(usize::from(slot))
                        .and_then(Option::as_mut)
                    {
                        p.stats.migrations += 1;
                    }
                    self.events.push_back(ServerEvent::ClientMigrated {
                        client: ClientId(slot),
                        to,
                    });
                }
                ConnEvent::Disconnected {
                    slot,
                    client_id,
                    reason,
                } => {
                    let ours = self
                        .ending
                        .get_mut(usize::from(slot))
                        .and_then(Option::take);
                    let reason = ours.unwrap_or(match reason {
                        conn::DisconnectReason::TimedOut => DisconnectReason::TimedOut,
                        conn::DisconnectReason::ByLocal => DisconnectReason::Kicked,
                        conn::DisconnectReason::ByPeer => DisconnectReason::Left,
                        _ => DisconnectReason::Refused,
                    });
                    if let Some(p) = self.peers.get_mut(usize::from(slot)) {
                        *p = None;
                    }
                    self.session.disconnect(slot);
                    self.interest.disconnected(ClientId(slot));
                    self.events.push_back(ServerEvent::ClientDisconnected {
                        client: ClientId(slot),
                        user: client_id,
                        reason,
                    });
                }
                _ => {}
            }
        }
    }

    /// Drops silent connections and queues keep-alives. Call it every
    /// tick at least.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.conn.handle_timeout(now);
        self.conn_events();
    }

    /// Disconnects `client` ([`DisconnectReason::Kicked`]); `false` if it
    /// was not connected.
    pub fn kick(&mut self, now: Duration, client: ClientId) -> bool {
        if self.user(client).is_none() {
            return false;
        }
        self.end(now, client.0, DisconnectReason::Kicked);
        true
    }

    /// One tick of `world`: a new client's connect snapshot goes into its
    /// chunk, every ready client gets its snapshot (as its [`Interest`]
    /// view sees it) if its pacing allows. Returns the tick's sequence.
    pub fn tick(&mut self, now: Duration, world: Arc<Snapshot>) -> Result<u16, NetError> {
        let seq = self.session.begin_tick(world.clone());
        let tick = self.tick;
        self.tick = self.tick.wrapping_add(1);
        for slot in 0..self.config.max_clients {
            let Some(peer) = self.peers.get(usize::from(slot)).and_then(Option::as_ref) else {
                continue;
            };
            let (user, live, started) = (peer.user, peer.live, peer.chunk_started);
            if live {
                self.size_history(slot)?;
                self.send_snapshot(now, slot, user, tick, &world)?;
            } else if !started {
                self.start_chunk(slot, user, tick, &world)?;
            }
        }
        Ok(seq)
    }

    /// Sizes the client's ring for its round trip (within the configured
    /// cap), so that its acks still name snapshots the ring holds.
    fn size_history(&mut self, slot: u16) -> Result<(), NetError> {
        let wanted = history_for_rtt(
            self.config.tick,
            self.conn.rtt(slot),
            self.config.session.history,
            self.config.max_round_trip,
        );
        let current = self.session.history(slot).unwrap_or(wanted);
        if should_resize(current, wanted) {
            self.session.set_history(slot, wanted)?;
        }
        Ok(())
    }

    fn start_chunk(
        &mut self,
        slot: u16,
        user: u64,
        tick: u32,
        world: &Snapshot,
    ) -> Result<(), NetError> {
        let client = ClientId(slot);
        let view = self.interest.view(client, user, tick, world);
        let packet = self.session.send(slot, &view)?;
        let seq = self.session.sequence();
        let Some(peer) = self
            .peers
            .get_mut(usize::from(slot))
            .and_then(Option::as_mut)
        else {
            return Ok(());
        };
        if let Err(e) = peer
            .chunk
            .send(channel::connect_chunk(&self.hello_bytes, &packet))
        {
            // A world too large for a chunk: every client would fail.
            return Err(NetError::Chunk(e));
        }
        peer.chunk_started = true;
        peer.chunk_seq = seq;
        self.interest.sent(client, tick, &view);
        Ok(())
    }

    fn send_snapshot(
        &mut self,
        now: Duration,
        slot: u16,
        user: u64,
        tick: u32,
        world: &Snapshot,
    ) -> Result<(), NetError> {
        let client = ClientId(slot);
        let view = self.interest.view(client, user, tick, world);
        let full_before = self.session.stats().full;
        let packet = self.session.send(slot, &view)?;
        let Some(peer) = self
            .peers
            .get_mut(usize::from(slot))
            .and_then(Option::as_mut)
        else {
            return Ok(());
        };
        peer.stats.ticks += 1;
        let count = packet.len().div_ceil(self.part_payload).max(1);
        let Ok(count16) = u16::try_from(count) else {
            peer.stats.too_large += 1;
            return Ok(());
        };
        if count16 > self.config.max_parts {
            peer.stats.too_large += 1;
            return Ok(());
        }
        let wire = packet.len() + count * (tickpack_transport::FRAGMENT_HEADER_LEN + WIRE_OVERHEAD);
        match peer.bucket.try_consume(wire as u64, now) {
            Conformance::Red => {
                peer.stats.held_back += 1;
                return Ok(());
            }
            Conformance::Yellow => peer.stats.yellow += 1,
            _ => peer.stats.green += 1,
        }
        peer.stats.full += self.session.stats().full - full_before;
        peer.stats.bytes += packet.len() as u64;
        let sequence = peer.frag_seq;
        peer.frag_seq = sequence.wrapping_add(1);
        for (index, part) in (0..count16).zip(packet.chunks(self.part_payload)) {
            // The channel byte and fragment header go in front of the part;
            // sealing copies it once more, into the datagram that goes out.
            self.scratch.clear();
            self.scratch.push(Channel::Fragment as u8);
            FragmentHeader {
                sequence,
                index,
                count: count16,
            }
            .write(&mut self.scratch);
            self.scratch.extend_from_slice(part);
            let mut out = self.pool.pop().unwrap_or_default();
            match self.conn.send(now, slot, &self.scratch, &mut out) {
                Ok(to) => self.transmits.push_back((to, out)),
                Err(_) => {
                    self.stats.unsent += 1;
                    self.pool.push(out);
                }
            }
        }
        self.interest.sent(client, tick, &view);
        Ok(())
    }

    /// The next datagram to send: it is swapped into `buf` (whose old
    /// buffer is kept for reuse) and its destination returned. Call until
    /// `None` after every [`tick`](Self::tick), [`handle`](Self::handle)
    /// and [`handle_timeout`](Self::handle_timeout).
    pub fn poll_transmit(&mut self, now: Duration, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        if self.transmits.is_empty() {
            self.refill(now);
        }
        let (to, datagram) = self.transmits.pop_front()?;
        let old = std::mem::replace(buf, datagram);
        if self.pool.len() < POOL && old.capacity() > 0 {
            self.pool.push(old);
        }
        Some(to)
    }

    /// Handshake replies, keep-alives, disconnects and connect chunk
    /// slices (paid from each client's pacing).
    fn refill(&mut self, now: Duration) {
        let copies = self.config.chunk_copies.clamp(1, 4);
        while let Some(t) = self.conn.poll_transmit() {
            self.transmits.push_back((t.to, t.datagram));
        }
        for slot in 0..self.config.max_clients {
            for _ in 0..SLICES_PER_POLL {
                let Some(peer) = self
                    .peers
                    .get_mut(usize::from(slot))
                    .and_then(Option::as_mut)
                else {
                    break;
                };
                if !peer.chunk_started || peer.chunk_acked {
                    break;
                }
                // For a `ResendDelay::Rtt` chunk config; a fixed delay ignores it.
                if let Some(rtt) = self.conn.rtt(slot) {
                    peer.chunk.set_rtt(rtt.smoothed());
                }
                let Some(slice) = peer.chunk.poll_transmit_paced(now, &mut peer.bucket) else {
                    break;
                };
                let cost = (slice.len() + WIRE_OVERHEAD) as u64;
                let extra = (1..copies)
                    .take_while(|_| peer.bucket.try_consume_committed(cost, now))
                    .count();
                self.scratch.clear();
                self.scratch.push(Channel::Slice as u8);
                self.scratch.extend_from_slice(&slice);
                // Each copy is sealed on its own (a sequence of its own).
                for _ in 0..=extra {
                    let mut out = self.pool.pop().unwrap_or_default();
                    match self.conn.send(now, slot, &self.scratch, &mut out) {
                        Ok(to) => self.transmits.push_back((to, out)),
                        Err(_) => {
                            self.stats.unsent += 1;
                            self.pool.push(out);
                        }
                    }
                }
            }
        }
    }

    /// The next change, if any.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// The user id of connected `client`'s token.
    pub fn user(&self, client: ClientId) -> Option<u64> {
        self.peer(client).map(|p| p.user)
    }

    /// The connected client whose token named `user`.
    pub fn client_of(&self, user: u64) -> Option<ClientId> {
        self.conn.slot_of(user).map(ClientId)
    }

    /// Where `client`'s datagrams go.
    pub fn address(&self, client: ClientId) -> Option<SocketAddr> {
        self.conn.address(client.0)
    }

    /// The smoothed round-trip estimate to `client` (`None` before the
    /// connection layer's first ping answer).
    pub fn rtt(&self, client: ClientId) -> Option<conn::Rtt> {
        self.conn.rtt(client.0)
    }

    /// Whether `client` receives regular snapshots.
    pub fn is_ready(&self, client: ClientId) -> bool {
        self.peer(client).is_some_and(|p| p.live)
    }

    /// Connected clients, lowest id first.
    pub fn clients(&self) -> impl Iterator<Item = ClientId> + '_ {
        self.peers
            .iter()
            .enumerate()
            .filter(|(_, p)| p.is_some())
            .filter_map(|(i, _)| u16::try_from(i).ok().map(ClientId))
    }

    /// What `client` cost and did.
    pub fn peer_stats(&self, client: ClientId) -> Option<PeerStats> {
        self.peer(client).map(|p| p.stats)
    }

    /// Counters of the whole server.
    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    /// Ticks run so far (the tick count [`Interest`] is given).
    pub fn ticks(&self) -> u32 {
        self.tick
    }

    /// The codec session (its ring answers
    /// [`sent_state`](session::Server::sent_state) for a client's id).
    pub fn session(&self) -> &session::Server {
        &self.session
    }

    /// The interest hook.
    pub fn interest(&self) -> &I {
        &self.interest
    }

    /// The interest hook, to change it between ticks.
    pub fn interest_mut(&mut self) -> &mut I {
        &mut self.interest
    }

    fn peer(&self, client: ClientId) -> Option<&Peer> {
        self.peers
            .get(usize::from(client.0))
            .and_then(Option::as_ref)
    }
}
