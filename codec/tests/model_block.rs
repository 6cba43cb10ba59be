//! The model block end to end: a table trained with `Encoder::model_tokens`
//! and attached to a dictionary codes packets that decode bit-exactly;
//! corrupt or truncated model blocks are typed errors.
#![allow(clippy::unwrap_used)]

use tickpack::model::{ModelStats, ModelTable};
use tickpack::{
    Baseline, DecodeError, Decoder, DeltaOp, Dictionary, Encoder, Entropy, Field, Primitive,
    Schema, Snapshot,
};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn schema() -> Schema {
    let f = |name: &str, ty, len, delta| Field {
        name: name.into(),
        ty,
        len,
        delta,
    };
    Schema::builder()
        .entity("frame")
        .field("time", Primitive::U32, 1)
        .entity("ship")
        .field_with(f("pos", Primitive::F32, 3, None))
        .field_with(f("vel", Primitive::F32, 3, None))
        .field_with(f("hp", Primitive::I16, 1, None))
        .field_with(f("flags", Primitive::U8, 1, Some(DeltaOp::Xor)))
        .field_with(f("angle", Primitive::F64, 1, None))
        .field_with(f("stamp", Primitive::U64, 1, Some(DeltaOp::Sub)))
        .field_with(f("ammo", Primitive::I32, 9, None))
        .build()
        .unwrap()
}

fn ship(rng: &mut Rng, prev: Option<&[u8]>) -> Vec<u8> {
    let mut rec = prev.map_or_else(|| vec![0u8; 79], <[u8]>::to_vec);
    let mut put = |at: usize, bytes: &[u8]| rec[at..at + bytes.len()].copy_from_slice(bytes);
    for axis in 0..3 {
        // Whole numbers mostly, now and then a fraction, NaN or -0.0.
        let v = match rng.below(40) {
            0 => f32::from_bits(0x7fc0_0000 | rng.next() as u32 & 0x3f_ffff),
            1 => -0.0,
            2..=6 => rng.below(4000) as f32 / 7.0,
            _ => rng.below(8000) as f32 - 4000.0,
        };
        if prev.is_none() || rng.below(3) == 0 {
            put(axis * 4, &v.to_le_bytes());
            put(
                12 + axis * 4,
                &((rng.below(640) as f32) - 320.0).to_le_bytes(),
            );
        }
    }
    if rng.below(5) == 0 {
        put(24, &(rng.below(200) as i16).to_le_bytes());
        put(26, &[rng.next() as u8]);
    }
    if rng.below(4) == 0 {
        put(27, &(rng.next() as f64 / 3.0).to_le_bytes());
        put(35, &rng.next().to_le_bytes());
    }
    if rng.below(6) == 0 {
        let slot = rng.below(9) as usize;
        put(43 + 4 * slot, &[rng.next() as u8]);
    }
    rec
}

fn ticks(seed: u64, n: usize) -> Vec<Snapshot> {
    let schema = schema();
    let mut rng = Rng(seed);
    let mut out: Vec<Snapshot> = Vec::new();
    for t in 0..n {
        let mut snap = match out.last() {
            Some(p) => p.clone(),
            None => Snapshot::new(&schema),
        };
        snap.section_mut(0)
            .unwrap()
            .insert(0, &(t as u32 * 50).to_le_bytes())
            .unwrap();
        let sec = snap.section_mut(1).unwrap();
        for id in sec.ids().to_vec() {
            match rng.below(30) {
                0 => {
                    sec.remove(id);
                }
                1..=15 => {
                    let rec = ship(&mut rng, sec.get(id));
                    sec.insert(id, &rec).unwrap();
                }
                _ => {}
            }
        }
        for _ in 0..rng.below(3) {
            let id = rng.below(64) as u32;
            let rec = ship(&mut rng, None);
            sec.insert(id, &rec).unwrap();
        }
        out.push(snap);
    }
    out
}

/// The baseline of tick `t`: 1 to 3 ticks back, none for tick 0.
fn base_of(t: usize) -> Option<usize> {
    (t > 0).then(|| t - 1 - (t % 3).min(t - 1))
}

fn trained_dictionary(schema: &Schema) -> Dictionary {
    let mut enc = Encoder::new(schema.clone());
    let mut stats = ModelStats::new(enc.model_shape().unwrap()).unwrap();
    let train = ticks(0x5eed_0001, 300);
    for (t, snap) in train.iter().enumerate() {
        let base = base_of(t).map(|b| Baseline {
            sequence: b as u16,
            snapshot: &train[b],
        });
        enc.model_tokens(snap, t as u16, base, &mut stats).unwrap();
    }
    assert_eq!(stats.error(), None);
    let table = ModelTable::from_stats(&stats);
    let bytes = table.to_bytes();
    assert_eq!(ModelTable::from_bytes(&bytes).unwrap(), table);
    Dictionary::new(7, (0..256u32).map(|i| (i * 7) as u8).collect::<Vec<u8>>()).with_model(table)
}

fn packets(entropy: Entropy, dict: &Dictionary, snaps: &[Snapshot]) -> Vec<Vec<u8>> {
    let mut enc = Encoder::new(schema());
    enc.set_dictionary(Some(dict)).unwrap();
    enc.set_entropy(entropy);
    snaps
        .iter()
        .enumerate()
        .map(|(t, snap)| {
            let base = base_of(t).map(|b| Baseline {
                sequence: b as u16,
                snapshot: &snaps[b],
            });
            enc.encode(snap, t as u16, base).unwrap()
        })
        .collect()
}

fn decode(
    dec: &mut Decoder,
    snaps: &[Snapshot],
    t: usize,
    packet: &[u8],
) -> Result<Snapshot, DecodeError> {
    let base = base_of(t).map(|b| Baseline {
        sequence: b as u16,
        snapshot: &snaps[b],
    });
    dec.decode(packet, base).map(|(_, s)| s)
}

#[test]
fn model_packets_round_trip_bit_exactly() {
    let schema = schema();
    let dict = trained_dictionary(&schema);
    let snaps = ticks(0x5eed_0002, 200);
    let mut dec = Decoder::new(schema.clone());
    dec.add_dictionary(&dict).unwrap();
    let model = packets(Entropy::Model, &dict, &snaps);
    let best = packets(Entropy::Best, &dict, &snaps);
    let zstd = packets(Entropy::Zstd, &dict, &snaps);
    let mut differ = 0;
    for t in 0..snaps.len() {
        for p in [&model[t], &best[t], &zstd[t]] {
            let got = decode(&mut dec, &snaps, t, p).unwrap();
            // Bit-exact, NaN payloads included.
            assert_eq!(got, snaps[t], "tick {t}");
        }
        // `Best` sends the model stream, or blocks smaller than it and no
        // larger than the zstd-only packet's.
        assert!(
            best[t] == model[t]
                || (best[t].len() < model[t].len() && best[t].len() <= zstd[t].len()),
            "tick {t}"
        );
        differ += usize::from(model[t] != zstd[t]);
    }
    assert!(differ > snaps.len() / 2, "model used in {differ} packets");
}

#[test]
fn corrupt_and_truncated_model_blocks_are_errors_or_values() {
    let schema = schema();
    let dict = trained_dictionary(&schema);
    let snaps = ticks(0x5eed_0003, 40);
    let model = packets(Entropy::Model, &dict, &snaps);
    let mut dec = Decoder::new(schema.clone());
    dec.add_dictionary(&dict).unwrap();
    let mut rng = Rng(99);
    let mut refused = 0;
    for (t, p) in model.iter().enumerate().skip(1) {
        for cut in 0..p.len() {
            let _ = decode(&mut dec, &snaps, t, &p[..cut]);
        }
        for _ in 0..50 {
            let mut q = p.clone();
            let at = rng.below(q.len() as u64) as usize;
            q[at] ^= 1 << rng.below(8);
            let _ = decode(&mut dec, &snaps, t, &q);
        }
        // Bytes appended move the raw stream (read from the block's
        // end): its bits change, and the end check or the values' checks
        // refuse some such packets; the rest decode to another snapshot,
        // like any corruption without a checksum (15 of 39 refused here).
        let mut longer = p.clone();
        longer.extend_from_slice(&[0x5a, 0]);
        refused += usize::from(decode(&mut dec, &snaps, t, &longer).is_err());
        // Corrupt packets leave the decoder as it was.
        assert_eq!(decode(&mut dec, &snaps, t, p).unwrap(), snaps[t]);
    }
    assert!(refused * 4 >= model.len() - 1, "{refused}");
}

/// A model packet decoded while the agreed dictionary has no table fails,
/// and leaves the schema's context map in place for the packets after it
/// (the decoder lost it, and refused every later model packet with
/// `MissingModelTable`).
#[test]
fn a_model_packet_without_its_table_does_not_break_later_ones() {
    let schema = schema();
    let dict = trained_dictionary(&schema);
    let snaps = ticks(0x5eed_0004, 6);
    let model = packets(Entropy::Model, &dict, &snaps);
    let mut dec = Decoder::new(schema.clone());
    dec.add_dictionary(&dict).unwrap();
    dec.add_dictionary(&Dictionary::new(8, vec![3u8; 64]))
        .unwrap();
    dec.agree(Some(8), Some(7)).unwrap();
    assert!(matches!(
        decode(&mut dec, &snaps, 1, &model[1]),
        Err(DecodeError::MissingModelTable { .. })
    ));
    dec.agree(Some(7), Some(7)).unwrap();
    for t in 1..snaps.len() {
        assert_eq!(decode(&mut dec, &snaps, t, &model[t]).unwrap(), snaps[t]);
    }
}

#[test]
fn a_model_block_needs_the_model_table() {
    let schema = schema();
    let dict = trained_dictionary(&schema);
    let snaps = ticks(0x5eed_0004, 10);
    let model = packets(Entropy::Model, &dict, &snaps);
    // Same id and bytes, no table.
    let bare = Dictionary::new(dict.id(), dict.bytes().to_vec());
    let mut dec = Decoder::new(schema);
    dec.add_dictionary(&bare).unwrap();
    let errs = (1..snaps.len())
        .filter(|&t| {
            matches!(
                decode(&mut dec, &snaps, t, &model[t]),
                Err(DecodeError::MissingModelTable { .. })
            )
        })
        .count();
    assert!(errs > 0);
}

/// `Entropy::Model` sends the model stream without comparing it with the
/// blocks, and a table trained on other traffic may make that stream
/// longer than the payload: `max_encoded_len` still bounds the packet, so
/// `encode_into` with a buffer of that size succeeds.
#[test]
fn max_encoded_len_bounds_a_mispredicted_model_stream() {
    let schema = Schema::builder()
        .entity("crate")
        .field("b", Primitive::U8, 64)
        .build()
        .unwrap();
    let all = |v: u8| {
        let mut snap = Snapshot::new(&schema);
        for id in 0..4 {
            snap.section_mut(0).unwrap().insert(id, &[v; 64]).unwrap();
        }
        snap
    };
    let (zero, one, down) = (all(0), all(1), all(0u8.wrapping_sub(97)));
    let base = Baseline {
        sequence: 0,
        snapshot: &zero,
    };
    // Trained where every element goes up by one; coded where every
    // element goes down by 97.
    let mut enc = Encoder::new(schema.clone());
    let mut stats = ModelStats::new(enc.model_shape().unwrap()).unwrap();
    for _ in 0..50 {
        enc.model_tokens(&one, 1, base, &mut stats).unwrap();
    }
    let dict = Dictionary::new(9, vec![0; 64]).with_model(ModelTable::from_stats(&stats));
    enc.set_dictionary(Some(&dict)).unwrap();
    enc.set_entropy(Entropy::Model);
    let packet = enc.encode(&down, 1, base).unwrap();
    let mut out = vec![0u8; enc.max_encoded_len(&down, Some(&zero))];
    let n = enc.encode_into(&down, 1, base, &mut out).unwrap();
    assert_eq!(out[..n], packet[..]);
    let mut dec = Decoder::new(schema);
    dec.add_dictionary(&dict).unwrap();
    assert_eq!(dec.decode(&packet, base).unwrap().1, down);
}

/// A dictionary whose model table another schema trained (here: one whose
/// rotation is a unit field, which changes the rotation's contexts) is
/// refused by encoders and decoders of this schema, rather than ignored
/// packet after packet.
#[test]
fn a_table_of_another_schema_is_refused() {
    let build = |unit: bool| {
        let b = Schema::builder()
            .entity("car")
            .field("pos", Primitive::F32, 3)
            .field("rot", Primitive::F32, 4);
        let b = if unit { b.unit() } else { b };
        b.build().unwrap()
    };
    let (plain, unit) = (build(false), build(true));
    let table = |s: &Schema| {
        let enc = Encoder::new(s.clone());
        ModelTable::from_stats(&ModelStats::new(enc.model_shape().unwrap()).unwrap())
    };
    let dict = Dictionary::new(0x55, vec![7; 64]).with_model(table(&unit));
    assert!(Encoder::new(unit.clone())
        .set_dictionary(Some(&dict))
        .is_ok());
    assert!(Decoder::new(unit).add_dictionary(&dict).is_ok());
    let refused = Err(tickpack::DictionaryError::ModelMismatch { id: 0x55 });
    assert_eq!(
        Encoder::new(plain.clone()).set_dictionary(Some(&dict)),
        refused
    );
    assert_eq!(Decoder::new(plain).add_dictionary(&dict), refused);
}
