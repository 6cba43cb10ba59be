//! What switching a `CaptureWriter` on costs a server, next to encoding.
//!
//! Per scenario, per tick: `encode` is one client's packet (tick `i` against
//! tick `i - 6`, level 3, what the server pays per client per tick);
//! `capture` is `CaptureWriter::tick` (the world against the previous tick,
//! at the writer's default level 1, into memory); `capture thread` is what
//! `CaptureThread::tick` costs the tick thread. A server pays `capture` once
//! per tick whatever its client count. `capture-split` breaks the writer's
//! cost into the pipeline (`Encoder::payload`), zstd, and the snapshot copy.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::sync::Arc;

use tickpack::{Baseline, Encoder};
use tickpack_scenarios::{cube_pile, racing_lobby, Scenario};
use tickpack_sets::capture::{CaptureHeader, CaptureOptions, CaptureThread, CaptureWriter};

const TICKS: usize = 240;

fn bench_scenario(c: &mut Criterion, s: &Scenario) {
    let mut g = c.benchmark_group(format!("capture/{}", s.name));
    g.throughput(Throughput::Elements(TICKS as u64 - 6));
    g.bench_function("encode one client (d=6, level 3)", |b| {
        let mut enc = Encoder::new(s.schema.clone());
        let mut out = Vec::new();
        b.iter(|| {
            for i in 6..TICKS {
                let base = Baseline {
                    sequence: (i - 6) as u16,
                    snapshot: &s.ticks[i - 6],
                };
                enc.encode_to_vec(&s.ticks[i], i as u16, Some(base), &mut out)
                    .unwrap();
            }
            out.len()
        })
    });
    for level in [1, 3] {
        g.bench_function(format!("capture writer (level {level})"), |b| {
            let header = CaptureHeader::new("bench", "1", 60, s.schema.clone());
            let options = CaptureOptions {
                level,
                ..Default::default()
            };
            b.iter_batched(
                || {
                    let mut w =
                        CaptureWriter::new(Vec::with_capacity(4 << 20), &header, options).unwrap();
                    for i in 0..6 {
                        w.tick(i as u64, &s.ticks[i]).unwrap();
                    }
                    w
                },
                |mut w| {
                    for i in 6..TICKS {
                        w.tick(i as u64, &s.ticks[i]).unwrap();
                    }
                    w.bytes_written()
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.bench_function("capture thread (tick thread's share)", |b| {
        let header = CaptureHeader::new("bench", "1", 60, s.schema.clone());
        let ticks: Vec<Arc<tickpack::Snapshot>> = s.ticks.iter().cloned().map(Arc::new).collect();
        b.iter_batched(
            || CaptureThread::spawn(Vec::new(), &header, CaptureOptions::default(), TICKS).unwrap(),
            |mut w| {
                for (i, t) in ticks.iter().enumerate().skip(6) {
                    assert!(w.tick(i as u64, t.clone()));
                }
                w
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_scenario(c, &cube_pile(1, TICKS));
    bench_scenario(c, &racing_lobby(1, TICKS));
}

criterion_group!(name = capture; config = Criterion::default().sample_size(20); targets = benches);
criterion_main!(capture, splitg);

fn split(c: &mut Criterion) {
    let s = cube_pile(1, TICKS);
    let mut g = c.benchmark_group("capture-split/cube pile");
    g.bench_function("payload d=1", |b| {
        let mut enc = Encoder::with_level(s.schema.clone(), 1);
        let mut out = Vec::new();
        b.iter(|| {
            for i in 6..TICKS {
                let base = Baseline {
                    sequence: (i - 1) as u16,
                    snapshot: &s.ticks[i - 1],
                };
                enc.payload(&s.ticks[i], i as u16, Some(base), &mut out)
                    .unwrap();
            }
            out.len()
        })
    });
    g.bench_function("encode d=1 level 1", |b| {
        let mut enc = Encoder::with_level(s.schema.clone(), 1);
        let mut out = Vec::new();
        b.iter(|| {
            for i in 6..TICKS {
                let base = Baseline {
                    sequence: (i - 1) as u16,
                    snapshot: &s.ticks[i - 1],
                };
                enc.encode_to_vec(&s.ticks[i], i as u16, Some(base), &mut out)
                    .unwrap();
            }
            out.len()
        })
    });
    g.bench_function("clone_from", |b| {
        let mut prev = s.ticks[0].clone();
        b.iter(|| {
            for i in 6..TICKS {
                prev.clone_from(&s.ticks[i]);
            }
            prev.entity_count()
        })
    });
    g.finish();
}
criterion_group!(name = splitg; config = Criterion::default().sample_size(20); targets = split);
