//! `--attack`: forged traffic at the server and the clients. From its own
//! socket the attacker sends junk, forged requests and forged packets for
//! every slot, and replays a client's captured connection request; it
//! also injects datagrams with spoofed source addresses (a client's, the
//! server's, or a victim's that never talked to the server): forged acks,
//! full-snapshot requests, chunk acks, chunk slices, fragments, and
//! replays of captured server datagrams. On the clients' path, it copies
//! every datagram of half the clients and delivers the copy from its own
//! address before the original arrives, replays client datagrams from
//! other clients' addresses and from the victim's, floods connection
//! requests made with a real token it holds (from its own address and the
//! victim's), replays the clients' challenge responses it sees from the
//! victim's and other clients' addresses (as during a NAT rebinding, the
//! server then welcomes those addresses too, never moving a client), and
//! replays the denials it is sent at every client.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};

use tickpack_session::ClientMessage;
use tickpack_transport::conn::{DENIED_BYTES, REQUEST_BYTES, RESPONSE_BYTES};

use tickpack_scenarios::rng::SplitMix64;

/// `tickpack-net`'s channel bytes of a client message and a chunk ack
/// (what an attacker can read off the wire format).
const MESSAGE: u8 = 3;
const CHUNK_ACK: u8 = 2;
/// The connection layer's packet kinds of a response and a denial.
const RESPONSE: u8 = 2;
const DENIED: u8 = 3;

/// The address a replayed request claims to come from: nobody listens,
/// so anything the server sends there would be amplification.
pub(crate) const VICTIM: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    9,
));

/// Where a spoofed datagram is injected.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Spoofed {
    /// At the server, claiming `from`.
    Server { from: SocketAddr },
    /// At client `index`, claiming to be the server.
    Client { index: usize },
}

/// The attacker.
pub(crate) struct Attacker {
    rng: SplitMix64,
    pub(crate) socket: UdpSocket,
    request: Vec<u8>,
    /// A connection request made with a real token the attacker holds.
    token_request: Vec<u8>,
    captured: VecDeque<(usize, Vec<u8>)>,
    /// Client datagrams copied on the path, to replay from elsewhere.
    client_copies: VecDeque<Vec<u8>>,
    /// Challenge responses copied on the path, replayed every tick.
    responses: VecDeque<Vec<u8>>,
    /// Denials the server sent the attacker, to replay at clients.
    denials: VecDeque<Vec<u8>>,
    /// Datagrams and bytes sent from the attacker's socket or injected.
    pub(crate) datagrams: u64,
    pub(crate) bytes: u64,
}

impl Attacker {
    /// `request`: a client's connection request, as if sniffed;
    /// `token_request`: one made with a token issued to the attacker.
    pub(crate) fn new(
        seed: u64,
        request: Vec<u8>,
        token_request: Vec<u8>,
    ) -> std::io::Result<Self> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.set_nonblocking(true)?;
        Ok(Self {
            rng: SplitMix64::new(seed),
            socket,
            request,
            token_request,
            captured: VecDeque::new(),
            client_copies: VecDeque::new(),
            responses: VecDeque::new(),
            denials: VecDeque::new(),
            datagrams: 0,
            bytes: 0,
        })
    }

    /// Sniffs a server datagram to client `index` now and then, to replay.
    pub(crate) fn capture(&mut self, index: usize, datagram: &[u8]) {
        if self.rng.chance(0.01) && self.captured.len() < 64 {
            self.captured.push_back((index, datagram.to_vec()));
        }
    }

    /// Client `index` sent `datagrams` (copied on its path): for an even
    /// index, each goes to the server from the attacker's own address at
    /// once, ahead of the original; some are kept for replays.
    pub(crate) fn copy_ahead(
        &mut self,
        index: usize,
        datagrams: &[Vec<u8>],
        server: SocketAddr,
    ) -> std::io::Result<()> {
        for d in datagrams {
            if d.len() == RESPONSE_BYTES
                && d.first() == Some(&RESPONSE)
                && !self.responses.contains(d)
            {
                if self.responses.len() >= 4 {
                    self.responses.pop_front();
                }
                self.responses.push_back(d.clone());
            }
            if self.rng.chance(0.05) && self.client_copies.len() < 64 {
                self.client_copies.push_back(d.clone());
            }
            if !index.is_multiple_of(2) {
                continue;
            }
            self.count(d);
            match self.socket.send_to(d, server) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn junk(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.rng.next_u64() as u8).collect()
    }

    fn count(&mut self, d: &[u8]) {
        self.datagrams += 1;
        self.bytes += d.len() as u64;
    }

    /// One tick's datagrams from the attacker's own socket.
    pub(crate) fn send_own(&mut self, server: SocketAddr) -> std::io::Result<()> {
        let mut out = Vec::new();
        let len = 1 + (self.rng.next_u64() % 300) as usize;
        out.push(self.junk(len));
        let mut forged_request = self.junk(REQUEST_BYTES);
        forged_request[0] = 0;
        forged_request[1..9].copy_from_slice(&tickpack_transport::conn::VERSION);
        out.push(forged_request);
        // A payload packet for a random slot: 2-byte sequence, garbage body.
        let mut forged = self.junk(40);
        forged[0] = 0x25;
        forged[3] = (self.rng.next_u64() % 64) as u8;
        forged[4] = 0;
        out.push(forged);
        out.push(self.request.clone());
        // A flood of requests with a valid token of its own.
        for _ in 0..8 {
            out.push(self.token_request.clone());
        }
        for d in out {
            self.count(&d);
            match self.socket.send_to(&d, server) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        // What the server answers is read; denials are kept to replay.
        let mut buf = [0u8; 2048];
        while let Ok((n, _)) = self.socket.recv_from(&mut buf) {
            let d = buf.get(..n).unwrap_or_default();
            if n == DENIED_BYTES && d.first() == Some(&DENIED) && self.denials.len() < 16 {
                self.denials.push_back(d.to_vec());
            }
        }
        Ok(())
    }

    /// One tick's spoofed injections: at the server from client addresses
    /// and from the victim, at every client from the server's address.
    pub(crate) fn spoofed(&mut self, clients: &[SocketAddr]) -> Vec<(Spoofed, Vec<u8>)> {
        let mut out = Vec::new();
        if clients.is_empty() {
            return out;
        }
        for _ in 0..8 {
            let i = (self.rng.next_u64() % clients.len() as u64) as usize;
            let from = Spoofed::Server { from: clients[i] };
            let msg = ClientMessage {
                ack: Some(self.rng.next_u64() as u16),
                request_full: self.rng.chance(0.5),
            };
            let mut d = vec![MESSAGE];
            d.extend_from_slice(&msg.to_bytes());
            out.push((from, d));
            out.push((from, vec![CHUNK_ACK, 0xac, 0x00, 0x00, 0x02, 0x07]));
        }
        out.push((Spoofed::Server { from: VICTIM }, self.request.clone()));
        out.push((Spoofed::Server { from: VICTIM }, self.token_request.clone()));
        // A client's datagram replayed from another client's address and
        // from the victim's.
        if let Some(d) = self.client_copies.pop_front() {
            let i = (self.rng.next_u64() % clients.len() as u64) as usize;
            out.push((Spoofed::Server { from: clients[i] }, d.clone()));
            out.push((Spoofed::Server { from: VICTIM }, d));
        }
        // The latest challenge responses, replayed from the victim's and
        // a client's address.
        for d in &self.responses {
            let i = (self.rng.next_u64() % clients.len() as u64) as usize;
            out.push((Spoofed::Server { from: clients[i] }, d.clone()));
            out.push((Spoofed::Server { from: VICTIM }, d.clone()));
        }
        // Denials replayed at every client, as from the server.
        if let Some(d) = self.denials.pop_front() {
            for index in 0..clients.len() {
                out.push((Spoofed::Client { index }, d.clone()));
            }
            self.denials.push_back(d);
        }
        for index in 0..clients.len() {
            let to = Spoofed::Client { index };
            out.push((to, vec![0x51, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0xaa]));
            let len = 1 + (self.rng.next_u64() % 64) as usize;
            let junk = self.junk(len);
            out.push((to, junk));
            let mut forged = self.junk(60);
            forged[0] = 0x25;
            out.push((to, forged));
        }
        if let Some((index, d)) = self.captured.pop_front() {
            out.push((Spoofed::Client { index }, d));
        }
        for (_, d) in &out {
            self.datagrams += 1;
            self.bytes += d.len() as u64;
        }
        out
    }
}
