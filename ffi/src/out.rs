//! Out-parameters and caller buffers, checked when a call starts.
//!
//! Every entry point turns each pointer it will write through into an
//! [`Out`] or an [`OutBuf`] before doing any work, so that a null or
//! misaligned argument fails the call before it changes anything (counts
//! a send, applies a packet, begins a tick); the writes at the end cannot
//! fail.

// This module writes through the raw pointers C hands in; every `unsafe`
// block states what makes it sound.
#![allow(unsafe_code)]

use core::mem::{align_of, size_of};
use core::ptr::NonNull;

use crate::error::Error;

/// An out-parameter for one `T`, known non-null and aligned.
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Checks the required out-parameter `ptr`.
    ///
    /// # Safety
    /// `ptr` is null or valid for a write of one `T` until the call returns.
    pub(crate) unsafe fn new(ptr: *mut T, name: &str) -> Result<Self, Error> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::null(name))?;
        if !ptr.as_ptr().is_aligned() {
            return Err(Error::invalid(format_args!("{name} is misaligned")));
        }
        Ok(Self(ptr))
    }

    /// Checks the optional out-parameter `ptr` (null: not wanted).
    ///
    /// # Safety
    /// As for [`Out::new`].
    pub(crate) unsafe fn optional(ptr: *mut T, name: &str) -> Result<Option<Self>, Error> {
        if ptr.is_null() {
            return Ok(None);
        }
        // SAFETY: forwarded from the caller's contract.
        unsafe { Self::new(ptr, name) }.map(Some)
    }

    /// Writes `value`; the old value, possibly uninitialised, is not read.
    pub(crate) fn write(self, value: T) {
        // SAFETY: non-null and aligned (checked by the constructor) and,
        // by its caller's contract, valid for a write during the call.
        unsafe { self.0.as_ptr().write(value) };
    }
}

/// Writes `value` to `out` when the caller wants it.
pub(crate) fn write_opt<T>(out: Option<Out<T>>, value: T) {
    if let Some(out) = out {
        out.write(value);
    }
}

/// A caller's buffer with room for `capacity` elements of `T`: non-null
/// and aligned unless `capacity` is 0.
pub(crate) struct OutBuf<T> {
    ptr: *mut T,
    capacity: usize,
}

impl<T: Copy> OutBuf<T> {
    /// Checks buffer `ptr` of `capacity` elements; null is allowed only
    /// with `capacity` 0 (a call asking for the size).
    ///
    /// # Safety
    /// When `capacity > 0`, `ptr` is null or valid for writes of `capacity`
    /// elements until the call returns, and overlaps nothing the call reads.
    pub(crate) unsafe fn new(ptr: *mut T, capacity: usize, name: &str) -> Result<Self, Error> {
        if capacity == 0 {
            return Ok(Self { ptr, capacity });
        }
        if ptr.is_null() {
            return Err(Error::null(name));
        }
        if !ptr.is_aligned() {
            return Err(Error::invalid(format_args!(
                "{name} is not aligned to {} bytes",
                align_of::<T>()
            )));
        }
        if capacity > isize::MAX as usize / size_of::<T>().max(1) {
            return Err(Error::invalid(format_args!(
                "{name}: capacity {capacity} is too large"
            )));
        }
        Ok(Self { ptr, capacity })
    }

    /// Checks the optional buffer `ptr` (null: not wanted, whatever
    /// `capacity`).
    ///
    /// # Safety
    /// As for [`OutBuf::new`].
    pub(crate) unsafe fn optional(
        ptr: *mut T,
        capacity: usize,
        name: &str,
    ) -> Result<Option<Self>, Error> {
        if ptr.is_null() {
            return Ok(None);
        }
        // SAFETY: forwarded from the caller's contract.
        unsafe { Self::new(ptr, capacity, name) }.map(Some)
    }

    /// Copies `src` to the start of the buffer, or fails with
    /// `TP_STATUS_BUFFER_TOO_SMALL` copying nothing.
    pub(crate) fn fill(self, src: &[T], name: &str) -> Result<(), Error> {
        if src.len() > self.capacity {
            return Err(Error::too_small(name, src.len(), self.capacity));
        }
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: `capacity >= src.len() > 0`, so the constructor checked
        // `ptr` is non-null and aligned; by its caller's contract it is
        // writable for `capacity` elements that do not overlap `src`.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr, src.len()) };
        Ok(())
    }
}

/// Writes `src.len()` to `len` and copies `src` into `buf`; when it does
/// not fit, fails with `TP_STATUS_BUFFER_TOO_SMALL` (the length needed is
/// still written, nothing copied).
pub(crate) fn copy_out<T: Copy>(
    buf: OutBuf<T>,
    src: &[T],
    len: Out<usize>,
    name: &str,
) -> Result<(), Error> {
    len.write(src.len());
    buf.fill(src, name)
}
