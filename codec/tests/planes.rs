//! The byte-plane row mode (FORMAT.md 4.7): which sections the encoder
//! sends as planes, that both modes come back bit for bit in one packet,
//! the fallback to masks and values when planes would pass the payload
//! limit, and that a section predicted as planes from its previous packets
//! gets the bytes the full estimate gives.
#![allow(clippy::unwrap_used)]

use tickpack::model::ModelStats;
use tickpack::{Baseline, Decoder, Encoder, Entropy, Limits, Primitive, Schema, Snapshot};

/// Section 0: eight `f32` per entity, every one changing every tick;
/// section 1: eight `u32` of which one changes in one entity.
fn schema() -> Schema {
    Schema::builder()
        .entity("dense")
        .field("v", Primitive::F32, 8)
        .entity("sparse")
        .field("w", Primitive::U32, 8)
        .build()
        .unwrap()
}

fn tick(s: &Schema, t: u32) -> Snapshot {
    let mut snap = Snapshot::new(s);
    for id in 0..40u32 {
        let rec: Vec<u8> = (0..8u32)
            .flat_map(|k| {
                let x = (id * 8 + k) as f32 * 0.37 + t as f32 * (0.011 + k as f32 * 0.003);
                x.to_le_bytes()
            })
            .collect();
        snap.section_mut(0).unwrap().insert(id, &rec).unwrap();
        let rec: Vec<u8> = (0..8u32)
            .flat_map(|k| {
                let w = if k == 3 && id == 5 { t } else { id * 100 + k };
                w.to_le_bytes()
            })
            .collect();
        snap.section_mut(1).unwrap().insert(id * 3, &rec).unwrap();
    }
    snap
}

/// The section flags that start at bit `at` of the payload's first byte,
/// its first side byte (FORMAT.md 4.4: bits 0-2, bit 3 if bit 2 is set,
/// bit 4 if bit 1 or 2 is set and bit 3 is not), if they fit in it.
fn flags_at(payload: &[u8], at: u32) -> u8 {
    let side = u32::from(payload[0]);
    let bit = |k: &mut u32| {
        let b = (side >> *k) & 1;
        *k += 1;
        assert!(*k <= 8, "flags past the first side byte");
        b as u8
    };
    let mut k = at;
    let mut v = bit(&mut k) | bit(&mut k) << 1 | bit(&mut k) << 2;
    if v & 4 != 0 {
        v |= bit(&mut k) << 3;
    }
    if v & 6 != 0 && v & 8 == 0 {
        v |= bit(&mut k) << 4;
    }
    v
}

/// Section 0's flags.
fn flags(payload: &[u8]) -> u8 {
    flags_at(payload, 0)
}

#[test]
fn dense_sections_go_as_planes_sparse_ones_as_masks() {
    let s = schema();
    let (t0, t1) = (tick(&s, 0), tick(&s, 1));
    let mut enc = Encoder::new(s.clone());
    let mut dec = Decoder::new(s.clone());
    // Keyframe: both sections spawned; the regular ids and records make
    // planes win in both.
    let key = enc.encode(&t0, 0, None).unwrap();
    let mut payload = Vec::new();
    enc.payload(&t0, 0, None, &mut payload).unwrap();
    assert_eq!(flags(&payload), 0x14, "dense keyframe section as planes");
    let (_, got0) = dec.decode(&key, None).unwrap();
    assert_eq!(got0, t0);
    // Delta: every float of section 0 changed (planes); one sparse row
    // changed in one element (masks and values).
    let b = Baseline {
        sequence: 0,
        snapshot: &got0,
    };
    enc.payload(&t1, 1, b, &mut payload).unwrap();
    // Section 0: flags "changed" with planes (4 side bits), the changed set
    // over 40 (all 40: the head 40 alone); section 1's flags follow in the
    // side byte.
    assert_eq!(flags(&payload), 0x12);
    assert_eq!(payload[1], 40);
    assert_eq!(
        flags_at(&payload, 4),
        0x02,
        "sparse section as masks and values"
    );
    let delta = enc.encode(&t1, 1, b).unwrap();
    let (_, got1) = dec.decode(&delta, b).unwrap();
    assert_eq!(got1, t1);
}

#[test]
fn planes_that_pass_the_payload_limit_fall_back_to_masks() {
    let s = Schema::builder()
        .entity("e")
        .field("v", Primitive::U32, 4)
        .build()
        .unwrap();
    let mut base = Snapshot::new(&s);
    let mut cur = Snapshot::new(&s);
    for id in 0..3_000u32 {
        base.section_mut(0).unwrap().insert(id, &[0; 16]).unwrap();
        cur.section_mut(0)
            .unwrap()
            .insert(id, &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
            .unwrap();
    }
    let b = Baseline {
        sequence: 0,
        snapshot: &base,
    };
    // Unlimited, the planes (48,000 bytes, one plane non-zero) win over
    // 3,000 rows of mask and value (6,000 bytes).
    let mut enc = Encoder::new(s.clone());
    let mut payload = Vec::new();
    // Twice: the second packet predicts planes from the first.
    for _ in 0..2 {
        enc.payload(&cur, 1, b, &mut payload).unwrap();
        assert_eq!(flags(&payload), 0x12);
        assert!(payload.len() > 48_000);
    }
    // Under a 20,000-byte payload limit: masks and values.
    let limits = Limits {
        max_decoded_bytes: 20_000,
        ..Limits::default()
    };
    enc.set_limits(limits);
    for _ in 0..2 {
        enc.payload(&cur, 1, b, &mut payload).unwrap();
        assert_eq!(flags(&payload), 0x02);
        assert!(payload.len() < 7_000);
    }
    let p = enc.encode(&cur, 1, b).unwrap();
    let mut dec = Decoder::new(s);
    dec.set_limits(limits);
    let (_, got) = dec.decode(&p, b).unwrap();
    assert_eq!(got, cur);
}

/// Packet `t` of a dense run: ticks `t` against `t - 1`.
fn dense_packet(enc: &mut Encoder, ticks: &[Snapshot], t: usize) -> Vec<u8> {
    let b = Baseline {
        sequence: (t - 1) as u16,
        snapshot: &ticks[t - 1],
    };
    enc.encode(&ticks[t], t as u16, b).unwrap()
}

#[test]
fn predicted_planes_give_the_full_estimates_bytes() {
    // One encoder for the whole run (it predicts section 0's planes from
    // its previous packets) against a new encoder per packet (always the
    // full estimate): the same packets, and they decode.
    let s = schema();
    let ticks: Vec<Snapshot> = (0..40).map(|t| tick(&s, t)).collect();
    steady_matches_fresh(&s, &ticks, || Encoder::new(s.clone()), "dense run");
}

/// Encodes `ticks` (each against the one before) with one encoder from
/// `new` for the whole run and with a new one per packet: the same
/// packets, each decoding to its tick.
fn steady_matches_fresh(s: &Schema, ticks: &[Snapshot], new: impl Fn() -> Encoder, what: &str) {
    let mut steady = new();
    let mut dec = Decoder::new(s.clone());
    for t in 1..ticks.len() {
        let p = dense_packet(&mut steady, ticks, t);
        assert_eq!(p, dense_packet(&mut new(), ticks, t), "{what}, packet {t}");
        let b = Baseline {
            sequence: (t - 1) as u16,
            snapshot: &ticks[t - 1],
        };
        let (_, got) = dec.decode(&p, b).unwrap();
        assert_eq!(got, ticks[t]);
    }
}

#[test]
fn a_section_that_stops_being_dense_leaves_planes_at_once() {
    // Dense packets teach the encoder to predict planes; then a packet
    // where 20 rows change one element each (a different one row to row,
    // three bytes of it) goes as masks and values, as it does from a new
    // encoder.
    let s = schema();
    let mut ticks: Vec<Snapshot> = (0..20).map(|t| tick(&s, t)).collect();
    let mut quiet = ticks[19].clone();
    for id in 0..20u32 {
        let mut rec = quiet.sections()[0].get(id).unwrap().to_vec();
        let at = 4 * (id as usize % 8);
        for (k, x) in [0x01u8, 0x23, 0x45].into_iter().enumerate() {
            rec[at + k] ^= x;
        }
        quiet.section_mut(0).unwrap().insert(id, &rec).unwrap();
    }
    ticks.push(quiet);
    let mut enc = Encoder::new(s.clone());
    for t in 1..ticks.len() - 1 {
        dense_packet(&mut enc, &ticks, t);
    }
    let t = ticks.len() - 1;
    let p = dense_packet(&mut enc, &ticks, t);
    assert_eq!(p, dense_packet(&mut Encoder::new(s.clone()), &ticks, t));
    let b = Baseline {
        sequence: (t - 1) as u16,
        snapshot: &ticks[t - 1],
    };
    let mut payload = Vec::new();
    enc.payload(&ticks[t], t as u16, b, &mut payload).unwrap();
    assert_eq!(
        flags(&payload) & 0x10,
        0,
        "quiet section as masks and values"
    );
}

/// Tick `t` with section 0 scaled to `rows` entities of smooth motion and
/// section 1 to `sparse` entities, one element of one changing.
fn sized_tick(s: &Schema, t: u32, rows: u32, sparse: u32) -> Snapshot {
    let mut snap = Snapshot::new(s);
    for id in 0..rows {
        let rec: Vec<u8> = (0..8u32)
            .flat_map(|k| {
                // Elements 2-7 step by a hashed amount too, so that the planes'
                // estimate falls on both sides of the middle.
                let h = (id * 8 + k).wrapping_mul(0x9e37_79b9) ^ t.wrapping_mul(0x85eb_ca6b);
                let jitter = if k >= 2 { (h >> 12) as f32 * 1e-6 } else { 0.0 };
                let x = (id * 8 + k) as f32 * 0.37 + t as f32 * (0.011 + k as f32 * 0.003);
                (x + jitter).to_le_bytes()
            })
            .collect();
        snap.section_mut(0).unwrap().insert(id, &rec).unwrap();
    }
    for id in 0..sparse {
        let rec: Vec<u8> = (0..8u32)
            .flat_map(|k| (id * 100 + k + u32::from(k == 3 && id == 5) * t).to_le_bytes())
            .collect();
        snap.section_mut(1).unwrap().insert(id * 3, &rec).unwrap();
    }
    snap
}

#[test]
fn predicted_planes_of_small_and_large_sections_give_the_full_estimates_bytes() {
    // Section 0 from 16 rows (its rows alone under the size where the
    // encoder takes the middle estimate) to 80; section 1 from idle to a
    // few hundred sparse rows: a steady encoder's packets are a new
    // encoder's, and decode. `Entropy::Model` without a model table sends
    // a section the estimate cannot settle as masks and values without
    // trying both forms.
    let s = schema();
    let new = |entropy| {
        let mut e = Encoder::new(s.clone());
        e.set_entropy(entropy);
        e
    };
    let sizes = [(16, 0), (20, 0), (24, 300), (40, 0), (80, 40)];
    for ((rows, sparse), entropy) in sizes
        .into_iter()
        .flat_map(|z| [(z, Entropy::Best), (z, Entropy::Model)])
    {
        let ticks: Vec<Snapshot> = (0..24).map(|t| sized_tick(&s, t, rows, sparse)).collect();
        let what = format!("{rows} rows, {sparse} sparse, {entropy:?}");
        steady_matches_fresh(&s, &ticks, || new(entropy), &what);
    }
}

#[test]
fn model_training_counts_every_row_of_predicted_sections() {
    // The model codes every row as masks and values, planes or not: the
    // counts one encoder gathers over a dense run (where it predicts
    // planes) are the counts of a new encoder per packet.
    let s = schema();
    let ticks: Vec<Snapshot> = (0..24).map(|t| sized_tick(&s, t, 40, 10)).collect();
    let mut steady = Encoder::new(s.clone());
    let shape = steady.model_shape().unwrap();
    let (mut one, mut fresh) = (
        ModelStats::new(shape).unwrap(),
        ModelStats::new(shape).unwrap(),
    );
    for t in 1..ticks.len() {
        let b = Baseline {
            sequence: (t - 1) as u16,
            snapshot: &ticks[t - 1],
        };
        steady.encode(&ticks[t], t as u16, b).unwrap();
        steady
            .model_tokens(&ticks[t], t as u16, b, &mut one)
            .unwrap();
        Encoder::new(s.clone())
            .model_tokens(&ticks[t], t as u16, b, &mut fresh)
            .unwrap();
    }
    assert!(one == fresh, "counts differ");
}
