//! The game server: a `tickpack_net::Server` with the distance rate
//! tiers as its interest, plus the measurement around it: a shadow
//! session pricing `View::all()`, the views each client was sent (for
//! the final check), and the bytes sent to and received from every
//! address, to show it amplifies nothing.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickpack::{Schema, Snapshot};
use tickpack_net::{ClientId, Handled, Interest, ServerEvent, Tiered};
use tickpack_session::{self as session, View};

use super::traffic::{Traffic, TrafficTable};
use super::Clock;

/// Views kept per client for the final check: the newest snapshot a
/// client applied is rarely older than this many ticks.
const VIEWS_KEPT: usize = 1024;

/// The rate tiers, remembering each view sent this tick for the check.
#[derive(Debug)]
pub(crate) struct Recorded {
    tiers: Tiered,
    sent: Vec<(ClientId, View)>,
}

impl Recorded {
    pub(crate) fn new(tiers: Tiered) -> Self {
        Self {
            tiers,
            sent: Vec::new(),
        }
    }
}

impl Interest for Recorded {
    fn view(&mut self, client: ClientId, user: u64, tick: u32, world: &Snapshot) -> View {
        self.tiers.view(client, user, tick, world)
    }

    fn sent(&mut self, client: ClientId, tick: u32, view: &View) {
        self.tiers.sent(client, tick, view);
        self.sent.push((client, view.clone()));
    }

    fn disconnected(&mut self, client: ClientId) {
        self.tiers.disconnected(client);
    }
}

/// The server's side of one client, by its user (car) id.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(crate) client: ClientId,
    pub(crate) stats: PeerStats,
    /// The views of the last snapshots sent, by sequence (for the check).
    pub(crate) views: VecDeque<(u16, View)>,
}

/// What one peer cost and saw.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PeerStats {
    /// Session packet bytes and count, regular snapshots only.
    pub(crate) bytes: u64,
    pub(crate) ticks: u64,
    /// What `View::all()` would have cost the same client.
    pub(crate) all_bytes: u64,
    /// Full snapshots on the regular path (after the connect chunk).
    pub(crate) resyncs: u64,
    pub(crate) green: u64,
    pub(crate) yellow: u64,
    pub(crate) held_back: u64,
    pub(crate) cars_sent: u64,
    pub(crate) cars_held: u64,
    pub(crate) addr_changes: u64,
}

/// The server side of the lobby.
pub(crate) struct Host {
    pub(crate) net: tickpack_net::Server<Recorded>,
    shadow: session::Server,
    /// By user (car) id.
    pub(crate) peers: HashMap<u16, Peer>,
    pub(crate) traffic: TrafficTable,
    /// Addresses that proved they receive there: a client's when it
    /// answered its challenge, a new one only once it echoed its path
    /// token (the server's `ClientMigrated`), never on an authenticated
    /// packet alone (an attacker's copy ahead of the original is one).
    pub(crate) verified: HashSet<SocketAddr>,
    /// Datagrams refused by the connection layer / bad payloads.
    pub(crate) rejected: u64,
    pub(crate) bad_messages: u64,
    pub(crate) tick_of_seq: HashMap<u16, usize>,
    buf: Vec<u8>,
    /// Time spent in the endpoint's tick (encoding, fragmenting, sealing
    /// every client's snapshot; the `View::all` shadow not counted).
    pub(crate) encode_time: Duration,
    /// Ticks that `encode_time` covers.
    pub(crate) encode_ticks: u64,
}

impl Host {
    pub(crate) fn new(
        net: tickpack_net::Server<Recorded>,
        schema: &Schema,
        shadow_cfg: session::ServerConfig,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        Ok(Self {
            net,
            shadow: session::Server::new(schema.clone(), shadow_cfg)?,
            peers: HashMap::new(),
            traffic: TrafficTable::default(),
            verified: HashSet::new(),
            rejected: 0,
            bad_messages: 0,
            tick_of_seq: HashMap::new(),
            buf: Vec::new(),
            encode_time: Duration::ZERO,
            encode_ticks: 0,
        })
    }

    /// The session server (its ring says what each client was sent).
    pub(crate) fn session(&self) -> &session::Server {
        self.net.session()
    }

    /// One server tick: every client gets its snapshot.
    pub(crate) fn tick(
        &mut self,
        clock: &Clock,
        k: usize,
        world: &Arc<Snapshot>,
        out: &mut Outbox,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let started = Instant::now();
        let seq = self.net.tick(clock.unix(), world.clone())?;
        self.encode_time += started.elapsed();
        self.encode_ticks += 1;
        self.tick_of_seq.insert(seq, k);
        self.shadow.begin_tick(world.clone());
        let cars = world.sections().first().map_or(0, |s| s.len()) as u64;
        for (client, view) in std::mem::take(&mut self.net.interest_mut().sent) {
            let Some(peer) = self.user_of(client).and_then(|u| self.peers.get_mut(&u)) else {
                continue;
            };
            let sent = view.sent_ids(0).map_or(0, |s| s.len() as u64);
            peer.views.push_back((seq, view));
            if peer.views.len() > VIEWS_KEPT {
                peer.views.pop_front();
            }
            if self.net.is_ready(client) {
                peer.stats.cars_sent += sent;
                peer.stats.cars_held += cars.saturating_sub(sent);
            }
        }
        let users: Vec<u16> = self.peers.keys().copied().collect();
        for user in users {
            let Some(peer) = self.peers.get_mut(&user) else {
                continue;
            };
            let client = peer.client;
            if !self.net.is_ready(client) {
                continue;
            }
            // The shadow's ring follows the one sized for the round trip.
            if let Some(h) = self.net.session().history(client.index()) {
                if self.shadow.history(user) != Some(h) {
                    let _ = self.shadow.set_history(user, h);
                }
            }
            if let Some(a) = self.net.session().acked(client.index()) {
                let _ = self.shadow.ack(user, a);
            }
            peer.stats.all_bytes += self.shadow.send(user, &View::all())?.len() as u64;
            if let Some(s) = self.net.peer_stats(client) {
                peer.stats.bytes = s.bytes;
                peer.stats.ticks = s.ticks;
                peer.stats.resyncs = s.full;
                peer.stats.green = s.green;
                peer.stats.yellow = s.yellow;
                peer.stats.held_back = s.held_back;
                peer.stats.addr_changes = s.migrations;
            }
        }
        self.poll(clock, out);
        Ok(())
    }

    fn user_of(&self, client: ClientId) -> Option<u16> {
        self.net.user(client).and_then(|u| u16::try_from(u).ok())
    }

    /// Timers, then every datagram the endpoint has to send.
    pub(crate) fn poll(&mut self, clock: &Clock, out: &mut Outbox) {
        self.net.handle_timeout(clock.unix());
        self.events();
        while let Some(to) = self.net.poll_transmit(clock.unix(), &mut self.buf) {
            self.traffic.sent(to, self.buf.len());
            out.push((to, std::mem::take(&mut self.buf)));
        }
    }

    /// Handles one datagram from `from`.
    pub(crate) fn handle(&mut self, clock: &Clock, from: SocketAddr, datagram: &mut [u8]) {
        self.traffic.received(from, datagram.len());
        match self.net.handle(clock.unix(), from, datagram) {
            Handled::Rejected(_) => self.rejected += 1,
            Handled::Malformed(_) => self.bad_messages += 1,
            _ => {}
        }
        self.events();
    }

    fn events(&mut self) {
        while let Some(event) = self.net.poll_event() {
            match event {
                ServerEvent::ClientConnected { client, user, addr } => {
                    self.verified.insert(addr);
                    let Ok(user) = u16::try_from(user) else {
                        continue;
                    };
                    self.shadow.connect(user);
                    self.peers.insert(
                        user,
                        Peer {
                            client,
                            stats: PeerStats::default(),
                            views: VecDeque::new(),
                        },
                    );
                }
                // Raised only after the path echo (see `verified`).
                ServerEvent::ClientMigrated { to, .. } => {
                    self.verified.insert(to);
                }
                ServerEvent::ClientDisconnected { user, .. } => {
                    if let Ok(user) = u16::try_from(user) {
                        self.peers.remove(&user);
                        self.shadow.disconnect(user);
                    }
                }
                _ => {}
            }
        }
    }

    /// Addresses never verified that were sent more than they sent.
    pub(crate) fn amplified(&self) -> Vec<(SocketAddr, Traffic)> {
        self.traffic.amplified(&self.verified)
    }
}

/// Datagrams for the server socket's link.
pub(crate) type Outbox = Vec<(SocketAddr, Vec<u8>)>;
