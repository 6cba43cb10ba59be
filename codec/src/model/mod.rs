//! The trained static context model: a range coder whose every binary
//! decision has a fixed probability, and every value's bit-length class a
//! fixed frequency, looked up by context in a [`ModelTable`].
//!
//! The block encoder walks its logical data (masks, kinds, values) and hands
//! each token to a `ModelSink` with a context index it chooses:
//! `ModelStats` counts them for training, `ModelTable::from_stats`
//! quantises the counts, `ModelEncoder` codes them and `ModelDecoder`
//! reads them back with the same table (all feature `training`).
//!
//! ```
//! use tickpack::model::{ModelDecoder, ModelEncoder, ModelShape, ModelStats, ModelTable, ModelSink};
//!
//! let shape = ModelShape { bit_contexts: 2, value_contexts: 1 };
//! let tokens = |sink: &mut dyn ModelSink| {
//!     for i in 0..100u64 {
//!         sink.bit(0, i % 10 == 0);
//!         sink.sint(0, i % 7);
//!     }
//! };
//! let mut stats = ModelStats::new(shape)?;
//! tokens(&mut stats);
//! let table = ModelTable::from_stats(&stats);
//!
//! let mut enc = ModelEncoder::new(&table, Vec::new());
//! tokens(&mut enc);
//! let bytes = enc.finish()?;
//!
//! let mut dec = ModelDecoder::new(&table, &bytes)?;
//! for i in 0..100u64 {
//!     assert_eq!(dec.bit(0)?, i % 10 == 0);
//!     assert_eq!(dec.sint(0)?, i % 7);
//! }
//! dec.finish()?;
//! # Ok::<(), tickpack::model::ModelError>(())
//! ```
//!
//! The arithmetic and the table format are specified in FORMAT.md, section
//! "Model block".
//!
//! Without the `training` feature only what loading and attaching a
//! trained table needs is public: [`ModelTable`], [`ModelShape`],
//! [`ModelError`] and [`DEFAULT_MAX_SLOTS`]. The coder, the statistics and
//! the context map are for trainers and benches (feature `training`).

// Without `training`, the coder and statistics types stay `pub` in their
// files but are only reachable inside the crate.
#![cfg_attr(not(feature = "training"), allow(unreachable_pub, dead_code))]

mod classes;
mod coder;
mod contexts;
mod error;
mod range;
mod raw;
mod rowhist;
mod runs;
mod stats;
mod table;
mod value;
mod walk;

pub use error::ModelError;
pub use table::{ModelShape, ModelTable, DEFAULT_MAX_SLOTS};

#[cfg(feature = "training")]
pub use coder::{ModelDecoder, ModelEncoder, ModelSink};
#[cfg(not(feature = "training"))]
pub(crate) use coder::{ModelDecoder, ModelEncoder, ModelSink};
#[cfg(feature = "training")]
pub use contexts::{ContextConfig, ContextMap, RowState};
#[cfg(not(feature = "training"))]
pub(crate) use contexts::{ContextConfig, ContextMap, RowState};
#[cfg(feature = "training")]
pub use range::{PROB_BITS, PROB_ONE};
pub(crate) use rowhist::{changed_bases, UNKNOWN as UNKNOWN_HISTORY};
#[cfg(feature = "training")]
pub use stats::ModelStats;
#[cfg(not(feature = "training"))]
pub(crate) use stats::ModelStats;
#[cfg(feature = "training")]
pub use table::{quantise, PRIOR};
#[cfg(feature = "training")]
pub use value::{class_of, VALUE_SLOTS};
#[cfg(feature = "training")]
pub(crate) use walk::count_sections;
#[cfg(feature = "internals")]
pub(crate) use walk::record_sections;
pub(crate) use walk::{encode_sections, encode_sections_sized, ContextMaps, WalkSource};
// `internals::model_tokens_labelled`: the walk's model tokens, labelled
// and priced.
#[cfg(feature = "internals")]
pub(crate) use coder::RunSink;
#[cfg(feature = "internals")]
pub(crate) use value::{put_sint, put_uint, Decisions};
#[cfg(feature = "internals")]
pub(crate) use walk::{walk_sections, WalkSink};
