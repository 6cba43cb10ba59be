//! The entity sets of a section's walk (FORMAT.md, "Payload"): a non-empty
//! subset of `0..universe` as a list of gaps or a bitmap, whichever takes
//! fewer bytes.

use super::tokens::{ctx, TokenSink, TokenSource};
use crate::error::DecodeError;

fn varint_cost(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(7).max(1)
}

/// Writes a non-empty subset of `0..universe`: nothing when `universe` is
/// 1; else a head: `universe` alone for the whole universe, else 0 for a
/// bitmap of `universe` bits or the member count of a list of gaps,
/// whichever is smaller in bytes (ties: list).
pub(crate) fn write_set<S: TokenSink + ?Sized>(
    sink: &mut S,
    section: usize,
    which: usize,
    universe: usize,
    members: &[u32],
) {
    if universe == 1 {
        return;
    }
    if members.len() == universe {
        sink.uint(ctx::make(ctx::SET_HEAD, section, 0, which), universe as u64);
        return;
    }
    let mut list = varint_cost(members.len() as u64);
    let mut next = 0u32;
    for &m in members {
        list += varint_cost(u64::from(m - next));
        next = m + 1;
    }
    let bitmap = 1 + universe.div_ceil(8);
    let c = |class| ctx::make(class, section, 0, which);
    if list <= bitmap {
        sink.uint(c(ctx::SET_HEAD), members.len() as u64);
        let mut next = 0u32;
        for &m in members {
            sink.uint(c(ctx::SET_GAP), u64::from(m - next));
            next = m + 1;
        }
    } else {
        sink.uint(c(ctx::SET_HEAD), 0);
        // The bitmap in chunks of 64 members.
        let mut it = members.iter().peekable();
        let mut first = 0;
        while first < universe {
            let n = (universe - first).min(64);
            let mut bits = 0u64;
            while let Some(&&m) = it.peek().filter(|&&&m| (m as usize) < first + n) {
                bits |= 1u64 << (m as usize - first);
                it.next();
            }
            sink.set_bits(section, which, n, bits);
            first += n;
        }
    }
}

/// Reads a non-empty subset of `0..universe` into `out`; `Err(())` if
/// malformed (a member out of range, a count above `universe`, an empty
/// bitmap).
pub(crate) fn read_set<S: TokenSource + ?Sized>(
    src: &mut S,
    section: usize,
    which: usize,
    universe: usize,
    out: &mut Vec<u32>,
) -> Result<Result<(), ()>, DecodeError> {
    out.clear();
    if universe == 1 {
        out.push(0);
        return Ok(Ok(()));
    }
    let c = |class| ctx::make(class, section, 0, which);
    let n = src.uint(c(ctx::SET_HEAD))?;
    if n == 0 {
        let mut first = 0;
        while first < universe {
            let k = (universe - first).min(64);
            let mut bits = src.set_bits(section, which, k)?;
            while bits != 0 {
                out.push((first + bits.trailing_zeros() as usize) as u32);
                bits &= bits - 1;
            }
            first += k;
        }
        if out.is_empty() {
            return Ok(Err(()));
        }
    } else if n == universe as u64 {
        out.extend(0..universe as u32);
    } else {
        if n > universe as u64 {
            return Ok(Err(()));
        }
        let mut next = 0u64;
        for _ in 0..n {
            let m = next + src.uint(c(ctx::SET_GAP))?.min(u64::from(u32::MAX));
            if m >= universe as u64 {
                return Ok(Err(()));
            }
            out.push(m as u32);
            next = m + 1;
        }
    }
    Ok(Ok(()))
}
