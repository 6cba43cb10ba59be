//! The context-model coder: token round trips, the shortest-tail flush,
//! hostile streams and the table loader.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use tickpack::model::{
    quantise, ModelDecoder, ModelEncoder, ModelError, ModelShape, ModelSink, ModelStats,
    ModelTable, PRIOR, VALUE_SLOTS,
};

#[derive(Debug, Clone, Copy)]
enum Token {
    Bit(u32, bool),
    Uint(u32, u64),
    Sint(u32, u64),
}

const SHAPE: ModelShape = ModelShape {
    bit_contexts: 3,
    value_contexts: 2,
};

fn feed(sink: &mut dyn ModelSink, tokens: &[Token]) {
    for &t in tokens {
        match t {
            Token::Bit(c, b) => sink.bit(c, b),
            Token::Uint(c, v) => sink.uint(c, v),
            Token::Sint(c, v) => sink.sint(c, v),
        }
    }
}

fn decode_all(table: &ModelTable, bytes: &[u8], tokens: &[Token]) -> Result<(), ModelError> {
    let mut dec = ModelDecoder::new(table, bytes)?;
    for &t in tokens {
        match t {
            Token::Bit(c, b) => assert_eq!(dec.bit(c)?, b),
            Token::Uint(c, v) => assert_eq!(dec.uint(c)?, v),
            Token::Sint(c, v) => assert_eq!(dec.sint(c)?, v),
        }
    }
    dec.finish()
}

fn trained(tokens: &[Token]) -> (ModelStats, ModelTable) {
    let mut stats = ModelStats::new(SHAPE).unwrap();
    feed(&mut stats, tokens);
    assert_eq!(stats.error(), None);
    let table = ModelTable::from_stats(&stats);
    (stats, table)
}

fn encode(table: &ModelTable, tokens: &[Token]) -> Vec<u8> {
    let mut enc = ModelEncoder::new(table, Vec::new());
    feed(&mut enc, tokens);
    enc.finish().unwrap()
}

fn any_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..4,
        0u64..300,
        any::<u16>().prop_map(u64::from),
        any::<u64>(),
        Just(u64::MAX),
        Just(1 << 63),
    ]
}

fn any_token() -> impl Strategy<Value = Token> {
    prop_oneof![
        (0u32..3, prop::bool::weighted(0.1)).prop_map(|(c, b)| Token::Bit(c, b)),
        (0u32..3, any::<bool>()).prop_map(|(c, b)| Token::Bit(c, b)),
        (0u32..2, any_value()).prop_map(|(c, v)| Token::Uint(c, v)),
        (0u32..2, any_value()).prop_map(|(c, v)| Token::Sint(c, v)),
    ]
}

proptest! {
    #[test]
    fn tokens_round_trip_with_trained_and_uniform_tables(
        tokens in prop::collection::vec(any_token(), 0..300),
    ) {
        let (stats, table) = trained(&tokens);
        let bytes = encode(&table, &tokens);
        prop_assert_eq!(decode_all(&table, &bytes, &tokens), Ok(()));
        // Never more than ~2 bytes over the ideal code length, plus the
        // truncation of 12-bit probabilities.
        let ideal = stats.cost_bits(&table).unwrap();
        prop_assert!((bytes.len() * 8) as f64 <= ideal * 1.01 + 16.0,
            "{} bytes for {} ideal bits", bytes.len(), ideal);

        let uniform = ModelTable::uniform(SHAPE).unwrap();
        let bytes = encode(&uniform, &tokens);
        prop_assert_eq!(decode_all(&uniform, &bytes, &tokens), Ok(()));
    }

    #[test]
    fn hostile_streams_decode_to_values_or_errors(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        ops in prop::collection::vec(0u8..3, 0..200),
    ) {
        let table = ModelTable::uniform(SHAPE).unwrap();
        let Ok(mut dec) = ModelDecoder::new(&table, &bytes) else { return Ok(()) };
        for op in ops {
            let r = match op {
                0 => dec.bit(1).map(u64::from),
                1 => dec.uint(0),
                _ => dec.sint(1),
            };
            if r.is_err() { break; }
        }
        let _ = dec.finish();
    }

    #[test]
    fn tables_round_trip(
        tokens in prop::collection::vec(any_token(), 0..200),
    ) {
        let (_, table) = trained(&tokens);
        let bytes = table.to_bytes();
        let back = ModelTable::from_bytes(&bytes);
        prop_assert_eq!(back.as_ref().map(ModelTable::to_bytes), Ok(bytes));
        prop_assert_eq!(back, Ok(table));
    }

    #[test]
    fn table_loader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        // A table that loads saves to the same bytes (one byte form).
        if let Ok(t) = ModelTable::from_bytes(&bytes) {
            prop_assert_eq!(t.to_bytes(), bytes);
        }
    }
}

#[test]
fn empty_and_certain_streams_take_no_bytes() {
    let table = ModelTable::uniform(SHAPE).unwrap();
    assert_eq!(encode(&table, &[]), Vec::<u8>::new());
    decode_all(&table, &[], &[]).unwrap();

    // A hundred near-certain decisions cost a fraction of a byte.
    let tokens: Vec<Token> = (0..100).map(|_| Token::Bit(0, false)).collect();
    let (_, table) = trained(&tokens);
    let bytes = encode(&table, &tokens);
    assert!(bytes.len() <= 1, "{bytes:?}");
    decode_all(&table, &bytes, &tokens).unwrap();
}

#[test]
fn short_flushes_keep_streams_decodable_at_every_length() {
    // Raw bits of all-zero values (the raw stream's bytes the coded
    // stream's last bytes may overlap), or of all-one values.
    for ones in [false, true] {
        for n in 0..40 {
            let v = |i: u64| (1 << (i % 20)) | if ones { (1 << (i % 20)) - 1 } else { 0 };
            let mut tokens: Vec<Token> = (0..n).map(|i| Token::Uint(0, v(i))).collect();
            tokens.push(Token::Uint(1, 1 << 40));
            let (_, table) = trained(&tokens);
            let bytes = encode(&table, &tokens);
            decode_all(&table, &bytes, &tokens).unwrap();
            // One byte less is an error or other values.
            if let Some(short) = bytes.get(..bytes.len().saturating_sub(1)) {
                assert!(
                    short.len() == bytes.len() || decode_all_ok(&table, short, &tokens).is_err()
                );
            }
        }
    }
}

/// [`decode_all`] without assertions: `Ok` only if every token decodes to
/// itself and the end check passes.
fn decode_all_ok(table: &ModelTable, bytes: &[u8], tokens: &[Token]) -> Result<(), ()> {
    let mut dec = ModelDecoder::new(table, bytes).map_err(drop)?;
    for &t in tokens {
        let same = match t {
            Token::Bit(c, b) => dec.bit(c).map(|x| x == b),
            Token::Uint(c, v) => dec.uint(c).map(|x| x == v),
            Token::Sint(c, v) => dec.sint(c).map(|x| x == v),
        };
        if same != Ok(true) {
            return Err(());
        }
    }
    dec.finish().map_err(drop)
}

#[test]
fn stream_errors_are_typed() {
    let table = ModelTable::uniform(SHAPE).unwrap();
    assert_eq!(
        ModelDecoder::new(&table, &[0xff; 4]).err(),
        Some(ModelError::BadStart)
    );
    let mut dec = ModelDecoder::new(&table, &[0x12]).unwrap();
    assert_eq!(dec.bit(3), Err(ModelError::BitContext { ctx: 3, count: 3 }));
    assert_eq!(
        dec.uint(2),
        Err(ModelError::ValueContext { ctx: 2, count: 2 })
    );

    // A valid stream without raw bits and bytes appended: bytes between
    // the coded stream and the (empty) raw stream.
    let tokens = [Token::Uint(0, 3), Token::Bit(2, true)];
    let mut bytes = encode(&table, &tokens);
    bytes.push(0x55);
    bytes.extend_from_slice(&[0; 8]);
    assert!(matches!(
        decode_all(&table, &bytes, &tokens),
        Err(ModelError::Trailing { .. })
    ));

    // A coded stream cut short: the decoder read more than 4 bytes past
    // the block's end.
    let mut dec = ModelDecoder::new(&table, &[0x00]).unwrap();
    for _ in 0..64 {
        assert_eq!(dec.bit(0), Ok(false));
    }
    assert!(matches!(
        dec.finish(),
        Err(ModelError::Overlap { len: 1, raw: 0, .. })
    ));

    // Encoding with an unknown context is an error at finish.
    let mut enc = ModelEncoder::new(&table, Vec::new());
    enc.bit(0, true);
    enc.sint(7, 3);
    enc.bit(9, true);
    assert_eq!(
        enc.finish(),
        Err(ModelError::ValueContext { ctx: 7, count: 2 })
    );
}

#[test]
fn quantisation_uses_the_prior_and_stays_in_range() {
    assert_eq!(quantise(0, 0), PRIOR);
    assert_eq!(quantise(1, 1), PRIOR);
    assert_eq!(quantise(u64::MAX, 0), 4095);
    assert_eq!(quantise(0, u64::MAX), 1);
    // (3 + 1/2) / (4 + 1) = 0.7 -> 2867.2
    assert_eq!(quantise(3, 1), 2867);
}

#[test]
fn stats_count_and_price_tokens() {
    let tokens = [
        Token::Bit(0, true),
        Token::Bit(0, false),
        Token::Uint(1, 5), // class 3: 6 tree decisions, 1 second bit, 1 raw bit
        Token::Sint(0, 3), // magnitude 2: class 2, 6 + 1 decisions + sign
    ];
    let (stats, table) = trained(&tokens);
    assert_eq!(stats.counts()[0], [1, 1]);
    assert_eq!(stats.raw_bits(), 1);
    let decisions: u64 = stats.counts().iter().map(|c| c[0] + c[1]).sum();
    assert_eq!(decisions, 2 + 7 + 8);
    let uniform = ModelTable::uniform(SHAPE).unwrap();
    assert_eq!(stats.cost_bits(&uniform).unwrap(), 18.0);
    assert!(stats.cost_bits(&table).unwrap() < 18.0);
    let bits0 = stats.slot_cost_bits(&uniform, 0, 3);
    assert_eq!(bits0, 2.0);

    let mut twice = stats.clone();
    twice.merge(&stats).unwrap();
    assert_eq!(twice.counts()[0], [2, 2]);
    let other = ModelStats::new(ModelShape {
        bit_contexts: 1,
        value_contexts: 0,
    })
    .unwrap();
    assert!(matches!(
        twice.merge(&other),
        Err(ModelError::ShapeMismatch { .. })
    ));
}

#[test]
fn slot_costs_under_a_smaller_table_do_not_panic() {
    // A table of another shape has fewer slots than the counts: the
    // slots it lacks are not priced.
    let (stats, _) = trained(&[Token::Bit(2, true), Token::Uint(1, 5)]);
    let small = ModelTable::uniform(ModelShape {
        bit_contexts: 2,
        value_contexts: 0,
    })
    .unwrap();
    assert_eq!(stats.slot_cost_bits(&small, 0, 3), 0.0);
    assert_eq!(stats.slot_cost_bits(&small, 2, usize::MAX), 0.0);
}

#[test]
fn merged_stats_keep_the_error_of_uncounted_tokens() {
    // Tokens outside the shape are not counted and leave an error; counts
    // merged from such stats miss them just the same.
    let mut bad = ModelStats::new(SHAPE).unwrap();
    feed(&mut bad, &[Token::Bit(0, true), Token::Uint(7, 5)]);
    let e = bad.error();
    assert!(matches!(e, Some(ModelError::ValueContext { ctx: 7, .. })));
    let mut merged = ModelStats::new(SHAPE).unwrap();
    merged.merge(&bad).unwrap();
    assert_eq!(merged.counts()[0], [0, 1]);
    assert_eq!(merged.error(), e);
}

fn sample_table_bytes() -> Vec<u8> {
    let tokens = [Token::Bit(0, true), Token::Uint(1, 9), Token::Sint(0, 77)];
    trained(&tokens).1.to_bytes()
}

fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    let n = bytes.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
    bytes
}

#[test]
fn table_loader_rejects_each_corruption_with_its_variant() {
    let good = sample_table_bytes();
    let slots = 3 + 2 * VALUE_SLOTS;
    assert_eq!(&good[..4], b"TPCM");
    let present = good.len() - 16 - slots.div_ceil(8) - 8;
    assert_eq!(present % 2, 0);

    let cases: Vec<(Vec<u8>, ModelError)> = vec![
        (
            good[..10].to_vec(),
            ModelError::TableTooShort {
                actual: 10,
                min: 24,
            },
        ),
        (
            reseal([b"TPCX".as_slice(), &good[4..]].concat()),
            ModelError::BadMagic {
                found: u32::from_le_bytes(*b"TPCX"),
            },
        ),
        (
            reseal([&good[..4], &[2], &good[5..]].concat()),
            ModelError::UnsupportedVersion { version: 2 },
        ),
        (
            reseal([&good[..5], &[16], &good[6..]].concat()),
            ModelError::BadPrecision {
                bits: 16,
                expected: 12,
            },
        ),
        (
            reseal([&good[..6], &[8, 0], &good[8..]].concat()),
            ModelError::ReservedNonZero { value: 8 },
        ),
        (
            reseal([&good[..12], &u32::MAX.to_le_bytes(), &good[16..]].concat()),
            ModelError::TooManySlots {
                slots: 3 + u64::from(u32::MAX) * VALUE_SLOTS as u64,
                limit: 1 << 20,
            },
        ),
        (
            reseal([&good[..good.len() - 8], &[0, 0], &good[good.len() - 8..]].concat()),
            ModelError::TableLength {
                expected: good.len(),
                actual: good.len() + 2,
            },
        ),
        (
            {
                let mut b = good.clone();
                let at = good.len() - 10;
                b[at] ^= 1;
                b
            },
            ModelError::Checksum {
                stored: u64::from_le_bytes(good[good.len() - 8..].try_into().unwrap()),
                computed: xxhash_rust::xxh3::xxh3_64(
                    &[
                        &good[..good.len() - 10],
                        &[good[good.len() - 10] ^ 1],
                        &good[good.len() - 9..good.len() - 8],
                    ]
                    .concat(),
                ),
            },
        ),
    ];
    for (bytes, want) in cases {
        assert_eq!(ModelTable::from_bytes(&bytes), Err(want), "{bytes:02x?}");
    }

    // A zero probability in the first present slot (slot 0: the bit context
    // trained on one 1).
    let mut b = good.clone();
    let at = 16 + slots.div_ceil(8);
    b[at] = 0;
    b[at + 1] = 0;
    assert_eq!(
        ModelTable::from_bytes(&reseal(b)),
        Err(ModelError::BadProbability { slot: 0, value: 0 })
    );
    // The prior written present: a second spelling of a table whose slot
    // 0 is absent (a table has one byte form).
    let mut b = good.clone();
    b[at] = 0x00;
    b[at + 1] = 0x08;
    assert_eq!(
        ModelTable::from_bytes(&reseal(b)),
        Err(ModelError::PresentPrior { slot: 0 })
    );

    // Presence bits past the last slot.
    let mut b = good.clone();
    let last = 16 + slots.div_ceil(8) - 1;
    assert_ne!(slots % 8, 0);
    b[last] |= 0x80;
    b.splice(good.len() - 8..good.len() - 8, [0, 8]);
    assert_eq!(
        ModelTable::from_bytes(&reseal(b)),
        Err(ModelError::BitmapPadding)
    );

    // A smaller limit refuses the same table.
    assert_eq!(
        ModelTable::from_bytes_limited(&good, 100),
        Err(ModelError::TooManySlots {
            slots: slots as u64,
            limit: 100
        })
    );
}

/// The worked example of FORMAT.md's model-block section: a table trained on
/// three tokens and the stream of those tokens, byte for byte.
#[test]
fn golden_table_and_stream() {
    let shape = ModelShape {
        bit_contexts: 1,
        value_contexts: 1,
    };
    let tokens = [Token::Bit(0, true), Token::Uint(0, 5), Token::Sint(0, 3)];
    let mut stats = ModelStats::new(shape).unwrap();
    feed(&mut stats, &tokens);
    let table = ModelTable::from_stats(&stats);
    let table_bytes = table.to_bytes();
    let mut enc = ModelEncoder::new(&table, Vec::new());
    feed(&mut enc, &tokens);
    let stream = enc.finish().unwrap();
    let uniform = ModelTable::uniform(shape).unwrap();
    let mut enc = ModelEncoder::new(&uniform, Vec::new());
    feed(&mut enc, &tokens);
    let uniform_stream = enc.finish().unwrap();
    assert_eq!(table_bytes, GOLDEN_TABLE);
    assert_eq!(stream, GOLDEN_STREAM);
    assert_eq!(uniform_stream, GOLDEN_UNIFORM_STREAM);
    let mut dec = ModelDecoder::new(&table, &stream).unwrap();
    assert!(dec.bit(0).unwrap());
    assert_eq!(dec.uint(0).unwrap(), 5);
    assert_eq!(dec.sint(0).unwrap(), 3);
    dec.finish().unwrap();
}

const GOLDEN_TABLE: &[u8] = &[
    0x54, 0x50, 0x43, 0x4d, 0x01, 0x0c, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x17, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x01, 0x00, 0x04, 0x55, 0x0d, 0x55,
    0x0d, 0x55, 0x0d, 0x55, 0x0d, 0xab, 0x02, 0x00, 0x0c, 0x00, 0x0c, 0x00, 0x04, 0x7d, 0x30, 0xf2,
    0x0b, 0x6f, 0x77, 0xf1, 0x08,
];
const GOLDEN_STREAM: &[u8] = &[0x7b];
const GOLDEN_UNIFORM_STREAM: &[u8] = &[0x86, 0x09];

#[test]
fn tables_from_probabilities_are_checked() {
    let shape = ModelShape {
        bit_contexts: 2,
        value_contexts: 0,
    };
    let t = ModelTable::from_probabilities(shape, vec![1, 4095]).unwrap();
    assert_eq!(t.probabilities(), &[1, 4095]);
    assert_eq!(
        ModelTable::from_probabilities(shape, vec![1]),
        Err(ModelError::SlotCount {
            expected: 2,
            actual: 1
        })
    );
    assert_eq!(
        ModelTable::from_probabilities(shape, vec![7, 4096]),
        Err(ModelError::BadProbability {
            slot: 1,
            value: 4096
        })
    );
}

/// A table of skewed node probabilities: slot `i` holds
/// `1 + (i · 997 + 123) mod 4095`.
fn skewed_table() -> ModelTable {
    let shape = ModelShape {
        bit_contexts: 1,
        value_contexts: 1,
    };
    let probs = (0..81u32).map(|i| (1 + (i * 997 + 123) % 4095) as u16);
    ModelTable::from_probabilities(shape, probs.collect()).unwrap()
}

const SKEWED_TOKENS: [Token; 8] = [
    Token::Uint(0, 0),
    Token::Bit(0, true),
    Token::Uint(0, 1),
    Token::Uint(0, 5),
    Token::Uint(0, 300),
    Token::Sint(0, 77),
    Token::Uint(0, 1 << 40),
    Token::Uint(0, u64::MAX),
];

/// Class leaf and second bit are one symbol over frequencies derived from
/// the slots' probabilities (FORMAT.md, "Head frequencies"); this stream pins
/// that arithmetic (a decoder written from FORMAT.md alone reads it back).
#[test]
fn golden_class_symbols() {
    let table = skewed_table();
    let bytes = encode(&table, &SKEWED_TOKENS);
    assert_eq!(bytes, GOLDEN_SKEWED_STREAM);
    decode_all(&table, &bytes, &SKEWED_TOKENS).unwrap();
}

const GOLDEN_SKEWED_STREAM: &[u8] = &[
    0x00, 0x00, 0xeb, 0xe8, 0x5c, 0x33, 0x65, 0x66, 0x07, 0x87, 0xa3, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x07, 0x59,
];

#[test]
fn symbol_targets_past_the_total_are_corrupt() {
    // code 0xffff8000 is r · 2^15 for the initial range: no leaf holds it.
    let table = ModelTable::uniform(SHAPE).unwrap();
    let mut dec = ModelDecoder::new(&table, &[0xff, 0xff, 0x80, 0x00]).unwrap();
    assert_eq!(dec.uint(0), Err(ModelError::Corrupt));
}
