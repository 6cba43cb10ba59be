//! The sending side of a chunk transfer: one chunk in flight, a queue in
//! front, unacked slices resent within a bandwidth budget.

use std::collections::VecDeque;
use std::time::Duration;

use tickpack_seq::seq_newer;

use super::wire::{parse_ack, SliceSet};
use super::{
    ChunkConfig, ChunkError, ResendDelay, MAX_CHUNK_SIZE, MAX_SLICES_PER_CHUNK, SLICE_HEADER_LEN,
    SLICE_PACKET, SLICE_SIZE,
};
use crate::bucket::TokenBucket;

/// Counters a [`ChunkSender`] keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Chunks fully acked.
    pub chunks_sent: u64,
    /// Slice packets handed out.
    pub slices_sent: u64,
    /// Of those, sends of a slice already sent before.
    pub slices_resent: u64,
    /// Bytes charged to the budget (payload plus overhead).
    pub bytes_sent: u64,
}

#[derive(Debug)]
struct Outgoing {
    /// Random id of this transfer, in every slice; acks must repeat it.
    transfer: u64,
    data: Vec<u8>,
    num_slices: usize,
    acked: SliceSet,
    num_acked: usize,
    current: usize,
    last_sent: [Option<Duration>; MAX_SLICES_PER_CHUNK],
    /// Slices still to send in the initial burst, then the end of the pause.
    burst_next: usize,
    burst_pause_until: Option<Duration>,
}

/// Sends chunks, one in flight at a time, resending unacked slices within
/// a bandwidth budget; see the [module docs](crate::chunk).
#[derive(Debug)]
pub struct ChunkSender {
    config: ChunkConfig,
    chunk_id: u16,
    current: Option<Outgoing>,
    queue: VecDeque<Vec<u8>>,
    /// Budget in bytes × 10^9 (bandwidth × nanoseconds), exact.
    budget: u128,
    last: Option<Duration>,
    rtt: Option<Duration>,
    stats: SenderStats,
}

impl ChunkSender {
    /// An idle sender whose first chunk gets id 0.
    pub fn new(config: ChunkConfig) -> Self {
        Self {
            config,
            chunk_id: 0,
            current: None,
            queue: VecDeque::new(),
            budget: 0,
            last: None,
            rtt: None,
            stats: SenderStats::default(),
        }
    }

    /// Queues `chunk` (1 to [`MAX_CHUNK_SIZE`] bytes).
    pub fn send(&mut self, chunk: Vec<u8>) -> Result<(), ChunkError> {
        if chunk.is_empty() {
            return Err(ChunkError::EmptyChunk);
        }
        if chunk.len() > MAX_CHUNK_SIZE {
            return Err(ChunkError::ChunkTooLarge {
                size: chunk.len(),
                limit: MAX_CHUNK_SIZE,
            });
        }
        if self.queue.len() >= self.config.max_queued {
            return Err(ChunkError::QueueFull {
                limit: self.config.max_queued,
            });
        }
        self.queue.push_back(chunk);
        Ok(())
    }

    /// Sets the RTT estimate used by [`ResendDelay::Rtt`].
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = Some(rtt);
    }

    /// Whether a chunk is in flight.
    pub fn is_sending(&self) -> bool {
        self.current.is_some()
    }

    /// Whether nothing is in flight or queued.
    pub fn is_idle(&self) -> bool {
        self.current.is_none() && self.queue.is_empty()
    }

    /// Id of the chunk in flight, or of the next one to send.
    pub fn chunk_id(&self) -> u16 {
        self.chunk_id
    }

    /// Chunks waiting behind the one in flight.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    fn resend_delay(&self) -> Duration {
        match self.config.resend {
            ResendDelay::Fixed(d) => d,
            ResendDelay::Rtt { fallback } => self.rtt.map_or(fallback, |r| r.saturating_mul(5) / 4),
        }
    }

    /// Takes in an ack packet. Acks for an older chunk are ignored, acks
    /// naming another transfer refused; a slice
    /// is acked the first time any ack marks it (so acks may arrive out of
    /// order). When every slice is acked the chunk is done and the next
    /// queued one starts on the next [`poll_transmit`](Self::poll_transmit).
    pub fn handle_ack(&mut self, packet: &[u8]) -> Result<(), ChunkError> {
        let ack = parse_ack(packet)?;
        if seq_newer(self.chunk_id, ack.chunk_id) {
            return Ok(());
        }
        let Some(cur) = self
            .current
            .as_mut()
            .filter(|_| ack.chunk_id == self.chunk_id)
        else {
            return Err(ChunkError::UnexpectedChunk {
                chunk_id: ack.chunk_id,
                expected: self.chunk_id,
            });
        };
        if ack.transfer != cur.transfer {
            return Err(ChunkError::OtherTransfer {
                chunk_id: ack.chunk_id,
            });
        }
        if ack.num_slices != cur.num_slices {
            return Err(ChunkError::NumSlicesMismatch {
                chunk_id: ack.chunk_id,
                expected: cur.num_slices,
                actual: ack.num_slices,
            });
        }
        // A bit for a slice never sent is ignored: the receiver cannot have
        // it, so the ack is forged or belongs to another transfer.
        for i in 0..cur.num_slices {
            let sent = cur.last_sent.get(i).is_some_and(Option::is_some);
            if sent && ack.set.contains(i) && cur.acked.insert(i) {
                cur.num_acked += 1;
            }
        }
        if cur.num_acked == cur.num_slices {
            self.current = None;
            self.chunk_id = self.chunk_id.wrapping_add(1);
            self.stats.chunks_sent += 1;
            self.budget = 0;
        }
        Ok(())
    }

    /// The next slice packet to send at `now`, if the budget allows one.
    /// Call until it returns `None`, then again on the next update.
    pub fn poll_transmit(&mut self, now: Duration) -> Option<Vec<u8>> {
        self.poll(now, None)
    }

    /// [`poll_transmit`](Self::poll_transmit), with every slice (burst
    /// included) also paid from `bucket`'s committed tokens, packet
    /// overhead included: the client's byte budget paces the chunk, which
    /// gets what the snapshots leave and never borrows from the excess
    /// burst. The sender's own `bandwidth` still caps it; set it high to
    /// let the bucket alone decide.
    pub fn poll_transmit_paced(
        &mut self,
        now: Duration,
        bucket: &mut TokenBucket,
    ) -> Option<Vec<u8>> {
        self.poll(now, Some(bucket))
    }

    fn poll(&mut self, now: Duration, mut bucket: Option<&mut TokenBucket>) -> Option<Vec<u8>> {
        // Accumulate budget from bandwidth × dt.
        let dt = self.last.map_or(Duration::ZERO, |l| now.saturating_sub(l));
        if self.last.is_none_or(|l| now > l) {
            self.last = Some(now);
        }
        if self.current.is_none() {
            let data = self.queue.pop_front()?;
            let num_slices = data.len().div_ceil(SLICE_SIZE).max(1);
            self.current = Some(Outgoing {
                transfer: super::random_transfer(),
                data,
                num_slices,
                acked: SliceSet::default(),
                num_acked: 0,
                current: 0,
                last_sent: [None; MAX_SLICES_PER_CHUNK],
                burst_next: if self.config.initial_burst {
                    0
                } else {
                    num_slices
                },
                burst_pause_until: None,
            });
            self.budget = 0;
        } else {
            let cap = u128::from(self.config.bandwidth)
                .saturating_mul(self.config.max_budget_time.as_nanos());
            let add = u128::from(self.config.bandwidth).saturating_mul(dt.as_nanos());
            self.budget = self.budget.saturating_add(add).min(cap.max(self.budget));
        }
        let delay = self.resend_delay();
        let overhead = self.config.packet_overhead;
        let chunk_id = self.chunk_id;
        let cur = self.current.as_mut()?;
        // Initial burst: every slice once, then a pause.
        if cur.burst_next < cur.num_slices {
            let i = cur.burst_next;
            let cost = slice_packet_len(cur.data.len(), cur.num_slices, i) + overhead;
            if let Some(b) = bucket.as_deref_mut() {
                if !b.try_consume_committed(cost as u64, now) {
                    return None;
                }
            }
            cur.burst_next += 1;
            if cur.burst_next == cur.num_slices {
                cur.burst_pause_until = Some(now.saturating_add(self.config.burst_pause));
            }
            return Some(self.emit(chunk_id, i, now, overhead));
        }
        if cur.burst_pause_until.is_some_and(|t| now < t) {
            return None;
        }
        for _ in 0..cur.num_slices {
            let i = cur.current;
            let eligible = !cur.acked.contains(i)
                && cur
                    .last_sent
                    .get(i)
                    .copied()
                    .flatten()
                    .is_none_or(|t| now.saturating_sub(t) >= delay);
            if eligible {
                let bytes = slice_packet_len(cur.data.len(), cur.num_slices, i) + overhead;
                let cost = bytes as u128 * 1_000_000_000;
                if self.budget < cost {
                    return None;
                }
                if let Some(b) = bucket.as_deref_mut() {
                    if !b.try_consume_committed(bytes as u64, now) {
                        return None;
                    }
                }
                self.budget -= cost;
                cur.current = (i + 1) % cur.num_slices;
                return Some(self.emit(chunk_id, i, now, overhead));
            }
            cur.current = (i + 1) % cur.num_slices;
        }
        None
    }

    fn emit(&mut self, chunk_id: u16, i: usize, now: Duration, overhead: usize) -> Vec<u8> {
        let Some(cur) = self.current.as_mut() else {
            return Vec::new();
        };
        let start = i * SLICE_SIZE;
        let end = (start + SLICE_SIZE).min(cur.data.len());
        let data = cur.data.get(start..end).unwrap_or_default();
        let mut p = Vec::with_capacity(SLICE_HEADER_LEN + 2 + data.len());
        p.push(SLICE_PACKET);
        p.extend_from_slice(&chunk_id.to_le_bytes());
        p.extend_from_slice(&cur.transfer.to_le_bytes());
        p.push(u8::try_from(i).unwrap_or(u8::MAX));
        p.push(u8::try_from(cur.num_slices - 1).unwrap_or(u8::MAX));
        if i + 1 == cur.num_slices {
            let size = u16::try_from(data.len().saturating_sub(1)).unwrap_or(u16::MAX);
            p.extend_from_slice(&size.to_le_bytes());
        }
        p.extend_from_slice(data);
        if let Some(slot) = cur.last_sent.get_mut(i) {
            if slot.is_some() {
                self.stats.slices_resent += 1;
            }
            *slot = Some(now);
        }
        self.stats.slices_sent += 1;
        self.stats.bytes_sent += (p.len() + overhead) as u64;
        p
    }
}

fn slice_packet_len(chunk_len: usize, num_slices: usize, i: usize) -> usize {
    if i + 1 == num_slices {
        SLICE_HEADER_LEN + 2 + (chunk_len - i * SLICE_SIZE)
    } else {
        SLICE_HEADER_LEN + SLICE_SIZE
    }
}
