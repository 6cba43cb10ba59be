//! Model tables in dictionary sets: saved as their own file, listed with
//! size and hash, verified on load, part of the ids, and used to code
//! packets that round-trip through the loaded set.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use tickpack::model::{ModelError, ModelStats, ModelTable};
use tickpack::{Baseline, Encoder, Primitive, Schema, Snapshot};
use tickpack_sets::dictset::{DictKind, DictSetError, DictionarySet, Manifest};

fn schema() -> Schema {
    Schema::builder()
        .entity("ship")
        .field("pos", Primitive::F32, 3)
        .field("hp", Primitive::U16, 1)
        .build()
        .unwrap()
}

fn manifest() -> Manifest {
    Manifest {
        format: 0,
        game: "models".into(),
        version: "1".into(),
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
                    let v = (id * 3 + k) as f32 + (t as f32) * if id % 2 == 0 { 1.0 } else { 0.5 };
                    rec.extend_from_slice(&v.to_le_bytes());
                }
                rec.extend_from_slice(&((id as u16) * 10 + (t as u16 / 4)).to_le_bytes());
                s.section_mut(0).unwrap().insert(id, &rec).unwrap();
            }
            s
        })
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tickpack-model-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn with_model() -> (DictionarySet, DictionarySet, ModelTable) {
    let schema = schema();
    let plain = DictionarySet::assemble(
        manifest(),
        schema.clone(),
        schema.id(),
        vec![(
            DictKind::Delta,
            (0..512u32).map(|i| (i * 31) as u8).collect(),
            512,
        )],
    )
    .unwrap();
    let mut enc = Encoder::new(schema.clone());
    let mut stats = ModelStats::new(enc.model_shape().unwrap()).unwrap();
    let t = ticks(&schema, 40);
    for i in 1..t.len() {
        let base = Baseline {
            sequence: (i - 1) as u16,
            snapshot: &t[i - 1],
        };
        enc.model_tokens(&t[i], i as u16, base, &mut stats).unwrap();
    }
    let table = ModelTable::from_stats(&stats);
    let with = plain.clone().with_model(DictKind::Delta, &table).unwrap();
    (plain, with, table)
}

#[test]
fn model_tables_travel_with_the_set() {
    let (plain, with, table) = with_model();
    let id = |s: &DictionarySet| s.dictionary(DictKind::Delta).unwrap().id();
    assert_ne!(id(&plain), id(&with));
    assert_ne!(plain.id(), with.id());
    let dir = tmp("roundtrip");
    with.save(&dir).unwrap();
    assert_eq!(
        std::fs::read(dir.join("delta.model")).unwrap(),
        table.to_bytes()
    );
    let loaded = DictionarySet::load(&dir).unwrap();
    assert_eq!(loaded.id(), with.id());
    assert_eq!(
        loaded.dictionary(DictKind::Delta).unwrap().model(),
        Some(&table)
    );

    // Deltas coded with the set's model (forced: on this small scene zstd
    // and the model are within a byte) decode through the loaded set.
    let schema = loaded.schema().clone();
    let t = ticks(&schema, 12);
    let mut enc = loaded.encoder(3).unwrap();
    enc.set_entropy(tickpack::Entropy::Model);
    let mut dec = loaded.decoder().unwrap();
    let mut bare = Encoder::new(schema.clone());
    for i in 1..t.len() {
        let base = Baseline {
            sequence: (i - 1) as u16,
            snapshot: &t[i - 1],
        };
        let p = enc.encode(&t[i], i as u16, Some(base)).unwrap();
        let (_, got) = dec.decode(&p, Some(base)).unwrap();
        assert_eq!(got, t[i]);
        assert_ne!(p, bare.encode(&t[i], i as u16, Some(base)).unwrap());
        // Without the set, the model block is refused.
        assert!(tickpack::Decoder::new(schema.clone())
            .decode(&p, Some(base))
            .is_err());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_model_files_are_refused() {
    let (_, with, _) = with_model();
    let dir = tmp("damage");
    with.save(&dir).unwrap();
    let path = dir.join("delta.model");
    let good = std::fs::read(&path).unwrap();

    // One byte changed: the hash catches it.
    let mut bad = good.clone();
    bad[20] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    assert!(matches!(
        DictionarySet::load(&dir),
        Err(DictSetError::Sha256Mismatch { .. })
    ));

    // Missing file.
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        DictionarySet::load(&dir),
        Err(DictSetError::Io { .. })
    ));

    // A file whose size and hash match the manifest but whose table is
    // broken: rewrite the manifest to describe it.
    let mut broken = good.clone();
    broken[4] = 9; // version
    std::fs::write(&path, &broken).unwrap();
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let manifest = manifest.replace(
        &tickpack_sets::dictset::sha256_hex(&good),
        &tickpack_sets::dictset::sha256_hex(&broken),
    );
    std::fs::write(dir.join("manifest.json"), manifest).unwrap();
    assert_eq!(
        DictionarySet::load(&dir).err(),
        Some(DictSetError::Model {
            file: "delta.model".into(),
            error: ModelError::UnsupportedVersion { version: 9 },
        })
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_set_reads_histories_only_when_its_delta_table_has_history_flags() {
    use tickpack::model::ContextConfig;
    let (plain, with, table) = with_model();
    assert!(!plain.uses_history());
    assert_eq!(table.flags() & ContextConfig::HISTORY_FLAGS, 0);
    assert!(!with.uses_history());
    let history = table.with_flags(ContextConfig::FLAG_CHANGED).unwrap();
    let reads = plain.with_model(DictKind::Delta, &history).unwrap();
    assert!(reads.uses_history());
}
