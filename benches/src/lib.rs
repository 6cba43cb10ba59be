//! Scenarios and tools shared by the benches, the demo and the report.
//!
//! [`scenarios`] holds deterministic recordings of game state (a 64-car
//! racing lobby, the 2015 cube-pile compression challenge scene, an idle
//! server) as [`tickpack::Snapshot`]s, one per 60 Hz tick.
#![forbid(unsafe_code)]

pub mod scenarios;

pub mod lobby;
