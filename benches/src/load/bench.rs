//! The load benchmark: one server endpoint, sans-IO, with `n` clients on
//! rough links; server time, memory and bytes per client.

use std::error::Error;
use std::time::Duration;

use super::sim::{Links, Sim};
use super::{Setup, Spread};

/// Settings of one load run.
#[derive(Debug, Clone, Copy)]
pub struct LoadConfig {
    /// Clients.
    pub clients: u16,
    /// Seconds of virtual time measured, after every client is ready.
    pub seconds: f64,
    /// The links.
    pub links: Links,
    /// Link seed.
    pub seed: u64,
}

/// What one load run measured.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Clients.
    pub clients: u16,
    /// Ticks measured.
    pub ticks: u64,
    /// Ticks it took every client to connect and receive snapshots.
    pub connect_ticks: u64,
    /// Server time per tick (its `tick`, `poll_transmit`, `handle` and
    /// `handle_timeout` calls).
    pub per_tick: Spread,
    /// Mean server time per tick and client.
    pub per_client: Duration,
    /// Server heap per client: the server's heap at the end less an empty
    /// server's, per client (counting allocator).
    pub server_heap_per_client: usize,
    /// An empty server's heap.
    pub server_heap_empty: usize,
    /// The endpoint's own accounting: session bytes per client, and the
    /// shared worlds.
    pub session_per_client: usize,
    /// Worlds the sessions share.
    pub session_shared: usize,
    /// Client endpoint heap per client (its links' queues included).
    pub client_heap: usize,
    /// Bytes per client and tick the server sent, UDP/IP headers included.
    pub bytes_per_client_tick: f64,
    /// The server's upload, Mbit/s.
    pub mbps: f64,
    /// Ticks the most lagging client's newest snapshot was behind at the end.
    pub max_lag: u64,
}

/// Runs `a`; `heap` reads the process's heap bytes now (the binary's
/// counting allocator). Fails if a client ends out of sync.
pub fn run(a: &LoadConfig, heap: fn() -> usize) -> Result<LoadReport, Box<dyn Error>> {
    let mut setup = Setup::new(a.clients, a.links.round_trip())?;
    setup.server.max_clients = a.clients;
    let before_server = heap();
    let mut sim = Sim::new(setup, a.links, a.seed)?;
    let server_heap_empty = heap().saturating_sub(before_server);
    for user in 0..u64::from(a.clients) {
        sim.join(user, Duration::from_secs(10))?;
    }
    let settle = 60 * 30;
    if !sim.settle(settle)? {
        return Err(format!(
            "{} clients were not all ready after {settle} ticks",
            a.clients
        )
        .into());
    }
    let connect_ticks = sim.tick;
    let ticks = ((a.seconds * 60.0).round() as u64).max(1);
    sim.measuring = true;
    for _ in 0..ticks {
        sim.step()?;
    }
    sim.measuring = false;
    let max_lag = sim.check_sync()?;
    let (session, shared) = sim.session_memory();
    let n = usize::from(a.clients).max(1);
    let time = std::mem::take(&mut sim.time);
    let with_all = heap();
    drop(std::mem::take(&mut sim.peers));
    let server_only = heap();
    drop(sim);
    let after = heap();
    let server_heap = server_only.saturating_sub(after);
    let per_tick = Spread::of(&time.per_tick);
    let nf = n as f64;
    let wire = time.sent_bytes + time.sent * tickpack_net::UDP_IP_OVERHEAD as u64;
    let bytes_per_client_tick = wire as f64 / nf / ticks as f64;
    Ok(LoadReport {
        clients: a.clients,
        ticks,
        connect_ticks,
        per_client: per_tick.mean / u32::try_from(n).unwrap_or(u32::MAX),
        per_tick,
        server_heap_per_client: server_heap.saturating_sub(server_heap_empty) / n,
        server_heap_empty,
        session_per_client: session / n,
        session_shared: shared,
        client_heap: with_all.saturating_sub(server_only) / n,
        bytes_per_client_tick,
        mbps: wire as f64 * 8.0 * 60.0 / ticks as f64 / 1e6,
        max_lag,
    })
}

impl LoadReport {
    /// One row of the report table.
    pub fn row(&self) -> String {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        format!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.1} | {} | {} | {:.0} | {:.1} | {} |",
            self.clients,
            us(self.per_tick.mean),
            us(self.per_tick.p99),
            us(self.per_tick.max),
            us(self.per_client),
            self.server_heap_per_client as f64 / 1024.0,
            self.session_per_client / 1024,
            self.client_heap / 1024,
            self.bytes_per_client_tick,
            self.mbps,
            self.max_lag,
        )
    }

    /// The table's header.
    pub fn header() -> &'static str {
        "| clients | server µs/tick (mean) | p99 | max | µs/client | server KiB/client (heap) | session KiB/client (own accounting) | client KiB | bytes/client/tick | Mbit/s | max lag (ticks) |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    }
}
