//! Shared test helpers: random schemas and snapshots, and one `roundtrip`
//! that drives every encode and decode path and checks they agree.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use tickpack::{
    Baseline, Decoder, DeltaOp, Dictionary, Encoder, Field, PacketHeader, Primitive, Schema,
    Section, SectionRef, Snapshot,
};

pub const PRIMS: [Primitive; 10] = [
    Primitive::U8,
    Primitive::I8,
    Primitive::U16,
    Primitive::I16,
    Primitive::U32,
    Primitive::I32,
    Primitive::U64,
    Primitive::I64,
    Primitive::F32,
    Primitive::F64,
];

pub const OPS: [Option<DeltaOp>; 5] = [
    None,
    Some(DeltaOp::Sub),
    Some(DeltaOp::Xor),
    Some(DeltaOp::Int),
    Some(DeltaOp::None),
];

pub fn schema_strategy() -> impl Strategy<Value = Schema> {
    proptest::collection::vec(
        proptest::collection::vec((0..PRIMS.len(), 1usize..4, 0..OPS.len()), 1..6),
        1..4,
    )
    .prop_map(|types| {
        let mut b = Schema::builder();
        for (t, fields) in types.iter().enumerate() {
            b = b.entity(&format!("type{t}"));
            for (f, &(p, len, op)) in fields.iter().enumerate() {
                b = b.field_with(Field {
                    name: format!("f{f}"),
                    ty: PRIMS[p],
                    len,
                    delta: OPS[op],
                });
            }
        }
        b.build().unwrap()
    })
}

/// A deterministic xorshift generator for test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A random snapshot: up to `max` entities per section with ids below `id_range`.
pub fn random_snapshot(schema: &Schema, rng: &mut Rng, max: usize, id_range: u32) -> Snapshot {
    let mut snap = Snapshot::new(schema);
    for (i, ty) in schema.sections().iter().enumerate() {
        let n = rng.below(max as u64 + 1) as usize;
        let sec = snap.section_mut(i).unwrap();
        for _ in 0..n {
            let id = rng.below(u64::from(id_range)) as u32;
            sec.insert(id, &rng.bytes(ty.record_size())).unwrap();
        }
    }
    snap
}

/// The next tick: some entities despawn, some spawn, some change a little
/// (one byte or one small integer step), most stay the same.
pub fn evolve(schema: &Schema, prev: &Snapshot, rng: &mut Rng, id_range: u32) -> Snapshot {
    let mut next = prev.clone();
    for (i, ty) in schema.sections().iter().enumerate() {
        let sec = next.section_mut(i).unwrap();
        let ids: Vec<u32> = sec.ids().to_vec();
        for id in ids {
            match rng.below(10) {
                0 => {
                    sec.remove(id);
                }
                1..=3 => {
                    let mut rec = sec.get(id).unwrap().to_vec();
                    let at = rng.below(rec.len() as u64) as usize;
                    rec[at] = rec[at].wrapping_add(rng.below(5) as u8);
                    sec.insert(id, &rec).unwrap();
                }
                4 => {
                    let rec = rng.bytes(ty.record_size());
                    sec.insert(id, &rec).unwrap();
                }
                _ => {}
            }
        }
        for _ in 0..rng.below(4) {
            let id = rng.below(u64::from(id_range)) as u32;
            sec.insert(id, &rng.bytes(ty.record_size())).unwrap();
        }
    }
    next
}

/// Encodes through every encoder path, checks they produce the same bytes,
/// decodes through every decoder path, checks each equals `snap`, and
/// returns the packet.
pub fn roundtrip(
    schema: &Schema,
    snap: &Snapshot,
    sequence: u16,
    baseline: Option<(u16, &Snapshot)>,
    dict: Option<&Dictionary>,
) -> Vec<u8> {
    let base = baseline.map(|(sequence, snapshot)| Baseline { sequence, snapshot });
    let mut enc = Encoder::new(schema.clone());
    enc.set_dictionary(dict).unwrap();
    let packet = enc.encode(snap, sequence, base).unwrap();

    let mut v = vec![0xee; 3];
    enc.encode_to_vec(snap, sequence, base, &mut v).unwrap();
    assert_eq!(v, packet, "encode_to_vec");

    let refs: Vec<SectionRef<'_>> = snap.sections().iter().map(Section::as_ref).collect();
    let mut v2 = Vec::new();
    enc.encode_sections(&refs, sequence, base, &mut v2).unwrap();
    assert_eq!(v2, packet, "encode_sections");

    let mut buf = vec![0u8; enc.max_encoded_len(snap, baseline.map(|b| b.1))];
    let n = enc.encode_into(snap, sequence, base, &mut buf).unwrap();
    assert_eq!(&buf[..n], &packet[..], "encode_into");
    // Exactly sized output also works; one byte less fails cleanly.
    let mut exact = vec![0u8; n];
    assert_eq!(
        enc.encode_into(snap, sequence, base, &mut exact).unwrap(),
        n
    );
    if n > 0 {
        let mut short = vec![0u8; n - 1];
        assert!(matches!(
            enc.encode_into(snap, sequence, base, &mut short),
            Err(tickpack::EncodeError::OutputTooSmall { .. })
        ));
    }

    if dict.is_none() {
        assert_eq!(
            tickpack::encode(schema, snap, sequence, base).unwrap(),
            packet,
            "one-shot encode"
        );
        let (h, s) = tickpack::decode(schema, &packet, base).unwrap();
        assert_eq!(&s, snap, "one-shot decode");
        assert_eq!(h.sequence, sequence);
    }

    let mut dec = Decoder::new(schema.clone());
    if let Some(d) = dict {
        dec.add_dictionary(d).unwrap();
    }
    let (h, got) = dec.decode(&packet, base).unwrap();
    assert_eq!(&got, snap, "decode");
    assert_eq!(
        h,
        PacketHeader {
            sequence,
            baseline: baseline.map(|b| b.0),
            prior: None,
            dictionary: dict.is_some(),
            // Keyframes name the schema and dictionary; deltas do not.
            ids: baseline.is_none().then_some(tickpack::PacketIds {
                schema_id: schema.id(),
                dictionary_id: dict.map(Dictionary::id),
            }),
            checksum: tickpack::Checksum::None,
        }
    );
    // Decoding into a snapshot full of 0xFF junk gives the same result.
    let mut junk = Snapshot::new(schema);
    for (i, ty) in schema.sections().iter().enumerate() {
        for id in [0, 3, 99, u32::MAX] {
            junk.section_mut(i)
                .unwrap()
                .insert(id, &vec![0xff; ty.record_size()])
                .unwrap();
        }
    }
    let h2 = dec.decode_into(&packet, base, &mut junk).unwrap();
    assert_eq!(h2, h);
    assert_eq!(&junk, snap, "decode_into over junk");
    packet
}
