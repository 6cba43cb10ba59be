//! The C ABI of [`tickpack`]: opaque handles, caller-owned
//! buffers, status codes, and a header (`include/tickpack.h`) generated
//! from this crate by cbindgen.
//!
//! Every function returns a [`TpStatus`]; [`tp_last_error_message`] tells
//! what went wrong. Null pointers, handles of the wrong kind, buffers that
//! are too small and panics become status codes. Results leave through
//! out-parameters; byte outputs go into buffers the caller owns, with the
//! size written (or, when the buffer is too small, the size needed).
//!
//! The main use is the session layer: a [`TpServer`] that encodes every
//! tick for each client against the last snapshot that client acked, and
//! a [`TpClient`] that applies packets and says what to ack. The example
//! `ffi/examples/session.c` runs a server and clients over a lossy link.
//!
//! The network endpoints of `tickpack-net` ([`TpNetServer`],
//! [`TpNetClient`]) add connect tokens, authenticated connections,
//! fragments, pacing and interest over datagrams the caller's socket
//! moves; `ffi/examples/net_lobby.cpp` runs them over UDP on 127.0.0.1.
//!
//! Safety contract of every function (stated once here, as in the header):
//! pointer arguments are null or valid for the access the documentation
//! describes (`len` bytes, one value), and a handle is not used by two
//! threads at once nor freed while another thread uses it. Handles may
//! move between threads. A handle is an id looked up in a registry of live
//! handles, so one freed twice, used after its free, of the wrong kind or
//! made up gives `TP_STATUS_WRONG_HANDLE`.

// Exporting functions takes `#[no_mangle]`, which the workspace's
// `unsafe_code` lint counts as unsafe: the modules that export allow it,
// and pointers are only dereferenced through `boundary`.
#![deny(unsafe_op_in_unsafe_fn)]

mod adapter;
mod boundary;
pub mod client;
pub mod codec;
pub mod error;
pub mod net_address;
pub mod net_client;
pub mod net_event;
pub mod net_interest;
mod net_io;
pub mod net_server;
pub mod net_server_query;
mod out;
pub mod schema;
pub mod server;
pub mod snapshot;

pub use error::{tp_last_error_message, tp_status_name, TpStatus};

/// A schema: the entity types and their fields. Made by
/// `tp_schema_from_json`, `tp_schema_from_toml` or `tp_dictset_schema`;
/// freed by `tp_schema_free`.
pub struct TpSchema {
    _opaque: [u8; 0],
}

/// A verified dictionary set (schema with trained operators and zstd
/// dictionaries). Made by `tp_dictset_load`; freed by `tp_dictset_free`.
pub struct TpDictSet {
    _opaque: [u8; 0],
}

/// The state of one tick: per entity type, entity ids and their records.
/// Made by `tp_snapshot_new`; freed by `tp_snapshot_free`.
pub struct TpSnapshot {
    _opaque: [u8; 0],
}

/// Encodes snapshots into packets, reusing its buffers. Made by
/// `tp_encoder_new` or `tp_encoder_from_dictset`; freed by `tp_encoder_free`.
pub struct TpEncoder {
    _opaque: [u8; 0],
}

/// Decodes packets into snapshots. Made by `tp_decoder_new` or
/// `tp_decoder_from_dictset`; freed by `tp_decoder_free`.
pub struct TpDecoder {
    _opaque: [u8; 0],
}

/// The server side of a session: per-client history and acks. Made by
/// `tp_server_new`; freed by `tp_server_free`.
pub struct TpServer {
    _opaque: [u8; 0],
}

/// The client side of a session: applied history and the ack to send.
/// Made by `tp_client_new`; freed by `tp_client_free`.
pub struct TpClient {
    _opaque: [u8; 0],
}

/// A network server endpoint: connections, connect tokens, per-client
/// snapshots and pacing over datagrams the caller moves. Made by
/// `tp_net_server_new`; freed by `tp_net_server_free`.
pub struct TpNetServer {
    _opaque: [u8; 0],
}

/// A network client endpoint: one connection to a server, made from a
/// connect token. Made by `tp_net_client_new`; freed by
/// `tp_net_client_free`.
pub struct TpNetClient {
    _opaque: [u8; 0],
}
