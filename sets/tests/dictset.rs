//! Dictionary sets: save, load, verify, encode and decode with them, hold
//! two versions side by side, and refuse damage with typed errors.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use tickpack::{Baseline, DeltaOp, Field, PacketHeader, Primitive, Schema, Snapshot};
use tickpack_sets::dictset::{
    dictionary_id, DictKind, DictSetError, DictionarySet, DictionarySets, Manifest, SetLimits,
    TransformChoice, MANIFEST_FILE,
};

fn base_schema() -> Schema {
    Schema::builder()
        .entity("ship")
        .field("pos", Primitive::F32, 3)
        .field("hp", Primitive::U16, 1)
        .build()
        .unwrap()
}

fn trained_schema(op: DeltaOp) -> Schema {
    Schema::builder()
        .entity("ship")
        .field_with(Field {
            name: "pos".into(),
            ty: Primitive::F32,
            len: 3,
            delta: Some(op),
        })
        .field("hp", Primitive::U16, 1)
        .build()
        .unwrap()
}

fn empty_manifest(game: &str, version: &str) -> Manifest {
    Manifest {
        format: 0,
        game: game.into(),
        version: version.into(),
        set_id: 0,
        schema_id: 0,
        base_schema_id: 0,
        schema: serde_json::Value::Null,
        default_records: Vec::new(),
        fields: Vec::new(),
        transforms: Vec::new(),
        dictionaries: Vec::new(),
        training: Default::default(),
        measured: Default::default(),
    }
}

/// Raw-content dictionaries: zstd takes any bytes as a content dictionary.
fn dict_bytes(seed: u8) -> Vec<u8> {
    (0..2048u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 ^ seed)
        .collect()
}

fn set(game: &str, version: &str, op: DeltaOp) -> DictionarySet {
    DictionarySet::assemble(
        empty_manifest(game, version),
        trained_schema(op),
        base_schema().id(),
        vec![
            (DictKind::Keyframe, dict_bytes(1), 4096),
            (DictKind::Delta, dict_bytes(2), 2048),
        ],
    )
    .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tickpack-dictset-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn ticks(schema: &Schema, n: usize) -> Vec<Snapshot> {
    (0..n)
        .map(|t| {
            let mut s = Snapshot::new(schema);
            for id in 0..20u32 {
                if (id as usize + t).is_multiple_of(7) {
                    continue;
                }
                let mut rec = Vec::new();
                for k in 0..3 {
                    rec.extend_from_slice(
                        &(id as f32 * 3.0 + k as f32 + t as f32 * 0.5).to_le_bytes(),
                    );
                }
                rec.extend_from_slice(&(100 - id as u16).to_le_bytes());
                s.section_mut(0).unwrap().insert(id, &rec).unwrap();
            }
            s
        })
        .collect()
}

#[test]
fn save_load_and_round_trip_with_both_kinds() {
    let dir = tmp("roundtrip");
    let s = set("arena", "1.0", DeltaOp::Xor);
    s.save(&dir).unwrap();
    let loaded = DictionarySet::load(&dir).unwrap();
    assert_eq!(loaded.manifest(), s.manifest());
    assert_eq!(loaded.id(), s.id());
    assert_eq!(loaded.schema().id(), trained_schema(DeltaOp::Xor).id());
    assert_ne!(loaded.schema().id(), base_schema().id());
    loaded.fits(&base_schema()).unwrap();
    assert!(loaded
        .fits(
            &Schema::builder()
                .entity("ship")
                .field("pos", Primitive::F64, 3)
                .build()
                .unwrap()
        )
        .is_err());

    let mut enc = loaded.encoder(3).unwrap();
    let mut dec = loaded.decoder().unwrap();
    let t = ticks(loaded.schema(), 4);
    let key = enc.encode(&t[0], 0, None).unwrap();
    let (h, got) = dec.decode(&key, None).unwrap();
    assert_eq!(got, t[0]);
    assert_eq!(
        h.ids.and_then(|i| i.dictionary_id),
        loaded.dictionary(DictKind::Keyframe).map(|d| d.id())
    );
    assert_eq!(h.ids.map(|i| i.schema_id), Some(loaded.schema().id()));
    for i in 1..4 {
        let b = Some(Baseline {
            sequence: (i - 1) as u16,
            snapshot: &t[i - 1],
        });
        let p = enc.encode(&t[i], i as u16, b).unwrap();
        let (h, got) = dec.decode(&p, b).unwrap();
        assert_eq!(got, t[i]);
        // Deltas use the agreed dictionary without naming it.
        assert!(h.dictionary);
        assert_eq!(h.ids, None);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ids_depend_on_version_operators_and_bytes() {
    let a = set("arena", "1.0", DeltaOp::Int);
    let b = set("arena", "1.1", DeltaOp::Int);
    let c = set("arena", "1.0", DeltaOp::Sub);
    let ids =
        |s: &DictionarySet| -> Vec<u32> { s.dictionaries().iter().map(|(_, d)| d.id()).collect() };
    assert_ne!(ids(&a), ids(&b));
    assert_ne!(ids(&a), ids(&c));
    assert_ne!(a.id(), b.id());
    assert_ne!(
        a.id(),
        c.id(),
        "different operator choices, different set id"
    );
    let id = dictionary_id(
        "arena",
        "1.0",
        a.schema().id(),
        DictKind::Delta,
        &dict_bytes(2),
    );
    assert_eq!(a.dictionary(DictKind::Delta).unwrap().id(), id);
}

/// Writes a set, applies `damage` to its directory, loads it.
fn damaged(name: &str, damage: impl FnOnce(&Path)) -> DictSetError {
    let dir = tmp(name);
    set("arena", "1.0", DeltaOp::Int).save(&dir).unwrap();
    damage(&dir);
    let e = DictionarySet::load_with_limits(
        &dir,
        SetLimits {
            max_manifest_bytes: 64 << 10,
            max_dictionary_bytes: 3000,
        },
    )
    .unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!e.to_string().is_empty());
    e
}

fn edit_manifest(dir: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join(MANIFEST_FILE);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn damage_gives_typed_errors() {
    let flip = |dir: &Path| {
        let p = dir.join("delta.dict");
        let mut b = std::fs::read(&p).unwrap();
        b[100] ^= 1;
        std::fs::write(&p, b).unwrap();
    };
    assert!(
        matches!(damaged("flip", flip), DictSetError::Sha256Mismatch { file, .. } if file == "delta.dict")
    );
    let cut = |dir: &Path| {
        let p = dir.join("keyframe.dict");
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() - 1]).unwrap();
    };
    assert!(matches!(
        damaged("cut", cut),
        DictSetError::SizeMismatch {
            expected: 2048,
            actual: 2047,
            ..
        }
    ));
    let big = |dir: &Path| std::fs::write(dir.join("delta.dict"), vec![0u8; 4000]).unwrap();
    assert!(matches!(
        damaged("big", big),
        DictSetError::TooLarge { limit: 3000, .. }
    ));
    let gone = |dir: &Path| std::fs::remove_file(dir.join("delta.dict")).unwrap();
    assert!(matches!(
        damaged("gone", gone),
        DictSetError::Io {
            kind: std::io::ErrorKind::NotFound,
            ..
        }
    ));
    let json = |dir: &Path| {
        let p = dir.join(MANIFEST_FILE);
        let mut b = std::fs::read(&p).unwrap();
        b.truncate(b.len() / 2);
        std::fs::write(&p, b).unwrap();
    };
    assert!(matches!(
        damaged("json", json),
        DictSetError::Manifest { .. }
    ));
    let format = |dir: &Path| edit_manifest(dir, |v| v["format"] = 9.into());
    assert_eq!(
        damaged("format", format),
        DictSetError::UnsupportedFormat { format: 9 }
    );
    let set_id = |dir: &Path| edit_manifest(dir, |v| v["set_id"] = 1.into());
    assert!(matches!(
        damaged("setid", set_id),
        DictSetError::SetIdMismatch { expected: 1, .. }
    ));
    let version = |dir: &Path| edit_manifest(dir, |v| v["version"] = "1.1".into());
    assert!(matches!(
        damaged("version", version),
        DictSetError::IdMismatch { .. }
    ));
    let op = |dir: &Path| {
        edit_manifest(dir, |v| {
            v["schema"]["entities"][0]["fields"][0]["delta"] = "xor".into()
        })
    };
    assert!(matches!(
        damaged("op", op),
        DictSetError::SchemaIdMismatch { .. }
    ));
    let choice = |dir: &Path| edit_manifest(dir, |v| v["fields"][1]["delta"] = "none".into());
    assert!(matches!(
        damaged("choice", choice),
        DictSetError::FieldMismatch { field, .. } if field == "hp"
    ));
    let path = |dir: &Path| {
        edit_manifest(dir, |v| {
            v["dictionaries"][0]["file"] = "../delta.dict".into()
        })
    };
    assert!(matches!(
        damaged("path", path),
        DictSetError::BadFileName { .. }
    ));
    let name = |dir: &Path| edit_manifest(dir, |v| v["game"] = "a/b".into());
    assert!(matches!(
        damaged("name", name),
        DictSetError::BadName { .. }
    ));
    // `u8::from_str_radix` takes a sign: "+0" is not hex all the same.
    let sign = |dir: &Path| {
        edit_manifest(dir, |v| {
            v["default_records"] = serde_json::json!([format!("+0{}", "00".repeat(13))])
        })
    };
    assert!(matches!(
        damaged("sign", sign),
        DictSetError::Manifest { .. }
    ));
    let twice = |dir: &Path| {
        edit_manifest(dir, |v| {
            let d = v["dictionaries"][0].clone();
            v["dictionaries"].as_array_mut().unwrap().push(d);
        })
    };
    assert!(matches!(
        damaged("twice", twice),
        DictSetError::DuplicateKind { .. }
    ));
    let schema =
        |dir: &Path| edit_manifest(dir, |v| v["schema"] = serde_json::json!({"entities": []}));
    assert!(matches!(damaged("schema", schema), DictSetError::Schema(_)));
}

#[test]
fn two_versions_side_by_side() {
    let (v1, v2) = (
        set("arena", "1", DeltaOp::Int),
        set("arena", "2", DeltaOp::Xor),
    );
    let mut sets = DictionarySets::new();
    sets.insert(v1.clone()).unwrap();
    sets.insert(v2.clone()).unwrap();
    assert_eq!(sets.len(), 2);
    assert!(matches!(
        sets.insert(v1.clone()),
        Err(DictSetError::DuplicateSet { .. })
    ));

    // Each version's keyframe picks its set by the ids it names; the
    // deltas after it (which name none) decode with that set.
    let mut e1 = v1.encoder(3).unwrap();
    let mut e2 = v2.encoder(3).unwrap();
    let (t1, t2) = (ticks(v1.schema(), 3), ticks(v2.schema(), 3));
    for (e, t, version) in [(&mut e1, &t1, "1"), (&mut e2, &t2, "2")] {
        for i in 0..3 {
            let b = (i > 0).then(|| Baseline {
                sequence: (i - 1) as u16,
                snapshot: &t[i - 1],
            });
            let p = e.encode(&t[i], i as u16, b).unwrap();
            if i == 0 {
                assert_eq!(sets.for_packet(&p).unwrap().version(), version);
            }
            assert_eq!(sets.decode(&p, b).unwrap().1, t[i]);
        }
    }

    // An id no set holds is refused by name.
    let stranger = set("other", "9", DeltaOp::Int);
    let p = stranger
        .encoder(3)
        .unwrap()
        .encode(&ticks(stranger.schema(), 1)[0], 0, None)
        .unwrap();
    let id = PacketHeader::parse(&p)
        .unwrap()
        .0
        .ids
        .unwrap()
        .dictionary_id
        .unwrap();
    assert_eq!(
        sets.decode(&p, None),
        Err(DictSetError::UnknownDictionary { id })
    );

    // After the rollover the old version's packets are refused.
    let old = e1.encode(&t1[0], 9, None).unwrap();
    assert!(sets.remove("arena", "1").is_some());
    let id = PacketHeader::parse(&old)
        .unwrap()
        .0
        .ids
        .unwrap()
        .dictionary_id
        .unwrap();
    assert_eq!(
        sets.decode(&old, None),
        Err(DictSetError::UnknownDictionary { id })
    );
    assert_eq!(sets.len(), 1);
}

/// A keyframe that names another set but does not decode (damaged, or
/// sent by someone else) leaves the deltas with the set of the latest
/// keyframe that did.
#[test]
fn a_keyframe_that_fails_leaves_the_deltas_set_alone() {
    let (v1, v2) = (
        set("arena", "1", DeltaOp::Int),
        set("arena", "2", DeltaOp::Xor),
    );
    let mut sets = DictionarySets::new();
    sets.insert(v1.clone()).unwrap();
    sets.insert(v2.clone()).unwrap();
    let mut e1 = v1.encoder(3).unwrap();
    let t1 = ticks(v1.schema(), 2);
    let key = e1.encode(&t1[0], 0, None).unwrap();
    assert_eq!(sets.decode(&key, None).unwrap().1, t1[0]);

    // Version 2's keyframe header (flags, sequence, schema and dictionary
    // ids), then a zstd block that does not decode.
    let t2 = ticks(v2.schema(), 1);
    let mut bad = v2.encoder(3).unwrap().encode(&t2[0], 5, None).unwrap();
    let (h, n) = PacketHeader::parse(&bad).unwrap();
    assert!(h.ids.unwrap().dictionary_id.is_some());
    bad.truncate(n);
    bad.extend_from_slice(&[0x05, 0xde, 0xad]);
    assert!(matches!(
        sets.decode(&bad, None),
        Err(DictSetError::Decode(_))
    ));

    let b = Baseline {
        sequence: 0,
        snapshot: &t1[0],
    };
    let delta = e1.encode(&t1[1], 1, b).unwrap();
    assert_eq!(sets.decode(&delta, b).unwrap().1, t1[1]);
}

/// Two versions whose dictionary ids collide by chance (found by a search
/// over version names: 32-bit ids collide once in about 77,000 sets).
#[test]
fn a_chance_id_collision_is_refused() {
    let schema = trained_schema(DeltaOp::Int);
    let make = |version: &str| {
        DictionarySet::assemble(
            empty_manifest("arena", version),
            schema.clone(),
            base_schema().id(),
            vec![(DictKind::Delta, dict_bytes(2), 2048)],
        )
        .unwrap()
    };
    let (a, b) = COLLIDING_VERSIONS;
    let (a, b) = (make(a), make(b));
    assert_eq!(
        a.dictionary(DictKind::Delta).unwrap().id(),
        b.dictionary(DictKind::Delta).unwrap().id()
    );
    let mut sets = DictionarySets::new();
    sets.insert(a).unwrap();
    assert!(matches!(
        sets.insert(b),
        Err(DictSetError::IdCollision { .. })
    ));
}

const COLLIDING_VERSIONS: (&str, &str) = ("v15750", "v79304");

#[test]
fn load_dir_finds_every_set() {
    let root = tmp("root");
    set("arena", "1", DeltaOp::Int)
        .save(root.join("arena/1"))
        .unwrap();
    set("arena", "2", DeltaOp::Sub)
        .save(root.join("arena/2"))
        .unwrap();
    set("maze", "0.1", DeltaOp::Int)
        .save(root.join("maze/0.1"))
        .unwrap();
    let sets = DictionarySets::load_dir(&root, SetLimits::default()).unwrap();
    let names: Vec<_> = sets
        .iter()
        .map(|s| format!("{}/{}", s.game(), s.version()))
        .collect();
    assert_eq!(names, ["arena/1", "arena/2", "maze/0.1"]);
    std::fs::remove_dir_all(&root).unwrap();
}

/// Block type 3 (static Huffman) was retired in format 3: a manifest whose
/// dictionary entry still carries a `huffman` table is refused by name,
/// not loaded without it (its dictionary id covers the table's bytes).
#[test]
fn manifests_with_huffman_tables_are_refused() {
    let plain = set("huff", "1", DeltaOp::Int);
    let dir = tmp("huffman");
    plain.save(&dir).unwrap();
    assert!(DictionarySet::load(&dir).is_ok());
    edit_manifest(&dir, |m| {
        m["dictionaries"][0]["huffman"] = serde_json::Value::String("77".repeat(128));
    });
    match DictionarySet::load(&dir) {
        Err(DictSetError::Manifest { message }) => {
            assert!(message.contains("Huffman"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two versions with the same schema whose keyframes carry no dictionary
/// (the trainer leaves the keyframe dictionary out when it does not help):
/// a keyframe then names only the schema id, which either set could have
/// made, and the deltas after it would be decoded with whichever set is
/// found first. Such a pair is refused when the second set is added.
#[test]
fn sets_sharing_a_schema_without_keyframe_dictionaries_are_refused() {
    let delta_only = |version: &str, seed: u8| {
        DictionarySet::assemble(
            empty_manifest("arena", version),
            trained_schema(DeltaOp::Int),
            base_schema().id(),
            vec![(DictKind::Delta, dict_bytes(seed), 2048)],
        )
        .unwrap()
    };
    let mut sets = DictionarySets::new();
    sets.insert(delta_only("1", 2)).unwrap();
    assert!(matches!(
        sets.insert(delta_only("2", 3)),
        Err(DictSetError::AmbiguousSchema { .. })
    ));
    // Another schema, or both with keyframe dictionaries, is fine.
    sets.insert(set("arena", "3", DeltaOp::Xor)).unwrap();
    let mut both = DictionarySets::new();
    both.insert(set("arena", "1", DeltaOp::Int)).unwrap();
    both.insert(set("arena", "2", DeltaOp::Int)).unwrap();
    assert_eq!(both.len(), 2);
    // A keyframe-dictionary set beside a held set of the same schema
    // without one is refused too (either's keyframes may name the schema
    // only).
    let mut mixed = DictionarySets::new();
    mixed.insert(delta_only("1", 2)).unwrap();
    assert!(matches!(
        mixed.insert(set("arena", "2", DeltaOp::Int)),
        Err(DictSetError::AmbiguousSchema { .. })
    ));
}

/// The bytes of `enc` for a keyframe and then a delta of `t`.
fn key_and_delta(enc: &mut tickpack::Encoder, t: &[Snapshot]) -> (Vec<u8>, Vec<u8>) {
    let key = enc.encode(&t[0], 0, None).unwrap();
    let b = Some(Baseline {
        sequence: 0,
        snapshot: &t[0],
    });
    (key, enc.encode(&t[1], 1, b).unwrap())
}

#[test]
fn a_sets_encoder_codes_each_kind_as_an_encoder_with_that_kinds_dictionary() {
    // Bytes as the two encoders (one per kind) the set gave before: a set
    // without keyframe dictionary codes keyframes with no dictionary, not
    // the delta one.
    let both = set("arena", "1.0", DeltaOp::Xor);
    let delta_only = DictionarySet::assemble(
        empty_manifest("arena", "1.0"),
        trained_schema(DeltaOp::Xor),
        base_schema().id(),
        vec![(DictKind::Delta, dict_bytes(2), 2048)],
    )
    .unwrap();
    for s in [&both, &delta_only] {
        let t = ticks(s.schema(), 2);
        let alone = |kind| {
            let mut e = tickpack::Encoder::with_level(s.schema().clone(), 3);
            e.set_dictionary(s.dictionary(kind)).unwrap();
            key_and_delta(&mut e, &t)
        };
        let (key, delta) = key_and_delta(&mut s.encoder(3).unwrap(), &t);
        assert_eq!(key, alone(DictKind::Keyframe).0);
        assert_eq!(delta, alone(DictKind::Delta).1);
    }
    let t = ticks(delta_only.schema(), 2);
    let (key, _) = key_and_delta(&mut delta_only.encoder(3).unwrap(), &t);
    let (h, _) = delta_only.decoder().unwrap().decode(&key, None).unwrap();
    assert!(!h.dictionary);
}

#[test]
fn listed_transforms_must_be_in_the_schema() {
    // A set whose schema declares a grid, an integration and a unit field
    // that training applied, as its manifest lists them.
    let schema = Schema::builder()
        .entity("ship")
        .field("vel", Primitive::F32, 3)
        .field("ms", Primitive::I32, 1)
        .field("pos", Primitive::F32, 3)
        .integrate(tickpack::Integrate::new("vel", "ms", 0.001))
        .field("yaw", Primitive::F32, 1)
        .grid(0.5)
        .entity("buoy")
        .field("rot", Primitive::F32, 4)
        .unit()
        .build()
        .unwrap();
    let mut manifest = empty_manifest("transforms", "1");
    manifest.transforms = vec![
        TransformChoice {
            entity: "ship".into(),
            field: "pos".into(),
            grid: None,
            integrate: Some(tickpack::Integrate::new("vel", "ms", 0.001)),
            unit: false,
            held_out_bytes: [100, 90],
            held_out_model_bytes: None,
        },
        TransformChoice {
            entity: "ship".into(),
            field: "yaw".into(),
            grid: Some(0.5),
            integrate: None,
            unit: false,
            held_out_bytes: [90, 80],
            held_out_model_bytes: None,
        },
        TransformChoice {
            entity: "buoy".into(),
            field: "rot".into(),
            grid: None,
            integrate: None,
            unit: true,
            held_out_bytes: [80, 80],
            held_out_model_bytes: Some([60, 50]),
        },
    ];
    let set = DictionarySet::assemble(
        manifest,
        schema,
        0,
        vec![(DictKind::Delta, dict_bytes(3), 2048)],
    )
    .unwrap();
    let dir = tmp("transforms");
    set.save(&dir).unwrap();
    let loaded = DictionarySet::load(&dir).unwrap();
    assert_eq!(loaded.manifest().transforms, set.manifest().transforms);
    assert_eq!(
        loaded.manifest().transforms[1].describe(),
        "grid 0.5".to_owned()
    );
    assert_eq!(loaded.manifest().transforms[2].describe(), "unit vector");

    // Listing a grid step the schema does not declare, a transform of a
    // field that has none, or one of a field that does not exist, is
    // refused: `inspect` and `eval` would report what packets do not use.
    for edit in [
        |t: &mut serde_json::Value| t[1]["grid"] = serde_json::json!(0.25),
        |t: &mut serde_json::Value| t[0]["field"] = serde_json::json!("vel"),
        |t: &mut serde_json::Value| t[1]["field"] = serde_json::json!("roll"),
        |t: &mut serde_json::Value| t[0]["integrate"]["scale"] = serde_json::json!(0.002),
        |t: &mut serde_json::Value| t[2]["field"] = serde_json::json!("vel"),
        |t: &mut serde_json::Value| t[1]["unit"] = serde_json::json!(true),
    ] {
        let copy = tmp("transforms-edit");
        set.save(&copy).unwrap();
        edit_manifest(&copy, |m| edit(&mut m["transforms"]));
        assert!(
            matches!(
                DictionarySet::load(&copy),
                Err(DictSetError::TransformMismatch { .. })
            ),
            "{:?}",
            DictionarySet::load(&copy)
        );
        let _ = std::fs::remove_dir_all(&copy);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
