//! Dictionary sets under arbitrary input: the shipped set damaged, with its
//! hashes and ids recomputed so that the damage gets past them.

use super::*;
use tickpack_sets::dictset::{
    dictionary_id, set_id, sha256_hex, DictKind, DictSetError, DictionarySet, Manifest,
};

/// The shipped racing set: its manifest and every file the manifest names.
pub(super) fn shipped_set() -> (Vec<u8>, BTreeMap<String, Vec<u8>>) {
    let manifest = include_bytes!("../../../dictionaries/racing-lobby/1/manifest.json").to_vec();
    let files = [
        (
            "keyframe.dict",
            &include_bytes!("../../../dictionaries/racing-lobby/1/keyframe.dict")[..],
        ),
        (
            "delta.dict",
            &include_bytes!("../../../dictionaries/racing-lobby/1/delta.dict")[..],
        ),
        (
            "delta.model",
            &include_bytes!("../../../dictionaries/racing-lobby/1/delta.model")[..],
        ),
    ];
    let files = files
        .into_iter()
        .map(|(name, bytes)| (name.to_owned(), bytes.to_vec()))
        .collect();
    (manifest, files)
}

/// Rewrites the sizes, SHA-256 hashes and dictionary ids `manifest` holds
/// for `files`, and the set id, as the trainer would for these files; no
/// change when the manifest does not parse (damage meant for the parser).
pub(super) fn refresh_hashes(manifest: &mut Vec<u8>, files: &BTreeMap<String, Vec<u8>>) {
    let Ok(mut m) = serde_json::from_slice::<Manifest>(manifest) else {
        return;
    };
    for e in &mut m.dictionaries {
        let Some(bytes) = files.get(&e.file) else {
            continue;
        };
        e.size = bytes.len() as u64;
        e.sha256 = sha256_hex(bytes);
        let mut all = bytes.clone();
        if let Some(model) = &mut e.model {
            if let Some(mb) = files.get(&model.file) {
                model.size = mb.len() as u64;
                model.sha256 = sha256_hex(mb);
                all.extend_from_slice(mb);
            }
        }
        e.id = dictionary_id(&m.game, &m.version, m.schema_id, e.kind, &all);
    }
    let ids: Vec<(DictKind, u32)> = m.dictionaries.iter().map(|e| (e.kind, e.id)).collect();
    m.set_id = set_id(&m.game, &m.version, m.schema_id, &ids);
    if let Ok(text) = serde_json::to_vec(&m) {
        *manifest = text;
    }
}

/// Changes, cuts or extends `target` at a place `u` picks.
fn damage(u: &mut Unstructured<'_>, target: &mut Vec<u8>) -> AResult<()> {
    match u.int_in_range(0..=3u8)? {
        0 | 1 if !target.is_empty() => {
            let i = u.choose_index(target.len())?;
            target[i] ^= u.arbitrary::<u8>()? | 1;
        }
        2 => target.truncate(u.int_in_range(0..=target.len())?),
        _ => {
            let n = u.int_in_range(0..=8)?;
            target.extend_from_slice(u.bytes(n)?);
        }
    }
    Ok(())
}

pub(super) fn dictset_load_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let mut manifest: Vec<u8>;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut intact = false;
    if u.arbitrary()? {
        manifest = u.arbitrary()?;
        for _ in 0..u.int_in_range(0..=2usize)? {
            files.insert(u.arbitrary()?, u.arbitrary()?);
        }
    } else {
        (manifest, files) = shipped_set();
        let names: Vec<String> = files.keys().cloned().collect();
        let changes = u.int_in_range(0..=3usize)?;
        intact = changes == 0;
        for _ in 0..changes {
            let pick = u.int_in_range(0..=names.len())?;
            match names.get(pick) {
                Some(name) => damage(u, files.entry(name.clone()).or_default())?,
                None => damage(u, &mut manifest)?,
            }
        }
        // Mostly with the hashes fixed (else every change stops at a
        // size, hash or id check), and the model table's own checksum too.
        if !intact && u.ratio(3, 4)? {
            if u.arbitrary()? {
                if let Some(model) = files.get_mut("delta.model") {
                    fix_model_checksum(model);
                }
            }
            refresh_hashes(&mut manifest, &files);
        }
    }
    let r = DictionarySet::from_manifest(&manifest, |name| {
        files.get(name).cloned().ok_or_else(|| DictSetError::Io {
            file: name.into(),
            kind: std::io::ErrorKind::NotFound,
            message: "missing".into(),
        })
    });
    if intact {
        assert!(r.is_ok(), "the intact shipped set failed: {r:?}");
    }
    if let Ok(set) = r {
        for (_, d) in set.dictionaries() {
            assert!(
                set.manifest().dictionaries.iter().any(|e| e.id == d.id()),
                "dictionary not in manifest"
            );
        }
        let _ = set.decoder();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(
        manifest: &[u8],
        files: &BTreeMap<String, Vec<u8>>,
    ) -> Result<DictionarySet, DictSetError> {
        DictionarySet::from_manifest(manifest, |name| {
            files.get(name).cloned().ok_or_else(|| DictSetError::Io {
                file: name.into(),
                kind: std::io::ErrorKind::NotFound,
                message: "missing".into(),
            })
        })
    }

    #[test]
    fn the_harness_has_every_file_of_the_shipped_set() {
        let (manifest, files) = shipped_set();
        load(&manifest, &files).unwrap();
        let mut refreshed = manifest.clone();
        refresh_hashes(&mut refreshed, &files);
        assert_eq!(
            load(&refreshed, &files).unwrap().id(),
            load(&manifest, &files).unwrap().id(),
            "refreshing intact files changes no id"
        );
    }

    #[test]
    fn refreshed_hashes_let_damage_reach_the_parsers() {
        let (manifest, mut files) = shipped_set();
        let model = files.get_mut("delta.model").unwrap();
        model[4] ^= 0x40; // the table's version byte
        assert!(matches!(
            load(&manifest, &files),
            Err(DictSetError::Sha256Mismatch { .. } | DictSetError::SizeMismatch { .. })
        ));
        let mut fixed = manifest.clone();
        refresh_hashes(&mut fixed, &files);
        let e = load(&fixed, &files).unwrap_err();
        assert!(
            !matches!(
                e,
                DictSetError::Sha256Mismatch { .. }
                    | DictSetError::SizeMismatch { .. }
                    | DictSetError::IdMismatch { .. }
                    | DictSetError::SetIdMismatch { .. }
            ),
            "stopped at a hash: {e}"
        );
        // A damaged dictionary with its hashes fixed loads.
        let (_, mut files) = shipped_set();
        files.get_mut("delta.dict").unwrap()[100] ^= 1;
        let mut fixed = manifest;
        refresh_hashes(&mut fixed, &files);
        load(&fixed, &files).unwrap();
    }
}
