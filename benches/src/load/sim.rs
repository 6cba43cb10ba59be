//! One server endpoint and its clients in memory, on a virtual clock:
//! datagrams pass through a lossy, delayed link per client and direction
//! (`tickpack_testkit::link`), the server's own calls are timed by wall
//! clock.

use std::collections::HashMap;
use std::error::Error;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use tickpack::Snapshot;
use tickpack_net::{Client, ClientId, Server};
use tickpack_testkit::link::{Link, LinkConfig, PPM_PER_PERCENT};
use tickpack_transport::conn::ConnectToken;

use super::{Cars, Setup};

/// The virtual clock's start, as the connect tokens see it (since the
/// Unix epoch).
const EPOCH: Duration = Duration::from_secs(1_700_000_000);
/// How long a connect token is valid after it is issued.
const TOKEN_VALID: Duration = Duration::from_secs(60);

/// Each link's behaviour: loss, latency and jitter.
#[derive(Debug, Clone, Copy)]
pub struct Links {
    /// Loss in each direction, percent.
    pub loss_pct: u64,
    /// One-way latency, milliseconds.
    pub latency_ms: u64,
    /// Extra delay, uniform in `0..=jitter_ms` (reorders).
    pub jitter_ms: u64,
}

impl Links {
    /// 5% loss each way, 40 ms ± 10 ms one way.
    pub const ROUGH: Self = Self {
        loss_pct: 5,
        latency_ms: 40,
        jitter_ms: 10,
    };

    /// The largest round trip these links make.
    pub fn round_trip(&self) -> Duration {
        Duration::from_millis(2 * (self.latency_ms + self.jitter_ms))
    }

    fn config(&self) -> LinkConfig {
        LinkConfig {
            loss_ppm: self.loss_pct * PPM_PER_PERCENT,
            dup_pct: 0,
            latency_ms: self.latency_ms,
            jitter_ms: self.jitter_ms,
        }
    }
}

/// One simulated client: its endpoint, address and both links.
#[derive(Debug)]
pub struct Peer {
    /// The endpoint.
    pub net: Client,
    /// Its connect token's user id.
    pub user: u64,
    /// Where it sends from.
    pub addr: SocketAddr,
    up: Link,
    down: Link,
    /// It stopped answering: nothing is delivered to it or sent from it.
    pub silent: bool,
}

/// What the server's calls cost, by wall clock.
#[derive(Debug, Clone, Default)]
pub struct ServerTime {
    /// Per tick: `tick` + `poll_transmit` + `handle` + `handle_timeout`.
    pub per_tick: Vec<Duration>,
    /// Datagrams and bytes the server sent (UDP/IP headers not counted).
    pub sent: u64,
    /// Bytes of those.
    pub sent_bytes: u64,
    /// Datagrams the server took in.
    pub received: u64,
}

/// The server, its clients and the links between them.
#[derive(Debug)]
pub struct Sim {
    /// The setup (worlds, configs, key).
    pub setup: Setup,
    /// The server endpoint.
    pub server: Server<Cars>,
    /// Clients by index; `None` once removed.
    pub peers: Vec<Option<Peer>>,
    by_addr: HashMap<SocketAddr, usize>,
    links: Links,
    seed: u64,
    next_port: u32,
    /// Ticks run.
    pub tick: u64,
    /// Server cost, while [`measuring`](Self::measuring).
    pub time: ServerTime,
    /// Whether [`step`](Self::step) records [`time`](Self::time).
    pub measuring: bool,
    buf: Vec<u8>,
}

impl Sim {
    /// A server for `setup` (its `max_clients`), no clients yet.
    pub fn new(setup: Setup, links: Links, seed: u64) -> Result<Self, Box<dyn Error>> {
        let server = Server::new(
            setup.schema.clone(),
            setup.server.clone(),
            Setup::interest(),
        )?;
        Ok(Self {
            setup,
            server,
            peers: Vec::new(),
            by_addr: HashMap::new(),
            links,
            seed,
            next_port: 0,
            tick: 0,
            time: ServerTime::default(),
            measuring: false,
            buf: Vec::new(),
        })
    }

    /// The virtual time of tick `k` (60 Hz).
    pub fn now(&self) -> Duration {
        EPOCH + self.tick_len() * u32::try_from(self.tick).unwrap_or(u32::MAX)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from((self.now() - EPOCH).as_millis()).unwrap_or(u64::MAX)
    }

    fn tick_len(&self) -> Duration {
        Duration::from_secs(1) / tickpack_scenarios::TICK_RATE
    }

    /// A fresh loopback address (no socket: the links carry datagrams).
    fn fresh_addr(&mut self) -> SocketAddr {
        self.next_port += 1;
        let port = 1024 + self.next_port % 60_000;
        let host = 1 + self.next_port / 60_000;
        SocketAddr::from((
            Ipv4Addr::new(127, 0, 0, u8::try_from(host % 250).unwrap_or(1)),
            u16::try_from(port).unwrap_or(1024),
        ))
    }

    /// Adds a client for `user` whose connections time out after
    /// `timeout` of silence; returns its index.
    pub fn join(&mut self, user: u64, timeout: Duration) -> Result<usize, Box<dyn Error>> {
        let now = self.now();
        let token = ConnectToken::issue(
            &self.setup.key,
            super::PROTOCOL_ID,
            user,
            now,
            TOKEN_VALID,
            timeout,
        )?;
        let server_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 4000));
        let net = Client::new(
            now,
            server_addr,
            token,
            self.setup.schema.clone(),
            self.setup.client.clone(),
        )?;
        let addr = self.fresh_addr();
        let i = self
            .peers
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.peers.len());
        let seed = self.seed ^ (user << 16);
        let peer = Peer {
            net,
            user,
            addr,
            up: Link::new(self.links.config(), seed ^ 0x55),
            down: Link::new(self.links.config(), seed ^ 0xdd),
            silent: false,
        };
        if let Some(slot) = self.peers.get_mut(i) {
            *slot = Some(peer);
        } else {
            self.peers.push(Some(peer));
        }
        self.by_addr.insert(addr, i);
        Ok(i)
    }

    /// Client `i` leaves politely (its goodbye goes out with the next step).
    pub fn leave(&mut self, i: usize) {
        let now = self.now();
        if let Some(p) = self.peers.get_mut(i).and_then(Option::as_mut) {
            p.net.disconnect(now);
        }
    }

    /// Client `i` stops answering (the server must time it out).
    pub fn silence(&mut self, i: usize) {
        if let Some(p) = self.peers.get_mut(i).and_then(Option::as_mut) {
            p.silent = true;
        }
    }

    /// Client `i` moves to a new address (NAT rebinding): datagrams to the
    /// old one are lost.
    pub fn rebind(&mut self, i: usize) {
        let addr = self.fresh_addr();
        if let Some(p) = self.peers.get_mut(i).and_then(Option::as_mut) {
            self.by_addr.remove(&p.addr);
            p.addr = addr;
            self.by_addr.insert(addr, i);
        }
    }

    /// Drops client `i` and its links.
    pub fn remove(&mut self, i: usize) {
        if let Some(p) = self.peers.get_mut(i).and_then(Option::take) {
            self.by_addr.remove(&p.addr);
        }
    }

    /// Clients still present.
    pub fn present(&self) -> impl Iterator<Item = (usize, &Peer)> + '_ {
        self.peers
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
    }

    /// One tick: the server ticks and sends, every client receives what
    /// arrived, runs its timers and answers, the server takes what
    /// arrived. The server's calls are timed.
    pub fn step(&mut self) -> Result<(), Box<dyn Error>> {
        self.step_with(true)
    }

    /// A step without a server tick: timers and answers only, so the links
    /// empty (for a heap level that does not count datagrams in flight).
    pub fn quiet_step(&mut self) -> Result<(), Box<dyn Error>> {
        self.step_with(false)
    }

    fn step_with(&mut self, tick: bool) -> Result<(), Box<dyn Error>> {
        let now = self.now();
        let now_ms = self.now_ms();
        let mut spent = Duration::ZERO;

        let t = Instant::now();
        if tick {
            let world = self.setup.world(self.tick);
            self.server.tick(now, world)?;
        }
        self.server.handle_timeout(now);
        spent += t.elapsed();
        self.server_out(now, now_ms, &mut spent);

        let mut inbound: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
        for p in self.peers.iter_mut().flatten() {
            let arrived = p.down.recv(now_ms);
            let up = p.up.recv(now_ms);
            inbound.extend(up.into_iter().map(|d| (p.addr, d)));
            if p.silent {
                continue;
            }
            let server = p.net.server();
            for mut d in arrived {
                p.net.handle(now, server, &mut d);
            }
            while p.net.poll_event().is_some() {}
            p.net.handle_timeout(now);
            while p.net.poll_transmit(now, &mut self.buf).is_some() {
                p.up.send(now_ms, &self.buf);
            }
        }
        // From the client's current address (in flight across a rebind too:
        // the server follows either way).
        for (from, mut d) in inbound {
            let t = Instant::now();
            self.server.handle(now, from, &mut d);
            spent += t.elapsed();
            if self.measuring {
                self.time.received += 1;
            }
        }
        self.server_out(now, now_ms, &mut spent);
        while self.server.poll_event().is_some() {}
        if self.measuring {
            self.time.per_tick.push(spent);
        }
        self.tick += 1;
        Ok(())
    }

    /// Everything the server has to send goes on the links.
    fn server_out(&mut self, now: Duration, now_ms: u64, spent: &mut Duration) {
        loop {
            let t = Instant::now();
            let to = self.server.poll_transmit(now, &mut self.buf);
            *spent += t.elapsed();
            let Some(to) = to else { break };
            if self.measuring {
                self.time.sent += 1;
                self.time.sent_bytes += self.buf.len() as u64;
            }
            if let Some(p) = self
                .by_addr
                .get(&to)
                .and_then(|&i| self.peers.get_mut(i))
                .and_then(Option::as_mut)
            {
                p.down.send(now_ms, &self.buf);
            }
        }
    }

    /// Runs ticks until every present, answering client is connected and
    /// receives snapshots, at most `max_ticks`; whether they all are.
    pub fn settle(&mut self, max_ticks: u64) -> Result<bool, Box<dyn Error>> {
        for _ in 0..max_ticks {
            if self.all_ready() {
                return Ok(true);
            }
            self.step()?;
        }
        Ok(self.all_ready())
    }

    fn all_ready(&self) -> bool {
        self.present().filter(|(_, p)| !p.silent).all(|(_, p)| {
            p.net.is_connected()
                && self
                    .server
                    .client_of(p.user)
                    .is_some_and(|c| self.server.is_ready(c))
        })
    }

    /// Checks that every present, answering client holds what the server
    /// sent it ([`check_sync`]).
    pub fn check_sync(&self) -> Result<u64, String> {
        let answering = self
            .present()
            .filter(|(_, p)| !p.silent && p.net.disconnect_reason().is_none())
            .map(|(i, p)| (i, p.user, &p.net));
        check_sync(&self.server, answering)
    }

    /// The server's id for client `i`.
    pub fn client_id(&self, i: usize) -> Option<ClientId> {
        let p = self.peers.get(i)?.as_ref()?;
        self.server.client_of(p.user)
    }

    /// Heap bytes the endpoint's own accounting gives for its clients'
    /// sessions, and for the worlds they share.
    pub fn session_memory(&self) -> (usize, usize) {
        let s = self.server.session();
        let per: usize = s.clients().filter_map(|id| s.client_memory(id)).sum();
        (per, s.shared_memory())
    }
}

/// Checks that each of `clients` (index, user id, endpoint) holds what
/// `server` sent it: its newest applied snapshot equals the server's
/// record of that sequence for it. Returns how many ticks the most
/// lagging one is behind, or the first failure.
pub fn check_sync<'a>(
    server: &Server<Cars>,
    clients: impl Iterator<Item = (usize, u64, &'a Client)>,
) -> Result<u64, String> {
    let mut lag = 0;
    let mut sent = Snapshot::default();
    let seq_now = server.session().sequence();
    for (i, user, net) in clients {
        let Some(client) = server.client_of(user) else {
            return Err(format!("client {i} (user {user}) is not connected"));
        };
        let Some((seq, applied)) = net.latest() else {
            return Err(format!("client {i} applied no snapshot"));
        };
        if !server.session().sent_state(client.index(), seq, &mut sent) {
            return Err(format!(
                "client {i}: the server holds no record of sequence {seq} for it"
            ));
        }
        if applied != &sent {
            return Err(format!(
                "client {i} is out of sync: its sequence {seq} differs from what the server sent"
            ));
        }
        lag = lag.max(u64::from(seq_now.wrapping_sub(seq)));
    }
    Ok(lag)
}
