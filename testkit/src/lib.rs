//! Test scaffolding shared by tickpack's tests, benches and fuzz targets
//! (not published):
//!
//! - [`rng`]: the one seeded RNG, SplitMix64;
//! - [`gen`]: seeded schema and snapshot generators for property tests;
//! - [`arb`]: the same driven by fuzzer bytes;
//! - [`link`]: a lossy link on a virtual clock;
//! - [`counting`]: a counting global allocator for peak-heap tests;
//! - [`props`]: the fuzz properties, one cargo-fuzz target each.

// Denied crate-wide; only `counting` (a `GlobalAlloc`) allows it.
#![deny(unsafe_code)]

pub mod arb;
pub mod counting;
pub mod gen;
pub mod link;
pub mod props;

/// The one seeded RNG (defined in `tickpack-scenarios`, which ships in the
/// trainer's normal build and so must not depend on this crate).
pub mod rng {
    pub use tickpack_scenarios::rng::SplitMix64;
}
