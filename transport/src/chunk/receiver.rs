//! The receiving side of a chunk transfer: slices reassembled into one
//! buffer sized by the announced slice count (capped by the configured
//! maximum), acks written as slices arrive.

use tickpack_seq::seq_newer;

use super::wire::{parse_slice, write_ack, SliceSet};
use super::{ChunkError, MAX_CHUNK_SIZE, SLICE_SIZE};

#[derive(Debug)]
struct Incoming {
    num_slices: usize,
    received: SliceSet,
    num_received: usize,
    /// `num_slices * SLICE_SIZE` bytes, allocated at the first slice.
    data: Vec<u8>,
    last_len: Option<usize>,
}

/// Receives chunks slice by slice and acks them; see the
/// [module docs](crate::chunk).
#[derive(Debug)]
pub struct ChunkReceiver {
    max_chunk_size: usize,
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
            chunk_id: 0,
            current: None,
            ready: None,
            previous: None,
            ack_pending: false,
            prev_ack_pending: false,
        }
    }

    /// Id of the chunk being received (or next expected).
    pub fn chunk_id(&self) -> u16 {
        self.chunk_id
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
        if seq_newer(self.chunk_id, s.chunk_id) {
            return Ok(());
        }
        if s.chunk_id != self.chunk_id {
            return Err(ChunkError::UnexpectedChunk {
                chunk_id: s.chunk_id,
                expected: self.chunk_id,
            });
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
        let cur = match &mut self.current {
            Some(cur) => {
                if cur.num_slices != s.num_slices {
                    return Err(ChunkError::NumSlicesMismatch {
                        chunk_id: s.chunk_id,
                        expected: cur.num_slices,
                        actual: s.num_slices,
                    });
                }
                cur
            }
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
