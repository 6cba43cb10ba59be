//! A table of corrupt inputs, each asserting the exact error variant, and
//! the guarantee that a failed decode leaves the output empty.
#![allow(clippy::unwrap_used)]

use tickpack::{Baseline, DecodeError, Decoder, Dictionary, Limits, Primitive, Schema, Snapshot};

fn schema() -> Schema {
    Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 1)
        .build()
        .unwrap()
}

/// Header (version 1, schema id, sequence 10, optional baseline distance
/// and dictionary) followed by `blocks`.
fn packet(schema_id: u32, dist: Option<u8>, dict: Option<u32>, blocks: &[u8]) -> Vec<u8> {
    let mut flags = 1u8;
    if dist.is_some() {
        flags |= 0x10;
    }
    if dict.is_some() {
        flags |= 0x20;
    }
    let mut p = vec![flags];
    p.extend_from_slice(&schema_id.to_le_bytes());
    p.extend_from_slice(&10u16.to_le_bytes());
    if let Some(d) = dist {
        p.push(d);
    }
    if let Some(id) = dict {
        p.extend_from_slice(&id.to_le_bytes());
    }
    p.extend_from_slice(blocks);
    p
}

/// One last raw block holding `payload`.
fn raw(payload: &[u8]) -> Vec<u8> {
    let h = 1u16 | (((payload.len() - 1) as u16) << 3);
    let mut b = h.to_le_bytes().to_vec();
    b.extend_from_slice(payload);
    b
}

fn baseline_snapshot(s: &Schema) -> Snapshot {
    let mut b = Snapshot::new(s);
    b.section_mut(0).unwrap().insert(5, &[1]).unwrap();
    b.section_mut(0).unwrap().insert(9, &[2]).unwrap();
    b
}

#[test]
fn valid_hand_written_packets_decode() {
    let s = schema();
    // Keyframe: spawn ids 5 and 9 (count 2, first 5, gap 3), values 1 and 2
    // coded with Int (zigzag of 1 - 0 and 2 - 1).
    let p = packet(s.id(), None, None, &raw(&[2, 5, 3, 2, 2]));
    let (_, snap) = tickpack::decode(&s, &p, None).unwrap();
    assert_eq!(snap, baseline_snapshot(&s));
    // Delta: nothing removed (mode 0), entity 9 changed (indices: 1 at 1), no spawns, value 2 -> 4.
    let base = baseline_snapshot(&s);
    let b = Baseline {
        sequence: 9,
        snapshot: &base,
    };
    let p = packet(s.id(), Some(1), None, &raw(&[0, 3, 1, 1, 0, 4]));
    let (_, snap) = tickpack::decode(&s, &p, Some(b)).unwrap();
    assert_eq!(snap.sections()[0].get(9), Some(&[4u8][..]));
}

#[test]
fn corrupt_table() {
    let s = schema();
    let id = s.id();
    let base = baseline_snapshot(&s);
    let b9 = Some(Baseline {
        sequence: 9,
        snapshot: &base,
    });
    let other = Schema::builder()
        .entity("e")
        .field("v", Primitive::U16, 1)
        .build()
        .unwrap();
    let wrong_base = Snapshot::new(&other);
    let key = |payload: &[u8]| packet(id, None, None, &raw(payload));
    let delta = |payload: &[u8]| packet(id, Some(1), None, &raw(payload));
    let mut garbage_zstd = packet(id, None, None, &[]);
    garbage_zstd.extend_from_slice(&[0x0d, 0x00, 0xde, 0xad]);
    let mut bomb = packet(id, None, None, &[]);
    for _ in 0..200 {
        bomb.extend_from_slice(&[0xfa, 0xff, 0x00]); // RLE, 8192 zeros, not last
    }
    bomb.extend_from_slice(&[0xfb, 0xff, 0x00]);

    type Case<'a> = (&'a str, Vec<u8>, Option<Baseline<'a>>, DecodeError);
    let cases: Vec<Case<'_>> = vec![
        (
            "empty",
            vec![],
            None,
            DecodeError::Truncated {
                offset: 0,
                needed: 1,
            },
        ),
        (
            "short header",
            vec![1, 0, 0],
            None,
            DecodeError::Truncated {
                offset: 1,
                needed: 2,
            },
        ),
        (
            "version 2",
            vec![2, 0, 0, 0, 0, 0, 0],
            None,
            DecodeError::UnsupportedVersion { version: 2 },
        ),
        (
            "version 0",
            vec![0x10; 9],
            None,
            DecodeError::UnsupportedVersion { version: 0 },
        ),
        (
            "reserved flag",
            vec![0x81, 0, 0, 0, 0, 0, 0],
            None,
            DecodeError::ReservedBits { flags: 0x80 },
        ),
        (
            "wrong schema",
            packet(id ^ 1, None, None, &raw(&[0])),
            None,
            DecodeError::SchemaMismatch {
                expected: id,
                actual: id ^ 1,
            },
        ),
        (
            "baseline distance 0",
            packet(id, Some(0), None, &raw(&[0])),
            b9,
            DecodeError::BadBaselineDistance,
        ),
        (
            "non-minimal distance",
            {
                let mut p = packet(id, Some(0x81), None, &[]);
                p.push(0x00);
                p
            },
            b9,
            DecodeError::BadVarint { offset: 7 },
        ),
        (
            "missing baseline",
            delta(&[0, 0, 0]),
            None,
            DecodeError::MissingBaseline { sequence: 9 },
        ),
        (
            "wrong baseline",
            delta(&[0, 0, 0]),
            Some(Baseline {
                sequence: 8,
                snapshot: &base,
            }),
            DecodeError::BaselineMismatch {
                expected: 9,
                actual: 8,
            },
        ),
        (
            "baseline of another schema",
            delta(&[0, 0, 0]),
            Some(Baseline {
                sequence: 9,
                snapshot: &wrong_base,
            }),
            DecodeError::BadBaseline(tickpack::SnapshotError::RecordSize {
                expected: 1,
                actual: 2,
            }),
        ),
        (
            "unknown dictionary",
            packet(id, None, Some(77), &raw(&[0])),
            None,
            DecodeError::UnknownDictionary { id: 77 },
        ),
        (
            "no blocks",
            packet(id, None, None, &[]),
            None,
            DecodeError::MissingLastBlock,
        ),
        (
            "no last block",
            packet(id, None, None, &[0x00, 0x00, 0x00]),
            None,
            DecodeError::MissingLastBlock,
        ),
        (
            "Huffman block without a table",
            packet(id, None, None, &[0x07, 0x00, 0x00]),
            None,
            DecodeError::MissingHuffmanTable { offset: 7 },
        ),
        (
            "bytes after last block",
            packet(id, None, None, &[0x01, 0x00, 0x00, 0x00]),
            None,
            DecodeError::TrailingBytes { count: 1 },
        ),
        (
            "truncated block",
            packet(id, None, None, &[0x09, 0x00, 0x00]),
            None,
            DecodeError::Truncated {
                offset: 9,
                needed: 1,
            },
        ),
        (
            "garbage zstd block",
            garbage_zstd,
            None,
            DecodeError::Zstd {
                offset: 7,
                message: "",
            },
        ),
        (
            "decompression bomb",
            bomb,
            None,
            DecodeError::DecodedTooLarge {
                limit: Limits::default().max_decoded_bytes,
            },
        ),
        (
            "too many spawns",
            key(&[0x81, 0x80, 0x04]),
            None,
            DecodeError::TooManyEntities {
                section: 0,
                count: 65_537,
                limit: 65_536,
            },
        ),
        (
            "bad set mode",
            delta(&[9]),
            b9,
            DecodeError::BadEntitySet {
                section: 0,
                offset: 1,
            },
        ),
        (
            "set index past universe",
            delta(&[3, 1, 2]),
            b9,
            DecodeError::BadEntitySet {
                section: 0,
                offset: 3,
            },
        ),
        (
            "id overflow",
            key(&[2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0]),
            None,
            DecodeError::IdOverflow { section: 0 },
        ),
        (
            "spawn of a kept id",
            delta(&[0, 0, 1, 5, 0]),
            b9,
            DecodeError::DuplicateEntity { section: 0, id: 5 },
        ),
        (
            "planes truncated",
            key(&[2, 5, 3, 2]),
            None,
            DecodeError::Truncated {
                offset: 4,
                needed: 1,
            },
        ),
        (
            "payload trailing",
            key(&[2, 5, 3, 2, 2, 0]),
            None,
            DecodeError::PayloadTrailing { count: 1 },
        ),
        (
            "payload ends in meta",
            key(&[2, 5]),
            None,
            DecodeError::Truncated {
                offset: 2,
                needed: 1,
            },
        ),
    ];

    let mut dec = Decoder::new(s.clone());
    dec.add_dictionary(&Dictionary::new(5, vec![1u8; 64]))
        .unwrap();
    for (name, bytes, baseline, expected) in cases {
        let mut out = baseline_snapshot(&s);
        let got = dec.decode_into(&bytes, baseline, &mut out);
        match (&got, &expected) {
            // zstd's message text is not ours to pin.
            (Err(DecodeError::Zstd { offset, .. }), DecodeError::Zstd { offset: o, .. }) => {
                assert_eq!(offset, o, "{name}")
            }
            _ => assert_eq!(got, Err(expected), "{name}"),
        }
        assert_eq!(out.entity_count(), 0, "{name}: output must be left empty");
    }
}

#[test]
fn limits_are_configurable() {
    let s = schema();
    let mut dec = Decoder::new(s.clone());
    dec.set_limits(Limits {
        max_entities_per_section: 1,
        max_decoded_bytes: 1 << 20,
        max_snapshot_bytes: 1 << 20,
    });
    let p = packet(s.id(), None, None, &raw(&[2, 5, 3, 2, 2]));
    assert_eq!(
        dec.decode(&p, None),
        Err(DecodeError::TooManyEntities {
            section: 0,
            count: 2,
            limit: 1
        })
    );
    dec.set_limits(Limits {
        max_entities_per_section: 10,
        max_decoded_bytes: 4,
        max_snapshot_bytes: 1 << 20,
    });
    assert_eq!(
        dec.decode(&p, None),
        Err(DecodeError::DecodedTooLarge { limit: 4 })
    );
}

#[test]
fn encoder_refuses_what_the_decoder_would() {
    let s = schema();
    let mut enc = tickpack::Encoder::new(s.clone());
    enc.set_limits(Limits {
        max_entities_per_section: 1,
        max_decoded_bytes: 1 << 20,
        max_snapshot_bytes: 1 << 20,
    });
    let snap = baseline_snapshot(&s);
    assert_eq!(
        enc.encode(&snap, 0, None),
        Err(tickpack::EncodeError::TooManyEntities {
            section: 0,
            count: 2,
            limit: 1
        })
    );
    let mut enc = tickpack::Encoder::new(s.clone());
    assert_eq!(
        enc.encode(
            &snap,
            5,
            Some(Baseline {
                sequence: 5,
                snapshot: &snap
            })
        ),
        Err(tickpack::EncodeError::BaselineDistance {
            sequence: 5,
            baseline: 5
        })
    );
    assert_eq!(
        enc.encode(
            &snap,
            0x8000,
            Some(Baseline {
                sequence: 0,
                snapshot: &snap
            })
        ),
        Err(tickpack::EncodeError::BaselineDistance {
            sequence: 0x8000,
            baseline: 0
        })
    );
    assert!(enc
        .encode(
            &snap,
            0x7fff,
            Some(Baseline {
                sequence: 0,
                snapshot: &snap
            })
        )
        .is_ok());
    let other = Schema::builder()
        .entity("e")
        .field("v", Primitive::U16, 1)
        .build()
        .unwrap();
    assert!(matches!(
        enc.encode(&Snapshot::new(&other), 0, None),
        Err(tickpack::EncodeError::Snapshot(_))
    ));
}

#[test]
fn checksum_detects_a_wrong_baseline() {
    let s = schema();
    let base = baseline_snapshot(&s);
    let mut cur = base.clone();
    cur.section_mut(0).unwrap().insert(9, &[3]).unwrap();
    let mut enc = tickpack::Encoder::new(s.clone());
    enc.set_checksum(true);
    let b = Baseline {
        sequence: 9,
        snapshot: &base,
    };
    let p = enc.encode(&cur, 10, Some(b)).unwrap();
    let plain = tickpack::Encoder::new(s.clone())
        .encode(&cur, 10, Some(b))
        .unwrap();
    assert_eq!(p.len(), plain.len() + 2, "the checksum costs 2 bytes");
    let mut dec = Decoder::new(s.clone());
    let (h, got) = dec.decode(&p, Some(b)).unwrap();
    assert_eq!(got, cur);
    assert_eq!(h.checksum, Some(cur.checksum(h.checksum_seed())));
    // The client holds a different state under the same sequence.
    let mut drifted = base.clone();
    drifted.section_mut(0).unwrap().insert(5, &[42]).unwrap();
    let mut out = Snapshot::new(&s);
    assert!(matches!(
        dec.decode_into(
            &p,
            Some(Baseline {
                sequence: 9,
                snapshot: &drifted
            }),
            &mut out
        ),
        Err(DecodeError::ChecksumMismatch { .. })
    ));
    assert_eq!(out.entity_count(), 0);
    // The seed binds the checksum to the baseline sequence and dictionary.
    let h2 = tickpack::PacketHeader {
        baseline: Some(8),
        ..h
    };
    assert_ne!(h.checksum_seed(), h2.checksum_seed());
    let h3 = tickpack::PacketHeader {
        dictionary: Some(0),
        ..h
    };
    assert_ne!(h.checksum_seed(), h3.checksum_seed());
}

#[test]
fn a_baseline_over_the_limit_is_refused() {
    // Found by fuzzing: kept entities count against the limit too.
    let s = schema();
    let mut big = Snapshot::new(&s);
    for id in 0..5 {
        big.section_mut(0).unwrap().insert(id, &[id as u8]).unwrap();
    }
    let b = Baseline {
        sequence: 9,
        snapshot: &big,
    };
    let p = tickpack::Encoder::new(s.clone())
        .encode(&big, 10, Some(b))
        .unwrap();
    let mut dec = Decoder::new(s.clone());
    dec.set_limits(Limits {
        max_entities_per_section: 2,
        max_decoded_bytes: 1 << 20,
        max_snapshot_bytes: 1 << 20,
    });
    assert_eq!(
        dec.decode(&p, Some(b)).map(|_| ()),
        Err(DecodeError::TooManyEntities {
            section: 0,
            count: 5,
            limit: 2
        })
    );
}
