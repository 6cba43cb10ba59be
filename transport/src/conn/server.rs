//! The server side: accepts connection requests that carry a valid connect
//! token, proves the client receives at its address with a challenge, then
//! authenticates every packet of the connection. The handshake's handlers
//! are in `handshake`; connected packets, path validation and timers here.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

use super::challenge::Challenger;
use super::crypto::{fill_random, Key, PacketKey};
use super::limit::{RateLimit, PER_ADDRESS};
use super::packet::{
    open_packet, parse_header, seal_packet, Header, CLIENT_OVERHEAD, DISCONNECT, KEEPALIVE, PATH,
    PAYLOAD, PING, PONG, REQUEST, REQUEST_BYTES, RESPONSE,
};
use super::path::{PathCheck, Paths, PATH_PROBE_TIMEOUT, PATH_RESEND, PATH_TOKEN_BYTES};
use super::replay::{Replay, ReplayWindow};
use super::rtt::{Pinger, Rtt};
use super::used::UsedTokens;
use super::{ConnError, DisconnectReason, KEEPALIVE_INTERVAL, PING_INTERVAL};

mod handshake;

/// Most handshake replies and keep-alives queued for [`Server::poll_transmit`];
/// further ones are dropped (the client resends its request).
const MAX_QUEUED: usize = 1024;
/// Most queued packets under which a handshake reply is still queued: half
/// the queue, the other half kept for connected clients' keep-alives,
/// disconnects and path checks.
const MAX_QUEUED_HANDSHAKES: usize = MAX_QUEUED / 2;
/// Copies of a disconnect packet sent, since any of them may be lost.
const DISCONNECT_COPIES: usize = 3;

/// How a [`Server`] accepts clients.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The game's protocol id; requests of other protocols are refused.
    pub protocol_id: u64,
    /// The key the backend seals connect tokens with.
    pub private_key: Key,
    /// Most clients connected at once (slots `0..max_clients`).
    pub max_clients: u16,
    /// Largest payload accepted or sent, in bytes.
    pub max_payload: usize,
    /// The addresses clients reach this server at (as the backend lists
    /// them in connect tokens). When set, a token that names none of them
    /// is refused ([`ConnError::WrongServer`]), so a token issued for one
    /// server does not connect to another sharing its key. Empty (the
    /// default) checks nothing.
    pub public_addresses: Vec<SocketAddr>,
}

impl ServerConfig {
    /// 64 clients, payloads up to 1,200 bytes.
    pub fn new(protocol_id: u64, private_key: Key) -> Self {
        Self {
            protocol_id,
            private_key,
            max_clients: 64,
            max_payload: 1200,
            public_addresses: Vec::new(),
        }
    }
}

/// A datagram for the caller to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub to: SocketAddr,
    /// The bytes.
    pub datagram: Vec<u8>,
}

/// A change of a connection, from [`Server::poll_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// A client answered its challenge and now owns `slot`.
    Connected {
        /// The client's slot.
        slot: u16,
        /// The id from its connect token.
        client_id: u64,
        /// Its address.
        addr: SocketAddr,
    },
    /// A new address of the client (a NAT rebinding) echoed its path
    /// token; the slot's packets now go there.
    Migrated {
        /// The client's slot.
        slot: u16,
        /// The old address.
        from: SocketAddr,
        /// The new address.
        to: SocketAddr,
    },
    /// A connection ended; its slot is free.
    Disconnected {
        /// The client's former slot.
        slot: u16,
        /// The id from its connect token.
        client_id: u64,
        /// Why.
        reason: DisconnectReason,
    },
}

#[derive(Debug)]
struct Connection {
    client_id: u64,
    addr: SocketAddr,
    client_to_server: PacketKey,
    server_to_client: PacketKey,
    timeout: Duration,
    next_sequence: u64,
    replay: ReplayWindow,
    last_received: Duration,
    last_sent: Duration,
    /// New addresses that have not echoed their path token yet; packets
    /// still go to `addr`, the last validated one.
    paths: Paths,
    pinger: Pinger,
    /// When the last pong was queued (one per half [`PING_INTERVAL`]).
    last_pong: Option<Duration>,
    /// When the welcome (a keep-alive naming the slot) last went out,
    /// until the client's first authenticated packet shows it arrived:
    /// payloads name no slot, so only a welcome connects the client.
    unconfirmed: Option<Duration>,
}

/// How often a connection whose client has sent no authenticated packet
/// yet is sent its welcome again (as the client resends its response).
pub const WELCOME_RESEND: Duration = Duration::from_millis(100);

/// The server side of the connection layer, sans-IO: datagrams go in
/// through [`Server::handle_datagram`], payloads out through
/// [`Server::send`], handshake replies and keep-alives through
/// [`Server::poll_transmit`], connection changes through
/// [`Server::poll_event`]. `now` is always the time since the Unix epoch.
///
/// To an address that has not proven it receives there (by answering a
/// challenge), the server sends only challenges and denials, each smaller
/// than the packet that caused it.
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    challenger: Challenger,
    slots: Vec<Option<Connection>>,
    by_client_id: HashMap<u64, u16>,
    /// The tokens that got a slot, until they expire.
    used_tokens: UsedTokens,
    /// Handshake replies per token and per source IP.
    address_limit: RateLimit<SocketAddr>,
    /// Handshake replies queued per token (client-to-server token key).
    queued_by_token: HashMap<[u8; 32], usize>,
    events: VecDeque<ServerEvent>,
    /// Queued datagrams, each handshake reply with its token's key.
    transmits: VecDeque<(Transmit, Option<[u8; 32]>)>,
}

impl Server {
    /// A server with a fresh random challenge key.
    pub fn new(config: ServerConfig) -> Result<Self, ConnError> {
        let mut slots = Vec::new();
        slots.resize_with(usize::from(config.max_clients), || None);
        Ok(Self {
            challenger: Challenger::new()?,
            slots,
            by_client_id: HashMap::new(),
            used_tokens: UsedTokens::default(),
            address_limit: RateLimit::new(PER_ADDRESS),
            queued_by_token: HashMap::new(),
            events: VecDeque::new(),
            transmits: VecDeque::new(),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Handles one datagram from `from`. Returns the slot and payload of an
    /// authenticated payload packet (decrypted in place inside `datagram`),
    /// `None` for handshake and control packets, and an error for anything
    /// forged, replayed, expired or malformed (the server's state is then
    /// unchanged).
    pub fn handle_datagram<'a>(
        &mut self,
        now: Duration,
        from: SocketAddr,
        datagram: &'a mut [u8],
    ) -> Result<Option<(u16, &'a [u8])>, ConnError> {
        let max = REQUEST_BYTES.max(self.config.max_payload + CLIENT_OVERHEAD);
        if datagram.len() > max {
            return Err(ConnError::Oversized {
                len: datagram.len(),
                max,
            });
        }
        match datagram.first() {
            None => Err(ConnError::Truncated { len: 0, min: 1 }),
            Some(&REQUEST) => self.handle_request(now, from, datagram).map(|()| None),
            Some(&RESPONSE) => self.handle_response(now, from, datagram).map(|()| None),
            Some(_) => self.handle_connected(now, from, datagram),
        }
    }

    fn handle_connected<'a>(
        &mut self,
        now: Duration,
        from: SocketAddr,
        datagram: &'a mut [u8],
    ) -> Result<Option<(u16, &'a [u8])>, ConnError> {
        let len = datagram.len();
        let header: Header = parse_header(datagram, true)?;
        let slot = header.slot.unwrap_or(u16::MAX);
        let protocol_id = self.config.protocol_id;
        let Some(conn) = self
            .slots
            .get_mut(usize::from(slot))
            .and_then(Option::as_mut)
        else {
            return Err(ConnError::UnknownSlot { slot });
        };
        if let Err(e) = check_replay(&conn.replay, header.sequence) {
            // A copy may have arrived first from another address: an
            // authentic duplicate from a new address still probes it, and
            // one from a probed address may carry its echo.
            if from != conn.addr && (conn.paths.probing(from) || conn.paths.may_start(now)) {
                if let Ok(body) =
                    open_packet(datagram, &header, protocol_id, &conn.client_to_server)
                {
                    let echo = (header.kind == PATH).then_some(body);
                    let probe =
                        path_seen(conn, slot, from, len, echo, false, now, &mut self.events);
                    if let Some(to) = probe {
                        let _ = self.queue_path(now, slot, to);
                    }
                }
            }
            return Err(e);
        }
        let body = open_packet(datagram, &header, protocol_id, &conn.client_to_server)?;
        let newest = conn.replay.accept(header.sequence);
        conn.last_received = now;
        conn.unconfirmed = None;
        let echo = (header.kind == PATH).then_some(body);
        let probe = path_seen(conn, slot, from, len, echo, newest, now, &mut self.events);
        let mut pong = None;
        match header.kind {
            PING if conn
                .last_pong
                .is_none_or(|t| now.saturating_sub(t) >= PING_INTERVAL / 2) =>
            {
                conn.last_pong = Some(now);
                pong = <[u8; 8]>::try_from(body).ok();
            }
            PONG => conn.pinger.pong(body, now),
            _ => {}
        }
        if let Some(to) = probe {
            // Sealing an 8-byte body cannot fail, and the budget allows a
            // path packet for the packet that started the probe; a failure
            // only leaves the token to the next resend.
            let _ = self.queue_path(now, slot, to);
        }
        if let Some(id) = pong {
            let _ = self.queue_sealed(now, slot, PONG, &id);
        }
        match header.kind {
            PAYLOAD if body.is_empty() => Err(ConnError::EmptyPayload),
            PAYLOAD => Ok(Some((slot, body))),
            DISCONNECT => {
                self.remove(slot, DisconnectReason::ByPeer);
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// Seals `payload` for the client in `slot` into `out` (cleared first)
    /// and returns the address to send it to.
    pub fn send(
        &mut self,
        now: Duration,
        slot: u16,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<SocketAddr, ConnError> {
        if payload.is_empty() {
            return Err(ConnError::EmptyPayload);
        }
        if payload.len() > self.config.max_payload {
            return Err(ConnError::PayloadTooLarge {
                len: payload.len(),
                max: self.config.max_payload,
            });
        }
        let protocol_id = self.config.protocol_id;
        let conn = self.connection_mut(slot)?;
        seal_packet(
            PAYLOAD,
            conn.next_sequence,
            None,
            protocol_id,
            &conn.server_to_client,
            payload,
            out,
        )?;
        conn.next_sequence += 1;
        conn.last_sent = now;
        Ok(conn.addr)
    }

    /// Drops connections silent for longer than their timeout; sends each
    /// connection a ping every [`PING_INTERVAL`] and a keep-alive when the
    /// server has sent it nothing for [`KEEPALIVE_INTERVAL`]; sends a new
    /// address that has not echoed its path token the token again every
    /// [`PATH_RESEND`](super::PATH_RESEND), and gives the probe up after
    /// [`PATH_PROBE_TIMEOUT`](super::PATH_PROBE_TIMEOUT). Call it every tick.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.address_limit.sweep(now);
        for slot in 0..self.config.max_clients {
            let Some(conn) = self.slots[usize::from(slot)].as_mut() else {
                continue;
            };
            if now.saturating_sub(conn.last_received) > conn.timeout {
                self.remove(slot, DisconnectReason::TimedOut);
                continue;
            }
            // Never answered: the connection stays on its validated address
            // (a copier's address gets nothing more).
            conn.paths.expire(now);
            let resend_path = conn.paths.due(now, PATH_RESEND);
            let ping = conn.pinger.due(now, PING_INTERVAL);
            // A client still waiting for its welcome gets it again even
            // while payloads flow (they keep `last_sent` fresh).
            let welcome = conn
                .unconfirmed
                .is_some_and(|t| now.saturating_sub(t) >= WELCOME_RESEND);
            let keepalive = now.saturating_sub(conn.last_sent) >= KEEPALIVE_INTERVAL;
            // Sealing a small body cannot fail, and a send refused by the
            // path's budget is tried next time: failures only skip a packet.
            for to in resend_path {
                let _ = self.queue_path(now, slot, to);
            }
            // A client without its slot cannot answer a ping.
            if welcome {
                let _ = self.queue_keepalive(now, slot);
            } else if ping {
                let _ = self.queue_ping(now, slot);
            } else if keepalive {
                let _ = self.queue_keepalive(now, slot);
            }
        }
    }

    /// The smoothed round-trip time to the client in `slot`, from its
    /// answers to the server's pings (`None` before the first answer).
    pub fn rtt(&self, slot: u16) -> Option<Rtt> {
        self.connection(slot).and_then(|c| c.pinger.rtt)
    }

    /// Ends the connection in `slot`, queueing disconnect packets for the
    /// client. Returns whether the slot was connected.
    pub fn disconnect(&mut self, now: Duration, slot: u16) -> bool {
        let protocol_id = self.config.protocol_id;
        let Ok(conn) = self.connection_mut(slot) else {
            return false;
        };
        let mut packets = Vec::with_capacity(DISCONNECT_COPIES);
        for _ in 0..DISCONNECT_COPIES {
            let mut out = Vec::new();
            if seal_packet(
                DISCONNECT,
                conn.next_sequence,
                None,
                protocol_id,
                &conn.server_to_client,
                &[],
                &mut out,
            )
            .is_ok()
            {
                packets.push(out);
            }
            conn.next_sequence += 1;
        }
        conn.last_sent = now;
        let addr = conn.addr;
        for datagram in packets {
            self.queue(addr, datagram);
        }
        self.remove(slot, DisconnectReason::ByLocal);
        true
    }

    /// The next datagram to send (handshake replies, keep-alives,
    /// disconnects).
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        let (transmit, token) = self.transmits.pop_front()?;
        if let Some(key) = token {
            if let Some(n) = self.queued_by_token.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.queued_by_token.remove(&key);
                }
            }
        }
        Some(transmit)
    }

    /// The next connection change.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// The address of the client in `slot`: the last validated one, where
    /// [`Server::send`] and the control packets go.
    pub fn address(&self, slot: u16) -> Option<SocketAddr> {
        self.connection(slot).map(|c| c.addr)
    }

    /// The connect token's client id of the client in `slot`.
    pub fn client_id(&self, slot: u16) -> Option<u64> {
        self.connection(slot).map(|c| c.client_id)
    }

    /// The slot of the connected client with `client_id`.
    pub fn slot_of(&self, client_id: u64) -> Option<u16> {
        self.by_client_id.get(&client_id).copied()
    }

    /// Connected slots, lowest first.
    pub fn connected(&self) -> impl Iterator<Item = u16> + '_ {
        (0..self.config.max_clients).filter(|&s| self.connection(s).is_some())
    }

    fn connection(&self, slot: u16) -> Option<&Connection> {
        self.slots.get(usize::from(slot)).and_then(Option::as_ref)
    }

    fn connection_mut(&mut self, slot: u16) -> Result<&mut Connection, ConnError> {
        self.slots
            .get_mut(usize::from(slot))
            .and_then(Option::as_mut)
            .ok_or(ConnError::UnknownSlot { slot })
    }

    fn free_slot(&self) -> Option<u16> {
        (0..self.config.max_clients).find(|&s| self.slots[usize::from(s)].is_none())
    }

    fn remove(&mut self, slot: u16, reason: DisconnectReason) {
        if let Some(conn) = self.slots[usize::from(slot)].take() {
            self.by_client_id.remove(&conn.client_id);
            self.events.push_back(ServerEvent::Disconnected {
                slot,
                client_id: conn.client_id,
                reason,
            });
        }
    }

    fn queue_keepalive(&mut self, now: Duration, slot: u16) -> Result<(), ConnError> {
        let body = welcome_body(slot, self.config.max_clients);
        let conn = self.connection_mut(slot)?;
        if conn.unconfirmed.is_some() {
            conn.unconfirmed = Some(now);
        }
        self.queue_sealed(now, slot, KEEPALIVE, &body)
    }

    /// Seals a control packet for `slot` and queues it to the client's
    /// validated address.
    fn queue_sealed(
        &mut self,
        now: Duration,
        slot: u16,
        kind: u8,
        body: &[u8],
    ) -> Result<(), ConnError> {
        let protocol_id = self.config.protocol_id;
        let conn = self.connection_mut(slot)?;
        let mut out = Vec::new();
        seal_packet(
            kind,
            conn.next_sequence,
            None,
            protocol_id,
            &conn.server_to_client,
            body,
            &mut out,
        )?;
        conn.next_sequence += 1;
        conn.last_sent = now;
        let addr = conn.addr;
        self.queue(addr, out);
        Ok(())
    }

    /// Queues a ping whose id is its own sequence.
    fn queue_ping(&mut self, now: Duration, slot: u16) -> Result<(), ConnError> {
        let id = self.connection_mut(slot)?.next_sequence;
        self.queue_sealed(now, slot, PING, &id.to_le_bytes())?;
        self.connection_mut(slot)?.pinger.sent(id, now);
        Ok(())
    }

    /// Sends the probed address `to` its path token, within its budget.
    fn queue_path(&mut self, now: Duration, slot: u16, to: SocketAddr) -> Result<(), ConnError> {
        let protocol_id = self.config.protocol_id;
        let conn = self.connection_mut(slot)?;
        let Some(path) = conn.paths.get_mut(to) else {
            return Ok(());
        };
        let mut out = Vec::new();
        seal_packet(
            PATH,
            conn.next_sequence,
            None,
            protocol_id,
            &conn.server_to_client,
            &path.token,
            &mut out,
        )?;
        path.charge(out.len())?;
        path.sent_at = now;
        conn.next_sequence += 1;
        let to = path.addr;
        self.queue(to, out);
        Ok(())
    }

    fn queue(&mut self, to: SocketAddr, datagram: Vec<u8>) {
        if self.transmits.len() < MAX_QUEUED {
            self.transmits.push_back((Transmit { to, datagram }, None));
        }
    }
}

/// What an authentic packet of `conn` from `from` (`len` bytes, `echo` its
/// body if a path packet, `newest` if newer than every before it) does to
/// path validation: moves the connection if it echoes the probe of `from`,
/// ends the probes if the validated address is still sending, or starts a
/// probe of a new address (returned, for its token to go out). A probed
/// address that sends without echoing is returned too once its token is
/// [`PATH_RESEND`] old: it is sent again, within its budget.
#[allow(clippy::too_many_arguments)]
fn path_seen(
    conn: &mut Connection,
    slot: u16,
    from: SocketAddr,
    len: usize,
    echo: Option<&[u8]>,
    newest: bool,
    now: Duration,
    events: &mut VecDeque<ServerEvent>,
) -> Option<SocketAddr> {
    if from == conn.addr {
        if newest {
            // The client did not move (RFC 9000 §9.3.3).
            conn.paths.clear();
        }
        return None;
    }
    if let Some(path) = conn.paths.get_mut(from) {
        path.received(len);
        let resend = now.saturating_sub(path.sent_at) >= PATH_RESEND;
        if echo.is_some_and(|b| b == path.token) {
            // The new address answered: the client really is there.
            events.push_back(ServerEvent::Migrated {
                slot,
                from: conn.addr,
                to: from,
            });
            conn.addr = from;
            conn.paths.clear();
            return None;
        }
        return resend.then_some(from);
    }
    let late = conn.paths.expired_token(from);
    if late.is_some_and(|t| echo == Some(&t[..])) {
        // A late echo of a probe that ran out of time: the token only
        // went to this address, so the client receives there.
        events.push_back(ServerEvent::Migrated {
            slot,
            from: conn.addr,
            to: from,
        });
        conn.addr = from;
        conn.paths.clear();
        return None;
    }
    if !conn.paths.may_start(now) {
        return None;
    }
    // A failing random source only leaves the connection where it is; the
    // next packet from there tries again.
    let mut token = [0u8; PATH_TOKEN_BYTES];
    match late {
        Some(t) => token = t,
        None => fill_random(&mut token).ok()?,
    }
    let timeout = conn.pinger.rtt.map_or(PATH_PROBE_TIMEOUT, |r| {
        PATH_PROBE_TIMEOUT.max(r.smoothed() * 3)
    });
    conn.paths
        .start(PathCheck::new(from, token, len, now, timeout));
    Some(from)
}

/// A server keep-alive's body, which welcomes a client to `slot`.
fn welcome_body(slot: u16, max_clients: u16) -> [u8; 4] {
    let mut body = [0u8; 4];
    body[..2].copy_from_slice(&slot.to_le_bytes());
    body[2..].copy_from_slice(&max_clients.to_le_bytes());
    body
}

/// Maps the replay window's verdict to the error.
pub(crate) fn check_replay(window: &ReplayWindow, sequence: u64) -> Result<(), ConnError> {
    window.check(sequence).map_err(|r| match r {
        Replay::Duplicate => ConnError::Replayed { sequence },
        Replay::TooOld { newest } => ConnError::TooOld { sequence, newest },
    })
}
