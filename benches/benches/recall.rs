//! `Recall::advance` when a step moves many entities in or out of view:
//! ids 32 apart (one per chunk of the recall, the costliest layout), all
//! leaving view in one step, then all coming back. A step's cost should
//! grow with the entities it moves, not with their square.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tickpack::{Baseline, Limits, Primitive, Recall, Schema, Section, Snapshot};

fn world(schema: &Schema, ids: Vec<u32>) -> Snapshot {
    let mut w = Snapshot::new(schema);
    let records = vec![7u8; ids.len()];
    if let Some(s) = w.section_mut(0) {
        *s = Section::from_parts(ids, records, 1).unwrap_or_else(|e| panic!("{e}"));
    }
    w
}

fn sparse_steps(c: &mut Criterion) {
    let schema = Schema::builder()
        .entity("e")
        .field("x", Primitive::U8, 1)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let limits = Limits::default();
    let empty = world(&schema, Vec::new());
    let mut g = c.benchmark_group("recall/sparse_ids");
    for n in [4096u32, 16384, 65536] {
        let full = world(&schema, (0..n).map(|k| 32 * k).collect());
        let base = |snapshot| Baseline {
            sequence: 0,
            snapshot,
        };
        // All leave: n entities into an empty recall.
        let r0 = Recall::keyframe(0);
        g.throughput(Throughput::Elements(u64::from(n)));
        g.bench_with_input(BenchmarkId::new("leave", n), &n, |b, _| {
            b.iter(|| black_box(r0.advance(base(&full), &empty, 1, &limits)))
        });
        // All come back: n entities out of a recall holding them.
        let r1 = r0.advance(base(&full), &empty, 1, &limits);
        g.bench_with_input(BenchmarkId::new("return", n), &n, |b, _| {
            b.iter(|| black_box(r1.advance(base(&empty), &full, 2, &limits)))
        });
    }
    g.finish();
}

criterion_group!(benches, sparse_steps);
criterion_main!(benches);
