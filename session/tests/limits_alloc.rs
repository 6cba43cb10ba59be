//! Limits shown with a counting allocator: hostile packets stay under the
//! configured caps (measured as peak heap growth during the call) and give
//! typed errors.
#![allow(clippy::unwrap_used)]

use tickpack::{Baseline, DecodeError, Decoder, Limits, Primitive, Schema, Snapshot};
use tickpack_session::{AckOutcome, Server, ServerConfig, View};

use tickpack_testkit::counting::{peak_of, Counting, SERIAL};

#[global_allocator]
static A: Counting = Counting;

fn schema() -> Schema {
    Schema::builder()
        .entity("e")
        .field("v", Primitive::U32, 4)
        .build()
        .unwrap()
}

/// A keyframe header naming the schema: version 3, sequence 0 (a keyframe: the ids follow).
fn header(schema: &Schema) -> Vec<u8> {
    let mut p = vec![0x03u8, 0, 0];
    p.extend_from_slice(&schema.id().to_le_bytes());
    p
}

const LIMITS: Limits = Limits {
    max_entities_per_section: 1000,
    max_decoded_bytes: 64 * 1024,
    max_snapshot_bytes: 1 << 20,
};

fn decoder(s: &Schema) -> Decoder {
    let mut d = Decoder::new(s.clone());
    d.set_limits(LIMITS);
    // Warm up: zstd context and scratch buffers are allocated on first use.
    let _ = d.decode(&[0xff], None);
    d
}

#[test]
fn decompression_bomb() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let mut dec = decoder(&s);
    // 800 bytes claiming 200 RLE blocks of 8 KiB = 1.6 MB.
    let mut p = header(&s);
    for _ in 0..199 {
        p.extend_from_slice(&[0x02, 0xff, 0x1f, 0x00]);
    }
    p.extend_from_slice(&[0x03, 0x80, 0x40, 0x00]);
    let mut out = Snapshot::new(&s);
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert_eq!(r, Err(DecodeError::DecodedTooLarge { limit: 64 * 1024 }));
    assert!(peak <= 2 * LIMITS.max_decoded_bytes, "peak {peak}");
    // A genuine packet from a sender with looser limits: 3,000 zero
    // records (48 KB of byte planes in the payload, 60 KB as a snapshot),
    // tiny on the wire, refused by count before anything is allocated for
    // them.
    let mut big = Snapshot::new(&s);
    for id in 0..3_000u32 {
        big.section_mut(0).unwrap().insert(id, &[0; 16]).unwrap();
    }
    let mut enc = tickpack::Encoder::new(s.clone());
    enc.set_limits(Limits {
        max_entities_per_section: 65_536,
        max_decoded_bytes: 1 << 20,
        max_snapshot_bytes: 1 << 20,
    });
    let p = enc.encode(&big, 0, None).unwrap();
    assert!(p.len() < 2000, "{} bytes", p.len());
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert_eq!(
        r,
        Err(DecodeError::TooManyEntities {
            section: 0,
            count: 3_000,
            limit: 1000
        })
    );
    assert!(peak <= 2 * LIMITS.max_decoded_bytes, "peak {peak}");
}

#[test]
fn absurd_entity_counts() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let mut dec = decoder(&s);
    let mut out = Snapshot::new(&s);
    // A keyframe announcing u32::MAX spawned entities in 6 bytes: section
    // flags "spawned", then the count minus one.
    let mut p = header(&s);
    p.push(0x01); // last block, raw: the rest of the packet
    p.extend_from_slice(&[0x04, 0xfe, 0xff, 0xff, 0xff, 0x0f]);
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert_eq!(
        r,
        Err(DecodeError::TooManyEntities {
            section: 0,
            count: u32::MAX as usize,
            limit: 1000
        })
    );
    assert!(peak < 4096, "peak {peak}");
    // 1000 spawned ids (allowed) but no rows: refused before the section
    // is allocated.
    let mut p = header(&s);
    p.push(0x01);
    p.extend_from_slice(&[0x04, 0xe7, 0x07]); // 1000 spawned
    p.extend(std::iter::repeat_n(0u8, 1000));
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{r:?}");
    assert!(peak < 16 * 1024, "peak {peak}");
}

#[test]
fn unknown_dictionary_and_garbage_acks() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let mut dec = decoder(&s);
    // A keyframe naming its schema and dictionary 0xdeadbeef.
    let mut p = header(&s);
    p[0] |= 0x20;
    p.extend_from_slice(&[0xef, 0xbe, 0xad, 0xde, 0x01, 0x00]);
    let (r, peak) = peak_of(|| dec.decode(&p, None));
    assert_eq!(
        r.map(|_| ()),
        Err(DecodeError::UnknownDictionary { id: 0xdead_beef })
    );
    assert!(peak < 1024, "peak {peak}");

    // A client acking sequences never sent: ignored, nothing allocated.
    let mut server = Server::new(s.clone(), ServerConfig::default()).unwrap();
    server.connect(1);
    let world = std::sync::Arc::new(Snapshot::new(&s));
    server.begin_tick(world);
    server.send(1, &View::all()).unwrap();
    let (unknown, peak) = peak_of(|| {
        (1..=u16::MAX)
            .filter(|&q| server.ack(1, q) == Ok(AckOutcome::Unknown))
            .count()
    });
    assert_eq!(unknown, 65_535);
    // The test harness may allocate a few bytes on another thread meanwhile.
    assert!(peak < 256, "acks allocate nothing, peak {peak}");
    assert_eq!(server.acked(1), None);
    let _ = Baseline {
        sequence: 0,
        snapshot: &Snapshot::new(&s),
    };
}
