//! Capture files (`*.tpcap`): a self-describing recording of server ticks.
#![forbid(unsafe_code)]
