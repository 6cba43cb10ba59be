//! Would adaptive probabilities make model blocks smaller (issue 37,
//! item 5)? An ideal-cost estimate, no format change: for every packet,
//! the model tokens (`internals::model_tokens_labelled`) are priced as
//! `−log2 p` of their decisions plus their raw bits, once with the static
//! trained table (what the model block codes today) and once per variant
//! with probabilities that start from the table at every packet and adapt
//! after each decision, LZMA-style: `p += ((bit ? 0 : 4096) - p) >> s`
//! (`p` the chance of a 0, clamped to `1..=4095`), for shifts 3 to 7,
//! adapting every slot, only the bit contexts' or only the value
//! contexts' slots.
//!
//! Replays racing (`dictionaries/racing-lobby/1`), cube
//! (`dictionaries/cube-pile/1`) and arena (`dictionaries/arena-shooter/1`)
//! as `pipe_profile` does (seed 4, distance 6, histories where the set
//! reads them, the last 20% of the ticks), and the five Quake 3 demos as
//! `q3_profile` does (the first `snapshots` of each, trained on the other
//! four). Sanity check: the static estimate against the real model blocks
//! (`Entropy::Model` packets' last block bodies), and the real packets
//! (`Entropy::Best`) for scale.
//!
//! ```sh
//! cargo run --release -p tickpack-benches --example adapt_estimate -- 600 3000
//! ```
//!
//! Arguments: `[ticks] [snapshots]` (default `600 3000`; 0 snapshots
//! skips Quake 3).
#![forbid(unsafe_code)]

use std::error::Error;

use tickpack::internals::{
    model_tokens_labelled, token_decisions, LabelledSink, Token, TokenLabel,
};
use tickpack::model::{ModelSink, ModelStats, ModelTable};
use tickpack::{Baseline, Encoder, Entropy, PacketHeader, Reference, Snapshot};
use tickpack_benches::q3;
use tickpack_benches::shipped::{histories, scenario_with_set};
use tickpack_sets::dictset::DictKind;

type Res<T> = Result<T, Box<dyn Error>>;

const SEED: u64 = 4;
const DISTANCE: usize = 6;
/// The adaptation shifts tried.
const SHIFTS: [u32; 5] = [3, 4, 5, 6, 7];
/// Which slots adapt: all, bit contexts only, value contexts only.
const SCOPES: [&str; 3] = ["all", "bits", "values"];
const VARIANTS: usize = SHIFTS.len() * SCOPES.len();

/// Per-packet adaptive probabilities: one scratch copy of the table per
/// variant, the slots a packet touched restored from the table after it.
struct Adaptive<'t> {
    table: &'t [u16],
    bit_contexts: usize,
    probs: Vec<Vec<u16>>,
    touched: Vec<usize>,
    seen: Vec<bool>,
}

impl<'t> Adaptive<'t> {
    fn new(table: &'t ModelTable) -> Self {
        let probs = table.probabilities();
        Self {
            table: probs,
            bit_contexts: table.shape().bit_contexts as usize,
            probs: vec![probs.to_vec(); VARIANTS],
            touched: Vec::new(),
            seen: vec![false; probs.len()],
        }
    }

    /// Prices one decision under every variant (adding to `bits`), then
    /// adapts each variant's probability.
    fn decision(&mut self, slot: usize, bit: bool, bits: &mut [f64; VARIANTS]) {
        if !self.seen[slot] {
            self.seen[slot] = true;
            self.touched.push(slot);
        }
        let is_bit = slot < self.bit_contexts;
        for (v, sum) in bits.iter_mut().enumerate() {
            let (shift, scope) = (SHIFTS[v % SHIFTS.len()], v / SHIFTS.len());
            let p = &mut self.probs[v][slot];
            *sum += cost(*p, bit);
            let adapts = match scope {
                0 => true,
                1 => is_bit,
                _ => !is_bit,
            };
            if adapts {
                let target: i32 = if bit { 0 } else { 4096 };
                let q = i32::from(*p) + ((target - i32::from(*p)) >> shift);
                *p = q.clamp(1, 4095) as u16;
            }
        }
    }

    /// Back to the table for the next packet.
    fn reset(&mut self) {
        for &slot in &self.touched {
            self.seen[slot] = false;
            for probs in &mut self.probs {
                probs[slot] = self.table[slot];
            }
        }
        self.touched.clear();
    }
}

/// `−log2` of the chance of `bit` when `p` is the chance of a 0 in 4096.
fn cost(p: u16, bit: bool) -> f64 {
    let p0 = f64::from(p) / 4096.0;
    -(if bit { 1.0 - p0 } else { p0 }).log2()
}

/// One packet's sums.
struct Packet<'a, 't> {
    table: &'t ModelTable,
    adaptive: &'a mut Adaptive<'t>,
    /// Static cost as the sink reports it.
    reported: f64,
    /// Static cost of the decisions alone, and raw bits.
    decisions: f64,
    raw: f64,
    /// Adaptive cost of the decisions, per variant.
    variants: [f64; VARIANTS],
    /// Decisions in bit contexts and value slots.
    counts: [u64; 2],
    outside: bool,
    /// The tokens counted, for a table trained on the measured packets.
    stats: &'a mut ModelStats,
}

impl LabelledSink for Packet<'_, '_> {
    fn token(&mut self, _label: TokenLabel, token: Token, cost_bits: Option<f64>) {
        self.reported += cost_bits.unwrap_or(f64::NAN);
        match token {
            Token::Bit { ctx, bit } => self.stats.bit(ctx, bit),
            Token::Uint { ctx, v } => self.stats.uint(ctx, v),
            Token::Sint { ctx, zigzag } => self.stats.sint(ctx, zigzag),
        }
        let (table, adaptive) = (self.table.probabilities(), &mut *self.adaptive);
        let (decisions, variants, counts) =
            (&mut self.decisions, &mut self.variants, &mut self.counts);
        let raw = token_decisions(self.table, token, &mut |slot, bit| {
            *decisions += cost(table[slot], bit);
            counts[usize::from(slot >= adaptive.bit_contexts)] += 1;
            adaptive.decision(slot, bit, variants);
        });
        match raw {
            Some(n) => self.raw += f64::from(n),
            None => self.outside = true,
        }
    }
}

/// Sums over one scenario or demo (bits, except the byte counts).
#[derive(Default)]
struct Totals {
    packets: usize,
    /// Packets with a model stream (the ones estimated).
    modelled: usize,
    /// Static estimate: decisions, raw bits.
    decisions: f64,
    raw: f64,
    variants: [f64; VARIANTS],
    counts: [u64; 2],
    /// Real model-block body bytes (Entropy::Model) of the modelled packets.
    model_bytes: usize,
    /// Real packet bytes under Entropy::Best, all packets.
    best_bytes: usize,
    /// Projected Entropy::Best bytes per variant: each packet the smaller
    /// of its Best packet and its model packet less the variant's gain.
    projected: [f64; VARIANTS],
    /// Quake 3's own bytes (Quake 3 only).
    q3_bytes: f64,
    /// The static cost with a table trained on the measured packets
    /// themselves (in-sample: what retraining alone could reach), bits.
    in_sample: f64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.packets += o.packets;
        self.modelled += o.modelled;
        self.decisions += o.decisions;
        self.raw += o.raw;
        for v in 0..VARIANTS {
            self.variants[v] += o.variants[v];
            self.projected[v] += o.projected[v];
        }
        self.counts[0] += o.counts[0];
        self.counts[1] += o.counts[1];
        self.model_bytes += o.model_bytes;
        self.best_bytes += o.best_bytes;
        self.q3_bytes += o.q3_bytes;
        self.in_sample += o.in_sample;
    }
}

/// Encodes one packet with both encoders and prices its model tokens.
struct Run<'t> {
    model: Encoder,
    best: Encoder,
    table: &'t ModelTable,
    adaptive: Adaptive<'t>,
    totals: Totals,
    packet: Vec<u8>,
    stats: ModelStats,
}

impl<'t> Run<'t> {
    fn new(mut model: Encoder, mut best: Encoder, table: &'t ModelTable) -> Res<Self> {
        model.set_entropy(Entropy::Model);
        best.set_entropy(Entropy::Best);
        Ok(Self {
            model,
            best,
            table,
            adaptive: Adaptive::new(table),
            totals: Totals::default(),
            packet: Vec::new(),
            stats: ModelStats::new(table.shape())?,
        })
    }

    /// The totals, with the in-sample static cost.
    fn finish(mut self) -> Res<Totals> {
        let own = ModelTable::from_stats(&self.stats);
        self.totals.in_sample = self.stats.cost_bits(&own)?;
        Ok(self.totals)
    }

    fn step(&mut self, snapshot: &Snapshot, sequence: u16, rf: Reference<'_>) -> Res<()> {
        let t = &mut self.totals;
        t.packets += 1;
        self.best
            .encode_to_vec(snapshot, sequence, rf, &mut self.packet)?;
        let best = self.packet.len();
        t.best_bytes += best;
        self.model
            .encode_to_vec(snapshot, sequence, rf, &mut self.packet)?;
        let (h, head) = PacketHeader::parse(&self.packet)?;
        let model_body = h.model.then_some(self.packet.len() - head);
        let mut p = Packet {
            table: self.table,
            adaptive: &mut self.adaptive,
            reported: 0.0,
            decisions: 0.0,
            raw: 0.0,
            variants: [0.0; VARIANTS],
            counts: [0; 2],
            outside: false,
            stats: &mut self.stats,
        };
        let done = model_tokens_labelled(&mut self.model, snapshot, sequence, rf, &mut p)?;
        let (Some(Ok(())), Some(body), false) = (done, model_body, p.outside) else {
            // No model stream: the packet stays as it is.
            self.adaptive.reset();
            for v in 0..VARIANTS {
                t.projected[v] += best as f64;
            }
            return Ok(());
        };
        let static_bits = p.decisions + p.raw;
        if (p.reported - static_bits).abs() > 1e-6 * static_bits.max(1.0) {
            return Err(format!(
                "static cost {} but tokens priced {}",
                static_bits, p.reported
            )
            .into());
        }
        t.modelled += 1;
        t.decisions += p.decisions;
        t.raw += p.raw;
        t.counts[0] += p.counts[0];
        t.counts[1] += p.counts[1];
        t.model_bytes += body;
        let model_packet = self.packet.len() as f64;
        for v in 0..VARIANTS {
            let adaptive = p.variants[v] + p.raw;
            t.variants[v] += adaptive;
            let gain = (static_bits - adaptive) / 8.0;
            t.projected[v] += (best as f64).min(model_packet - gain);
        }
        self.adaptive.reset();
        Ok(())
    }
}

fn scenario(which: &str, n: usize) -> Res<Totals> {
    let (sc, set) = scenario_with_set(which, SEED, n)?;
    let table = set
        .dictionary(DictKind::Delta)
        .and_then(|d| d.model())
        .ok_or("the set has no delta model")?;
    let histories = histories(&set, &sc, DISTANCE);
    let predicts = set.schema().predicts();
    let at = |t: usize| Baseline {
        sequence: (t & 0xffff) as u16,
        snapshot: &sc.ticks[t],
    };
    let level = tickpack::DEFAULT_LEVEL;
    let mut run = Run::new(set.encoder(level)?, set.encoder(level)?, table)?;
    for i in (n * 4 / 5).max(2 * DISTANCE)..n {
        let rf = Reference::delta(at(i - DISTANCE))
            .with_prior(i.checked_sub(2 * DISTANCE).filter(|_| predicts).map(at))
            .with_history(histories.get(i - DISTANCE).and_then(Option::as_ref));
        run.step(&sc.ticks[i], (i & 0xffff) as u16, rf)?;
    }
    run.finish()
}

fn demo(demos: &[q3::Demo], k: usize) -> Res<Totals> {
    let d = &demos[k];
    let others = q3::others(demos, k);
    let table = q3::train_model(&d.schema, &others)?;
    let dict = q3::train(&d.schema, &others)?.with_model(table.clone());
    let encoder = || -> Res<Encoder> {
        let mut e = Encoder::new(d.schema.clone());
        e.set_dictionary(Some(&dict))?;
        Ok(e)
    };
    let mut run = Run::new(encoder()?, encoder()?, &table)?;
    let mut recalls = q3::Recalls::new();
    for i in 0..d.ticks.len() {
        let recall = recalls.step(d, i);
        let rf = q3::reference(d, i, recall.as_ref());
        run.step(&d.ticks[i], d.sequences[i], rf)?;
        run.totals.q3_bytes += d.q3_bytes[i];
    }
    run.finish()
}

fn row(name: &str, t: &Totals) {
    let m = t.modelled.max(1) as f64;
    let st = (t.decisions + t.raw) / 8.0 / m;
    let real = t.model_bytes as f64 / m;
    let pct = |x: f64| 100.0 * (x / 8.0 / m - st) / st;
    let mut s = format!(
        "{name:<14} {:>5} {:>5} {real:>8.2} {st:>8.2} {:>+6.2}% {:>5.1}%",
        t.packets,
        t.modelled,
        100.0 * (st - real) / real,
        100.0 * t.raw / (t.decisions + t.raw),
    );
    for v in 0..VARIANTS {
        if v % SHIFTS.len() == 0 {
            s.push_str(" |");
        }
        s.push_str(&format!(" {:>+6.2}", pct(t.variants[v])));
    }
    // The best shift of the "all" scope, by total bits.
    let best = (0..SHIFTS.len())
        .min_by(|&a, &b| t.variants[a].total_cmp(&t.variants[b]))
        .unwrap_or(0);
    let n = t.packets.max(1) as f64;
    let pb = t.best_bytes as f64 / n;
    let pp = t.projected[best] / n;
    s.push_str(&format!(
        " | {:>8.2} {:>8.2} (s={}) {:>+6.2}%",
        pb,
        pp,
        SHIFTS[best],
        100.0 * (pp - pb) / pb
    ));
    if t.q3_bytes > 0.0 {
        let q = t.q3_bytes / n;
        s.push_str(&format!(" | q3 {q:.2} B: {:.3}x -> {:.3}x", pb / q, pp / q));
    }
    println!("{s}");
    println!(
        "{:<14} decisions per modelled packet: {:.1} bit-context, {:.1} value-slot; static bits \
         {:.1} decisions + {:.1} raw; in-sample table {:+.2}%",
        "",
        t.counts[0] as f64 / m,
        t.counts[1] as f64 / m,
        t.decisions / m,
        t.raw / m,
        // Counted over every packet's tokens: comparable only when every
        // packet was modelled.
        if t.modelled == t.packets {
            100.0 * (t.in_sample / (t.decisions + t.raw) - 1.0)
        } else {
            f64::NAN
        },
    );
}

fn header() {
    let shifts: String = SHIFTS.iter().map(|s| format!("   s={s} ")).collect();
    println!(
        "{:<14} {:>5} {:>5} {:>8} {:>8} {:>7} {:>6} | all:{shifts}| bits only:{shifts}| \
         values only:{shifts}| {:>8} {:>8}",
        "", "pkts", "model", "real B", "static B", "est/real", "raw", "best B", "projected"
    );
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(Ok(600), |s| s.parse())?;
    let snapshots: usize = args.get(2).map_or(Ok(3000), |s| s.parse())?;
    println!(
        "Mean bytes per modelled packet: real model-block body (Entropy::Model), static \
         estimate (−log2 p + raw bits, /8), its error, the raw bits' share; then each variant's \
         adaptive estimate as % change from static; then mean real packet bytes (Entropy::Best, \
         all packets) and projected with the best all-slots shift. The second line: decisions \
         per packet, static bits, and the static cost with a table trained on the measured \
         packets themselves (in-sample; overall: summed per scenario or demo)."
    );
    header();
    let mut synthetic = Totals::default();
    for which in ["racing", "cube", "arena"] {
        let t = scenario(which, n)?;
        row(which, &t);
        synthetic.add(&t);
    }
    if snapshots == 0 {
        return Ok(());
    }
    let dir = q3::data_dir().ok_or("no q3 data")?;
    let demos = q3::read_demos(&dir, snapshots)?;
    let mut all = Totals::default();
    for k in 0..demos.len() {
        let t = demo(&demos, k)?;
        row(&demos[k].name, &t);
        all.add(&t);
    }
    row("q3 overall", &all);
    Ok(())
}
