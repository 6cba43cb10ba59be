//! The boundary with C: every entry point runs its body through [`call`]
//! (which catches panics and records the message), and every handle, buffer
//! and out-parameter it receives goes through the functions here, which
//! check for null, alignment and the handle's kind before touching memory.
//!
//! A handle is a `Box<Slot>` turned into a raw pointer and cast to the
//! opaque type C sees (`TpSchema *`, `TpServer *`...). Every slot starts
//! with the same magic number and holds an [`Object`] whose variant is the
//! handle's kind, so a pointer of the wrong kind (cast in C) is refused by
//! reading the slot, whatever type C gave it.

// This module dereferences the raw pointers C hands in; every `unsafe`
// block states what makes it sound.
#![allow(unsafe_code)]

use core::mem::{align_of, size_of};
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use tickpack::{Decoder, Schema, Snapshot};
use tickpack_session::Client;
use tickpack_sets::dictset::DictionarySet;

use crate::codec::EncoderState;
use crate::error::{set_last, Error, TpStatus};
use crate::server::ServerState;
use crate::{TpClient, TpDecoder, TpDictSet, TpEncoder, TpSchema, TpServer, TpSnapshot};

/// Marks memory that holds a live handle of this library.
const MAGIC: u64 = u64::from_le_bytes(*b"tickpack");

/// What a handle owns; the variant is its kind.
// Always inside a boxed `Slot`, one per handle: the size is no concern.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Object {
    Schema(Schema),
    DictSet(DictionarySet),
    Snapshot(Arc<Snapshot>),
    Encoder(EncoderState),
    Decoder(Decoder),
    Server(ServerState),
    Client(Client),
}

impl Object {
    fn kind(&self) -> &'static str {
        match self {
            Self::Schema(_) => "TpSchema",
            Self::DictSet(_) => "TpDictSet",
            Self::Snapshot(_) => "TpSnapshot",
            Self::Encoder(_) => "TpEncoder",
            Self::Decoder(_) => "TpDecoder",
            Self::Server(_) => "TpServer",
            Self::Client(_) => "TpClient",
        }
    }
}

// Handles may move between threads (the header promises it).
const _: () = {
    const fn send<T: Send>() {}
    send::<Object>();
};

/// The allocation behind every handle.
struct Slot {
    magic: u64,
    object: Object,
}

/// Ties an opaque C type to the [`Object`] variant it holds.
pub(crate) trait Kind {
    /// What the handle owns.
    type Inner;
    /// The C type's name, for messages.
    const NAME: &'static str;
    fn wrap(inner: Self::Inner) -> Object;
    fn get(object: &Object) -> Option<&Self::Inner>;
    fn get_mut(object: &mut Object) -> Option<&mut Self::Inner>;
}

macro_rules! kind {
    ($ty:ty, $variant:ident, $inner:ty) => {
        impl Kind for $ty {
            type Inner = $inner;
            const NAME: &'static str = stringify!($ty);
            fn wrap(inner: $inner) -> Object {
                Object::$variant(inner)
            }
            fn get(object: &Object) -> Option<&$inner> {
                match object {
                    Object::$variant(x) => Some(x),
                    _ => None,
                }
            }
            fn get_mut(object: &mut Object) -> Option<&mut $inner> {
                match object {
                    Object::$variant(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}

kind!(TpSchema, Schema, Schema);
kind!(TpDictSet, DictSet, DictionarySet);
kind!(TpSnapshot, Snapshot, Arc<Snapshot>);
kind!(TpEncoder, Encoder, EncoderState);
kind!(TpDecoder, Decoder, Decoder);
kind!(TpServer, Server, ServerState);
kind!(TpClient, Client, Client);

/// Runs an entry point's body: a panic becomes [`TpStatus::Panic`], an
/// error its status, and the thread's last message is set either way.
pub(crate) fn call(body: impl FnOnce() -> Result<(), Error>) -> TpStatus {
    // A panic may leave a handle the body was mutating half-updated; its
    // memory stays valid and `TpStatus::Panic` tells the caller to drop it.
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => {
            set_last(None);
            TpStatus::Ok
        }
        Ok(Err(e)) => {
            set_last(Some(&e.message));
            e.status
        }
        Err(payload) => {
            set_last(Some(&format!("panic: {}", panic_text(&*payload))));
            TpStatus::Panic
        }
    }
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "unknown payload"
    }
}

/// Moves `inner` into a new handle and writes it to `out`. Nothing is
/// allocated when `out` is null or misaligned.
///
/// # Safety
/// `out` is null or valid for a write of one pointer.
pub(crate) unsafe fn new_handle<K: Kind>(out: *mut *mut K, inner: K::Inner) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::null("the handle out-parameter"));
    }
    if !out.is_aligned() {
        return Err(Error::invalid("the handle out-parameter is misaligned"));
    }
    let slot = Box::new(Slot {
        magic: MAGIC,
        object: K::wrap(inner),
    });
    // SAFETY: `out` is non-null, aligned and, by the caller's contract,
    // valid for a write; `write` does not read the possibly uninitialised
    // old value.
    unsafe { out.write(Box::into_raw(slot).cast::<K>()) };
    Ok(())
}

/// The slot behind a non-null, aligned handle pointer, checked for the magic.
///
/// # Safety
/// `ptr` points to a live handle of this library (of any kind) that no
/// `&mut` borrows for `'a`.
unsafe fn slot<'a>(ptr: *const Slot, name: &str) -> Result<&'a Slot, Error> {
    if ptr.is_null() {
        return Err(Error::null(name));
    }
    if !ptr.is_aligned() {
        return Err(Error::new(
            TpStatus::WrongHandle,
            format_args!("{name} is not a handle (misaligned)"),
        ));
    }
    // SAFETY: non-null and aligned; by the caller's contract it points to
    // a live `Slot`. Only the magic is read, through the raw pointer, so
    // memory that is not a slot at all is rejected before any reference
    // to it exists.
    let magic = unsafe { core::ptr::addr_of!((*ptr).magic).read() };
    if magic != MAGIC {
        return Err(Error::new(
            TpStatus::WrongHandle,
            format_args!("{name} is not a tickpack handle"),
        ));
    }
    // SAFETY: a live `Slot` made by `new_handle` (the magic agrees), not
    // mutably borrowed by the caller's contract.
    Ok(unsafe { &*ptr })
}

fn wrong_kind<K: Kind>(object: &Object) -> Error {
    Error::new(
        TpStatus::WrongHandle,
        format_args!("expected a {}, got a {}", K::NAME, object.kind()),
    )
}

/// Borrows the contents of handle `ptr`.
///
/// # Safety
/// `ptr` is null or a live handle of this library (of any kind) that no
/// other argument of the same call borrows mutably.
pub(crate) unsafe fn get<'a, K: Kind>(ptr: *const K) -> Result<&'a K::Inner, Error> {
    // SAFETY: forwarded from the caller's contract.
    let slot = unsafe { slot(ptr.cast::<Slot>(), K::NAME)? };
    K::get(&slot.object).ok_or_else(|| wrong_kind::<K>(&slot.object))
}

/// Borrows the contents of handle `ptr` mutably.
///
/// # Safety
/// `ptr` is null or a live handle of this library (of any kind) that no
/// other argument of the same call borrows; [`disjoint`] checks the latter.
pub(crate) unsafe fn get_mut<'a, K: Kind>(ptr: *mut K) -> Result<&'a mut K::Inner, Error> {
    // SAFETY: forwarded from the caller's contract; the shared borrow ends
    // before the mutable one below is made.
    unsafe { slot(ptr.cast::<Slot>(), K::NAME)? };
    // SAFETY: `slot` checked the pointer is non-null, aligned and a live
    // slot; by the caller's contract nothing else borrows it.
    let slot = unsafe { &mut *ptr.cast::<Slot>() };
    if K::get(&slot.object).is_none() {
        return Err(wrong_kind::<K>(&slot.object));
    }
    K::get_mut(&mut slot.object).ok_or_else(|| Error::invalid("unreachable: kind checked"))
}

/// Refuses a call whose mutably borrowed handle is also passed as another
/// argument.
pub(crate) fn disjoint<K>(mutable: *mut K, others: &[*const ()]) -> Result<(), Error> {
    if others.iter().any(|p| p.cast::<K>() == mutable.cast_const()) {
        return Err(Error::invalid(
            "the same handle is passed twice to one call",
        ));
    }
    Ok(())
}

/// Frees handle `ptr`; null is a no-op, as for `free`.
///
/// # Safety
/// `ptr` is null or a live handle of this library that is not used again.
pub(crate) unsafe fn free<K: Kind>(ptr: *mut K) -> Result<(), Error> {
    if ptr.is_null() {
        return Ok(());
    }
    // SAFETY: forwarded from the caller's contract; checks the kind, so a
    // handle of another kind is refused rather than freed.
    unsafe { get::<K>(ptr)? };
    // SAFETY: `get` checked this is a live slot made by `new_handle` through
    // `Box::into_raw`; the caller gives up the handle.
    drop(unsafe { Box::from_raw(ptr.cast::<Slot>()) });
    Ok(())
}

/// Borrows `len` elements at `ptr`; `ptr` may be null when `len` is 0.
///
/// # Safety
/// When `len > 0`, `ptr` is valid for reads of `len` elements of `T` that
/// nothing writes during the call.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize, name: &str) -> Result<&'a [T], Error> {
    if len == 0 {
        return Ok(&[]);
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
    if len > isize::MAX as usize / size_of::<T>().max(1) {
        return Err(Error::invalid(format_args!(
            "{name}: length {len} is too large"
        )));
    }
    // SAFETY: non-null, aligned, the byte length fits in `isize`, and by the
    // caller's contract valid for reads of `len` elements.
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// Borrows `len` bytes of UTF-8 text at `ptr` (no NUL needed).
///
/// # Safety
/// As for [`slice`].
pub(crate) unsafe fn text<'a>(ptr: *const u8, len: usize, name: &str) -> Result<&'a str, Error> {
    // SAFETY: forwarded from the caller's contract.
    let bytes = unsafe { slice(ptr, len, name)? };
    core::str::from_utf8(bytes).map_err(|e| Error::invalid(format_args!("{name}: {e}")))
}

/// Reads the value at `ptr`, or `T::default()` when `ptr` is null (an
/// optional settings argument).
///
/// # Safety
/// `ptr` is null or valid for a read of one initialised `T`.
pub(crate) unsafe fn read_or_default<T: Copy + Default>(
    ptr: *const T,
    name: &str,
) -> Result<T, Error> {
    // SAFETY: forwarded from the caller's contract (a null `ptr` is an
    // empty slice).
    let s = unsafe { slice(ptr, usize::from(!ptr.is_null()), name)? };
    Ok(s.first().copied().unwrap_or_default())
}

/// Writes `value` to the out-parameter `ptr`, which must not be null.
///
/// # Safety
/// `ptr` is null or valid for a write of one `T`.
pub(crate) unsafe fn put<T>(ptr: *mut T, value: T, name: &str) -> Result<(), Error> {
    if ptr.is_null() {
        return Err(Error::null(name));
    }
    if !ptr.is_aligned() {
        return Err(Error::invalid(format_args!("{name} is misaligned")));
    }
    // SAFETY: non-null, aligned and, by the caller's contract, writable;
    // `write` does not read the possibly uninitialised old value.
    unsafe { ptr.write(value) };
    Ok(())
}

/// Writes `value` to `ptr` unless it is null (an optional out-parameter).
///
/// # Safety
/// As for [`put`].
pub(crate) unsafe fn put_opt<T>(ptr: *mut T, value: T, name: &str) -> Result<(), Error> {
    if ptr.is_null() {
        return Ok(());
    }
    // SAFETY: forwarded from the caller's contract.
    unsafe { put(ptr, value, name) }
}

/// Copies `src` into the caller's buffer `dst` of `capacity` elements and
/// its length into `len_out`; when the buffer is too small, writes the
/// length needed and fails with [`TpStatus::BufferTooSmall`] (copying
/// nothing). The buffer may be uninitialised: it is only written.
///
/// # Safety
/// `len_out` is null or valid for a write; when `capacity > 0`, `dst` is
/// valid for writes of `capacity` elements and does not overlap `src`.
pub(crate) unsafe fn copy_out<T: Copy>(
    dst: *mut T,
    capacity: usize,
    src: &[T],
    len_out: *mut usize,
    name: &str,
) -> Result<(), Error> {
    // SAFETY: forwarded from the caller's contract.
    unsafe { put(len_out, src.len(), "the length out-parameter")? };
    if src.len() > capacity {
        return Err(Error::too_small(name, src.len(), capacity));
    }
    // SAFETY: forwarded; `copy_into` needs no more than checked here.
    unsafe { copy_into(dst, capacity, src, name) }
}

/// Copies `src` to the start of `dst` (room for `capacity` elements,
/// at least `src.len()`).
///
/// # Safety
/// When `src` is not empty, `dst` is valid for writes of `capacity`
/// elements and does not overlap `src`.
pub(crate) unsafe fn copy_into<T: Copy>(
    dst: *mut T,
    capacity: usize,
    src: &[T],
    name: &str,
) -> Result<(), Error> {
    if src.is_empty() {
        return Ok(());
    }
    if src.len() > capacity {
        return Err(Error::too_small(name, src.len(), capacity));
    }
    if dst.is_null() {
        return Err(Error::null(name));
    }
    if !dst.is_aligned() {
        return Err(Error::invalid(format_args!(
            "{name} is not aligned to {} bytes",
            align_of::<T>()
        )));
    }
    // SAFETY: `dst` is non-null, aligned and, by the caller's contract,
    // writable for `capacity >= src.len()` elements that do not overlap
    // `src`.
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let status = call(|| panic!("boom"));
        assert_eq!(status, TpStatus::Panic);
        // SAFETY: the message pointer is never null and NUL-terminated.
        let msg = unsafe { std::ffi::CStr::from_ptr(crate::error::tp_last_error_message()) };
        assert_eq!(msg.to_str().unwrap(), "panic: boom");
        assert_eq!(call(|| Ok(())), TpStatus::Ok);
        // SAFETY: as above.
        let msg = unsafe { std::ffi::CStr::from_ptr(crate::error::tp_last_error_message()) };
        assert_eq!(msg.to_str().unwrap(), "");
    }
}
