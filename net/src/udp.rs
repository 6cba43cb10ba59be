//! The socket driver: an endpoint on a non-blocking `std::net::UdpSocket`,
//! and a fixed-tick loop helper.

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{Client, Handled, Interest, Server};

/// Most datagrams read per [`Driver::pump`]: a flood cannot keep the loop
/// from its tick.
pub const MAX_READS: usize = 4096;
/// Largest datagram read (larger ones are truncated and then refused).
const RECV_BUF: usize = 2048;

/// A sans-IO endpoint the [`Driver`] runs: [`Server`] or [`Client`].
pub trait Endpoint {
    /// Takes one datagram.
    fn handle(&mut self, now: Duration, from: SocketAddr, datagram: &mut [u8]) -> Handled;
    /// The next datagram to send.
    fn poll_transmit(&mut self, now: Duration, buf: &mut Vec<u8>) -> Option<SocketAddr>;
    /// Timers.
    fn handle_timeout(&mut self, now: Duration);
}

impl<I: Interest> Endpoint for Server<I> {
    fn handle(&mut self, now: Duration, from: SocketAddr, datagram: &mut [u8]) -> Handled {
        Server::handle(self, now, from, datagram)
    }
    fn poll_transmit(&mut self, now: Duration, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        Server::poll_transmit(self, now, buf)
    }
    fn handle_timeout(&mut self, now: Duration) {
        Server::handle_timeout(self, now);
    }
}

impl Endpoint for Client {
    fn handle(&mut self, now: Duration, from: SocketAddr, datagram: &mut [u8]) -> Handled {
        Client::handle(self, now, from, datagram)
    }
    fn poll_transmit(&mut self, now: Duration, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        Client::poll_transmit(self, now, buf)
    }
    fn handle_timeout(&mut self, now: Duration) {
        Client::handle_timeout(self, now);
    }
}

/// What a [`Driver`] moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Datagrams and bytes received.
    pub received: u64,
    /// Bytes received.
    pub received_bytes: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Datagrams the OS refused (full send buffer).
    pub send_refused: u64,
}

/// An endpoint on a non-blocking UDP socket.
#[derive(Debug)]
pub struct Driver<E> {
    socket: UdpSocket,
    endpoint: E,
    recv: Vec<u8>,
    send: Vec<u8>,
    stats: DriverStats,
}

impl<E: Endpoint> Driver<E> {
    /// Binds a socket at `addr` for `endpoint`.
    pub fn bind(addr: impl ToSocketAddrs, endpoint: E) -> io::Result<Self> {
        Self::on(UdpSocket::bind(addr)?, endpoint)
    }

    /// Runs `endpoint` on `socket` (made non-blocking).
    pub fn on(socket: UdpSocket, endpoint: E) -> io::Result<Self> {
        socket.set_nonblocking(true)?;
        Ok(Self {
            socket,
            endpoint,
            recv: vec![0; RECV_BUF],
            send: Vec::new(),
            stats: DriverStats::default(),
        })
    }

    /// Reads every waiting datagram (at most [`MAX_READS`]) into the
    /// endpoint, runs its timers and sends what it has to send.
    pub fn pump(&mut self, now: Duration) -> io::Result<()> {
        for _ in 0..MAX_READS {
            let (n, from) = match self.socket.recv_from(&mut self.recv) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                // An ICMP unreachable from an earlier send (Windows).
                Err(e) if e.kind() == ErrorKind::ConnectionReset => continue,
                Err(e) => return Err(e),
            };
            self.stats.received += 1;
            self.stats.received_bytes += n as u64;
            if let Some(d) = self.recv.get_mut(..n) {
                self.endpoint.handle(now, from, d);
            }
        }
        self.endpoint.handle_timeout(now);
        self.flush(now)
    }

    /// Sends what the endpoint has to send.
    pub fn flush(&mut self, now: Duration) -> io::Result<()> {
        while let Some(to) = self.endpoint.poll_transmit(now, &mut self.send) {
            match self.socket.send_to(&self.send, to) {
                Ok(n) => {
                    self.stats.sent += 1;
                    self.stats.sent_bytes += n as u64;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.stats.send_refused += 1,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &E {
        &self.endpoint
    }

    /// The endpoint, to tick it or read its events.
    pub fn endpoint_mut(&mut self) -> &mut E {
        &mut self.endpoint
    }

    /// The socket's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Swaps in another socket (a client's NAT rebinding, in tests).
    pub fn rebind(&mut self, socket: UdpSocket) -> io::Result<()> {
        socket.set_nonblocking(true)?;
        self.socket = socket;
        Ok(())
    }

    /// Counters.
    pub fn stats(&self) -> DriverStats {
        self.stats
    }
}

/// The time since the Unix epoch, the endpoints' clock.
pub fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// A fixed-rate tick clock for a game loop: [`due`](Self::due) says when
/// the next tick runs, [`idle`](Self::idle) sleeps a little in between.
#[derive(Debug, Clone)]
pub struct Ticker {
    period: Duration,
    next: Instant,
}

impl Ticker {
    /// Ticks `rate` times a second (at least once), the first one now.
    pub fn new(rate: u32) -> Self {
        Self {
            period: Duration::from_secs(1) / rate.max(1),
            next: Instant::now(),
        }
    }

    /// The time between ticks.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Whether a tick is due now; if so the next is scheduled. A loop more
    /// than four ticks behind skips ahead instead of bursting to catch up.
    pub fn due(&mut self) -> bool {
        let now = Instant::now();
        if now < self.next {
            return false;
        }
        self.next += self.period;
        if self.next + self.period * 4 < now {
            self.next = now;
        }
        true
    }

    /// Sleeps until the next tick, at most `max` (to read sockets between
    /// ticks).
    pub fn idle(&self, max: Duration) {
        let wait = self.next.saturating_duration_since(Instant::now()).min(max);
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}
