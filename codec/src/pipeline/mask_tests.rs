//! The row masks' fast paths (types of up to 64 mask groups) against the
//! general walk and reader.

use super::layout::{ByteSink, ByteSource};
use super::tokens::{self, ctx, SectionTokens, Token, TokenSink};
use super::values::Kind;

/// Every decision a sink receives, bulk calls split into bits.
#[derive(Default)]
struct Recorder(Vec<(u32, u64)>);

impl TokenSink for Recorder {
    fn bit(&mut self, c: u32, b: bool) {
        self.0.push((c, u64::from(b)));
    }
    fn uint(&mut self, c: u32, v: u64) {
        self.0.push((c, v));
    }
}

fn rows(elements: usize, next: &mut impl FnMut() -> u32) -> SectionTokens {
    let mut t = SectionTokens::default();
    let n = 1 + next() as usize % 4;
    for r in 0..n {
        // Changed rows change something; a spawned row may not.
        let density = 1 + next() % 6;
        for e in 0..elements {
            if next().is_multiple_of(2 * density)
                || (r == 0 && e == elements - 1 && t.elems.is_empty())
            {
                t.elems.push(Token {
                    element: e as u32,
                    kind: Kind::Int,
                    value: u64::from(next() % 300),
                });
            }
        }
        t.row_end.push(t.elems.len() as u32);
    }
    t.changed = vec![0];
    t.spawned = (1..n as u32).collect();
    t.recalled = vec![false; n - 1];
    t
}

#[test]
fn masks_match_the_general_walk_and_read_back() {
    let mut x = 0x1234_5678_u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for elements in [9, 14, 16, 63, 64, 65, 200, 512] {
        for _ in 0..200 {
            let t = rows(elements, &mut next);
            let mut fast = Recorder::default();
            tokens::write_rows(&mut fast, 2, elements, &t);
            let mut general = Recorder::default();
            for r in 0..t.row_end.len() {
                let kind = t.row_kind(r);
                tokens::write_mask(&mut general, 2, kind, elements, t.row(r));
                for tok in t.row(r) {
                    let c = ctx::make(ctx::VALUE, 2, kind, tok.element as usize);
                    general.uint(c, tok.value);
                }
            }
            assert_eq!(fast.0, general.0, "{elements} elements");
            // The byte layout reads the masks back.
            let mut sink = ByteSink::default();
            sink.clear();
            tokens::write_rows(&mut sink, 2, elements, &t);
            let bytes = sink.bytes().to_vec();
            let mut src = ByteSource::new(&bytes);
            let (mut groups, mut changed) = (Vec::new(), Vec::new());
            for r in 0..t.row_end.len() {
                let kind = t.row_kind(r);
                tokens::read_mask(&mut src, 2, kind, elements, &mut groups, &mut changed)
                    .unwrap()
                    .unwrap();
                let want: Vec<u32> = t.row(r).iter().map(|tok| tok.element).collect();
                assert_eq!(changed, want);
                for tok in t.row(r) {
                    let c = ctx::make(ctx::VALUE, 2, kind, tok.element as usize);
                    assert_eq!(tokens::TokenSource::uint(&mut src, c).unwrap(), tok.value);
                }
            }
            src.finish().unwrap();
            // Rows of up to 64 elements read back as bits, the same way.
            if elements <= 64 {
                let mut src = ByteSource::new(&bytes);
                for r in 0..t.row_end.len() {
                    let kind = t.row_kind(r);
                    let bits = tokens::read_mask_bits(&mut src, 2, kind, elements)
                        .unwrap()
                        .unwrap();
                    let want = t.row(r).iter().fold(0u64, |b, tok| b | 1 << tok.element);
                    assert_eq!(bits, want);
                    for tok in t.row(r) {
                        let c = ctx::make(ctx::VALUE, 2, kind, tok.element as usize);
                        assert_eq!(tokens::TokenSource::uint(&mut src, c).unwrap(), tok.value);
                    }
                }
                src.finish().unwrap();
            }
        }
    }
}

/// Corrupted masks: the bit reader refuses what the list reader refuses,
/// with the same error, and takes the same bytes.
#[test]
fn mask_bits_refuse_what_the_list_refuses() {
    let mut x = 0x0bad_cafe_u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for elements in [1, 5, 8, 9, 14, 16, 40, 63, 64] {
        for _ in 0..2000 {
            let bytes: Vec<u8> = (0..next() % 6)
                .map(|_| match next() % 3 {
                    0 => 0,
                    _ => next() as u8,
                })
                .collect();
            for kind in [ctx::CHANGED, ctx::SPAWNED] {
                let mut a = ByteSource::new(&bytes);
                let mut b = ByteSource::new(&bytes);
                let (mut groups, mut changed) = (Vec::new(), Vec::new());
                let list = tokens::read_mask(&mut a, 2, kind, elements, &mut groups, &mut changed);
                let bits = tokens::read_mask_bits(&mut b, 2, kind, elements);
                let list = list.map(|r| r.map(|()| changed.iter().fold(0u64, |b, &e| b | 1 << e)));
                assert_eq!(list, bits, "{elements} elements, {bytes:x?}");
                assert_eq!(a.finish(), b.finish());
            }
        }
    }
}
