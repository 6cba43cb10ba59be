//! Scenarios and tools shared by the benches, the demo and the report.
#![forbid(unsafe_code)]
