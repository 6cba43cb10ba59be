//! Chunk/slice transfer over a simulated lossy link (virtual clock, loss
//! both ways, fixed one-way latency), checking the article's numbers: a 256 KiB
//! chunk takes about 8 / 4 / 2 s at 256 kbps / 512 kbps / 1 Mbps.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tickpack_testkit::rng::SplitMix64;
use tickpack_transport::chunk::{
    ResendDelay, ACK_PACKET, DEFAULT_STALL_TIMEOUT, SLICE_HEADER_LEN, SLICE_PACKET,
};
use tickpack_transport::{
    ChunkConfig, ChunkError, ChunkReceiver, ChunkSender, Conformance, TokenBucket,
    TokenBucketConfig, MAX_CHUNK_SIZE, SLICE_SIZE,
};

struct Outcome {
    chunks: Vec<Vec<u8>>,
    seconds: f64,
    slices_sent: u64,
    slices_resent: u64,
    /// Snapshot sends by colour (green, yellow, red), when paced.
    snapshots: [u64; 3],
}

/// A token bucket paying for the chunk's slices, and snapshot traffic of
/// `snapshot_bytes` per 10 ms update paid from it first.
struct Pacing {
    bucket: TokenBucket,
    snapshot_bytes: u64,
}

/// Sends `chunks` from sender to receiver, updating both at 100 Hz, losing
/// `loss_per_mille` of packets each way with `latency` one way. Returns
/// when all chunks are read (or after `limit`).
fn transfer(
    config: ChunkConfig,
    chunks: &[Vec<u8>],
    loss_per_mille: u64,
    latency: Duration,
    seed: u64,
    limit: Duration,
) -> Outcome {
    transfer_paced(config, chunks, loss_per_mille, latency, seed, limit, None)
}

fn transfer_paced(
    config: ChunkConfig,
    chunks: &[Vec<u8>],
    loss_per_mille: u64,
    latency: Duration,
    seed: u64,
    limit: Duration,
    mut pacing: Option<Pacing>,
) -> Outcome {
    let mut snapshots = [0u64; 3];
    let mut rng = SplitMix64::new(seed);
    let mut s = ChunkSender::new(config);
    let mut r = ChunkReceiver::new(MAX_CHUNK_SIZE);
    for c in chunks {
        s.send(c.clone()).unwrap();
    }
    let dt = Duration::from_millis(10);
    let mut now = Duration::ZERO;
    let mut to_receiver: Vec<(Duration, Vec<u8>)> = Vec::new();
    let mut to_sender: Vec<(Duration, Vec<u8>)> = Vec::new();
    let mut got = Vec::new();
    while got.len() < chunks.len() && now <= limit {
        if let Some(p) = pacing.as_mut().filter(|p| p.snapshot_bytes > 0) {
            let colour = match p.bucket.try_consume(p.snapshot_bytes, now) {
                Conformance::Green => 0,
                Conformance::Yellow => 1,
                Conformance::Red => 2,
            };
            snapshots[colour] += 1;
        }
        loop {
            let next = match pacing.as_mut() {
                Some(p) => s.poll_transmit_paced(now, &mut p.bucket),
                None => s.poll_transmit(now),
            };
            let Some(p) = next else { break };
            assert!(p.len() <= 1200);
            if rng.below(1000) >= loss_per_mille {
                to_receiver.push((now + latency, p));
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = to_receiver.drain(..).partition(|(t, _)| *t <= now);
        to_receiver = later;
        for (_, p) in due {
            r.handle_slice(&p).unwrap();
        }
        if let Some(c) = r.poll_chunk() {
            got.push(c);
        }
        if let Some(a) = r.poll_transmit() {
            if rng.below(1000) >= loss_per_mille {
                to_sender.push((now + latency, a));
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = to_sender.drain(..).partition(|(t, _)| *t <= now);
        to_sender = later;
        for (_, a) in due {
            s.handle_ack(&a).unwrap();
        }
        now += dt;
    }
    Outcome {
        chunks: got,
        seconds: now.as_secs_f64(),
        slices_sent: s.stats().slices_sent,
        slices_resent: s.stats().slices_resent,
        snapshots,
    }
}

fn chunk(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

fn timed(bandwidth: u64, nominal: f64) {
    let data = chunk(MAX_CHUNK_SIZE, 7);
    let config = ChunkConfig {
        bandwidth,
        ..ChunkConfig::default()
    };
    let o = transfer(
        config,
        std::slice::from_ref(&data),
        10,
        Duration::from_millis(25),
        bandwidth,
        Duration::from_secs(60),
    );
    eprintln!(
        "256 KiB at {} kbps, 1% loss: {:.2} s (seed: about {nominal} s), {} slices sent, {} resent",
        bandwidth * 8 / 1000,
        o.seconds,
        o.slices_sent,
        o.slices_resent
    );
    assert_eq!(o.chunks, [data]);
    // Bytes / rate is the floor (the article rounds 262 144 B to 256 kB);
    // packet overhead (33 B per slice, 3 %), resends and latency on top.
    let floor = MAX_CHUNK_SIZE as f64 / bandwidth as f64;
    assert!(o.seconds >= floor, "{} < {floor}", o.seconds);
    assert!(o.seconds <= floor * 1.15, "{} > {floor} * 1.15", o.seconds);
    assert!((o.seconds - nominal).abs() / nominal < 0.2);
}

#[test]
fn chunk_256k_at_256kbps_takes_about_8s() {
    timed(32_000, 8.0);
}

#[test]
fn chunk_256k_at_512kbps_takes_about_4s() {
    timed(64_000, 4.0);
}

#[test]
fn chunk_256k_at_1mbps_takes_about_2s() {
    timed(125_000, 2.0);
}

/// Sends a `len`-byte chunk at 1% loss with a sender whose own bandwidth is
/// far above the bucket's `cir`, `snapshot_bytes` of snapshots per 10 ms
/// paid from the bucket first. Checks the chunk arrives and returns the run.
fn paced(len: usize, seed: u64, cir: u64, snapshot_bytes: u64, initial_burst: bool) -> Outcome {
    let data = chunk(len, seed);
    let config = ChunkConfig {
        bandwidth: 100_000_000,
        initial_burst,
        ..ChunkConfig::default()
    };
    let o = transfer_paced(
        config,
        std::slice::from_ref(&data),
        10,
        Duration::from_millis(25),
        seed,
        Duration::from_secs(60),
        Some(Pacing {
            bucket: TokenBucket::new(TokenBucketConfig::for_rate(cir)),
            snapshot_bytes,
        }),
    );
    eprintln!(
        "{} KiB, bucket {} kbps, snapshots {} B per 10 ms, 1% loss: {:.2} s, {} slices, snapshots by colour {:?}",
        len / 1024,
        cir * 8 / 1000,
        snapshot_bytes,
        o.seconds,
        o.slices_sent,
        o.snapshots
    );
    assert_eq!(o.chunks, [data]);
    o
}

/// The chunk paced by a token bucket alone (its own bandwidth far above).
#[test]
fn token_bucket_paces_the_chunk() {
    let o = paced(MAX_CHUNK_SIZE, 3, 32_000, 0, false);
    // The committed burst (a quarter second) goes at once, the rest at the
    // committed rate.
    let floor = (MAX_CHUNK_SIZE as f64 - 8000.0) / 32_000.0;
    assert!(o.seconds >= floor, "{} < {floor}", o.seconds);
    assert!(o.seconds <= floor * 1.15, "{} > {floor} * 1.15", o.seconds);
}

/// Snapshots and a chunk share one client's bucket: the chunk gets what the
/// snapshots leave and never borrows, so snapshots stay green.
#[test]
fn chunk_uses_what_snapshots_leave() {
    // 512 kbps for the client; snapshots take 320 B every 10 ms (256 kbps).
    let o = paced(MAX_CHUNK_SIZE / 2, 4, 64_000, 320, true);
    assert_eq!(o.snapshots[1..], [0, 0], "the chunk made snapshots borrow");
    // About 32 000 B/s left for the chunk: ~4 s for 128 KiB, minus the
    // initial committed burst, plus overhead and resends.
    let floor = (MAX_CHUNK_SIZE as f64 / 2.0 - 16_000.0) / 32_000.0;
    assert!(o.seconds >= floor, "{} < {floor}", o.seconds);
    assert!(o.seconds <= floor * 1.2, "{} > {floor} * 1.2", o.seconds);
}

#[test]
fn initial_burst_is_much_faster() {
    let data = chunk(MAX_CHUNK_SIZE, 8);
    let config = ChunkConfig {
        initial_burst: true,
        ..ChunkConfig::default()
    };
    let o = transfer(
        config,
        std::slice::from_ref(&data),
        10,
        Duration::from_millis(25),
        3,
        Duration::from_secs(60),
    );
    eprintln!(
        "256 KiB with initial burst at 256 kbps, 1% loss: {:.2} s",
        o.seconds
    );
    assert_eq!(o.chunks, [data]);
    assert!(o.seconds < 1.0);
}

#[test]
fn queue_sends_chunks_in_order_over_heavy_loss() {
    let chunks: Vec<Vec<u8>> = [1, 1023, 1024, 1025, 5000, 70_000, MAX_CHUNK_SIZE]
        .iter()
        .enumerate()
        .map(|(i, &n)| chunk(n, i as u64 + 100))
        .collect();
    let config = ChunkConfig {
        bandwidth: 1_000_000,
        resend: ResendDelay::Rtt {
            fallback: Duration::from_millis(100),
        },
        ..ChunkConfig::default()
    };
    let o = transfer(
        config,
        &chunks,
        200,
        Duration::from_millis(40),
        11,
        Duration::from_secs(120),
    );
    assert_eq!(o.chunks, chunks);
    assert!(o.slices_resent > 0);
}

#[test]
fn hostile_slices_and_acks_give_typed_errors() {
    let mut r = ChunkReceiver::new(4 * SLICE_SIZE);
    assert!(matches!(
        r.handle_slice(&[SLICE_PACKET, 0]),
        Err(ChunkError::Truncated { .. })
    ));
    assert_eq!(
        r.handle_slice(&[0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(ChunkError::WrongType { found: 0 })
    );
    assert_eq!(
        r.handle_slice(&slice(0, 0, &[3, 2])),
        Err(ChunkError::SliceOutOfRange {
            slice_id: 3,
            num_slices: 3
        })
    );
    // Non-last slice with the wrong length.
    assert_eq!(
        r.handle_slice(&slice(0, 0, &[0, 2, 9])),
        Err(ChunkError::SliceSize {
            slice_id: 0,
            expected: SLICE_SIZE,
            actual: 1
        })
    );
    // 256 slices announced, limit 4 KiB.
    let mut p = slice(0, 0, &[0, 255]);
    p.resize(SLICE_HEADER_LEN + SLICE_SIZE, 1);
    assert_eq!(
        r.handle_slice(&p),
        Err(ChunkError::ChunkTooLarge {
            size: 255 * SLICE_SIZE + 1,
            limit: 4 * SLICE_SIZE
        })
    );
    // A chunk ahead of the expected one.
    assert_eq!(
        r.handle_slice(&slice(5, 0, &[0, 0, 0, 0, 1])),
        Err(ChunkError::UnexpectedChunk {
            chunk_id: 5,
            expected: 0
        })
    );
    // A valid 2-slice start, then a slice naming 3 slices.
    let mut first = slice(0, 0, &[0, 1]);
    first.resize(SLICE_HEADER_LEN + SLICE_SIZE, 1);
    r.handle_slice(&first).unwrap();
    assert_eq!(
        r.handle_slice(&slice(0, 0, &[2, 2, 0, 0, 7])),
        Err(ChunkError::NumSlicesMismatch {
            chunk_id: 0,
            expected: 2,
            actual: 3
        })
    );
    // Last slice whose announced size disagrees with its data.
    assert_eq!(
        r.handle_slice(&slice(0, 0, &[1, 1, 4, 0, 7])),
        Err(ChunkError::SliceSize {
            slice_id: 1,
            expected: 5,
            actual: 1
        })
    );
    assert!(r.is_receiving() && !r.is_ready_to_read());
    r.handle_slice(&slice(0, 0, &[1, 1, 0, 0, 7])).unwrap();
    assert!(r.is_ready_to_read());
    assert_eq!(r.poll_chunk().unwrap().len(), SLICE_SIZE + 1);

    let mut s = ChunkSender::new(ChunkConfig::default());
    assert_eq!(s.send(Vec::new()), Err(ChunkError::EmptyChunk));
    assert!(matches!(
        s.send(vec![0; MAX_CHUNK_SIZE + 1]),
        Err(ChunkError::ChunkTooLarge { .. })
    ));
    s.send(vec![0; 3 * SLICE_SIZE]).unwrap();
    let mut t = Duration::ZERO;
    let mut sent = Vec::new();
    while sent.len() < 3 {
        t += Duration::from_millis(50);
        while let Some(p) = s.poll_transmit(t) {
            sent.push(p);
        }
    }
    let tr = u64::from_le_bytes(sent[0][3..11].try_into().unwrap());
    assert_eq!(
        s.handle_ack(&ack(0, tr ^ 1, &[2, 0b111])),
        Err(ChunkError::OtherTransfer { chunk_id: 0 })
    );
    assert_eq!(
        s.handle_ack(&ack(0, tr, &[2, 0b1111])),
        Err(ChunkError::AckPadding { chunk_id: 0 })
    );
    assert_eq!(
        s.handle_ack(&ack(0, tr, &[2, 0, 0])),
        Err(ChunkError::AckPadding { chunk_id: 0 })
    );
    assert_eq!(
        s.handle_ack(&ack(0, tr, &[3, 0])),
        Err(ChunkError::NumSlicesMismatch {
            chunk_id: 0,
            expected: 3,
            actual: 4
        })
    );
    assert_eq!(
        s.handle_ack(&ack(1, tr, &[2, 0])),
        Err(ChunkError::UnexpectedChunk {
            chunk_id: 1,
            expected: 0
        })
    );
    assert!(matches!(
        s.handle_ack(&ack(0, tr, &[2])),
        Err(ChunkError::Truncated { .. })
    ));
    // Acks are a fuse: a later ack with fewer bits does not un-ack.
    s.handle_ack(&ack(0, tr, &[2, 0b011])).unwrap();
    s.handle_ack(&ack(0, tr, &[2, 0b100])).unwrap();
    assert!(!s.is_sending());
    assert_eq!(s.chunk_id(), 1);
}

/// A slice packet: type, `chunk_id`, `transfer`, then `rest`.
fn slice(chunk_id: u16, transfer: u64, rest: &[u8]) -> Vec<u8> {
    let mut p = vec![SLICE_PACKET];
    p.extend_from_slice(&chunk_id.to_le_bytes());
    p.extend_from_slice(&transfer.to_le_bytes());
    p.extend_from_slice(rest);
    p
}

/// An ack packet: type, `chunk_id`, `transfer`, then `rest`.
fn ack(chunk_id: u16, transfer: u64, rest: &[u8]) -> Vec<u8> {
    let mut p = vec![ACK_PACKET];
    p.extend_from_slice(&chunk_id.to_le_bytes());
    p.extend_from_slice(&transfer.to_le_bytes());
    p.extend_from_slice(rest);
    p
}

#[test]
fn extreme_bandwidth_and_times_do_not_overflow() {
    let mut s = ChunkSender::new(ChunkConfig {
        bandwidth: u64::MAX,
        initial_burst: true,
        max_budget_time: Duration::MAX,
        ..ChunkConfig::default()
    });
    s.set_rtt(Duration::MAX);
    s.send(vec![1; 3000]).unwrap();
    let mut r = ChunkReceiver::new(MAX_CHUNK_SIZE);
    for now in [
        Duration::ZERO,
        Duration::MAX - Duration::from_secs(1),
        Duration::MAX,
    ] {
        while let Some(p) = s.poll_transmit(now) {
            r.handle_slice(&p).unwrap();
        }
    }
    assert_eq!(r.poll_chunk().unwrap(), vec![1; 3000]);
}

#[test]
fn lost_final_ack_is_recovered_by_re_acking_the_previous_chunk() {
    let mut s = ChunkSender::new(ChunkConfig::default());
    let mut r = ChunkReceiver::new(MAX_CHUNK_SIZE);
    s.send(vec![42]).unwrap();
    let ms = Duration::from_millis;
    assert_eq!(s.poll_transmit(ms(0)), None);
    let p = s.poll_transmit(ms(10)).unwrap();
    r.handle_slice(&p).unwrap();
    assert_eq!(r.poll_chunk().unwrap(), vec![42]);
    // The ack (sent after the chunk was read) is lost.
    assert!(r.poll_transmit().is_some());
    assert_eq!(r.poll_transmit(), None);
    // Resent after the resend delay, re-acked in full.
    let mut t = 20;
    let p = loop {
        if let Some(p) = s.poll_transmit(ms(t)) {
            break p;
        }
        t += 10;
    };
    assert!(t >= 110);
    r.handle_slice(&p).unwrap();
    let a = r.poll_transmit().unwrap();
    s.handle_ack(&a).unwrap();
    assert!(!s.is_sending());
}

/// What the chunk system is for besides the connect snapshot: pushing a
/// dictionary set to a client that lacks it. Each file is one chunk
/// (`name`, a zero byte, the bytes), queued behind each other, over 10%
/// loss; the client rebuilds the set and it verifies (sha256 of every file).
#[test]
fn pushes_a_dictionary_set_to_a_client() {
    use std::collections::HashMap;
    use tickpack_sets::dictset::{DictSetError, DictionarySet};
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dictionaries/racing-lobby/1");
    let original = DictionarySet::load(&dir).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let chunks: Vec<Vec<u8>> = names
        .iter()
        .map(|n| {
            let mut c = n.as_bytes().to_vec();
            c.push(0);
            c.extend(std::fs::read(dir.join(n)).unwrap());
            c
        })
        .collect();
    let config = ChunkConfig {
        bandwidth: 125_000,
        ..ChunkConfig::default()
    };
    let o = transfer(
        config,
        &chunks,
        100,
        Duration::from_millis(25),
        11,
        Duration::from_secs(60),
    );
    let bytes: usize = chunks.iter().map(Vec::len).sum();
    eprintln!(
        "dictionary set ({} files, {bytes} B) at 1 Mbps, 10% loss: {:.2} s, {} slices, {} resent",
        chunks.len(),
        o.seconds,
        o.slices_sent,
        o.slices_resent
    );
    assert_eq!(o.chunks, chunks);
    let files: HashMap<String, Vec<u8>> = o
        .chunks
        .iter()
        .map(|c| {
            let zero = c.iter().position(|&b| b == 0).unwrap();
            (
                String::from_utf8(c[..zero].to_vec()).unwrap(),
                c[zero + 1..].to_vec(),
            )
        })
        .collect();
    let rebuilt = DictionarySet::from_manifest(&files["manifest.json"], |name| {
        files.get(name).cloned().ok_or(DictSetError::Manifest {
            message: format!("no file {name}"),
        })
    })
    .unwrap();
    assert_eq!(rebuilt.id(), original.id());
    assert_eq!(rebuilt.manifest_json(), original.manifest_json());
}

/// The spoofed slice: the last (1-byte) slice of a claimed
/// 256-slice chunk 0 (of transfer 0).
const SPOOFED_SLICE: [u8; 16] = [
    0x51, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x00, 0x00, 0xaa,
];

/// Runs a lossless transfer of `data` at 100 Hz for up to `limit`, with
/// `before` delivered to the receiver first; returns the chunk and when it
/// was read.
fn transfer_after(before: &[&[u8]], data: &[u8], limit: Duration) -> Option<(Vec<u8>, Duration)> {
    let mut s = ChunkSender::new(ChunkConfig::default());
    let mut r = ChunkReceiver::new(MAX_CHUNK_SIZE);
    for p in before {
        let _ = r.handle_slice(p);
    }
    s.send(data.to_vec()).unwrap();
    let mut t = Duration::ZERO;
    while t < limit {
        t += Duration::from_millis(10);
        r.handle_timeout(t);
        while let Some(p) = s.poll_transmit(t) {
            let _ = r.handle_slice(&p);
        }
        while let Some(a) = r.poll_transmit() {
            let _ = s.handle_ack(&a);
        }
        if let Some(c) = r.poll_chunk() {
            return Some((c, t));
        }
    }
    None
}

#[test]
fn a_spoofed_slice_before_the_transfer_delays_it_by_the_stall_timeout_at_most() {
    let data = chunk(3 * SLICE_SIZE - 100, 7);
    let (got, at) = transfer_after(&[&SPOOFED_SLICE], &data, Duration::from_secs(30))
        .expect("the real transfer never completed");
    assert_eq!(got, data);
    assert!(
        at <= DEFAULT_STALL_TIMEOUT + Duration::from_secs(1),
        "{at:?}"
    );
}

#[test]
fn a_spoofed_slice_of_a_newer_chunk_does_not_hold_the_real_one() {
    let data = chunk(2 * SLICE_SIZE, 8);
    let mut newer = SPOOFED_SLICE;
    newer[1] = 9; // chunk 9
    let (got, _) = transfer_after(&[&newer], &data, Duration::from_secs(30))
        .expect("the real transfer never completed");
    assert_eq!(got, data);
}

#[test]
fn a_spoofed_ack_for_unsent_slices_is_ignored() {
    let mut s = ChunkSender::new(ChunkConfig::default());
    s.send(vec![1; 3 * SLICE_SIZE - 10]).unwrap();
    // The transfer has started, no slice has gone out yet (no budget at
    // t = 0): the ack, given the transfer's id, claims all three
    // slices.
    assert_eq!(s.poll_transmit(Duration::ZERO), None);
    let mut t = Duration::ZERO;
    let first = loop {
        t += Duration::from_millis(1);
        if let Some(p) = s.poll_transmit(t) {
            break p;
        }
    };
    let tr = u64::from_le_bytes(first[3..11].try_into().unwrap());
    // Slice 0 went out; the ack also claims 1 and 2, never sent.
    s.handle_ack(&ack(0, tr, &[0x02, 0x06])).unwrap();
    assert!(s.is_sending());
    assert_eq!(s.stats().chunks_sent, 0);
    assert_eq!(s.chunk_id(), 0);
}

#[test]
fn a_spoofed_slice_after_an_idle_spell_cannot_make_a_read_chunk_arrive_again() {
    // Chunk 0 completes and is read; the sender never hears the final ack,
    // so its slices keep arriving. After the receiver has been idle for
    // the stall timeout, a spoofed slice of another chunk, too large to be
    // taken, restarts it without progress; the resent slices of chunk 0
    // must still be taken as late resends.
    let data = chunk(2 * SLICE_SIZE, 11);
    let mut s = ChunkSender::new(ChunkConfig::default());
    let mut r = ChunkReceiver::new(4 * SLICE_SIZE);
    s.send(data.clone()).unwrap();
    let mut slices = Vec::new();
    let mut t = Duration::ZERO;
    while slices.len() < 2 && t < Duration::from_secs(5) {
        t += Duration::from_millis(10);
        while let Some(p) = s.poll_transmit(t) {
            slices.push(p);
        }
    }
    assert_eq!(slices.len(), 2);
    for p in &slices {
        r.handle_slice(p).unwrap();
    }
    assert_eq!(r.poll_chunk(), Some(data));
    t += DEFAULT_STALL_TIMEOUT + Duration::from_millis(10);
    r.handle_timeout(t);
    let mut spoofed = SPOOFED_SLICE;
    spoofed[1] = 5; // chunk 5, of 256 slices
    assert!(matches!(
        r.handle_slice(&spoofed),
        Err(ChunkError::ChunkTooLarge { .. })
    ));
    for p in &slices {
        let _ = r.handle_slice(p);
    }
    assert_eq!(r.poll_chunk(), None, "chunk 0 was delivered twice");
}

#[test]
fn a_late_copy_of_a_chunk_read_before_the_last_is_not_delivered_again() {
    // Chunks 0 and 1, one slice each, arrive and are read. After the
    // receiver has been idle for the stall timeout, a late copy of chunk
    // 0's slice (duplicated by the network, or replayed) arrives: the
    // receiver read it two chunks ago and must not take it for a new
    // transfer.
    let mut s = ChunkSender::new(ChunkConfig::default());
    let mut r = ChunkReceiver::new(4 * SLICE_SIZE);
    let mut t = Duration::ZERO;
    let mut first = None;
    for k in 0..2u64 {
        let data = chunk(100, 20 + k);
        s.send(data.clone()).unwrap();
        let mut got = None;
        while got.is_none() && t < Duration::from_secs(5) {
            t += Duration::from_millis(10);
            r.handle_timeout(t);
            while let Some(p) = s.poll_transmit(t) {
                first.get_or_insert_with(|| p.clone());
                r.handle_slice(&p).unwrap();
            }
            while let Some(a) = r.poll_transmit() {
                s.handle_ack(&a).unwrap();
            }
            got = r.poll_chunk();
        }
        assert_eq!(got, Some(data));
    }
    t += DEFAULT_STALL_TIMEOUT + Duration::from_millis(10);
    r.handle_timeout(t);
    let _ = r.handle_slice(&first.unwrap());
    assert_eq!(r.poll_chunk(), None, "chunk 0 was delivered again");
}
