//! The client side: sends its connect token's request until challenged,
//! answers the challenge until welcomed, then authenticates every packet.

use std::net::SocketAddr;
use std::time::Duration;

use super::crypto::PacketKey;
use super::packet::{
    check_len, open_handshake, open_packet, parse_header, seal_packet, write_request, CHALLENGE,
    CHALLENGE_BYTES, DENIED, DENIED_BYTES, DISCONNECT, KEEPALIVE, PATH, PAYLOAD, RESPONSE,
};
use super::replay::ReplayWindow;
use super::server::check_replay;
use super::token::ConnectToken;
use super::{ConnError, DisconnectReason, KEEPALIVE_INTERVAL, SERVER_OVERHEAD};

/// How often a connecting client resends its request or response.
pub const HANDSHAKE_RESEND: Duration = Duration::from_millis(100);

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
    client_to_server: PacketKey,
    server_to_client: PacketKey,
    server: SocketAddr,
    state: ClientState,
    response: Vec<u8>,
    started: Duration,
    next_sequence: u64,
    replay: ReplayWindow,
    last_received: Duration,
    last_sent: Option<Duration>,
    max_payload: usize,
    /// A path token from the server to echo.
    path_echo: Option<Vec<u8>>,
}

impl Client {
    /// A client that will connect to `server` with `token`; payloads are at
    /// most `max_payload` bytes (the server's limit).
    pub fn new(now: Duration, server: SocketAddr, token: ConnectToken, max_payload: usize) -> Self {
        Self {
            client_to_server: PacketKey::new(&token.client_to_server_key),
            server_to_client: PacketKey::new(&token.server_to_client_key),
            token,
            server,
            state: ClientState::Requesting,
            response: Vec::new(),
            started: now,
            next_sequence: 0,
            replay: ReplayWindow::new(),
            last_received: now,
            last_sent: None,
            max_payload,
            path_echo: None,
        }
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
                if self.is_connected() {
                    return Err(ConnError::UnexpectedKind { kind: CHALLENGE });
                }
                let body = open_handshake(datagram, protocol_id, &self.token.server_to_client_key)?;
                self.response.clear();
                self.response.push(RESPONSE);
                self.response.extend_from_slice(body);
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
                open_handshake(datagram, protocol_id, &self.token.server_to_client_key)?;
                self.state = ClientState::Disconnected(DisconnectReason::Denied);
                Ok(None)
            }
            Some(_) => {
                let header = parse_header(datagram, false)?;
                check_replay(&self.replay, header.sequence)?;
                let body = open_packet(datagram, &header, protocol_id, &self.server_to_client)?;
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
                        self.path_echo = Some(body.to_vec());
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
        let ClientState::Connected { slot } = self.state else {
            return Err(ConnError::NotConnected);
        };
        seal_packet(
            kind,
            self.next_sequence,
            Some(slot),
            self.token.protocol_id,
            &self.client_to_server,
            body,
            out,
        )?;
        self.next_sequence += 1;
        self.last_sent = Some(now);
        Ok(())
    }

    /// The next datagram for the server, if one is due: the request or
    /// response every [`HANDSHAKE_RESEND`] while connecting, the echo of a
    /// path token (after the client's address changed), a keep-alive after
    /// [`KEEPALIVE_INTERVAL`] without a sent packet. Also ends the
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
                self.last_sent = Some(now);
                Some(write_request(&self.token))
            }
            ClientState::Responding if due(HANDSHAKE_RESEND) => {
                self.last_sent = Some(now);
                Some(self.response.clone())
            }
            ClientState::Connected { .. } if self.path_echo.is_some() => {
                let echo = self.path_echo.take()?;
                let mut out = Vec::new();
                self.seal(now, PATH, &echo, &mut out).ok()?;
                Some(out)
            }
            ClientState::Connected { .. } if silent => {
                self.state = ClientState::Disconnected(DisconnectReason::TimedOut);
                None
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
