//! Test scaffolding shared by tickpack's tests, benches and fuzz targets
//! (not published):
//!
//! - [`rng`]: the one seeded RNG, SplitMix64;
//! - [`gen`]: seeded schema and snapshot generators for property tests;
//! - [`arb`]: the same driven by fuzzer bytes;
//! - [`link`]: a lossy link on a virtual clock;
//! - [`props`]: the fuzz properties, one cargo-fuzz target each.

// Crate-wide: no module here needs `unsafe`.
#![forbid(unsafe_code)]

pub mod arb;
pub mod gen;
pub mod link;
pub mod props;

/// The one seeded RNG (defined in `tickpack-scenarios`, which ships in the
/// trainer's normal build and so must not depend on this crate).
pub mod rng {
    pub use tickpack_scenarios::rng::SplitMix64;
}
