//! The entropy stage alone on recorded model tokens: the shipped coder
//! (`shipped`, format 3: `tickpack::model`) and the issue-36 prototypes,
//! encode and decode of every packet of a corpus per design, throughput in
//! coded bytes (criterion's MB/s; decisions per µs follow from the token
//! counts `--example entropy_coders` prints); beside them zstd's own decoding
//! of a dictionary-less zstd -3 frame of each packet's payload (`zstd3`,
//! throughput in payload bytes). Racing and cube pile with their shipped
//! sets (the last 720 of 3600 ticks), Quake 3 (the first 400 snapshots of
//! each demo, tables trained on the other four) when the demos are
//! present; smaller with `-- --test`. Bytes per design: `--example entropy_coders`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tickpack::model::ModelTable;
use tickpack_benches::entropy::binary::Binary;
use tickpack_benches::entropy::corpus::{self, Corpus};
use tickpack_benches::entropy::rans::Rans;
use tickpack_benches::entropy::reference::Reference;
use tickpack_benches::entropy::Coder;

const DESIGNS: [&str; 5] = [
    "shipped",
    "binary-tree",
    "range-raw",
    "rans-1x24",
    "rans-2x32",
];

fn coder(design: usize, t: &ModelTable) -> Box<dyn Coder + '_> {
    match design {
        0 => Box::new(Reference::new(t)),
        1 => Box::new(Binary::<true>::new(t)),
        2 => Box::new(Binary::<false>::new(t)),
        3 => Box::new(Rans::<1, 15>::new(t)),
        _ => Box::new(Rans::<2, 23>::new(t)),
    }
}

fn corpora() -> Vec<Corpus> {
    // The CI smoke run (`-- --test`) runs each bench once: small corpora.
    let smoke = std::env::args().any(|a| a == "--test");
    let (ticks, q3) = if smoke { (300, 60) } else { (3600, 400) };
    let mut out = vec![
        corpus::scenario("racing", ticks).unwrap_or_else(|e| panic!("racing: {e}")),
        corpus::scenario("cube", ticks).unwrap_or_else(|e| panic!("cube: {e}")),
    ];
    match corpus::quake3(q3) {
        Ok(Some(q)) => out.push(q),
        Ok(None) => eprintln!("entropy bench: no Quake 3 demos; set TICKPACK_Q3_DIR"),
        Err(e) => panic!("quake 3: {e}"),
    }
    out
}

fn coders(c: &mut Criterion) {
    for corpus in corpora() {
        let mut g = c.benchmark_group(format!("entropy/{}", corpus.name));
        for (d, name) in DESIGNS.iter().enumerate() {
            // Per part: its coder and its blocks.
            let mut parts: Vec<_> = corpus
                .parts
                .iter()
                .map(|p| {
                    let mut coder = coder(d, &p.table);
                    let blocks: Vec<Vec<u8>> = p
                        .packets
                        .iter()
                        .map(|k| {
                            let mut b = Vec::new();
                            coder.encode(&k.tokens, &mut b);
                            b
                        })
                        .collect();
                    (p, coder, blocks)
                })
                .collect();
            let bytes: usize = parts.iter().flat_map(|p| p.2.iter().map(Vec::len)).sum();
            g.throughput(Throughput::Bytes(bytes as u64));
            g.bench_function(BenchmarkId::new("encode", name), |b| {
                let mut out = Vec::new();
                b.iter(|| {
                    for (p, coder, _) in parts.iter_mut() {
                        for k in &p.packets {
                            coder.encode(black_box(&k.tokens), &mut out);
                        }
                    }
                    black_box(out.len())
                })
            });
            g.bench_function(BenchmarkId::new("decode", name), |b| {
                let mut values = Vec::new();
                b.iter(|| {
                    for (p, coder, blocks) in parts.iter_mut() {
                        for (k, block) in p.packets.iter().zip(blocks.iter()) {
                            let r =
                                coder.decode(black_box(&k.tokens), black_box(block), &mut values);
                            assert!(r.is_ok());
                        }
                    }
                    black_box(values.len())
                })
            });
        }
        zstd_decode(&mut g, &corpus);
        g.finish();
    }
}

/// zstd's decoder on a zstd -3 frame (no dictionary) of every packet's
/// payload: the stage the model block replaces.
fn zstd_decode(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    corpus: &Corpus,
) {
    let mut zc = zstd::bulk::Compressor::new(3).unwrap_or_else(|e| panic!("zstd: {e}"));
    let frames: Vec<(Vec<u8>, usize)> = corpus
        .parts
        .iter()
        .flat_map(|p| p.packets.iter())
        .map(|k| {
            let f = zc
                .compress(&k.payload)
                .unwrap_or_else(|e| panic!("zstd: {e}"));
            (f, k.payload.len())
        })
        .collect();
    let payload: usize = frames.iter().map(|f| f.1).sum();
    g.throughput(Throughput::Bytes(payload as u64));
    g.bench_function(BenchmarkId::new("decode", "zstd3"), |b| {
        let mut zd = zstd::bulk::Decompressor::new().unwrap_or_else(|e| panic!("zstd: {e}"));
        let mut out = Vec::with_capacity(1 << 16);
        b.iter(|| {
            let mut n = 0;
            for (f, _) in &frames {
                out.clear();
                n += zd
                    .decompress_to_buffer(black_box(f), &mut out)
                    .unwrap_or_else(|e| panic!("zstd: {e}"));
            }
            black_box(n)
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = coders
}
criterion_main!(benches);
