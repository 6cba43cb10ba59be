//! The racing lobby over real UDP sockets on 127.0.0.1.
//!
//! ```sh
//! cargo run --release --example lobby [-- --clients N] [--seconds S] [--loss P] [--latency-ms M] [--budget-mbps B] [--json]
//! ```
//!
//! One server socket and `--clients` client sockets (default 63) on the
//! loopback interface, driven by one single-threaded event loop at 60 Hz of
//! wall-clock time. The 64 cars of the racing lobby scenario drive laps;
//! client `i` sits in car `i`.
//!
//! * Loss and latency are injected at every socket: each direction has a
//!   send queue that drops a datagram with probability `--loss` (default
//!   5%) and otherwise releases it after `--latency-ms` (default 50) ± 10%
//!   before the real `send_to`.
//! * Datagram framing: byte 0 is the channel (0 snapshot fragment, 1 chunk
//!   slice, 2 chunk ack, 3 client message); chunk acks carry the sender's
//!   16-bit client id after the channel byte, client messages carry it
//!   inside the [`ClientMessage`]. The server maps the latest source address
//!   per client id, so a NAT port change does not drop a client (client 1
//!   moves to a new socket half-way through the run to show it).
//! * Connect: the first message of an unknown client id makes the server
//!   connect it in the session layer and push that client's first (full)
//!   session packet to it as a chunk through the chunk/slice system; once
//!   every slice is acked, the server takes the chunk's sequence as acked
//!   and regular snapshots start, as deltas against it.
//! * Snapshots: `session::Server::send` per client per tick, with a per-client
//!   view from the distance-based rate tiers (cars beyond 100 m every 2nd
//!   tick, beyond 200 m every 4th; `View::filter` leaves the skipped ones
//!   out), split by the transport fragmenter (1200-byte datagrams),
//!   reassembled on the client, applied with `Client::receive` and pushed
//!   into a jitter buffer, whose released snapshots feed the client's
//!   presented world (`session::Persist`: a car a snapshot omits keeps its
//!   newest record). A second session server, fed the same ticks and acks
//!   but sending `View::all()`, prices the traffic without rate tiers.
//!   Clients whose baseline, prior and views (then and now) agree share one
//!   encode.
//! * Full snapshots after the connect chunk ("resyncs") happen when the
//!   chunk took longer than the 32-tick baseline ring, until the first ack
//!   of a regular snapshot arrives.
//! * Each client has a token bucket: its share of the `--budget-mbps`
//!   upload budget (default 50), CBS a quarter second, EBS twice
//!   that. It pays for every datagram: snapshots through
//!   `Fragmenter::split_paced` (a red snapshot is held back whole; the next
//!   one is a delta against whatever the client acked) and connect-chunk
//!   slices through `ChunkSender::poll_transmit_paced` (committed tokens
//!   only, never the excess).
//!
//! Exits non-zero if a packet was undecodable, a client's final applied
//! state differs from what the server sent it for that sequence (the world
//! of that tick, restricted to the client's view of that tick), or its
//! presented world lacks a car or shows a record that car did not have at
//! the tick the presented world says it was updated.

#![forbid(unsafe_code)]

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap};
use std::error::Error;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use tickpack::dictset::{DictKind, DictionarySet};
use tickpack::session::{
    Client, ClientConfig, ClientMessage, DropReason, Persist, RateTiers, Received, Server,
    ServerConfig, View,
};
use tickpack::Snapshot;
use tickpack_benches::lobby::shipped_racing_set;
use tickpack_scenarios::rng::SplitMix64;
use tickpack_scenarios::{racing_lobby, TICK_RATE};
use tickpack_transport::{
    ChunkConfig, ChunkReceiver, ChunkSender, Conformance, FragmentConfig, Fragmenter, JitterBuffer,
    JitterConfig, Paced, Playout, Reassembler, ResendDelay, TokenBucket, TokenBucketConfig,
    MAX_CHUNK_SIZE,
};

const CH_FRAGMENT: u8 = 0;
const CH_SLICE: u8 = 1;
const CH_CHUNK_ACK: u8 = 2;
const CH_MESSAGE: u8 = 3;
/// Largest datagram payload, channel byte included.
const MTU: usize = 1200;
/// UDP/IPv4 header bytes, charged to the token bucket per datagram.
const UDP_IP_OVERHEAD: u64 = 28;
/// The server's upload budget for the whole lobby, in Mbit/s.
const BUDGET_MBPS: f64 = 50.0;
/// Ticks the presented world keeps a car no snapshot updated: the longest
/// rate interval (4) plus what loss and held-back snapshots add.
const LINGER: u32 = 20;
const ZSTD_LEVEL: i32 = 3;
/// Most datagrams read from one socket per loop turn.
const MAX_READS: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Args {
    clients: u16,
    seconds: f64,
    loss: f64,
    latency: Duration,
    budget_mbps: f64,
    json: bool,
    seed: u64,
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| run(&a)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut a = Args {
        clients: 63,
        seconds: 10.0,
        loss: 0.05,
        latency: Duration::from_millis(50),
        budget_mbps: BUDGET_MBPS,
        json: false,
        seed: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{key} needs a value"))
        };
        match key.as_str() {
            "--clients" => a.clients = value()?.parse()?,
            "--seconds" => a.seconds = value()?.parse()?,
            "--loss" => {
                let v = value()?;
                let p: f64 = v.trim_end_matches('%').parse()?;
                a.loss = if v.ends_with('%') || p > 1.0 {
                    p / 100.0
                } else {
                    p
                };
            }
            "--latency-ms" => a.latency = Duration::from_millis(value()?.parse()?),
            "--budget-mbps" => a.budget_mbps = value()?.parse()?,
            "--seed" => a.seed = value()?.parse()?,
            "--json" => a.json = true,
            "-h" | "--help" => {
                println!(
                    "usage: lobby [--clients N (1-63, default 63)] [--seconds S (default 10)] \
                     [--loss P (0.05 or 5%, default 5%)] [--latency-ms M (default 50)] \
                     [--budget-mbps B (upload budget for all clients, default 50)] [--seed S] [--json]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --help)").into()),
        }
    }
    if !(1..=63).contains(&a.clients) {
        return Err("--clients must be 1..=63 (one car each, car 0 is the host's)".into());
    }
    if !(a.seconds > 0.0 && a.seconds <= 600.0) {
        return Err("--seconds must be in (0, 600]".into());
    }
    if !(0.0..=0.9).contains(&a.loss) {
        return Err("--loss must be in [0, 90%]".into());
    }
    if a.latency > Duration::from_secs(2) {
        return Err("--latency-ms must be at most 2000".into());
    }
    if !(a.budget_mbps >= 0.1 && a.budget_mbps <= 100_000.0) {
        return Err("--budget-mbps must be in [0.1, 100000]".into());
    }
    Ok(a)
}

/// A datagram waiting in a [`Link`]: release time, order, destination.
type Queued = Reverse<(Instant, u64, SocketAddr, Vec<u8>)>;

/// The lossy, delayed send side of one socket.
#[derive(Debug)]
struct Link {
    rng: SplitMix64,
    loss: f64,
    latency: Duration,
    jitter: Duration,
    order: u64,
    queue: BinaryHeap<Queued>,
    /// Datagrams and bytes handed to the link (what the sender uploads).
    offered: u64,
    offered_bytes: u64,
    lost: u64,
    /// Sends the OS refused (full buffer).
    refused: u64,
}

impl Link {
    fn new(seed: u64, loss: f64, latency: Duration) -> Self {
        Self {
            rng: SplitMix64::new(seed),
            loss,
            latency,
            jitter: latency / 10,
            order: 0,
            queue: BinaryHeap::new(),
            offered: 0,
            offered_bytes: 0,
            lost: 0,
            refused: 0,
        }
    }

    fn push(&mut self, now: Instant, to: SocketAddr, datagram: Vec<u8>) {
        self.offered += 1;
        self.offered_bytes += datagram.len() as u64;
        if self.rng.unit() < self.loss {
            self.lost += 1;
            return;
        }
        // latency ± jitter
        let at = now + self.latency - self.jitter + self.jitter.mul_f64(2.0 * self.rng.unit());
        self.order += 1;
        self.queue.push(Reverse((at, self.order, to, datagram)));
    }

    fn next_due(&self) -> Option<Instant> {
        self.queue.peek().map(|Reverse(e)| e.0)
    }

    fn flush(&mut self, now: Instant, socket: &UdpSocket) -> std::io::Result<()> {
        while self.next_due().is_some_and(|at| at <= now) {
            let Some(Reverse((_, _, to, datagram))) = self.queue.pop() else {
                break;
            };
            match socket.send_to(&datagram, to) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.refused += 1,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn framed(channel: u8, prefix: &[u8], body: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(1 + prefix.len() + body.len());
    d.push(channel);
    d.extend_from_slice(prefix);
    d.extend_from_slice(body);
    d
}

/// Position: the first `[f32; 3]` field of a racing record.
fn position(record: &[u8]) -> [f32; 3] {
    let f = |i: usize| {
        record
            .get(i * 4..i * 4 + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0.0, f32::from_le_bytes)
    };
    [f(0), f(1), f(2)]
}

fn positions(world: &Snapshot) -> Vec<(u32, [f32; 3])> {
    world
        .sections()
        .first()
        .map(|s| s.iter().map(|(id, rec)| (id, position(rec))).collect())
        .unwrap_or_default()
}

/// The view of client `id` (in car `id`) on `tick`: the cars the rate
/// tiers find due (by the tick each was last sent to this client); the
/// others are left out.
fn view_for(
    rates: &RateTiers,
    tick: usize,
    id: u16,
    cars: &[(u32, [f32; 3])],
    last_sent: &[Option<u32>],
) -> View {
    let viewer = cars
        .iter()
        .find(|(car, _)| *car == u32::from(id))
        .map_or([0.0; 3], |c| c.1);
    let mut send = Vec::with_capacity(cars.len());
    let mut skip = Vec::with_capacity(cars.len());
    let entities = cars.iter().map(|&(car, pos)| {
        let last = usize::try_from(car)
            .ok()
            .and_then(|i| last_sent.get(i))
            .copied()
            .flatten();
        (car, pos, last)
    });
    rates.select_due(tick as u32, viewer, entities, &mut send, &mut skip);
    View::filter(vec![send])
}

/// Checks a client's presented world against the worlds: every car there,
/// each with the record it had at the tick `persist` says it was updated.
/// `offset` maps the client's unrolled ticks to world indices. Pushes each
/// car's age (ticks since its update) to `ages`.
fn presented_ok(
    persist: &Persist,
    worlds: &[Arc<Snapshot>],
    offset: i64,
    ages: &mut Vec<u32>,
) -> bool {
    let Some(cars) = persist.state().sections().first() else {
        return false;
    };
    let newest = persist.newest().map_or(0, i64::from);
    cars.len() == worlds[0].entity_count()
        && cars.iter().all(|(id, rec)| {
            let Some(age) = persist.age(0, id) else {
                return false;
            };
            ages.push(age);
            usize::try_from(newest - i64::from(age) - offset)
                .ok()
                .and_then(|w| worlds.get(w))
                .and_then(|w| w.sections().first())
                .and_then(|s| s.get(id))
                == Some(rec)
        })
}

/// The server's side of one client.
#[derive(Debug)]
struct Peer {
    addr: SocketAddr,
    chunk: ChunkSender,
    chunk_seq: u16,
    live: bool,
    frag: Fragmenter,
    bucket: TokenBucket,
    /// Session packet bytes and count, regular snapshots only.
    bytes: u64,
    ticks: u64,
    /// What `View::all()` would have cost the same client.
    all_bytes: u64,
    /// Full snapshots on the regular path (after the connect chunk).
    resyncs: u64,
    /// Snapshots paid from committed tokens / borrowed / held back (red).
    green: u64,
    yellow: u64,
    held_back: u64,
    /// Car updates sent and skipped by the rate tiers.
    cars_sent: u64,
    cars_held: u64,
    /// Per car id, the tick it was last sent to this client.
    last_sent: Vec<Option<u32>>,
    /// The views of the last snapshots sent, by sequence (for the check).
    views: std::collections::VecDeque<(u16, View)>,
    addr_changes: u64,
}

/// One client process.
#[derive(Debug)]
struct Player {
    id: u16,
    socket: UdpSocket,
    up: Link,
    client: Client,
    reasm: Reassembler,
    chunks: ChunkReceiver,
    jitter: JitterBuffer<u16>,
    /// The presented world, fed by the jitter buffer.
    persist: Persist,
    connected_at: Option<Duration>,
    unwrap: Option<(u16, i64)>,
    undecodable: u64,
    stale: u64,
    unknown_baseline: u64,
    transport_errors: u64,
    before_connect: u64,
}

impl Player {
    fn tick_of(&mut self, seq: u16) -> u32 {
        let t = match self.unwrap {
            None => 1 << 20,
            Some((last_seq, last)) => last + i64::from(seq.wrapping_sub(last_seq) as i16),
        };
        if self.unwrap.is_none_or(|(_, last)| t > last) {
            self.unwrap = Some((seq, t));
        }
        t.clamp(0, i64::from(u32::MAX)) as u32
    }

    /// Counts what `Client::receive` did; applied snapshots go into the
    /// jitter buffer if `play` (not the connect snapshot: playout starts
    /// with the regular stream).
    fn applied(&mut self, r: Received, now: Duration, play: bool) {
        match r {
            Received::Applied { sequence, .. } => {
                let tick = self.tick_of(sequence);
                if play {
                    self.jitter.push(tick, sequence, now);
                }
            }
            Received::Dropped(DropReason::Undecodable(e)) => {
                if self.undecodable < 3 {
                    eprintln!("client {}: undecodable: {e}", self.id);
                }
                self.undecodable += 1;
            }
            Received::Dropped(DropReason::Stale { .. }) => self.stale += 1,
            Received::Dropped(DropReason::UnknownBaseline { .. }) => self.unknown_baseline += 1,
        }
    }
}

fn run(a: &Args) -> Result<bool, Box<dyn Error>> {
    let tick_len = Duration::from_secs(1) / TICK_RATE;
    let ticks = ((a.seconds * f64::from(TICK_RATE)).round() as usize).max(1);
    let scenario = racing_lobby(a.seed, ticks);
    let worlds: Vec<Arc<Snapshot>> = scenario.ticks.into_iter().map(Arc::new).collect();
    let set = DictionarySet::load(shipped_racing_set())?;
    set.fits(&scenario.schema)?;
    let schema = set.schema().clone();
    let server_cfg = ServerConfig {
        dictionary: set.dictionary(DictKind::Delta).cloned(),
        keyframe_dictionary: set.dictionary(DictKind::Keyframe).cloned(),
        share_encodes: true,
        ..ServerConfig::default()
    };
    let client_cfg = ClientConfig {
        dictionaries: set.dictionaries().iter().map(|(_, d)| d.clone()).collect(),
        ..ClientConfig::default()
    };
    let mut server = Server::new(schema.clone(), server_cfg.clone())?;
    let mut shadow = Server::new(schema.clone(), server_cfg)?;
    // Tiers by distance; who is due comes from each car's last send.
    let rates = RateTiers::default();
    let frag_cfg = FragmentConfig {
        mtu: MTU - 1,
        ..FragmentConfig::default()
    };
    let chunk_cfg = ChunkConfig {
        bandwidth: 125_000,
        packet_overhead: UDP_IP_OVERHEAD as usize + 1,
        resend: ResendDelay::Fixed(
            (a.latency * 2 + Duration::from_millis(30)).max(Duration::from_millis(100)),
        ),
        initial_burst: true,
        ..ChunkConfig::default()
    };
    // Each client's share of the budget, in bytes per second.
    let cir = (a.budget_mbps * 1e6 / 8.0 / f64::from(a.clients)) as u64;

    let server_socket = UdpSocket::bind("127.0.0.1:0")?;
    server_socket.set_nonblocking(true)?;
    let server_addr = server_socket.local_addr()?;
    let mut down = Link::new(a.seed ^ 0xd0, a.loss, a.latency);
    let mut players = Vec::with_capacity(usize::from(a.clients));
    for id in 1..=a.clients {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.set_nonblocking(true)?;
        players.push(Player {
            id,
            socket,
            up: Link::new(a.seed ^ (u64::from(id) << 8), a.loss, a.latency),
            client: Client::new(schema.clone(), client_cfg.clone())?,
            reasm: Reassembler::new(frag_cfg),
            chunks: ChunkReceiver::new(MAX_CHUNK_SIZE),
            jitter: JitterBuffer::new(JitterConfig::default()),
            persist: Persist::new(&Snapshot::new(&schema), LINGER),
            connected_at: None,
            unwrap: None,
            undecodable: 0,
            stale: 0,
            unknown_baseline: 0,
            transport_errors: 0,
            before_connect: 0,
        });
    }
    let mut peers: HashMap<u16, Peer> = HashMap::new();
    let mut tick_of_seq: HashMap<u16, usize> = HashMap::new();
    let mut zstd_bytes = 0u64;
    let mut raw_bytes = 0u64;
    let mut server_bad = 0u64;
    let mut rebinds = 0u64;

    let bar = if a.json {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::new(ticks as u64);
        bar.set_style(ProgressStyle::with_template(
            "{spinner} [{elapsed}] {wide_bar} {pos}/{len} ticks {msg}",
        )?);
        bar
    };

    let start = Instant::now();
    let since = |t: Instant| t.saturating_duration_since(start);
    let drain = a.latency * 3 + Duration::from_millis(300);
    let nominal_end = tick_len * ticks as u32;
    let hard_end = start + nominal_end + drain + Duration::from_secs(3);
    let mut next_tick = start;
    let mut k = 0usize; // ticks run
    let mut ticks_done_at: Option<Instant> = None;
    let mut buf = vec![0u8; 65536];
    let mut turns = 0u64;
    while turns < 50_000_000 {
        turns += 1;
        let now = Instant::now();
        let now_d = since(now);
        if now >= hard_end {
            break;
        }
        if ticks_done_at.is_some_and(|t| now >= t + drain) {
            break;
        }
        if now >= next_tick {
            next_tick += tick_len;
            if k < ticks {
                // ---- server tick ----
                let world = &worlds[k];
                let seq = server.begin_tick(world.clone());
                shadow.begin_tick(world.clone());
                tick_of_seq.insert(seq, k);
                let records = world.sections().first().map_or(&[][..], |s| s.records());
                let zstd_len = zstd::bulk::compress(records, ZSTD_LEVEL)?.len() as u64;
                let raw = world.raw_len() as u64;
                let cars = positions(world);
                let mut ids: Vec<u16> = peers.keys().copied().collect();
                ids.sort_unstable();
                for id in ids {
                    let Some(peer) = peers.get_mut(&id) else {
                        continue;
                    };
                    if !peer.live {
                        continue;
                    }
                    let view = view_for(&rates, k, id, &cars, &peer.last_sent);
                    let full_before = server.stats().full;
                    let packet = server.send(id, &view)?;
                    peer.all_bytes += shadow.send(id, &View::all())?.len() as u64;
                    peer.ticks += 1;
                    zstd_bytes += zstd_len;
                    raw_bytes += raw;
                    let overhead = 1 + UDP_IP_OVERHEAD as usize; // channel byte, UDP/IP
                    match peer
                        .frag
                        .split_paced(&packet, &mut peer.bucket, now_d, overhead)?
                    {
                        Paced::Held { .. } => peer.held_back += 1,
                        Paced::Send { parts, conformance } => {
                            match conformance {
                                Conformance::Yellow => peer.yellow += 1,
                                _ => peer.green += 1,
                            }
                            peer.resyncs += server.stats().full - full_before;
                            for &car in view.sent_ids(0).unwrap_or(&[]) {
                                if let Some(slot) = peer.last_sent.get_mut(car as usize) {
                                    *slot = Some(k as u32);
                                }
                            }
                            peer.views.push_back((server.sequence(), view.clone()));
                            if peer.views.len() > 64 {
                                peer.views.pop_front();
                            }
                            peer.bytes += packet.len() as u64;
                            peer.cars_sent += view.sent_ids(0).map_or(0, <[u32]>::len) as u64;
                            peer.cars_held +=
                                (cars.len() - view.sent_ids(0).map_or(0, <[u32]>::len)) as u64;
                            for part in parts {
                                down.push(now, peer.addr, framed(CH_FRAGMENT, &[], &part));
                            }
                        }
                    }
                }
                k += 1;
                bar.inc(1);
                if k == ticks {
                    ticks_done_at = Some(now);
                }
                // NAT rebinding: client 1 moves to a new port half-way.
                if k == ticks / 2 {
                    if let Some(p) = players.first_mut() {
                        let socket = UdpSocket::bind("127.0.0.1:0")?;
                        socket.set_nonblocking(true)?;
                        p.socket = socket;
                        rebinds += 1;
                    }
                }
            }
            // ---- client ticks: every client acks every tick ----
            for p in &mut players {
                let msg = p.client.message(p.id).to_bytes();
                p.up.push(now, server_addr, framed(CH_MESSAGE, &[], &msg));
            }
            if next_tick + tick_len * 4 < now {
                // Far behind (a stalled machine): do not burst to catch up.
                next_tick = now;
            }
        }

        // ---- server: connect chunks ----
        for peer in peers.values_mut() {
            if peer.live {
                continue;
            }
            for _ in 0..64 {
                let Some(slice) = peer.chunk.poll_transmit_paced(now_d, &mut peer.bucket) else {
                    break;
                };
                down.push(now, peer.addr, framed(CH_SLICE, &[], &slice));
            }
        }

        // ---- the wire ----
        down.flush(now, &server_socket)?;
        for p in &mut players {
            p.up.flush(now, &p.socket)?;
        }

        // ---- server receive ----
        for _ in 0..MAX_READS {
            let (n, from) = match server_socket.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => continue,
                Err(e) => return Err(e.into()),
            };
            let d = &buf[..n];
            match d.first() {
                Some(&CH_MESSAGE) => {
                    let body = &d[1..];
                    let Ok(msg) = ClientMessage::parse(body) else {
                        server_bad += 1;
                        continue;
                    };
                    let id = msg.client_id;
                    if let Entry::Vacant(slot) = peers.entry(id) {
                        if k == 0 || id == 0 || usize::from(id) > players.len() {
                            continue; // no world yet, or not one of ours
                        }
                        server.connect(id);
                        shadow.connect(id);
                        let first = server.send(id, &View::all())?;
                        shadow.send(id, &View::all())?;
                        let mut chunk = ChunkSender::new(chunk_cfg);
                        chunk.send(first.to_vec())?;
                        slot.insert(Peer {
                            addr: from,
                            chunk,
                            chunk_seq: server.sequence(),
                            live: false,
                            frag: Fragmenter::new(frag_cfg),
                            bucket: TokenBucket::new(TokenBucketConfig::for_rate(cir)),
                            bytes: 0,
                            ticks: 0,
                            all_bytes: 0,
                            resyncs: 0,
                            green: 0,
                            yellow: 0,
                            held_back: 0,
                            cars_sent: 0,
                            cars_held: 0,
                            // Stagger: car `i` is first due `i % 4` ticks early.
                            last_sent: (0..64u32)
                                .map(|i| Some((k as u32).saturating_sub(i % 4)))
                                .collect(),
                            views: std::collections::VecDeque::new(),
                            addr_changes: 0,
                        });
                    }
                    if let Some(peer) = peers.get_mut(&id) {
                        if peer.addr != from {
                            peer.addr = from;
                            peer.addr_changes += 1;
                        }
                    }
                    if server.handle_message(body).is_err() {
                        server_bad += 1;
                    }
                    let _ = shadow.handle_message(body);
                }
                Some(&CH_CHUNK_ACK) if d.len() >= 3 => {
                    let id = u16::from_le_bytes([d[1], d[2]]);
                    let Some(peer) = peers.get_mut(&id) else {
                        server_bad += 1;
                        continue;
                    };
                    if peer.addr != from {
                        peer.addr = from;
                        peer.addr_changes += 1;
                    }
                    if peer.live {
                        continue; // a late ack of the finished chunk
                    }
                    if peer.chunk.handle_ack(&d[3..]).is_err() {
                        server_bad += 1;
                    }
                    if peer.chunk.stats().chunks_sent >= 1 {
                        // Every slice acked: the client holds that snapshot.
                        peer.live = true;
                        let _ = server.ack(id, peer.chunk_seq);
                        let _ = shadow.ack(id, peer.chunk_seq);
                    }
                }
                _ => server_bad += 1,
            }
        }

        // ---- clients receive ----
        for p in &mut players {
            for _ in 0..MAX_READS {
                let n = match p.socket.recv_from(&mut buf) {
                    Ok((n, _)) => n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::ConnectionReset => continue,
                    Err(e) => return Err(e.into()),
                };
                let d = &buf[..n];
                match d.first() {
                    Some(&CH_FRAGMENT) => match p.reasm.handle(&d[1..], now_d) {
                        Ok(Some(packet)) => {
                            if p.connected_at.is_some() {
                                let r = p.client.receive(&packet);
                                p.applied(r, now_d, true);
                            } else {
                                p.before_connect += 1;
                            }
                        }
                        Ok(None) => {}
                        Err(_) => p.transport_errors += 1,
                    },
                    Some(&CH_SLICE) => {
                        if p.chunks.handle_slice(&d[1..]).is_err() {
                            p.transport_errors += 1;
                        }
                        if let Some(chunk) = p.chunks.poll_chunk() {
                            if p.connected_at.is_none() {
                                let r = p.client.receive(&chunk);
                                if let Received::Applied { sequence, .. } = r {
                                    p.connected_at = Some(now_d);
                                    let tick = p.tick_of(sequence);
                                    if let Some(snap) = p.client.get(sequence) {
                                        p.persist.apply(tick, snap);
                                    }
                                }
                                p.applied(r, now_d, false);
                            }
                        }
                        for _ in 0..4 {
                            let Some(ack) = p.chunks.poll_transmit() else {
                                break;
                            };
                            let frame = framed(CH_CHUNK_ACK, &p.id.to_le_bytes(), &ack);
                            p.up.push(now, server_addr, frame);
                        }
                    }
                    _ => p.transport_errors += 1,
                }
            }
            // Play out up to the newest snapshot received: ticks after it
            // are not missing yet (and after the run they never come).
            while p
                .unwrap
                .is_some_and(|(_, t)| i64::from(p.jitter.next_tick()) <= t)
            {
                match p.jitter.poll(now_d) {
                    Some(Playout::Snapshot { tick, item }) => {
                        if let Some(snap) = p.client.get(item) {
                            p.persist.apply(tick, snap);
                        }
                    }
                    Some(Playout::Gap { .. }) => {}
                    None => break,
                }
            }
        }

        // ---- sleep until something is due ----
        let mut wake = next_tick.min(now + Duration::from_millis(2));
        if let Some(t) = down.next_due() {
            wake = wake.min(t);
        }
        for p in &players {
            if let Some(t) = p.up.next_due() {
                wake = wake.min(t);
            }
        }
        let now = Instant::now();
        if wake > now {
            std::thread::sleep((wake - now).min(Duration::from_millis(2)));
        }
    }
    bar.finish_and_clear();
    let wall = start.elapsed();

    // ---- verify ----
    let mut out_of_sync = Vec::new();
    let mut want = Snapshot::new(&schema);
    let mut exact = Snapshot::new(&schema);
    // Ages (in ticks) of the cars in the clients' presented worlds.
    let mut ages = Vec::new();
    for p in &players {
        let latest = p.client.latest();
        let tick = latest.and_then(|(seq, _)| tick_of_seq.get(&seq).copied());
        let ok = match (latest, tick, p.unwrap, peers.get(&p.id)) {
            (Some((seq, snap)), Some(t), Some((useq, utick)), Some(peer)) => {
                let view = if seq == peer.chunk_seq {
                    Some(View::all())
                } else {
                    peer.views
                        .iter()
                        .find(|(s, _)| *s == seq)
                        .map(|v| v.1.clone())
                };
                let Some(view) = view else {
                    out_of_sync.push(p.id);
                    continue;
                };
                view.apply(&worlds[t], &mut exact);
                let offset = tick_of_seq
                    .get(&useq)
                    .map_or(i64::MIN / 2, |&w| utick - w as i64);
                server.sent_state(p.id, seq, &mut want)
                    && want == *snap
                    && exact == *snap
                    && presented_ok(&p.persist, &worlds, offset, &mut ages)
            }
            _ => false,
        };
        if !ok {
            out_of_sync.push(p.id);
        }
    }
    ages.sort_unstable();
    let age_mean = f64::from(ages.iter().sum::<u32>()) / ages.len().max(1) as f64;
    let age_max = ages.last().copied().unwrap_or(0);

    // ---- report ----
    let sum = |f: fn(&Peer) -> u64| peers.values().map(f).sum::<u64>();
    let live_ticks = sum(|p| p.ticks).max(1) as f64;
    let bytes = sum(|p| p.bytes) as f64;
    let all_bytes = sum(|p| p.all_bytes) as f64;
    let per_tick = |b: f64| b / live_ticks;
    // Upload at 60 Hz for all clients: bytes per client-tick × clients × 60.
    let mbps = |b: f64| per_tick(b) * f64::from(a.clients) * f64::from(TICK_RATE) * 8.0 / 1e6;
    let server_stats = server.stats();
    let connects = peers.len() as u64;
    let resyncs = sum(|p| p.resyncs);
    let undecodable: u64 = players.iter().map(|p| p.undecodable).sum();
    let late: u64 = players.iter().map(|p| p.jitter.stats().late).sum();
    let gaps: u64 = players.iter().map(|p| p.jitter.stats().gaps).sum();
    let released: u64 = players.iter().map(|p| p.jitter.stats().released).sum();
    let up_lost: u64 = players.iter().map(|p| p.up.lost).sum();
    let up_offered: u64 = players.iter().map(|p| p.up.offered).sum();
    let refused = down.refused + players.iter().map(|p| p.up.refused).sum::<u64>();
    let transport_errors: u64 = players.iter().map(|p| p.transport_errors).sum();
    let (green, yellow, held_back) = (sum(|p| p.green), sum(|p| p.yellow), sum(|p| p.held_back));
    let (cars_sent, cars_held) = (sum(|p| p.cars_sent), sum(|p| p.cars_held));
    let seconds_run = k as f64 / f64::from(TICK_RATE);
    // Everything the server socket uploaded (framing, fragment headers,
    // connect chunks and resends; no UDP/IP headers), averaged over the run.
    let wire_mbps = down.offered_bytes as f64 * 8.0 / 1e6 / seconds_run.max(1e-9);
    let connect_ms: Vec<f64> = players
        .iter()
        .filter_map(|p| p.connected_at.map(|t| t.as_secs_f64() * 1e3))
        .collect();
    let connect_ms_max = connect_ms.iter().copied().fold(0.0, f64::max);
    let ok = out_of_sync.is_empty() && undecodable == 0;

    if a.json {
        let v = serde_json::json!({
            "clients": a.clients,
            "seconds": a.seconds,
            "ticks": k,
            "loss": a.loss,
            "latency_ms": a.latency.as_millis() as u64,
            "wall_seconds": wall.as_secs_f64(),
            "raw_bytes_per_tick": raw_bytes as f64 / live_ticks,
            "bytes_per_client_tick_mean": per_tick(bytes),
            "view_all_bytes_per_client_tick_mean": per_tick(all_bytes),
            "rate_tier_saving": 1.0 - bytes / all_bytes.max(1.0),
            "upload_mbps": mbps(bytes),
            "view_all_upload_mbps": mbps(all_bytes),
            "wire_upload_mbps": wire_mbps,
            "budget_mbps": a.budget_mbps,
            "zstd_frame_upload_mbps": mbps(zstd_bytes as f64),
            "full_snapshots": server_stats.full,
            "connect_chunks": connects,
            "connect_ms_max": connect_ms_max,
            "resyncs": resyncs,
            "undecodable_packets": undecodable,
            "jitter_released": released,
            "jitter_late": late,
            "jitter_missing": gaps,
            "bucket_green": green,
            "bucket_yellow": yellow,
            "bucket_red_held_back": held_back,
            "car_updates_sent": cars_sent,
            "car_updates_skipped": cars_held,
            "presented_car_age_ticks_mean": age_mean,
            "presented_car_age_ticks_max": age_max,
            "datagrams_lost_down": down.lost,
            "datagrams_lost_up": up_lost,
            "nat_rebinds": rebinds,
            "out_of_sync_clients": out_of_sync.len(),
        });
        println!("{v}");
        return Ok(ok);
    }

    println!(
        "racing lobby over UDP 127.0.0.1: {} clients, {k} ticks at {TICK_RATE} Hz ({:.1} s wall), \
         loss {:.1}%, latency {} ms ± 10%",
        a.clients,
        wall.as_secs_f64(),
        a.loss * 100.0,
        a.latency.as_millis()
    );
    println!();
    println!(
        "{:>6} {:>9} {:>9} {:>6} {:>7} {:>6} {:>6} {:>6} {:>6} {:>5}",
        "client", "B/tick", "all B/t", "save", "conn ms", "resync", "late", "miss", "held", "sync"
    );
    for p in &players {
        let Some(peer) = peers.get(&p.id) else {
            println!("{:>6} never connected", p.id);
            continue;
        };
        let t = peer.ticks.max(1) as f64;
        let js = p.jitter.stats();
        println!(
            "{:>6} {:>9.1} {:>9.1} {:>5.1}% {:>7.0} {:>6} {:>6} {:>6} {:>6} {:>5}",
            p.id,
            peer.bytes as f64 / t,
            peer.all_bytes as f64 / t,
            100.0 * (1.0 - peer.bytes as f64 / (peer.all_bytes as f64).max(1.0)),
            p.connected_at.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
            peer.resyncs,
            js.late,
            js.gaps,
            peer.held_back,
            if out_of_sync.contains(&p.id) {
                "NO"
            } else {
                "ok"
            },
        );
    }
    println!();
    let row = |k: &str, v: String| println!("  {k:<44} {v}");
    println!("total");
    row(
        "raw bytes per tick (64 cars)",
        format!("{:.0}", raw_bytes as f64 / live_ticks),
    );
    row(
        "sent bytes per client per tick (rate tiers)",
        format!("{:.1}", per_tick(bytes)),
    );
    row(
        "  same with View::all (no rate tiers)",
        format!(
            "{:.1}  (tiers save {:.1}%)",
            per_tick(all_bytes),
            100.0 * (1.0 - bytes / all_bytes.max(1.0))
        ),
    );
    row(
        "  car updates sent / skipped by the tiers",
        format!(
            "{cars_sent} / {cars_held} ({:.1}% skipped)",
            100.0 * cars_held as f64 / (cars_sent + cars_held).max(1) as f64
        ),
    );
    row(
        "  presented cars (Persist): age mean / max",
        format!("{age_mean:.2} / {age_max} ticks ({} cars)", ages.len()),
    );
    row(
        "upload, all clients, 60 Hz",
        format!(
            "{:.2} Mbit/s of the {} Mbit/s budget ({:.1}%)",
            mbps(bytes),
            a.budget_mbps,
            100.0 * mbps(bytes) / a.budget_mbps
        ),
    );
    row("  with View::all", format!("{:.2} Mbit/s", mbps(all_bytes)));
    row(
        "  on the wire, run average (framing, chunks)",
        format!("{wire_mbps:.2} Mbit/s"),
    );
    row(
        "plain zstd frames (level 3, per client-tick)",
        format!(
            "{:.2} Mbit/s ({:.0} B per client-tick, {:.1}x tickpack)",
            mbps(zstd_bytes as f64),
            per_tick(zstd_bytes as f64),
            zstd_bytes as f64 / bytes.max(1.0)
        ),
    );
    row(
        "full snapshots (connect chunks + resyncs)",
        format!("{} ({connects} + {resyncs})", server_stats.full),
    );
    row(
        "connect via chunk, slowest",
        format!("{connect_ms_max:.0} ms after start"),
    );
    row("undecodable packets", undecodable.to_string());
    row(
        "dropped: stale / unknown baseline",
        format!(
            "{} / {}",
            players.iter().map(|p| p.stale).sum::<u64>(),
            players.iter().map(|p| p.unknown_baseline).sum::<u64>()
        ),
    );
    row(
        "jitter buffer: released / late / missing",
        format!("{released} / {late} / {gaps}"),
    );
    row(
        "token bucket: green / yellow / red (held back)",
        format!("{green} / {yellow} / {held_back}"),
    );
    row(
        "datagrams lost: down / up",
        format!(
            "{} of {} / {up_lost} of {up_offered}",
            down.lost, down.offered
        ),
    );
    row(
        "transport errors (client) / bad datagrams (server)",
        format!("{transport_errors} / {server_bad}"),
    );
    row("sends refused by the OS", refused.to_string());
    row(
        "NAT rebinds (client 1 changes port)",
        format!(
            "{rebinds}, server followed {}",
            peers.get(&1).map_or(0, |p| p.addr_changes)
        ),
    );
    row(
        "clients in sync at the end",
        format!("{} of {}", players.len() - out_of_sync.len(), players.len()),
    );
    if !ok {
        eprintln!(
            "FAILED: {} undecodable packets, out of sync: {out_of_sync:?}",
            undecodable
        );
    }
    Ok(ok)
}
