//! Aligning a section with its baseline by entity id: which baseline
//! entities were removed, which kept ones changed, which ids are new.

use crate::snapshot::SectionRef;

/// The result of aligning one section; reused between packets.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Alignment {
    /// Indices into the baseline of entities no longer present.
    pub(crate) removed: Vec<u32>,
    /// Indices into the kept list (baseline minus removed) of entities whose
    /// record differs from the baseline's.
    pub(crate) changed: Vec<u32>,
    /// For each changed entity: (index in current, index in baseline).
    pub(crate) changed_rows: Vec<(u32, u32)>,
    /// Indices into the current section of entities not in the baseline.
    pub(crate) spawned: Vec<u32>,
    /// Number of kept entities.
    pub(crate) kept: usize,
}

/// Aligns `cur` with `base` (both sorted by id, same record size).
pub(crate) fn align(base: &SectionRef<'_>, cur: &SectionRef<'_>, out: &mut Alignment) {
    out.removed.clear();
    out.changed.clear();
    out.changed_rows.clear();
    out.spawned.clear();
    let (bi, ci) = (base.ids(), cur.ids());
    let rs = cur.record_size();
    // The common case, the baseline's entities again: one compare of the id
    // lists, then the records pairwise without the merge's id steps.
    if bi == ci && rs > 0 && base.record_size() == rs {
        let pairs = base
            .records()
            .chunks_exact(rs)
            .zip(cur.records().chunks_exact(rs));
        for (k, (b, c)) in (0u32..).zip(pairs) {
            if b != c {
                out.changed.push(k);
                out.changed_rows.push((k, k));
            }
        }
        out.kept = bi.len();
        return;
    }
    let (mut i, mut j, mut kept) = (0usize, 0usize, 0u32);
    while i < bi.len() || j < ci.len() {
        match (bi.get(i), ci.get(j)) {
            (Some(b), Some(c)) if b == c => {
                if base.record(i) != cur.record(j) {
                    out.changed.push(kept);
                    out.changed_rows.push((j as u32, i as u32));
                }
                kept += 1;
                i += 1;
                j += 1;
            }
            (Some(b), Some(c)) if b < c => {
                out.removed.push(i as u32);
                i += 1;
            }
            (Some(_), None) => {
                out.removed.push(i as u32);
                i += 1;
            }
            _ => {
                out.spawned.push(j as u32);
                j += 1;
            }
        }
    }
    out.kept = kept as usize;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Inverse law: the baseline, the removed and changed sets and the
        /// spawned entities rebuild the current section exactly.
        #[test]
        fn inverse(
            base in proptest::collection::btree_map(0u32..64, any::<u8>(), 0..40),
            cur in proptest::collection::btree_map(0u32..64, any::<u8>(), 0..40),
        ) {
            let (bi, br): (Vec<u32>, Vec<u8>) = base.into_iter().unzip();
            let (ci, cr): (Vec<u32>, Vec<u8>) = cur.into_iter().unzip();
            let b = SectionRef::new(&bi, &br, 1).unwrap();
            let c = SectionRef::new(&ci, &cr, 1).unwrap();
            let mut a = Alignment::default();
            align(&b, &c, &mut a);
            let mut kept = Vec::new();
            kept.extend((0..b.len() as u32).filter(|i| a.removed.binary_search(i).is_err()));
            prop_assert_eq!(kept.len(), a.kept);
            // Rebuild: kept entities (changed ones take the current record),
            // then spawned ones, sorted by id.
            let mut rebuilt: Vec<(u32, u8)> = kept
                .iter()
                .enumerate()
                .map(|(k, &i)| {
                    let id = bi[i as usize];
                    let changed = a.changed.binary_search(&(k as u32)).is_ok();
                    let rec = if changed { cr[ci.binary_search(&id).unwrap()] } else { br[i as usize] };
                    (id, rec)
                })
                .chain(a.spawned.iter().map(|&j| (ci[j as usize], cr[j as usize])))
                .collect();
            rebuilt.sort_unstable();
            prop_assert_eq!(rebuilt, ci.iter().copied().zip(cr.iter().copied()).collect::<Vec<_>>());
            // Only entities whose record differs are in the changed set.
            for &(cj, bj) in &a.changed_rows {
                prop_assert_ne!(cr[cj as usize], br[bj as usize]);
            }
        }
    }

    proptest! {
        /// The same ids on both sides (the pairwise path) align as the
        /// merge does with one id list changed and back.
        #[test]
        fn same_ids_match_the_merge(
            recs in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..40),
            rs in 1usize..4,
        ) {
            let ids: Vec<u32> = (0..recs.len() as u32).map(|i| 2 * i).collect();
            let br: Vec<u8> = recs.iter().flat_map(|&(b, _)| vec![b; rs]).collect();
            let cr: Vec<u8> = recs.iter().flat_map(|&(b, c)| {
                let mut r = vec![b; rs];
                r[rs - 1] = c;
                r
            }).collect();
            let b = SectionRef::new(&ids, &br, rs).unwrap();
            let c = SectionRef::new(&ids, &cr, rs).unwrap();
            let mut a = Alignment::default();
            align(&b, &c, &mut a);
            let changed: Vec<u32> = (0..recs.len() as u32)
                .filter(|&k| recs[k as usize].0 != recs[k as usize].1)
                .collect();
            prop_assert_eq!(&a.changed, &changed);
            prop_assert_eq!(a.changed_rows, changed.iter().map(|&k| (k, k)).collect::<Vec<_>>());
            prop_assert_eq!(a.kept, recs.len());
            prop_assert!(a.removed.is_empty() && a.spawned.is_empty());
        }
    }

    #[test]
    fn example() {
        let base = SectionRef::new(&[1, 2, 4, 7], &[1, 2, 4, 7], 1).unwrap();
        let cur = SectionRef::new(&[0, 2, 4, 8], &[0, 2, 5, 8], 1).unwrap();
        let mut a = Alignment::default();
        align(&base, &cur, &mut a);
        assert_eq!(a.removed, [0, 3]);
        assert_eq!(a.kept, 2);
        assert_eq!(a.changed, [1]);
        assert_eq!(a.changed_rows, [(2, 2)]);
        assert_eq!(a.spawned, [0, 3]);
    }
}
