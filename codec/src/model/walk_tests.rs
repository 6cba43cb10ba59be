//! The model walk's sink and source against single tokens: the fused
//! row paths code and read the same decisions.

use super::*;

/// One element token of a row: section, walk row kind, element, kind
/// bit, value.
type Elem = (usize, u32, usize, Option<bool>, u64);

/// Random element tokens over `floats`, some outside the map (an
/// element past its section, a kind bit on a non-float element, a
/// section past the schema) when `stray`.
fn tokens(floats: &[Vec<bool>], next: &mut impl FnMut() -> u64, stray: bool) -> Vec<Elem> {
    (0..next() % 60)
        .map(|_| {
            let s = (next() % floats.len() as u64) as usize;
            let row = (next() % 3) as u32;
            let mut e = (next() % floats[s].len() as u64) as usize;
            let r = next();
            let mut kind = (floats[s][e] && r & 1 == 0).then_some(r & 4 == 4);
            if stray && r % 23 == 1 {
                e = floats[s].len() + (r >> 8) as usize % 3;
            }
            if stray && r % 29 == 2 {
                kind = Some(true);
            }
            let s = if stray && r % 31 == 3 {
                floats.len()
            } else {
                s
            };
            let v = next() >> (next() % 64);
            (s, row, e, kind, v)
        })
        .collect()
}

/// The element count of section `s` of `floats` (5 past them).
fn width(floats: &[Vec<bool>], s: usize) -> usize {
    floats.get(s).map_or(5, Vec::len)
}

/// Codes `elems` (each after a row mask made of its value's bits, for
/// even values with some groups marked but empty) with
/// [`TokenSink::row_mask`] and [`TokenSink::element`] when `fused`,
/// else as single tokens.
fn encode(
    map: &ContextMap,
    floats: &[Vec<bool>],
    table: &ModelTable,
    elems: &[Elem],
    fused: bool,
) -> Result<Vec<u8>, ModelError> {
    let mut sink = WalkSink::new(map, ModelEncoder::new(table, Vec::new()));
    for &(s, row, e, kind, v) in elems {
        let n = width(floats, s);
        let groups = n.div_ceil(tokens::GROUP);
        let bits = v & (u64::MAX >> (64 - n.min(64)));
        if groups <= 1 {
            sink.group(s, row, 0, n, v as u8);
        } else if v & 1 == 1 && fused {
            sink.row_mask(s, row, n, bits);
        } else if v & 1 == 1 {
            tokens::write_row_mask_by_tokens(&mut sink, s, row, n, bits);
        } else {
            let marked = (v >> 32) & ((1 << groups) - 1);
            sink.groups(s, row, 0, groups, marked);
            for g in (0..groups).filter(|g| (marked >> g) & 1 == 1) {
                let first = g * tokens::GROUP;
                let m = (n - first).min(tokens::GROUP);
                sink.group(s, row, first, m, (v >> first) as u8);
            }
        }
        if fused {
            sink.element(s, row, e, kind, v);
        } else {
            tokens::element_by_tokens(&mut sink, s, row, e, kind, v);
        }
    }
    sink.finish()?.finish()
}

/// What [`decode`] reads of one element token: the row mask (`Err`
/// for a marked group without a changed element), the kind bit and
/// the value.
type Read = (Result<u64, ()>, bool, u64);

/// Reads `elems`' tokens back from `bytes` with
/// [`TokenSource::row_mask`] and [`TokenSource::float_value`] when
/// `fused`, else as single tokens: every result until the first error
/// (or the first empty marked group).
fn decode(
    map: &ContextMap,
    floats: &[Vec<bool>],
    table: &ModelTable,
    bytes: &[u8],
    elems: &[Elem],
    fused: bool,
) -> Vec<Result<Read, DecodeError>> {
    let Ok(dec) = ModelDecoder::new(table, bytes) else {
        return Vec::new();
    };
    let mut src = WalkSource::new(map, dec, 7);
    let mut out = Vec::new();
    for &(s, row, e, kind, _) in elems {
        let n = width(floats, s);
        let mask = if fused {
            src.row_mask(s, row, n)
        } else {
            tokens::read_mask_bits_by_tokens(&mut src, s, row, n)
        };
        let got = mask.and_then(|g| {
            let kv = if fused {
                src.float_value(s, row, e, kind.is_some())
            } else {
                tokens::float_value_by_tokens(&mut src, s, row, e, kind.is_some())
            };
            kv.map(|(k, v)| (g, k, v))
        });
        let stop = !matches!(got, Ok((Ok(_), _, _)));
        out.push(got);
        if stop {
            break;
        }
    }
    out
}

#[test]
fn element_tokens_code_as_single_tokens() {
    let mut x = 0x5851_f42d_4c95_7f2d_u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let schemas = [
        vec![vec![true]],
        vec![
            vec![false, true, true],
            (0..17).map(|i| i % 3 != 1).collect(),
        ],
        vec![
            (0..15).map(|i| i % 2 == 0).collect(),
            vec![false; 16],
            vec![true; 16],
        ],
    ];
    let (mut fused_errors, mut empty_groups) = (0, 0);
    for floats in &schemas {
        for config in [ContextConfig::BLOCK, ContextConfig::ALL] {
            let map = ContextMap::new(floats, config).unwrap();
            let shape = map.shape();
            for _ in 0..40 {
                let probs = (0..shape.slots())
                    .map(|_| 1 + (next() % 4095) as u16)
                    .collect();
                let table = ModelTable::from_probabilities(shape, probs).unwrap();
                let stray = next() % 3 == 0;
                let elems = tokens(floats, &mut next, stray);
                let want = encode(&map, floats, &table, &elems, false);
                assert_eq!(encode(&map, floats, &table, &elems, true), want);
                // The coded stream, and arbitrary bytes.
                let junk: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
                for bytes in [want.clone().unwrap_or_default(), junk] {
                    let got = decode(&map, floats, &table, &bytes, &elems, true);
                    assert_eq!(got, decode(&map, floats, &table, &bytes, &elems, false));
                    empty_groups += usize::from(matches!(got.last(), Some(Ok((Err(()), _, _)))));
                    fused_errors += usize::from(got.last().is_some_and(Result::is_err));
                }
            }
        }
    }
    assert!(
        fused_errors > 10 && empty_groups > 10,
        "{fused_errors} {empty_groups}"
    );
}
