//! Per-snapshot history: the encoder and the decoder derive the same
//! [`History`] of each snapshot, and tables trained with the history
//! contexts ([`ContextConfig::FLAG_CHANGED`], [`ContextConfig::FLAG_ELEMENTS`])
//! code packets against their baselines' histories that decode bit-exactly.
#![allow(clippy::unwrap_used)]

use tickpack::model::{ContextConfig, ModelStats, ModelTable};
use tickpack::{
    Baseline, Decoder, Dictionary, Encoder, Entropy, History, Primitive, Reference, Schema,
    Snapshot,
};

fn schema() -> Schema {
    Schema::builder()
        .entity("clock")
        .field("time", Primitive::U32, 1)
        .field("phase", Primitive::U8, 1)
        .entity("thing")
        .field("pos", Primitive::I32, 3)
        .field("hp", Primitive::U8, 1)
        .build()
        .unwrap()
}

/// Ticks where a moving entity keeps moving (and a resting one mostly
/// rests): what the changed-at-baseline context predicts.
fn ticks(seed: u64, n: usize) -> Vec<Snapshot> {
    let s = schema();
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut moving: Vec<bool> = (0..48).map(|i| i % 3 == 0).collect();
    let mut out: Vec<Snapshot> = Vec::new();
    for _ in 0..n {
        let mut snap = out.last().cloned().unwrap_or_else(|| Snapshot::new(&s));
        // One entity that changes every tick (a set of one kept entity is
        // implied), with a field that changes now and then.
        let t = out.len() as u32;
        let clock = [(t * 50).to_le_bytes().as_slice(), &[(t / 7) as u8]].concat();
        snap.section_mut(0).unwrap().insert(0, &clock).unwrap();
        let sec = snap.section_mut(1).unwrap();
        for (id, m) in moving.iter_mut().enumerate() {
            if next() % 20 == 0 {
                *m = !*m;
            }
            let mut rec = sec.get(id as u32).map_or(vec![0u8; 13], <[u8]>::to_vec);
            if *m || sec.get(id as u32).is_none() {
                let step = (next() % 9) as i32 - 4;
                let v = i32::from_le_bytes(rec[0..4].try_into().unwrap()) + step;
                rec[0..4].copy_from_slice(&v.to_le_bytes());
                rec[12] = rec[12].wrapping_add((next() % 2) as u8);
            }
            sec.insert(id as u32, &rec).unwrap();
        }
        if next() % 4 == 0 {
            sec.remove((next() % 48) as u32);
        }
        out.push(snap);
    }
    out
}

/// The baseline of tick `t`: 1 to 3 ticks back, none for tick 0.
fn base_of(t: usize) -> Option<usize> {
    (t > 0).then(|| t - 1 - (t % 3).min(t - 1))
}

fn reference<'a>(
    snaps: &'a [Snapshot],
    histories: &'a [Option<History>],
    t: usize,
) -> Reference<'a> {
    let base = base_of(t).map(|b| Baseline {
        sequence: b as u16,
        snapshot: &snaps[b],
    });
    Reference::from(base).with_history(base_of(t).and_then(|b| histories[b].as_ref()))
}

/// Encodes `snaps` in order, each against its baseline and that baseline's
/// history: the packets and every snapshot's history.
fn encode(enc: &mut Encoder, snaps: &[Snapshot]) -> (Vec<Vec<u8>>, Vec<Option<History>>) {
    enc.set_keep_history(true);
    let mut histories = Vec::new();
    let mut packets = Vec::new();
    for (t, snap) in snaps.iter().enumerate() {
        let p = enc
            .encode(snap, t as u16, reference(snaps, &histories, t))
            .unwrap();
        packets.push(p);
        histories.push(enc.history().cloned());
    }
    (packets, histories)
}

fn trained(flags: u16) -> Dictionary {
    let mut enc = Encoder::new(schema());
    enc.set_keep_history(true);
    enc.set_model_flags(flags);
    let mut stats = ModelStats::new(enc.model_shape().unwrap()).unwrap();
    let train = ticks(0x5eed_0011, 300);
    let mut histories: Vec<Option<History>> = Vec::new();
    for (t, snap) in train.iter().enumerate() {
        let r = reference(&train, &histories, t);
        enc.model_tokens(snap, t as u16, r, &mut stats).unwrap();
        // `model_tokens` builds the packet: the history is the snapshot's.
        histories.push(enc.history().cloned());
    }
    assert_eq!(stats.error(), None);
    let table = ModelTable::from_stats(&stats).with_flags(flags).unwrap();
    let bytes = table.to_bytes();
    let loaded = ModelTable::from_bytes(&bytes).unwrap();
    assert_eq!(loaded.flags(), flags);
    assert_eq!(
        loaded.to_bytes(),
        bytes,
        "load then save gives the same bytes"
    );
    Dictionary::new(3, vec![1u8; 64]).with_model(table)
}

#[test]
fn both_ends_derive_the_same_history() {
    let snaps = ticks(0x5eed_0012, 60);
    let mut enc = Encoder::new(schema());
    let (packets, histories) = encode(&mut enc, &snaps);
    let mut dec = Decoder::new(schema());
    dec.set_keep_history(true);
    for (t, p) in packets.iter().enumerate() {
        let (_, got) = dec.decode(p, reference(&snaps, &histories, t)).unwrap();
        assert_eq!(got, snaps[t]);
        assert_eq!(dec.history(), histories[t].as_ref(), "tick {t}");
        let of = base_of(t).and_then(|b| History::of(&schema(), &snaps[t], &snaps[b]));
        assert_eq!(of.as_ref(), histories[t].as_ref(), "tick {t}");
        // Keyframes have none; deltas one per entity.
        assert_eq!(histories[t].is_some(), t > 0);
    }
    let h = histories[5].as_ref().unwrap();
    assert!((0..h.entities(1)).any(|i| h.changed(1, i) == Some(true)));
    assert!((0..h.entities(1)).any(|i| h.changed(1, i) == Some(false)));
}

#[test]
fn history_tables_round_trip_and_shrink_the_packets() {
    let snaps = ticks(0x5eed_0013, 200);
    let (changed, elements) = (ContextConfig::FLAG_CHANGED, ContextConfig::FLAG_ELEMENTS);
    let prev = ContextConfig::FLAG_VALUE_PREV;
    let flags = [
        0,
        changed,
        elements,
        changed | elements,
        prev,
        changed | elements | prev,
    ];
    let dicts: Vec<Dictionary> = flags.into_iter().map(trained).collect();
    // The previous value needs no history; the other flags do.
    let uses: Vec<bool> = dicts.iter().map(Dictionary::uses_history).collect();
    assert_eq!(uses, [false, true, true, true, false, true]);
    let mut sizes = Vec::new();
    for dict in &dicts {
        let mut enc = Encoder::new(schema());
        enc.set_dictionary(Some(dict)).unwrap();
        enc.set_entropy(Entropy::Model);
        let (packets, histories) = encode(&mut enc, &snaps);
        let mut dec = Decoder::new(schema());
        dec.add_dictionary(dict).unwrap();
        for (t, p) in packets.iter().enumerate() {
            let (_, got) = dec.decode(p, reference(&snaps, &histories, t)).unwrap();
            assert_eq!(got, snaps[t], "tick {t}");
        }
        sizes.push(packets.iter().skip(1).map(Vec::len).sum::<usize>());
    }
    eprintln!(
        "delta bytes without flags, changed flags, element history, both, previous value, all: \
         {sizes:?}"
    );
    // The changed flags pay on this generator; whether the element
    // history does is the trainer's call (by held-out bytes).
    assert!(sizes[1] < sizes[0], "{sizes:?}");
}

#[test]
fn unknown_table_flags_are_refused() {
    let table = ModelTable::uniform(tickpack::model::ModelShape {
        bit_contexts: 2,
        value_contexts: 1,
    })
    .unwrap();
    assert!(table.clone().with_flags(0x8000).is_err());
    let mut bytes = table.to_bytes();
    bytes[6] = 8;
    assert!(ModelTable::from_bytes(&bytes).is_err());
}
