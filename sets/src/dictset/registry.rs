//! [`DictionarySets`]: several sets side by side, picked per packet.

use std::collections::HashMap;
use std::path::Path;

use super::{DictKind, DictSetError, DictionarySet, SetLimits, MANIFEST_FILE};
use tickpack::Decoder;
use tickpack::PacketHeader;
use tickpack::Reference;
use tickpack::Snapshot;

/// Dictionary sets held side by side, for instance two versions of a game
/// while clients of the old one are still connected. Every dictionary id is
/// unique across the sets held, so a packet's dictionary id names exactly
/// one set; [`DictionarySets::decode`] picks it and decodes with it.
///
/// ```no_run
/// use tickpack_sets::dictset::{DictionarySet, DictionarySets};
/// let mut sets = DictionarySets::new();
/// sets.insert(DictionarySet::load("dictionaries/racer/1.4")?)?;
/// sets.insert(DictionarySet::load("dictionaries/racer/1.5")?)?; // rollover
/// # let packet: &[u8] = &[];
/// let (header, snapshot) = sets.decode(packet, None)?; // either version's packets
/// sets.remove("racer", "1.4"); // once the last old client has left
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct DictionarySets {
    sets: Vec<DictionarySet>,
    /// One decoder per schema id, holding every dictionary of the sets with
    /// that schema. Built on first use, dropped when the sets change.
    decoders: HashMap<u32, Decoder>,
    /// The set of the latest packet that decoded (a keyframe names its
    /// ids): the one deltas, which name none, are decoded with.
    current: Option<u32>,
}

impl DictionarySets {
    /// No sets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads every set under `root`, laid out `root/<game>/<version>/manifest.json`
    /// (the repository's `dictionaries/` folder), in name order.
    pub fn load_dir(root: impl AsRef<Path>, limits: SetLimits) -> Result<Self, DictSetError> {
        let mut out = Self::new();
        for game in sorted_dirs(root.as_ref())? {
            for version in sorted_dirs(&game)? {
                if version.join(MANIFEST_FILE).is_file() {
                    out.insert(DictionarySet::load_with_limits(&version, limits)?)?;
                }
            }
        }
        Ok(out)
    }

    /// Adds a set. Refuses a second set for the same game version, a set
    /// whose dictionary ids are already held ([`DictSetError::IdCollision`]),
    /// and a set with the schema of a held set when one of the two has no
    /// keyframe dictionary ([`DictSetError::AmbiguousSchema`]): keyframes
    /// name a dictionary only when they use one, so such a set's keyframes
    /// name just the schema id, and the deltas after them would be decoded
    /// with whichever of the two sets was found first.
    pub fn insert(&mut self, set: DictionarySet) -> Result<(), DictSetError> {
        if self.get(set.game(), set.version()).is_some() {
            return Err(DictSetError::DuplicateSet {
                game: set.game().to_owned(),
                version: set.version().to_owned(),
            });
        }
        for (_, d) in set.dictionaries() {
            if self.by_dictionary(d.id()).is_ok() {
                return Err(DictSetError::IdCollision { id: d.id() });
            }
        }
        let has_keyframe = |s: &DictionarySet| s.dictionary(DictKind::Keyframe).is_some();
        if self.sets.iter().any(|s| {
            s.schema().id() == set.schema().id() && !(has_keyframe(s) && has_keyframe(&set))
        }) {
            return Err(DictSetError::AmbiguousSchema {
                id: set.schema().id(),
            });
        }
        self.decoders.remove(&set.schema().id());
        self.sets.push(set);
        Ok(())
    }

    /// Removes the set of `game` at `version`, returning it.
    pub fn remove(&mut self, game: &str, version: &str) -> Option<DictionarySet> {
        let i = self
            .sets
            .iter()
            .position(|s| s.game() == game && s.version() == version)?;
        let set = self.sets.remove(i);
        self.decoders.remove(&set.schema().id());
        Some(set)
    }

    /// The set of `game` at `version`.
    pub fn get(&self, game: &str, version: &str) -> Option<&DictionarySet> {
        self.sets
            .iter()
            .find(|s| s.game() == game && s.version() == version)
    }

    /// The sets held, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &DictionarySet> + '_ {
        self.sets.iter()
    }

    /// Number of sets held.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether no set is held.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The set holding dictionary `id`.
    pub fn by_dictionary(&self, id: u32) -> Result<&DictionarySet, DictSetError> {
        self.sets
            .iter()
            .find(|s| s.dictionaries().iter().any(|(_, d)| d.id() == id))
            .ok_or(DictSetError::UnknownDictionary { id })
    }

    /// The set a packet was made with: by its dictionary id, or for a packet
    /// without dictionary the first set with its schema id.
    pub fn for_packet(&self, packet: &[u8]) -> Result<&DictionarySet, DictSetError> {
        let (h, _) = PacketHeader::parse(packet).map_err(DictSetError::Decode)?;
        Ok(&self.sets[self.for_header(&h)?])
    }

    /// The index of the set a packet with header `h` was made with.
    fn for_header(&self, h: &PacketHeader) -> Result<usize, DictSetError> {
        match h.ids {
            Some(ids) => match ids.dictionary_id {
                Some(id) => self
                    .sets
                    .iter()
                    .position(|s| s.dictionaries().iter().any(|(_, d)| d.id() == id))
                    .ok_or(DictSetError::UnknownDictionary { id }),
                None => self
                    .sets
                    .iter()
                    .position(|s| s.schema().id() == ids.schema_id)
                    .ok_or(DictSetError::UnknownSchema { id: ids.schema_id }),
            },
            // Deltas name no ids: they continue the latest keyframe's set.
            None => self
                .current
                .and_then(|id| self.sets.iter().position(|s| s.id() == id))
                .ok_or(DictSetError::Decode(
                    tickpack::DecodeError::NoAgreedDictionary { keyframe: false },
                )),
        }
    }

    /// Decodes a packet made with any set held: a keyframe picks the set
    /// by the dictionary (or schema) id it names (an unknown id is
    /// [`DictSetError::UnknownDictionary`]); a delta, which names none, is
    /// decoded with the set of the latest keyframe that decoded.
    pub fn decode<'r>(
        &mut self,
        packet: &[u8],
        reference: impl Into<Reference<'r>>,
    ) -> Result<(PacketHeader, Snapshot), DictSetError> {
        let (h, _) = PacketHeader::parse(packet).map_err(DictSetError::Decode)?;
        let set = &self.sets[self.for_header(&h)?];
        let schema_id = set.schema().id();
        if let Some(ids) = h.ids {
            if ids.schema_id != schema_id {
                return Err(DictSetError::Decode(
                    tickpack::DecodeError::SchemaMismatch {
                        expected: schema_id,
                        actual: ids.schema_id,
                    },
                ));
            }
        }
        if !self.decoders.contains_key(&schema_id) {
            let mut d = Decoder::new(set.schema().clone());
            for s in self.sets.iter().filter(|s| s.schema().id() == schema_id) {
                s.add_to(&mut d)?;
            }
            self.decoders.insert(schema_id, d);
        }
        let set_id = set.id();
        if let Some(d) = self.decoders.get_mut(&schema_id) {
            set.agree(d)?;
        }
        let mut out = Snapshot::default();
        let h = match self.decoders.get_mut(&schema_id) {
            Some(d) => d
                .decode_into(packet, reference, &mut out)
                .map_err(DictSetError::Decode)?,
            None => return Err(DictSetError::UnknownSchema { id: schema_id }),
        };
        // Only a packet that decoded picks the set of the deltas after it.
        self.current = Some(set_id);
        Ok((h, out))
    }
}

fn sorted_dirs(dir: &Path) -> Result<Vec<std::path::PathBuf>, DictSetError> {
    let rd = std::fs::read_dir(dir).map_err(|e| DictSetError::io(dir, &e))?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|err| DictSetError::io(dir, &err))?;
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}
