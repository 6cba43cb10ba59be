//! Every prototype against the shipped coder on random tables and tokens:
//! the values come back, and arbitrary bytes decode to values or a typed
//! error without panicking.

use tickpack::model::{ModelShape, ModelTable, VALUE_SLOTS};

use super::binary::Binary;
use super::rans::Rans;
use super::reference::Reference;
use super::{Coder, Kind, Token};

fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

fn table(next: &mut impl FnMut() -> u64) -> ModelTable {
    let shape = ModelShape {
        bit_contexts: 20,
        value_contexts: 3,
    };
    let n = 20 + 3 * VALUE_SLOTS;
    let probs = (0..n)
        .map(|_| {
            let r = next();
            match r % 3 {
                0 => 1 + (r >> 8) as u16 % 4095,
                1 => 4095 - (r >> 8) as u16 % 32,
                _ => 1 + (r >> 8) as u16 % 32,
            }
        })
        .collect();
    ModelTable::from_probabilities(shape, probs).unwrap()
}

fn tokens(next: &mut impl FnMut() -> u64) -> Vec<Token> {
    (0..next() % 300)
        .map(|_| {
            let r = next();
            match r % 3 {
                0 => Token {
                    kind: Kind::Bit,
                    ctx: (r >> 8) as u32 % 20,
                    value: (r >> 40) & 1,
                },
                k => Token {
                    kind: if k == 1 { Kind::Uint } else { Kind::Sint },
                    ctx: (r >> 8) as u32 % 3,
                    value: next() >> (next() % 65).min(63),
                },
            }
        })
        .collect()
}

fn coders(t: &ModelTable) -> Vec<Box<dyn Coder + '_>> {
    vec![
        Box::new(Reference::new(t)),
        Box::new(Binary::<true>::new(t)),
        Box::new(Binary::<false>::new(t)),
        Box::new(Binary::<false, true>::new(t)),
        Box::new(Rans::<1, 23>::new(t)),
        Box::new(Rans::<2, 23>::new(t)),
        Box::new(Rans::<1, 15>::new(t)),
        Box::new(Rans::<2, 15>::new(t)),
    ]
}

#[test]
fn every_coder_round_trips() {
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    for _ in 0..200 {
        let t = table(&mut next);
        let toks = tokens(&mut next);
        let want: Vec<u64> = toks.iter().map(|t| t.value).collect();
        for (i, mut c) in coders(&t).into_iter().enumerate() {
            let mut block = Vec::new();
            c.encode(&toks, &mut block);
            let mut got = Vec::new();
            assert_eq!(c.decode(&toks, &block, &mut got), Ok(()), "coder {i}");
            assert_eq!(got, want, "coder {i}");
            // rANS refuses one byte more (its streams account for every
            // byte); the range coders' four-byte lookahead may take it.
            // (Coders 0-3 are the range coders, rANS follow.)
            block.push(1);
            assert!(
                i < 4 || c.decode(&toks, &block, &mut got).is_err(),
                "coder {i}"
            );
        }
    }
}

/// Short streams, many of them: a flush whose last needed byte is zero
/// (one packet in 256) comes up.
#[test]
fn short_streams_round_trip() {
    let mut next = xorshift(0x1234_5678_9abc_def1);
    let t = table(&mut next);
    let mut cs = coders(&t);
    for _ in 0..4000 {
        let mut toks = tokens(&mut next);
        toks.truncate((next() % 12) as usize);
        let want: Vec<u64> = toks.iter().map(|t| t.value).collect();
        for (i, c) in cs.iter_mut().enumerate() {
            let (mut block, mut got) = (Vec::new(), Vec::new());
            c.encode(&toks, &mut block);
            assert_eq!(c.decode(&toks, &block, &mut got), Ok(()), "coder {i}");
            assert_eq!(got, want, "coder {i}");
        }
    }
}

#[test]
fn arbitrary_bytes_decode_or_fail_without_panic() {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let mut errors = [0usize; 8];
    for _ in 0..300 {
        let t = table(&mut next);
        let toks = tokens(&mut next);
        let block: Vec<u8> = (0..next() % 64).map(|_| next() as u8).collect();
        for (i, mut c) in coders(&t).into_iter().enumerate() {
            let mut got = Vec::new();
            if c.decode(&toks, &block, &mut got).is_err() {
                errors[i] += 1;
            }
        }
    }
    // The prototypes' end checks refuse most junk (the shipped coder
    // reads zeros past the end and takes more).
    assert!(errors[1..].iter().all(|&e| e > 150), "{errors:?}");
}
