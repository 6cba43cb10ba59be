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

/// A header with sequence 10: flags (with version 3 on a keyframe, the
/// distance on a delta if 1..=15), sequence, the ids (schema id and, with
/// `dict`, a dictionary id) of a keyframe, the byte `dist` of a delta when
/// it is not in byte 0; then `blocks`.
fn packet(ids: Option<(u32, u32)>, dist: Option<u8>, dict: bool, blocks: &[u8]) -> Vec<u8> {
    assert!(ids.is_some() != dist.is_some(), "ids are a keyframe's");
    let short = dist.filter(|d| (1..=15).contains(d));
    let mut flags = match dist {
        Some(_) => 0x10 | short.unwrap_or(0),
        None => 3,
    };
    if dict {
        flags |= 0x20;
    }
    let mut p = vec![flags];
    p.extend_from_slice(&10u16.to_le_bytes());
    if let Some((schema, dictionary)) = ids {
        p.extend_from_slice(&schema.to_le_bytes());
        if dict {
            p.extend_from_slice(&dictionary.to_le_bytes());
        }
    }
    if let Some(d) = dist.filter(|_| short.is_none()) {
        p.push(d);
    }
    p.extend_from_slice(blocks);
    p
}

/// One last raw block holding `payload` (its size is the rest of the packet).
fn raw(payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0x01];
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
    // Keyframe: the side byte with the section flags "spawned" (bits
    // 0, 0, 1, 0, 0), 2 spawned (count - 1 = 1), ids 5 and 9 (gaps 5, 3);
    // each row's element byte (element 0 changed); then the values from
    // the end of the payload down: zigzag(1 - 0) = 2, zigzag(2 - 0) = 4.
    let p = packet(
        Some((s.id(), 0)),
        None,
        false,
        &raw(&[4, 1, 5, 3, 1, 1, 4, 2]),
    );
    let (_, snap) = tickpack::decode(&s, &p, None).unwrap();
    assert_eq!(snap, baseline_snapshot(&s));
    // Delta: flags "changed" (bits 0, 1, 0, then bit 4: 0), changed set as
    // a list (1 member, gap 1: the second kept entity, 9), its row: element
    // byte; the value (last byte) zigzag(4 - 2) = 4.
    let base = baseline_snapshot(&s);
    let b = Baseline {
        sequence: 9,
        snapshot: &base,
    };
    let p = packet(None, Some(1), false, &raw(&[2, 1, 1, 1, 4]));
    let (_, snap) = tickpack::decode(&s, &p, Some(b)).unwrap();
    assert_eq!(snap.sections()[0].get(9), Some(&[4u8][..]));
    // The same keyframe with its rows as byte planes (flags 4 | 16, bits
    // 0, 0, 1, 0, 1): one
    // plane of the two rows' deltas, ship 5 against the default record
    // (zigzag(1) = 2), ship 9 against ship 5 (zigzag(2 - 1) = 2).
    let p = packet(Some((s.id(), 0)), None, false, &raw(&[20, 1, 5, 3, 2, 2]));
    let (_, snap) = tickpack::decode(&s, &p, None).unwrap();
    assert_eq!(snap, baseline_snapshot(&s));
    // An idle delta: the header alone.
    let p = packet(None, Some(1), false, &[]);
    assert_eq!(p.len(), 3);
    let (_, snap) = tickpack::decode(&s, &p, Some(b)).unwrap();
    assert_eq!(snap, base);
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
    let key_blocks = |blocks: &[u8]| packet(Some((id, 0)), None, false, blocks);
    // The header's MODEL flag: the rest of the packet is a model block.
    let model_key = |body: &[u8]| {
        let mut p = key_blocks(body);
        p[0] |= 0x40;
        p
    };
    let key = |payload: &[u8]| key_blocks(&raw(payload));
    let delta = |payload: &[u8]| packet(None, Some(1), false, &raw(payload));
    let mut bomb = key_blocks(&[]);
    for _ in 0..200 {
        bomb.extend_from_slice(&[0x02, 0xff, 0x1f, 0x00]); // RLE, 8192 zeros, not last
    }
    bomb.extend_from_slice(&[0x03, 0x80, 0x40, 0x00]);

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
            vec![3, 0],
            None,
            DecodeError::Truncated {
                offset: 1,
                needed: 1,
            },
        ),
        (
            "version 1",
            vec![1, 0, 0, 0, 0, 0, 0],
            None,
            DecodeError::UnsupportedVersion { version: 1 },
        ),
        (
            "version 2 (format 2's model block)",
            vec![0x02, 0, 0, 0, 0, 0, 0],
            None,
            DecodeError::UnsupportedVersion { version: 2 },
        ),
        (
            "version 0",
            vec![0x20; 9],
            None,
            DecodeError::UnsupportedVersion { version: 0 },
        ),
        (
            "reserved extension bit",
            vec![0x83, 0, 0, 0x08],
            None,
            DecodeError::ReservedBits { flags: 0x08 },
        ),
        (
            "checksum length 3",
            vec![0x83, 0, 0, 0x03],
            None,
            DecodeError::ReservedBits { flags: 0x03 },
        ),
        (
            "prior without baseline",
            vec![0x83, 0, 0, 0x04],
            None,
            DecodeError::ReservedBits { flags: 0x04 },
        ),
        (
            "extension byte missing",
            vec![0x83, 0, 0],
            None,
            DecodeError::Truncated {
                offset: 3,
                needed: 1,
            },
        ),
        (
            "wrong schema",
            packet(Some((id ^ 1, 0)), None, false, &raw(&[0])),
            None,
            DecodeError::SchemaMismatch {
                expected: id,
                actual: id ^ 1,
            },
        ),
        (
            "baseline distance 0",
            packet(None, Some(0), false, &raw(&[0])),
            b9,
            DecodeError::BadBaselineDistance,
        ),
        (
            "distance 15 as a varint (it belongs in byte 0)",
            packet(None, Some(0), false, &[])
                .into_iter()
                .take(3)
                .chain([15, 0x01, 0x00])
                .collect(),
            b9,
            DecodeError::BadBaselineDistance,
        ),
        (
            "non-minimal distance",
            packet(None, Some(0x81), false, &[0x00]),
            b9,
            DecodeError::BadVarint { offset: 3 },
        ),
        (
            "missing baseline",
            delta(&[0]),
            None,
            DecodeError::MissingBaseline { sequence: 9 },
        ),
        (
            "wrong baseline",
            delta(&[0]),
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
            delta(&[0]),
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
            packet(Some((id, 77)), None, true, &raw(&[0])),
            None,
            DecodeError::UnknownDictionary { id: 77 },
        ),
        (
            "no last block",
            key_blocks(&[0x00, 0x00, 0x00, 0xaa]),
            None,
            DecodeError::MissingLastBlock,
        ),
        (
            "reserved block header bits",
            key_blocks(&[0x0b, 0x00]),
            None,
            DecodeError::ReservedBits { flags: 0x0b },
        ),
        (
            "model block without a model table",
            model_key(&[0x00]),
            None,
            DecodeError::MissingModelTable { offset: 7 },
        ),
        (
            "model block without a body",
            model_key(&[]),
            None,
            DecodeError::Truncated {
                offset: 7,
                needed: 1,
            },
        ),
        (
            "model block above 32768 bytes",
            model_key(&[0x00; 32769]),
            None,
            DecodeError::BadBlockSize { offset: 7 },
        ),
        (
            "block type 4 (the model block, which the MODEL flag announces)",
            key_blocks(&[0x09, 0x00]),
            None,
            DecodeError::ReservedBits { flags: 0x09 },
        ),
        (
            "empty last block",
            key_blocks(&[0x01]),
            None,
            DecodeError::Truncated {
                offset: 8,
                needed: 1,
            },
        ),
        (
            "RLE block of 0 bytes",
            key_blocks(&[0x03, 0x00, 0x00]),
            None,
            DecodeError::BadBlockSize { offset: 8 },
        ),
        (
            "RLE block above 32768 bytes",
            key_blocks(&[0x03, 0x81, 0x80, 0x02, 0x00]),
            None,
            DecodeError::BadBlockSize { offset: 8 },
        ),
        (
            "block above 32768 bytes",
            key_blocks(&[0x00, 0x00, 0x80, 0x00]),
            None,
            DecodeError::BadBlockSize { offset: 8 },
        ),
        (
            "block type 3 (Huffman, retired in format 3)",
            key_blocks(&[0x07, 0x00]),
            None,
            DecodeError::ReservedBits { flags: 0x07 },
        ),
        (
            "bytes after last block",
            key_blocks(&[0x03, 0x01, 0x00, 0x00]),
            None,
            DecodeError::TrailingBytes { count: 1 },
        ),
        (
            "truncated block",
            key_blocks(&[0x00, 0x01, 0x00, 0x00]),
            None,
            DecodeError::Truncated {
                offset: 10,
                needed: 1,
            },
        ),
        (
            "garbage zstd block",
            key_blocks(&[0x05, 0xde, 0xad]),
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
            "bad varint in the payload",
            key(&[4, 0x80, 0x00]),
            None,
            DecodeError::BadVarint { offset: 1 },
        ),
        (
            "bits after the section flags",
            key(&[32]),
            None,
            DecodeError::NonZeroPadding { offset: 0 },
        ),
        (
            "byte planes without rows (flags 0: bit 4 is not sent)",
            key(&[16]),
            None,
            DecodeError::NonZeroPadding { offset: 0 },
        ),
        (
            "recall bit without a recall (bit 4 is not sent with bit 3)",
            key(&[4 | 8 | 16, 0, 5, 0, 0]),
            None,
            DecodeError::BadEntitySet { section: 0 },
        ),
        (
            "byte-plane row that changes nothing",
            delta(&[0x0a, 1, 1, 0]),
            b9,
            DecodeError::BadMask { section: 0, row: 0 },
        ),
        (
            "byte planes truncated",
            key(&[20, 1, 5, 3, 2]),
            None,
            DecodeError::Truncated {
                offset: 4,
                needed: 1,
            },
        ),
        (
            "removal from an empty baseline",
            key(&[1]),
            None,
            DecodeError::BadEntitySet { section: 0 },
        ),
        (
            "too many spawns",
            key(&[4, 0x80, 0x80, 0x04]),
            None,
            DecodeError::TooManyEntities {
                section: 0,
                count: 65_537,
                limit: 65_536,
            },
        ),
        (
            "set count past universe",
            delta(&[2, 3, 0, 0, 0]),
            b9,
            DecodeError::BadEntitySet { section: 0 },
        ),
        (
            "set index past universe",
            delta(&[2, 1, 2]),
            b9,
            DecodeError::BadEntitySet { section: 0 },
        ),
        (
            "empty bitmap",
            delta(&[2, 0, 0x00]),
            b9,
            DecodeError::BadEntitySet { section: 0 },
        ),
        (
            "id overflow",
            key(&[4, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0]),
            None,
            DecodeError::IdOverflow { section: 0 },
        ),
        (
            "spawn of a kept id",
            delta(&[4, 0, 5, 1, 2]),
            b9,
            DecodeError::DuplicateEntity { section: 0, id: 5 },
        ),
        (
            "changed row that changes nothing",
            delta(&[2, 1, 1, 0x00]),
            b9,
            DecodeError::BadMask { section: 0, row: 0 },
        ),
        (
            "value wider than the element",
            delta(&[2, 1, 1, 1, 0x04, 0x80]),
            b9,
            DecodeError::BadValue {
                section: 0,
                row: 0,
                element: 0,
            },
        ),
        (
            "value that changes nothing",
            delta(&[2, 1, 1, 1, 0]),
            b9,
            DecodeError::BadValue {
                section: 0,
                row: 0,
                element: 0,
            },
        ),
        (
            "non-zero padding bits",
            delta(&[2, 1, 1, 0x03, 4]),
            b9,
            DecodeError::NonZeroPadding { offset: 3 },
        ),
        (
            "rows truncated",
            key(&[4, 1, 5, 3, 1, 2]),
            None,
            DecodeError::Truncated {
                offset: 5,
                needed: 1,
            },
        ),
        (
            "payload trailing",
            key(&[4, 1, 5, 3, 1, 1, 0, 4, 2]),
            None,
            DecodeError::PayloadTrailing { count: 1 },
        ),
        (
            "a raw block that changes nothing (the empty payload spelt twice)",
            delta(&[0]),
            b9,
            DecodeError::NonCanonical,
        ),
        (
            "an RLE block that changes nothing",
            packet(None, Some(1), false, &[0x03, 0x01, 0x00]),
            b9,
            DecodeError::NonCanonical,
        ),
        (
            "payload ends in meta",
            key(&[4, 1]),
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
fn dictionaries_must_be_agreed() {
    let s = schema();
    // A delta that says it uses the agreed dictionary, to a decoder that
    // agreed none.
    let base = baseline_snapshot(&s);
    let b = Some(Baseline {
        sequence: 9,
        snapshot: &base,
    });
    let p = packet(None, Some(1), true, &raw(&[0]));
    let mut dec = Decoder::new(s.clone());
    assert_eq!(
        dec.decode(&p, b).map(|_| ()),
        Err(DecodeError::NoAgreedDictionary { keyframe: false })
    );
    // Agreeing to a dictionary not held is refused.
    assert_eq!(
        dec.agree(Some(3), None),
        Err(DecodeError::UnknownDictionary { id: 3 })
    );
}

#[test]
fn integral_floats_out_of_range_are_refused() {
    let s = Schema::builder()
        .entity("e")
        .field("x", Primitive::F32, 1)
        .build()
        .unwrap();
    // One spawned entity (id 7): the side byte with the flags "spawned";
    // the row's element byte and its kind byte (kind 1: integral); then
    // the value, byte-reversed at the end.
    let payload = |value: u64| {
        let mut p = vec![0x04, 0, 7, 0x01, 0x01];
        let mut varint = Vec::new();
        let mut v = value;
        while v >= 0x80 {
            varint.push(v as u8 | 0x80);
            v >>= 7;
        }
        varint.push(v as u8);
        p.extend(varint.iter().rev());
        p
    };
    // zigzag(2^24 + 1) from 0.0: past 2^24.
    let p = packet(
        Some((s.id(), 0)),
        None,
        false,
        &raw(&payload(((1u64 << 24) + 1) << 1)),
    );
    assert_eq!(
        tickpack::decode(&s, &p, None).map(|_| ()),
        Err(DecodeError::BadValue {
            section: 0,
            row: 0,
            element: 0
        })
    );
    // 2^24 itself is in range.
    let p = packet(
        Some((s.id(), 0)),
        None,
        false,
        &raw(&payload((1u64 << 24) << 1)),
    );
    let (_, snap) = tickpack::decode(&s, &p, None).unwrap();
    assert_eq!(
        snap.sections()[0].get(7),
        Some(&16_777_216f32.to_le_bytes()[..])
    );
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
    let p = packet(
        Some((s.id(), 0)),
        None,
        false,
        &raw(&[4, 1, 5, 3, 1, 2, 1, 4]),
    );
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
    assert_eq!(
        p.len(),
        plain.len() + 3,
        "the checksum costs 2 bytes and the extension byte"
    );
    let mut dec = Decoder::new(s.clone());
    let (h, got) = dec.decode(&p, Some(b)).unwrap();
    assert_eq!(got, cur);
    assert_eq!(
        h.checksum,
        tickpack::Checksum::U16(cur.checksum(h.checksum_seed(None)))
    );
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
    assert_ne!(h.checksum_seed(None), h2.checksum_seed(None));
    assert_ne!(h.checksum_seed(None), h.checksum_seed(Some(0)));
    // One byte of checksum: 2 bytes in all.
    let mut enc = tickpack::Encoder::new(s.clone());
    enc.set_checksum_len(1);
    let p1 = enc.encode(&cur, 10, Some(b)).unwrap();
    assert_eq!(p1.len(), plain.len() + 2);
    let (h, _) = dec.decode(&p1, Some(b)).unwrap();
    assert_eq!(
        h.checksum,
        tickpack::Checksum::U8(cur.checksum(h.checksum_seed(None)) as u8)
    );
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

#[test]
fn a_zstd_block_that_regenerates_nothing_is_refused() {
    // FORMAT.md 3.2: a block regenerates 1..=32768 bytes. A zstd block of
    // raw literals of size 0 and no sequences regenerates nothing: as the
    // packet's only block it would be a second spelling of the empty
    // payload, before another block a second spelling of that block.
    let s = schema();
    let empty = [0x00, 0x00];
    let mut alone = vec![0x05];
    alone.extend_from_slice(&empty);
    let mut before = vec![0x04, 0x01, 0x00];
    before.extend_from_slice(&empty);
    before.extend_from_slice(&raw(&[4, 1, 5, 3, 1, 1, 4, 2]));
    for blocks in [alone, before] {
        let p = packet(Some((s.id(), 0)), None, false, &blocks);
        let got = tickpack::decode(&s, &p, None);
        assert!(
            matches!(got, Err(DecodeError::Zstd { offset: 7, .. })),
            "{got:?}"
        );
    }
}

/// A format-3 model block's end (FORMAT.md, "Model block", "End of a
/// block"): a keyframe whose values leave a few raw bits is re-spelt with its coded stream written out whole and the raw byte
/// after it; that spelling decodes, and a byte between the two streams
/// (`Trailing`) and set padding bits (`Padding`) are refused.
#[test]
fn model_block_ends_are_checked() {
    use tickpack::model::{ModelError, ModelTable};
    let s = schema();
    let mut enc = tickpack::Encoder::new(s.clone());
    let table = ModelTable::uniform(enc.model_shape().unwrap()).unwrap();
    let dict = Dictionary::new(5, vec![1u8; 64]).with_model(table);
    enc.set_dictionary(Some(&dict)).unwrap();
    enc.set_entropy(tickpack::Entropy::Model);
    let snap = baseline_snapshot(&s);
    let p = enc.encode(&snap, 10, None).unwrap();
    let mut dec = Decoder::new(s.clone());
    dec.add_dictionary(&dict).unwrap();
    let (h, head) = tickpack::PacketHeader::parse(&p).unwrap();
    assert!(h.model);
    assert_eq!(dec.decode(&p, None).unwrap().1, snap);
    let (front, body) = (&p[..head], &p[head..]);
    // The explicit spelling: the coded bytes the decoder reads (zeros
    // past the end), then the raw stream (a few bits) in a byte of its own.
    let spell = |coded: usize, mid: &[u8], raw: u8| {
        let mut q = front.to_vec();
        q.extend((0..coded).map(|i| body.get(i).copied().unwrap_or(0)));
        q.extend_from_slice(mid);
        q.push(raw);
        q
    };
    // Longer coded spellings leave a byte unread: the longest that
    // decodes is the coded stream's whole read, with the one raw byte
    // whose padding is zero.
    let (coded, raw) = (1..body.len() + 5)
        .rev()
        .flat_map(|c| (0..=255u8).map(move |r| (c, r)))
        .find(|&(c, r)| dec.decode(&spell(c, &[], r), None).map(|r| r.1) == Ok(snap.clone()))
        .unwrap();
    assert!(raw < 0x80);
    let model = |error| DecodeError::Model {
        offset: head,
        error,
    };
    assert_eq!(
        dec.decode(&spell(coded, &[0x00], raw), None).map(|_| ()),
        Err(model(ModelError::Trailing {
            len: coded + 2,
            consumed: coded + 1
        }))
    );
    assert_eq!(
        dec.decode(&spell(coded, &[], raw | 0x80), None).map(|_| ()),
        Err(model(ModelError::Padding))
    );
}
