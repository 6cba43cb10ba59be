//! A simulated lobby on a virtual clock: one server, clients behind lossy,
//! reordering, duplicating links (`tickpack_testkit::link`).

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tickpack::{Primitive, Schema, Snapshot};
use tickpack_net::{
    Client, ClientConfig, ClientEvent, Interest, Server, ServerConfig, ServerEvent,
};
use tickpack_testkit::link::{Link, LinkConfig};
use tickpack_transport::conn::{ConnectToken, Key};

pub const PROTOCOL_ID: u64 = 77;
pub const EPOCH: Duration = Duration::from_secs(1_700_000_000);
pub const TICK_MS: u64 = 16;

pub fn server_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], 4000))
}

pub fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 1, 1], 5000 + i as u16))
}

pub fn schema() -> Schema {
    Schema::builder()
        .entity("car")
        .field("pos", Primitive::F32, 3)
        .field("lap", Primitive::U8, 1)
        .build()
        .unwrap()
}

/// `cars` cars on `tick`: moving, car `tick % cars` absent every 50 ticks
/// (a despawn and respawn).
pub fn world(schema: &Schema, tick: u32, cars: u32) -> Arc<Snapshot> {
    let mut w = Snapshot::new(schema);
    let s = w.section_mut(0).unwrap();
    for id in 0..cars {
        if tick % 50 < 5 && id == (tick / 50) % cars {
            continue;
        }
        let a = tick as f32 * 0.02 + id as f32;
        let r = 20.0 + 40.0 * id as f32;
        let mut rec = [r * a.cos(), r * a.sin(), 0.0]
            .map(f32::to_le_bytes)
            .concat();
        rec.push((tick / 100) as u8);
        s.insert(id, &rec).unwrap();
    }
    Arc::new(w)
}

pub struct Peer {
    pub user: u64,
    pub addr: SocketAddr,
    pub client: Client,
    pub up: Link,
    pub down: Link,
    pub events: Vec<ClientEvent>,
    /// Deliver nothing either way (a dead peer).
    pub cut: bool,
}

pub struct Sim<I> {
    pub key: Key,
    pub schema: Schema,
    pub server: Server<I>,
    pub peers: Vec<Peer>,
    pub now_ms: u64,
    pub events: Vec<ServerEvent>,
    /// Applied snapshots checked against the server's ring.
    pub checked: u64,
    /// The connect tokens' timeout (how long either end waits in silence).
    pub token_timeout: Duration,
    buf: Vec<u8>,
}

impl<I: Interest> Sim<I> {
    pub fn new(config: impl FnOnce(&mut ServerConfig), interest: I) -> Self {
        let key = Key::from_bytes([9; 32]);
        let mut cfg = ServerConfig::new(PROTOCOL_ID, key.clone());
        config(&mut cfg);
        let schema = schema();
        Self {
            server: Server::new(schema.clone(), cfg, interest).unwrap(),
            key,
            schema,
            peers: Vec::new(),
            now_ms: 0,
            events: Vec::new(),
            checked: 0,
            token_timeout: Duration::from_secs(2),
            buf: Vec::new(),
        }
    }

    pub fn now(&self) -> Duration {
        EPOCH + Duration::from_millis(self.now_ms)
    }

    pub fn token(&self, user: u64) -> ConnectToken {
        let (life, timeout) = (Duration::from_secs(600), self.token_timeout);
        ConnectToken::issue(&self.key, PROTOCOL_ID, user, self.now(), life, timeout).unwrap()
    }

    pub fn add(&mut self, user: u64, link: LinkConfig, config: ClientConfig) -> usize {
        let i = self.peers.len();
        let client = Client::new(
            self.now(),
            server_addr(),
            self.token(user),
            self.schema.clone(),
            config,
        )
        .unwrap();
        self.peers.push(Peer {
            user,
            addr: client_addr(i),
            client,
            up: Link::new(link, 1000 + i as u64),
            down: Link::new(link, 2000 + i as u64),
            events: Vec::new(),
            cut: false,
        });
        i
    }

    /// One tick: the world (if any) goes out, both directions move, every
    /// client's newest applied snapshot is checked against what the server
    /// sent it.
    pub fn step(&mut self, world: Option<Arc<Snapshot>>) {
        let now = self.now();
        if let Some(w) = world {
            self.server.tick(now, w).unwrap();
        }
        self.server.handle_timeout(now);
        while let Some(to) = self.server.poll_transmit(now, &mut self.buf) {
            if let Some(p) = self.peers.iter_mut().find(|p| p.addr == to && !p.cut) {
                p.down.send(self.now_ms, &self.buf);
            }
        }
        for p in &mut self.peers {
            for mut d in p.down.recv(self.now_ms) {
                p.client.handle(now, server_addr(), &mut d);
            }
            p.client.handle_timeout(now);
            while p.client.poll_transmit(now, &mut self.buf).is_some() {
                if !p.cut {
                    p.up.send(self.now_ms, &self.buf);
                }
            }
            while let Some(e) = p.client.poll_event() {
                p.events.push(e);
            }
        }
        for i in 0..self.peers.len() {
            let addr = self.peers[i].addr;
            for mut d in self.peers[i].up.recv(self.now_ms) {
                self.server.handle(now, addr, &mut d);
            }
        }
        while let Some(e) = self.server.poll_event() {
            self.events.push(e);
        }
        self.check();
        self.now_ms += TICK_MS;
    }

    /// Every connected client's newest applied snapshot is what the server
    /// sent it (while the server's ring still holds it).
    pub fn check(&mut self) {
        for p in &self.peers {
            let (Some(id), Some((seq, applied))) =
                (self.server.client_of(p.user), p.client.latest())
            else {
                continue;
            };
            let mut sent = Snapshot::default();
            if self.server.session().sent_state(id.index(), seq, &mut sent) {
                assert_eq!(applied, &sent, "user {} at sequence {seq}", p.user);
                self.checked += 1;
            }
        }
    }

    /// Runs `ticks` ticks of a world of `cars` cars, from tick `from`.
    pub fn run(&mut self, from: u32, ticks: u32, cars: u32) {
        for t in from..from + ticks {
            let w = world(&self.schema, t, cars);
            self.step(Some(w));
        }
    }

    /// Runs without ticks for `ms` (links drain, timers fire).
    pub fn idle(&mut self, ms: u64) {
        for _ in 0..ms.div_ceil(TICK_MS) {
            self.step(None);
        }
    }
}

pub fn calm() -> LinkConfig {
    LinkConfig {
        loss_ppm: 0,
        dup_pct: 0,
        latency_ms: 20,
        jitter_ms: 0,
    }
}

pub fn rough() -> LinkConfig {
    LinkConfig {
        loss_ppm: 100_000,
        dup_pct: 10,
        latency_ms: 40,
        jitter_ms: 40,
    }
}
