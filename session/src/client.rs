//! The client side: accepted history, typed drop reasons, the ack to send.

use core::fmt;

use super::error::SessionError;
use super::handshake::Hello;
use super::message::ClientMessage;
use super::ring;
use super::DEFAULT_HISTORY;
use tickpack::Baseline;
use tickpack::DecodeError;
use tickpack::Decoder;
use tickpack::Dictionary;
use tickpack::History;
use tickpack::Limits;
use tickpack::PacketHeader;
use tickpack::Recall;
use tickpack::Schema;
use tickpack::Snapshot;
use tickpack_seq::{seq_distance, seq_newer};

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Snapshots kept (at least the server's ring size). Default 32.
    pub history: usize,
    /// Furthest a packet's sequence may be ahead of the newest applied one;
    /// packets further ahead are dropped as [`DropReason::TooFarAhead`], so
    /// that one spoofed packet cannot make every real one look stale.
    /// Default [`DEFAULT_MAX_JUMP`]. A longer outage recovers through
    /// `resync_after`.
    pub max_jump: u16,
    /// After this many packets in a row are dropped (stale, too far ahead,
    /// unknown baseline or undecodable), the client asks for a full
    /// snapshot and applies the next one whatever its sequence, forgetting
    /// its history, unless a packet is applied before it. Default
    /// [`DEFAULT_RESYNC_AFTER`].
    pub resync_after: u32,
    /// Limits (the server's: they also cap every recall, which both ends
    /// must derive alike).
    pub limits: Limits,
    /// Dictionaries packets may name.
    pub dictionaries: Vec<Dictionary>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            history: DEFAULT_HISTORY,
            max_jump: DEFAULT_MAX_JUMP,
            resync_after: DEFAULT_RESYNC_AFTER,
            limits: Limits::default(),
            dictionaries: Vec::new(),
        }
    }
}

/// Default [`ClientConfig::max_jump`]: 1,024 ticks, 17 s at 60 Hz.
pub const DEFAULT_MAX_JUMP: u16 = 1024;
/// Default [`ClientConfig::resync_after`].
pub const DEFAULT_RESYNC_AFTER: u32 = 16;

/// Why a packet was not applied. None of these changes the client's state,
/// except that a checksum mismatch, or [`ClientConfig::resync_after`] drops
/// in a row, ask the server for a full snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// Not newer than the newest snapshot already applied (late or duplicate).
    Stale {
        /// The packet's sequence.
        sequence: u16,
        /// The newest applied.
        newest: u16,
    },
    /// Further ahead of the newest applied snapshot than
    /// [`ClientConfig::max_jump`].
    TooFarAhead {
        /// The packet's sequence.
        sequence: u16,
        /// The newest applied.
        newest: u16,
        /// The configured bound.
        max_jump: u16,
    },
    /// Coded against a baseline the client never had or has evicted.
    UnknownBaseline {
        /// The packet's sequence.
        sequence: u16,
        /// The baseline it names.
        baseline: u16,
    },
    /// Malformed, or decoded to a state whose checksum disagrees.
    Undecodable(DecodeError),
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stale { sequence, newest } => {
                write!(f, "packet {sequence} is not newer than {newest}")
            }
            Self::TooFarAhead {
                sequence,
                newest,
                max_jump,
            } => write!(
                f,
                "packet {sequence} is more than {max_jump} ahead of {newest}"
            ),
            Self::UnknownBaseline { sequence, baseline } => {
                write!(
                    f,
                    "packet {sequence} needs baseline {baseline}, which is not held"
                )
            }
            Self::Undecodable(e) => write!(f, "undecodable: {e}"),
        }
    }
}

/// What [`Client::receive`] did with a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// Decoded and applied; it is now the newest snapshot.
    Applied {
        /// Its sequence.
        sequence: u16,
        /// The baseline it was coded against (`None`: a full snapshot).
        baseline: Option<u16>,
    },
    /// Not applied, with the reason.
    Dropped(DropReason),
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Packets applied.
    pub applied: u64,
    /// Of those, full snapshots.
    pub full: u64,
    /// Dropped as stale (late or duplicate).
    pub stale: u64,
    /// Dropped as too far ahead.
    pub too_far_ahead: u64,
    /// Times [`ClientConfig::resync_after`] drops in a row started a resync.
    pub resyncs: u64,
    /// Dropped for a missing baseline.
    pub unknown_baseline: u64,
    /// Dropped as undecodable (malformed or checksum mismatch).
    pub undecodable: u64,
}

/// The client side of the protocol. See the [module docs](super).
pub struct Client {
    decoder: Decoder,
    /// Applied snapshots with their recalls and histories.
    ring: Vec<Option<Entry>>,
    /// The baseline the newest applied packet named, moved here when its
    /// ring slot is taken (the server keeps naming it until an ack of a
    /// newer snapshot arrives, which can be longer than the ring when the
    /// connect took long or acks were lost).
    pinned: Option<Entry>,
    /// The baseline the newest applied packet named.
    last_baseline: Option<u16>,
    limits: Limits,
    newest: Option<u16>,
    want_full: bool,
    max_jump: u16,
    resync_after: u32,
    dropped_in_a_row: u32,
    resyncing: bool,
    scratch: Snapshot,
    stats: ClientStats,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("newest", &self.newest)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Client {
    /// A client for `schema`.
    pub fn new(schema: Schema, config: ClientConfig) -> Result<Self, SessionError> {
        if config.history == 0 || config.history > 0x7fff {
            return Err(SessionError::BadHistory {
                history: config.history,
            });
        }
        let mut decoder = Decoder::new(schema);
        decoder.set_limits(config.limits);
        // Each applied snapshot keeps what it changed, for the contexts of
        // packets coded against it, when a dictionary's table reads them
        // (the server keeps the same).
        decoder.set_keep_history(config.dictionaries.iter().any(Dictionary::uses_history));
        for d in &config.dictionaries {
            decoder
                .add_dictionary(d)
                .map_err(SessionError::Dictionary)?;
        }
        Ok(Self {
            decoder,
            ring: vec![None; config.history],
            pinned: None,
            last_baseline: None,
            limits: config.limits,
            newest: None,
            want_full: false,
            max_jump: config.max_jump,
            resync_after: config.resync_after.max(1),
            dropped_in_a_row: 0,
            resyncing: false,
            scratch: Snapshot::default(),
            stats: ClientStats::default(),
        })
    }

    /// Answers the server's [`Hello`]: checks that its schema and limits
    /// are this client's ([`SessionError::HandshakeMismatch`]) and that
    /// this client holds its dictionaries
    /// ([`SessionError::MissingDictionary`]), agrees to decode deltas and
    /// keyframes with them, and returns the answer for
    /// [`Server::accept`](super::Server::accept).
    pub fn answer(&mut self, server_hello: &[u8]) -> Result<Vec<u8>, SessionError> {
        let theirs = Hello::parse(server_hello).map_err(SessionError::Handshake)?;
        let ours = Hello {
            schema_id: self.decoder.schema().id(),
            limits: self.limits,
            ..theirs
        };
        if theirs != ours {
            return Err(SessionError::HandshakeMismatch { ours, theirs });
        }
        self.decoder
            .agree(theirs.dictionary, theirs.keyframe_dictionary)
            .map_err(|e| match e {
                DecodeError::UnknownDictionary { id } => SessionError::MissingDictionary { id },
                e => SessionError::Handshake(e),
            })?;
        Ok(theirs.to_bytes())
    }

    /// Takes one packet from the server.
    pub fn receive(&mut self, packet: &[u8]) -> Received {
        let r = self.try_receive(packet);
        match &r {
            Received::Applied { baseline, .. } => {
                self.stats.applied += 1;
                self.stats.full += u64::from(baseline.is_none());
                self.dropped_in_a_row = 0;
                // In sync again: a resync no longer applies a full snapshot
                // whatever its sequence (a late or replayed one would rewind).
                self.resyncing = false;
            }
            Received::Dropped(_) => {
                self.dropped_in_a_row = self.dropped_in_a_row.saturating_add(1);
                if self.dropped_in_a_row >= self.resync_after && !self.resyncing {
                    self.resyncing = true;
                    self.want_full = true;
                    self.stats.resyncs += 1;
                }
            }
        }
        match &r {
            Received::Applied { .. } => {}
            Received::Dropped(DropReason::Stale { .. }) => self.stats.stale += 1,
            Received::Dropped(DropReason::TooFarAhead { .. }) => self.stats.too_far_ahead += 1,
            Received::Dropped(DropReason::UnknownBaseline { .. }) => {
                self.stats.unknown_baseline += 1
            }
            Received::Dropped(DropReason::Undecodable(e)) => {
                self.stats.undecodable += 1;
                if matches!(e, DecodeError::ChecksumMismatch { .. }) {
                    self.want_full = true;
                }
            }
        }
        r
    }

    fn try_receive(&mut self, packet: &[u8]) -> Received {
        let drop = |r| Received::Dropped(r);
        let header = match PacketHeader::parse(packet) {
            Ok((h, _)) => h,
            Err(e) => return drop(DropReason::Undecodable(e)),
        };
        let sequence = header.sequence;
        // While resyncing, a full snapshot is applied whatever its sequence.
        let resync = self.resyncing && header.baseline.is_none();
        if let (Some(newest), false) = (self.newest, resync) {
            if !seq_newer(sequence, newest) {
                return drop(DropReason::Stale { sequence, newest });
            }
            if seq_distance(sequence, newest) > self.max_jump {
                return drop(DropReason::TooFarAhead {
                    sequence,
                    newest,
                    max_jump: self.max_jump,
                });
            }
        }
        let n = self.ring.len();
        let (base, recall, history) = match header.baseline {
            None => (None, None, None),
            Some(b) => match entry(&self.ring, &self.pinned, b) {
                Some((s, snap, recall, history)) if *s == b => (
                    Some(Baseline {
                        sequence: b,
                        snapshot: snap,
                    }),
                    Some(recall),
                    history.as_ref(),
                ),
                _ => {
                    return drop(DropReason::UnknownBaseline {
                        sequence,
                        baseline: b,
                    })
                }
            },
        };
        let prior = match header.prior {
            None => None,
            Some(p) => match entry(&self.ring, &self.pinned, p) {
                Some((s, snap, _, _)) if *s == p => Some(Baseline {
                    sequence: p,
                    snapshot: snap,
                }),
                _ => {
                    return drop(DropReason::UnknownBaseline {
                        sequence,
                        baseline: p,
                    })
                }
            },
        };
        if let Err(e) = self.decoder.decode_into(
            packet,
            tickpack::Reference::from(base)
                .with_prior(prior)
                .with_recall(recall)
                .with_history(history),
            &mut self.scratch,
        ) {
            return drop(DropReason::Undecodable(e));
        }
        let history = self.decoder.history().cloned();
        // What this snapshot recalls: the server derives the same.
        let recall = match (base, recall) {
            (Some(b), Some(r)) => r.advance(b, &self.scratch, sequence, &self.limits),
            _ => Recall::keyframe(sequence),
        };
        if resync {
            self.ring.iter_mut().for_each(|s| *s = None);
            self.pinned = None;
            self.resyncing = false;
        }
        let slot = &mut self.ring[usize::from(sequence) % n];
        if header.baseline.is_some() && slot.as_ref().map(|e| e.0) == header.baseline {
            // The baseline in use would be overwritten: keep it apart.
            self.pinned = slot.take();
        }
        self.last_baseline = header.baseline;
        match slot {
            Some((s, snap, r, h)) => {
                *s = sequence;
                core::mem::swap(snap, &mut self.scratch);
                *r = recall;
                *h = history;
            }
            None => {
                *slot = Some((
                    sequence,
                    core::mem::take(&mut self.scratch),
                    recall,
                    history,
                ))
            }
        }
        self.newest = Some(sequence);
        if header.baseline.is_none() {
            self.want_full = false;
        }
        Received::Applied {
            sequence,
            baseline: header.baseline,
        }
    }

    /// The sequence to ack: the newest applied.
    pub fn ack(&self) -> Option<u16> {
        self.newest
    }

    /// The newest applied snapshot.
    pub fn latest(&self) -> Option<(u16, &Snapshot)> {
        let n = self.newest?;
        self.get(n).map(|s| (n, s))
    }

    /// An applied snapshot still in the history.
    pub fn get(&self, sequence: u16) -> Option<&Snapshot> {
        entry(&self.ring, &self.pinned, sequence).map(|e| &e.1)
    }

    /// Resizes the history to `history` snapshots (clamped to 1..=32,767):
    /// the ones applied in the last `history` ticks before the newest stay.
    /// Returns the new size. It should stay at least the server's ring
    /// for this client, or packets name baselines no longer held.
    pub fn set_history(&mut self, history: usize) -> usize {
        let len = history.clamp(1, 0x7fff);
        if let (Some(newest), Some(b)) = (self.newest, self.last_baseline) {
            // The baseline in use stays, even if older than the new size.
            let n = self.ring.len();
            let slot = &mut self.ring[usize::from(b) % n];
            if usize::from(newest.wrapping_sub(b)) >= len && slot.as_ref().is_some_and(|e| e.0 == b)
            {
                self.pinned = slot.take();
            }
        }
        if let Some(newest) = self.newest {
            ring::resize(&mut self.ring, len, newest, |e| e.0);
        } else {
            self.ring = vec![None; len];
        }
        self.ring.len()
    }

    /// The history's size.
    pub fn history(&self) -> usize {
        self.ring.len()
    }

    /// Ask for a full snapshot in the next message (after a long outage).
    pub fn request_full(&mut self) {
        self.want_full = true;
    }

    /// The message to send the server now.
    pub fn message(&self) -> ClientMessage {
        ClientMessage {
            ack: self.newest,
            request_full: self.want_full,
        }
    }

    /// Counters since creation.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }
}

/// An applied snapshot's entry: in the history, or the pinned baseline;
/// with its recall and what it changed against its baseline.
type Entry = (u16, Snapshot, Recall, Option<History>);

/// The entry for `sequence` in `ring`, else `pinned` if it is that one.
fn entry<'a>(
    ring: &'a [Option<Entry>],
    pinned: &'a Option<Entry>,
    sequence: u16,
) -> Option<&'a Entry> {
    ring.get(usize::from(sequence) % ring.len().max(1))
        .and_then(Option::as_ref)
        .filter(|e| e.0 == sequence)
        .or(pinned.as_ref().filter(|e| e.0 == sequence))
}
