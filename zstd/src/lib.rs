//! tickpack's zstd raw-block wrapper: the workspace's one unsafe module
//! outside the C API, zstd's raw block API through zstd-sys.
//!
//! zstd-safe wraps `ZSTD_compressBlock`/`ZSTD_decompressBlock` but not the
//! begin-with-prepared-dictionary calls and gives no access to its context
//! pointers, so this crate owns the four zstd objects tickpack needs
//! ([`CCtx`], [`DCtx`], [`CDict`], [`DDict`]) and exposes a safe surface to
//! tickpack's block layer.
//!
//! Every block is compressed and decompressed after a fresh `*Begin*` call,
//! so no block depends on another and the history-window rules of the block
//! API (previous blocks must stay in memory) never apply.
//!
//! Upstream marks the block API deprecated; tickpack's `block::Backend`
//! keeps this crate replaceable by a magicless-frame backend (see tickpack's
//! FORMAT.md, "Backends").
// The workspace denies unsafe; this crate is the fenced exception.
#![allow(unsafe_code)]
#![allow(deprecated)]

use core::ffi::{c_void, CStr};
use core::ptr::NonNull;

use zstd_sys as sys;

/// The match finder of a block compressed without a dictionary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finder {
    /// The level's own parameters.
    Level,
    /// zstd's `fast` strategy: matches of at least `min_match` bytes
    /// through a hash table of 2^`hash_log` entries.
    Sparse {
        /// The shortest match taken (zstd accepts 3..=7).
        min_match: u32,
        /// The hash table's size, as a power of two.
        hash_log: u32,
    },
}

/// zstd's error name for a code returned by a zstd call.
fn error_name(code: usize) -> &'static str {
    // SAFETY: ZSTD_getErrorName accepts any value and returns a pointer to a
    // static, NUL-terminated ASCII string owned by libzstd.
    let c = unsafe { CStr::from_ptr(sys::ZSTD_getErrorName(code)) };
    c.to_str().unwrap_or("unknown zstd error")
}

fn check(code: usize) -> Result<usize, &'static str> {
    // SAFETY: ZSTD_isError is a pure function of its integer argument.
    if unsafe { sys::ZSTD_isError(code) } != 0 {
        Err(error_name(code))
    } else {
        Ok(code)
    }
}

fn default_mem() -> sys::ZSTD_customMem {
    sys::ZSTD_customMem {
        customAlloc: None,
        customFree: None,
        opaque: core::ptr::null_mut(),
    }
}

/// Compression parameters tuned for inputs up to `max_src` bytes, so a
/// begin call resets small tables instead of level-sized ones.
fn cparams(level: i32, max_src: usize, dict_len: usize) -> sys::ZSTD_compressionParameters {
    // SAFETY: pure function over plain integers; returns a struct by value.
    unsafe { sys::ZSTD_getCParams(level, max_src as u64, dict_len) }
}

/// The most entries, as a power of two, of each match-finder table for a
/// block compressed without a dictionary: two tables of 4 KiB, which stay
/// in the first-level data cache beside the block.
const BLOCK_TABLE_LOG: u32 = 10;

/// [`cparams`] for a block of `len` bytes without a dictionary, its hash
/// and chain tables capped at [`BLOCK_TABLE_LOG`]; [`Finder::Sparse`]
/// makes the match finder zstd's `fast` one with its minimum match and
/// hash table.
fn block_cparams(level: i32, len: usize, finder: Finder) -> sys::ZSTD_compressionParameters {
    let mut c = cparams(level, len, 0);
    c.hashLog = c.hashLog.min(BLOCK_TABLE_LOG);
    c.chainLog = c.chainLog.min(BLOCK_TABLE_LOG);
    if let Finder::Sparse {
        min_match,
        hash_log,
    } = finder
    {
        c.strategy = sys::ZSTD_strategy::ZSTD_fast;
        c.minMatch = min_match;
        c.hashLog = hash_log;
    }
    c
}

/// A compression dictionary digested for one level.
pub struct CDict(NonNull<sys::ZSTD_CDict>);

// SAFETY: a ZSTD_CDict is immutable after creation; zstd documents that one
// CDict may be used by several compression contexts on different threads.
unsafe impl Send for CDict {}
// SAFETY: as above, all uses after creation are reads.
unsafe impl Sync for CDict {}

impl CDict {
    /// Digests `dict` for compression at `level` of inputs up to `max_src`
    /// bytes; `None` if zstd refuses it or cannot allocate.
    pub fn new(dict: &[u8], level: i32, max_src: usize) -> Option<Self> {
        // SAFETY: `dict` is valid for reads of `dict.len()` bytes for the
        // duration of the call; ZSTD_dlm_byCopy makes zstd copy it, so the
        // CDict does not borrow it afterwards. Returns NULL on failure.
        let p = unsafe {
            sys::ZSTD_createCDict_advanced(
                dict.as_ptr() as *const c_void,
                dict.len(),
                sys::ZSTD_dictLoadMethod_e::ZSTD_dlm_byCopy,
                sys::ZSTD_dictContentType_e::ZSTD_dct_auto,
                cparams(level, max_src, dict.len()),
                default_mem(),
            )
        };
        NonNull::new(p).map(Self)
    }
}

impl Drop for CDict {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createCDict_advanced and is freed once.
        unsafe { sys::ZSTD_freeCDict(self.0.as_ptr()) };
    }
}

/// A decompression dictionary, digested once.
pub struct DDict(NonNull<sys::ZSTD_DDict>);

// SAFETY: a ZSTD_DDict is immutable after creation and may be shared by
// decompression contexts on several threads (zstd.h, ZSTD_createDDict).
unsafe impl Send for DDict {}
// SAFETY: as above.
unsafe impl Sync for DDict {}

impl DDict {
    /// Digests `dict` for decompression; `None` if zstd refuses it or
    /// cannot allocate.
    pub fn new(dict: &[u8]) -> Option<Self> {
        // SAFETY: `dict` is readable for `dict.len()` bytes during the call;
        // ZSTD_createDDict copies it. Returns NULL on failure.
        let p = unsafe { sys::ZSTD_createDDict(dict.as_ptr() as *const c_void, dict.len()) };
        NonNull::new(p).map(Self)
    }
}

impl Drop for DDict {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createDDict and is freed once.
        unsafe { sys::ZSTD_freeDDict(self.0.as_ptr()) };
    }
}

/// A compression context for raw blocks.
pub struct CCtx(NonNull<sys::ZSTD_CCtx>);

// SAFETY: a ZSTD_CCtx may move between threads; it is only used through
// `&mut self`, so never concurrently.
unsafe impl Send for CCtx {}

impl CCtx {
    /// A new context; `None` if zstd cannot allocate one.
    pub fn new() -> Option<Self> {
        // SAFETY: plain allocation; NULL on failure.
        NonNull::new(unsafe { sys::ZSTD_createCCtx() }).map(Self)
    }

    /// Compresses `src` as one raw block into `dst`, with `finder` when
    /// there is no dictionary (a dictionary's own parameters otherwise).
    /// Returns `Ok(0)` when zstd judges the block incompressible (the
    /// caller stores it raw).
    pub fn compress_block(
        &mut self,
        level: i32,
        finder: Finder,
        dict: Option<&CDict>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, &'static str> {
        let cctx = self.0.as_ptr();
        match dict {
            // SAFETY: cctx is a live context owned by self; the CDict is live
            // for the call and only read.
            // A pledged size lets zstd size the window for this block (a
            // small dictionary's CDict would otherwise cap the block size
            // below 8 KiB) and attach a large CDict instead of copying its
            // tables on every block.
            Some(d) => check(unsafe {
                sys::ZSTD_compressBegin_usingCDict_advanced(
                    cctx,
                    d.0.as_ptr(),
                    sys::ZSTD_frameParameters {
                        contentSizeFlag: 0,
                        checksumFlag: 0,
                        noDictIDFlag: 1,
                    },
                    src.len() as u64,
                )
            })?,
            None => {
                let c = block_cparams(level, src.len().max(1), finder);
                let params = sys::ZSTD_parameters {
                    cParams: c,
                    fParams: sys::ZSTD_frameParameters {
                        contentSizeFlag: 0,
                        checksumFlag: 0,
                        noDictIDFlag: 1,
                    },
                };
                // SAFETY: no dictionary (NULL, 0); params by value.
                check(unsafe {
                    sys::ZSTD_compressBegin_advanced(
                        cctx,
                        core::ptr::null(),
                        0,
                        params,
                        sys::ZSTD_CONTENTSIZE_UNKNOWN as u64,
                    )
                })?
            }
        };
        // SAFETY: the context was begun above.
        let max = unsafe { sys::ZSTD_getBlockSize(cctx) };
        if src.len() > max {
            return Err("block larger than zstd's block size");
        }
        // SAFETY: src is readable for src.len() bytes and dst writable for
        // dst.len() bytes; zstd writes at most dst.len() bytes and returns the
        // count or an error code. src is not needed after the call because
        // the next block starts with a fresh begin.
        check(unsafe {
            sys::ZSTD_compressBlock(
                cctx,
                dst.as_mut_ptr() as *mut c_void,
                dst.len(),
                src.as_ptr() as *const c_void,
                src.len(),
            )
        })
    }
}

impl Drop for CCtx {
    fn drop(&mut self) {
        // SAFETY: created by ZSTD_createCCtx, freed once.
        unsafe { sys::ZSTD_freeCCtx(self.0.as_ptr()) };
    }
}

/// A decompression context for raw blocks.
pub struct DCtx(NonNull<sys::ZSTD_DCtx>);

// SAFETY: used only through `&mut self`; zstd contexts may change threads.
unsafe impl Send for DCtx {}

impl DCtx {
    /// A new context; `None` if zstd cannot allocate one.
    pub fn new() -> Option<Self> {
        // SAFETY: plain allocation; NULL on failure.
        NonNull::new(unsafe { sys::ZSTD_createDCtx() }).map(Self)
    }

    /// Decompresses one raw zstd block into `dst`, returning the bytes
    /// written. Output that would not fit in `dst` is an error, so `dst.len()`
    /// caps what a hostile block can expand to.
    pub fn decompress_block(
        &mut self,
        dict: Option<&DDict>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, &'static str> {
        let dctx = self.0.as_ptr();
        match dict {
            // SAFETY: live context and DDict; the DDict is only read.
            Some(d) => check(unsafe { sys::ZSTD_decompressBegin_usingDDict(dctx, d.0.as_ptr()) })?,
            // SAFETY: live context.
            None => check(unsafe { sys::ZSTD_decompressBegin(dctx) })?,
        };
        // SAFETY: src readable and dst writable for their lengths; zstd
        // validates every field of the block against src.len() and dst.len()
        // and returns an error code for malformed or oversized input. dst is
        // not referenced after the call because each block begins afresh.
        check(unsafe {
            sys::ZSTD_decompressBlock(
                dctx,
                dst.as_mut_ptr() as *mut c_void,
                dst.len(),
                src.as_ptr() as *const c_void,
                src.len(),
            )
        })
    }
}

impl Drop for DCtx {
    fn drop(&mut self) {
        // SAFETY: created by ZSTD_createDCtx, freed once.
        unsafe { sys::ZSTD_freeDCtx(self.0.as_ptr()) };
    }
}
