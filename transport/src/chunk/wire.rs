//! The slice and ack packets: parsing (typed errors, no panics on hostile
//! bytes) and writing; the layout is in the [module docs](super).

use super::{
    ChunkError, ACK_HEADER_LEN, ACK_PACKET, MAX_SLICES_PER_CHUNK, SLICE_HEADER_LEN, SLICE_PACKET,
    SLICE_SIZE,
};

/// A 256-bit set of slice ids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct SliceSet(pub(super) [u64; 4]);

impl SliceSet {
    pub(super) fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
    pub(super) fn insert(&mut self, i: usize) -> bool {
        match self.0.get_mut(i / 64) {
            Some(w) if *w >> (i % 64) & 1 == 0 => {
                *w |= 1 << (i % 64);
                true
            }
            _ => false,
        }
    }
    pub(super) fn full(n: usize) -> Self {
        let mut s = Self::default();
        for i in 0..n.min(MAX_SLICES_PER_CHUNK) {
            s.insert(i);
        }
        s
    }
}

pub(super) fn write_ack(
    chunk_id: u16,
    transfer: u64,
    num_slices: usize,
    set: &SliceSet,
) -> Vec<u8> {
    let bytes = num_slices.div_ceil(8);
    let mut out = Vec::with_capacity(ACK_HEADER_LEN + bytes);
    out.push(ACK_PACKET);
    out.extend_from_slice(&chunk_id.to_le_bytes());
    out.extend_from_slice(&transfer.to_le_bytes());
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
pub(super) struct Ack {
    pub(super) chunk_id: u16,
    pub(super) transfer: u64,
    pub(super) num_slices: usize,
    pub(super) set: SliceSet,
}

pub(super) fn parse_ack(p: &[u8]) -> Result<Ack, ChunkError> {
    let Some((&[ty, c0, c1, t0, t1, t2, t3, t4, t5, t6, t7, n], bits)) =
        p.split_first_chunk::<ACK_HEADER_LEN>()
    else {
        return Err(ChunkError::Truncated {
            len: p.len(),
            needed: ACK_HEADER_LEN,
        });
    };
    if ty != ACK_PACKET {
        return Err(ChunkError::WrongType { found: ty });
    }
    let chunk_id = u16::from_le_bytes([c0, c1]);
    let transfer = u64::from_le_bytes([t0, t1, t2, t3, t4, t5, t6, t7]);
    let num_slices = usize::from(n) + 1;
    let needed = num_slices.div_ceil(8);
    if bits.len() < needed {
        return Err(ChunkError::Truncated {
            len: p.len(),
            needed: ACK_HEADER_LEN + needed,
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
        transfer,
        num_slices,
        set,
    })
}

/// A parsed slice packet.
pub(super) struct Slice<'a> {
    pub(super) chunk_id: u16,
    pub(super) transfer: u64,
    pub(super) slice_id: usize,
    pub(super) num_slices: usize,
    pub(super) data: &'a [u8],
}

pub(super) fn parse_slice(p: &[u8]) -> Result<Slice<'_>, ChunkError> {
    let Some((&[ty, c0, c1, t0, t1, t2, t3, t4, t5, t6, t7, s, n], rest)) =
        p.split_first_chunk::<SLICE_HEADER_LEN>()
    else {
        return Err(ChunkError::Truncated {
            len: p.len(),
            needed: SLICE_HEADER_LEN,
        });
    };
    if ty != SLICE_PACKET {
        return Err(ChunkError::WrongType { found: ty });
    }
    let chunk_id = u16::from_le_bytes([c0, c1]);
    let transfer = u64::from_le_bytes([t0, t1, t2, t3, t4, t5, t6, t7]);
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
        transfer,
        slice_id,
        num_slices,
        data,
    })
}
