//! The server side: accepts connection requests that carry a valid connect
//! token, proves the client receives at its address with a challenge, then
//! authenticates every packet of the connection.
//!
//! Over 600 lines on purpose: one state machine (pending handshakes,
//! connections, path validation) whose handlers share its tables.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::crypto::{fill_random, Key, PacketKey, KEY_BYTES, TAG_BYTES};
use super::packet::{
    check_len, open_packet, parse_header, parse_request, seal_handshake, seal_packet, Header,
    CHALLENGE, CHALLENGE_PLAIN_BYTES, CHALLENGE_TOKEN_BYTES, CLIENT_OVERHEAD, DENIED, DISCONNECT,
    KEEPALIVE, PATH, PAYLOAD, REQUEST, REQUEST_BYTES, RESPONSE, RESPONSE_BYTES,
};
use super::path::{PathCheck, PATH_TOKEN_BYTES};
use super::replay::{Replay, ReplayWindow};
use super::token::{open_private, PrivateToken, Reader, PRIVATE_PLAIN_BYTES};
use super::{ConnError, DisconnectReason, KEEPALIVE_INTERVAL, VERSION};

/// Most handshake replies and keep-alives queued for [`Server::poll_transmit`];
/// further ones are dropped (the client resends its request).
const MAX_QUEUED: usize = 1024;
/// Most queued packets under which a handshake reply is still queued: half
/// the queue, the other half kept for connected clients' keep-alives,
/// disconnects and path checks.
const MAX_QUEUED_HANDSHAKES: usize = MAX_QUEUED / 2;
/// Copies of a disconnect packet sent, since any of them may be lost.
const DISCONNECT_COPIES: usize = 3;
/// Connect tokens remembered as used, per client slot (as netcode.io's
/// token entries): a token connects once, since a second connection under
/// its keys would start both directions' sequences over and every packet
/// of the first would authenticate again.
const USED_TOKENS_PER_SLOT: usize = 8;

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
}

impl ServerConfig {
    /// 64 clients, payloads up to 1,200 bytes.
    pub fn new(protocol_id: u64, private_key: Key) -> Self {
        Self {
            protocol_id,
            private_key,
            max_clients: 64,
            max_payload: 1200,
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
    /// An authenticated packet, newer than any before it, came from a new
    /// address (a NAT rebinding); the slot's packets now go there.
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
    /// A new address that has not echoed its path token yet.
    path: Option<PathCheck>,
}

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
    challenge_key: PacketKey,
    challenge_sequence: u64,
    slots: Vec<Option<Connection>>,
    by_client_id: HashMap<u64, u16>,
    /// Client-to-server keys of the tokens that got a slot, oldest first
    /// (at most `USED_TOKENS_PER_SLOT` per slot), and the same keys as a
    /// set, so that a flood of requests costs one lookup each.
    used_tokens: VecDeque<[u8; KEY_BYTES]>,
    used_token_set: HashSet<[u8; KEY_BYTES]>,
    events: VecDeque<ServerEvent>,
    transmits: VecDeque<Transmit>,
}

impl Server {
    /// A server with a fresh random challenge key.
    pub fn new(config: ServerConfig) -> Result<Self, ConnError> {
        let mut slots = Vec::new();
        slots.resize_with(usize::from(config.max_clients), || None);
        Ok(Self {
            challenge_key: PacketKey::new(&Key::generate()?),
            challenge_sequence: 0,
            slots,
            by_client_id: HashMap::new(),
            used_tokens: VecDeque::new(),
            used_token_set: HashSet::new(),
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

    fn handle_request(
        &mut self,
        now: Duration,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), ConnError> {
        let request = parse_request(datagram)?;
        self.check_protocol(request.protocol_id)?;
        check_expiry(request.expires_at, now)?;
        let private = open_private(
            &self.config.private_key,
            request.protocol_id,
            request.expires_at,
            &request.nonce,
            &request.private,
        )?;
        if let Some(&slot) = self.by_client_id.get(&private.client_id) {
            return self.welcome_again(now, slot, from, private.client_id);
        }
        if self.token_used(&private) {
            self.queue_handshake(
                from,
                seal_denied(&self.config, &private.server_to_client_key)?,
            );
            return Err(ConnError::TokenUsed {
                client_id: private.client_id,
            });
        }
        if self.free_slot().is_none() {
            self.queue_handshake(
                from,
                seal_denied(&self.config, &private.server_to_client_key)?,
            );
            return Err(ConnError::ServerFull {
                max_clients: self.config.max_clients,
            });
        }
        let challenge_expiry = request.expires_at.min(
            now.as_secs()
                .saturating_add(u64::from(private.timeout_secs)),
        );
        let token = self.seal_challenge_token(&private, challenge_expiry, from)?;
        let packet = seal_handshake(
            CHALLENGE,
            self.config.protocol_id,
            &private.server_to_client_key,
            &token,
        )?;
        self.queue_handshake(from, packet);
        Ok(())
    }

    /// Seals the challenge token for a challenge sent to `to`: only an
    /// echo from `to` opens it, so the response proves the client receives
    /// at the address it gets a slot for.
    fn seal_challenge_token(
        &mut self,
        private: &PrivateToken,
        expires_at: u64,
        to: SocketAddr,
    ) -> Result<[u8; CHALLENGE_TOKEN_BYTES], ConnError> {
        let sequence = self.challenge_sequence;
        self.challenge_sequence += 1;
        let mut plain = [0u8; CHALLENGE_PLAIN_BYTES];
        let mut head = [0u8; PRIVATE_PLAIN_BYTES];
        private.write(&mut head);
        plain[..PRIVATE_PLAIN_BYTES].copy_from_slice(&head);
        plain[PRIVATE_PLAIN_BYTES..].copy_from_slice(&expires_at.to_le_bytes());
        let aad = ChallengeAad::new(self.config.protocol_id, to);
        let tag = self
            .challenge_key
            .seal(sequence, aad.as_slice(), &mut plain)?;
        let mut token = [0u8; CHALLENGE_TOKEN_BYTES];
        token[..8].copy_from_slice(&sequence.to_le_bytes());
        token[8..8 + CHALLENGE_PLAIN_BYTES].copy_from_slice(&plain);
        token[8 + CHALLENGE_PLAIN_BYTES..].copy_from_slice(&tag);
        Ok(token)
    }

    fn handle_response(
        &mut self,
        now: Duration,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), ConnError> {
        check_len(datagram, RESPONSE_BYTES)?;
        let mut r = Reader(&datagram[1..]);
        let sequence = u64::from_le_bytes(r.array());
        let mut plain: [u8; CHALLENGE_PLAIN_BYTES] = r.array();
        let tag: [u8; TAG_BYTES] = r.array();
        // Sealed with the address the challenge went to: an echo from
        // anywhere else (a copy, or the token's holder spoofing a victim's
        // address) fails here and gets nothing.
        let aad = ChallengeAad::new(self.config.protocol_id, from);
        self.challenge_key
            .open(sequence, aad.as_slice(), &mut plain, &tag)?;
        let mut r = Reader(&plain);
        let head: [u8; PRIVATE_PLAIN_BYTES] = r.array();
        let private = PrivateToken::read(&head);
        check_expiry(u64::from_le_bytes(r.array()), now)?;
        if let Some(&slot) = self.by_client_id.get(&private.client_id) {
            return self.welcome_again(now, slot, from, private.client_id);
        }
        if self.token_used(&private) {
            return Err(ConnError::TokenUsed {
                client_id: private.client_id,
            });
        }
        let Some(slot) = self.free_slot() else {
            self.queue_handshake(
                from,
                seal_denied(&self.config, &private.server_to_client_key)?,
            );
            return Err(ConnError::ServerFull {
                max_clients: self.config.max_clients,
            });
        };
        let timeout = Duration::from_secs(u64::from(private.timeout_secs));
        self.slots[usize::from(slot)] = Some(Connection {
            client_id: private.client_id,
            addr: from,
            client_to_server: PacketKey::new(&private.client_to_server_key),
            server_to_client: PacketKey::new(&private.server_to_client_key),
            timeout,
            next_sequence: 0,
            replay: ReplayWindow::new(),
            last_received: now,
            last_sent: now,
            path: None,
        });
        self.by_client_id.insert(private.client_id, slot);
        let remembered = usize::from(self.config.max_clients).saturating_mul(USED_TOKENS_PER_SLOT);
        if self.used_tokens.len() >= remembered {
            if let Some(oldest) = self.used_tokens.pop_front() {
                self.used_token_set.remove(&oldest);
            }
        }
        let key = *private.client_to_server_key.as_bytes();
        if self.used_token_set.insert(key) {
            self.used_tokens.push_back(key);
        }
        self.events.push_back(ServerEvent::Connected {
            slot,
            client_id: private.client_id,
            addr: from,
        });
        self.queue_keepalive(now, slot)
    }

    /// A request or response of a client that is already connected: from
    /// its own address the welcome was lost, so it is sent again; from
    /// another address it is refused (only authenticated packets move a
    /// client).
    fn welcome_again(
        &mut self,
        now: Duration,
        slot: u16,
        from: SocketAddr,
        client_id: u64,
    ) -> Result<(), ConnError> {
        let Some(conn) = self.slots[usize::from(slot)].as_ref() else {
            return Err(ConnError::UnknownSlot { slot });
        };
        if conn.addr != from {
            return Err(ConnError::AlreadyConnected { client_id });
        }
        // A reply to a request or response, so within the handshake share of
        // the queue: replays of them must not crowd out other clients'
        // packets (the client resends until welcomed).
        if self.transmits.len() >= MAX_QUEUED_HANDSHAKES {
            return Ok(());
        }
        self.queue_keepalive(now, slot)
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
        check_replay(&conn.replay, header.sequence)?;
        let body = open_packet(datagram, &header, protocol_id, &conn.client_to_server)?;
        let newest = conn.replay.accept(header.sequence);
        conn.last_received = now;
        let mut challenge = None;
        if from != conn.addr && newest {
            self.events.push_back(ServerEvent::Migrated {
                slot,
                from: conn.addr,
                to: from,
            });
            conn.addr = from;
            let mut token = [0u8; PATH_TOKEN_BYTES];
            fill_random(&mut token)?;
            conn.path = Some(PathCheck::new(token, len, now));
            challenge = Some(token);
        } else if let Some(path) = conn.path.as_mut().filter(|_| from == conn.addr) {
            path.received(len);
            if header.kind == PATH && body == path.token {
                conn.path = None;
            }
        }
        if let Some(token) = challenge {
            // Sealing an 8-byte body cannot fail; a failure only delays the
            // validation to the next move.
            let _ = self.queue_sealed(now, slot, PATH, &token);
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
        if let Some(path) = conn.path.as_mut() {
            // Refused before it is sent, so its sequence is used again.
            path.charge(out.len()).inspect_err(|_| out.clear())?;
        }
        conn.next_sequence += 1;
        conn.last_sent = now;
        Ok(conn.addr)
    }

    /// Drops connections silent for longer than their timeout and queues
    /// keep-alives for connections the server has sent nothing to for
    /// [`KEEPALIVE_INTERVAL`], and sends a client whose new address has not
    /// echoed its path token the token again every [`KEEPALIVE_INTERVAL`].
    /// Call it every tick.
    pub fn handle_timeout(&mut self, now: Duration) {
        for slot in 0..self.config.max_clients {
            let Some(conn) = self.slots[usize::from(slot)].as_ref() else {
                continue;
            };
            if now.saturating_sub(conn.last_received) > conn.timeout {
                self.remove(slot, DisconnectReason::TimedOut);
            } else if let Some(token) = conn
                .path
                .as_ref()
                .filter(|p| now.saturating_sub(p.sent_at) >= KEEPALIVE_INTERVAL)
                .map(|p| p.token)
            {
                // The token or its echo may have been lost: it is sent
                // again (which also keeps the client alive), until echoed;
                // a send refused by the path's budget is tried next time.
                if self.queue_sealed(now, slot, PATH, &token).is_ok() {
                    if let Some(path) = self.slots[usize::from(slot)]
                        .as_mut()
                        .and_then(|c| c.path.as_mut())
                    {
                        path.sent_at = now;
                    }
                }
            } else if now.saturating_sub(conn.last_sent) >= KEEPALIVE_INTERVAL {
                // Sealing a 4-byte body cannot fail; a failure only skips
                // this keep-alive.
                let _ = self.queue_keepalive(now, slot);
            }
        }
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
        self.transmits.pop_front()
    }

    /// The next connection change.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// The address of the client in `slot`.
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

    /// Whether `private`'s token got a slot before.
    fn token_used(&self, private: &PrivateToken) -> bool {
        self.used_token_set
            .contains(private.client_to_server_key.as_bytes())
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
        let mut body = [0u8; 4];
        body[..2].copy_from_slice(&slot.to_le_bytes());
        body[2..].copy_from_slice(&self.config.max_clients.to_le_bytes());
        self.queue_sealed(now, slot, KEEPALIVE, &body)
    }

    /// Seals a control packet for `slot` and queues it, within the path
    /// budget of an unvalidated address.
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
        if let Some(path) = conn.path.as_mut() {
            path.charge(out.len())?;
        }
        conn.next_sequence += 1;
        conn.last_sent = now;
        let addr = conn.addr;
        self.queue(addr, out);
        Ok(())
    }

    fn queue(&mut self, to: SocketAddr, datagram: Vec<u8>) {
        if self.transmits.len() < MAX_QUEUED {
            self.transmits.push_back(Transmit { to, datagram });
        }
    }

    /// Queues a reply to a connection request or response (a challenge or
    /// a denial) within [`MAX_QUEUED_HANDSHAKES`], so that a flood of
    /// requests leaves room for the connected clients' own packets.
    fn queue_handshake(&mut self, to: SocketAddr, datagram: Vec<u8>) {
        if self.transmits.len() < MAX_QUEUED_HANDSHAKES {
            self.transmits.push_back(Transmit { to, datagram });
        }
    }

    fn check_protocol(&self, actual: u64) -> Result<(), ConnError> {
        if actual == self.config.protocol_id {
            Ok(())
        } else {
            Err(ConnError::WrongProtocol {
                expected: self.config.protocol_id,
                actual,
            })
        }
    }
}

fn seal_denied(config: &ServerConfig, key: &Key) -> Result<Vec<u8>, ConnError> {
    seal_handshake(DENIED, config.protocol_id, key, &[])
}

/// The additional data of a challenge token: version, protocol id, and
/// the address the challenge was sent to (family, port, IP), on the stack.
struct ChallengeAad {
    bytes: [u8; 16 + 1 + 2 + 16],
    len: usize,
}

impl ChallengeAad {
    fn new(protocol_id: u64, to: SocketAddr) -> Self {
        let mut bytes = [0u8; 16 + 1 + 2 + 16];
        bytes[..8].copy_from_slice(&VERSION);
        bytes[8..16].copy_from_slice(&protocol_id.to_le_bytes());
        bytes[17..19].copy_from_slice(&to.port().to_le_bytes());
        let len = match to.ip() {
            IpAddr::V4(ip) => {
                bytes[16] = 4;
                bytes[19..23].copy_from_slice(&ip.octets());
                23
            }
            IpAddr::V6(ip) => {
                bytes[16] = 6;
                bytes[19..35].copy_from_slice(&ip.octets());
                35
            }
        };
        Self { bytes, len }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

fn check_expiry(expires_at: u64, now: Duration) -> Result<(), ConnError> {
    if now.as_secs() < expires_at {
        Ok(())
    } else {
        Err(ConnError::Expired {
            expires_at,
            now: now.as_secs(),
        })
    }
}

/// Maps the replay window's verdict to the error.
pub(crate) fn check_replay(window: &ReplayWindow, sequence: u64) -> Result<(), ConnError> {
    window.check(sequence).map_err(|r| match r {
        Replay::Duplicate => ConnError::Replayed { sequence },
        Replay::TooOld { newest } => ConnError::TooOld { sequence, newest },
    })
}
