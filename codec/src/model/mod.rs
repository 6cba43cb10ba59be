//! The trained static context model: a range coder whose every binary
//! decision has a fixed probability, and every value's bit-length class a
//! fixed frequency, looked up by context in a [`ModelTable`].
//!
//! The block encoder walks its logical data (masks, kinds, values) and hands
//! each token to a [`ModelSink`] with a context index it chooses:
//! [`ModelStats`] counts them for training, [`ModelTable::from_stats`]
//! quantises the counts, [`ModelEncoder`] codes them and [`ModelDecoder`]
//! reads them back with the same table.
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

mod classes;
mod coder;
mod contexts;
mod error;
mod range;
mod runs;
mod stats;
mod table;
mod value;
mod walk;

pub use coder::{ModelDecoder, ModelEncoder, ModelSink};
pub use contexts::{ContextConfig, ContextMap, RowState};
pub use error::ModelError;
pub use range::{PROB_BITS, PROB_ONE};
pub use stats::ModelStats;
pub use table::{quantise, ModelShape, ModelTable, DEFAULT_MAX_SLOTS, PRIOR};
pub use value::{class_of, VALUE_SLOTS};
pub(crate) use walk::{
    context_map, count_sections, encode_sections, encode_sections_sized, WalkSource,
};
