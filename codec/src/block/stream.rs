//! Cutting a payload into blocks and choosing raw, RLE or zstd for each;
//! reading them back under a size cap.

use super::header::{BlockHeader, BlockType, BLOCK_HEADER_LEN, MAX_BLOCK_CONTENT};
use super::matcher::{Finder, Finders, Plan};
use crate::error::DecodeError;
use crate::wire::Reader;
use tickpack_zstd::{self as zstd_raw, CDict, DDict};

/// A raw-block compressor. One implementation today (zstd's block API);
/// the trait keeps a magicless-frame backend possible (FORMAT.md, "Backends").
pub(crate) trait Backend {
    /// Compressed size of `src` in `dst`, or `None` to store it raw.
    fn compress(&mut self, src: &[u8], dst: &mut [u8], dict: Option<&CDict>) -> Option<usize>;
    /// Appends the content regenerated from `src`, at most `cap` bytes, to
    /// `out` and returns its size; appends nothing on an error.
    fn decompress(
        &mut self,
        src: &[u8],
        cap: usize,
        out: &mut Vec<u8>,
        dict: Option<&DDict>,
    ) -> Result<usize, &'static str>;
}

/// Blocks up to this many bytes are compressed at [`small_block_level`].
pub(crate) const SMALL_BLOCK: usize = 1024;

/// The zstd level of a block of up to [`SMALL_BLOCK`] bytes under an
/// encoder at `level`: one lower, not below 1. At the default level 3 that
/// is zstd's `fast` strategy instead of `dfast`; measured on the Quake 3
/// demos (payloads of 40-130 bytes with a 16 KiB dictionary): 8% less
/// encode + decode time on the largest, and 0.01% fewer bytes in all.
pub(crate) fn small_block_level(level: i32) -> i32 {
    if level > 1 {
        level - 1
    } else {
        level
    }
}

/// The zstd raw block backend at a fixed compression level.
pub(crate) struct ZstdBlocks {
    level: i32,
    /// The match finder for blocks without a dictionary at levels 1-3.
    finders: Finders,
    /// A probe's second compression.
    probe: Vec<u8>,
    cctx: Option<zstd_raw::CCtx>,
    dctx: Option<zstd_raw::DCtx>,
    /// Where blocks are regenerated before they are appended: zeroed once,
    /// so a packet does not clear a whole block's room to use a little.
    regenerated: Vec<u8>,
}

impl ZstdBlocks {
    pub(crate) fn new(level: i32) -> Self {
        Self {
            level,
            finders: Finders::default(),
            probe: Vec::new(),
            cctx: None,
            dctx: None,
            regenerated: Vec::new(),
        }
    }

    pub(crate) fn level(&self) -> i32 {
        self.level
    }
}

impl Backend for ZstdBlocks {
    fn compress(&mut self, src: &[u8], dst: &mut [u8], dict: Option<&CDict>) -> Option<usize> {
        if self.cctx.is_none() {
            self.cctx = zstd_raw::CCtx::new();
        }
        let cctx = self.cctx.as_mut()?;
        let small = src.len() <= SMALL_BLOCK;
        let level = if small {
            small_block_level(self.level)
        } else {
            self.level
        };
        let plan = if dict.is_none() && (1..=3).contains(&level) {
            self.finders.plan(src.len())
        } else {
            Plan::Use(Finder::Level)
        };
        // zstd's 0 (incompressible) and errors both mean: store it raw.
        let mut run = |finder: Finder, dst: &mut [u8]| {
            cctx.compress_block(level, finder.zstd(), dict, src, dst)
                .ok()
                .filter(|&n| n > 0)
        };
        match plan {
            Plan::Use(finder) => run(finder, dst),
            Plan::Probe => {
                let own = run(Finder::Level, dst);
                self.probe.resize(dst.len(), 0);
                let sparse = run(Finder::Sparse, &mut self.probe);
                let size = |n: Option<usize>| n.unwrap_or(src.len());
                self.finders.note(src.len(), size(own), size(sparse));
                // Ties go to the sparse finder, as the choice does, so the
                // same block probed again or not compresses the same.
                match sparse.filter(|&n| n <= size(own)) {
                    Some(n) => match (dst.get_mut(..n), self.probe.get(..n)) {
                        (Some(to), Some(from)) => {
                            to.copy_from_slice(from);
                            Some(n)
                        }
                        _ => own,
                    },
                    None => own,
                }
            }
        }
    }

    fn decompress(
        &mut self,
        src: &[u8],
        cap: usize,
        out: &mut Vec<u8>,
        dict: Option<&DDict>,
    ) -> Result<usize, &'static str> {
        if self.dctx.is_none() {
            self.dctx = zstd_raw::DCtx::new();
        }
        let d = self.dctx.as_mut().ok_or("cannot allocate zstd context")?;
        let cap = cap.min(MAX_BLOCK_CONTENT);
        if self.regenerated.len() < cap {
            self.regenerated.resize(MAX_BLOCK_CONTENT, 0);
        }
        let room = &mut self.regenerated[..cap];
        let n = d.decompress_block(dict, src, room)?;
        out.extend_from_slice(room.get(..n).ok_or("zstd overran its buffer")?);
        Ok(n)
    }
}

/// Upper bound of the blocks encoding `payload_len` bytes.
pub(crate) fn max_blocks_len(payload_len: usize) -> usize {
    let blocks = payload_len.div_ceil(MAX_BLOCK_CONTENT).max(1);
    payload_len + blocks * BLOCK_HEADER_LEN
}

/// The block header bytes of `out` at `at` (for tests).
#[cfg(test)]
fn header_at(out: &[u8], at: usize) -> BlockHeader {
    BlockHeader::read(&mut Reader::new(&out[at..])).unwrap()
}

/// The entropy coders a block may use.
#[derive(Clone, Copy, Default)]
pub(crate) struct Coders<'a> {
    /// Try zstd.
    pub(crate) zstd: bool,
    /// zstd's dictionary, digested at the backend's level for blocks over
    /// [`SMALL_BLOCK`] bytes.
    pub(crate) dict: Option<&'a CDict>,
    /// The same dictionary digested at [`small_block_level`] for blocks up
    /// to [`SMALL_BLOCK`] bytes (`dict` when `None`).
    pub(crate) small_dict: Option<&'a CDict>,
}

/// Appends `payload` to `out` as blocks of at most 32768 bytes each, every
/// one stored raw, RLE or zstd, whichever is smallest: zstd wins only when
/// strictly smaller. Compression goes through `scratch`, so the bytes chosen
/// never depend on `out`'s capacity. An empty payload writes nothing (a
/// packet always has section metas).
pub(crate) fn encode_blocks<B: Backend>(
    backend: &mut B,
    coders: Coders<'_>,
    payload: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    scratch.resize(MAX_BLOCK_CONTENT, 0);
    let mut chunks = payload.chunks(MAX_BLOCK_CONTENT).peekable();
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let header = |block_type, size| BlockHeader {
            last,
            block_type,
            size,
        };
        if chunk.len() > 1 && chunk.iter().all(|&b| b == chunk[0]) {
            header(BlockType::Rle, chunk.len()).write(out);
            out.push(chunk[0]);
            continue;
        }
        // zstd gets the whole scratch (it refuses tight buffers even when its
        // output would fit); only a result smaller than the raw block counts.
        let dict = match coders.small_dict {
            Some(small) if chunk.len() <= SMALL_BLOCK => Some(small),
            _ => coders.dict,
        };
        let zstd = if coders.zstd {
            backend
                .compress(chunk, &mut scratch[..chunk.len() - 1], dict)
                .filter(|&n| n < chunk.len())
        } else {
            None
        };
        match zstd {
            Some(n) => {
                header(BlockType::Zstd, n).write(out);
                out.extend_from_slice(&scratch[..n]);
            }
            None => {
                header(BlockType::Raw, chunk.len()).write(out);
                out.extend_from_slice(chunk);
            }
        }
    }
}

/// Decodes blocks from `r` until the last one, appending content to `out`
/// (cleared first). `out` never grows past `max_decoded`.
pub(crate) fn decode_blocks<B: Backend>(
    backend: &mut B,
    dict: Option<&DDict>,
    r: &mut Reader<'_>,
    max_decoded: usize,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    out.clear();
    loop {
        if r.remaining() == 0 {
            return Err(DecodeError::MissingLastBlock);
        }
        let at = r.pos();
        let h = BlockHeader::read(r)?;
        let room = max_decoded - out.len();
        match h.block_type {
            BlockType::Raw => {
                if h.size > room {
                    return Err(DecodeError::DecodedTooLarge { limit: max_decoded });
                }
                out.extend_from_slice(r.bytes(h.size)?);
            }
            BlockType::Rle => {
                if h.size > room {
                    return Err(DecodeError::DecodedTooLarge { limit: max_decoded });
                }
                let b = r.u8()?;
                out.resize(out.len() + h.size, b);
            }
            BlockType::Zstd => {
                let src = r.bytes(h.size)?;
                let cap = MAX_BLOCK_CONTENT.min(room);
                match backend.decompress(src, cap, out, dict) {
                    // A block regenerates 1..=32768 bytes (an empty one
                    // would be a second spelling of what the others say).
                    Ok(0) => {
                        return Err(DecodeError::Zstd {
                            offset: at,
                            message: "zstd block regenerates nothing",
                        })
                    }
                    Ok(_) => {}
                    Err(message) => {
                        return Err(if cap < MAX_BLOCK_CONTENT {
                            DecodeError::DecodedTooLarge { limit: max_decoded }
                        } else {
                            DecodeError::Zstd {
                                offset: at,
                                message,
                            }
                        });
                    }
                }
            }
        }
        if h.last {
            if r.remaining() != 0 {
                return Err(DecodeError::TrailingBytes {
                    count: r.remaining(),
                });
            }
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(payload: &[u8]) -> Vec<u8> {
        roundtrip_with(&mut ZstdBlocks::new(3), payload)
    }

    /// Encodes `payload` as zstd blocks through `z` (zstd only, no
    /// dictionary), decodes them, checks the bytes and returns the blocks.
    fn roundtrip_with(z: &mut ZstdBlocks, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_blocks(
            z,
            Coders {
                zstd: true,
                ..Coders::default()
            },
            payload,
            &mut Vec::new(),
            &mut out,
        );
        let mut back = Vec::new();
        decode_blocks(z, None, &mut Reader::new(&out), 1 << 20, &mut back).unwrap();
        assert_eq!(back, payload);
        out
    }

    #[test]
    fn header_bits() {
        let mut out = Vec::new();
        let h = BlockHeader {
            last: false,
            block_type: BlockType::Zstd,
            size: 8192,
        };
        h.write(&mut out);
        assert_eq!(out, [0x04, 0xff, 0x1f]);
        assert_eq!(header_at(&out, 0), h);
        out.clear();
        BlockHeader {
            last: true,
            block_type: BlockType::Rle,
            size: 300,
        }
        .write(&mut out);
        assert_eq!(out, [0x03, 0xac, 0x02]);
        out.clear();
        BlockHeader {
            last: true,
            block_type: BlockType::Raw,
            size: 5,
        }
        .write(&mut out);
        assert_eq!(
            out,
            [0x01],
            "the last block's size is the rest of the packet"
        );
    }

    proptest! {
        #[test]
        fn header_roundtrip(last: bool, ty in 0u8..3, size in 1usize..=MAX_BLOCK_CONTENT) {
            let block_type = [BlockType::Raw, BlockType::Rle, BlockType::Zstd][usize::from(ty)];
            let h = BlockHeader { last, block_type, size };
            let mut out = Vec::new();
            h.write(&mut out);
            if last && block_type != BlockType::Rle {
                out.resize(out.len() + size, 0);
            }
            prop_assert_eq!(header_at(&out, 0), h);
        }

        #[test]
        fn blocks_roundtrip(payload in proptest::collection::vec(0u8..4, 1..20000)) {
            let out = roundtrip(&payload);
            prop_assert!(out.len() <= max_blocks_len(payload.len()));
        }
    }

    #[test]
    fn kinds_chosen() {
        // RLE: 3 bytes for 100 zeros.
        assert_eq!(roundtrip(&[0; 100]).len(), 3);
        // Incompressible: raw, +1 byte.
        let noise: Vec<u8> = (0..200u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        assert_eq!(roundtrip(&noise).len(), 201);
        // Compressible: zstd.
        let text: Vec<u8> = b"abcdefgh".iter().cycle().take(3000).copied().collect();
        let out = roundtrip(&text);
        assert!(out.len() < 100);
        assert_eq!(header_at(&out, 0).block_type, BlockType::Zstd);
        // 80000 bytes need 3 blocks: two of 3 + 1 bytes, the last 3 + 1.
        let out = roundtrip(&vec![7; 80000]);
        assert_eq!(out.len(), 12);
    }

    /// One block of `src` compressed by `finder` alone, without dictionary.
    fn one_finder(finder: Finder, src: &[u8]) -> Option<usize> {
        let mut dst = vec![0; src.len() - 1];
        let mut cctx = zstd_raw::CCtx::new().unwrap();
        let n = cctx
            .compress_block(3, finder.zstd(), None, src, &mut dst)
            .unwrap();
        (n > 0).then_some(n)
    }

    #[test]
    fn a_probe_keeps_the_smaller_finder_and_every_block_decodes() {
        // Random 3-bit symbols, where chance matches of 4 bytes cost more
        // than they save (the sparse finder wins), and words with many
        // 4-byte repeats (the level's finder wins).
        let mut x = 0x9e37_79b9u32;
        let symbols: Vec<u8> = (0..3000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 29) as u8
            })
            .collect();
        let words: Vec<u8> = (0..3000u32)
            .flat_map(|i| {
                let w = (i.wrapping_mul(40503) >> 9) % 64;
                [
                    b'a' + (w % 26) as u8,
                    b'e',
                    b'x',
                    b'0' + (w / 26) as u8,
                    b' ',
                ]
            })
            .take(3000)
            .collect();
        for src in [&symbols, &words] {
            let level = one_finder(Finder::Level, src).unwrap();
            let sparse = one_finder(Finder::Sparse, src).unwrap();
            assert_eq!(sparse < level, core::ptr::eq(src, &symbols));
            // A fresh backend probes its first block of a class.
            let out = roundtrip(src);
            assert_eq!(
                out.len(),
                1 + level.min(sparse),
                "the last block's header is one byte"
            );
            // Later blocks, probed or not, take the same finder and decode.
            let mut z = ZstdBlocks::new(3);
            for _ in 0..40 {
                assert_eq!(roundtrip_with(&mut z, src).len(), 1 + level.min(sparse));
            }
        }
    }

    #[test]
    fn rejects_bad_blocks() {
        let mut z = ZstdBlocks::new(3);
        let mut out = Vec::new();
        let mut dec =
            |b: &[u8], limit| decode_blocks(&mut z, None, &mut Reader::new(b), limit, &mut out);
        assert_eq!(dec(&[], 100), Err(DecodeError::MissingLastBlock));
        // not-last raw block of 1 byte, then nothing
        assert_eq!(
            dec(&[0x00, 0x00, 0x00, 0xaa], 100),
            Err(DecodeError::MissingLastBlock)
        );
        // Type 3 was the Huffman block, retired in format 3: reserved.
        assert_eq!(
            dec(&[0x07, 0x01], 100),
            Err(DecodeError::ReservedBits { flags: 0x07 })
        );
        assert_eq!(
            dec(&[0x03, 0x02, 0xaa, 0xbb], 100),
            Err(DecodeError::TrailingBytes { count: 1 })
        );
        // RLE of 8192 bytes against a 100-byte limit
        assert_eq!(
            dec(&[0x03, 0x80, 0x40, 0x00], 100),
            Err(DecodeError::DecodedTooLarge { limit: 100 })
        );
        assert_eq!(
            dec(&[0x03, 0x81, 0x80, 0x02, 0x00], 100000),
            Err(DecodeError::BadBlockSize { offset: 1 })
        );
        assert_eq!(
            dec(&[0x03, 0x00, 0x00], 100000),
            Err(DecodeError::BadBlockSize { offset: 1 })
        );
        assert_eq!(
            dec(&[0x02, 0x00, 0x80, 0x00], 100000),
            Err(DecodeError::BadBlockSize { offset: 1 })
        );
        // Types 3 (Huffman) and 4 (the model block, which the packet
        // header's MODEL flag announces instead), 5-7 and bits 4-7 are
        // reserved.
        assert_eq!(
            dec(&[0x09, 0xaa], 100),
            Err(DecodeError::ReservedBits { flags: 0x09 })
        );
        assert_eq!(
            dec(&[0x0b, 0xaa], 100),
            Err(DecodeError::ReservedBits { flags: 0x0b })
        );
        assert_eq!(
            dec(&[0x11, 0xaa], 100),
            Err(DecodeError::ReservedBits { flags: 0x11 })
        );
        assert!(matches!(
            dec(&[0x05, 0xde, 0xad], 100000),
            Err(DecodeError::Zstd { offset: 0, .. })
        ));
        assert_eq!(
            dec(&[0x01], 100),
            Err(DecodeError::Truncated {
                offset: 1,
                needed: 1
            })
        );
        assert_eq!(
            dec(&[0x00, 0x01, 0x00, 0xaa], 100),
            Err(DecodeError::Truncated {
                offset: 3,
                needed: 1
            })
        );
    }
}
