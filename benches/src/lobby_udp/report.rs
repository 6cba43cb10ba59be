//! The lobby's verdict and numbers: codec sync (each client's applied
//! state against the server's) apart from presentation (the jitter buffer
//! and `Persist` world), and no amplification under attack.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tickpack::Snapshot;
use tickpack_session::{Persist, View};

use super::attack::Attacker;
use super::host::{Host, Peer, PeerStats};
use super::link::Link;
use super::player::{Player, PlayerStats};
use super::{FarCars, LobbyConfig};
use tickpack_scenarios::TICK_RATE;

/// Pass or fail, and why.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Clients whose newest applied state equals what the server sent for
    /// that sequence (and the world of that tick in the client's view).
    pub codec_in_sync: usize,
    /// Clients whose presented world shows every car at the record it had
    /// at the tick it was last updated (a car unseen for more than the
    /// linger time expires: under heavy loss this fails while codec sync
    /// holds).
    pub presented_ok: usize,
    /// Clients that never got their connect snapshot.
    pub never_connected: usize,
    /// Clients whose newest applied snapshot is more than a second older
    /// than the run's last tick (starved by the budget or the loss).
    pub behind: usize,
    /// Clients in the run.
    pub clients: usize,
    /// Packets a session client could not decode.
    pub undecodable: u64,
    /// Addresses that never proved they receive there but were sent more
    /// bytes than they sent the server.
    pub amplified: usize,
}

impl Verdict {
    /// Every client connected and in codec sync, nothing undecodable,
    /// nothing amplified. Presentation is reported, not judged.
    pub fn passed(&self) -> bool {
        self.codec_in_sync == self.clients && self.undecodable == 0 && self.amplified == 0
    }
}

/// One client's row.
#[derive(Debug, Clone, Copy)]
struct Row {
    id: u16,
    peer: Option<PeerStats>,
    player: PlayerStats,
    connect_ms: Option<f64>,
    in_sync: bool,
    presented: bool,
    /// Ticks between the run's last and the newest one the client applied.
    lag: Option<usize>,
    late: u64,
    gaps: u64,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Report {
    config: LobbyConfig,
    ticks: usize,
    wall: Duration,
    rows: Vec<Row>,
    /// The verdict.
    pub verdict: Verdict,
    full_snapshots: u64,
    server_rejected: u64,
    server_bad: u64,
    wire_bytes: u64,
    lost_down: (u64, u64),
    lost_up: (u64, u64),
    rebinds: u64,
    followed: u64,
    attack: Option<(u64, u64)>,
    amplified: Vec<String>,
    age_mean: f64,
    /// Mean time per tick in the session server encoding for every client.
    encode_us_per_tick: f64,
    /// Per quantised field, the largest difference between a client's
    /// applied state and the unquantised world (radians for rotations).
    max_abs_error: Vec<(String, f64)>,
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    config: &LobbyConfig,
    host: &Host,
    players: &[Player],
    down: &Link,
    attacker: Option<&Attacker>,
    worlds: &[Arc<Snapshot>],
    originals: Option<&[Snapshot]>,
    ticks: usize,
    rebinds: u64,
    wall: Duration,
) -> Report {
    let schema = host.session().schema().clone();
    let mut want = Snapshot::new(&schema);
    let mut exact = Snapshot::new(&schema);
    let mut ages = Vec::new();
    let mut rows = Vec::new();
    let mut max_err = Vec::new();
    for p in players {
        let mut lag = None;
        let peer = host.peers.get(&p.id);
        let latest = p.net.latest();
        let tick = latest.and_then(|(seq, _)| host.tick_of_seq.get(&seq).copied());
        // Each client's final applied state against the unquantised world
        // of its tick, car by car: the cars that snapshot sent (a held car
        // has an older tick's record).
        if let (Some((seq, snap)), Some(orig), Some(peer)) = (
            latest,
            tick.zip(originals).and_then(|(t, o)| o.get(t)),
            peer,
        ) {
            if let Some(view) = sent_view(peer, seq) {
                view.apply(snap, &mut exact);
                tickpack::quant::snapshot_errors(&schema, orig, &exact, &mut max_err);
            }
        }
        let (in_sync, presented) = match (latest, tick, p.unwrap, peer) {
            (Some((seq, snap)), Some(t), Some((useq, utick)), Some(peer)) => {
                let view = sent_view(peer, seq);
                // The world of that tick through the client's view; and
                // what the server's history says it sent, while it has it.
                // With held cars the sent ones are the world's and the
                // whole is what the server's history says (it must still
                // have it: the held records are only there).
                let in_sync = view.is_some_and(|view| {
                    view.apply(&worlds[t], &mut exact);
                    let recorded = host
                        .session()
                        .sent_state(peer.client.index(), seq, &mut want);
                    if view.has_held() {
                        recorded && want == *snap && sent_match(&exact, snap)
                    } else {
                        exact == *snap && (!recorded || want == *snap)
                    }
                });
                lag = Some(ticks.saturating_sub(t + 1));
                let offset = host
                    .tick_of_seq
                    .get(&useq)
                    .map_or(i64::MIN / 2, |&w| utick - w as i64);
                (
                    in_sync,
                    presented_ok(p.persist(), worlds, offset, &mut ages),
                )
            }
            _ => (false, false),
        };
        let js = p.net.jitter().stats();
        rows.push(Row {
            id: p.id,
            peer: peer.map(|p| p.stats),
            player: p.stats(),
            connect_ms: p.connected_at.map(|d| d.as_secs_f64() * 1e3),
            in_sync,
            presented,
            lag,
            late: js.late,
            gaps: js.gaps,
        });
    }
    let amplified = host.amplified();
    let verdict = Verdict {
        codec_in_sync: rows.iter().filter(|r| r.in_sync).count(),
        presented_ok: rows.iter().filter(|r| r.presented).count(),
        never_connected: rows.iter().filter(|r| r.connect_ms.is_none()).count(),
        behind: rows
            .iter()
            .filter(|r| r.lag.is_some_and(|l| l > TICK_RATE as usize))
            .count(),
        clients: rows.len(),
        undecodable: rows.iter().map(|r| r.player.undecodable).sum(),
        amplified: amplified.len(),
    };
    Report {
        config: *config,
        ticks,
        wall,
        verdict,
        full_snapshots: host.session().stats().full,
        server_rejected: host.rejected,
        server_bad: host.bad_messages,
        wire_bytes: down.offered_bytes,
        lost_down: (down.lost, down.offered),
        lost_up: (
            players.iter().map(|p| p.up.lost).sum(),
            players.iter().map(|p| p.up.offered).sum(),
        ),
        rebinds,
        followed: host.peers.get(&1).map_or(0, |p| p.stats.addr_changes),
        attack: attacker.map(|a| (a.datagrams, a.bytes)),
        amplified: amplified
            .iter()
            .map(|(a, t)| format!("{a}: sent {} for {}", t.sent, t.received))
            .collect(),
        age_mean: f64::from(ages.iter().sum::<u32>()) / ages.len().max(1) as f64,
        encode_us_per_tick: host.encode_time.as_secs_f64() * 1e6 / host.encode_ticks.max(1) as f64,
        max_abs_error: schema
            .sections()
            .iter()
            .zip(&max_err)
            .flat_map(|(ty, m)| {
                ty.fields()
                    .iter()
                    .zip(ty.quantization())
                    .zip(m)
                    .filter(|((_, q), _)| q.is_some())
                    .map(|((f, _), e)| (f.name.clone(), *e))
            })
            .collect(),
        rows,
    }
}

/// The view snapshot `seq` was sent to `peer` with, while kept.
fn sent_view(peer: &Peer, seq: u16) -> Option<View> {
    peer.views
        .iter()
        .find(|(s, _)| *s == seq)
        .map(|v| v.1.clone())
}

/// Every entity of `sent` (a world through a view's sent ids) is in `got`
/// with the same record.
fn sent_match(sent: &Snapshot, got: &Snapshot) -> bool {
    sent.sections().len() == got.sections().len()
        && sent
            .sections()
            .iter()
            .zip(got.sections())
            .all(|(a, b)| a.iter().all(|(id, rec)| b.get(id) == Some(rec)))
}

/// Every car of the presented world there, each with the record it had at
/// the tick `persist` says it was updated.
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

impl Report {
    fn sum(&self, f: impl Fn(&PeerStats) -> u64) -> u64 {
        self.rows
            .iter()
            .filter_map(|r| r.peer.as_ref())
            .map(f)
            .sum()
    }

    /// Session bytes per client per tick, with rate tiers and with
    /// `View::all()`.
    fn per_tick(&self) -> (f64, f64) {
        let t = self.sum(|p| p.ticks).max(1) as f64;
        (
            self.sum(|p| p.bytes) as f64 / t,
            self.sum(|p| p.all_bytes) as f64 / t,
        )
    }

    /// Over the clients that connected: how far the newest applied
    /// snapshot is behind the run's last tick, in ms.
    fn max_behind_ms(&self) -> f64 {
        let ticks = self.rows.iter().filter_map(|r| r.lag).max().unwrap_or(0);
        ticks as f64 * 1e3 / f64::from(TICK_RATE)
    }

    fn mbps(&self, per_tick: f64) -> f64 {
        per_tick * f64::from(self.config.clients) * f64::from(TICK_RATE) * 8.0 / 1e6
    }

    /// The numbers as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        let (b, all) = self.per_tick();
        let v = &self.verdict;
        serde_json::json!({
            "clients": self.config.clients,
            "ticks": self.ticks,
            "loss": self.config.loss,
            "latency_ms": self.config.latency.as_millis() as u64,
            "attack": self.config.attack,
            "trained_set": !self.config.untrained,
            "near_m": self.config.tiers.near,
            "far_m": self.config.tiers.far,
            "baseline_window": self.config.baseline_window,
            "far_cars": match self.config.far_cars {
                FarCars::Held => "held",
                FarCars::Omitted => "omitted",
            },
            "wall_seconds": self.wall.as_secs_f64(),
            "bytes_per_client_tick_mean": b,
            "view_all_bytes_per_client_tick_mean": all,
            "presented_age_mean_ticks": self.age_mean,
            "server_encode_us_per_tick": self.encode_us_per_tick,
            "upload_mbps": self.mbps(b),
            "budget_mbps": self.config.budget_mbps,
            "wire_upload_mbps": self.wire_bytes as f64 * 8.0 / 1e6 / (self.ticks as f64 / f64::from(TICK_RATE)).max(1e-9),
            "full_snapshots": self.full_snapshots,
            "resyncs": self.sum(|p| p.resyncs),
            "undecodable_packets": v.undecodable,
            "codec_in_sync_clients": v.codec_in_sync,
            "presented_ok_clients": v.presented_ok,
            "never_connected_clients": v.never_connected,
            "clients_behind_over_1s": v.behind,
            "max_behind_ms": self.max_behind_ms(),
            "out_of_sync_clients": v.clients - v.codec_in_sync,
            "server_rejected_datagrams": self.server_rejected,
            "client_rejected_datagrams": self.rows.iter().map(|r| r.player.rejected).sum::<u64>(),
            "attack_datagrams": self.attack.map_or(0, |a| a.0),
            "amplified_addresses": v.amplified,
            "nat_rebinds": self.rebinds,
            "nat_followed": self.followed,
            "quantized": !self.config.lossless,
            "max_abs_error": self
                .max_abs_error
                .iter()
                .map(|(k, e)| (k.clone(), serde_json::json!(e)))
                .collect::<serde_json::Map<_, _>>(),
            "passed": v.passed(),
        })
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        writeln!(
            f,
            "racing lobby over authenticated UDP 127.0.0.1: {} clients, {} ticks at {TICK_RATE} Hz \
             ({:.1} s wall), loss {:.1}%, latency {} ms ± 10%{}",
            c.clients,
            self.ticks,
            self.wall.as_secs_f64(),
            c.loss * 100.0,
            c.latency.as_millis(),
            if c.attack { ", under attack" } else { "" }
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "{:>6} {:>8} {:>8} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>5} {:>7}",
            "client",
            "B/tick",
            "all B/t",
            "conn ms",
            "behind",
            "resync",
            "late",
            "miss",
            "held",
            "rejected",
            "codec",
            "present"
        )?;
        for r in &self.rows {
            let Some(p) = r.peer else {
                writeln!(f, "{:>6} never connected", r.id)?;
                continue;
            };
            let t = p.ticks.max(1) as f64;
            let conn = r.connect_ms.map_or("-".to_owned(), |ms| format!("{ms:.0}"));
            let behind = r.lag.map_or("-".to_owned(), |l| {
                format!("{:.0}", l as f64 * 1e3 / f64::from(TICK_RATE))
            });
            let yes = |b: bool| if b { "ok" } else { "NO" };
            writeln!(
                f,
                "{:>6} {:>8.1} {:>8.1} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>5} {:>7}",
                r.id,
                p.bytes as f64 / t,
                p.all_bytes as f64 / t,
                conn,
                behind,
                p.resyncs,
                r.late,
                r.gaps,
                p.held_back,
                r.player.rejected,
                yes(r.in_sync),
                yes(r.presented),
            )?;
        }
        let (b, all) = self.per_tick();
        let v = &self.verdict;
        let row = |f: &mut fmt::Formatter<'_>, k: &str, v: String| writeln!(f, "  {k:<46} {v}");
        writeln!(f, "\ntotal")?;
        row(
            f,
            "sent bytes per client per tick (rate tiers)",
            format!("{b:.1} (View::all: {all:.1})"),
        )?;
        row(
            f,
            "upload, all clients, 60 Hz",
            format!(
                "{:.2} Mbit/s of the {} Mbit/s budget",
                self.mbps(b),
                c.budget_mbps
            ),
        )?;
        row(
            f,
            "server: session encode time per tick, all clients",
            format!("{:.0} µs", self.encode_us_per_tick),
        )?;
        row(
            f,
            "presented cars: mean age",
            format!("{:.2} ticks", self.age_mean),
        )?;
        row(
            f,
            "cars",
            match (c.lossless, c.untrained) {
                (true, _) => "full precision, shipped set racing-lobby/1 (--lossless)",
                (false, false) => {
                    "quantised (racing_schema_quantized), shipped set racing-lobby-quantized/1"
                }
                (false, true) => "quantised (racing_schema_quantized), no set (--untrained)",
            }
            .to_owned(),
        )?;
        row(
            f,
            "rate tiers",
            format!(
                "every tick within {} m, every 2nd within {} m, else every 4th; skipped cars {}",
                c.tiers.near,
                c.tiers.far,
                match c.far_cars {
                    FarCars::Omitted => "left out",
                    FarCars::Held => "held at the baseline's record (--hold-far)",
                },
            ),
        )?;
        if !self.max_abs_error.is_empty() {
            let errs: Vec<String> = self
                .max_abs_error
                .iter()
                .map(|(k, e)| format!("{k} {e:.6}"))
                .collect();
            row(
                f,
                "max abs error, clients' final states",
                errs.join(", ") + " (rotation: radians)",
            )?;
        }
        row(
            f,
            "full snapshots (connects + resyncs)",
            self.full_snapshots.to_string(),
        )?;
        let (g, y, h) = (
            self.sum(|p| p.green),
            self.sum(|p| p.yellow),
            self.sum(|p| p.held_back),
        );
        row(
            f,
            "token bucket: green / yellow / red (held back)",
            format!("{g} / {y} / {h}"),
        )?;
        row(
            f,
            "datagrams lost: down / up",
            format!(
                "{} of {} / {} of {}",
                self.lost_down.0, self.lost_down.1, self.lost_up.0, self.lost_up.1
            ),
        )?;
        row(
            f,
            "refused by the connection layer: server / clients",
            format!(
                "{} / {}",
                self.server_rejected,
                self.rows.iter().map(|r| r.player.rejected).sum::<u64>()
            ),
        )?;
        row(
            f,
            "bad authenticated payloads: server / clients",
            format!(
                "{} / {}",
                self.server_bad,
                self.rows
                    .iter()
                    .map(|r| r.player.transport_errors)
                    .sum::<u64>()
            ),
        )?;
        row(
            f,
            "NAT rebinds (client 1), server followed",
            format!("{} / {}", self.rebinds, self.followed),
        )?;
        if let Some((n, bytes)) = self.attack {
            row(
                f,
                "attack: forged datagrams / bytes",
                format!("{n} / {bytes}"),
            )?;
            row(
                f,
                "amplification (unverified addresses sent more)",
                format!("{} {:?}", v.amplified, self.amplified),
            )?;
        }
        row(f, "undecodable packets", v.undecodable.to_string())?;
        row(
            f,
            "clients more than 1 s behind / never connected",
            format!("{} / {}", v.behind, v.never_connected),
        )?;
        row(
            f,
            "furthest behind (newest applied vs last tick)",
            format!("{:.0} ms", self.max_behind_ms()),
        )?;
        row(
            f,
            "codec in sync (applied state = server's)",
            format!("{} of {}", v.codec_in_sync, v.clients),
        )?;
        row(
            f,
            "presentation complete (every car, right record)",
            format!("{} of {} (reported, not judged)", v.presented_ok, v.clients),
        )?;
        row(
            f,
            "verdict",
            if v.passed() {
                "PASS".to_owned()
            } else {
                "FAIL".to_owned()
            },
        )
    }
}
