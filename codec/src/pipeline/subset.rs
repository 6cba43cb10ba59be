//! Entity sets: a subset of `0..universe` (the baseline's entities, or the
//! kept ones) coded in whichever of five modes is smallest.
//!
//! ```text
//! mode 0  empty
//! mode 1  full
//! mode 2  bitmap: ceil(universe / 8) bytes, LSB first; bits past universe are 0
//! mode 3  indices: count, first index, then (gap - 1) for each next, varints
//! mode 4  runs: pair count, then (skip, take) pairs as varints; take >= 1,
//!         skip >= 1 except in the first pair
//! ```
//! Nothing is written when the universe is empty.

#![forbid(unsafe_code)]

use crate::wire::{put_varint, varint_len, Reader};

const EMPTY: u8 = 0;
const FULL: u8 = 1;
const BITMAP: u8 = 2;
const INDICES: u8 = 3;
const RUNS: u8 = 4;

/// Appends the coding of `members` (strictly ascending, each `< universe`).
pub(crate) fn encode(universe: usize, members: &[u32], out: &mut Vec<u8>) {
    if universe == 0 {
        return;
    }
    if members.is_empty() {
        out.push(EMPTY);
        return;
    }
    if members.len() == universe {
        out.push(FULL);
        return;
    }
    let bitmap = universe.div_ceil(8);
    let mut indices = varint_len(members.len() as u32);
    let mut prev: Option<u32> = None;
    for &m in members {
        indices += varint_len(m - prev.map_or(0, |p| p + 1));
        prev = Some(m);
    }
    let mut runs = 0;
    let mut pairs = 0u32;
    for_each_run(members, |skip, take| {
        runs += varint_len(skip) + varint_len(take);
        pairs += 1;
    });
    runs += varint_len(pairs);
    if bitmap <= indices && bitmap <= runs {
        out.push(BITMAP);
        let start = out.len();
        out.resize(start + bitmap, 0);
        for &m in members {
            out[start + (m as usize >> 3)] |= 1 << (m & 7);
        }
    } else if indices <= runs {
        out.push(INDICES);
        put_varint(out, members.len() as u32);
        let mut prev: Option<u32> = None;
        for &m in members {
            put_varint(out, m - prev.map_or(0, |p| p + 1));
            prev = Some(m);
        }
    } else {
        out.push(RUNS);
        put_varint(out, pairs);
        for_each_run(members, |skip, take| {
            put_varint(out, skip);
            put_varint(out, take);
        });
    }
}

fn for_each_run(members: &[u32], mut f: impl FnMut(u32, u32)) {
    let mut pos = 0u32;
    let mut i = 0;
    while i < members.len() {
        let start = members[i];
        let mut end = start + 1;
        i += 1;
        while i < members.len() && members[i] == end {
            end += 1;
            i += 1;
        }
        f(start - pos, end - start);
        pos = end;
    }
}

/// Reads a subset of `0..universe` into `out` (cleared first), ascending.
/// `Err(())` on any malformed coding; the caller names the section.
pub(crate) fn decode(r: &mut Reader<'_>, universe: usize, out: &mut Vec<u32>) -> Result<(), ()> {
    out.clear();
    if universe == 0 {
        return Ok(());
    }
    let u = universe as u64;
    match r.u8().map_err(drop)? {
        EMPTY => {}
        FULL => out.extend(0..universe as u32),
        BITMAP => {
            let bytes = r.bytes(universe.div_ceil(8)).map_err(drop)?;
            for (i, &b) in bytes.iter().enumerate() {
                let mut b = b;
                while b != 0 {
                    let bit = b.trailing_zeros();
                    let m = (i as u64) * 8 + u64::from(bit);
                    if m >= u {
                        return Err(());
                    }
                    out.push(m as u32);
                    b &= b - 1;
                }
            }
        }
        INDICES => {
            let count = u64::from(r.varint().map_err(drop)?);
            if count == 0 || count > u {
                return Err(());
            }
            let mut next = 0u64;
            for _ in 0..count {
                let m = next + u64::from(r.varint().map_err(drop)?);
                if m >= u {
                    return Err(());
                }
                out.push(m as u32);
                next = m + 1;
            }
        }
        RUNS => {
            let pairs = u64::from(r.varint().map_err(drop)?);
            if pairs == 0 || pairs > u {
                return Err(());
            }
            let mut pos = 0u64;
            for i in 0..pairs {
                let skip = u64::from(r.varint().map_err(drop)?);
                let take = u64::from(r.varint().map_err(drop)?);
                if take == 0 || (i > 0 && skip == 0) || pos + skip + take > u {
                    return Err(());
                }
                out.extend((pos + skip) as u32..(pos + skip + take) as u32);
                pos += skip + take;
            }
        }
        _ => return Err(()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn subset() -> impl Strategy<Value = (usize, Vec<u32>)> {
        (0usize..300).prop_flat_map(|u| {
            (
                Just(u),
                proptest::collection::btree_set(0..u.max(1) as u32, 0..=u)
                    .prop_map(move |s| s.into_iter().filter(|&m| (m as usize) < u).collect()),
            )
        })
    }

    proptest! {
        #[test]
        fn inverse((u, members) in subset()) {
            let mut out = Vec::new();
            encode(u, &members, &mut out);
            let mut back = Vec::new();
            let mut r = Reader::new(&out);
            decode(&mut r, u, &mut back).unwrap();
            prop_assert_eq!(r.remaining(), 0);
            prop_assert_eq!(back, members);
            // Never worse than the bitmap.
            prop_assert!(out.len() <= 1 + u.div_ceil(8));
        }
    }

    #[test]
    fn picks_smallest() {
        let mut out = Vec::new();
        encode(1000, &[500], &mut out);
        assert_eq!(out, [INDICES, 1, 0xf4, 0x03]);
        out.clear();
        encode(1000, &(100..900).collect::<Vec<_>>(), &mut out);
        assert_eq!(out, [RUNS, 1, 100, 0xa0, 0x06]);
        out.clear();
        encode(16, &[0, 2, 4, 6, 8, 10, 12, 14], &mut out);
        assert_eq!(out, [BITMAP, 0x55, 0x55]);
    }

    #[test]
    fn rejects() {
        let mut v = Vec::new();
        for (bad, u) in [
            (&[5u8][..], 4usize),                  // unknown mode
            (&[BITMAP, 0x10][..], 4),              // bit past universe
            (&[INDICES, 0][..], 4),                // zero count
            (&[INDICES, 5, 0, 0, 0, 0, 0][..], 4), // count > universe
            (&[INDICES, 2, 3, 0][..], 4),          // index past universe
            (&[RUNS, 1, 0, 0][..], 4),             // take 0
            (&[RUNS, 2, 0, 1, 0, 1][..], 4),       // later skip 0
            (&[RUNS, 1, 2, 3][..], 4),             // past universe
            (&[BITMAP][..], 4),                    // truncated
        ] {
            assert_eq!(decode(&mut Reader::new(bad), u, &mut v), Err(()), "{bad:?}");
        }
    }
}
