//! Chunk transfers fed forged slices and acks without the connection layer
//! (issue 38 §3): a forger that does not see the transfer's packets (off
//! the path) neither holds a transfer up nor ends one early.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tickpack_transport::{ChunkConfig, ChunkReceiver, ChunkSender, MAX_CHUNK_SIZE, SLICE_SIZE};

fn chunk(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// The first slice of another transfer of chunk id 0 (another sender's, so
/// shaped like a real one but not of this transfer).
fn foreign_slice(len: usize) -> Vec<u8> {
    let mut other = ChunkSender::new(ChunkConfig::default());
    other.send(chunk(len, 99)).unwrap();
    let mut t = Duration::ZERO;
    loop {
        t += Duration::from_millis(10);
        if let Some(p) = other.poll_transmit(t) {
            return p;
        }
    }
}

#[test]
fn a_forged_slice_before_the_transfer_does_not_hold_it_up() {
    let forged = foreign_slice(5 * SLICE_SIZE);
    let data = chunk(3 * SLICE_SIZE - 100, 7);
    let mut s = ChunkSender::new(ChunkConfig::default());
    let mut r = ChunkReceiver::new(MAX_CHUNK_SIZE);
    let _ = r.handle_slice(&forged);
    s.send(data.clone()).unwrap();
    let mut t = Duration::ZERO;
    let mut got = None;
    while t < Duration::from_secs(5) && got.is_none() {
        t += Duration::from_millis(10);
        r.handle_timeout(t);
        while let Some(p) = s.poll_transmit(t) {
            let _ = r.handle_slice(&p);
        }
        while let Some(a) = r.poll_transmit() {
            let _ = s.handle_ack(&a);
        }
        got = r.poll_chunk();
    }
    assert_eq!(got.as_deref(), Some(&data[..]));
    // Three slices at 32 kB/s take about 100 ms; the stall timeout is 2 s.
    assert!(t <= Duration::from_millis(500), "delivered at {t:?}");
}

#[test]
fn an_ack_of_another_transfer_does_not_end_this_one() {
    let len = 3 * SLICE_SIZE - 10;
    // A receiver completes another transfer of chunk 0 of the same size;
    // its ack is what a forger replays (or a blind forger guesses).
    let mut other = ChunkSender::new(ChunkConfig::default());
    let mut r = ChunkReceiver::new(MAX_CHUNK_SIZE);
    other.send(chunk(len, 1)).unwrap();
    let mut t = Duration::ZERO;
    let mut full_ack = None;
    while full_ack.is_none() {
        t += Duration::from_millis(10);
        while let Some(p) = other.poll_transmit(t) {
            r.handle_slice(&p).unwrap();
        }
        if r.is_ready_to_read() {
            full_ack = r.poll_transmit();
        }
    }
    // This sender's slices all go out and are lost.
    let mut s = ChunkSender::new(ChunkConfig::default());
    s.send(chunk(len, 2)).unwrap();
    let mut t = Duration::ZERO;
    let mut sent = 0;
    while sent < 3 {
        t += Duration::from_millis(10);
        while s.poll_transmit(t).is_some() {
            sent += 1;
        }
    }
    assert!(s.handle_ack(&full_ack.unwrap()).is_err());
    assert!(s.is_sending());
    assert_eq!(s.stats().chunks_sent, 0);
}
