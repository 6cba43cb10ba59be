//! File I/O around the tickpack codec: [`capture`] records a server's
//! ticks to self-describing `.tpcap` files (with a writer thread) and
//! reads them back; [`dictset`] loads and saves trained dictionary sets
//! (a JSON manifest, SHA-256-checked files) and builds encoders and
//! decoders from them.
//!
//! The codec itself (`tickpack`) touches no files and starts no threads;
//! everything here reads untrusted bytes under configured limits and
//! returns typed errors.

#![forbid(unsafe_code)]

pub mod capture;
pub mod dictset;
