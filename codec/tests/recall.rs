//! Spawned rows coded against the recall (FORMAT.md 4.7): round trips along
//! a chain where entities leave and come back, the rejection rules with
//! hand-written packets, and the recall's caps.
#![allow(clippy::unwrap_used)]

use tickpack::{
    Baseline, DecodeError, Decoder, EncodeError, Encoder, Limits, Primitive, Recall, Reference,
    Schema, Snapshot,
};

fn small() -> Schema {
    Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 1)
        .build()
        .unwrap()
}

fn snap(s: &Schema, ids: &[(u32, u8)]) -> Snapshot {
    let mut out = Snapshot::new(s);
    for &(id, v) in ids {
        out.section_mut(0).unwrap().insert(id, &[v]).unwrap();
    }
    out
}

/// A delta packet with sequence 10 against baseline 9, one raw block.
fn delta(payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x11, 10, 0, 0x01];
    p.extend_from_slice(payload);
    p
}

/// The baseline (sequence 9: ids 5 and 9) and its recall: id 7 (value 3)
/// left at 9.
fn baseline_and_recall(s: &Schema) -> (Snapshot, Recall) {
    let before = snap(s, &[(5, 1), (7, 3), (9, 2)]);
    let base = snap(s, &[(5, 1), (9, 2)]);
    let recall = Recall::keyframe(8).advance(
        Baseline {
            sequence: 8,
            snapshot: &before,
        },
        &base,
        9,
        &Limits::default(),
    );
    (base, recall)
}

#[test]
fn hand_written_recalled_row_decodes() {
    let s = small();
    let (base, recall) = baseline_and_recall(&s);
    let b = Baseline {
        sequence: 9,
        snapshot: &base,
    };
    // Flags: spawned, against the recall; one spawn, every one recalled
    // (`00`: 0 << 1 | 0), rank 0 in the recall (id 7); its one-group row
    // changes nothing.
    let p = delta(&[0x0c, 0x00, 0x00, 0x00]);
    let (_, got) = Decoder::new(s.clone())
        .decode(&p, Reference::delta(b).with_recall(&recall))
        .unwrap();
    assert_eq!(got, snap(&s, &[(5, 1), (7, 3), (9, 2)]));
    // The encoder writes exactly that.
    let mut enc = Encoder::new(s.clone());
    let out = enc
        .encode(&got, 10, Reference::delta(b).with_recall(&recall))
        .unwrap();
    assert_eq!(out, p);
}

#[test]
fn recall_rejection_rules() {
    let s = small();
    let (base, recall) = baseline_and_recall(&s);
    let b = Baseline {
        sequence: 9,
        snapshot: &base,
    };
    let mut other = recall.clone();
    other = other.advance(b, &base, 12, &Limits::default());
    let mut key = vec![0x03, 10, 0];
    key.extend_from_slice(&s.id().to_le_bytes());
    key.extend_from_slice(&[0x01, 0x0c, 0x00, 0x07, 0x00]);
    let cases: Vec<(Vec<u8>, Reference<'_>, DecodeError)> = vec![
        (
            delta(&[0x0c, 0x00, 0x00, 0x00]),
            Reference::delta(b),
            DecodeError::MissingRecall {
                section: 0,
                sequence: 9,
            },
        ),
        (
            delta(&[0x0c, 0x00, 0x00, 0x00]),
            Reference::delta(b).with_recall(&other),
            DecodeError::RecallMismatch {
                expected: 9,
                actual: 12,
            },
        ),
        // Rank 1 is past the recall (it holds one entity).
        (
            delta(&[0x0c, 0x00, 0x01, 0x00]),
            Reference::delta(b).with_recall(&recall),
            DecodeError::BadEntitySet { section: 0 },
        ),
        // One spawned, "some not recalled" (`01`), and then one recalled.
        (
            delta(&[0x0c, 0x01, 0x00, 0x00, 0x00]),
            Reference::delta(b).with_recall(&recall),
            DecodeError::BadEntitySet { section: 0 },
        ),
        // Two spawned, one recalled (rank 0, id 7), and id 7 again as an id
        // that is not recalled: an id the recall holds has one spelling.
        (
            delta(&[0x0c, 0x03, 0x00, 0x00, 0x07, 0x00, 0x00]),
            Reference::delta(b).with_recall(&recall),
            DecodeError::BadEntitySet { section: 0 },
        ),
        // The recall bit (flag bit 3) is sent only with spawned entities,
        // and flags end at bit 4: without spawns, the bits after the
        // section's three flag bits are padding.
        (
            delta(&[0x08]),
            Reference::delta(b).with_recall(&recall),
            DecodeError::NonZeroPadding { offset: 0 },
        ),
        (
            delta(&[0x10]),
            Reference::delta(b).with_recall(&recall),
            DecodeError::NonZeroPadding { offset: 0 },
        ),
        // A keyframe has no recall.
        (
            key,
            Reference::KEYFRAME,
            DecodeError::BadEntitySet { section: 0 },
        ),
    ];
    for (packet, reference, want) in cases {
        let mut out = snap(&s, &[(1, 1)]);
        let got = Decoder::new(s.clone()).decode_into(&packet, reference, &mut out);
        assert_eq!(got, Err(want), "{packet:02x?}");
        assert_eq!(out.entity_count(), 0);
    }
    // The encoder refuses a recall of another snapshot than the baseline.
    let err = Encoder::new(s.clone())
        .encode(&base, 10, Reference::delta(b).with_recall(&other))
        .unwrap_err();
    assert_eq!(
        err,
        EncodeError::RecallMismatch {
            baseline: 9,
            recall: 12
        }
    );
}

fn world() -> Schema {
    Schema::builder()
        .entity("item")
        .field("pos", Primitive::F32, 3)
        .field("kind", Primitive::U16, 1)
        .field("timer", Primitive::I32, 4)
        .build()
        .unwrap()
}

/// Tick `t`: 40 items, each in view for a while, out of view for a while;
/// a few change while out of view.
fn tick(s: &Schema, t: u32) -> Snapshot {
    let mut out = Snapshot::new(s);
    for id in 0..40u32 {
        if (t / 5 + id).is_multiple_of(3) {
            continue;
        }
        let mut rec = Vec::new();
        for k in 0..3 {
            rec.extend_from_slice(&((id * 64 + k) as f32 * 1.5).to_le_bytes());
        }
        rec.extend_from_slice(&(id as u16).to_le_bytes());
        let phase = if id % 7 == 0 { t / 15 } else { 0 };
        for k in 0..4 {
            rec.extend_from_slice(&((id + k + phase) as i32).to_le_bytes());
        }
        out.section_mut(0).unwrap().insert(id, &rec).unwrap();
    }
    out
}

/// A chain of deltas, each against the one 1-3 ticks before, encoded with
/// and without recall: every packet decodes exactly, with recall they are
/// smaller, and without its recall a recalled packet is refused.
#[test]
fn round_trip_along_a_chain() {
    let s = world();
    let limits = Limits::default();
    let (mut enc, mut dec) = (Encoder::new(s.clone()), Decoder::new(s.clone()));
    let ticks: Vec<Snapshot> = (0..60).map(|t| tick(&s, t)).collect();
    let mut recalls: Vec<Recall> = vec![Recall::keyframe(0)];
    let mut decoded: Vec<Snapshot> = vec![ticks[0].clone()];
    let (mut with, mut without) = (0usize, 0usize);
    let mut refused = 0;
    for (t, cur) in ticks.iter().enumerate().skip(1) {
        let b = t - 1 - (t % 3).min(t - 1);
        let base = Baseline {
            sequence: b as u16,
            snapshot: &decoded[b],
        };
        let r = Reference::delta(base).with_recall(&recalls[b]);
        let p = enc.encode(cur, t as u16, r).unwrap();
        let (_, got) = dec.decode(&p, r).unwrap();
        assert_eq!(&got, cur, "tick {t}");
        with += p.len();
        let plain = enc.encode(cur, t as u16, base).unwrap();
        without += plain.len();
        if plain != p {
            assert_eq!(
                dec.decode(&p, base).unwrap_err(),
                DecodeError::MissingRecall {
                    section: 0,
                    sequence: b as u16
                }
            );
            refused += 1;
        }
        recalls.push(recalls[b].advance(base, &got, t as u16, &limits));
        decoded.push(got);
    }
    assert!(refused > 10, "{refused}");
    assert!(with * 2 < without, "{with} vs {without}");
}

/// However many entities come and go, a recall holds at most what the
/// limits allow one snapshot to hold.
#[test]
fn recall_stays_within_the_limits() {
    let s = small();
    let limits = Limits {
        max_entities_per_section: 50,
        max_snapshot_bytes: 40 * 5,
        ..Limits::default()
    };
    let mut recall = Recall::keyframe(0);
    let mut prev = snap(&s, &[]);
    for t in 0..200u32 {
        let cur = snap(
            &s,
            &(0..30).map(|k| (t * 30 + k, k as u8)).collect::<Vec<_>>(),
        );
        recall = recall.advance(
            Baseline {
                sequence: t as u16,
                snapshot: &prev,
            },
            &cur,
            t as u16 + 1,
            &limits,
        );
        assert!(recall.len() <= 40, "{}", recall.len());
        assert!(recall.counted_bytes() <= limits.max_snapshot_bytes);
        prev = cur;
    }
    // The newest departures are kept.
    assert!(recall.get(0, 198 * 30).is_some());
    assert!(recall.get(0, 100 * 30).is_none());
}
