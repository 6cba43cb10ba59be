//! Lists of spawned entity ids: count, first id, then (gap - 1) for each
//! next id, all varints. Ids are strictly ascending by construction.

#![forbid(unsafe_code)]

use crate::wire::{put_varint, Reader};

/// Appends `ids` (strictly ascending).
pub(crate) fn encode(ids: impl ExactSizeIterator<Item = u32>, out: &mut Vec<u8>) {
    put_varint(out, ids.len() as u32);
    let mut next = 0u32;
    for id in ids {
        put_varint(out, id - next);
        next = id.wrapping_add(1);
    }
}

/// Why an id list was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum IdsError {
    /// Malformed or truncated input.
    Wire(crate::DecodeError),
    /// More ids than `limit`.
    TooMany(usize),
    /// An id past `u32::MAX`.
    Overflow,
}

/// Reads a list into `out` (cleared first), refusing more than `limit` ids
/// before allocating for them.
pub(crate) fn decode(r: &mut Reader<'_>, limit: usize, out: &mut Vec<u32>) -> Result<(), IdsError> {
    out.clear();
    let count = r.varint().map_err(IdsError::Wire)? as usize;
    if count > limit {
        return Err(IdsError::TooMany(count));
    }
    let mut next = 0u64;
    for _ in 0..count {
        let id = next + u64::from(r.varint().map_err(IdsError::Wire)?);
        if id > u64::from(u32::MAX) {
            return Err(IdsError::Overflow);
        }
        out.push(id as u32);
        next = id + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn inverse(ids in proptest::collection::btree_set(any::<u32>(), 0..100)) {
            let ids: Vec<u32> = ids.into_iter().collect();
            let mut out = Vec::new();
            encode(ids.iter().copied(), &mut out);
            let mut back = Vec::new();
            decode(&mut Reader::new(&out), 1000, &mut back).unwrap();
            prop_assert_eq!(back, ids);
        }
    }

    #[test]
    fn rejects() {
        let mut v = Vec::new();
        assert_eq!(
            decode(&mut Reader::new(&[3, 0, 0, 0]), 2, &mut v),
            Err(IdsError::TooMany(3))
        );
        assert_eq!(
            decode(
                &mut Reader::new(&[2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0]),
                2,
                &mut v
            ),
            Err(IdsError::Overflow)
        );
        assert!(matches!(
            decode(&mut Reader::new(&[2, 0]), 2, &mut v),
            Err(IdsError::Wire(_))
        ));
    }
}
