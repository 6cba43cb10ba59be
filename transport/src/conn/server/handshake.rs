//! The server's handshake: connection requests answered with challenges
//! (or denials), responses answered with a slot, within the rate limits of
//! each token and source address.

use std::net::SocketAddr;
use std::time::Duration;

use super::super::challenge::Challenge;
use super::super::crypto::{connection_key, fill_random, PacketKey, SERVER_NONCE_BYTES};
use super::super::limit::PER_TOKEN_QUEUED;
use super::super::packet::{
    check_len, parse_request, seal_handshake, seal_packet, CHALLENGE, CHALLENGE_BODY_BYTES,
    CHALLENGE_TOKEN_BYTES, DENIED, DENIED_BODY_BYTES, KEEPALIVE, RESPONSE_BYTES,
};
use super::super::path::Paths;
use super::super::replay::ReplayWindow;
use super::super::rtt::Pinger;
use super::super::token::{open_private, PrivateToken};
use super::super::used::USED_TOKENS_PER_SLOT;
use super::super::ConnError;
use super::{
    welcome_body, Connection, Server, ServerConfig, ServerEvent, Transmit, MAX_QUEUED_HANDSHAKES,
};

impl Server {
    pub(super) fn handle_request(
        &mut self,
        now: Duration,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), ConnError> {
        let request = parse_request(datagram)?;
        self.check_protocol(request.protocol_id)?;
        check_expiry(request.expires_at, now)?;
        let (private, servers) = open_private(
            &self.config.private_key,
            request.protocol_id,
            request.expires_at,
            &request.nonce,
            &request.private,
        )?;
        self.check_server(&servers)?;
        self.check_rate(&private, from, now)?;
        if let Some(&slot) = self.by_client_id.get(&private.client_id) {
            return self.welcome_again(now, slot, from, private.client_id);
        }
        let refused = if self.token_used(&private, now) {
            Some(ConnError::TokenUsed {
                client_id: private.client_id,
            })
        } else if self.free_slot().is_none() {
            Some(ConnError::ServerFull {
                max_clients: self.config.max_clients,
            })
        } else {
            None
        };
        if let Some(e) = refused {
            // Tied to this request: a client that retries (with a new
            // request nonce) takes no replay of this denial.
            let denial = seal_denied(&self.config, &private, &request.request_nonce)?;
            self.queue_handshake(from, denial, &private);
            return Err(e);
        }
        let mut server_nonce = [0u8; SERVER_NONCE_BYTES];
        fill_random(&mut server_nonce)?;
        let challenge = Challenge {
            // Expiry is in whole seconds: one more, so that the response
            // has at least the token's timeout to get through.
            expires_at: request.expires_at.min(
                now.as_secs()
                    .saturating_add(u64::from(private.timeout_secs))
                    .saturating_add(1),
            ),
            token_expires_at: request.expires_at,
            server_nonce,
            private,
            to: from,
        };
        let token = self.challenger.seal(&challenge, self.config.protocol_id)?;
        let mut body = [0u8; CHALLENGE_BODY_BYTES];
        let (head, rest) = body.split_at_mut(request.request_nonce.len());
        head.copy_from_slice(&request.request_nonce);
        rest[..SERVER_NONCE_BYTES].copy_from_slice(&server_nonce);
        rest[SERVER_NONCE_BYTES..].copy_from_slice(&token);
        let packet = seal_handshake(
            CHALLENGE,
            self.config.protocol_id,
            &challenge.private.server_to_client_key,
            &body,
        )?;
        self.queue_handshake(from, packet, &challenge.private);
        Ok(())
    }

    pub(super) fn handle_response(
        &mut self,
        now: Duration,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), ConnError> {
        check_len(datagram, RESPONSE_BYTES)?;
        let mut token = [0u8; CHALLENGE_TOKEN_BYTES];
        token.copy_from_slice(&datagram[1..]);
        let challenge = self.challenger.open(&token, self.config.protocol_id)?;
        check_expiry(challenge.expires_at, now)?;
        let private = &challenge.private;
        self.check_rate(private, from, now)?;
        if let Some(&slot) = self.by_client_id.get(&private.client_id) {
            return self.welcome_elsewhere(now, slot, from, private);
        }
        if self.token_used(private, now) {
            return Err(ConnError::TokenUsed {
                client_id: private.client_id,
            });
        }
        let Some(slot) = self.free_slot() else {
            let mut answers = [0u8; DENIED_BODY_BYTES];
            answers.copy_from_slice(&challenge.server_nonce[..DENIED_BODY_BYTES]);
            let denial = seal_denied(&self.config, private, &answers)?;
            self.queue_handshake(from, denial, private);
            return Err(ConnError::ServerFull {
                max_clients: self.config.max_clients,
            });
        };
        let cap = usize::from(self.config.max_clients).saturating_mul(USED_TOKENS_PER_SLOT);
        // The connection starts where the challenge went (the client
        // proved it receives there), whichever address echoed it.
        let addr = challenge.to;
        if !self.used_tokens.has_room(now.as_secs(), cap) {
            // More connections within a challenge's lifetime than the
            // used-token memory holds: this one waits (the client resends).
            return Err(ConnError::RateLimited);
        }
        let nonce = &challenge.server_nonce;
        let client_to_server = connection_key(&private.client_to_server_key, nonce, b"c2s")?;
        let server_to_client = connection_key(&private.server_to_client_key, nonce, b"s2c")?;
        self.slots[usize::from(slot)] = Some(Connection {
            client_id: private.client_id,
            addr,
            client_to_server: PacketKey::new(&client_to_server),
            server_to_client: PacketKey::new(&server_to_client),
            timeout: Duration::from_secs(u64::from(private.timeout_secs)),
            next_sequence: 0,
            replay: ReplayWindow::new(),
            last_received: now,
            last_sent: now,
            paths: Paths::default(),
            pinger: Pinger::default(),
            last_pong: None,
            unconfirmed: Some(now),
        });
        self.by_client_id.insert(private.client_id, slot);
        self.used_tokens.insert(
            *private.client_to_server_key.as_bytes(),
            challenge.token_expires_at,
            challenge.expires_at,
        );
        self.events.push_back(ServerEvent::Connected {
            slot,
            client_id: private.client_id,
            addr,
        });
        self.queue_keepalive(now, slot)?;
        if from != addr {
            self.welcome_elsewhere(now, slot, from, private)?;
        }
        Ok(())
    }

    /// Refuses a token that names none of the configured public addresses.
    fn check_server(&self, listed: &[SocketAddr]) -> Result<(), ConnError> {
        let public = &self.config.public_addresses;
        if public.is_empty() || listed.iter().any(|a| public.contains(a)) {
            Ok(())
        } else {
            Err(ConnError::WrongServer)
        }
    }

    /// Refuses a handshake packet whose token has its share of replies
    /// queued already, or whose source address used its rate; counts it
    /// against the address otherwise.
    fn check_rate(
        &mut self,
        private: &PrivateToken,
        from: SocketAddr,
        now: Duration,
    ) -> Result<(), ConnError> {
        let queued = self
            .queued_by_token
            .get(private.client_to_server_key.as_bytes())
            .copied()
            .unwrap_or(0);
        if queued < PER_TOKEN_QUEUED && self.address_limit.allow(from, now) {
            Ok(())
        } else {
            Err(ConnError::RateLimited)
        }
    }

    /// A request of a client that is already connected: from its own
    /// address the welcome was lost, so it is sent again; from another
    /// address it is refused (only authenticated packets move a client).
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

    /// A response of a client that has a slot. From its address, as
    /// [`welcome_again`](Self::welcome_again). From another address while
    /// the client has not confirmed its welcome (its NAT may have rebound
    /// since its challenge), the welcome goes there too, once per
    /// response and within the token's share of the handshake queue: it is
    /// smaller than the response and sealed under the connection's key, and
    /// the connection stays at its address until a path check validates a
    /// new one. A confirmed client moves only by path checks.
    fn welcome_elsewhere(
        &mut self,
        now: Duration,
        slot: u16,
        from: SocketAddr,
        private: &PrivateToken,
    ) -> Result<(), ConnError> {
        let protocol_id = self.config.protocol_id;
        let body = welcome_body(slot, self.config.max_clients);
        let Some(conn) = self.slots[usize::from(slot)].as_mut() else {
            return Err(ConnError::UnknownSlot { slot });
        };
        if conn.addr == from {
            return self.welcome_again(now, slot, from, private.client_id);
        }
        if conn.unconfirmed.is_none() {
            return Err(ConnError::AlreadyConnected {
                client_id: private.client_id,
            });
        }
        let mut out = Vec::new();
        seal_packet(
            KEEPALIVE,
            conn.next_sequence,
            None,
            protocol_id,
            &conn.server_to_client,
            &body,
            &mut out,
        )?;
        conn.next_sequence += 1;
        self.queue_handshake(from, out, private);
        Ok(())
    }

    /// Whether `private`'s token got a slot before.
    fn token_used(&self, private: &PrivateToken, now: Duration) -> bool {
        self.used_tokens
            .contains(private.client_to_server_key.as_bytes(), now.as_secs())
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

    /// Queues a reply to a connection request or response (a challenge or
    /// a denial) under `private`'s token within [`MAX_QUEUED_HANDSHAKES`],
    /// so that a flood of requests leaves room for the connected clients'
    /// own packets.
    fn queue_handshake(&mut self, to: SocketAddr, datagram: Vec<u8>, private: &PrivateToken) {
        if self.transmits.len() < MAX_QUEUED_HANDSHAKES {
            let key = *private.client_to_server_key.as_bytes();
            *self.queued_by_token.entry(key).or_insert(0) += 1;
            self.transmits
                .push_back((Transmit { to, datagram }, Some(key)));
        }
    }
}

/// A denial answering `answers` (a request nonce, or the head of the
/// server nonce of the challenge the response echoed).
fn seal_denied(
    config: &ServerConfig,
    private: &PrivateToken,
    answers: &[u8; DENIED_BODY_BYTES],
) -> Result<Vec<u8>, ConnError> {
    seal_handshake(
        DENIED,
        config.protocol_id,
        &private.server_to_client_key,
        answers,
    )
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
