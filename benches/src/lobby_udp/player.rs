//! One client process: its socket and lossy upload link around a
//! `tickpack_net::Client` (connection, connect chunk, reassembly, session,
//! jitter buffer and presented world).

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use tickpack_net::{Client, ClientEvent};
use tickpack_session::Persist;

use super::link::Link;
use super::Clock;

/// One client.
pub(crate) struct Player {
    pub(crate) id: u16,
    pub(crate) socket: UdpSocket,
    pub(crate) up: Link,
    pub(crate) net: Client,
    pub(crate) connected_at: Option<Duration>,
    /// The newest snapshot applied: its sequence and unrolled tick.
    pub(crate) unwrap: Option<(u16, i64)>,
    /// Under `--attack`: a copy of every datagram this client sends, for
    /// the attacker on its path (taken before the upload link's delay).
    pub(crate) sniffed: Option<Vec<Vec<u8>>>,
    buf: Vec<u8>,
}

/// What one client saw.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlayerStats {
    pub(crate) undecodable: u64,
    /// Datagrams the connection layer refused (forged, replayed, foreign).
    pub(crate) rejected: u64,
    /// Authenticated payloads refused (fragments, slices).
    pub(crate) transport_errors: u64,
}

impl Player {
    pub(crate) fn new(id: u16, socket: UdpSocket, up: Link, net: Client) -> Self {
        Self {
            id,
            socket,
            up,
            net,
            connected_at: None,
            unwrap: None,
            sniffed: None,
            buf: Vec::new(),
        }
    }

    /// The client's counters.
    pub(crate) fn stats(&self) -> PlayerStats {
        let s = self.net.stats();
        PlayerStats {
            undecodable: s.undecodable,
            rejected: s.rejected,
            transport_errors: s.malformed,
        }
    }

    /// The presented world.
    pub(crate) fn persist(&self) -> &Persist {
        self.net.persist()
    }

    /// Whatever the endpoint has to send goes on the upload link.
    pub(crate) fn tick(&mut self, now: Instant, clock: &Clock) {
        while let Some(server) = self.net.poll_transmit(clock.unix(), &mut self.buf) {
            if let Some(copies) = self.sniffed.as_mut() {
                copies.push(self.buf.clone());
            }
            self.up.push(now, server, std::mem::take(&mut self.buf));
        }
    }

    /// Reads every datagram waiting on the socket, then plays out.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        clock: &Clock,
        buf: &mut [u8],
    ) -> std::io::Result<()> {
        for _ in 0..super::MAX_READS {
            let (n, from) = match self.socket.recv_from(buf) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => continue,
                Err(e) => return Err(e),
            };
            if let Some(d) = buf.get_mut(..n) {
                self.handle(now, clock, from, d);
            }
        }
        self.net.handle_timeout(clock.unix());
        self.tick(now, clock);
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
        self.net.handle(clock.unix(), from, datagram);
        while let Some(event) = self.net.poll_event() {
            match event {
                ClientEvent::Connected => self.connected_at = Some(clock.since_start),
                ClientEvent::SnapshotApplied { sequence, tick }
                    if self.unwrap.is_none_or(|(_, t)| i64::from(tick) > t) =>
                {
                    self.unwrap = Some((sequence, i64::from(tick)));
                }
                _ => {}
            }
        }
        self.tick(now, clock);
    }
}
