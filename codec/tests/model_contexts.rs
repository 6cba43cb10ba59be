//! The model block's context map: every walk context and condition gets its
//! own dense context, the dense contexts fill the shape exactly, and unknown
//! walk contexts are typed errors.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use tickpack::model::{ContextConfig, ContextMap, ModelError, RowState};

fn make(class: u32, section: u32, spawned: bool, index: u32) -> u32 {
    make_row(class, section, u32::from(spawned), index)
}

/// A walk context with row kind `row` (0 changed, 1 spawned, 2 recalled).
fn make_row(class: u32, section: u32, row: u32, index: u32) -> u32 {
    (class << 28) | (row << 22) | (section << 16) | index
}

const SECTION: u32 = 0;
const SET_HEAD: u32 = 1;
const SET_GAP: u32 = 2;
const SET_BIT: u32 = 3;
const SPAWN_COUNT: u32 = 4;
const SPAWN_GAP: u32 = 5;
const MASK_GROUP: u32 = 6;
const MASK_ELEMENT: u32 = 7;
const KIND: u32 = 8;
const VALUE: u32 = 9;

fn sections() -> Vec<Vec<bool>> {
    vec![
        vec![false; 5],                                           // one group
        (0..19).map(|i| i % 3 == 0).collect(),                    // three groups
        vec![true, false, true, true, false, false, false, true], // exactly one group
    ]
}

/// Every dense context comes from exactly one (walk context, condition)
/// pair, and all but the few no walk reaches (group bits of one-group
/// types, a "previous bit" of 1 before a row's first group or element) are
/// reached.
#[test]
fn dense_contexts_are_a_bijection() {
    for config in [ContextConfig::ALL, ContextConfig::BLOCK] {
        bijection(config);
    }
}

fn bijection(config: ContextConfig) {
    let secs = sections();
    let map = ContextMap::new(&secs, config).unwrap();
    let hists: &[Option<bool>] = if config.mask_history {
        &[None, Some(false), Some(true)]
    } else {
        &[None]
    };
    let classes: &[u32] = if config.value_history {
        &[0, 1, 3, 6, 10, 15]
    } else {
        &[0]
    };
    let shape = map.shape();
    // Recalled rows (row kind 2) have their own contexts only with
    // `recall_rows`; else they are the spawned rows' (checked below).
    let rows = if config.recall_rows { 3 } else { 2 };
    let mut bits = HashSet::new();
    let mut unreachable = 0;
    let mut values = HashSet::new();
    let mut insert_bit = |c: u32| {
        assert!(c < shape.bit_contexts);
        assert!(bits.insert(c), "bit context {c} twice");
    };
    for (s, floats) in secs.iter().enumerate() {
        let s = s as u32;
        let e = floats.len() as u32;
        let g = e.div_ceil(8);
        let h = if config.mask_history { 3 } else { 1 };
        // Per row kind: every group context of a one-group type, else
        // group 0 after a 1; element 0 after a 1, per history.
        unreachable += rows * (if g == 1 { 2 } else { 1 } + h);
        // The changed-flag contexts come from the entity sets' walk, not
        // from walk context numbers (tests/model_history.rs codes them).
        if config.changed_flags {
            unreachable += 6;
        }
        for which in 0..2 {
            insert_bit(
                map.bit_context(&mut RowState::default(), make(SET_BIT, s, false, which))
                    .unwrap(),
            );
            for cls in [SET_HEAD, SET_GAP] {
                let (v, signed) = map
                    .value_context(&RowState::default(), make(cls, s, false, which))
                    .unwrap();
                assert!(!signed);
                assert!(values.insert(v));
            }
        }
        for cls in [SECTION, SPAWN_COUNT, SPAWN_GAP] {
            let (v, _) = map
                .value_context(&RowState::default(), make(cls, s, false, 0))
                .unwrap();
            assert!(values.insert(v));
        }
        // The recalled count shares the spawn count's context; the recall
        // ranks have their own.
        let spawn_count = |index| {
            map.value_context(&RowState::default(), make(SPAWN_COUNT, s, false, index))
                .unwrap()
                .0
        };
        assert_eq!(spawn_count(1), spawn_count(0));
        let (v, _) = map
            .value_context(&RowState::default(), make(SPAWN_GAP, s, false, 1))
            .unwrap();
        assert!(values.insert(v));
        for row in 0..rows {
            let make = |class, s, _: bool, index| make_row(class, s, row, index);
            let spawned = row > 0;
            // One-group types send no group bits.
            for grp in (0..g).filter(|_| g > 1) {
                for prev in [false, true] {
                    let mut st = RowState::default();
                    if grp > 0 {
                        // A row in progress whose previous group bit is `prev`.
                        map.bit_context(&mut st, make(MASK_GROUP, s, spawned, 0))
                            .unwrap();
                        map.note_bit(&mut st, make(MASK_GROUP, s, spawned, 0), prev);
                    } else if prev {
                        continue;
                    }
                    insert_bit(
                        map.bit_context(&mut st, make(MASK_GROUP, s, spawned, grp))
                            .unwrap(),
                    );
                }
            }
            for el in 0..e {
                for &hist in hists {
                    for prev in [false, true] {
                        let mut st = RowState::default();
                        if g > 1 {
                            map.bit_context(&mut st, make(MASK_GROUP, s, spawned, 0))
                                .unwrap();
                        }
                        if el > 0 {
                            map.bit_context(&mut st, make(MASK_ELEMENT, s, spawned, 0))
                                .unwrap();
                            map.note_bit(&mut st, make(MASK_ELEMENT, s, spawned, 0), prev);
                        } else if prev {
                            // Element 0 starts the row's element bits.
                            continue;
                        }
                        st.set_element_history(hist);
                        insert_bit(
                            map.bit_context(&mut st, make(MASK_ELEMENT, s, spawned, el))
                                .unwrap(),
                        );
                    }
                }
                let float = floats[el as usize];
                if float {
                    insert_bit(
                        map.bit_context(&mut RowState::default(), make(KIND, s, spawned, el))
                            .unwrap(),
                    );
                } else {
                    assert!(matches!(
                        map.bit_context(&mut RowState::default(), make(KIND, s, spawned, el)),
                        Err(ModelError::WalkContext { .. })
                    ));
                }
                let kinds: &[Option<bool>] = if float {
                    &[None, Some(true), Some(false)]
                } else {
                    &[None]
                };
                let prevs: &[Option<u64>] = if config.value_prev {
                    &[None, Some(3), Some(100)]
                } else {
                    &[None]
                };
                for &kind in kinds {
                    for (&class, &prev) in classes
                        .iter()
                        .flat_map(|c| prevs.iter().map(move |p| (c, p)))
                    {
                        let mut st = RowState::default();
                        if let Some(z) = prev {
                            map.note_value(&mut st, make(VALUE, s, spawned, el), z);
                        }
                        if let Some(k) = kind {
                            map.note_bit(&mut st, make(KIND, s, spawned, el), k);
                        }
                        st.set_value_history(Some(class));
                        let (v, signed) =
                            map.value_context(&st, make(VALUE, s, spawned, el)).unwrap();
                        assert!(signed);
                        assert!(v < shape.value_contexts);
                        assert!(values.insert(v), "value context {v} twice");
                    }
                }
            }
        }
    }
    assert_eq!(bits.len() as u32, shape.bit_contexts - unreachable);
    // Every value context is reachable (the recall ranks use the one that
    // was unused).
    assert_eq!(values.len() as u32, shape.value_contexts);
}

#[test]
fn conditions_reset_at_row_start_and_after_use() {
    let secs = sections();
    let map = ContextMap::new(&secs, ContextConfig::default()).unwrap();
    let mut st = RowState::default();
    let first = map
        .bit_context(&mut st, make(MASK_ELEMENT, 0, false, 0))
        .unwrap();
    map.note_bit(&mut st, make(MASK_ELEMENT, 0, false, 0), true);
    let after_one = map
        .bit_context(&mut st, make(MASK_ELEMENT, 0, false, 1))
        .unwrap();
    map.note_bit(&mut st, make(MASK_ELEMENT, 0, false, 1), true);
    // Element 0 again starts a new row: same context as the first time.
    assert_eq!(
        map.bit_context(&mut st, make(MASK_ELEMENT, 0, false, 0))
            .unwrap(),
        first
    );
    let mut fresh = RowState::default();
    let mut fresh2 = fresh;
    map.note_bit(&mut fresh2, make(MASK_ELEMENT, 0, false, 0), false);
    assert_ne!(
        map.bit_context(&mut fresh2, make(MASK_ELEMENT, 0, false, 1))
            .unwrap(),
        after_one
    );

    // A history is used by one token only.
    fresh.set_value_history(Some(12));
    let with = map.value_context(&fresh, make(VALUE, 0, false, 2)).unwrap();
    map.note_value(&mut fresh, make(VALUE, 0, false, 2), 40);
    let without = map.value_context(&fresh, make(VALUE, 0, false, 2)).unwrap();
    assert_ne!(with, without);
    // The value is the row's previous value now, until the row ends.
    assert_ne!(
        without,
        map.value_context(&RowState::default(), make(VALUE, 0, false, 2))
            .unwrap()
    );
    map.bit_context(&mut fresh, make(MASK_ELEMENT, 0, false, 0))
        .unwrap();
    assert_eq!(
        map.value_context(&fresh, make(VALUE, 0, false, 2)).unwrap(),
        map.value_context(&RowState::default(), make(VALUE, 0, false, 2))
            .unwrap()
    );
}

#[test]
fn turning_conditions_off_merges_contexts() {
    let secs = sections();
    let off = ContextConfig {
        mask_prev: false,
        mask_history: false,
        value_kind: false,
        value_history: false,
        row_kind: false,
        recall_rows: false,
        changed_flags: false,
        value_prev: false,
    };
    let map = ContextMap::new(&secs, off).unwrap();
    let mut st = RowState::default();
    map.note_value(&mut st, make(VALUE, 1, true, 2), 1000);
    st.set_value_history(Some(20));
    map.note_bit(&mut st, make(KIND, 1, true, 0), true);
    assert_eq!(
        map.value_context(&st, make(VALUE, 1, true, 0)).unwrap(),
        map.value_context(&RowState::default(), make(VALUE, 1, false, 0))
            .unwrap()
    );
}

#[test]
fn recalled_rows_have_their_own_contexts_unless_merged() {
    let secs = sections();
    let own = ContextMap::new(
        &secs,
        ContextConfig {
            recall_rows: true,
            ..ContextConfig::BLOCK
        },
    )
    .unwrap();
    let merged = ContextMap::new(&secs, ContextConfig::BLOCK).unwrap();
    assert!(merged.shape().bit_contexts < own.shape().bit_contexts);
    for map in [&own, &merged] {
        let ctx = |row| {
            map.value_context(&RowState::default(), make_row(VALUE, 1, row, 3))
                .unwrap()
        };
        assert_ne!(ctx(0), ctx(1));
        assert_eq!(ctx(1) == ctx(2), std::ptr::eq(map, &merged));
        assert!(matches!(
            map.value_context(&RowState::default(), make_row(VALUE, 1, 3, 3)),
            Err(ModelError::WalkContext { .. })
        ));
    }
}

#[test]
fn unknown_walk_contexts_are_errors() {
    let map = ContextMap::new(&sections(), ContextConfig::default()).unwrap();
    let mut st = RowState::default();
    for ctx in [
        make(SET_BIT, 0, false, 2),
        make(MASK_GROUP, 0, false, 1),
        make(MASK_ELEMENT, 1, false, 19),
        make(MASK_ELEMENT, 3, false, 0),
        make(VALUE, 0, false, 0),
        make(15, 0, false, 0),
    ] {
        assert!(matches!(
            map.bit_context(&mut st, ctx),
            Err(ModelError::WalkContext { .. })
        ));
    }
    for ctx in [
        make(SET_HEAD, 0, false, 2),
        make(SECTION, 0, false, 1),
        make(SPAWN_GAP, 0, false, 2),
        make(SPAWN_COUNT, 0, false, 2),
        make(VALUE, 2, true, 8),
        make(MASK_ELEMENT, 0, false, 0),
    ] {
        assert!(matches!(
            map.value_context(&st, ctx),
            Err(ModelError::WalkContext { .. })
        ));
    }
}
