//! The client side: sends its connect token's request until challenged,
//! answers the challenge until welcomed, then authenticates every packet.

use std::net::SocketAddr;
use std::time::Duration;

use super::crypto::{connection_key, fill_random, PacketKey, SERVER_NONCE_BYTES};
use super::packet::{
    check_len, open_handshake, open_packet, parse_header, seal_packet, write_request, CHALLENGE,
    CHALLENGE_BYTES, DENIED, DENIED_BODY_BYTES, DENIED_BYTES, DISCONNECT, KEEPALIVE, PATH, PAYLOAD,
    PING, PONG, REQUEST_NONCE_BYTES, RESPONSE,
};
use super::replay::ReplayWindow;
use super::rtt::{Pinger, Rtt};
use super::server::check_replay;
use super::token::{ConnectToken, Reader};
use super::{ConnError, DisconnectReason, KEEPALIVE_INTERVAL, PING_INTERVAL, SERVER_OVERHEAD};

/// How often a connecting client resends its request or response.
pub const HANDSHAKE_RESEND: Duration = Duration::from_millis(100);

/// Copies of each path echo the client sends.
const ECHO_COPIES: u8 = 2;

/// Where a [`Client`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientState {
    /// Sending the connection request.
    Requesting,
    /// Answering the server's challenge.
    Responding,
    /// Connected in `slot`.
    Connected {
        /// The slot the server gave this client.
        slot: u16,
    },
    /// Ended; the client sends nothing more.
    Disconnected(DisconnectReason),
}

/// The client side of the connection layer, sans-IO: datagrams from the
/// server go in through [`Client::handle_datagram`], payloads out through
/// [`Client::send`], requests, responses and keep-alives through
/// [`Client::poll_transmit`]. `now` is always the time since the Unix epoch.
#[derive(Debug)]
pub struct Client {
    token: ConnectToken,
    /// This connection's keys (client to server, server to client), from
    /// the token's and the challenge's server nonce.
    keys: Option<(PacketKey, PacketKey)>,
    server: SocketAddr,
    state: ClientState,
    response: Vec<u8>,
    /// Random, in every request; a challenge or denial must repeat it.
    request_nonce: Option<[u8; REQUEST_NONCE_BYTES]>,
    /// The head of the accepted challenge's server nonce, which a denial
    /// of the response repeats.
    challenge_id: Option<[u8; DENIED_BODY_BYTES]>,
    started: Duration,
    next_sequence: u64,
    replay: ReplayWindow,
    last_received: Duration,
    last_sent: Option<Duration>,
    max_payload: usize,
    /// A path token from the server to echo, and how many more copies of
    /// the echo to send.
    path_echo: Option<(Vec<u8>, u8)>,
    pinger: Pinger,
    /// The id of a ping to answer.
    pong_due: Option<[u8; 8]>,
}

impl Client {
    /// A client that will connect to `server` with `token`; payloads are at
    /// most `max_payload` bytes (the server's limit).
    pub fn new(now: Duration, server: SocketAddr, token: ConnectToken, max_payload: usize) -> Self {
        Self {
            keys: None,
            token,
            server,
            state: ClientState::Requesting,
            response: Vec::new(),
            request_nonce: None,
            challenge_id: None,
            started: now,
            next_sequence: 0,
            replay: ReplayWindow::new(),
            last_received: now,
            last_sent: None,
            max_payload,
            path_echo: None,
            pinger: Pinger::default(),
            pong_due: None,
        }
    }

    /// The smoothed round-trip time to the server, from its answers to
    /// the client's pings (`None` before the first answer).
    pub fn rtt(&self) -> Option<Rtt> {
        self.pinger.rtt
    }

    /// Where the client stands.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// Whether the client is connected.
    pub fn is_connected(&self) -> bool {
        matches!(self.state, ClientState::Connected { .. })
    }

    /// The server's address.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// Handles one datagram from `from`. Returns the payload of an
    /// authenticated payload packet (decrypted in place inside `datagram`),
    /// `None` for handshake and control packets, and an error for anything
    /// not from the server, forged, replayed or malformed (the client's
    /// state is then unchanged).
    pub fn handle_datagram<'a>(
        &mut self,
        now: Duration,
        from: SocketAddr,
        datagram: &'a mut [u8],
    ) -> Result<Option<&'a [u8]>, ConnError> {
        if from != self.server {
            return Err(ConnError::WrongSource);
        }
        if let ClientState::Disconnected(_) = self.state {
            return Err(ConnError::NotConnected);
        }
        let max = CHALLENGE_BYTES.max(self.max_payload + SERVER_OVERHEAD);
        if datagram.len() > max {
            return Err(ConnError::Oversized {
                len: datagram.len(),
                max,
            });
        }
        let protocol_id = self.token.protocol_id;
        match datagram.first() {
            None => Err(ConnError::Truncated { len: 0, min: 1 }),
            Some(&CHALLENGE) => {
                check_len(datagram, CHALLENGE_BYTES)?;
                // The first challenge is kept: the server derives the
                // connection's keys from the nonce of the one echoed.
                if self.state != ClientState::Requesting {
                    return Err(ConnError::UnexpectedKind { kind: CHALLENGE });
                }
                let body = open_handshake(datagram, protocol_id, &self.token.server_to_client_key)?;
                let mut r = Reader(body);
                let answers: [u8; REQUEST_NONCE_BYTES] = r.array();
                if Some(answers) != self.request_nonce {
                    return Err(ConnError::Stale);
                }
                let nonce: [u8; SERVER_NONCE_BYTES] = r.array();
                let c2s = connection_key(&self.token.client_to_server_key, &nonce, b"c2s")?;
                let s2c = connection_key(&self.token.server_to_client_key, &nonce, b"s2c")?;
                self.keys = Some((PacketKey::new(&c2s), PacketKey::new(&s2c)));
                self.challenge_id = Some(Reader(&nonce).array());
                self.response.clear();
                self.response.push(RESPONSE);
                self.response.extend_from_slice(r.0);
                self.state = ClientState::Responding;
                self.last_received = now;
                self.last_sent = None;
                Ok(None)
            }
            Some(&DENIED) => {
                check_len(datagram, DENIED_BYTES)?;
                if self.is_connected() {
                    return Err(ConnError::UnexpectedKind { kind: DENIED });
                }
                let body = open_handshake(datagram, protocol_id, &self.token.server_to_client_key)?;
                let answers: [u8; DENIED_BODY_BYTES] = Reader(body).array();
                if Some(answers) != self.request_nonce && Some(answers) != self.challenge_id {
                    return Err(ConnError::Stale);
                }
                self.state = ClientState::Disconnected(DisconnectReason::Denied);
                Ok(None)
            }
            Some(_) => {
                let Some((_, server_to_client)) = self.keys.as_ref() else {
                    return Err(ConnError::NotConnected);
                };
                let header = parse_header(datagram, false)?;
                check_replay(&self.replay, header.sequence)?;
                let body = open_packet(datagram, &header, protocol_id, server_to_client)?;
                self.replay.accept(header.sequence);
                self.last_received = now;
                match header.kind {
                    KEEPALIVE => {
                        let [a, b, ..] = *body else {
                            return Err(ConnError::Truncated {
                                len: body.len(),
                                min: 4,
                            });
                        };
                        if !self.is_connected() {
                            self.state = ClientState::Connected {
                                slot: u16::from_le_bytes([a, b]),
                            };
                        }
                        Ok(None)
                    }
                    PAYLOAD if body.is_empty() => Err(ConnError::EmptyPayload),
                    PAYLOAD => Ok(Some(body)),
                    DISCONNECT => {
                        self.state = ClientState::Disconnected(DisconnectReason::ByPeer);
                        Ok(None)
                    }
                    PATH => {
                        // Two copies: at heavy loss each token and its echo
                        // get through rarely, and the move waits on both.
                        self.path_echo = Some((body.to_vec(), ECHO_COPIES));
                        Ok(None)
                    }
                    PING => {
                        self.pong_due = <[u8; 8]>::try_from(body).ok();
                        Ok(None)
                    }
                    PONG => {
                        self.pinger.pong(body, now);
                        Ok(None)
                    }
                    kind => Err(ConnError::UnexpectedKind { kind }),
                }
            }
        }
    }

    /// Seals `payload` for the server into `out` (cleared first). Errors
    /// unless connected.
    pub fn send(
        &mut self,
        now: Duration,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), ConnError> {
        if payload.is_empty() {
            return Err(ConnError::EmptyPayload);
        }
        if payload.len() > self.max_payload {
            return Err(ConnError::PayloadTooLarge {
                len: payload.len(),
                max: self.max_payload,
            });
        }
        self.seal(now, PAYLOAD, payload, out)
    }

    fn seal(
        &mut self,
        now: Duration,
        kind: u8,
        body: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), ConnError> {
        let (ClientState::Connected { slot }, Some((client_to_server, _))) =
            (self.state, self.keys.as_ref())
        else {
            return Err(ConnError::NotConnected);
        };
        seal_packet(
            kind,
            self.next_sequence,
            Some(slot),
            self.token.protocol_id,
            client_to_server,
            body,
            out,
        )?;
        self.next_sequence += 1;
        self.last_sent = Some(now);
        Ok(())
    }

    /// The next datagram for the server, if one is due: the request or
    /// response every [`HANDSHAKE_RESEND`] while connecting, the answer to
    /// a ping, the echo of a path token (after the client's address
    /// changed), a ping every [`PING_INTERVAL`], a keep-alive after
    /// [`KEEPALIVE_INTERVAL`] without a sent packet. Call it until `None`. Also ends the
    /// connection when the token expires before connecting or the server is
    /// silent for the token's timeout.
    pub fn poll_transmit(&mut self, now: Duration) -> Option<Vec<u8>> {
        let timeout = Duration::from_secs(u64::from(self.token.timeout_secs));
        let silent = now.saturating_sub(self.last_received) > timeout;
        let due = |interval| {
            self.last_sent
                .is_none_or(|t| now.saturating_sub(t) >= interval)
        };
        match self.state {
            ClientState::Disconnected(_) => None,
            ClientState::Requesting | ClientState::Responding
                if now.as_secs() >= self.token.expires_at
                    || now.saturating_sub(self.started) > timeout && silent =>
            {
                self.state = ClientState::Disconnected(if now.as_secs() >= self.token.expires_at {
                    DisconnectReason::TokenExpired
                } else {
                    DisconnectReason::TimedOut
                });
                None
            }
            ClientState::Requesting if due(HANDSHAKE_RESEND) => {
                let nonce = match self.request_nonce {
                    Some(n) => n,
                    None => {
                        // A failing random source only delays the request.
                        let mut n = [0u8; REQUEST_NONCE_BYTES];
                        fill_random(&mut n).ok()?;
                        *self.request_nonce.insert(n)
                    }
                };
                self.last_sent = Some(now);
                Some(write_request(&self.token, &nonce))
            }
            ClientState::Responding if due(HANDSHAKE_RESEND) => {
                self.last_sent = Some(now);
                Some(self.response.clone())
            }
            ClientState::Connected { .. } if silent => {
                self.state = ClientState::Disconnected(DisconnectReason::TimedOut);
                None
            }
            ClientState::Connected { .. } if self.pong_due.is_some() => {
                let id = self.pong_due.take()?;
                let mut out = Vec::new();
                self.seal(now, PONG, &id, &mut out).ok()?;
                Some(out)
            }
            ClientState::Connected { .. } if self.path_echo.is_some() => {
                let (echo, left) = self.path_echo.take()?;
                let mut out = Vec::new();
                self.seal(now, PATH, &echo, &mut out).ok()?;
                if left > 1 {
                    self.path_echo = Some((echo, left - 1));
                }
                Some(out)
            }
            ClientState::Connected { .. } if self.pinger.due(now, PING_INTERVAL) => {
                let id = self.next_sequence;
                let mut out = Vec::new();
                self.seal(now, PING, &id.to_le_bytes(), &mut out).ok()?;
                self.pinger.sent(id, now);
                Some(out)
            }
            ClientState::Connected { .. } if due(KEEPALIVE_INTERVAL) => {
                let mut out = Vec::new();
                self.seal(now, KEEPALIVE, &[], &mut out).ok()?;
                Some(out)
            }
            _ => None,
        }
    }

    /// Ends the connection: returns disconnect packets for the server (send
    /// them all; any may be lost) if connected.
    pub fn disconnect(&mut self, now: Duration) -> Vec<Vec<u8>> {
        let mut packets = Vec::new();
        for _ in 0..3 {
            let mut out = Vec::new();
            if self.seal(now, DISCONNECT, &[], &mut out).is_ok() {
                packets.push(out);
            }
        }
        self.state = ClientState::Disconnected(DisconnectReason::ByLocal);
        packets
    }
}
