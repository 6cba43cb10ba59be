//! Replays one of the bundled scenarios as `--bin report` does (seed 4,
//! packet `i` = tick `i` against baseline `i - 6`, prior `i - 12` where a
//! set predicts; the first 80% of ticks train, the last 20% are measured)
//! and prints per configuration the mean packet bytes and the encode and
//! decode µs per packet, each the fastest of `reps` passes by the wall
//! clock (passes slowed by other work on a shared machine do not count).
//! Every packet is decoded and checked once. A harness for `perf record`
//! and for comparing two builds byte for byte: the last column is a digest
//! of every packet written.
//!
//! ```sh
//! cargo run --release -p tickpack-benches --example scene_replay -- \
//!     [racing|racing-q|arena|arena-q|view|cube|all] [reps] [configs] [ticks]
//! ```
//!
//! `configs` is a comma-separated subset of `plain` (no dictionary),
//! `trained` (a zstd dictionary trained now on the training payloads, as
//! the report's "tickpack, trained" without a shipped set), `set` (the
//! shipped dictionary set, racing and cube only), `set-zstd` (the same set
//! with [`Entropy::Zstd`]: no context model), `set-model` (the set with
//! [`Entropy::Model`]: the model stream without trying the blocks; not in
//! the default list), `zstd3` (a zstd -3 frame
//! of the raw snapshot) and `zstd3-dict` (the same frame with a 16 KiB
//! dictionary trained now on the training ticks' raw snapshots; not in the
//! default list); default all. A suffix `@N` sets the zstd level
//! (`plain@1`, `zstd3@1`).
#![forbid(unsafe_code)]

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tickpack::{Baseline, Decoder, Dictionary, Encoder, Entropy, History, Reference, Snapshot};
use tickpack_scenarios::{self as scenarios, raw, Scenario};
use tickpack_sets::dictset::DictionarySet;

type Res<T> = Result<T, Box<dyn Error>>;

/// As the report: seed, baseline distance, ticks per scenario.
const SEED: u64 = 4;
const DISTANCE: usize = 6;
const TICKS: usize = 3600;
/// The report's training samples: at most this many, evenly spaced.
const MAX_SAMPLES: usize = 400;
/// The report's size for block dictionaries trained now.
const BLOCK_DICT_SIZE: usize = 16 * 1024;

/// One codec under test: encodes tick `i`, decodes its packet.
trait Codec {
    fn encode(&mut self, ticks: &[Snapshot], i: usize, out: &mut Vec<u8>) -> Res<()>;
    fn decode(
        &mut self,
        ticks: &[Snapshot],
        i: usize,
        packet: &[u8],
        out: &mut Snapshot,
    ) -> Res<()>;
}

/// Packet `i`'s reference; `histories[t]` is tick `t`'s history against
/// tick `t - DISTANCE` (empty when the dictionaries read none).
fn reference<'a>(
    ticks: &'a [Snapshot],
    histories: &'a [Option<History>],
    i: usize,
    predicts: bool,
) -> Reference<'a> {
    let at = |t: usize| Baseline {
        sequence: (t & 0xffff) as u16,
        snapshot: &ticks[t],
    };
    Reference::delta(at(i - DISTANCE))
        .with_prior(i.checked_sub(2 * DISTANCE).filter(|_| predicts).map(at))
        .with_history(histories.get(i - DISTANCE).and_then(Option::as_ref))
}

/// tickpack: an encoder (alone, or a set's delta encoder) and a decoder
/// sharing a configuration.
struct Tp {
    enc: Enc,
    dec: Decoder,
    predicts: bool,
    /// Per tick, its history against tick `t - DISTANCE`, computed before
    /// the timed passes (the ends keep it as a by-product of coding that
    /// tick); empty when the set's model table reads none.
    histories: Vec<Option<History>>,
}

enum Enc {
    One(Box<Encoder>),
    Set(Box<Encoder>),
}

impl Codec for Tp {
    fn encode(&mut self, ticks: &[Snapshot], i: usize, out: &mut Vec<u8>) -> Res<()> {
        let rf = reference(ticks, &self.histories, i, self.predicts);
        let enc = match &mut self.enc {
            Enc::One(e) => e,
            Enc::Set(s) => s,
        };
        enc.encode_to_vec(&ticks[i], (i & 0xffff) as u16, rf, out)?;
        Ok(())
    }

    fn decode(
        &mut self,
        ticks: &[Snapshot],
        i: usize,
        packet: &[u8],
        out: &mut Snapshot,
    ) -> Res<()> {
        self.dec.decode_into(
            packet,
            reference(ticks, &self.histories, i, self.predicts),
            out,
        )?;
        Ok(())
    }
}

/// A zstd frame of the raw snapshot (the report's "zstd -3 frame").
struct Frame {
    c: zstd::bulk::Compressor<'static>,
    d: zstd::bulk::Decompressor<'static>,
    buf: Vec<u8>,
    schema: tickpack::Schema,
}

impl Codec for Frame {
    fn encode(&mut self, ticks: &[Snapshot], i: usize, out: &mut Vec<u8>) -> Res<()> {
        raw::write(&ticks[i], &mut self.buf);
        out.clear();
        out.reserve(zstd::zstd_safe::compress_bound(self.buf.len()));
        self.c.compress_to_buffer(&self.buf, out)?;
        Ok(())
    }

    fn decode(
        &mut self,
        _ticks: &[Snapshot],
        _i: usize,
        packet: &[u8],
        out: &mut Snapshot,
    ) -> Res<()> {
        let raw = self.d.decompress(packet, 1 << 24)?;
        *out = raw::parse(&self.schema, &raw)?;
        Ok(())
    }
}

/// A zstd dictionary trained now on the training ticks' raw snapshots
/// (for `zstd3-dict`: the frame with a dictionary of its own).
fn raw_dictionary(sc: &Scenario, train_end: usize) -> Res<Vec<u8>> {
    let samples: Vec<Vec<u8>> = training(train_end)
        .into_iter()
        .map(|i| {
            let mut buf = Vec::new();
            raw::write(&sc.ticks[i], &mut buf);
            buf
        })
        .collect();
    Ok(zstd::dict::from_samples(&samples, BLOCK_DICT_SIZE)?)
}

/// The training ticks that have a baseline, thinned as the report does.
fn training(train_end: usize) -> Vec<usize> {
    let all: Vec<usize> = (DISTANCE..train_end).collect();
    let step = all.len().div_ceil(MAX_SAMPLES).max(1);
    all.into_iter().step_by(step).collect()
}

/// A zstd dictionary trained now on the training packets' payloads.
fn trained(sc: &Scenario, train_end: usize, level: i32) -> Res<Tp> {
    let mut enc = Encoder::with_level(sc.schema.clone(), level);
    let mut samples = Vec::new();
    for i in training(train_end) {
        let mut p = Vec::new();
        let rf = reference(&sc.ticks, &[], i, true);
        enc.payload(&sc.ticks[i], (i & 0xffff) as u16, rf, &mut p)?;
        samples.push(p);
    }
    let bytes = zstd::dict::from_samples(&samples, BLOCK_DICT_SIZE)?;
    let dict = Dictionary::new(0x7e57_d1c7, bytes);
    enc.set_dictionary(Some(&dict))?;
    let mut dec = Decoder::new(sc.schema.clone());
    dec.add_dictionary(&dict)?;
    Ok(Tp {
        enc: Enc::One(Box::new(enc)),
        dec,
        predicts: true,
        histories: Vec::new(),
    })
}

fn set(dir: &Path, sc: &Scenario, entropy: Entropy, level: i32) -> Res<Tp> {
    let set = DictionarySet::load(dir)?;
    set.fits(&sc.schema)?;
    let mut enc = set.encoder(level)?;
    enc.set_entropy(entropy);
    let reads_history = set.uses_history();
    let histories = if reads_history {
        (0..sc.ticks.len())
            .map(|t| {
                let b = t.checked_sub(DISTANCE)?;
                History::of(&sc.schema, &sc.ticks[t], &sc.ticks[b])
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Tp {
        enc: Enc::Set(Box::new(enc)),
        dec: set.decoder()?,
        predicts: set.schema().predicts(),
        histories,
    })
}

/// Mean bytes, min encode µs and min decode µs per packet over `reps`
/// passes (every packet checked on the first).
fn measure(
    codec: &mut dyn Codec,
    ticks: &[Snapshot],
    measured: &[usize],
    reps: usize,
) -> Res<(f64, f64, f64, u64)> {
    let mut packets = vec![Vec::new(); measured.len()];
    let mut out = Snapshot::default();
    let (mut enc, mut dec) = (f64::INFINITY, f64::INFINITY);
    for rep in 0..reps.max(1) {
        let t = Instant::now();
        for (p, &i) in packets.iter_mut().zip(measured) {
            codec.encode(ticks, i, p)?;
        }
        enc = enc.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for (p, &i) in packets.iter().zip(measured) {
            codec.decode(ticks, i, p, &mut out)?;
        }
        dec = dec.min(t.elapsed().as_secs_f64());
        if rep == 0 {
            for (p, &i) in packets.iter().zip(measured) {
                codec.decode(ticks, i, p, &mut out)?;
                if out != ticks[i] {
                    return Err(format!("tick {i} decoded differently").into());
                }
            }
        }
    }
    let k = measured.len().max(1) as f64;
    let bytes = packets.iter().map(Vec::len).sum::<usize>() as f64 / k;
    Ok((bytes, enc * 1e6 / k, dec * 1e6 / k, digest(&packets)))
}

/// FNV-1a over every packet's length and bytes: equal digests mean two
/// builds wrote the same packets.
fn digest(packets: &[Vec<u8>]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for p in packets {
        for &b in (p.len() as u32).to_le_bytes().iter().chain(p) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("all", String::as_str);
    let reps: usize = args.get(2).map_or(Ok(20), |s| s.parse())?;
    let configs = args
        .get(3)
        .map_or("plain,trained,set,set-zstd,zstd3", String::as_str);
    let ticks: usize = args.get(4).map_or(Ok(TICKS), |s| s.parse())?;
    let dicts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dictionaries");
    let names: &[&str] = match which {
        "all" => &["racing", "racing-q", "arena", "arena-q", "view", "cube"],
        one => &[one][..],
    };
    for &name in names {
        let (sc, shipped) = match name {
            "racing" => (
                scenarios::racing_lobby(SEED, ticks),
                Some(dicts.join("racing-lobby/1")),
            ),
            "racing-q" => (scenarios::racing_lobby_quantized(SEED, ticks), None),
            "arena" => (
                scenarios::arena_shooter(SEED, ticks),
                Some(dicts.join("arena-shooter/1")),
            ),
            "arena-q" => (scenarios::arena_shooter_quantized(SEED, ticks), None),
            "view" => {
                let arena = scenarios::arena_shooter(SEED, ticks);
                let view = scenarios::arena_client_view(&arena, 0, scenarios::VIEW_RADIUS);
                (view, None)
            }
            "cube" => (
                scenarios::cube_pile(SEED, ticks),
                Some(dicts.join("cube-pile/1")),
            ),
            other => return Err(format!("unknown scenario {other}").into()),
        };
        let n = sc.ticks.len();
        let train_end = n * 4 / 5;
        let measured: Vec<usize> = (train_end.max(2 * DISTANCE)..n).collect();
        for label in configs.split(',') {
            let (config, level) = match label.split_once('@') {
                Some((c, l)) => (c, l.parse()?),
                None => (label, tickpack::DEFAULT_LEVEL),
            };
            let mut codec: Box<dyn Codec> = match config {
                "plain" => Box::new(Tp {
                    enc: Enc::One(Box::new(Encoder::with_level(sc.schema.clone(), level))),
                    dec: Decoder::new(sc.schema.clone()),
                    predicts: true,
                    histories: Vec::new(),
                }),
                "trained" => Box::new(trained(&sc, train_end, level)?),
                "set" | "set-zstd" | "set-model" => match &shipped {
                    Some(dir) => {
                        let entropy = match config {
                            "set" => Entropy::Best,
                            "set-zstd" => Entropy::Zstd,
                            _ => Entropy::Model,
                        };
                        Box::new(set(dir, &sc, entropy, level)?)
                    }
                    None => continue,
                },
                "zstd3" => Box::new(Frame {
                    c: zstd::bulk::Compressor::new(if label.contains('@') { level } else { 3 })?,
                    d: zstd::bulk::Decompressor::new()?,
                    buf: Vec::new(),
                    schema: sc.schema.clone(),
                }),
                "zstd3-dict" => {
                    let dict = raw_dictionary(&sc, train_end)?;
                    let level = if label.contains('@') { level } else { 3 };
                    Box::new(Frame {
                        c: zstd::bulk::Compressor::with_dictionary(level, &dict)?,
                        d: zstd::bulk::Decompressor::with_dictionary(&dict)?,
                        buf: Vec::new(),
                        schema: sc.schema.clone(),
                    })
                }
                other => return Err(format!("unknown configuration {other}").into()),
            };
            let (b, e, d, h) = measure(codec.as_mut(), &sc.ticks, &measured, reps)?;
            println!(
                "{:8} {:9} {:8.1} B  enc {:7.2} µs  dec {:7.2} µs  sum {:7.2} µs  packets {:016x}",
                name,
                label,
                b,
                e,
                d,
                e + d,
                h
            );
        }
    }
    Ok(())
}
