//! The racing lobby through the session layer: one server, many clients,
//! a lossy link with latency in both directions, all in one process on a
//! virtual clock (sans-IO: no sockets, deterministic from the seed). The
//! links are the testkit's [`Link`]s, their clock counting ticks.

use std::sync::Arc;
use std::time::Instant;

use tickpack::Snapshot;
use tickpack_session::{Client, ClientConfig, DropReason, Received, Server, ServerConfig, View};
use tickpack_sets::dictset::{DictKind, DictionarySet};

use tickpack_scenarios::{racing_lobby, racing_lobby_quantized, TICK_RATE};
use tickpack_testkit::link::{Link, LinkConfig};

/// Simulation settings.
#[derive(Debug, Clone, Copy)]
pub struct LobbyConfig {
    /// Number of clients.
    pub clients: u16,
    /// Ticks to run.
    pub ticks: usize,
    /// Packet loss in each direction, 0.0..=1.0.
    pub loss: f64,
    /// One-way latency in ticks.
    pub latency_ticks: usize,
    /// Extra random delay of 0..=jitter ticks (reorders packets).
    pub jitter_ticks: usize,
    /// Scenario and link seed.
    pub seed: u64,
    /// Share encodes between clients with the same baseline.
    pub share_encodes: bool,
    /// Use the trained set shipped in `dictionaries/racing-lobby/1`
    /// (its per-field operators and its keyframe and delta dictionaries),
    /// with `quantized` the one in `dictionaries/racing-lobby-quantized/1`.
    pub trained_set: bool,
    /// Race under [`racing_schema_quantized`](tickpack_scenarios::racing_schema_quantized),
    /// the server quantising its world every tick.
    pub quantized: bool,
}

impl Default for LobbyConfig {
    fn default() -> Self {
        Self {
            clients: 63,
            ticks: 600,
            loss: 0.05,
            latency_ticks: 3,
            jitter_ticks: 1,
            seed: 1,
            share_encodes: true,
            trained_set: true,
            quantized: false,
        }
    }
}

/// What the simulation measured, per tick averaged over the run.
#[derive(Debug, Clone, Copy, Default)]
pub struct LobbyReport {
    /// Ticks run.
    pub ticks: usize,
    /// Clients.
    pub clients: u16,
    /// Record bytes of the world per tick.
    pub raw_bytes: f64,
    /// Bytes sent to one client per tick (packets only, no UDP/IP header).
    pub bytes_per_client: f64,
    /// Full snapshots sent over the run.
    pub full_snapshots: u64,
    /// Packets sent over the run.
    pub packets: u64,
    /// Encoder runs over the run (the rest were shared).
    pub encodes: u64,
    /// Packets lost on the link.
    pub lost: u64,
    /// Packets dropped by clients as stale or against a missing baseline.
    pub dropped: u64,
    /// Packets clients could not decode (must be 0).
    pub undecodable: u64,
    /// Server time per tick to encode for every client, in microseconds.
    pub encode_us_per_tick: f64,
    /// Upload for all clients at 60 Hz, in Mbit/s.
    pub upload_mbps: f64,
    /// The same traffic priced as one zstd level-3 frame of the raw snapshot
    /// per client per tick, in Mbit/s.
    pub zstd_frame_upload_mbps: f64,
    /// Clients whose final state differs from the server's for that tick.
    pub out_of_sync: usize,
    /// Server memory held for one client (ring and views), bytes.
    pub client_memory: usize,
    /// World snapshots referenced by the rings, bytes (shared by all clients).
    pub shared_memory: usize,
}

/// Runs the lobby.
pub fn simulate(cfg: &LobbyConfig) -> Result<LobbyReport, Box<dyn std::error::Error>> {
    let scenario = if cfg.quantized {
        racing_lobby_quantized(cfg.seed, cfg.ticks)
    } else {
        racing_lobby(cfg.seed, cfg.ticks)
    };
    let worlds: Vec<Arc<Snapshot>> = scenario.ticks.into_iter().map(Arc::new).collect();
    let mut server_cfg = ServerConfig {
        share_encodes: cfg.share_encodes,
        ..ServerConfig::default()
    };
    let mut client_cfg = ClientConfig::default();
    let mut schema = scenario.schema.clone();
    if cfg.trained_set {
        let set = DictionarySet::load(if cfg.quantized {
            shipped_racing_quantized_set()
        } else {
            shipped_racing_set()
        })?;
        set.fits(&schema)?;
        schema = set.schema().clone();
        server_cfg.dictionary = set.dictionary(DictKind::Delta).cloned();
        server_cfg.keyframe_dictionary = set.dictionary(DictKind::Keyframe).cloned();
        client_cfg.dictionaries = set.dictionaries().iter().map(|(_, d)| d.clone()).collect();
    }
    let mut server = Server::new(schema.clone(), server_cfg)?;
    let mut clients = Vec::new();
    for id in 1..=cfg.clients {
        server.connect(id);
        clients.push(Client::new(schema.clone(), client_cfg.clone())?);
    }
    let n = usize::from(cfg.clients);
    // Per client, one link down (packets) and one up (messages); time is the
    // tick number.
    let link = LinkConfig {
        loss_ppm: (cfg.loss.clamp(0.0, 1.0) * 1e6).round() as u64,
        dup_pct: 0,
        latency_ms: cfg.latency_ticks as u64,
        jitter_ms: cfg.jitter_ticks as u64,
    };
    let seed = cfg.seed ^ 0x5eed;
    let mut down: Vec<Link> = (0..n as u64)
        .map(|i| Link::new(link, seed.wrapping_add(2 * i)))
        .collect();
    let mut up: Vec<Link> = (0..n as u64)
        .map(|i| Link::new(link, seed.wrapping_add(2 * i + 1)))
        .collect();
    let mut report = LobbyReport {
        ticks: worlds.len(),
        clients: cfg.clients,
        ..LobbyReport::default()
    };
    let mut seq_of_tick = Vec::with_capacity(worlds.len());
    let mut encode_time = 0.0;
    let mut zstd_bytes = 0u64;
    let mut raw = 0u64;
    for (t, world) in worlds.iter().enumerate() {
        raw += world.raw_len() as u64;
        let records: Vec<u8> = world
            .sections()
            .iter()
            .flat_map(|s| s.records().iter().copied())
            .collect();
        zstd_bytes += zstd::bulk::compress(&records, 3)?.len() as u64 * u64::from(cfg.clients);
        let start = Instant::now();
        let seq = server.begin_tick(world.clone());
        seq_of_tick.push(seq);
        let mut packets = Vec::with_capacity(n);
        for id in 1..=cfg.clients {
            packets.push(server.send(id, &View::all())?);
        }
        encode_time += start.elapsed().as_secs_f64();
        let now = t as u64;
        for (link, p) in down.iter_mut().zip(packets) {
            link.send(now, &p);
        }
        for (i, client) in clients.iter_mut().enumerate() {
            for p in down[i].recv(now) {
                match client.receive(&p) {
                    Received::Applied { .. } => {}
                    Received::Dropped(DropReason::Undecodable(_)) => report.undecodable += 1,
                    Received::Dropped(_) => report.dropped += 1,
                }
            }
            let msg = client.message().to_bytes();
            up[i].send(now, &msg);
            for m in up[i].recv(now) {
                server.handle_message(i as u16 + 1, &m)?;
            }
        }
    }
    report.lost = down.iter().map(|l| l.stats().lost).sum();
    for client in &clients {
        let ok = client.latest().is_some_and(|(seq, snap)| {
            seq_of_tick
                .iter()
                .position(|&s| s == seq)
                .is_some_and(|t| *worlds[t] == *snap)
        });
        report.out_of_sync += usize::from(!ok);
    }
    let stats = server.stats();
    let ticks = worlds.len().max(1) as f64;
    report.raw_bytes = raw as f64 / ticks;
    report.bytes_per_client = stats.bytes as f64 / ticks / f64::from(cfg.clients.max(1));
    report.full_snapshots = stats.full;
    report.packets = stats.packets;
    report.encodes = stats.encodes;
    report.encode_us_per_tick = encode_time * 1e6 / ticks;
    let mbps = |bytes: f64| bytes / ticks * TICK_RATE as f64 * 8.0 / 1e6;
    report.upload_mbps = mbps(stats.bytes as f64);
    report.zstd_frame_upload_mbps = mbps(zstd_bytes as f64);
    report.client_memory = server.client_memory(1).unwrap_or(0);
    report.shared_memory = server.shared_memory();
    Ok(report)
}

/// Where the racing lobby's trained set is shipped.
pub fn shipped_racing_set() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dictionaries/racing-lobby/1")
}

/// Where the quantised racing lobby's trained set is shipped (trained on
/// [`racing_lobby_quantized`] seeds 2-4; the lobbies run seed 1).
pub fn shipped_racing_quantized_set() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dictionaries/racing-lobby-quantized/1")
}
