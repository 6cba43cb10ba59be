//! Resizing a history ring (the server's per-client ring, the client's
//! applied snapshots) without losing the entries a peer may still name.

/// Moves `ring`'s entries into a ring of `len` slots, each at its
/// sequence modulo `len` as the rings index them. Entries further than
/// `len - 1` ticks behind `newest` are dropped; when two land on one slot
/// (near the sequence wrap, where the index jumps) the newer stays.
/// `len` must be at least 1.
pub(crate) fn resize<T>(
    ring: &mut Vec<Option<T>>,
    len: usize,
    newest: u16,
    sequence: impl Fn(&T) -> u16,
) {
    let len = len.max(1);
    if len == ring.len() {
        return;
    }
    let mut out: Vec<Option<T>> = Vec::new();
    out.resize_with(len, || None);
    for entry in ring.drain(..).flatten() {
        let seq = sequence(&entry);
        let age = usize::from(newest.wrapping_sub(seq));
        if age >= len {
            continue;
        }
        let Some(slot) = out.get_mut(usize::from(seq) % len) else {
            continue;
        };
        let keep_old = slot
            .as_ref()
            .is_some_and(|old| usize::from(newest.wrapping_sub(sequence(old))) <= age);
        if !keep_old {
            *slot = Some(entry);
        }
    }
    *ring = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring_of(len: usize, seqs: impl IntoIterator<Item = u16>) -> Vec<Option<u16>> {
        let mut ring = vec![None; len];
        for s in seqs {
            ring[usize::from(s) % len] = Some(s);
        }
        ring
    }

    fn held(ring: &[Option<u16>]) -> Vec<u16> {
        let mut v: Vec<u16> = ring.iter().flatten().copied().collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn growing_keeps_everything_at_its_new_index() {
        let mut ring = ring_of(8, 100..108);
        resize(&mut ring, 20, 107, |s| *s);
        assert_eq!(ring.len(), 20);
        assert_eq!(held(&ring), (100..108).collect::<Vec<_>>());
        for s in 100..108u16 {
            assert_eq!(ring[usize::from(s) % 20], Some(s));
        }
    }

    #[test]
    fn shrinking_keeps_the_newest() {
        let mut ring = ring_of(32, 100..132);
        resize(&mut ring, 5, 131, |s| *s);
        assert_eq!(held(&ring), vec![127, 128, 129, 130, 131]);
        for s in 127..132u16 {
            assert_eq!(ring[usize::from(s) % 5], Some(s));
        }
    }

    #[test]
    fn across_the_wrap_the_newer_wins_a_slot() {
        let seqs = [65530u16, 65533, 65535, 0, 1, 2];
        let mut ring = ring_of(16, seqs);
        resize(&mut ring, 7, 2, |s| *s);
        let kept = held(&ring);
        // 65535 % 7 == 1 == 1 % 7: sequence 1 is newer.
        assert!(kept.contains(&1) && !kept.contains(&65535));
        assert!(kept.contains(&0) && kept.contains(&2) && kept.contains(&65533));
        assert!(!kept.contains(&65530), "7 or more ticks old");
    }
}
