//! Status codes, the error type every entry point returns internally, and
//! the thread-local message of the last call.

// `#[no_mangle]` counts as unsafe code; this module exports two functions
// and holds no `unsafe` block.
#![allow(unsafe_code)]

use core::ffi::c_char;
use core::fmt;
use std::cell::RefCell;
use std::ffi::CString;

use tickpack::quant::QuantizeError;
use tickpack::{DecodeError, EncodeError, SchemaError, SnapshotError};
use tickpack_session::SessionError;
use tickpack_sets::dictset::DictSetError;

/// What a call did. Every function of the API returns one; `TP_STATUS_OK`
/// is zero, everything else is a failure whose text
/// `tp_last_error_message()` gives.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpStatus {
    /// Success.
    Ok = 0,
    /// A required pointer argument was null.
    NullPointer = 1,
    /// A handle of another kind was passed (a client where a server was
    /// expected), or a pointer that is not a live handle of this library.
    WrongHandle = 2,
    /// The output buffer is too small; the size out-parameter holds the
    /// size needed.
    BufferTooSmall = 3,
    /// An argument is out of range or malformed: text that is not UTF-8, a
    /// section index past the schema, a record size that disagrees with the
    /// schema, duplicate entity ids.
    InvalidArgument = 4,
    /// The schema text could not be parsed or is not a valid schema.
    Schema = 5,
    /// The dictionary set could not be loaded or failed verification.
    Dictionary = 6,
    /// Encoding failed (limits exceeded, bad baseline distance).
    Encode = 7,
    /// The packet could not be decoded.
    Decode = 8,
    /// The session layer refused the call (unknown client, no tick begun,
    /// malformed client message).
    Session = 9,
    /// Nothing to return yet (a client that has applied no packet).
    Empty = 10,
    /// The library panicked; the handle involved may be in an unspecified
    /// (but memory-safe) state and is best freed.
    Panic = 11,
    /// A value could not be quantised: NaN or an infinity, outside a range
    /// whose policy refuses it, or a quaternion of four zeros.
    Quantize = 12,
    /// A network endpoint refused a call: a bad configuration (MTU,
    /// client count, key), a malformed connect token, a world too large
    /// for the connect snapshot.
    Net = 13,
}

impl TpStatus {
    const ALL: [Self; 14] = [
        Self::Ok,
        Self::NullPointer,
        Self::WrongHandle,
        Self::BufferTooSmall,
        Self::InvalidArgument,
        Self::Schema,
        Self::Dictionary,
        Self::Encode,
        Self::Decode,
        Self::Session,
        Self::Empty,
        Self::Panic,
        Self::Quantize,
        Self::Net,
    ];

    /// The status's name as C sees it.
    const fn name(self) -> &'static str {
        match self {
            Self::Ok => "TP_STATUS_OK\0",
            Self::NullPointer => "TP_STATUS_NULL_POINTER\0",
            Self::WrongHandle => "TP_STATUS_WRONG_HANDLE\0",
            Self::BufferTooSmall => "TP_STATUS_BUFFER_TOO_SMALL\0",
            Self::InvalidArgument => "TP_STATUS_INVALID_ARGUMENT\0",
            Self::Schema => "TP_STATUS_SCHEMA\0",
            Self::Dictionary => "TP_STATUS_DICTIONARY\0",
            Self::Encode => "TP_STATUS_ENCODE\0",
            Self::Decode => "TP_STATUS_DECODE\0",
            Self::Session => "TP_STATUS_SESSION\0",
            Self::Empty => "TP_STATUS_EMPTY\0",
            Self::Panic => "TP_STATUS_PANIC\0",
            Self::Quantize => "TP_STATUS_QUANTIZE\0",
            Self::Net => "TP_STATUS_NET\0",
        }
    }
}

/// A failed call: its status and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    pub(crate) status: TpStatus,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(status: TpStatus, message: impl fmt::Display) -> Self {
        Self {
            status,
            message: message.to_string(),
        }
    }

    /// A null pointer where `what` was required.
    pub(crate) fn null(what: &str) -> Self {
        Self::new(TpStatus::NullPointer, format_args!("{what} is null"))
    }

    /// `needed` bytes (or elements) do not fit in `available`.
    pub(crate) fn too_small(what: &str, needed: usize, available: usize) -> Self {
        Self::new(
            TpStatus::BufferTooSmall,
            format_args!("{what} needs {needed} but has room for {available}"),
        )
    }

    pub(crate) fn invalid(message: impl fmt::Display) -> Self {
        Self::new(TpStatus::InvalidArgument, message)
    }
}

impl From<SchemaError> for Error {
    fn from(e: SchemaError) -> Self {
        Self::new(TpStatus::Schema, format_args!("schema: {e}"))
    }
}

impl From<DictSetError> for Error {
    fn from(e: DictSetError) -> Self {
        Self::new(TpStatus::Dictionary, format_args!("dictionary set: {e}"))
    }
}

impl From<QuantizeError> for Error {
    fn from(e: QuantizeError) -> Self {
        Self::new(TpStatus::Quantize, format_args!("quantize: {e}"))
    }
}

impl From<SnapshotError> for Error {
    fn from(e: SnapshotError) -> Self {
        Self::invalid(format_args!("snapshot: {e}"))
    }
}

impl From<EncodeError> for Error {
    fn from(e: EncodeError) -> Self {
        Self::new(TpStatus::Encode, format_args!("encode: {e}"))
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Self::new(TpStatus::Decode, format_args!("decode: {e}"))
    }
}

impl From<tickpack_net::NetError> for Error {
    fn from(e: tickpack_net::NetError) -> Self {
        Self::new(TpStatus::Net, format_args!("net: {e}"))
    }
}

impl From<tickpack_transport::conn::ConnError> for Error {
    fn from(e: tickpack_transport::conn::ConnError) -> Self {
        Self::new(TpStatus::Net, format_args!("connection: {e}"))
    }
}

impl From<SessionError> for Error {
    fn from(e: SessionError) -> Self {
        Self::new(TpStatus::Session, format_args!("session: {e}"))
    }
}

thread_local! {
    /// The message of the last call on this thread (`None`: it succeeded).
    static LAST: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Records the outcome of a call for [`tp_last_error_message`].
pub(crate) fn set_last(message: Option<&str>) {
    // Interior NULs cannot occur in our messages except through user text
    // echoed back (a schema field name); cut there.
    let text = message.map(|m| {
        let cut = m.split('\0').next().unwrap_or_default();
        CString::new(cut).unwrap_or_default()
    });
    // `try_with` fails only while the thread is being torn down; the
    // message is then lost, which is harmless.
    let _ = LAST.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            *l = text;
        }
    });
}

/// The message describing the last call made on this thread: empty after a
/// success, a sentence after a failure, the reason after a dropped packet
/// (`tp_client_receive`). Never null.
/// The text is owned by the library and stays valid until the next call
/// into the library on this thread; copy it to keep it.
#[no_mangle]
pub extern "C" fn tp_last_error_message() -> *const c_char {
    const EMPTY: &[u8] = b"\0";
    let empty = EMPTY.as_ptr().cast();
    // Not through `call`, which would clear the message being asked for.
    std::panic::catch_unwind(|| {
        LAST.try_with(|l| match l.try_borrow() {
            Ok(l) => l.as_ref().map_or(empty, |m| m.as_ptr()),
            Err(_) => empty,
        })
        .unwrap_or(empty)
    })
    .unwrap_or(empty)
}

/// The name of a status code as a static NUL-terminated string
/// (`"TP_STATUS_BUFFER_TOO_SMALL"`), `"TP_STATUS_UNKNOWN"` for a value that
/// is no status. Never null.
#[no_mangle]
pub extern "C" fn tp_status_name(status: i32) -> *const c_char {
    const UNKNOWN: &str = "TP_STATUS_UNKNOWN\0";
    std::panic::catch_unwind(|| {
        TpStatus::ALL
            .iter()
            .find(|s| **s as i32 == status)
            .map_or(UNKNOWN, |s| s.name())
    })
    .unwrap_or(UNKNOWN)
    .as_ptr()
    .cast()
}
