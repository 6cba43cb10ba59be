//! Tools shared by the benches, the demo, the lobby and the report. The
//! recordings they measure are in the `tickpack-scenarios` crate.
#![forbid(unsafe_code)]

pub mod entropy;
pub mod load;
pub mod lobby;
pub mod lobby_tick;
pub mod lobby_udp;
pub mod q3;
pub mod shipped;
