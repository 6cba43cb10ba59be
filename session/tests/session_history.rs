//! A session whose dictionary carries a model table trained with the
//! history contexts (changed flags and element history): the server codes
//! each packet against its baseline's history and the client decodes it
//! with the history it kept for that baseline, through lost packets and
//! late acks, every applied snapshot bit for bit the server's world.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use tickpack::model::{ContextConfig, ModelStats, ModelTable};
use tickpack::{Baseline, Dictionary, Encoder, History, Primitive, Reference, Schema, Snapshot};
use tickpack_session::{Client, ClientConfig, Received, Server, ServerConfig, View};

fn schema() -> Schema {
    Schema::builder()
        .entity("clock")
        .field("time", Primitive::U32, 1)
        .entity("thing")
        .field("pos", Primitive::I32, 3)
        .field("hp", Primitive::U8, 1)
        .build()
        .unwrap()
}

/// Ticks where a moving entity keeps moving, beside a one-entity section.
fn ticks(seed: u64, n: usize) -> Vec<Snapshot> {
    let s = schema();
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut moving: Vec<bool> = (0..40).map(|i| i % 3 == 0).collect();
    let mut out: Vec<Snapshot> = Vec::new();
    for t in 0..n {
        let mut snap = out.last().cloned().unwrap_or_else(|| Snapshot::new(&s));
        let clock = (t as u32 * 50).to_le_bytes();
        snap.section_mut(0).unwrap().insert(0, &clock).unwrap();
        let sec = snap.section_mut(1).unwrap();
        for (id, m) in moving.iter_mut().enumerate() {
            if next() % 20 == 0 {
                *m = !*m;
            }
            let mut rec = sec.get(id as u32).map_or(vec![0u8; 13], <[u8]>::to_vec);
            if *m || sec.get(id as u32).is_none() {
                let v = i32::from_le_bytes(rec[0..4].try_into().unwrap()) + (next() % 9) as i32 - 4;
                rec[0..4].copy_from_slice(&v.to_le_bytes());
                rec[12] = rec[12].wrapping_add((next() % 2) as u8);
            }
            sec.insert(id as u32, &rec).unwrap();
        }
        if next() % 4 == 0 {
            sec.remove((next() % 40) as u32);
        }
        out.push(snap);
    }
    out
}

/// A dictionary whose table uses both history flags, trained on packets
/// one and two ticks back against their baselines' histories.
fn dictionary() -> Dictionary {
    let flags = ContextConfig::FLAG_CHANGED | ContextConfig::FLAG_ELEMENTS;
    let mut enc = Encoder::new(schema());
    enc.set_keep_history(true);
    enc.set_model_flags(flags);
    let mut stats = ModelStats::new(enc.model_shape().unwrap()).unwrap();
    let train = ticks(0x5eed_0021, 300);
    let mut histories: Vec<Option<History>> = Vec::new();
    for (t, snap) in train.iter().enumerate() {
        let b = t.checked_sub(1 + t % 2);
        let base = b.map(|b| Baseline {
            sequence: b as u16,
            snapshot: &train[b],
        });
        let h = b.and_then(|b| histories[b].as_ref());
        let r = Reference::from(base).with_history(h);
        enc.model_tokens(snap, t as u16, r, &mut stats).unwrap();
        histories.push(enc.history().cloned());
    }
    let table = ModelTable::from_stats(&stats).with_flags(flags).unwrap();
    Dictionary::new(5, vec![7u8; 256]).with_model(table)
}

#[test]
fn history_contexts_survive_loss_and_late_acks() {
    let dict = dictionary();
    let mut server = Server::new(
        schema(),
        ServerConfig {
            dictionary: Some(dict.clone()),
            ..ServerConfig::default()
        },
    )
    .unwrap();
    server.connect(1);
    let mut client = Client::new(
        schema(),
        ClientConfig {
            dictionaries: vec![dict],
            ..ClientConfig::default()
        },
    )
    .unwrap();
    let world = ticks(0x5eed_0022, 400);
    let (mut applied, mut deltas, mut without) = (0, 0, 0);
    // A decoder given no history: it reads model packets coded with the
    // history contexts differently.
    let mut plain = tickpack::Decoder::new(schema());
    plain.add_dictionary(&dictionary()).unwrap();
    for (t, snap) in world.iter().enumerate() {
        let seq = server.begin_tick(Arc::new(snap.clone()));
        let packet = server.send(1, &View::all()).unwrap();
        // Every seventh packet lost; acks every third tick.
        if t % 7 != 3 {
            match client.receive(&packet) {
                Received::Applied { sequence, baseline } => {
                    assert_eq!(sequence, seq);
                    if let Some(b) = baseline.and_then(|b| client.get(b).map(|s| (b, s))) {
                        let base = Baseline {
                            sequence: b.0,
                            snapshot: b.1,
                        };
                        let got = plain.decode(&packet, base).map(|(_, s)| s);
                        without += usize::from(got.as_ref() != Ok(snap));
                    }
                    assert_eq!(client.get(sequence).unwrap(), snap, "tick {t}");
                    applied += 1;
                    deltas += usize::from(baseline.is_some());
                }
                other => panic!("tick {t}: {other:?}"),
            }
        }
        if t % 3 == 0 {
            if let Some(a) = client.ack() {
                server.ack(1, a).unwrap();
            }
        }
    }
    assert!(applied > 300 && deltas > 300, "{applied} {deltas}");
    assert!(without > deltas / 2, "{without} of {deltas}");
}
