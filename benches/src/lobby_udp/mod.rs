//! The racing lobby over real UDP sockets on 127.0.0.1, driven by one
//! single-threaded event loop at 60 Hz of wall-clock time (the machinery
//! behind `examples/lobby.rs`), built on `tickpack-net`'s public API.
//!
//! * One server socket and one socket per client; each direction of each
//!   socket is a link that drops with the configured loss and
//!   delays by the latency ± 10%.
//! * The server is a `tickpack_net::Server` and each client a
//!   `tickpack_net::Client`: authenticated connections from connect tokens
//!   the lobby issues, the connect snapshot over a chunk, fragments,
//!   per-client pacing from the budget, the distance rate tiers as the
//!   interest hook (`tickpack_net::Tiered`), and on each client the
//!   jitter buffer and the presented world. Client 1 moves to a new socket
//!   half-way; the server follows it on an authenticated packet.
//! * With `attack`, an attacker floods forged traffic at the
//!   server and every client.
//!
//! The verdict ([`report::Verdict`]) keeps codec sync (each client's
//! applied state is the server's, byte for byte) apart from presentation
//! (the jitter buffer and `Persist` world, where an unseen car expires).

mod attack;
mod host;
mod link;
mod player;
mod report;
mod traffic;

use std::error::Error;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tickpack::Snapshot;
use tickpack_net::{Skipped, Tiered, UDP_IP_OVERHEAD};
use tickpack_session::{ClientConfig, RateTiers, ServerConfig, View};
use tickpack_sets::dictset::{DictKind, DictionarySet};
use tickpack_transport::conn::{self, ConnectToken, Key, CLIENT_OVERHEAD};
use tickpack_transport::{ResendDelay, TokenBucketConfig};

pub use report::{Report, Verdict};

use crate::lobby::{shipped_racing_quantized_set, shipped_racing_set};
use tickpack_scenarios::{racing_lobby, racing_schema_quantized, TICK_RATE};

/// Largest datagram, connection-layer overhead included.
pub const MTU: usize = 1200;
/// Ticks the presented world keeps a car no snapshot updated.
const LINGER: u32 = 20;
/// Most datagrams read from one socket per loop turn.
const MAX_READS: usize = 4096;
/// The lobby's protocol id.
const PROTOCOL_ID: u64 = 0x7469_636b_7061_636b;

/// Settings of one run.
#[derive(Debug, Clone, Copy)]
pub struct LobbyConfig {
    /// Clients, 1-63 (car 0 is the host's).
    pub clients: u16,
    /// Seconds of ticks to run.
    pub seconds: f64,
    /// Loss probability in each direction.
    pub loss: f64,
    /// One-way latency.
    pub latency: Duration,
    /// The server's upload budget for all clients, Mbit/s.
    pub budget_mbps: f64,
    /// Flood forged traffic at the server and the clients.
    pub attack: bool,
    /// Scenario and link seed.
    pub seed: u64,
    /// Send full-precision cars with the shipped trained set
    /// (`dictionaries/racing-lobby/1`) instead of
    /// [`tickpack_scenarios::racing_schema_quantized`] with its shipped set
    /// (`dictionaries/racing-lobby-quantized/1`), the server quantising its
    /// world every tick.
    pub lossless: bool,
    /// Quantised cars without their trained set (plain zstd, the schema's
    /// own operators): what the set gains.
    pub untrained: bool,
    /// What a client's snapshot holds of a car not due this tick.
    pub far_cars: FarCars,
    /// The distance-based rates: cars within `near` metres of the client's
    /// every tick, within `far` every 2nd, beyond every 4th.
    pub tiers: RateTiers,
    /// How much older than a client's newest acked snapshot its baseline
    /// may be to hold more of the cars sent
    /// ([`ServerConfig::baseline_window`]).
    pub baseline_window: u16,
}

/// What a client's snapshot holds of a car that the rate tiers skip this
/// tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FarCars {
    /// Left out ([`View::filter`]): the client presents it at its newest
    /// record; its next update is a delta when the packet's baseline sent
    /// it, else a spawned row (coded against the default record). With the
    /// shipped set, trained on such a client's stream, the cheaper choice.
    #[default]
    Omitted,
    /// Held at the baseline's record ([`View::with_held`]): it stays in the
    /// protocol state, costs nothing while skipped and its next update is a
    /// delta, but against a record as old as the chain of baselines makes
    /// it, and no packet with a held car is predicted. The client presents
    /// only the cars a snapshot changed against its baseline, so a held
    /// (older) record never replaces a newer one (a car that stands still
    /// longer than the linger time expires from the presented world).
    Held,
}

/// The loop's time: since the start, and as the connection layer wants it
/// (since the Unix epoch).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub(crate) since_start: Duration,
    epoch_start: Duration,
}

impl Clock {
    pub(crate) fn unix(&self) -> Duration {
        self.epoch_start + self.since_start
    }
}

/// The smallest budget that lets each client's bucket hold one datagram
/// per quarter second (its burst), in Mbit/s.
pub fn min_budget_mbps(clients: u16) -> f64 {
    (MTU + UDP_IP_OVERHEAD) as f64 * 4.0 * 8.0 * f64::from(clients) / 1e6
}

/// Runs the lobby.
pub fn run(a: &LobbyConfig) -> Result<Report, Box<dyn Error>> {
    let min = min_budget_mbps(a.clients);
    if a.budget_mbps < min {
        return Err(format!(
            "--budget-mbps {} is below {min:.2}, the least that gives each of {} clients a burst of one \
             {MTU}-byte datagram",
            a.budget_mbps, a.clients
        )
        .into());
    }
    let tick_len = Duration::from_secs(1) / TICK_RATE;
    let ticks = ((a.seconds * f64::from(TICK_RATE)).round() as usize).max(1);
    let lossless = racing_lobby(a.seed, ticks);
    // Quantised: the worlds are what the server sends, the originals what
    // the reconstruction error is measured against.
    let (scenario, originals) = if a.lossless {
        (lossless, None)
    } else {
        let q = lossless.quantized("racing lobby, quantised", racing_schema_quantized());
        (q, Some(lossless.ticks))
    };
    let worlds: Vec<Arc<Snapshot>> = scenario.ticks.into_iter().map(Arc::new).collect();
    let set = if a.untrained && !a.lossless {
        None
    } else {
        let dir = if a.lossless {
            shipped_racing_set()
        } else {
            shipped_racing_quantized_set()
        };
        let set = DictionarySet::load(dir)?;
        set.fits(&scenario.schema)?;
        Some(set)
    };
    let schema = set
        .as_ref()
        .map_or_else(|| scenario.schema.clone(), |s| s.schema().clone());
    let server_cfg = ServerConfig {
        dictionary: set
            .as_ref()
            .and_then(|s| s.dictionary(DictKind::Delta).cloned()),
        keyframe_dictionary: set
            .as_ref()
            .and_then(|s| s.dictionary(DictKind::Keyframe).cloned()),
        baseline_window: a.baseline_window,
        // Each client's ring (and history) grows from this default to its
        // measured round trip (tickpack-net sizes it).
        ..ServerConfig::default()
    };
    let client_cfg = ClientConfig {
        dictionaries: set.as_ref().map_or_else(Vec::new, |s| {
            s.dictionaries().iter().map(|(_, d)| d.clone()).collect()
        }),
        ..ClientConfig::default()
    };
    let cir = (a.budget_mbps * 1e6 / 8.0 / f64::from(a.clients)) as u64;
    let epoch_start = SystemTime::now().duration_since(UNIX_EPOCH)?;
    let key = Key::generate()?;
    let mut net_cfg = tickpack_net::ServerConfig::new(PROTOCOL_ID, key.clone());
    net_cfg.max_clients = a.clients;
    net_cfg.mtu = MTU;
    net_cfg.session = server_cfg.clone();
    net_cfg.tick = tick_len;
    net_cfg.pacing =
        TokenBucketConfig::for_rate(cir).with_min_burst((MTU + UDP_IP_OVERHEAD) as u64);
    net_cfg.chunk.resend = ResendDelay::Fixed(
        (a.latency * 2 + Duration::from_millis(30)).max(Duration::from_millis(100)),
    );
    let skipped = match a.far_cars {
        FarCars::Omitted => Skipped::Omitted,
        FarCars::Held => Skipped::Held,
    };
    let interest = host::Recorded::new(Tiered::new(
        a.tiers,
        skipped,
        tickpack_scenarios::car_positions,
    ));
    let server_socket = UdpSocket::bind("127.0.0.1:0")?;
    server_socket.set_nonblocking(true)?;
    let server_addr = server_socket.local_addr()?;
    let mut host = host::Host::new(
        tickpack_net::Server::new(schema.clone(), net_cfg, interest)?,
        &schema,
        server_cfg,
    )?;
    let net_client_cfg = tickpack_net::ClientConfig {
        mtu: MTU,
        session: client_cfg,
        linger: LINGER,
        jitter: tickpack_transport::JitterConfig {
            tick: tick_len,
            ..tickpack_transport::JitterConfig::default()
        },
        news_only: a.far_cars == FarCars::Held,
        ..tickpack_net::ClientConfig::default()
    };
    let mut down = link::Link::new(a.seed ^ 0xd0, a.loss, a.latency);
    let mut players = Vec::with_capacity(usize::from(a.clients));
    let mut sniffed_request = Vec::new();
    for id in 1..=a.clients {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.set_nonblocking(true)?;
        // The backend's job: a token per player, valid for a minute.
        let timeout = Duration::from_secs(10);
        let token = ConnectToken::issue(
            &key,
            PROTOCOL_ID,
            u64::from(id),
            epoch_start,
            Duration::from_secs(60),
            timeout,
        )?;
        if id == 1 {
            // What an eavesdropper sees of client 1's first request.
            let max_payload = MTU - CLIENT_OVERHEAD;
            let mut probe = conn::Client::new(epoch_start, server_addr, token.clone(), max_payload);
            sniffed_request = probe.poll_transmit(epoch_start).unwrap_or_default();
        }
        let net = tickpack_net::Client::new(
            epoch_start,
            server_addr,
            token,
            schema.clone(),
            net_client_cfg.clone(),
        )?;
        players.push(player::Player::new(
            id,
            socket,
            link::Link::new(a.seed ^ (u64::from(id) << 8), a.loss, a.latency),
            net,
        ));
    }
    let mut attacker = if a.attack {
        for p in &mut players {
            p.sniffed = Some(Vec::new());
        }
        // The attacker holds a real token of its own (user 10,000).
        let token = ConnectToken::issue(
            &key,
            PROTOCOL_ID,
            10_000,
            epoch_start,
            Duration::from_secs(60),
            Duration::from_secs(10),
        )?;
        let mut probe = conn::Client::new(epoch_start, server_addr, token, MTU - CLIENT_OVERHEAD);
        let token_request = probe.poll_transmit(epoch_start).unwrap_or_default();
        Some(attack::Attacker::new(
            a.seed ^ 0xa7,
            sniffed_request,
            token_request,
        )?)
    } else {
        None
    };

    let start = Instant::now();
    let drain = a.latency * 3 + Duration::from_millis(300);
    let hard_end = start + tick_len * ticks as u32 + drain + Duration::from_secs(3);
    let mut next_tick = start;
    let mut k = 0usize;
    let mut ticks_done_at: Option<Instant> = None;
    let mut buf = vec![0u8; 65536];
    let mut outbox = Vec::new();
    let mut rebinds = 0u64;
    loop {
        let now = Instant::now();
        let clock = Clock {
            since_start: now.saturating_duration_since(start),
            epoch_start,
        };
        if now >= hard_end || ticks_done_at.is_some_and(|t| now >= t + drain) {
            break;
        }
        if now >= next_tick {
            next_tick += tick_len;
            if k < ticks {
                host.tick(&clock, k, &worlds[k], &mut outbox)?;
                k += 1;
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
                if let Some(att) = attacker.as_mut() {
                    att.send_own(server_addr)?;
                    let addrs: Vec<SocketAddr> = players
                        .iter()
                        .filter_map(|p| p.socket.local_addr().ok())
                        .collect();
                    for (target, mut d) in att.spoofed(&addrs) {
                        match target {
                            attack::Spoofed::Server { from } => host.handle(&clock, from, &mut d),
                            attack::Spoofed::Client { index } => {
                                if let Some(p) = players.get_mut(index) {
                                    p.handle(now, &clock, server_addr, &mut d);
                                }
                            }
                        }
                    }
                }
            }
            for (i, p) in players.iter_mut().enumerate() {
                p.tick(now, &clock);
                if let (Some(att), Some(copies)) = (attacker.as_mut(), p.sniffed.as_mut()) {
                    att.copy_ahead(i, copies, server_addr)?;
                    copies.clear();
                }
            }
            if next_tick + tick_len * 4 < now {
                next_tick = now; // far behind: do not burst to catch up
            }
        }
        host.poll(&clock, &mut outbox);
        for (to, d) in outbox.drain(..) {
            if let Some(att) = attacker.as_mut() {
                if let Some(i) = players
                    .iter()
                    .position(|p| p.socket.local_addr().ok() == Some(to))
                {
                    att.capture(i, &d);
                }
            }
            down.push(now, to, d);
        }
        down.flush(now, &server_socket)?;
        for p in &mut players {
            p.up.flush(now, &p.socket)?;
        }
        for _ in 0..MAX_READS {
            let (n, from) = match server_socket.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => continue,
                Err(e) => return Err(e.into()),
            };
            host.handle(&clock, from, &mut buf[..n]);
        }
        for p in &mut players {
            p.receive(now, &clock, &mut buf)?;
        }
        let mut wake = next_tick.min(now + Duration::from_millis(2));
        for due in std::iter::once(down.next_due()).chain(players.iter().map(|p| p.up.next_due())) {
            wake = wake.min(due.unwrap_or(wake));
        }
        let now = Instant::now();
        if wake > now {
            std::thread::sleep((wake - now).min(Duration::from_millis(2)));
        }
    }
    Ok(report::build(
        a,
        &host,
        &players,
        &down,
        attacker.as_ref(),
        &worlds,
        originals.as_deref(),
        k,
        rebinds,
        start.elapsed(),
    ))
}

/// The view of client `id` (in car `id`) on `tick`: the cars the rate
/// tiers find due (by the tick each was last sent to this client) are
/// sent, the others left out or held as `far` says. `cars` as
/// [`tickpack_scenarios::car_positions`] gives them, `last_sent` indexed
/// by car id.
pub fn view_for(
    rates: &RateTiers,
    far: FarCars,
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
    match far {
        FarCars::Omitted => View::filter(vec![send]),
        FarCars::Held => View::with_held(vec![send], vec![skip]),
    }
}
