//! The comparison report: every scenario through tickpack and through the
//! codecs a user would pick instead, in one process, on the same packets.
//!
//! ```sh
//! cargo run --release -p tickpack-benches --bin report            # writes docs/benchmarks.md
//! cargo run --release -p tickpack-benches --bin report -- --quick # seconds; stdout + a temp dir
//! ```
//!
//! Packet `i` is tick `i` against baseline tick `i - 6` (prior `i - 12` for
//! `predict` fields). The first 80% of ticks train whatever is trained
//! (dictionaries, the Quake 3 field order and Huffman code); the packets of
//! the last 20% are measured. Every packet is decoded and compared with the
//! original; any difference exits non-zero.

#![forbid(unsafe_code)]

mod chart;
mod codes;
mod methods;
mod q3;
mod q3real;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use tickpack::Snapshot;
use tickpack_scenarios::{self as scenarios, changed_entities, Scenario, TICK_RATE};

use methods::{
    BitcodeZstd, Data, Lz4, Method, Quake3, RefPrefix, Res, Tickpack, TickpackSet, ZstdFrame,
    DISTANCE,
};

const SEED: u64 = 4;
const FULL_TICKS: usize = 3600;
const QUICK_TICKS: usize = 90;
const CLIENTS: f64 = 63.0;
/// Timed passes over the measured packets per codec (the fastest is kept)...
pub(crate) const PASSES: usize = 5;
/// ...unless the passes so far took longer than this.
const PASS_BUDGET_S: f64 = 1.0;
/// Which player's view the per-client variant follows.
const VIEWER: u32 = 0;

/// What one codec measured on one scenario.
pub(crate) struct Row {
    pub(crate) name: String,
    /// Packet bytes of each measured tick.
    pub(crate) sizes: Vec<usize>,
    pub(crate) encode_us: f64,
    pub(crate) decode_us: f64,
}

impl Row {
    pub(crate) fn mean(&self) -> f64 {
        self.sizes.iter().sum::<usize>() as f64 / self.sizes.len().max(1) as f64
    }

    fn p95(&self) -> usize {
        let mut s = self.sizes.clone();
        s.sort_unstable();
        let rank = (s.len() * 95).div_ceil(100).max(1);
        s.get(rank - 1).copied().unwrap_or(0)
    }

    fn mbps(&self) -> f64 {
        self.mean() * 8.0 * f64::from(TICK_RATE) * CLIENTS / 1e6
    }
}

/// One scenario's results.
pub(crate) struct ScenarioResult {
    pub(crate) name: &'static str,
    entities: f64,
    raw: f64,
    changed: f64,
    packets: usize,
    pub(crate) rows: Vec<Row>,
    notes: Vec<String>,
}

const TP_PLAIN: &str = "tickpack, no dictionary";
const TP_TRAINED: &str = "tickpack, trained";
const ZSTD3_DICT: &str = "zstd -3 frame + dictionary";
const ZSTD3: &str = "zstd -3 frame";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The comparison report: tickpack against the alternatives on the
/// bundled scenarios and the Quake 3 captures.
#[derive(Debug, Parser)]
#[command(name = "report")]
struct Cli {
    /// A few seconds: fewer ticks, printed, written to a temporary directory.
    #[arg(long)]
    quick: bool,
    /// Where to write `benchmarks.md` and `benchmarks.svg` [default: docs/,
    /// or a temporary directory with --quick].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Only the "Quake 3, real traffic" section, printed (nothing written).
    #[arg(long)]
    q3_only: bool,
}

/// Marks where the hand-kept measurements of `docs/benchmarks.md` begin.
const HAND_KEPT: &str = "<!-- kept by hand:";

/// Writes `md` to `path`, keeping whatever the existing file holds from the
/// [`HAND_KEPT`] marker on (the lobby, load and format measurements that are
/// not part of this report).
fn write_keeping_hand_part(path: &Path, md: &str) -> Res<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e.into()),
    };
    let mut new = md.trim_end().to_string();
    if let Some(at) = old.find(HAND_KEPT) {
        new.push_str("\n\n");
        new.push_str(&old[at..]);
    } else {
        new.push('\n');
    }
    std::fs::write(path, new)?;
    Ok(())
}

fn run() -> Res<()> {
    let Cli {
        quick,
        out,
        q3_only,
    } = Cli::parse();
    if q3_only {
        let t = Instant::now();
        print!("{}", q3real::section(quick)?);
        eprintln!("Quake 3 demos: {:.1} s", t.elapsed().as_secs_f64());
        return Ok(());
    }
    let ticks = if quick { QUICK_TICKS } else { FULL_TICKS };
    let out = out.unwrap_or_else(|| {
        if quick {
            std::env::temp_dir().join("tickpack-report-quick")
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs")
        }
    });
    let start = Instant::now();
    let dicts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dictionaries");
    let arena = scenarios::arena_shooter(SEED, ticks);
    let view = scenarios::arena_client_view(&arena, VIEWER, scenarios::VIEW_RADIUS);
    let list: Vec<(Scenario, Option<PathBuf>)> = vec![
        (
            scenarios::racing_lobby(SEED, ticks),
            Some(dicts.join("racing-lobby/1")),
        ),
        (scenarios::racing_lobby_quantized(SEED, ticks), None),
        (arena, Some(dicts.join("arena-shooter/1"))),
        (scenarios::arena_shooter_quantized(SEED, ticks), None),
        (view, None),
        (
            scenarios::cube_pile(SEED, ticks),
            Some(dicts.join("cube-pile/1")),
        ),
        (scenarios::idle(ticks), Some(dicts.join("cube-pile/1"))),
    ];
    eprintln!(
        "scenarios generated in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let mut results = Vec::new();
    for (sc, set) in &list {
        let t = Instant::now();
        let r = measure(sc, set.as_deref())?;
        eprintln!("{}: {:.1} s", sc.name, t.elapsed().as_secs_f64());
        results.push(r);
    }
    let t = Instant::now();
    let mut md = markdown(&results, ticks, quick);
    md.push_str(&q3real::section(quick)?);
    eprintln!("Quake 3 demos: {:.1} s", t.elapsed().as_secs_f64());
    std::fs::create_dir_all(&out)?;
    chart::draw(&results, &out.join("benchmarks.svg"))?;
    if !quick {
        write_keeping_hand_part(&out.join("benchmarks.md"), &md)?;
    }
    print!("{md}");
    eprintln!(
        "wrote {} ({:.1} s in all)",
        out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn measure(sc: &Scenario, set: Option<&Path>) -> Res<ScenarioResult> {
    let n = sc.ticks.len();
    let train_end = n * 4 / 5;
    let d = Data::new(&sc.schema, &sc.ticks, train_end);
    let measured: Vec<usize> = (train_end.max(2 * DISTANCE)..n).collect();
    let mut notes = Vec::new();
    let mut methods: Vec<(String, Box<dyn Method + '_>)> = Vec::new();
    methods.push((TP_PLAIN.into(), Box::new(Tickpack::plain(&sc.schema))));
    match set {
        Some(dir) => {
            let name = dir
                .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
                .unwrap_or(dir)
                .display()
                .to_string();
            methods.push((
                format!("{TP_TRAINED} (shipped set `{name}`)"),
                Box::new(TickpackSet::load(dir, &sc.schema)?),
            ));
        }
        None => match Tickpack::trained_now(&d) {
            Ok(t) => methods.push((
                format!("{TP_TRAINED} (delta dictionary, zstd trainer on the training ticks)"),
                Box::new(t),
            )),
            Err(e) => notes.push(format!("tickpack dictionary training failed: {e}")),
        },
    }
    for level in [1, 3, 19] {
        methods.push((
            format!("zstd -{level} frame"),
            Box::new(ZstdFrame::new(level, None)?),
        ));
    }
    let frame_dict = match ZstdFrame::train(&d) {
        Ok(dict) => Some(dict),
        Err(e) => {
            notes.push(format!("zstd frame dictionary training failed: {e}"));
            None
        }
    };
    if let Some(dict) = &frame_dict {
        for level in [1, 3, 19] {
            methods.push((
                format!("zstd -{level} frame + dictionary"),
                Box::new(ZstdFrame::new(level, Some(dict))?),
            ));
        }
    }
    methods.push(("lz4_flex".into(), Box::new(Lz4::new())));
    methods.push((
        "zstd -3, baseline as refPrefix".into(),
        Box::new(RefPrefix::new(3, &d.raw)?),
    ));
    methods.push(("bitcode + zstd -3".into(), Box::new(BitcodeZstd::new(3)?)));
    methods.push((
        "Quake 3 field delta + static Huffman".into(),
        Box::new(Quake3::train(&d)),
    ));

    let mut rows = timed(sc.name, &d, &measured, &mut methods)?;
    if sc.schema.is_quantized() {
        let schema = codes::code_schema(&sc.schema)?;
        let ticks = codes::code_ticks(&sc.schema, &schema, &sc.ticks)?;
        let d = Data::new(&schema, &ticks, train_end);
        let mut on_codes: Vec<(String, Box<dyn Method + '_>)> = vec![
            (
                "bitcode + zstd -3, on the integer codes".into(),
                Box::new(BitcodeZstd::new(3)?),
            ),
            (
                "Quake 3 field delta + static Huffman, on the integer codes".into(),
                Box::new(Quake3::train(&d)),
            ),
        ];
        rows.extend(timed(sc.name, &d, &measured, &mut on_codes)?);
    }
    let k = measured.len().max(1) as f64;
    let sum = |f: &dyn Fn(usize) -> usize| measured.iter().map(|&i| f(i)).sum::<usize>() as f64 / k;
    Ok(ScenarioResult {
        name: sc.name,
        entities: sum(&|i| sc.ticks[i].entity_count()),
        raw: sum(&|i| sc.ticks[i].raw_len()),
        changed: sum(&|i| changed_entities(&sc.ticks[i - DISTANCE], &sc.ticks[i])),
        packets: measured.len(),
        rows,
        notes,
    })
}

/// Encodes and decodes the `measured` ticks of `d` with every method,
/// checking each decoded tick, and times the fastest pass. The passes go
/// round the methods (every method's first pass, then every second one),
/// so that a method's passes are spread over the whole measurement and a
/// stretch of a shared machine's slowness does not fall on all of them.
/// Sizes are the first pass's: an encoder keeps state from packet to
/// packet, and in later passes it would start from what it learnt on the
/// measured ticks themselves. The warm-up encodes the tick before the
/// first measured one, so that pass continues the stream.
fn timed(
    scenario: &str,
    d: &Data<'_>,
    measured: &[usize],
    methods: &mut [(String, Box<dyn Method + '_>)],
) -> Res<Vec<Row>> {
    let mut packets: Vec<Vec<u8>> = vec![Vec::new(); measured.len()];
    // Per method: fastest encode and decode pass, seconds spent, sizes of
    // the first pass.
    let mut best = vec![(f64::INFINITY, f64::INFINITY, 0.0f64, Vec::new()); methods.len()];
    for (name, m) in methods.iter_mut() {
        // One untimed warm-up round trip, on the tick before the measured
        // ones (a training tick) where it has a baseline.
        if let Some(&i) = measured.first() {
            let i = if i > DISTANCE { i - 1 } else { i };
            m.encode(d, i, &mut packets[0])
                .map_err(|e| format!("{scenario}: {name}: warm-up: {e}"))?;
            m.decode(d, i, &packets[0])?;
        }
    }
    // Up to PASSES timed passes (fewer for slow codecs), the fastest kept:
    // the machine is shared, and the minimum is the least noisy.
    for pass in 0..PASSES {
        for ((name, m), (encode, decode, spent, sizes)) in methods.iter_mut().zip(&mut best) {
            if pass > 0 && *spent > PASS_BUDGET_S {
                continue;
            }
            let all = Instant::now();
            let t = Instant::now();
            for (p, &i) in packets.iter_mut().zip(measured) {
                m.encode(d, i, p)
                    .map_err(|e| format!("{scenario}: {name}: encoding tick {i}: {e}"))?;
            }
            *encode = encode.min(t.elapsed().as_secs_f64());
            let mut dec = 0.0;
            for (p, &i) in packets.iter().zip(measured) {
                let t = Instant::now();
                let got: Snapshot = m
                    .decode(d, i, p)
                    .map_err(|e| format!("{scenario}: {name}: decoding tick {i}: {e}"))?;
                dec += t.elapsed().as_secs_f64();
                if got != d.ticks[i] {
                    return Err(format!("{scenario}: {name}: tick {i} decoded differently").into());
                }
            }
            *decode = decode.min(dec);
            *spent += all.elapsed().as_secs_f64();
            if pass == 0 {
                *sizes = packets.iter().map(Vec::len).collect();
            }
        }
    }
    let k = measured.len().max(1) as f64;
    Ok(methods
        .iter()
        .zip(best)
        .map(|((name, _), (encode, decode, _, sizes))| Row {
            name: name.clone(),
            sizes,
            encode_us: encode * 1e6 / k,
            decode_us: decode * 1e6 / k,
        })
        .collect())
}

fn find<'r>(r: &'r ScenarioResult, prefix: &str) -> Option<&'r Row> {
    r.rows.iter().find(|x| x.name.starts_with(prefix))
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores visible (`nproc`)")
}

fn markdown(results: &[ScenarioResult], ticks: usize, quick: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# tickpack comparison report\n");
    let _ = writeln!(
        s,
        "`cargo run --release -p tickpack-benches --bin report{}` on {}. \
         Seed {SEED}, {ticks} ticks per scenario at {TICK_RATE} Hz; packet *i* = tick *i* against \
         baseline tick *i* − {DISTANCE} (prior *i* − {} for `predict` fields); the first 80% of ticks \
         train every trained codec, the packets of the last 20% are measured, each one decoded and \
         compared with the original (all round-tripped bit-exactly). Bytes are whole packets \
         (tickpack: with its header, no checksum; the others: no header of their own \
         beyond what the format needs), from the first timed pass, each codec's state carried \
         on from the last training tick. µs are per packet, one thread, the fastest of up to {PASSES} \
         timed passes, taken in turns with the other codecs' passes (the machine is shared with \
         other work; expect ±10-20% run to run). Mbit/s: mean bytes × 8 × 60 Hz × 63 clients. \
         % of raw: of the record bytes (ids not counted).\n",
        if quick { " -- --quick" } else { "" },
        machine(),
        2 * DISTANCE,
    );
    if quick {
        let _ = writeln!(
            s,
            "**Quick mode: too few ticks for meaningful numbers; a smoke test only.**\n"
        );
    }
    for r in results {
        let _ = writeln!(
            s,
            "## {}\n\n{:.0} entities, {:.0} raw record bytes, {:.1} entities changed vs the baseline \
             (mean over {} measured packets)\n",
            r.name, r.entities, r.raw, r.changed, r.packets
        );
        let _ = writeln!(
            s,
            "| codec | mean B | p95 B | % of raw | encode µs | decode µs | Mbit/s, 63 clients |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
        for row in &r.rows {
            let _ = writeln!(
                s,
                "| {} | {:.1} | {} | {:.2}% | {:.1} | {:.1} | {:.2} |",
                row.name,
                row.mean(),
                row.p95(),
                100.0 * row.mean() / r.raw.max(1.0),
                row.encode_us,
                row.decode_us,
                row.mbps()
            );
        }
        for n in &r.notes {
            let _ = writeln!(s, "\nNote: {n}");
        }
        let _ = writeln!(s);
    }
    anchor(&mut s, results);
    aims(&mut s, results);
    speed_aim(&mut s, results);
    s
}

/// Bits per changed cube of a row on the cube pile.
fn bits_per_changed(r: &ScenarioResult, row: &Row) -> f64 {
    8.0 * row.mean() / r.changed.max(1e-9)
}

fn anchor(s: &mut String, results: &[ScenarioResult]) {
    let Some(r) = results.iter().find(|r| r.name == "cube pile") else {
        return;
    };
    let _ = writeln!(
        s,
        "## Anchor: the 2015 cube-pile challenge\n\n\
         **The data set differs**: these are packets of our own cube-pile simulation (seed {SEED}, \
         same format and scene, {:.1} of 901 cubes changed per packet), not the original \
         `delta_data.bin` (about 86 changed per packet), which is no longer published. Bits per \
         changed cube is the figure that carries over between recordings; \
         `tickpack-trainer import fiedler` reproduces on the original file for anyone who has it.\n",
        r.changed
    );
    let _ = writeln!(
        s,
        "| entry | data | bytes/packet | bits per changed cube |\n|---|---|---:|---:|"
    );
    for row in &r.rows {
        if row.name.starts_with("tickpack") || row.name.starts_with("Quake") {
            let _ = writeln!(
                s,
                "| {} | ours | {:.1} | {:.1} |",
                row.name,
                row.mean(),
                bits_per_changed(r, row)
            );
        }
    }
    for (who, bytes, bits) in [
        ("Glenn Fiedler's reference (bit-packed)", "531.95", "≈ 49"),
        ("Egon Elbre (arithmetic coder)", "≈ 553", "≈ 51"),
        (
            "Fabian Giesen (context-modelled arithmetic coder)",
            "445",
            "≈ 41",
        ),
        ("Richard Maxwell (assumes no loss)", "≈ 281", "≈ 26"),
    ] {
        let _ = writeln!(s, "| {who} | 2015 file | {bytes} | {bits} |");
    }
    let _ = writeln!(s);
}

/// Issue 13's speed aim: per packet, encode + decode never slower than a
/// zstd -3 frame of the raw snapshot.
fn speed_aim(s: &mut String, results: &[ScenarioResult]) {
    let _ = writeln!(
        s,
        "## Speed against a zstd -3 frame (issue 13)\n\n\
         Encode + decode µs per packet; the aim is never slower than a zstd -3 frame of the raw \
         snapshot (no dictionary).\n\n\
         | scenario | zstd -3 frame | tickpack, no dictionary | tickpack, trained |\n|---|---:|---:|---:|"
    );
    let cell = |row: Option<&Row>, z: f64| match row {
        Some(t) => {
            let us = t.encode_us + t.decode_us;
            let verdict = if us <= z { "met" } else { "**not met**" };
            format!("{us:.1} ({:.2}x, {verdict})", us / z)
        }
        None => "-".to_string(),
    };
    for r in results {
        let Some(z) = r.rows.iter().find(|row| row.name == ZSTD3) else {
            continue;
        };
        let z = z.encode_us + z.decode_us;
        let _ = writeln!(
            s,
            "| {} | {z:.1} | {} | {} |",
            r.name,
            cell(find(r, TP_PLAIN), z),
            cell(find(r, TP_TRAINED), z)
        );
    }
    let _ = writeln!(s);
}

fn aims(s: &mut String, results: &[ScenarioResult]) {
    let _ = writeln!(
        s,
        "## Aims of issue 7\n\n\
         | scenario | tickpack trained, mean B | zstd -3 + dictionary, mean B | tickpack below zstd (aim ≥ 25%) | \
         tickpack encode+decode µs | zstd -3 + dictionary encode+decode µs |\n|---|---:|---:|---:|---:|---:|"
    );
    for r in results.iter().filter(|r| r.name != "idle") {
        let (Some(t), Some(z)) = (find(r, TP_TRAINED), find(r, ZSTD3_DICT)) else {
            continue;
        };
        let below = 100.0 * (1.0 - t.mean() / z.mean());
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} | {:.1}% {} | {:.1} | {:.1} {} |",
            r.name,
            t.mean(),
            z.mean(),
            below,
            if below >= 25.0 {
                "(met)"
            } else {
                "(**not met**)"
            },
            t.encode_us + t.decode_us,
            z.encode_us + z.decode_us,
            if t.encode_us + t.decode_us <= z.encode_us + z.decode_us {
                "(met)"
            } else {
                "(**not met**)"
            },
        );
    }
    if let Some(r) = results.iter().find(|r| r.name == "cube pile") {
        if let Some(t) = find(r, TP_TRAINED) {
            let b = bits_per_changed(r, t);
            let _ = writeln!(
                s,
                "\nCube pile, tickpack trained: {b:.1} bits per changed cube (aim ≤ 49): {}.",
                if b <= 49.0 { "met" } else { "**not met**" }
            );
        }
    }
    let _ = writeln!(s);
}
