//! The recorded token streams the prototypes are measured on: racing and
//! cube pile packets coded with their shipped sets (as `scene_replay`:
//! seed 4, packet `i` against tick `i - 6`, the last 20% of the ticks),
//! and Quake 3 with the trained-on-four, measured-on-the-fifth rotation.
//! Each packet keeps its model tokens and the pipeline payload the zstd
//! blocks would compress.

#![forbid(unsafe_code)]

use std::error::Error;
use std::path::{Path, PathBuf};

use tickpack::model::ModelTable;
use tickpack::{Baseline, Encoder, Reference, Snapshot};
use tickpack_scenarios::{self as scenarios, Scenario};
use tickpack_sets::dictset::{DictKind, DictionarySet};

use super::{Recorder, Token};
use crate::q3;

type Res<T> = Result<T, Box<dyn Error>>;

/// One packet: its model tokens and its pipeline payload.
#[derive(Debug, Clone)]
pub struct Packet {
    /// The model tokens, in coding order.
    pub tokens: Vec<Token>,
    /// The bytes the block coders see.
    pub payload: Vec<u8>,
}

/// Packets coded with one table.
#[derive(Debug, Clone)]
pub struct Part {
    /// The model table.
    pub table: ModelTable,
    /// The packets.
    pub packets: Vec<Packet>,
}

/// A named recording: one part per table (Quake 3 has one per rotation).
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Short name.
    pub name: String,
    /// The parts.
    pub parts: Vec<Part>,
}

impl Corpus {
    /// Every packet with its part's table.
    pub fn packets(&self) -> impl Iterator<Item = (&Part, &Packet)> + '_ {
        self.parts
            .iter()
            .flat_map(|p| p.packets.iter().map(move |k| (p, k)))
    }
}

const SEED: u64 = 4;
const DISTANCE: usize = 6;

fn dictionaries() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dictionaries")
}

/// A bundled scenario with its shipped set (`racing-lobby/1`,
/// `cube-pile/1`): the last 20% of `ticks` ticks.
pub fn scenario(name: &str, ticks: usize) -> Res<Corpus> {
    let (sc, dir): (Scenario, &str) = match name {
        "racing" => (scenarios::racing_lobby(SEED, ticks), "racing-lobby/1"),
        "cube" => (scenarios::cube_pile(SEED, ticks), "cube-pile/1"),
        other => return Err(format!("no shipped set for {other}").into()),
    };
    let set = DictionarySet::load(dictionaries().join(dir))?;
    set.fits(&sc.schema)?;
    let dict = set
        .dictionary(DictKind::Delta)
        .ok_or("the set has no delta dictionary")?;
    let table = dict.model().ok_or("the set has no model")?.clone();
    let predicts = set.schema().predicts();
    let mut enc = set.encoder(tickpack::DEFAULT_LEVEL)?;
    let enc = &mut enc;
    let n = sc.ticks.len();
    let mut packets = Vec::new();
    for i in (n * 4 / 5).max(2 * DISTANCE)..n {
        let at = |t: usize| Baseline {
            sequence: (t & 0xffff) as u16,
            snapshot: &sc.ticks[t],
        };
        let r = Reference::delta(at(i - DISTANCE))
            .with_prior(i.checked_sub(2 * DISTANCE).filter(|_| predicts).map(at));
        packets.push(record(enc, &sc.ticks[i], (i & 0xffff) as u16, r)?);
    }
    Ok(Corpus {
        name: name.to_owned(),
        parts: vec![Part { table, packets }],
    })
}

fn record(enc: &mut Encoder, tick: &Snapshot, seq: u16, r: Reference<'_>) -> Res<Packet> {
    let mut rec = Recorder::default();
    tickpack::internals::model_tokens(enc, tick, seq, r, &mut rec)??;
    let mut payload = Vec::new();
    enc.payload(tick, seq, r, &mut payload)?;
    Ok(Packet {
        tokens: rec.0,
        payload,
    })
}

/// Quake 3: per demo (the first `max` snapshots of each), a table trained
/// on the other four and the demo's delta packets; `None` without the
/// demos.
pub fn quake3(max: usize) -> Res<Option<Corpus>> {
    let Some(dir) = q3::data_dir() else {
        return Ok(None);
    };
    let demos = q3::read_demos(&dir, max)?;
    let mut parts = Vec::new();
    for (k, d) in demos.iter().enumerate() {
        let table = q3::train_model(&d.schema, &q3::others(&demos, k))?;
        let mut enc = Encoder::new(d.schema.clone());
        let mut recalls = q3::Recalls::new();
        let mut packets = Vec::new();
        for i in 0..d.ticks.len() {
            let recall = recalls.step(d, i);
            if q3::baseline(d, i).is_some() {
                let r = q3::reference(d, i, recall.as_ref());
                packets.push(record(&mut enc, &d.ticks[i], d.sequences[i], r)?);
            }
        }
        parts.push(Part { table, packets });
    }
    Ok(Some(Corpus {
        name: "q3".to_owned(),
        parts,
    }))
}
