//! The boundary with C: every entry point runs its body through [`call`]
//! (which catches panics and records the message), and every handle, buffer
//! and out-parameter it receives goes through the functions here, which
//! check for null, alignment and the handle's kind before touching memory.
//!
//! A handle is an id, never reused, cast to the opaque pointer type C sees
//! (`TpSchema *`, `TpServer *`...): C never holds an address of ours. A
//! registry maps the ids of live handles to their boxed [`Object`], whose
//! variant is the handle's kind. A handle freed twice, used after its free,
//! of the wrong kind, or made up is refused by looking it up, without
//! touching memory it points to; a stale handle never reaches a newer one.

// This module dereferences the raw pointers C hands in; every `unsafe`
// block states what makes it sound.
#![allow(unsafe_code)]

use core::mem::{align_of, size_of};
use std::any::Any;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tickpack::{Decoder, Schema, Snapshot};
use tickpack_session::Client;
use tickpack_sets::dictset::DictionarySet;

use crate::codec::EncoderState;
use crate::error::{set_last, Error, TpStatus};
use crate::net_client::NetClientState;
use crate::net_server::NetServerState;
use crate::out::Out;
use crate::server::ServerState;
use crate::{
    TpClient, TpDecoder, TpDictSet, TpEncoder, TpNetClient, TpNetServer, TpSchema, TpServer,
    TpSnapshot,
};

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
    NetServer(NetServerState),
    NetClient(NetClientState),
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
            Self::NetServer(_) => "TpNetServer",
            Self::NetClient(_) => "TpNetClient",
        }
    }
}

// Handles may move between threads (the header promises it).
const _: () = {
    const fn send<T: Send>() {}
    send::<Object>();
};

/// The allocation behind a live handle, owned by [`LIVE`].
struct Slot(NonNull<Object>);

// SAFETY: a `Slot` owns its `Object` (made by `Box::into_raw`) as a `Box`
// would, and `Object` is `Send`.
unsafe impl Send for Slot {}

/// The live handles by id. Raw pointers rather than boxes, so that moving
/// them in the map asserts nothing about the borrows calls hold.
static LIVE: Mutex<BTreeMap<usize, Slot>> = Mutex::new(BTreeMap::new());

/// The next handle id, in units of [`ID_STEP`]; starts at 1 so that no
/// handle is null.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Ids are multiples of this, so they look like aligned pointers to C.
const ID_STEP: usize = 16;

fn live() -> std::sync::MutexGuard<'static, BTreeMap<usize, Slot>> {
    // Nothing panics while the lock is held; a poisoned map is still whole.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers `object` and returns its new id. An id is reused only after
/// the counter wraps (2^60 handles on 64-bit targets), and never while in
/// use.
fn register(object: Object) -> usize {
    let ptr = NonNull::from(Box::leak(Box::new(object)));
    let mut live = live();
    loop {
        let id = NEXT_ID
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(ID_STEP);
        if id != 0 && !live.contains_key(&id) {
            live.insert(id, Slot(ptr));
            return id;
        }
    }
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
kind!(TpNetServer, NetServer, NetServerState);
kind!(TpNetClient, NetClient, NetClientState);

/// Runs an entry point's body: a panic becomes [`TpStatus::Panic`], an
/// error its status, and the thread's last message is set either way.
pub(crate) fn call(body: impl FnOnce() -> Result<(), Error>) -> TpStatus {
    if IN_CALLBACK.with(Cell::get) {
        // The handle that runs the callback is borrowed mutably: no call
        // may reach it (or anything) from inside.
        set_last(Some("no call into the library from an interest callback"));
        return TpStatus::InvalidArgument;
    }
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

thread_local! {
    /// Whether this thread is inside a C callback the library called.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, a call of C code, refusing every library call it makes.
pub(crate) fn in_callback<R>(f: impl FnOnce() -> R) -> R {
    IN_CALLBACK.with(|c| c.set(true));
    let r = f();
    IN_CALLBACK.with(|c| c.set(false));
    r
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

/// The name of every handle out-parameter, for messages.
pub(crate) const HANDLE_OUT: &str = "the handle out-parameter";

/// Moves `inner` into a new handle and writes it to `out`, checked (as
/// every out-parameter) before the call did any work.
pub(crate) fn new_handle<K: Kind>(out: Out<*mut K>, inner: K::Inner) {
    let id = register(K::wrap(inner));
    // The id becomes an opaque pointer C never dereferences.
    out.write(core::ptr::without_provenance_mut::<K>(id));
}

/// The object behind live handle `ptr`, looked up by id: nothing `ptr`
/// points to is read.
fn object(ptr: *const (), name: &str) -> Result<NonNull<Object>, Error> {
    if ptr.is_null() {
        return Err(Error::null(name));
    }
    live().get(&ptr.addr()).map(|slot| slot.0).ok_or_else(|| {
        Error::new(
            TpStatus::WrongHandle,
            format_args!("{name} is not a tickpack handle (never made, or freed)"),
        )
    })
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
/// `ptr` is not freed during `'a`, and no other argument of the same call
/// borrows it mutably.
pub(crate) unsafe fn get<'a, K: Kind>(ptr: *const K) -> Result<&'a K::Inner, Error> {
    let object = object(ptr.cast(), K::NAME)?;
    // SAFETY: a live object of the registry, which only `free` releases;
    // by the caller's contract nothing frees it or borrows it mutably for
    // `'a`.
    let object = unsafe { object.as_ref() };
    K::get(object).ok_or_else(|| wrong_kind::<K>(object))
}

/// Borrows the contents of handle `ptr` mutably.
///
/// # Safety
/// `ptr` is not freed during `'a`, and no other argument of the same call
/// borrows it; [`disjoint`] checks the latter.
pub(crate) unsafe fn get_mut<'a, K: Kind>(ptr: *mut K) -> Result<&'a mut K::Inner, Error> {
    let mut object = object(ptr.cast_const().cast(), K::NAME)?;
    // SAFETY: as for `get`; by the caller's contract nothing else borrows
    // it during `'a`.
    let object = unsafe { object.as_mut() };
    if K::get(object).is_none() {
        return Err(wrong_kind::<K>(object));
    }
    K::get_mut(object).ok_or_else(|| Error::invalid("unreachable: kind checked"))
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

/// Frees handle `ptr`; null is a no-op, as for `free`. A handle already
/// freed, or never made, is refused with [`TpStatus::WrongHandle`].
///
/// # Safety
/// No other call is using `ptr`.
pub(crate) unsafe fn free<K: Kind>(ptr: *mut K) -> Result<(), Error> {
    if ptr.is_null() {
        return Ok(());
    }
    let mut live = live();
    let slot = live.get(&ptr.addr()).ok_or_else(|| {
        Error::new(
            TpStatus::WrongHandle,
            format_args!(
                "{} is not a tickpack handle (never made, or freed)",
                K::NAME
            ),
        )
    })?;
    // SAFETY: a live object of the registry; by the caller's contract no
    // call borrows it now.
    let object = unsafe { slot.0.as_ref() };
    if K::get(object).is_none() {
        return Err(wrong_kind::<K>(object));
    }
    let slot = live.remove(&ptr.addr());
    drop(live);
    if let Some(slot) = slot {
        // SAFETY: made by `Box::leak` in `register` and just removed from
        // the registry, so this is its only owner.
        drop(unsafe { Box::from_raw(slot.0.as_ptr()) });
    }
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
