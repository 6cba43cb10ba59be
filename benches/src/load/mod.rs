//! How many clients one `tickpack_net::Server` holds (issue 38 §2): the
//! machinery of the `load` binary.
//!
//! * [`bench`](mod@bench): one server endpoint, sans-IO, with hundreds of clients
//!   on a virtual clock, each with its own lossy link and its own view of
//!   the quantised race (distance rate tiers from its car); server time,
//!   memory and bytes per client.
//! * [`udp`]: the same on sockets on 127.0.0.1 at 60 Hz of wall-clock
//!   time, searching the largest client count that keeps the tick rate
//!   with every client in sync.
//! * [`soak`]: waves of clients joining, leaving, going silent and
//!   moving to new addresses; the heap and the endpoint's per-client state
//!   must come back to their level after every wave.
//!
//! Every run ends with the sync check ([`sim::Sim::check_sync`]): each
//! client's newest applied snapshot equals what the server sent it.

pub mod bench;
pub mod sim;
pub mod soak;
pub mod udp;

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use tickpack::{Schema, Snapshot};
use tickpack_net::{ClientId, Interest, Skipped, Tiered, UDP_IP_OVERHEAD};
use tickpack_scenarios::{racing_lobby, racing_schema_quantized, CAR_COUNT, LOBBY_TIERS};
use tickpack_session::{ClientConfig, View};
use tickpack_sets::dictset::{DictKind, DictionarySet};
use tickpack_transport::conn::Key;
use tickpack_transport::{ResendDelay, TokenBucketConfig};

use crate::lobby::shipped_racing_quantized_set;

/// Largest datagram, connection layer included.
pub const MTU: usize = 1200;
/// The benchmark's protocol id.
pub const PROTOCOL_ID: u64 = 0x6c6f_6164_7469_636b;
/// Each client's byte budget per second (64 kB/s, the endpoint's default).
pub const CLIENT_RATE: u64 = 64_000;
/// Ticks of the race recorded; the server loops over them.
const RACE_TICKS: usize = 1200;

/// The distance rate tiers, each client viewing from car `user % 64`:
/// every client has its own view and its own tier history, though the race
/// has 64 cars.
#[derive(Debug)]
pub struct Cars(pub Tiered);

impl Interest for Cars {
    fn view(&mut self, client: ClientId, user: u64, tick: u32, world: &Snapshot) -> View {
        self.0.view(client, user % CAR_COUNT as u64, tick, world)
    }

    fn sent(&mut self, client: ClientId, tick: u32, view: &View) {
        self.0.sent(client, tick, view);
    }

    fn disconnected(&mut self, client: ClientId) {
        self.0.disconnected(client);
    }
}

/// What every run shares: the race, the schema and both endpoints'
/// settings.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The worlds the server sends, looped.
    pub worlds: Vec<Arc<Snapshot>>,
    /// Their schema (the shipped set's).
    pub schema: Schema,
    /// The server's settings, `max_clients` set by the caller.
    pub server: tickpack_net::ServerConfig,
    /// Every client's settings.
    pub client: tickpack_net::ClientConfig,
    /// The key connect tokens are sealed with.
    pub key: Key,
}

impl Setup {
    /// The quantised race (seed 1) with its shipped trained set, sessions
    /// sized for `round_trip`, room for `max_clients`.
    pub fn new(max_clients: u16, round_trip: Duration) -> Result<Self, Box<dyn Error>> {
        let race =
            racing_lobby(1, RACE_TICKS).quantized("racing, quantised", racing_schema_quantized());
        let set = DictionarySet::load(shipped_racing_quantized_set())?;
        set.fits(&race.schema)?;
        let schema = set.schema().clone();
        let tick = Duration::from_secs(1) / tickpack_scenarios::TICK_RATE;
        let history = tickpack_session::history_for(tick, round_trip + Duration::from_millis(100));
        let session = tickpack_session::ServerConfig {
            dictionary: set.dictionary(DictKind::Delta).cloned(),
            keyframe_dictionary: set.dictionary(DictKind::Keyframe).cloned(),
            history,
            ..tickpack_session::ServerConfig::default()
        };
        let key = Key::generate()?;
        let mut server = tickpack_net::ServerConfig::new(PROTOCOL_ID, key.clone());
        server.max_clients = max_clients;
        server.mtu = MTU;
        server.session = session;
        server.pacing =
            TokenBucketConfig::for_rate(CLIENT_RATE).with_min_burst((MTU + UDP_IP_OVERHEAD) as u64);
        server.chunk.resend = ResendDelay::Fixed(
            (round_trip + Duration::from_millis(30)).max(Duration::from_millis(100)),
        );
        let client = tickpack_net::ClientConfig {
            mtu: MTU,
            session: ClientConfig {
                dictionaries: set.dictionaries().iter().map(|(_, d)| d.clone()).collect(),
                history,
                ..ClientConfig::default()
            },
            ..tickpack_net::ClientConfig::default()
        };
        Ok(Self {
            worlds: race.ticks.into_iter().map(Arc::new).collect(),
            schema,
            server,
            client,
            key,
        })
    }

    /// The server's interest hook: the lobby's tiers, far cars left out.
    pub fn interest() -> Cars {
        Cars(Tiered::new(
            LOBBY_TIERS,
            Skipped::Omitted,
            tickpack_scenarios::car_positions,
        ))
    }

    /// The world of tick `k` (the race looped).
    pub fn world(&self, k: u64) -> Arc<Snapshot> {
        let i = usize::try_from(k % self.worlds.len().max(1) as u64).unwrap_or(0);
        self.worlds.get(i).cloned().unwrap_or_default()
    }
}

/// Summary of a sample of durations.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spread {
    /// Mean.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Largest.
    pub max: Duration,
}

impl Spread {
    /// The spread of `samples` (all zero when empty).
    pub fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut s = samples.to_vec();
        s.sort_unstable();
        let at = |q: f64| {
            let i = ((s.len() - 1) as f64 * q).round() as usize;
            s.get(i).copied().unwrap_or_default()
        };
        let total: Duration = s.iter().sum();
        Self {
            mean: total / u32::try_from(s.len()).unwrap_or(u32::MAX),
            p50: at(0.5),
            p99: at(0.99),
            max: s.last().copied().unwrap_or_default(),
        }
    }
}
