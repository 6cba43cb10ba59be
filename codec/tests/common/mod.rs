//! One `roundtrip` that drives every encode and decode path and checks they
//! agree (the generators are in `tickpack-testkit`).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use tickpack::{
    Baseline, Decoder, Dictionary, Encoder, PacketHeader, Schema, Section, SectionRef, Snapshot,
};

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
            // The flag says what the packet holds: checked by decoding it.
            model: h.model,
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

/// A model table trained on `ticks`, each coded against the one before.
pub fn model_for(s: &Schema, ticks: &[Snapshot]) -> tickpack::model::ModelTable {
    let mut enc = Encoder::new(s.clone());
    let mut stats = tickpack::model::ModelStats::new(enc.model_shape().unwrap()).unwrap();
    for w in ticks.windows(2) {
        let base = Baseline {
            sequence: 0,
            snapshot: &w[0],
        };
        enc.model_tokens(&w[1], 1, base, &mut stats).unwrap();
    }
    tickpack::model::ModelTable::from_stats(&stats)
}
