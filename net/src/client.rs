//! The client endpoint, sans-IO: the authenticated connection, the
//! connect chunk, reassembly, the codec session, the jitter buffer and
//! the presented world.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use tickpack::{Schema, Snapshot};
use tickpack_session::{self as session, DropReason, Persist, Received, View};
use tickpack_transport::conn::{self, ClientState, ConnectToken};
use tickpack_transport::{ChunkReceiver, JitterBuffer, Playout, Reassembler, MAX_CHUNK_SIZE};

use crate::channel::{self, Channel};
use crate::config::{fragment_config, history_for_rtt, max_payload, should_resize};
use crate::{ClientConfig, DisconnectReason, Handled, NetError, PayloadError};

/// Most chunk acks sent per slice received.
const ACKS_PER_SLICE: usize = 4;

/// A change a [`Client`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The connect snapshot arrived and the session hello agreed: the
    /// presented world holds the server's world.
    Connected,
    /// A snapshot was decoded and applied.
    SnapshotApplied {
        /// Its session sequence.
        sequence: u16,
        /// Its tick, unrolled from the sequence (counts up without wrap).
        tick: u32,
    },
    /// The connection ended; the client sends nothing more.
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
}

/// Counters of a client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Snapshots applied.
    pub applied: u64,
    /// Datagrams the connection layer refused (forged, replayed, foreign).
    pub rejected: u64,
    /// Authenticated payloads that were malformed.
    pub malformed: u64,
    /// Snapshots that did not decode.
    pub undecodable: u64,
    /// Snapshots older than the newest applied (late or duplicated).
    pub stale: u64,
    /// Snapshots against a baseline this client no longer holds.
    pub unknown_baseline: u64,
}

/// The client endpoint: datagrams in through [`handle`](Self::handle),
/// out through [`poll_transmit`](Self::poll_transmit), changes through
/// [`poll_event`](Self::poll_event), the presented world each frame
/// through [`presented`](Self::presented) after
/// [`handle_timeout`](Self::handle_timeout). `now` is the time since the
/// Unix epoch (the connect token's clock).
#[derive(Debug)]
pub struct Client {
    conn: conn::Client,
    session: session::Client,
    reasm: Reassembler,
    chunks: ChunkReceiver,
    jitter: JitterBuffer<Snapshot>,
    persist: Persist,
    config: ClientConfig,
    /// The connect snapshot was applied.
    connected: bool,
    /// The answer to the server's hello, sent with each message until a
    /// regular snapshot shows the server took it.
    answer: Option<Vec<u8>>,
    /// The connect chunk's final ack, sent with the answer.
    chunk_ack: Option<Vec<u8>>,
    ended: Option<DisconnectReason>,
    /// The newest sequence seen, unrolled to a tick count.
    unwrap: Option<(u16, i64)>,
    /// The last message sent and when.
    last_message: Option<(session::ClientMessage, Duration)>,
    transmits: VecDeque<Vec<u8>>,
    events: VecDeque<ClientEvent>,
    scratch: Vec<u8>,
    stats: ClientStats,
}

impl Client {
    /// A client connecting to `server` with `token`, decoding `schema`.
    pub fn new(
        now: Duration,
        server: SocketAddr,
        token: ConnectToken,
        schema: Schema,
        config: ClientConfig,
    ) -> Result<Self, NetError> {
        let frag = fragment_config(
            config.mtu,
            config.max_parts,
            config.max_piles,
            config.max_buffered_bytes,
        )?;
        let template = Snapshot::new(&schema);
        Ok(Self {
            conn: conn::Client::new(now, server, token, max_payload(config.mtu)),
            session: session::Client::new(schema, config.session.clone())?,
            reasm: Reassembler::new(frag),
            chunks: ChunkReceiver::new(MAX_CHUNK_SIZE),
            jitter: JitterBuffer::new(config.jitter),
            persist: Persist::new(&template, config.linger),
            config,
            connected: false,
            answer: None,
            chunk_ack: None,
            ended: None,
            unwrap: None,
            last_message: None,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            scratch: Vec::new(),
            stats: ClientStats::default(),
        })
    }

    /// Takes one datagram from `from` (decrypted in place).
    pub fn handle(&mut self, now: Duration, from: SocketAddr, datagram: &mut [u8]) -> Handled {
        let r = self.conn.handle_datagram(now, from, datagram);
        let handled = match r {
            Ok(None) => Handled::Control,
            Ok(Some(payload)) => match self.payload(now, payload) {
                Ok(()) => Handled::Payload,
                Err(e) => {
                    self.stats.malformed += 1;
                    Handled::Malformed(e)
                }
            },
            Err(e) => {
                self.stats.rejected += 1;
                Handled::Rejected(e)
            }
        };
        self.check_state();
        handled
    }

    fn payload(&mut self, now: Duration, payload: &[u8]) -> Result<(), PayloadError> {
        match channel::split(payload) {
            Some((Channel::Fragment, body)) => {
                let packet = self
                    .reasm
                    .handle(body, now)
                    .map_err(PayloadError::Fragment)?;
                if let Some(packet) = packet.filter(|_| self.connected) {
                    // The server sends regular snapshots only once it took
                    // the answer.
                    self.answer = None;
                    self.chunk_ack = None;
                    let r = self.session.receive(&packet);
                    self.applied(r, now);
                }
                Ok(())
            }
            Some((Channel::Slice, body)) => {
                let r = self.chunks.handle_slice(body).map_err(PayloadError::Chunk);
                let chunk = self.chunks.poll_chunk();
                let mut last = None;
                for _ in 0..ACKS_PER_SLICE {
                    let Some(ack) = self.chunks.poll_transmit() else {
                        break;
                    };
                    self.seal(now, Channel::ChunkAck, &ack);
                    last = Some(ack);
                }
                if chunk.is_some() && !self.connected {
                    self.chunk_ack = last;
                }
                r?;
                match chunk {
                    Some(chunk) if !self.connected => self.connect_chunk(now, &chunk),
                    _ => Ok(()),
                }
            }
            Some(_) => Err(PayloadError::WrongDirection),
            None => Err(PayloadError::UnknownChannel),
        }
    }

    /// The connect chunk: the server's hello, then the first snapshot.
    fn connect_chunk(&mut self, now: Duration, chunk: &[u8]) -> Result<(), PayloadError> {
        let (hello, packet) =
            channel::parse_connect_chunk(chunk).ok_or(PayloadError::BadConnectChunk)?;
        match self.session.answer(hello) {
            Ok(answer) => self.answer = Some(answer),
            Err(e) => {
                // Schema, dictionaries or limits differ: nothing would decode.
                self.end(now, DisconnectReason::Refused);
                return Err(PayloadError::Session(e));
            }
        }
        let r = self.session.receive(packet);
        if let Received::Applied { sequence, .. } = r {
            self.connected = true;
            self.events.push_back(ClientEvent::Connected);
            let tick = self.tick_of(sequence);
            if let Some(snap) = self.session.get(sequence) {
                self.persist.apply(tick, snap);
            }
            self.stats.applied += 1;
            self.events
                .push_back(ClientEvent::SnapshotApplied { sequence, tick });
            self.send_message(now);
        }
        Ok(())
    }

    fn applied(&mut self, r: Received, now: Duration) {
        match r {
            Received::Applied { sequence, baseline } => {
                self.stats.applied += 1;
                let tick = self.tick_of(sequence);
                let snap = if self.config.news_only {
                    fresh_part(&self.session, sequence, baseline)
                } else {
                    self.session.get(sequence).cloned()
                };
                if let Some(snap) = snap {
                    self.jitter.push(tick, snap, now);
                }
                self.events
                    .push_back(ClientEvent::SnapshotApplied { sequence, tick });
                self.send_message(now);
            }
            Received::Dropped(DropReason::Undecodable(_)) => self.stats.undecodable += 1,
            Received::Dropped(DropReason::Stale { .. }) => self.stats.stale += 1,
            Received::Dropped(DropReason::UnknownBaseline { .. }) => {
                self.stats.unknown_baseline += 1;
            }
            Received::Dropped(_) => {}
        }
    }

    fn tick_of(&mut self, seq: u16) -> u32 {
        let t = match self.unwrap {
            None => 1 << 20,
            Some((last_seq, last)) => last + i64::from(seq.wrapping_sub(last_seq) as i16),
        };
        if self.unwrap.is_none_or(|(_, last)| t > last) {
            self.unwrap = Some((seq, t));
        }
        t.clamp(0, i64::from(u32::MAX)) as u32
    }

    /// The session message (and, until the server took it, the answer to
    /// its hello).
    fn send_message(&mut self, now: Duration) {
        if self.slot().is_none() {
            return;
        }
        let m = self.session.message();
        self.last_message = Some((m, now));
        self.seal(now, Channel::Message, &m.to_bytes());
        if let Some(answer) = self.answer.take() {
            self.seal(now, Channel::Answer, &answer);
            self.answer = Some(answer);
            // Until a regular snapshot shows the server has both, the
            // chunk's final ack goes too: otherwise only a resent slice
            // draws another, one chunk resend delay later (seconds at high
            // loss and a long round trip).
            if let Some(ack) = self.chunk_ack.take() {
                self.seal(now, Channel::ChunkAck, &ack);
                self.chunk_ack = Some(ack);
            }
        }
    }

    fn slot(&self) -> Option<u16> {
        match self.conn.state() {
            ClientState::Connected { slot } => Some(slot),
            _ => None,
        }
    }

    /// Seals `body` on `channel` for the server and queues it.
    fn seal(&mut self, now: Duration, channel: Channel, body: &[u8]) {
        self.scratch.clear();
        self.scratch.push(channel as u8);
        self.scratch.extend_from_slice(body);
        let mut out = Vec::new();
        if self.conn.send(now, &self.scratch, &mut out).is_ok() {
            self.transmits.push_back(out);
        }
    }

    /// Reports the end of the connection once.
    fn check_state(&mut self) {
        if self.ended.is_some() {
            return;
        }
        if let ClientState::Disconnected(r) = self.conn.state() {
            let reason = match r {
                conn::DisconnectReason::TimedOut => DisconnectReason::TimedOut,
                conn::DisconnectReason::ByPeer => DisconnectReason::Kicked,
                conn::DisconnectReason::ByLocal => DisconnectReason::Left,
                _ => DisconnectReason::Refused,
            };
            self.ended = Some(reason);
            self.events.push_back(ClientEvent::Disconnected { reason });
        }
    }

    fn end(&mut self, now: Duration, reason: DisconnectReason) {
        if self.ended.is_none() {
            self.transmits.extend(self.conn.disconnect(now));
            self.ended = Some(reason);
            self.events.push_back(ClientEvent::Disconnected { reason });
        }
    }

    /// Ends the connection ([`DisconnectReason::Left`]); the goodbye
    /// packets come out of [`poll_transmit`](Self::poll_transmit).
    pub fn disconnect(&mut self, now: Duration) {
        self.end(now, DisconnectReason::Left);
    }

    /// Expires stalled chunks and reassemblies, and plays out the jitter
    /// buffer into the presented world. Call it every frame.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.size_history();
        self.chunks.handle_timeout(now);
        self.reasm.handle_timeout(now);
        // Plays up to the newest snapshot received: later ticks are not
        // missing yet.
        while self
            .unwrap
            .is_some_and(|(_, t)| i64::from(self.jitter.next_tick()) <= t)
        {
            match self.jitter.poll(now) {
                Some(Playout::Snapshot { tick, item }) => {
                    self.persist.apply(tick, &item);
                }
                Some(Playout::Gap { .. }) => {}
                None => break,
            }
        }
    }

    /// Sizes the session history for the round trip as the server sizes
    /// this client's ring (its baselines must still be here).
    fn size_history(&mut self) {
        let wanted = history_for_rtt(
            self.config.jitter.tick,
            self.conn.rtt(),
            self.config.session.history,
            self.config.max_round_trip,
        );
        if should_resize(self.session.history(), wanted) {
            self.session.set_history(wanted);
        }
    }

    /// The next datagram for the server, swapped into `buf`; returns the
    /// server's address. Call until `None` after every
    /// [`handle`](Self::handle) and frame.
    pub fn poll_transmit(&mut self, now: Duration, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        if self.transmits.is_empty() {
            while let Some(d) = self.conn.poll_transmit(now) {
                self.transmits.push_back(d);
            }
            let refresh = self
                .last_message
                .is_none_or(|(_, at)| now.saturating_sub(at) >= self.config.ack_refresh);
            if self.connected && self.ended.is_none() && refresh {
                self.send_message(now);
            }
            self.check_state();
        }
        *buf = self.transmits.pop_front()?;
        Some(self.conn.server())
    }

    /// The next change, if any.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// The presented world: the jitter buffer's output, entities no
    /// snapshot updated for the linger time removed.
    pub fn presented(&self) -> &Snapshot {
        self.persist.state()
    }

    /// The presented world with its per-entity ages.
    pub fn persist(&self) -> &Persist {
        &self.persist
    }

    /// The newest applied snapshot and its sequence (what the server sent,
    /// before the jitter buffer).
    pub fn latest(&self) -> Option<(u16, &Snapshot)> {
        self.session.latest()
    }

    /// The codec session.
    pub fn session(&self) -> &session::Client {
        &self.session
    }

    /// The jitter buffer's counters.
    pub fn jitter(&self) -> &JitterBuffer<Snapshot> {
        &self.jitter
    }

    /// The connect snapshot arrived and no disconnect since.
    pub fn is_connected(&self) -> bool {
        self.connected && self.ended.is_none()
    }

    /// Why the connection ended, if it did.
    pub fn disconnect_reason(&self) -> Option<DisconnectReason> {
        self.ended
    }

    /// The smoothed round-trip estimate to the server (`None` before the
    /// first ping answer).
    pub fn rtt(&self) -> Option<conn::Rtt> {
        self.conn.rtt()
    }

    /// The server's address.
    pub fn server(&self) -> SocketAddr {
        self.conn.server()
    }

    /// Counters.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }
}

/// The news in applied snapshot `sequence`: the entities whose record
/// differs from the one in `baseline` (all of them for a full snapshot),
/// so an entity held at an older record never replaces a newer one.
fn fresh_part(client: &session::Client, sequence: u16, baseline: Option<u16>) -> Option<Snapshot> {
    let snap = client.get(sequence)?;
    let Some(base) = baseline.and_then(|b| client.get(b)) else {
        return Some(snap.clone());
    };
    let changed = snap
        .sections()
        .iter()
        .enumerate()
        .map(|(i, sec)| {
            let old = base.sections().get(i);
            sec.iter()
                .filter(|(id, rec)| old.and_then(|o| o.get(*id)) != Some(*rec))
                .map(|(id, _)| id)
                .collect()
        })
        .collect();
    let mut out = Snapshot::default();
    View::filter(changed).apply(snap, &mut out);
    Some(out)
}
