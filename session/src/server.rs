//! The server side: per-client history and acks, shared encodes.
//!
//! Every sent snapshot keeps its [`Recall`] (the last records the client
//! saw of entities it does not hold), derived along the client's chain of
//! baselines exactly as the client derives it, so a spawned entity is
//! coded against what the client last knew of it.

use core::fmt;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::error::SessionError;
use super::handshake::Hello;
use super::message::ClientMessage;
use super::ring;
use super::view::View;
use super::DEFAULT_HISTORY;
use tickpack::Baseline;
use tickpack::Dictionary;
use tickpack::History;
use tickpack::KeyframeDictionary;
use tickpack::Limits;
use tickpack::Recall;
use tickpack::Schema;
use tickpack::Snapshot;
use tickpack::MAX_BASELINE_DISTANCE;
use tickpack::{Encoder, DEFAULT_LEVEL};
use tickpack_seq::{seq_distance, seq_newer};

/// The server encoder's code-form cache (quantised schemas): 512
/// snapshots, 32 MiB, allocated only as used. Packets without held
/// entities take their code forms from the worlds' and never touch it;
/// views with held entities keep every client's recent snapshots there (a
/// lobby of 63 clients a few ticks from their acks).
const SERVER_CODE_CACHE: (usize, usize) = (512, 32 << 20);

/// Default [`ServerConfig::baseline_window`].
pub const DEFAULT_BASELINE_WINDOW: u16 = 3;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Snapshots remembered per client (the ring size). Default 32.
    pub history: usize,
    /// zstd level.
    pub level: i32,
    /// Limits (give clients the same: they also cap every recall, which
    /// both ends must derive alike).
    pub limits: Limits,
    /// Send a one-byte checksum in every packet (2 bytes with the header's
    /// extension byte): a client whose baseline drifted notices within a
    /// few packets and asks for a full snapshot. Default on.
    pub checksum: bool,
    /// Compress with this dictionary.
    pub dictionary: Option<Dictionary>,
    /// Compress full snapshots with this one instead (a set's keyframe
    /// dictionary); `None`: full snapshots use `dictionary`.
    pub keyframe_dictionary: Option<Dictionary>,
    /// Sequence of the first tick (tests start near the wrap). Feature
    /// `test-knobs`; 0 without it.
    #[cfg(feature = "test-knobs")]
    pub first_sequence: u16,
    /// Give clients with the same baseline, view and recalled records of
    /// the entities the packet spawns the same bytes, encoded once per
    /// tick. A client whose chain started on another tick than the
    /// encode's still takes its bytes; its own recall is then derived from
    /// its own baseline recall, since recalls forget by the steps since
    /// their keyframes. Default on; off only to measure what it saves. Feature `test-knobs`; always on without it.
    #[cfg(feature = "test-knobs")]
    pub share_encodes: bool,
    /// How many ticks older than the newest acked snapshot a baseline may
    /// be when it holds more of the entities a packet sends. An entity sent
    /// at a reduced rate ([`RateTiers`](crate::RateTiers)) that is missing
    /// from the baseline is coded against its last record before it,
    /// without prediction: over a long round trip that costs more than an
    /// older baseline does. Default 3 (the longest gap the rate tiers
    /// leave); 0 always takes the newest acked snapshot. The client's ring
    /// must hold this many more ticks than the round trip, which
    /// [`history_for`](crate::history_for) leaves room for. An older
    /// baseline is a step in the client's chain of recalls: clients with
    /// the same filtered view whose chains began on different ticks can
    /// then recall different entities, and do not share the packets that
    /// spawn those.
    pub baseline_window: u16,
}

impl ServerConfig {
    /// [`ServerConfig::first_sequence`], or 0 without `test-knobs`.
    fn first_sequence(&self) -> u16 {
        #[cfg(feature = "test-knobs")]
        return self.first_sequence;
        #[cfg(not(feature = "test-knobs"))]
        0
    }

    /// [`ServerConfig::share_encodes`], or on without `test-knobs`.
    fn share_encodes(&self) -> bool {
        #[cfg(feature = "test-knobs")]
        return self.share_encodes;
        #[cfg(not(feature = "test-knobs"))]
        true
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            history: DEFAULT_HISTORY,
            level: DEFAULT_LEVEL,
            limits: Limits::default(),
            checksum: true,
            dictionary: None,
            keyframe_dictionary: None,
            #[cfg(feature = "test-knobs")]
            first_sequence: 0,
            #[cfg(feature = "test-knobs")]
            share_encodes: true,
            baseline_window: DEFAULT_BASELINE_WINDOW,
        }
    }
}

/// What an ack did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// The client's baseline moved forward to this sequence.
    Advanced(u16),
    /// Not newer than the baseline already acked: ignored.
    Stale,
    /// No snapshot with this sequence is in the client's ring (never sent,
    /// evicted, garbage, or sent before the client's latest request for a
    /// full snapshot): ignored.
    Unknown,
}

/// Server counters: packets, bytes, full snapshots and acks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Packets handed out by [`Server::send`].
    pub packets: u64,
    /// Of those, full snapshots (no baseline).
    pub full: u64,
    /// Actual encoder runs (the rest were shared).
    pub encodes: u64,
    /// Bytes handed out.
    pub bytes: u64,
}

#[derive(Debug, Clone)]
struct Sent {
    sequence: u16,
    world: Arc<Snapshot>,
    view: View,
    /// The held entities of `view` with the records the packet gave them
    /// (from its baseline); `None` when the view holds nothing.
    held: Option<Arc<Snapshot>>,
    /// `world` in code form (quantised schemas).
    codes: Option<Arc<Snapshot>>,
    /// The client's [`ClientSlot::epoch`] when this was sent.
    sent_in: u64,
    /// The client acked this snapshot, so it holds it (while the epoch it
    /// was sent in lasts).
    acked: bool,
    /// The recall of this snapshot (shared chunks with its baseline's).
    recall: Recall,
    /// The server's tick count when this was sent (sequences wrap).
    tick: u64,
    /// What this snapshot changed against its baseline (none for a full
    /// snapshot): the client's decoder keeps the same.
    history: Option<Arc<History>>,
}

impl Sent {
    /// This client's snapshot as sent, as a baseline: the shared world
    /// itself for a full view, else composed into `scratch`.
    fn materialize<'a>(&'a self, scratch: &'a mut Snapshot) -> Baseline<'a> {
        let snapshot: &Snapshot = if self.view.is_all() {
            &self.world
        } else {
            self.view
                .compose(&self.world, self.held.as_deref(), scratch, None);
            scratch
        };
        Baseline {
            sequence: self.sequence,
            snapshot,
        }
    }

    /// [`Sent::materialize`] in code form, when there is one and the
    /// view held nothing (held records are the baseline's values).
    fn materialize_codes<'a>(&'a self, scratch: &'a mut Snapshot) -> Option<Baseline<'a>> {
        let codes = self.codes.as_deref().filter(|_| self.held.is_none())?;
        let snapshot: &Snapshot = if self.view.is_all() {
            codes
        } else {
            self.view.compose(codes, None, scratch, None);
            scratch
        };
        Some(Baseline {
            sequence: self.sequence,
            snapshot,
        })
    }

    /// What decides the snapshot's content beyond the world of its tick.
    fn key(&self) -> SentKey {
        SentKey {
            sequence: self.sequence,
            world: self.world.clone(),
            view: self.view.clone(),
            held: self.held.clone(),
        }
    }
}

/// Identifies a sent snapshot's content: its sequence, its world (the
/// same sequence names another tick's world after the sequence wraps, for
/// a client not sent anything since), the view it was sent with and the
/// records its held entities got.
#[derive(Debug, Clone)]
struct SentKey {
    sequence: u16,
    world: Arc<Snapshot>,
    view: View,
    held: Option<Arc<Snapshot>>,
}

impl PartialEq for SentKey {
    fn eq(&self, other: &Self) -> bool {
        self.sequence == other.sequence
            && Arc::ptr_eq(&self.world, &other.world)
            && self.view == other.view
            && match (&self.held, &other.held) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
                _ => false,
            }
    }
}

#[derive(Debug)]
struct ClientSlot {
    /// Shared with `base` and with the references of a send, which take
    /// the baseline and prior without copying their views and recalls.
    ring: Vec<Option<Arc<Sent>>>,
    acked: Option<u16>,
    /// The snapshot `acked` names, kept apart from the ring: a resize, or
    /// a client whose acks stall for longer than the ring, does not lose
    /// the baseline (the next packet is still a delta).
    base: Option<Arc<Sent>>,
    want_full: bool,
    /// Raised by every request for a full snapshot. Only snapshots sent in
    /// the current epoch may be acked or used as a baseline or prior: a
    /// client that asks for a full snapshot may hold nothing sent before
    /// (it restarted, or dropped its state), and an ack it sent before
    /// asking may arrive after. A request forgets every ack in one step
    /// whatever the history.
    epoch: u64,
}

impl ClientSlot {
    /// The ring's snapshots and the acked baseline.
    fn entries(&self) -> impl Iterator<Item = &Sent> {
        self.ring
            .iter()
            .flatten()
            .chain(self.base.as_ref())
            .map(|s| &**s)
    }

    /// The acked snapshot, if sent in the current epoch and within the
    /// distance a packet on tick `ticks` can name.
    fn baseline(&self, ticks: u64) -> Option<&Arc<Sent>> {
        self.base
            .as_ref()
            .filter(|b| Some(b.sequence) == self.acked && b.sent_in == self.epoch)
            .filter(|b| {
                (1..=u64::from(MAX_BASELINE_DISTANCE)).contains(&ticks.saturating_sub(b.tick))
            })
    }

    /// The baseline for a packet that sends `view`: of the acked snapshots
    /// at most `window` ticks older than [`baseline`](Self::baseline), the
    /// one that holds the most of `view`'s entities, the newest of those.
    fn covering(&self, ticks: u64, view: &View, window: u16) -> Option<&Arc<Sent>> {
        let newest = self.baseline(ticks)?;
        let Some(best) = view.covered_by(&newest.view) else {
            return Some(newest);
        };
        // Nothing older can hold more.
        if Some(best) == view.sent_len() {
            return Some(newest);
        }
        let oldest = newest.tick.saturating_sub(u64::from(window));
        let mut pick = (best, newest);
        for s in self.ring.iter().flatten() {
            let usable = s.acked
                && s.sent_in == self.epoch
                && (oldest..newest.tick).contains(&s.tick)
                && ticks.saturating_sub(s.tick) <= u64::from(MAX_BASELINE_DISTANCE);
            if !usable {
                continue;
            }
            let n = view.covered_by(&s.view).unwrap_or(usize::MAX);
            if n > pick.0 || (n == pick.0 && s.tick > pick.1.tick) {
                pick = (n, s);
            }
        }
        Some(pick.1)
    }

    /// The prior for predicting `now` from baseline `b`: an acked snapshot
    /// older than `b` whose distance to `b` is closest to `now − b`. The
    /// prediction scales by the two distances (FORMAT.md 4.6), so any acked
    /// prior would do; this spacing codes the UDP lobby smallest (the
    /// closest prior extrapolates its quantisation steps over the whole
    /// round trip: docs/benchmarks.md, "Prediction").
    fn prior_for(&self, b: u16, now: u16) -> Option<&Arc<Sent>> {
        let want = i32::from(seq_distance(now, b));
        self.ring
            .iter()
            .flatten()
            .filter(|s| s.acked && s.sent_in == self.epoch && seq_newer(b, s.sequence))
            .filter(|s| {
                u32::from(seq_distance(now, s.sequence)) <= u32::from(MAX_BASELINE_DISTANCE)
            })
            .min_by_key(|s| {
                let d = i32::from(seq_distance(b, s.sequence));
                ((d - want).abs(), d)
            })
    }
}

/// An encode other clients may reuse: same baseline and prior (sequence,
/// view and held records), the same recalled records and recall ranks of
/// the entities it spawns, and the same view now.
#[derive(Debug)]
struct Shared {
    baseline: Option<SentKey>,
    prior: Option<SentKey>,
    /// The baseline's recall (`None` for a full snapshot).
    base_recall: Option<Recall>,
    /// The entities the packet spawns (section, id): the only ones whose
    /// recalled records its bytes depend on.
    spawned: Vec<(usize, u32)>,
    view: View,
    bytes: Arc<[u8]>,
    /// The held records this encode gave (the same for every sharer).
    held: Option<Arc<Snapshot>>,
    /// The recall of the snapshot sent (the same for every sharer).
    recall: Recall,
    /// The baseline's history (the encode's contexts depend on it), and
    /// the history of the snapshot sent.
    base_history: Option<Arc<History>>,
    history: Option<Arc<History>>,
}

impl Shared {
    /// Whether a client with this baseline, prior, baseline recall and view
    /// may take these bytes: the recalls may differ on entities the packet
    /// does not spawn (chains begun on other ticks, or that skipped steps
    /// through an older baseline, recall different entities).
    fn fits(
        &self,
        baseline: &Option<SentKey>,
        prior: &Option<SentKey>,
        base_recall: Option<&Recall>,
        base_history: Option<&Arc<History>>,
        view: &View,
    ) -> bool {
        self.baseline == *baseline
            && self.prior == *prior
            && self.view == *view
            && match (&self.base_history, base_history) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
                _ => false,
            }
            && match (&self.base_recall, base_recall) {
                (None, None) => true,
                // The packet sends recalled entities by their ranks.
                (Some(a), Some(b)) => self.spawned.iter().all(|&(i, id)| {
                    a.get(i, id) == b.get(i, id) && a.rank_of(i, id) == b.rank_of(i, id)
                }),
                _ => false,
            }
    }

    /// Whether a sharer whose baseline recall is `base_recall` gets this
    /// encode's recall too: not when its chain counts other steps (it
    /// began on another tick), as its recall forgets and evicts on other
    /// steps.
    fn same_recall(&self, base_recall: Option<&Recall>) -> bool {
        match (&self.base_recall, base_recall) {
            (Some(a), Some(b)) => a.same_as(b),
            _ => true,
        }
    }
}

/// The ids (section, id) of `cur` missing from `baseline`: the entities a
/// packet spawns, coded against their recalled records.
fn spawned_ids(baseline: &Snapshot, cur: &Snapshot) -> Vec<(usize, u32)> {
    let mut out = Vec::new();
    for (i, (b, c)) in baseline.sections().iter().zip(cur.sections()).enumerate() {
        let b = b.ids();
        let new = c.ids().iter().filter(|id| b.binary_search(id).is_err());
        out.extend(new.map(|&id| (i, id)));
    }
    out
}

/// The snapshot a client gets of `world` through `view`: `world` itself for
/// a full view, else composed into `cur`, held entities with their records
/// in `baseline` (also written to `held`).
fn client_snapshot<'a>(
    view: &View,
    world: &'a Snapshot,
    baseline: Option<&Snapshot>,
    cur: &'a mut Snapshot,
    held: &mut Snapshot,
) -> &'a Snapshot {
    if view.is_all() {
        world
    } else if view.has_held() {
        view.compose(world, baseline, cur, Some(held));
        cur
    } else {
        view.apply(world, cur);
        cur
    }
}

/// The server side of the protocol. See the [module docs](super).
pub struct Server {
    schema: Schema,
    encoder: Encoder,
    limits: Limits,
    hello: Hello,
    history: usize,
    share: bool,
    clients: HashMap<u16, ClientSlot>,
    sequence: u16,
    /// [`ServerConfig::baseline_window`].
    baseline_window: u16,
    /// Ticks begun (sequences wrap; this does not).
    ticks: u64,
    world: Option<Arc<Snapshot>>,
    /// The tick's world in code form (quantised schemas), made by the
    /// first send of the tick.
    world_codes: Option<Arc<Snapshot>>,
    shared: Vec<Shared>,
    cur_view: Snapshot,
    base_view: Snapshot,
    prior_view: Snapshot,
    held_view: Snapshot,
    /// The code forms of `cur_view`, `base_view` and `prior_view`.
    cur_codes: Snapshot,
    base_codes: Snapshot,
    prior_codes: Snapshot,
    predicts: bool,
    out: Vec<u8>,
    stats: ServerStats,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("sequence", &self.sequence)
            .field("clients", &self.clients.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl Server {
    /// A server for `schema`.
    pub fn new(schema: Schema, config: ServerConfig) -> Result<Self, SessionError> {
        if config.history == 0 || config.history > usize::from(MAX_BASELINE_DISTANCE) {
            return Err(SessionError::BadHistory {
                history: config.history,
            });
        }
        let mut encoder = Encoder::with_level(schema.clone(), config.level);
        encoder.set_limits(config.limits);
        // Each sent snapshot keeps what it changed, for the contexts of
        // packets coded against it, when the delta dictionary's table reads
        // them (the client keeps the same).
        encoder.set_keep_history(
            config
                .dictionary
                .as_ref()
                .is_some_and(Dictionary::uses_history),
        );
        encoder.set_checksum_len(if config.checksum { 1 } else { 0 });
        // One encoder serves every client (see SERVER_CODE_CACHE).
        encoder.set_code_cache(SERVER_CODE_CACHE.0, SERVER_CODE_CACHE.1);
        let hello = Hello {
            schema_id: schema.id(),
            dictionary: config.dictionary.as_ref().map(Dictionary::id),
            keyframe_dictionary: config
                .keyframe_dictionary
                .as_ref()
                .or(config.dictionary.as_ref())
                .map(Dictionary::id),
            limits: config.limits,
        };
        encoder
            .set_dictionary(config.dictionary.as_ref())
            .map_err(SessionError::Dictionary)?;
        encoder
            .set_keyframe_dictionary(match &config.keyframe_dictionary {
                Some(d) => KeyframeDictionary::Own(d),
                None => KeyframeDictionary::Delta,
            })
            .map_err(SessionError::Dictionary)?;
        Ok(Self {
            cur_view: Snapshot::new(&schema),
            base_view: Snapshot::new(&schema),
            prior_view: Snapshot::new(&schema),
            held_view: Snapshot::new(&schema),
            cur_codes: Snapshot::new(&schema),
            base_codes: Snapshot::new(&schema),
            prior_codes: Snapshot::new(&schema),
            world_codes: None,
            predicts: schema.predicts(),
            schema,
            encoder,
            limits: config.limits,
            hello,
            history: config.history,
            share: config.share_encodes(),
            baseline_window: config.baseline_window,
            clients: HashMap::new(),
            sequence: config.first_sequence().wrapping_sub(1),
            ticks: 0,
            world: None,
            shared: Vec::new(),
            out: Vec::new(),
            stats: ServerStats::default(),
        })
    }

    /// What this server encodes with: its schema, dictionaries and limits,
    /// sent to a client that connects (see [`Hello`]).
    pub fn hello(&self) -> Hello {
        self.hello
    }

    /// Connects client `id` if its answer to [`Server::hello`] agrees
    /// (schema, dictionaries and limits); else
    /// [`SessionError::HandshakeMismatch`] and nothing changes.
    pub fn accept(&mut self, id: u16, answer: &[u8]) -> Result<(), SessionError> {
        let theirs = Hello::parse(answer).map_err(SessionError::Handshake)?;
        if theirs != self.hello {
            return Err(SessionError::HandshakeMismatch {
                ours: self.hello,
                theirs,
            });
        }
        self.connect(id);
        Ok(())
    }

    /// Adds a client (or resets one that reconnects): its first packet is
    /// full. Without [`Server::accept`], nothing checks that the client has
    /// the same schema, dictionaries and limits until a packet fails.
    pub fn connect(&mut self, id: u16) {
        self.clients.insert(
            id,
            ClientSlot {
                ring: vec![None; self.history],
                acked: None,
                base: None,
                want_full: false,
                epoch: 0,
            },
        );
    }

    /// Resizes client `id`'s ring to `history` snapshots (as
    /// [`history_for`](crate::history_for) sizes it for the client's
    /// measured round trip), clamped to 1..=32,767: the snapshots sent in
    /// the last `history` ticks stay, and the acked baseline, kept apart
    /// from the ring, stays too. Returns the new size. The caller caps
    /// `history` from its configuration: every snapshot in the ring keeps
    /// its tick's world alive.
    pub fn set_history(&mut self, id: u16, history: usize) -> Result<usize, SessionError> {
        let now = self.sequence;
        let slot = self
            .clients
            .get_mut(&id)
            .ok_or(SessionError::UnknownClient { id })?;
        let len = history.clamp(1, usize::from(MAX_BASELINE_DISTANCE));
        ring::resize(&mut slot.ring, len, now, |s| s.sequence);
        Ok(slot.ring.len())
    }

    /// The size of client `id`'s ring.
    pub fn history(&self, id: u16) -> Option<usize> {
        self.clients.get(&id).map(|s| s.ring.len())
    }

    /// Forgets a client and its history.
    pub fn disconnect(&mut self, id: u16) -> bool {
        self.clients.remove(&id).is_some()
    }

    /// Connected client ids.
    pub fn clients(&self) -> impl Iterator<Item = u16> + '_ {
        self.clients.keys().copied()
    }

    /// Starts a tick with the whole world's state, shared by every client's
    /// history. Returns the tick's sequence.
    pub fn begin_tick(&mut self, world: Arc<Snapshot>) -> u16 {
        self.sequence = self.sequence.wrapping_add(1);
        self.ticks += 1;
        self.world = Some(world);
        self.world_codes = None;
        self.shared.clear();
        self.sequence
    }

    /// Sequence of the current tick.
    pub fn sequence(&self) -> u16 {
        self.sequence
    }

    /// The packet for client `id` this tick: a delta against the newest
    /// snapshot it acked that is still in its ring (and that snapshot's
    /// recall), else a full snapshot. Clients with the same baseline, view
    /// and recalled records of the entities spawned get the same bytes,
    /// encoded once.
    pub fn send(&mut self, id: u16, view: &View) -> Result<Arc<[u8]>, SessionError> {
        let world = self.world.clone().ok_or(SessionError::NoTick)?;
        let world_codes = self.world_codes(&world)?;
        let seq = self.sequence;
        let slot = self
            .clients
            .get_mut(&id)
            .ok_or(SessionError::UnknownClient { id })?;
        let (base, prior) = if slot.want_full {
            (None, None)
        } else {
            let base = slot
                .covering(self.ticks, view, self.baseline_window)
                .cloned();
            // A held entity keeps its baseline record, which is no change
            // under a prediction too (FORMAT.md 4.6: values only).
            let prior = match (&base, self.predicts) {
                (Some(b), true) => slot.prior_for(b.sequence, seq).cloned(),
                _ => None,
            };
            (base, prior)
        };
        // The baseline's content depends on the view it was sent with and
        // its held records, not only its sequence: the key holds all three.
        let key = base.as_deref().map(Sent::key);
        let prior_key = prior.as_deref().map(Sent::key);
        let base_recall = base.as_ref().map(|b| &b.recall);
        let base_history = base.as_ref().and_then(|b| b.history.clone());
        let shared = self
            .shared
            .iter()
            .find(|s| {
                self.share && s.fits(&key, &prior_key, base_recall, base_history.as_ref(), view)
            })
            .map(|s| {
                let same = s.same_recall(base_recall);
                let bytes = (s.bytes.clone(), s.history.clone());
                (bytes, s.held.clone(), s.recall.clone(), same)
            });
        let ((bytes, history), held, recall) = match (shared, &base, base_recall) {
            (Some((bytes, held, recall, true)), _, _) => (bytes, held, recall),
            (Some((bytes, held, _, false)), Some(b), Some(r)) => {
                // The same bytes (the baseline recalls hold the same
                // records of the spawned entities), and this client's own
                // recall after them: its baseline recall advanced over the
                // same baseline and snapshot as the encode's.
                let baseline = b.materialize(&mut self.base_view);
                let cur = client_snapshot(
                    view,
                    &world,
                    Some(baseline.snapshot),
                    &mut self.cur_view,
                    &mut self.held_view,
                );
                let recall = r.advance(baseline, cur, seq, &self.limits);
                (bytes, held, recall)
            }
            // Without a baseline recall the encode's recall is the same.
            (Some((bytes, held, recall, false)), _, _) => (bytes, held, recall),
            (None, _, _) => {
                let baseline = base.as_ref().map(|b| b.materialize(&mut self.base_view));
                // Quantised, nothing held now or in the references: the
                // code forms come from the worlds' (converted once per
                // tick), not from converting this client's snapshots.
                let coded = world_codes.as_deref().filter(|_| {
                    !view.has_held()
                        && base.as_ref().is_none_or(|b| b.held.is_none())
                        && prior.as_ref().is_none_or(|p| p.held.is_none())
                });
                let cur = client_snapshot(
                    view,
                    &world,
                    baseline.as_ref().map(|b| b.snapshot),
                    &mut self.cur_view,
                    &mut self.held_view,
                );
                let held = view.has_held().then(|| Arc::new(self.held_view.clone()));
                let spawned = baseline.map_or_else(Vec::new, |b| spawned_ids(b.snapshot, cur));
                if let Some(world_codes) = coded {
                    let cur_codes: &Snapshot = if view.is_all() {
                        world_codes
                    } else {
                        view.apply(world_codes, &mut self.cur_codes);
                        &self.cur_codes
                    };
                    let base_codes = base
                        .as_ref()
                        .and_then(|b| b.materialize_codes(&mut self.base_codes));
                    let prior_codes = prior
                        .as_ref()
                        .and_then(|p| p.materialize_codes(&mut self.prior_codes));
                    let reference = tickpack::Reference::from(base_codes)
                        .with_prior(base_codes.and(prior_codes))
                        .with_recall(base_codes.and(base_recall))
                        .with_history(base_codes.and(base_history.as_deref()));
                    self.encoder
                        .encode_coded_to_vec(cur, cur_codes, seq, reference, &mut self.out)
                        .map_err(SessionError::Encode)?;
                } else {
                    let prior_base = prior.as_ref().map(|p| p.materialize(&mut self.prior_view));
                    let reference = tickpack::Reference::from(baseline)
                        .with_prior(baseline.and(prior_base))
                        .with_recall(baseline.and(base_recall))
                        .with_history(baseline.and(base_history.as_deref()));
                    self.encoder
                        .encode_to_vec(cur, seq, reference, &mut self.out)
                        .map_err(SessionError::Encode)?;
                }
                self.stats.encodes += 1;
                let history = self.encoder.history().cloned().map(Arc::new);
                // What the client will recall once it applies this packet.
                let recall = match (baseline, base_recall) {
                    (Some(b), Some(r)) => r.advance(b, cur, seq, &self.limits),
                    _ => Recall::keyframe(seq),
                };
                let bytes: Arc<[u8]> = Arc::from(&self.out[..]);
                self.shared.push(Shared {
                    baseline: key,
                    prior: prior_key,
                    base_recall: base_recall.cloned(),
                    spawned,
                    view: view.clone(),
                    bytes: bytes.clone(),
                    held: held.clone(),
                    recall: recall.clone(),
                    base_history,
                    history: history.clone(),
                });
                ((bytes, history), held, recall)
            }
        };
        if let Some(slot) = self.clients.get_mut(&id) {
            slot.want_full = false;
            let n = slot.ring.len();
            slot.ring[usize::from(seq) % n] = Some(Arc::new(Sent {
                sequence: seq,
                world,
                view: view.clone(),
                held,
                codes: world_codes,
                sent_in: slot.epoch,
                acked: false,
                recall,
                tick: self.ticks,
                history,
            }));
        }
        self.stats.packets += 1;
        self.stats.full += u64::from(base.is_none());
        self.stats.bytes += bytes.len() as u64;
        Ok(bytes)
    }

    /// The tick's world in code form, converted by the first call of the
    /// tick (`None` without quantisation).
    fn world_codes(&mut self, world: &Snapshot) -> Result<Option<Arc<Snapshot>>, SessionError> {
        if !self.schema.is_quantized() {
            return Ok(None);
        }
        if self.world_codes.is_none() {
            let mut codes = Snapshot::default();
            tickpack::quant::snapshot_to_codes(&self.schema, world, &mut codes)
                .map_err(|e| SessionError::Encode(tickpack::EncodeError::Snapshot(e)))?;
            self.world_codes = Some(Arc::new(codes));
        }
        Ok(self.world_codes.clone())
    }

    /// Takes an ack from client `id`. Acks may be late, duplicated, out of
    /// order, for sequences never sent, or garbage: the baseline only ever
    /// moves forward, and only to a snapshot this client was sent.
    pub fn ack(&mut self, id: u16, sequence: u16) -> Result<AckOutcome, SessionError> {
        let now = self.sequence;
        let slot = self
            .clients
            .get_mut(&id)
            .ok_or(SessionError::UnknownClient { id })?;
        let n = slot.ring.len();
        let entry = slot.ring[usize::from(sequence) % n].as_mut().filter(|s| {
            s.sequence == sequence && s.sent_in == slot.epoch && !seq_newer(sequence, now)
        });
        let Some(entry) = entry else {
            return Ok(AckOutcome::Unknown);
        };
        if !entry.acked {
            Arc::make_mut(entry).acked = true;
        }
        match slot.acked {
            // An ack further back than a packet can name is no baseline,
            // and 16-bit sequences that far apart do not order: any ack
            // of a snapshot in the ring replaces it.
            Some(a) if !seq_newer(sequence, a) && seq_distance(now, a) <= MAX_BASELINE_DISTANCE => {
                Ok(AckOutcome::Stale)
            }
            _ => {
                slot.base = Some(entry.clone());
                slot.acked = Some(sequence);
                Ok(AckOutcome::Advanced(sequence))
            }
        }
    }

    /// The next packet to client `id` will be a full snapshot.
    pub fn request_full(&mut self, id: u16) -> Result<(), SessionError> {
        let slot = self
            .clients
            .get_mut(&id)
            .ok_or(SessionError::UnknownClient { id })?;
        slot.want_full = true;
        slot.acked = None;
        slot.base = None;
        slot.epoch += 1;
        Ok(())
    }

    /// Handles a message that arrived on client `id`'s connection (one
    /// the transport authenticated: the message itself names no client,
    /// so no peer can ack for another or make it resynchronise): its
    /// request for a full snapshot, else its ack. Returns what the ack did.
    pub fn handle_message(
        &mut self,
        id: u16,
        bytes: &[u8],
    ) -> Result<Option<AckOutcome>, SessionError> {
        let m = ClientMessage::parse(bytes).map_err(SessionError::Message)?;
        self.apply_message(id, &m)
    }

    /// A message's request for a full snapshot, else its ack, for client
    /// `id`.
    fn apply_message(
        &mut self,
        id: u16,
        m: &ClientMessage,
    ) -> Result<Option<AckOutcome>, SessionError> {
        if m.request_full {
            self.request_full(id)?;
        }
        let outcome = match m.ack {
            Some(a) if !m.request_full => Some(self.ack(id, a)?),
            _ => None,
        };
        if !self.clients.contains_key(&id) {
            return Err(SessionError::UnknownClient { id });
        }
        Ok(outcome)
    }

    /// Writes into `out` the snapshot client `id` holds once it applies the
    /// packet sent to it as `sequence` (its view of that tick's world, held
    /// entities at the records the packet gave them). `false` if that
    /// packet has left the client's ring or was never sent.
    pub fn sent_state(&self, id: u16, sequence: u16, out: &mut Snapshot) -> bool {
        let Some(sent) = self.clients.get(&id).and_then(|slot| {
            slot.ring[usize::from(sequence) % slot.ring.len()]
                .as_ref()
                .filter(|s| s.sequence == sequence)
                .or(slot.base.as_ref().filter(|s| s.sequence == sequence))
        }) else {
            return false;
        };
        sent.view
            .compose(&sent.world, sent.held.as_deref(), out, None);
        true
    }

    /// The sequence client `id` has acked, if any.
    pub fn acked(&self, id: u16) -> Option<u16> {
        self.clients.get(&id).and_then(|s| s.acked)
    }

    /// Counters since creation.
    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    /// Bytes the server holds for client `id` itself: its ring, the views,
    /// the histories and the recalls in it (chunks shared between its entries counted
    /// once), not counting the world snapshots every client shares.
    pub fn client_memory(&self, id: u16) -> Option<usize> {
        let slot = self.clients.get(&id)?;
        // Each distinct entry once (the baseline is usually also in the
        // ring), with its reference counts.
        let mut sents: Vec<*const Sent> = slot
            .ring
            .iter()
            .flatten()
            .chain(slot.base.as_ref())
            .map(Arc::as_ptr)
            .collect();
        sents.sort_unstable();
        sents.dedup();
        let ring = slot.ring.capacity() * core::mem::size_of::<Option<Arc<Sent>>>()
            + sents.len() * (core::mem::size_of::<Sent>() + 2 * core::mem::size_of::<usize>());
        let mut views: Vec<&View> = slot.entries().map(|s| &s.view).collect();
        views.dedup();
        let mut held: Vec<&Arc<Snapshot>> =
            slot.entries().filter_map(|s| s.held.as_ref()).collect();
        held.dedup_by(|a, b| Arc::ptr_eq(a, b));
        let mut histories: Vec<&Arc<History>> =
            slot.entries().filter_map(|s| s.history.as_ref()).collect();
        histories.dedup_by(|a, b| Arc::ptr_eq(a, b));
        let mut chunks = HashSet::new();
        let recalls: usize = slot
            .entries()
            .map(|s| s.recall.heap_bytes(&mut chunks))
            .sum();
        Some(
            recalls
                + core::mem::size_of::<ClientSlot>()
                + ring
                + views.iter().map(|v| v.heap_bytes()).sum::<usize>()
                + held
                    .iter()
                    .map(|h| h.raw_len() + h.entity_count() * 4)
                    .sum::<usize>()
                + histories.iter().map(|h| h.heap_bytes()).sum::<usize>(),
        )
    }

    /// Bytes of world snapshots currently referenced by any client's ring
    /// (each counted once).
    pub fn shared_memory(&self) -> usize {
        let mut seen: HashSet<*const Snapshot> = HashSet::new();
        let mut total = 0;
        for s in self.clients.values().flat_map(ClientSlot::entries) {
            if seen.insert(Arc::as_ptr(&s.world)) {
                total += s.world.raw_len() + s.world.entity_count() * 4;
            }
        }
        total
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }
}
