//! The receiving side of a chunk transfer: slices reassembled into one
//! buffer sized by the announced slice count (capped by the configured
//! maximum), acks written as slices arrive.

use std::time::Duration;

use tickpack_seq::seq_newer;

use super::wire::{parse_slice, write_ack, SliceSet};
use super::{ChunkError, MAX_CHUNK_SIZE, SLICE_SIZE};

#[derive(Debug)]
struct Incoming {
    /// The sender's id of this transfer.
    transfer: u64,
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
/// [module docs](crate::chunk).
///
/// It never stays stuck on a transfer it cannot finish (a forged first
/// slice announcing another transfer, slice count or chunk id, or a chunk
/// the sender gave up): a transfer that got more conflicting slices than
/// its own since it last progressed is dropped for the conflicting one,
/// and once no new slice has arrived for the stall timeout, the next slice
/// that conflicts with the transfer, or names another chunk than one read
/// already, starts over.
#[derive(Debug)]
pub struct ChunkReceiver {
    max_chunk_size: usize,
    stall_timeout: Duration,
    /// The newest time given to [`handle_timeout`](Self::handle_timeout).
    clock: Duration,
    /// When the receiver last made progress (a new slice, a chunk read).
    progress_at: Duration,
    /// Transfers given up for stalling.
    resets: u64,
    chunk_id: u16,
    /// The id after the last chunk read (0 before any): older ids were
    /// delivered, so their slices never start a transfer.
    unread: u16,
    current: Option<Incoming>,
    /// Slices conflicting with the current transfer (another transfer id or
    /// slice count) since it last progressed.
    conflicts: usize,
    ready: Option<Vec<u8>>,
    /// The transfer id of the ready chunk.
    ready_transfer: u64,
    /// The previous chunk's id, transfer and slice count, acked in full if
    /// its slices are still arriving (the sender missed the final ack).
    previous: Option<(u16, u64, usize)>,
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
            unread: 0,
            current: None,
            conflicts: 0,
            ready: None,
            ready_transfer: 0,
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
            self.conflicts = 0;
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
        if let Some((prev, transfer, n)) = self.previous {
            if s.chunk_id == prev {
                if s.transfer != transfer {
                    return Err(ChunkError::OtherTransfer {
                        chunk_id: s.chunk_id,
                    });
                }
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
            // on, or the expected id was a forged slice's) unless it is a
            // chunk read already; before, older ones are late resends and
            // newer ones an error.
            if self.ready.is_none() && self.stalled() && !seq_newer(self.unread, s.chunk_id) {
                self.restart(s.chunk_id);
            } else if seq_newer(self.chunk_id, s.chunk_id) {
                return Ok(());
            } else {
                return Err(ChunkError::UnexpectedChunk {
                    chunk_id: s.chunk_id,
                    expected: self.chunk_id,
                });
            }
        }
        if self.ready.is_some() {
            if s.transfer != self.ready_transfer {
                return Err(ChunkError::OtherTransfer {
                    chunk_id: s.chunk_id,
                });
            }
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
            if cur.transfer != s.transfer || cur.num_slices != s.num_slices {
                self.conflicts += 1;
                // One forged slice cannot hold up the real transfer: it
                // wins once more of its slices than the current one's
                // arrive without the current one progressing.
                if !self.stalled() && self.conflicts <= cur.num_received {
                    return Err(if cur.transfer != s.transfer {
                        ChunkError::OtherTransfer {
                            chunk_id: s.chunk_id,
                        }
                    } else {
                        ChunkError::NumSlicesMismatch {
                            chunk_id: s.chunk_id,
                            expected: cur.num_slices,
                            actual: s.num_slices,
                        }
                    });
                }
                // Stalled or outnumbered: this slice starts it over.
                self.current = None;
                self.conflicts = 0;
                self.resets += 1;
            }
        }
        let clock = self.clock;
        let cur = match &mut self.current {
            Some(cur) => cur,
            None => self.current.insert(Incoming {
                transfer: s.transfer,
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
        self.conflicts = 0;
        self.progress_at = clock;
        if cur.num_received == cur.num_slices {
            if let Some(mut done) = self.current.take() {
                let len = (done.num_slices - 1) * SLICE_SIZE + done.last_len.unwrap_or(SLICE_SIZE);
                done.data.truncate(len);
                self.ready = Some(done.data);
                self.ready_transfer = done.transfer;
                self.previous = None;
            }
        }
        Ok(())
    }

    /// Gives up the current transfer and expects `chunk_id`. The chunk read
    /// last stays known, so its late resends are re-acked and never taken
    /// for a new transfer (which would deliver it twice).
    fn restart(&mut self, chunk_id: u16) {
        if self.current.take().is_some() {
            self.resets += 1;
        }
        self.chunk_id = chunk_id;
        self.conflicts = 0;
        self.ack_pending = false;
    }

    /// The next ack packet to send, if slices arrived since the last one.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        if self.prev_ack_pending {
            self.prev_ack_pending = false;
            if let Some((id, transfer, n)) = self.previous {
                return Some(write_ack(id, transfer, n, &SliceSet::full(n)));
            }
        }
        if !self.ack_pending {
            return None;
        }
        self.ack_pending = false;
        if let Some(cur) = &self.current {
            return Some(write_ack(
                self.chunk_id,
                cur.transfer,
                cur.num_slices,
                &cur.received,
            ));
        }
        let n = self.ready.as_ref()?.len().div_ceil(SLICE_SIZE);
        Some(write_ack(
            self.chunk_id,
            self.ready_transfer,
            n,
            &SliceSet::full(n),
        ))
    }

    /// Takes the complete chunk, if one is ready, and moves on to the next
    /// chunk id.
    pub fn poll_chunk(&mut self) -> Option<Vec<u8>> {
        let data = self.ready.take()?;
        self.progress_at = self.clock;
        self.previous = Some((
            self.chunk_id,
            self.ready_transfer,
            data.len().div_ceil(SLICE_SIZE),
        ));
        self.chunk_id = self.chunk_id.wrapping_add(1);
        self.unread = self.chunk_id;
        self.current = None;
        // An ack not yet sent now acks the chunk just read, in full.
        if self.ack_pending {
            self.ack_pending = false;
            self.prev_ack_pending = true;
        }
        Some(data)
    }
}
