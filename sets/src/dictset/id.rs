//! Ids and hashes (SHA-256 based dictionary and set ids, hex), and the
//! name rules for games, versions and files.

use sha2::{Digest, Sha256};

use super::{DictKind, DictSetError};

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Option<Vec<u8>> {
    // `from_str_radix` alone would take a sign ("+f").
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

pub(super) fn hash32(parts: &[&[u8]]) -> u32 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let d = h.finalize();
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// The id of a dictionary: the first 4 bytes (little-endian) of a SHA-256
/// over the game, the version, the schema id, the kind and the dictionary
/// bytes. Two versions (or two games, schemas or kinds) get unrelated ids;
/// a chance collision is caught by [`DictionarySets::insert`](super::DictionarySets::insert).
pub fn dictionary_id(
    game: &str,
    version: &str,
    schema_id: u32,
    kind: DictKind,
    bytes: &[u8],
) -> u32 {
    hash32(&[
        b"tickpack dictionary id 1",
        game.as_bytes(),
        version.as_bytes(),
        &schema_id.to_le_bytes(),
        kind.name().as_bytes(),
        bytes,
    ])
}

/// [`dictionary_id`] over the dictionary bytes followed by the model table
/// file's bytes when there is one.
pub(super) fn dictionary_id_with(
    game: &str,
    version: &str,
    schema_id: u32,
    kind: DictKind,
    bytes: &[u8],
    model: Option<&[u8]>,
) -> u32 {
    let Some(m) = model else {
        return dictionary_id(game, version, schema_id, kind, bytes);
    };
    let mut all = bytes.to_vec();
    all.extend_from_slice(m);
    dictionary_id(game, version, schema_id, kind, &all)
}

/// The id of a set: a SHA-256 (first 4 bytes) over the game, the version,
/// the schema id (which covers every per-field operator choice) and each
/// dictionary's kind and id. Different choices give a different set id.
pub fn set_id(game: &str, version: &str, schema_id: u32, dictionaries: &[(DictKind, u32)]) -> u32 {
    let mut parts: Vec<Vec<u8>> = vec![
        b"tickpack set id 1".to_vec(),
        game.as_bytes().to_vec(),
        version.as_bytes().to_vec(),
        schema_id.to_le_bytes().to_vec(),
    ];
    let mut d = dictionaries.to_vec();
    d.sort();
    for (kind, id) in d {
        parts.push(kind.name().as_bytes().to_vec());
        parts.push(id.to_le_bytes().to_vec());
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    hash32(&refs)
}

pub(super) fn check_name(name: &str) -> Result<(), DictSetError> {
    if name.is_empty()
        || name.len() > 255
        || name.contains(['/', '\\', '\0'])
        || name == "."
        || name == ".."
    {
        return Err(DictSetError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

pub(super) fn check_file_name(file: &str) -> Result<(), DictSetError> {
    let ok = !file.is_empty()
        && file.len() <= 255
        && !file.starts_with('.')
        && file
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if !ok {
        return Err(DictSetError::BadFileName {
            file: file.to_owned(),
        });
    }
    Ok(())
}
