//! Chunk/slice reliable transfer (seed 000, Glenn Fiedler's "Sending Large
//! Blocks of Data"): a chunk of up to [`MAX_CHUNK_SIZE`] bytes is cut into
//! up to [`MAX_SLICES_PER_CHUNK`] slices of [`SLICE_SIZE`] bytes, which are
//! resent until the receiver acks them all. One chunk is in flight at a
//! time, with a send queue in front; the receiver holds one finished chunk
//! until it is read.
//!
//! Use it for large, infrequent, must-arrive data (the full state at
//! connect, a dictionary set for a client that lacks it), not for
//! snapshots: those go through [`fragment`](super::fragment).
//!
//! Sans-IO: the [`ChunkSender`] takes acks with
//! [`handle_ack`](ChunkSender::handle_ack) and hands out slice packets from
//! [`poll_transmit`](ChunkSender::poll_transmit); the [`ChunkReceiver`]
//! takes slices with [`handle_slice`](ChunkReceiver::handle_slice), hands
//! out acks from [`poll_transmit`](ChunkReceiver::poll_transmit) and chunks
//! from [`poll_chunk`](ChunkReceiver::poll_chunk). Time is a [`Duration`]
//! since any fixed origin.
//!
//! # Wire format
//!
//! Slice packet, all integers little-endian:
//!
//! | bytes | field            | meaning                                  |
//! |-------|------------------|------------------------------------------|
//! | 0     | type             | [`SLICE_PACKET`]                          |
//! | 1..3  | `chunk_id`       | wrapping `u16`                           |
//! | 3     | `slice_id`       | `0..num_slices`                          |
//! | 4     | `num_slices - 1` | `num_slices` in `1..=256`                |
//! | 5..7  | `slice_bytes - 1`| last slice only, `slice_bytes` in `1..=1024` |
//! | rest  | data             | exactly `SLICE_SIZE` bytes but in the last slice |
//!
//! Ack packet: type [`ACK_PACKET`], `chunk_id` (2 bytes), `num_slices - 1`
//! (1 byte), then `ceil(num_slices / 8)` bytes of bitfield, slice `i` in bit
//! `i % 8` of byte `i / 8`; bits past `num_slices` must be zero.

#![forbid(unsafe_code)]

use core::fmt;
use std::collections::VecDeque;
use std::time::Duration;

use super::bucket::TokenBucket;

/// Bytes per slice (all but the last slice of a chunk are this size).
pub const SLICE_SIZE: usize = 1024;
/// Most slices per chunk.
pub const MAX_SLICES_PER_CHUNK: usize = 256;
/// Largest chunk: `SLICE_SIZE * MAX_SLICES_PER_CHUNK` (256 KiB).
pub const MAX_CHUNK_SIZE: usize = SLICE_SIZE * MAX_SLICES_PER_CHUNK;
/// Type byte of a slice packet.
pub const SLICE_PACKET: u8 = 0x51;
/// Type byte of an ack packet.
pub const ACK_PACKET: u8 = 0xac;
/// Header bytes of a slice packet (two more on the last slice).
pub const SLICE_HEADER_LEN: usize = 5;
/// Largest slice packet: header, size field and a full slice (1031 bytes,
/// under a 1200-byte MTU).
pub const MAX_SLICE_PACKET: usize = SLICE_HEADER_LEN + 2 + SLICE_SIZE;
/// Largest ack packet.
pub const MAX_ACK_PACKET: usize = 4 + MAX_SLICES_PER_CHUNK / 8;

/// Settings of a [`ChunkSender`] (the receiver needs only a size limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkConfig {
    /// Target bandwidth in bytes per second; default 32 000 (256 kbps).
    pub bandwidth: u64,
    /// Bytes charged per packet on top of its payload (UDP/IP and the
    /// caller's own framing); default 28.
    pub packet_overhead: usize,
    /// How long a slice waits for its ack before it is resent.
    pub resend: ResendDelay,
    /// Send every slice once at the start of a chunk regardless of the
    /// budget, then pause for `burst_pause` (seed 000's "initial burst");
    /// default off.
    pub initial_burst: bool,
    /// Pause after the initial burst; default 100 ms.
    pub burst_pause: Duration,
    /// Unused budget is capped at this much time of bandwidth, so an idle
    /// sender does not save up a burst; default 250 ms.
    pub max_budget_time: Duration,
    /// Most chunks waiting behind the one in flight; default 8.
    pub max_queued: usize,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        Self {
            bandwidth: 32_000,
            packet_overhead: 28,
            resend: ResendDelay::Fixed(Duration::from_millis(100)),
            initial_burst: false,
            burst_pause: Duration::from_millis(100),
            max_budget_time: Duration::from_millis(250),
            max_queued: 8,
        }
    }
}

/// The minimum time between two sends of the same slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResendDelay {
    /// A fixed delay (the seed's 100 ms).
    Fixed(Duration),
    /// 1.25 × the RTT given with [`ChunkSender::set_rtt`]; the fallback
    /// until an RTT is known.
    Rtt {
        /// Delay used before any RTT estimate.
        fallback: Duration,
    },
}

/// An error from the chunk system. Hostile or corrupt packets give one of
/// these, never a panic.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChunkError {
    /// A chunk to send is empty.
    EmptyChunk,
    /// A chunk is larger than the limit.
    ChunkTooLarge {
        /// Chunk size (for a received chunk, the least size its slice count
        /// implies).
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The send queue is full.
    QueueFull {
        /// [`ChunkConfig::max_queued`].
        limit: usize,
    },
    /// A packet is shorter than its header or bitfield.
    Truncated {
        /// Packet length.
        len: usize,
        /// Length needed.
        needed: usize,
    },
    /// The first byte is not the expected packet type.
    WrongType {
        /// The byte found.
        found: u8,
    },
    /// `slice_id` is not below `num_slices`.
    SliceOutOfRange {
        /// Slice id.
        slice_id: usize,
        /// Slice count.
        num_slices: usize,
    },
    /// A slice's data length is wrong (a non-last slice not `SLICE_SIZE`, a
    /// last slice not its announced size).
    SliceSize {
        /// Slice id.
        slice_id: usize,
        /// Length required.
        expected: usize,
        /// Length found.
        actual: usize,
    },
    /// A slice or ack names a slice count that disagrees with the chunk.
    NumSlicesMismatch {
        /// Chunk id.
        chunk_id: u16,
        /// Slice count of the chunk.
        expected: usize,
        /// Slice count in the packet.
        actual: usize,
    },
    /// A packet names a chunk ahead of the one this end is at.
    UnexpectedChunk {
        /// Chunk id in the packet.
        chunk_id: u16,
        /// Chunk id this end is at.
        expected: u16,
    },
    /// Trailing bytes after an ack bitfield, or bits set past `num_slices`.
    AckPadding {
        /// Chunk id.
        chunk_id: u16,
    },
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyChunk => write!(f, "chunk is empty"),
            Self::ChunkTooLarge { size, limit } => {
                write!(f, "chunk of {size} bytes exceeds {limit}")
            }
            Self::QueueFull { limit } => write!(f, "chunk send queue is full ({limit} chunks)"),
            Self::Truncated { len, needed } => {
                write!(f, "chunk packet of {len} bytes, needs {needed}")
            }
            Self::WrongType { found } => write!(f, "unexpected chunk packet type {found:#04x}"),
            Self::SliceOutOfRange {
                slice_id,
                num_slices,
            } => write!(f, "slice {slice_id} is not below slice count {num_slices}"),
            Self::SliceSize {
                slice_id,
                expected,
                actual,
            } => write!(
                f,
                "slice {slice_id} has {actual} bytes, expected {expected}"
            ),
            Self::NumSlicesMismatch {
                chunk_id,
                expected,
                actual,
            } => write!(
                f,
                "chunk {chunk_id} has {expected} slices, packet says {actual}"
            ),
            Self::UnexpectedChunk { chunk_id, expected } => {
                write!(f, "packet for chunk {chunk_id}, expected chunk {expected}")
            }
            Self::AckPadding { chunk_id } => {
                write!(
                    f,
                    "ack for chunk {chunk_id} has bits or bytes past its slices"
                )
            }
        }
    }
}

impl std::error::Error for ChunkError {}

/// A 256-bit set of slice ids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SliceSet([u64; 4]);

impl SliceSet {
    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
    fn insert(&mut self, i: usize) -> bool {
        match self.0.get_mut(i / 64) {
            Some(w) if *w >> (i % 64) & 1 == 0 => {
                *w |= 1 << (i % 64);
                true
            }
            _ => false,
        }
    }
    fn full(n: usize) -> Self {
        let mut s = Self::default();
        for i in 0..n.min(MAX_SLICES_PER_CHUNK) {
            s.insert(i);
        }
        s
    }
}

fn write_ack(chunk_id: u16, num_slices: usize, set: &SliceSet) -> Vec<u8> {
    let bytes = num_slices.div_ceil(8);
    let mut out = Vec::with_capacity(4 + bytes);
    out.push(ACK_PACKET);
    out.extend_from_slice(&chunk_id.to_le_bytes());
    out.push(u8::try_from(num_slices.saturating_sub(1)).unwrap_or(u8::MAX));
    for b in 0..bytes {
        let mut v = 0u8;
        for bit in 0..8 {
            if set.contains(b * 8 + bit) {
                v |= 1 << bit;
            }
        }
        out.push(v);
    }
    out
}

/// A parsed ack packet.
struct Ack {
    chunk_id: u16,
    num_slices: usize,
    set: SliceSet,
}

fn parse_ack(p: &[u8]) -> Result<Ack, ChunkError> {
    let Some(&[ty, c0, c1, n]) = p.first_chunk::<4>() else {
        return Err(ChunkError::Truncated {
            len: p.len(),
            needed: 4,
        });
    };
    if ty != ACK_PACKET {
        return Err(ChunkError::WrongType { found: ty });
    }
    let chunk_id = u16::from_le_bytes([c0, c1]);
    let num_slices = usize::from(n) + 1;
    let bits = p.get(4..).unwrap_or_default();
    let needed = num_slices.div_ceil(8);
    if bits.len() < needed {
        return Err(ChunkError::Truncated {
            len: p.len(),
            needed: 4 + needed,
        });
    }
    if bits.len() > needed {
        return Err(ChunkError::AckPadding { chunk_id });
    }
    let mut set = SliceSet::default();
    for (b, &v) in bits.iter().enumerate() {
        for bit in 0..8 {
            if v >> bit & 1 == 1 {
                let i = b * 8 + bit;
                if i >= num_slices {
                    return Err(ChunkError::AckPadding { chunk_id });
                }
                set.insert(i);
            }
        }
    }
    Ok(Ack {
        chunk_id,
        num_slices,
        set,
    })
}

/// A parsed slice packet.
struct Slice<'a> {
    chunk_id: u16,
    slice_id: usize,
    num_slices: usize,
    data: &'a [u8],
}

fn parse_slice(p: &[u8]) -> Result<Slice<'_>, ChunkError> {
    let Some((&[ty, c0, c1, s, n], rest)) = p.split_first_chunk::<SLICE_HEADER_LEN>() else {
        return Err(ChunkError::Truncated {
            len: p.len(),
            needed: SLICE_HEADER_LEN,
        });
    };
    if ty != SLICE_PACKET {
        return Err(ChunkError::WrongType { found: ty });
    }
    let chunk_id = u16::from_le_bytes([c0, c1]);
    let slice_id = usize::from(s);
    let num_slices = usize::from(n) + 1;
    if slice_id >= num_slices {
        return Err(ChunkError::SliceOutOfRange {
            slice_id,
            num_slices,
        });
    }
    let (expected, data) = if slice_id + 1 == num_slices {
        let Some((&[b0, b1], data)) = rest.split_first_chunk::<2>() else {
            return Err(ChunkError::Truncated {
                len: p.len(),
                needed: SLICE_HEADER_LEN + 2,
            });
        };
        let size = usize::from(u16::from_le_bytes([b0, b1])) + 1;
        if size > SLICE_SIZE {
            return Err(ChunkError::SliceSize {
                slice_id,
                expected: SLICE_SIZE,
                actual: size,
            });
        }
        (size, data)
    } else {
        (SLICE_SIZE, rest)
    };
    if data.len() != expected {
        return Err(ChunkError::SliceSize {
            slice_id,
            expected,
            actual: data.len(),
        });
    }
    Ok(Slice {
        chunk_id,
        slice_id,
        num_slices,
        data,
    })
}

fn is_older(a: u16, b: u16) -> bool {
    a != b && b.wrapping_sub(a) < 0x8000
}

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
/// a bandwidth budget; see the [module docs](self).
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

    /// Takes in an ack packet. Acks for an older chunk are ignored; a slice
    /// is acked the first time any ack marks it (so acks may arrive out of
    /// order). When every slice is acked the chunk is done and the next
    /// queued one starts on the next [`poll_transmit`](Self::poll_transmit).
    pub fn handle_ack(&mut self, packet: &[u8]) -> Result<(), ChunkError> {
        let ack = parse_ack(packet)?;
        if is_older(ack.chunk_id, self.chunk_id) {
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

#[derive(Debug)]
struct Incoming {
    num_slices: usize,
    received: SliceSet,
    num_received: usize,
    /// `num_slices * SLICE_SIZE` bytes, allocated at the first slice.
    data: Vec<u8>,
    last_len: Option<usize>,
}

/// How long a transfer may go without a new slice before the receiver
/// gives it up (see [`ChunkReceiver::handle_timeout`]).
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(2);

/// Receives chunks slice by slice and acks them; see the
/// [module docs](self).
///
/// It never stays stuck on a transfer it cannot finish (a forged first
/// slice announcing another slice count, or a chunk the sender gave up):
/// once no new slice has arrived for the stall timeout, the next slice
/// that conflicts with the transfer, or names another chunk, starts over.
#[derive(Debug)]
pub struct ChunkReceiver {
    max_chunk_size: usize,
    stall_timeout: Duration,
    /// The newest time seen by [`handle_timeout`](Self::handle_timeout).
    clock: Duration,
    /// When the receiver last made progress (a new slice, a chunk read).
    progress_at: Duration,
    /// Transfers given up for stalling.
    resets: u64,
    chunk_id: u16,
    current: Option<Incoming>,
    ready: Option<Vec<u8>>,
    /// The previous chunk's id and slice count, acked in full if its slices
    /// are still arriving (the sender missed the final ack).
    previous: Option<(u16, usize)>,
    ack_pending: bool,
    prev_ack_pending: bool,
}

impl ChunkReceiver {
    /// A receiver expecting chunk 0 and accepting chunks up to
    /// `max_chunk_size` bytes (at most [`MAX_CHUNK_SIZE`]).
    pub fn new(max_chunk_size: usize) -> Self {
        Self {
            max_chunk_size: max_chunk_size.min(MAX_CHUNK_SIZE),
            stall_timeout: DEFAULT_STALL_TIMEOUT,
            clock: Duration::ZERO,
            progress_at: Duration::ZERO,
            resets: 0,
            chunk_id: 0,
            current: None,
            ready: None,
            previous: None,
            ack_pending: false,
            prev_ack_pending: false,
        }
    }

    /// Sets the stall timeout (default [`DEFAULT_STALL_TIMEOUT`]); give
    /// it a few resend delays of the sender.
    pub fn with_stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall_timeout = timeout;
        self
    }

    /// Id of the chunk being received (or next expected).
    pub fn chunk_id(&self) -> u16 {
        self.chunk_id
    }

    /// Transfers given up because they stalled.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// Advances the receiver's clock (a [`Duration`] since any fixed
    /// origin) and gives up a transfer that got no new slice for the stall
    /// timeout. Call it every update.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.clock = self.clock.max(now);
        if self.stalled() && self.current.take().is_some() {
            self.resets += 1;
        }
    }

    fn stalled(&self) -> bool {
        self.clock.saturating_sub(self.progress_at) >= self.stall_timeout
    }

    /// Whether a slice of the current chunk has arrived and the chunk is not
    /// complete.
    pub fn is_receiving(&self) -> bool {
        self.current.is_some()
    }

    /// Whether a complete chunk waits for [`poll_chunk`](Self::poll_chunk).
    pub fn is_ready_to_read(&self) -> bool {
        self.ready.is_some()
    }

    /// Takes in a slice packet. Slices of older chunks are ignored (but a
    /// slice of the previous chunk makes the next ack re-ack it in full);
    /// slices arriving while a chunk waits to be read are ignored and
    /// re-acked.
    pub fn handle_slice(&mut self, packet: &[u8]) -> Result<(), ChunkError> {
        let s = parse_slice(packet)?;
        if let Some((prev, n)) = self.previous {
            if s.chunk_id == prev {
                if s.num_slices != n {
                    return Err(ChunkError::NumSlicesMismatch {
                        chunk_id: s.chunk_id,
                        expected: n,
                        actual: s.num_slices,
                    });
                }
                self.prev_ack_pending = true;
                return Ok(());
            }
        }
        if s.chunk_id != self.chunk_id {
            // Another chunk: after a stall it starts over (the sender moved
            // on, or the expected id was a forged slice's); before, older
            // ones are late resends and newer ones an error.
            if self.ready.is_none() && self.stalled() {
                self.restart(s.chunk_id);
            } else if is_older(s.chunk_id, self.chunk_id) {
                return Ok(());
            } else {
                return Err(ChunkError::UnexpectedChunk {
                    chunk_id: s.chunk_id,
                    expected: self.chunk_id,
                });
            }
        }
        if self.ready.is_some() {
            self.ack_pending = true;
            return Ok(());
        }
        let least = (s.num_slices - 1) * SLICE_SIZE + 1;
        if least > self.max_chunk_size {
            return Err(ChunkError::ChunkTooLarge {
                size: least,
                limit: self.max_chunk_size,
            });
        }
        if let Some(cur) = &self.current {
            if cur.num_slices != s.num_slices {
                if !self.stalled() {
                    return Err(ChunkError::NumSlicesMismatch {
                        chunk_id: s.chunk_id,
                        expected: cur.num_slices,
                        actual: s.num_slices,
                    });
                }
                // The transfer stalled: this slice starts it over.
                self.current = None;
                self.resets += 1;
            }
        }
        let clock = self.clock;
        let cur = match &mut self.current {
            Some(cur) => cur,
            None => self.current.insert(Incoming {
                num_slices: s.num_slices,
                received: SliceSet::default(),
                num_received: 0,
                data: vec![0; s.num_slices * SLICE_SIZE],
                last_len: None,
            }),
        };
        let last_len = if s.slice_id + 1 == s.num_slices {
            let total = s.slice_id * SLICE_SIZE + s.data.len();
            if total > self.max_chunk_size {
                return Err(ChunkError::ChunkTooLarge {
                    size: total,
                    limit: self.max_chunk_size,
                });
            }
            Some(s.data.len())
        } else {
            None
        };
        self.ack_pending = true;
        if !cur.received.insert(s.slice_id) {
            return Ok(());
        }
        let start = s.slice_id * SLICE_SIZE;
        if let Some(dst) = cur.data.get_mut(start..start + s.data.len()) {
            dst.copy_from_slice(s.data);
        }
        if last_len.is_some() {
            cur.last_len = last_len;
        }
        cur.num_received += 1;
        self.progress_at = clock;
        if cur.num_received == cur.num_slices {
            if let Some(mut done) = self.current.take() {
                let len = (done.num_slices - 1) * SLICE_SIZE + done.last_len.unwrap_or(SLICE_SIZE);
                done.data.truncate(len);
                self.ready = Some(done.data);
                self.previous = None;
            }
        }
        Ok(())
    }

    /// Gives up the current transfer and expects `chunk_id`.
    fn restart(&mut self, chunk_id: u16) {
        if self.current.take().is_some() {
            self.resets += 1;
        }
        self.chunk_id = chunk_id;
        self.previous = None;
        self.ack_pending = false;
        self.prev_ack_pending = false;
    }

    /// The next ack packet to send, if slices arrived since the last one.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        if self.prev_ack_pending {
            self.prev_ack_pending = false;
            if let Some((id, n)) = self.previous {
                return Some(write_ack(id, n, &SliceSet::full(n)));
            }
        }
        if !self.ack_pending {
            return None;
        }
        self.ack_pending = false;
        if let Some(cur) = &self.current {
            return Some(write_ack(self.chunk_id, cur.num_slices, &cur.received));
        }
        let n = self.ready.as_ref()?.len().div_ceil(SLICE_SIZE);
        Some(write_ack(self.chunk_id, n, &SliceSet::full(n)))
    }

    /// Takes the complete chunk, if one is ready, and moves on to the next
    /// chunk id.
    pub fn poll_chunk(&mut self) -> Option<Vec<u8>> {
        let data = self.ready.take()?;
        self.progress_at = self.clock;
        self.previous = Some((self.chunk_id, data.len().div_ceil(SLICE_SIZE)));
        self.chunk_id = self.chunk_id.wrapping_add(1);
        self.current = None;
        // An ack not yet sent now acks the chunk just read, in full.
        if self.ack_pending {
            self.ack_pending = false;
            self.prev_ack_pending = true;
        }
        Some(data)
    }
}
