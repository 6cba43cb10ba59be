//! Every set shipped under `dictionaries/` loads, verifies, and round-trips
//! its scenario's ticks.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use tickpack::{Baseline, PacketHeader};
use tickpack_scenarios::{
    arena_shooter, cube_pile, racing_lobby, racing_lobby_quantized_view, Scenario,
};
use tickpack_sets::dictset::{DictKind, DictionarySets, SetLimits};

fn scenario(game: &str) -> Scenario {
    match game {
        "arena-shooter" => arena_shooter(7, 40),
        "cube-pile" => cube_pile(7, 40),
        "racing-lobby" => racing_lobby(7, 40),
        // What the set is for: one lobby client's stream (cars leaving and
        // coming back as spawned rows).
        "racing-lobby-quantized" => racing_lobby_quantized_view(7, 40),
        other => panic!("shipped set for unknown scenario {other}: add it here"),
    }
}

#[test]
fn shipped_sets_load_and_round_trip() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dictionaries");
    let mut sets = DictionarySets::load_dir(&root, SetLimits::default()).unwrap();
    let names: Vec<String> = sets
        .iter()
        .map(|s| format!("{}/{}", s.game(), s.version()))
        .collect();
    assert!(names.contains(&"arena-shooter/1".to_owned()), "{names:?}");
    assert!(names.contains(&"cube-pile/1".to_owned()), "{names:?}");
    assert!(names.contains(&"racing-lobby/1".to_owned()), "{names:?}");
    assert!(
        names.contains(&"racing-lobby-quantized/1".to_owned()),
        "{names:?}"
    );

    let all: Vec<_> = sets.iter().cloned().collect();
    for set in all {
        let s = scenario(set.game());
        set.fits(&s.schema).unwrap();
        let m = &set.manifest().measured;
        assert!(
            m.bytes_per_snapshot_with < m.bytes_per_snapshot_without,
            "{}",
            set.game()
        );
        let mut enc = set.encoder(tickpack::DEFAULT_LEVEL).unwrap();
        for (i, tick) in s.ticks.iter().enumerate() {
            // Tick i against i - 6, with i - 12 as the prior for `predict` fields.
            let at = |b: usize| Baseline {
                sequence: b as u16,
                snapshot: &s.ticks[b],
            };
            let base = i.checked_sub(6).map(at);
            let prior = i.checked_sub(12).map(at);
            let reference = tickpack::Reference::from(base).with_prior(base.and(prior));
            let packet = enc.encode(tick, i as u16, reference).unwrap();
            let (h, _) = PacketHeader::parse(&packet).unwrap();
            let kind = DictKind::of(base.is_some());
            let named = h.ids.and_then(|i| i.dictionary_id);
            if base.is_none() {
                // Keyframes name their dictionary; deltas use the agreed one.
                assert_eq!(named, set.dictionary(kind).map(|d| d.id()));
            }
            assert_eq!(h.dictionary, set.dictionary(kind).is_some());
            if set.schema().predicts() && prior.is_some() {
                assert!(h.prior.is_some());
            }
            let (_, got) = sets
                .decode(&packet, tickpack::Reference::from(base).with_prior(prior))
                .unwrap();
            assert_eq!(&got, tick, "{} tick {i}", set.game());
        }
    }
}
