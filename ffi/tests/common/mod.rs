//! Helpers for calling the C API from Rust as C would.

// Each test file uses its own subset of these helpers.
#![allow(dead_code)]

use std::ffi::CStr;
use std::ptr::null_mut;

use tickpack_ffi::schema::*;
use tickpack_ffi::snapshot::*;
use tickpack_ffi::*;

/// Calls the C API. Every call site passes live handles made by its test
/// and pointers to local buffers of the lengths it states.
macro_rules! ffi {
    ($e:expr) => {
        // SAFETY: see the macro's documentation.
        unsafe { $e }
    };
}

pub(crate) const SCHEMA: &str = r#"{"entities":[
    {"name":"car","fields":[{"name":"pos","type":"f32","len":3},{"name":"lap","type":"u8"}]},
    {"name":"flag","fields":[{"name":"team","type":"u16"}]}]}"#;
pub(crate) const CAR: usize = 13;

pub(crate) fn last_message() -> String {
    // SAFETY: the message is never null and NUL-terminated.
    unsafe { CStr::from_ptr(tp_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

#[track_caller]
pub(crate) fn ok(status: TpStatus) {
    assert_eq!(status, TpStatus::Ok, "{}", last_message());
}

#[track_caller]
pub(crate) fn fails(status: TpStatus, expected: TpStatus, message: &str) {
    assert_eq!(status, expected);
    let m = last_message();
    assert!(m.contains(message), "message {m:?} lacks {message:?}");
}

pub(crate) fn schema() -> *mut TpSchema {
    let mut s = null_mut();
    ok(ffi!(tp_schema_from_json(
        SCHEMA.as_ptr(),
        SCHEMA.len(),
        &mut s
    )));
    s
}

pub(crate) fn car(x: f32, lap: u8) -> [u8; CAR] {
    let mut r = [0u8; CAR];
    for k in 0..3 {
        r[k * 4..k * 4 + 4].copy_from_slice(&(x + k as f32).to_le_bytes());
    }
    r[12] = lap;
    r
}

pub(crate) fn snapshot_with(
    schema: *const TpSchema,
    ids: &[u32],
    cars: &[[u8; CAR]],
) -> *mut TpSnapshot {
    let mut s = null_mut();
    ok(ffi!(tp_snapshot_new(schema, &mut s)));
    ok(ffi!(tp_snapshot_set_section(
        s,
        0,
        ids.as_ptr(),
        cars.as_ptr().cast(),
        ids.len(),
        CAR
    )));
    s
}

/// The network endpoints' test lobby.
pub(crate) mod net;
