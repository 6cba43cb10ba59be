//! `--attack`: forged traffic at the server and the clients. From its own
//! socket the attacker sends junk, forged requests and forged packets for
//! every slot, and replays a client's captured connection request; it
//! also injects datagrams with spoofed source addresses (a client's, the
//! server's, or a victim's that never talked to the server): forged acks,
//! full-snapshot requests, chunk acks, chunk slices, fragments, and
//! replays of captured server datagrams.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};

use tickpack_session::ClientMessage;
use tickpack_transport::conn::REQUEST_BYTES;

use tickpack_scenarios::rng::SplitMix64;

/// `tickpack-net`'s channel bytes of a client message and a chunk ack
/// (what an attacker can read off the wire format).
const MESSAGE: u8 = 3;
const CHUNK_ACK: u8 = 2;

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
    captured: VecDeque<(usize, Vec<u8>)>,
    /// Datagrams and bytes sent from the attacker's socket or injected.
    pub(crate) datagrams: u64,
    pub(crate) bytes: u64,
}

impl Attacker {
    /// `request`: a client's connection request, as if sniffed.
    pub(crate) fn new(seed: u64, request: Vec<u8>) -> std::io::Result<Self> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.set_nonblocking(true)?;
        Ok(Self {
            rng: SplitMix64::new(seed),
            socket,
            request,
            captured: VecDeque::new(),
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
        for d in out {
            self.count(&d);
            match self.socket.send_to(&d, server) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        // Whatever the server answers is read and dropped.
        let mut buf = [0u8; 2048];
        while self.socket.recv_from(&mut buf).is_ok() {}
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
