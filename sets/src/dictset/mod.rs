//! Dictionary sets: trained dictionaries and per-field choices for one game
//! version, loaded from `dictionaries/<game>/<version>/manifest.json`.
//!
//! A set is a directory with a [`Manifest`] (`manifest.json`) and up to two
//! zstd dictionaries, one for keyframes and one for delta packets. The
//! manifest also carries the schema with the delta operator the trainer
//! chose for each field: packets made with a set use that schema (so its id
//! is on the wire) and the dictionary of their kind (so its id is too).
//!
//! Loading checks everything against the manifest: each file's size and
//! SHA-256, each dictionary id against its bytes, the schema id against the
//! schema, and the set id against all of it; damage gives a typed
//! [`DictSetError`]. [`DictionarySets`] holds several sets side by side
//! (two versions of a game during a rollover) and picks the set a packet
//! needs by its dictionary id (sets sharing a schema must each have a
//! keyframe dictionary, so that their keyframes name them).
//!
//! ```no_run
//! use tickpack_sets::dictset::DictionarySet;
//! # fn world() -> tickpack::Snapshot { unimplemented!() }
//! let set = DictionarySet::load("dictionaries/cube-pile/1")?;
//! let mut enc = set.encoder(tickpack::DEFAULT_LEVEL)?;
//! let mut dec = set.decoder()?;
//! let packet = enc.encode(&world(), 0, None)?;
//! let (_, snapshot) = dec.decode(&packet, None)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The module is split by concern: [`Manifest`] and its parts in
//! `manifest`, the error in `error`, ids, hashes and names in `id`, reading
//! and writing set directories in `load`, the set and its encoder in `set`,
//! several sets side by side in `registry`.

mod error;
mod id;
mod load;
mod manifest;
mod registry;
mod set;

pub use error::DictSetError;
pub use id::{dictionary_id, set_id, sha256_hex};
pub use load::SetLimits;
pub use manifest::{
    Candidate, CaptureSource, DictKind, DictionaryEntry, FieldChoice, Manifest, Measured,
    ModelFile, Training, TransformChoice, MANIFEST_FORMAT,
};
pub use registry::DictionarySets;
pub use set::{same_layout, DictionarySet, LayoutMismatch};

/// The manifest's file name in a set's directory.
pub const MANIFEST_FILE: &str = "manifest.json";
