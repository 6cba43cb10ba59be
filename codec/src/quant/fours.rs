//! Four records at a time over one slot of four-byte words: element `e` of
//! four consecutive records is one vector. Shared by the slot's values to
//! codes ([`super::code4`]) and codes to values ([`super::scale4`]).

/// The `u32` of four bytes.
#[inline(always)]
pub(super) fn word(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    u32::from_le_bytes(a)
}

/// Replaces the `len` words at `offset` of each record of `records` (`rs`
/// bytes each) by `four` of them, word `e` of four consecutive records at
/// a time, in whole fours of records; returns the records done (the rest
/// are left to the caller). `four` gives `None` when it refuses one of
/// its words, and `accepts` says whether it would take a word alone:
/// `Err((record, element))` names the first refused word in record order
/// (within a record, element order).
#[inline(always)]
pub(super) fn in_fours(
    offset: usize,
    len: usize,
    records: &mut [u8],
    rs: usize,
    mut four: impl FnMut([u32; 4]) -> Option<[u32; 4]>,
    accepts: impl Fn(u32) -> bool,
) -> Result<usize, (usize, usize)> {
    let span = offset..offset + 4 * len;
    if rs == 0 || span.end > rs {
        return Ok(0);
    }
    let mut done = 0;
    for group in records.chunks_exact_mut(4 * rs) {
        let (a, rest) = group.split_at_mut(rs);
        let (b, rest) = rest.split_at_mut(rs);
        let (c, d) = rest.split_at_mut(rs);
        let (a, b, c, d) = (
            &mut a[span.clone()],
            &mut b[span.clone()],
            &mut c[span.clone()],
            &mut d[span.clone()],
        );
        let lanes = a
            .chunks_exact_mut(4)
            .zip(b.chunks_exact_mut(4))
            .zip(c.chunks_exact_mut(4))
            .zip(d.chunks_exact_mut(4));
        let mut refused = None;
        for (e, (((a, b), c), d)) in lanes.enumerate() {
            let Some(w) = four([word(a), word(b), word(c), word(d)]) else {
                refused = Some(e);
                break;
            };
            a.copy_from_slice(&w[0].to_le_bytes());
            b.copy_from_slice(&w[1].to_le_bytes());
            c.copy_from_slice(&w[2].to_le_bytes());
            d.copy_from_slice(&w[3].to_le_bytes());
        }
        if let Some(e) = refused {
            // Elements before `e` are done in all four records: the first
            // refused word is in `e..` of one of them, still as it was.
            for (r, rec) in [&*a, &*b, &*c, &*d].into_iter().enumerate() {
                let rest = rec.chunks_exact(4).enumerate().skip(e);
                for (e2, x) in rest {
                    if !accepts(word(x)) {
                        return Err((done + r, e2));
                    }
                }
            }
            return Err((done, e));
        }
        done += 4;
    }
    Ok(done)
}
