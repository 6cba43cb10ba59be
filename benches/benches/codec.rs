//! Criterion benches of every pipeline stage and of whole packets, on one
//! snapshot of the 64-car racing lobby, one of the 901-cube pile and one of
//! the arena shooter.
//!
//! Each case is measured twice with the same closures: in group
//! `<case>/bytes` the throughput is raw record bytes per second (entity count
//! × record size), in group `<case>/snapshots` it is snapshots per second.
//! The stages are the payload (entity sets, element masks and values
//! against the snapshot 6 ticks earlier, [`Encoder::payload`] and its
//! inverse) and the zstd `blocks` of that payload; the end-to-end benches
//! are the real [`Encoder`] and [`Decoder`].
//! Every buffer is allocated before the measured closure and reused.
//!
//! ```sh
//! cargo bench -p tickpack-benches --bench codec              # measure
//! cargo bench -p tickpack-benches --bench codec -- --test    # CI smoke: run each once
//! ```

#![forbid(unsafe_code)]
// criterion_group!/criterion_main! generate undocumented pub fns.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tickpack::internals::{self, Blocks};
use tickpack::{Baseline, Decoder, Encoder, Schema, Snapshot, DEFAULT_LEVEL};
use tickpack_scenarios::{self as scenarios, changed_entities};

/// Ticks between a delta packet and its baseline, as in the 2015 challenge.
const DISTANCE: usize = 6;
/// Sequence numbers of the benched packets.
const BASE_SEQ: u16 = 100;
const CUR_SEQ: u16 = BASE_SEQ + DISTANCE as u16;
/// Decoder output cap for `Blocks::decode`: the decoder's default limit.
const MAX_DECODED: usize = 1 << 20;

/// One snapshot to bench and its baseline 6 ticks earlier.
struct Case {
    label: &'static str,
    schema: Schema,
    cur: Snapshot,
    base: Snapshot,
}

fn cases() -> Vec<Case> {
    let racing = scenarios::racing_lobby(1, 61 + DISTANCE);
    let arena = scenarios::arena_shooter(1, 301 + DISTANCE);
    // The cube pile's activity varies a lot: bench the tick with the median
    // number of changed cubes over 10 s.
    let cubes = scenarios::cube_pile(1, 600);
    let mut by_activity: Vec<(usize, usize)> = (DISTANCE..cubes.ticks.len())
        .map(|i| {
            (
                changed_entities(&cubes.ticks[i - DISTANCE], &cubes.ticks[i]),
                i,
            )
        })
        .collect();
    by_activity.sort_unstable();
    let (changed, tick) = by_activity[by_activity.len() / 2];
    eprintln!(
        "cube pile: benching tick {tick}, {changed} of 901 cubes changed vs tick {}",
        tick - DISTANCE
    );
    vec![
        Case {
            label: "racing64",
            cur: racing.ticks[60 + DISTANCE].clone(),
            base: racing.ticks[60].clone(),
            schema: racing.schema,
        },
        Case {
            label: "cubes901",
            cur: cubes.ticks[tick].clone(),
            base: cubes.ticks[tick - DISTANCE].clone(),
            schema: cubes.schema,
        },
        // Two sections; the stage benches run over the players (section 0,
        // a fixed 32), the end-to-end benches over everything, projectiles
        // spawning and despawning included.
        Case {
            label: "arena",
            cur: arena.ticks[300 + DISTANCE].clone(),
            base: arena.ticks[300].clone(),
            schema: arena.schema,
        },
    ]
}

/// Inputs and output buffers of every stage, computed once per case.
struct Stages {
    /// The delta payload: what the block stage compresses.
    payload: Vec<u8>,
    blocks: Vec<u8>,
}

impl Stages {
    fn new(case: &Case) -> Self {
        let mut enc = Encoder::new(case.schema.clone());
        let mut payload = Vec::new();
        let baseline = Some(Baseline {
            sequence: BASE_SEQ,
            snapshot: &case.base,
        });
        if let Err(e) = enc.payload(&case.cur, CUR_SEQ, baseline, &mut payload) {
            panic!("{}: payload: {e}", case.label);
        }
        let mut coder = Blocks::new(DEFAULT_LEVEL);
        let blocks = coder.encode(&payload);
        let mut back = Vec::new();
        match coder.decode(&blocks, MAX_DECODED, &mut back) {
            Ok(()) if back == payload => {}
            other => panic!("{}: blocks do not round-trip: {other:?}", case.label),
        }
        Self { payload, blocks }
    }
}

fn bench_case(c: &mut Criterion, case: &Case) {
    let s = Stages::new(case);
    let raw = case.cur.raw_len() as u64;

    // Packets for the decode benches, checked once.
    let mut enc = Encoder::new(case.schema.clone());
    let mut dec = Decoder::new(case.schema.clone());
    let baseline = Some(Baseline {
        sequence: BASE_SEQ,
        snapshot: &case.base,
    });
    let mut key_packet = Vec::new();
    let mut delta_packet = Vec::new();
    let mut decoded = Snapshot::default();
    if let Err(e) = enc.encode_to_vec(&case.cur, CUR_SEQ, None, &mut key_packet) {
        panic!("{}: keyframe: {e}", case.label);
    }
    if let Err(e) = enc.encode_to_vec(&case.cur, CUR_SEQ, baseline, &mut delta_packet) {
        panic!("{}: delta: {e}", case.label);
    }
    for (packet, base) in [(&key_packet, None), (&delta_packet, baseline)] {
        match dec.decode_into(packet, base, &mut decoded) {
            Ok(_) if decoded == case.cur => {}
            other => panic!("{}: packet does not round-trip: {other:?}", case.label),
        }
    }
    eprintln!(
        "{}: {} raw bytes, keyframe {} bytes, delta {} bytes",
        case.label,
        raw,
        key_packet.len(),
        delta_packet.len()
    );

    for (kind, throughput) in [
        ("bytes", Throughput::Bytes(raw)),
        ("snapshots", Throughput::Elements(1)),
    ] {
        let mut g = c.benchmark_group(format!("{}/{kind}", case.label));
        g.throughput(throughput);
        let mut payload = Vec::with_capacity(s.payload.len());
        g.bench_function("payload_encode", |b| {
            b.iter(|| enc.payload(black_box(&case.cur), CUR_SEQ, baseline, &mut payload))
        });
        let mut rebuilt = Snapshot::default();
        g.bench_function("payload_decode", |b| {
            b.iter(|| {
                internals::payload_decode(
                    &mut dec,
                    black_box(&s.payload),
                    Some(&case.base),
                    None,
                    &mut rebuilt,
                )
            })
        });
        let mut blocks = Blocks::new(DEFAULT_LEVEL);
        let mut encoded = Vec::with_capacity(s.blocks.len() + 64);
        g.bench_function("blocks_encode", |b| {
            b.iter(|| blocks.encode_into(black_box(&s.payload), &mut encoded))
        });
        let mut regenerated = Vec::with_capacity(s.payload.len());
        g.bench_function("blocks_decode", |b| {
            b.iter(|| blocks.decode(black_box(&s.blocks), MAX_DECODED, &mut regenerated))
        });

        let mut packet = Vec::with_capacity(key_packet.len().max(delta_packet.len()));
        g.bench_function("encode_keyframe", |b| {
            b.iter(|| enc.encode_to_vec(black_box(&case.cur), CUR_SEQ, None, &mut packet))
        });
        g.bench_function("encode_delta6", |b| {
            b.iter(|| enc.encode_to_vec(black_box(&case.cur), CUR_SEQ, baseline, &mut packet))
        });
        g.bench_function("decode_keyframe", |b| {
            b.iter(|| dec.decode_into(black_box(&key_packet), None, &mut decoded))
        });
        g.bench_function("decode_delta6", |b| {
            b.iter(|| dec.decode_into(black_box(&delta_packet), baseline, &mut decoded))
        });
        g.finish();
    }
}

fn codec(c: &mut Criterion) {
    for case in cases() {
        bench_case(c, &case);
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
