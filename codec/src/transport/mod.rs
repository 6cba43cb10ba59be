//! Sans-IO transport pieces from the seeds: fragmentation and reassembly,
//! chunk/slice reliable transfer, the token bucket, distance-based rates
//! and the jitter buffer. They carry bytes and know nothing of snapshots;
//! packets and time are passed in.

#![forbid(unsafe_code)]
