//! The soak run: a standing population of clients, and waves of clients
//! that join, then leave, go silent (the server times them out) or move
//! to a new address mid-connection. After each wave the endpoint's
//! per-client state must be back to the standing clients, and the heap
//! back at its level: a leak per connection grows it wave after wave.
//!
//! The level is the heap less the bytes the codec sessions account for
//! (their rings' recall chunks come and go with the race), read after a
//! quiet spell without ticks (no datagrams in flight). Pools and maps
//! reach their size over the first waves; after `warmup` waves, the
//! lowest level of each `window` of waves must stay within the tolerance
//! of the first window's lowest, plus the bound of the connection layer's
//! used-token table (it keeps expired tokens until it holds 64 per slot).

use std::error::Error;
use std::time::Duration;

use super::sim::{Links, Sim};
use super::Setup;

/// Settings of a soak run.
#[derive(Debug, Clone, Copy)]
pub struct SoakConfig {
    /// Virtual seconds to run (whole waves, at least three).
    pub seconds: f64,
    /// Clients connected the whole run.
    pub standing: u16,
    /// Clients joining per wave.
    pub wave: u16,
    /// The links.
    pub links: Links,
    /// Link seed.
    pub seed: u64,
    /// Level growth that fails the run, bytes.
    pub tolerance: usize,
    /// Waves before the baseline is read.
    pub warmup: usize,
    /// Waves whose lowest level is compared (the first after the warm-up
    /// is the baseline).
    pub window: usize,
}

/// Used connect tokens the connection layer remembers per client slot
/// (`USED_TOKENS_PER_SLOT` in `tickpack_transport::conn`): expired ones are
/// only forgotten once that many are held, so the table grows with every
/// connection until `max_clients` times this, by design.
const USED_TOKENS_PER_SLOT: usize = 64;
/// Heap bytes per remembered token: a 32-byte key and two `u64` expiries
/// in a hash table, with room for a table half empty after it doubled.
const USED_TOKEN_BYTES: usize = 2 * (32 + 16 + 1);

/// A silent client is dropped after this long.
const TIMEOUT: Duration = Duration::from_secs(2);
/// Ticks a phase of a wave lasts (2 s).
const PHASE: u64 = 120;
/// Ticks without server ticks before a level is read.
const QUIET: u64 = 30;

/// The levels read after one wave.
#[derive(Debug, Clone, Copy, Default)]
pub struct Level {
    /// The wave (from 1).
    pub wave: u64,
    /// Process heap bytes (server, clients, links).
    pub heap: usize,
    /// The heap less the session bytes: the level compared.
    pub level: usize,
    /// Clients the server endpoint lists.
    pub server_clients: usize,
    /// Sessions the codec session holds.
    pub sessions: usize,
    /// The endpoint's own count of session bytes, all clients.
    pub session_bytes: usize,
    /// Connections of this wave: joined, left, timed out, rebound.
    pub joined: u64,
    /// Left politely.
    pub left: u64,
    /// Went silent.
    pub silenced: u64,
    /// Moved to a new address.
    pub rebound: u64,
}

/// What a soak run saw.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// The levels after each wave.
    pub levels: Vec<Level>,
    /// Virtual seconds run.
    pub seconds: f64,
    /// Wall-clock seconds it took.
    pub wall: f64,
    /// The lowest level of the first window after the warm-up.
    pub baseline: usize,
    /// Growth allowed over it: the tolerance and the connection layer's
    /// used-token table at its bound.
    pub allowance: usize,
}

/// Runs `a`; `heap` reads the process's heap bytes now. Fails if a
/// client ends a wave out of sync, a wave's clients are not all gone from
/// the server after the timeout, or a window's lowest level exceeds the
/// baseline by more than the tolerance.
pub fn run(a: &SoakConfig, heap: fn() -> usize) -> Result<SoakReport, Box<dyn Error>> {
    let started = std::time::Instant::now();
    let max = a.standing + 2 * a.wave;
    let setup = Setup::new(max, a.links.round_trip())?;
    let mut sim = Sim::new(setup, a.links, a.seed)?;
    let mut user = 0u64;
    for _ in 0..a.standing {
        sim.join(user, TIMEOUT)?;
        user += 1;
    }
    if !sim.settle(60 * 20)? {
        return Err("the standing clients did not all connect".into());
    }
    let mut report = SoakReport::default();
    let end = (a.seconds * 60.0) as u64;
    let mut wave = 0u64;
    let least = a.warmup + 2 * a.window.max(1);
    let mut baseline = None;
    // The used-token table's bound comes on top of the tolerance.
    let allowance = a.tolerance + usize::from(max) * USED_TOKENS_PER_SLOT * USED_TOKEN_BYTES;
    while report.levels.len() < least || sim.tick < end {
        wave += 1;
        let level = one_wave(&mut sim, a, &mut user, wave, heap)?;
        report.levels.push(level);
        println!(
            "wave {wave:>3} at {:>6.1} s: heap {:>9} B, less sessions {:>9} B; server clients {}, sessions {}, session bytes {}",
            sim.tick as f64 / 60.0,
            level.heap,
            level.level,
            level.server_clients,
            level.sessions,
            level.session_bytes
        );
        let standing = usize::from(a.standing);
        if level.server_clients != standing || level.sessions != standing {
            return Err(format!(
                "wave {wave}: the server holds {} clients and {} sessions, not the {standing} standing ones",
                level.server_clients, level.sessions
            )
            .into());
        }
        let done = report.levels.len();
        let window = a.window.max(1);
        if done < a.warmup + window || !(done - a.warmup).is_multiple_of(window) {
            continue;
        }
        let lowest = report
            .levels
            .iter()
            .skip(done - window)
            .map(|l| l.level)
            .min()
            .unwrap_or(0);
        let Some(base) = baseline else {
            baseline = Some(lowest);
            continue;
        };
        if lowest > base + allowance {
            return Err(format!(
                "wave {wave}: the lowest level of the last {window} waves, {lowest} B, is {} B over the \
                 baseline {base} B (allowed {allowance} B): a leak per connection",
                lowest - base
            )
            .into());
        }
    }
    report.baseline = baseline.unwrap_or(0);
    report.allowance = allowance;
    report.seconds = sim.tick as f64 / 60.0;
    report.wall = started.elapsed().as_secs_f64();
    Ok(report)
}

fn steps(sim: &mut Sim, n: u64) -> Result<(), Box<dyn Error>> {
    for _ in 0..n {
        sim.step()?;
    }
    Ok(())
}

/// One wave: join, settle, churn, wait for the server to let go, read
/// the levels.
fn one_wave(
    sim: &mut Sim,
    a: &SoakConfig,
    user: &mut u64,
    wave: u64,
    heap: fn() -> usize,
) -> Result<Level, Box<dyn Error>> {
    let mut level = Level {
        wave,
        ..Level::default()
    };
    let mut joined = Vec::new();
    for _ in 0..a.wave {
        joined.push(sim.join(*user, TIMEOUT)?);
        *user += 1;
        level.joined += 1;
    }
    if !sim.settle(60 * 10)? {
        return Err(format!("wave {wave}: the joining clients did not all connect").into());
    }
    steps(sim, PHASE)?;
    // A quarter leaves, a quarter goes silent, a quarter moves; a few
    // standing clients move too.
    for (k, &i) in joined.iter().enumerate() {
        match k % 4 {
            0 => {
                sim.leave(i);
                level.left += 1;
            }
            1 => {
                sim.silence(i);
                level.silenced += 1;
            }
            2 => {
                sim.rebind(i);
                level.rebound += 1;
            }
            _ => {}
        }
    }
    let standing: Vec<usize> = sim
        .present()
        .map(|(i, _)| i)
        .filter(|i| !joined.contains(i))
        .collect();
    for &i in standing.iter().skip(wave as usize % 4).step_by(8) {
        sim.rebind(i);
        level.rebound += 1;
    }
    steps(sim, PHASE)?;
    sim.check_sync()
        .map_err(|e| format!("wave {wave}, after the churn: {e}"))?;
    for (k, &i) in joined.iter().enumerate() {
        if k % 4 >= 2 {
            sim.leave(i);
            level.left += 1;
        }
    }
    // The silent ones time out; the others' goodbyes arrive.
    let gone = |sim: &Sim| sim.server.clients().count() == usize::from(a.standing);
    let mut waited = 0;
    while !gone(sim) && waited < 3 * PHASE {
        sim.step()?;
        waited += 1;
    }
    for &i in &joined {
        sim.remove(i);
    }
    steps(sim, PHASE / 2)?;
    sim.check_sync()
        .map_err(|e| format!("wave {wave}, at its end: {e}"))?;
    for _ in 0..QUIET {
        sim.quiet_step()?;
    }
    // The per-tick timings are the bench's, not the server's: kept, they
    // grow the heap 16 bytes a tick (a doubling of 256 kB by wave 60).
    sim.time.per_tick.clear();
    level.heap = heap();
    level.session_bytes = sim.session_memory().0;
    level.level = level.heap.saturating_sub(level.session_bytes);
    level.server_clients = sim.server.clients().count();
    level.sessions = sim.server.session().clients().count();
    Ok(level)
}
