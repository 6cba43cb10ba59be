//! One client process: its socket and upload link, the connection client,
//! reassembly, the connect chunk, the session client, the jitter buffer
//! and the presented world.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

use tickpack::session::{Client, DropReason, Persist, Received, View};
use tickpack::Snapshot;
use tickpack_transport::conn;
use tickpack_transport::{ChunkReceiver, JitterBuffer, Playout, Reassembler};

use super::link::Link;
use super::{Channel, Clock};

/// One client.
pub(crate) struct Player {
    pub(crate) id: u16,
    pub(crate) socket: UdpSocket,
    pub(crate) up: Link,
    pub(crate) conn: conn::Client,
    pub(crate) client: Client,
    pub(crate) reasm: Reassembler,
    pub(crate) chunks: ChunkReceiver,
    /// Applied snapshots (with `news_only`, the part of each that is news:
    /// [`fresh_part`]).
    pub(crate) jitter: JitterBuffer<Snapshot>,
    /// Present only what a snapshot changed against its baseline: the
    /// server holds skipped cars at older records.
    pub(crate) news_only: bool,
    /// The presented world, fed by the jitter buffer.
    pub(crate) persist: Persist,
    pub(crate) connected_at: Option<std::time::Duration>,
    /// The newest sequence seen, unrolled to a tick count.
    pub(crate) unwrap: Option<(u16, i64)>,
    pub(crate) stats: PlayerStats,
    out: Vec<u8>,
}

/// What one client saw.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlayerStats {
    pub(crate) undecodable: u64,
    pub(crate) stale: u64,
    pub(crate) unknown_baseline: u64,
    /// Datagrams the connection layer refused (forged, replayed, foreign).
    pub(crate) rejected: u64,
    /// Authenticated payloads the transport refused (fragments, slices).
    pub(crate) transport_errors: u64,
}

impl Player {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: u16,
        socket: UdpSocket,
        up: Link,
        conn: conn::Client,
        client: Client,
        reasm: Reassembler,
        chunks: ChunkReceiver,
        jitter: JitterBuffer<Snapshot>,
        persist: Persist,
        news_only: bool,
    ) -> Self {
        Self {
            id,
            socket,
            up,
            conn,
            client,
            reasm,
            chunks,
            jitter,
            news_only,
            persist,
            connected_at: None,
            unwrap: None,
            stats: PlayerStats::default(),
            out: Vec::new(),
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

    /// Seals `body` on `channel` for the server and queues it.
    fn send(&mut self, now: Instant, clock: &Clock, channel: Channel, body: &[u8]) {
        let mut payload = Vec::with_capacity(1 + body.len());
        payload.push(channel as u8);
        payload.extend_from_slice(body);
        if self
            .conn
            .send(clock.unix(), &payload, &mut self.out)
            .is_ok()
        {
            let server = self.conn.server();
            self.up.push(now, server, std::mem::take(&mut self.out));
        }
    }

    /// Once per tick: the ack message, and whatever the connection layer
    /// has due (requests, responses, keep-alives).
    pub(crate) fn tick(&mut self, now: Instant, clock: &Clock) {
        if self.connected_at.is_some() {
            let msg = self.client.message().to_bytes();
            self.send(now, clock, Channel::Message, &msg);
        }
        while let Some(d) = self.conn.poll_transmit(clock.unix()) {
            let server = self.conn.server();
            self.up.push(now, server, d);
        }
    }

    /// Reads every datagram waiting on the socket.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        clock: &Clock,
        buf: &mut [u8],
    ) -> std::io::Result<()> {
        self.chunks.handle_timeout(clock.since_start);
        for _ in 0..super::MAX_READS {
            let (n, from) = match self.socket.recv_from(buf) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => continue,
                Err(e) => return Err(e),
            };
            self.handle(now, clock, from, &mut buf[..n]);
        }
        self.play(clock);
        Ok(())
    }

    /// One datagram from `from` (a socket read, or a spoofed injection).
    pub(crate) fn handle(
        &mut self,
        now: Instant,
        clock: &Clock,
        from: SocketAddr,
        datagram: &mut [u8],
    ) {
        let payload = match self.conn.handle_datagram(clock.unix(), from, datagram) {
            Ok(Some(p)) => p.to_vec(),
            Ok(None) => return,
            Err(_) => {
                self.stats.rejected += 1;
                return;
            }
        };
        let (Some(&channel), Some(body)) = (payload.first(), payload.get(1..)) else {
            self.stats.transport_errors += 1;
            return;
        };
        match Channel::from_byte(channel) {
            Some(Channel::Fragment) => match self.reasm.handle(body, clock.since_start) {
                Ok(Some(packet)) if self.connected_at.is_some() => {
                    let r = self.client.receive(&packet);
                    self.applied(r, clock, true);
                }
                Ok(_) => {}
                Err(_) => self.stats.transport_errors += 1,
            },
            Some(Channel::Slice) => {
                if self.chunks.handle_slice(body).is_err() {
                    self.stats.transport_errors += 1;
                }
                if let Some(chunk) = self.chunks.poll_chunk() {
                    if self.connected_at.is_none() {
                        let r = self.client.receive(&chunk);
                        if let Received::Applied { sequence, .. } = r {
                            self.connected_at = Some(clock.since_start);
                            let tick = self.tick_of(sequence);
                            if let Some(snap) = self.client.get(sequence) {
                                self.persist.apply(tick, snap);
                            }
                        }
                        self.applied(r, clock, false);
                    }
                }
                for _ in 0..4 {
                    let Some(ack) = self.chunks.poll_transmit() else {
                        break;
                    };
                    self.send(now, clock, Channel::ChunkAck, &ack);
                }
            }
            _ => self.stats.transport_errors += 1,
        }
    }

    /// Counts what `Client::receive` did; applied snapshots go into the
    /// jitter buffer if `play` (not the connect snapshot: playout starts
    /// with the regular stream).
    fn applied(&mut self, r: Received, clock: &Clock, play: bool) {
        match r {
            Received::Applied { sequence, baseline } => {
                let tick = self.tick_of(sequence);
                if play {
                    let snap = if self.news_only {
                        fresh_part(&self.client, sequence, baseline)
                    } else {
                        self.client.get(sequence).cloned()
                    };
                    if let Some(snap) = snap {
                        self.jitter.push(tick, snap, clock.since_start);
                    }
                }
            }
            Received::Dropped(DropReason::Undecodable(e)) => {
                if self.stats.undecodable < 3 {
                    eprintln!("client {}: undecodable: {e}", self.id);
                }
                self.stats.undecodable += 1;
            }
            Received::Dropped(DropReason::Stale { .. }) => self.stats.stale += 1,
            Received::Dropped(DropReason::UnknownBaseline { .. }) => {
                self.stats.unknown_baseline += 1
            }
            Received::Dropped(_) => {}
        }
    }

    /// Plays out up to the newest snapshot received: ticks after it are
    /// not missing yet (and after the run they never come).
    fn play(&mut self, clock: &Clock) {
        while self
            .unwrap
            .is_some_and(|(_, t)| i64::from(self.jitter.next_tick()) <= t)
        {
            match self.jitter.poll(clock.since_start) {
                Some(Playout::Snapshot { tick, item }) => {
                    self.persist.apply(tick, &item);
                }
                Some(Playout::Gap { .. }) => {}
                None => break,
            }
        }
    }
}

/// The news in applied snapshot `sequence`: the entities whose record
/// differs from the one in `baseline`, the snapshot it was coded against
/// (all of them for a full snapshot). A car the server held at the
/// baseline's record ([`View::with_held`]) is left out, so the presented
/// world keeps the newer record it may already show. A car that did not
/// move is left out too: it shows the same record, but counts as not
/// updated (and expires from the presented world if it stays still for
/// longer than the linger time).
fn fresh_part(client: &Client, sequence: u16, baseline: Option<u16>) -> Option<Snapshot> {
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
