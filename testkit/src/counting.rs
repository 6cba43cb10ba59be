//! A counting global allocator for tests that measure peak heap growth.
//!
//! A test binary installs it with
//! `#[global_allocator] static A: Counting = Counting;` and then measures a
//! closure with [`peak_of`]; tests that measure take [`SERIAL`] so their
//! peaks are not mixed.

// The one module of this crate with `unsafe`: `GlobalAlloc` is an unsafe
// trait, and this implementation only defers to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The system allocator, counting the bytes currently allocated and their
/// peak.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Held by every measuring test of a binary, so tests run one at a time
/// while they measure.
pub static SERIAL: Mutex<()> = Mutex::new(());

// SAFETY: every call defers to the system allocator with the caller's
// arguments; the counters are only atomics beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(l.size(), Ordering::SeqCst) + l.size();
        PEAK.fetch_max(now, Ordering::SeqCst);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        CURRENT.fetch_sub(l.size(), Ordering::SeqCst);
        // SAFETY: `p` was allocated by `System` with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
}

/// Peak heap growth while `f` runs, in bytes (meaningful only in a binary
/// whose global allocator is [`Counting`]).
pub fn peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let r = f();
    (r, PEAK.load(Ordering::SeqCst).saturating_sub(base))
}

/// Heap bytes allocated now (meaningful only in a binary whose global
/// allocator is [`Counting`]): for levels compared over a long run, where
/// a peak says nothing.
pub fn current() -> usize {
    CURRENT.load(Ordering::SeqCst)
}
