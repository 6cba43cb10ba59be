//! The reusable [`Decoder`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::block::{self, DDict, ZstdBlocks};
use crate::dict::Dictionary;
use crate::encoder::DEFAULT_LEVEL;
use crate::error::{DecodeError, DictionaryError};
use crate::history::History;
use crate::limits::Limits;
use crate::model::{ContextMaps, ModelDecoder, ModelTable, WalkSource};
use crate::packet::PacketHeader;
use crate::pipeline::layout::ByteSource;
use crate::pipeline::values::{self, Element};
use crate::pipeline::{self, tokens, DecodeScratch, SectionTokens, TokenSource};
use crate::quant::cache::CodeCache;
use crate::quant::codes;
use crate::recall::Recall;
use crate::schema::Schema;
use crate::snapshot::Baseline;
use crate::snapshot::{Reference, SectionRef, Snapshot};
use crate::wire::Reader;

/// A dictionary digested for decoding, with its model table.
type DictTables = (Arc<DDict>, Option<Arc<ModelTable>>);

/// Decodes packets into snapshots. Holds any number of dictionaries (by
/// id), a zstd context and scratch buffers.
///
/// Decoding never panics and never allocates beyond [`Limits`]: any
/// malformed packet gives a [`DecodeError`] and leaves the output empty.
pub struct Decoder {
    schema: Schema,
    limits: Limits,
    blocks: ZstdBlocks,
    dicts: HashMap<u32, DictTables>,
    /// The dictionaries agreed for deltas and for keyframes.
    agreed: (Option<u32>, Option<u32>),
    elements: Vec<Vec<Element>>,
    /// Each section's byte-plane order.
    plane_orders: Vec<Vec<u16>>,
    payload: Vec<u8>,
    metas: Vec<SectionTokens>,
    predicted: Vec<crate::snapshot::Section>,
    /// The tick distances of the packet being decoded, for its prediction.
    spacing: pipeline::predict::Spacing,
    scratch: DecodeScratch,
    /// Recall entries and ids while spawned ranks are resolved.
    rank_scratch: (Vec<u64>, Vec<u32>),
    /// The schema's model contexts per table flags.
    context_maps: ContextMaps,
    /// Whether decoding keeps each snapshot's [`History`], and the last.
    keep_history: bool,
    history: History,
    history_valid: bool,
    codes: crate::quant::codes::CodeSpace,
}

impl core::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Decoder")
            .field("schema_id", &self.schema.id())
            .field("dictionaries", &self.dicts.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Decoder {
    /// A decoder with default limits and no dictionaries.
    pub fn new(schema: Schema) -> Self {
        let predicted = schema
            .sections()
            .iter()
            .map(|_| Default::default())
            .collect();
        let metas = schema
            .sections()
            .iter()
            .map(|_| SectionTokens::default())
            .collect();
        let elements: Vec<_> = schema.sections().iter().map(values::elements).collect();
        let context_maps = ContextMaps::new(&elements);
        let plane_orders = elements
            .iter()
            .map(|e| pipeline::planes::order(e))
            .collect();
        Self {
            schema,
            limits: Limits::default(),
            blocks: ZstdBlocks::new(DEFAULT_LEVEL),
            dicts: HashMap::new(),
            agreed: (None, None),
            elements,
            plane_orders,
            payload: Vec::new(),
            metas,
            predicted,
            spacing: pipeline::predict::Spacing { ahead: 1, back: 1 },
            scratch: DecodeScratch::default(),
            rank_scratch: Default::default(),
            context_maps,
            keep_history: false,
            history: History::default(),
            history_valid: false,
            codes: Default::default(),
        }
    }

    /// Keeps the [`History`] of every snapshot decoded against a baseline
    /// ([`Decoder::history`]); off by default.
    pub fn set_keep_history(&mut self, on: bool) {
        self.keep_history = on;
        self.history_valid = false;
    }

    /// What the snapshot last decoded changed against its baseline, when
    /// [`Decoder::set_keep_history`] is on and it had one (none after an
    /// error): the same as the encoder's
    /// [`Encoder::history`](crate::Encoder::history) for that packet. Give
    /// it as the [`Reference::history`] of packets coded against that
    /// snapshot.
    pub fn history(&self) -> Option<&History> {
        self.history_valid.then_some(&self.history)
    }

    /// Sets the limits.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Adds (or replaces) a dictionary. Keyframes name it by its id; the
    /// first dictionary added becomes the agreed one for deltas and
    /// keyframes until [`Decoder::agree`] says otherwise.
    pub fn add_dictionary(&mut self, dict: &Dictionary) -> Result<(), DictionaryError> {
        let d = DDict::new(dict.bytes()).ok_or(DictionaryError::Rejected { id: dict.id() })?;
        if let Some(t) = dict.model_arc() {
            self.context_maps.build(&self.elements, t.flags());
            if self.context_maps.for_table(&t).is_none() {
                return Err(DictionaryError::ModelMismatch { id: dict.id() });
            }
        }
        self.dicts
            .insert(dict.id(), (Arc::new(d), dict.model_arc()));
        if self.agreed == (None, None) {
            self.agreed = (Some(dict.id()), Some(dict.id()));
        }
        Ok(())
    }

    /// Sets the dictionaries agreed with the sender (the ones its
    /// [`Encoder::set_dictionary`](crate::Encoder::set_dictionary) and
    /// [`Encoder::set_keyframe_dictionary`](crate::Encoder::set_keyframe_dictionary)
    /// use; `keyframe` `None`: keyframes use `delta`'s). Packets that use a
    /// dictionary without naming it are decoded with these. An encoder set
    /// to [`KeyframeDictionary::None`](crate::KeyframeDictionary::None) sends
    /// keyframes without the `DICTIONARY` flag: they decode with no
    /// dictionary, whatever is agreed here. Each must have been added
    /// ([`DecodeError::UnknownDictionary`] otherwise).
    pub fn agree(&mut self, delta: Option<u32>, keyframe: Option<u32>) -> Result<(), DecodeError> {
        for id in [delta, keyframe].into_iter().flatten() {
            if !self.dicts.contains_key(&id) {
                return Err(DecodeError::UnknownDictionary { id });
            }
        }
        self.agreed = (delta, keyframe.or(delta));
        Ok(())
    }

    /// Removes a dictionary; returns whether it was held.
    pub fn remove_dictionary(&mut self, id: u32) -> bool {
        if self.agreed.0 == Some(id) {
            self.agreed.0 = None;
        }
        if self.agreed.1 == Some(id) {
            self.agreed.1 = None;
        }
        self.dicts.remove(&id).is_some()
    }

    /// Decodes `packet` into a new snapshot. A delta packet needs the
    /// reference it was encoded against ([`PacketHeader::parse`] tells
    /// which baseline and prior it names).
    pub fn decode<'r>(
        &mut self,
        packet: &[u8],
        reference: impl Into<Reference<'r>>,
    ) -> Result<(PacketHeader, Snapshot), DecodeError> {
        let mut out = Snapshot::default();
        let h = self.decode_into(packet, reference, &mut out)?;
        Ok((h, out))
    }

    /// Decodes into `out`, reusing its buffers. On error `out` is left
    /// empty (no entities), never half-updated. A prior in `reference` is
    /// ignored when the packet names none.
    pub fn decode_into<'r>(
        &mut self,
        packet: &[u8],
        reference: impl Into<Reference<'r>>,
        out: &mut Snapshot,
    ) -> Result<PacketHeader, DecodeError> {
        let reference = reference.into();
        self.history_valid = false;
        let r = if self.schema.is_quantized() {
            self.decode_quantized(packet, reference, out)
        } else {
            self.decode_inner(packet, reference, out, None)
        };
        if r.is_err() {
            out.reset(&self.schema);
        }
        r
    }

    /// The snapshot the header names (`named`), which the caller must have
    /// supplied (`given`) and which must fit the schema.
    fn named<'b>(
        &self,
        named: Option<u16>,
        given: Option<Baseline<'b>>,
        missing: fn(u16) -> DecodeError,
        mismatch: fn(u16, u16) -> DecodeError,
    ) -> Result<Option<&'b Snapshot>, DecodeError> {
        match (named, given) {
            (None, _) => Ok(None),
            (Some(sequence), None) => Err(missing(sequence)),
            (Some(expected), Some(b)) if b.sequence != expected => {
                Err(mismatch(expected, b.sequence))
            }
            (Some(_), Some(b)) => {
                b.snapshot
                    .check(&self.schema)
                    .map_err(DecodeError::BadBaseline)?;
                Ok(Some(b.snapshot))
            }
        }
    }

    /// Decodes into `out`; with a quantised schema, `codes` receives the
    /// rebuilt snapshot in code form.
    fn decode_inner(
        &mut self,
        packet: &[u8],
        reference: Reference<'_>,
        out: &mut Snapshot,
        codes: Option<&mut Snapshot>,
    ) -> Result<PacketHeader, DecodeError> {
        let (baseline, prior) = (reference.baseline, reference.prior);
        let mut r = Reader::new(packet);
        let header = PacketHeader::read(&mut r)?;
        if let Some(ids) = header.ids {
            if ids.schema_id != self.schema.id() {
                return Err(DecodeError::SchemaMismatch {
                    expected: self.schema.id(),
                    actual: ids.schema_id,
                });
            }
        }
        let base = self.named(
            header.baseline,
            baseline,
            |sequence| DecodeError::MissingBaseline { sequence },
            |expected, actual| DecodeError::BaselineMismatch { expected, actual },
        )?;
        let prior = self.named(
            header.prior,
            prior,
            |sequence| DecodeError::MissingPrior { sequence },
            |expected, actual| DecodeError::PriorMismatch { expected, actual },
        )?;
        if let (Some(b), Some(p)) = (header.baseline, header.prior) {
            self.spacing = pipeline::predict::Spacing::of(header.sequence, b, p);
        }
        self.scratch.ticks = header.baseline_distance().unwrap_or(0);
        let keyframe = header.baseline.is_none();
        let dictionary_id = match (header.dictionary, header.ids) {
            (false, _) => None,
            (true, Some(ids)) => ids.dictionary_id,
            (true, None) => Some(
                if keyframe {
                    self.agreed.1
                } else {
                    self.agreed.0
                }
                .ok_or(DecodeError::NoAgreedDictionary { keyframe })?,
            ),
        };
        let dict = match dictionary_id {
            None => None,
            Some(id) => Some(
                self.dicts
                    .get(&id)
                    .cloned()
                    .ok_or(DecodeError::UnknownDictionary { id })?,
            ),
        };
        let at = r.pos();
        if header.model {
            let recall = Recalled::new(header.baseline, reference.recall);
            let history = reference.history.filter(|_| base.is_some());
            self.decode_model_block(
                &mut r,
                at,
                dict.as_ref(),
                (base, prior),
                recall,
                history,
                out,
            )?;
        } else {
            self.payload.clear();
            if r.remaining() > 0 {
                block::decode_blocks(
                    &mut self.blocks,
                    dict.as_ref().map(|d| &*d.0),
                    &mut r,
                    self.limits.max_decoded_bytes,
                    &mut self.payload,
                )?;
            }
            let recall = Recalled::new(header.baseline, reference.recall);
            self.rebuild(base, prior, recall, out)?;
        }
        // Quantised fields were decoded as codes; the checksum covers values.
        let keep = base.filter(|_| self.keep_history);
        if self.schema.is_quantized() {
            // The history is of the codes as coded, smallest-three rows that
            // changed layout before they are recoded back (FORMAT.md 9.1).
            if let Some(b) = keep.filter(|_| codes.is_some()) {
                self.note_history(out, b);
            }
            let p = prior.filter(|_| header.prior.is_some());
            let s = self.spacing;
            crate::quant::layout::recode_snapshot(&self.schema, out, base, p, s, true);
            if let Some(c) = codes {
                c.reset_like(out);
                for (i, s) in out.sections().iter().enumerate() {
                    c.set_section(i, &s.as_ref());
                }
            }
            crate::quant::codes::snapshot_from_codes(&self.schema, out)?;
        } else if let Some(b) = keep {
            self.note_history(out, b);
        }
        if !header.checksum.is_none() {
            let full = out.digest(header.checksum_seed(dictionary_id));
            if !header.checksum.matches(full) {
                return Err(DecodeError::ChecksumMismatch {
                    expected: match header.checksum {
                        crate::packet::Checksum::U8(c) => u16::from(c),
                        crate::packet::Checksum::U16(c) => c,
                        crate::packet::Checksum::None => 0,
                    },
                    actual: match header.checksum {
                        crate::packet::Checksum::U8(_) => u16::from(full as u8),
                        _ => full as u16,
                    },
                });
            }
        }
        Ok(header)
    }

    /// [`Decoder::decode_inner`] for a quantised schema: baseline and prior
    /// go to code form (`decode_inner` turns the decoded codes back into
    /// values before the checksum).
    fn decode_quantized(
        &mut self,
        packet: &[u8],
        reference: Reference<'_>,
        out: &mut Snapshot,
    ) -> Result<PacketHeader, DecodeError> {
        let (baseline, prior) = (reference.baseline, reference.prior);
        fn swap<'a>(
            given: Option<Baseline<'a>>,
            entry: Option<usize>,
            cache: &'a CodeCache,
        ) -> Option<Baseline<'a>> {
            match (given, entry) {
                (Some(g), Some(i)) => Some(Baseline {
                    sequence: g.sequence,
                    snapshot: cache.codes(i),
                }),
                (other, _) => other,
            }
        }
        let mut c = core::mem::take(&mut self.codes);
        let r = (|| {
            let mut coded = |b: Option<Baseline<'_>>, used: bool| match b {
                // A snapshot that does not fit the schema is left for
                // `named` to report, as without quantisation.
                Some(b) if used && b.snapshot.check(&self.schema).is_ok() => c
                    .cache
                    .code_form(&self.schema, b.sequence, b.snapshot)
                    .map(Some)
                    .map_err(DecodeError::BadBaseline),
                _ => Ok(None),
            };
            let b = coded(baseline, true)?;
            let p = coded(prior, self.schema.predicts())?;
            let header = self.decode_inner(
                packet,
                Reference {
                    history: reference.history,
                    baseline: swap(baseline, b, &c.cache),
                    prior: swap(prior, p, &c.cache),
                    recall: reference.recall,
                },
                out,
                Some(&mut c.cur),
            )?;
            // The codes were valid, so the values code back to them.
            c.cache.insert(
                header.sequence,
                out.sections().iter().map(|s| s.as_ref()),
                &mut c.cur,
            );
            Ok(header)
        })();
        self.codes = c;
        r
    }

    /// Decodes a payload as the blocks regenerate it (no header, no
    /// blocks) against `baseline` (and `prior`), for the stage benches.
    /// Without a header, a prior is taken at the distances of the last
    /// packet decoded (equal distances before any).
    #[cfg(feature = "internals")]
    pub(crate) fn decode_payload_into(
        &mut self,
        payload: &[u8],
        baseline: Option<&Snapshot>,
        prior: Option<&Snapshot>,
        out: &mut Snapshot,
    ) -> Result<(), DecodeError> {
        self.payload.clear();
        self.payload.extend_from_slice(payload);
        let r = self.rebuild(baseline, prior, Recalled::new(None, None), out);
        if r.is_err() {
            out.reset(&self.schema);
        }
        r
    }

    /// Rebuilds `out` from `self.payload` (the sections' tokens, in the
    /// zstd path's byte layout) and the baselines.
    fn rebuild(
        &mut self,
        base: Option<&Snapshot>,
        prior: Option<&Snapshot>,
        recall: Recalled<'_>,
        out: &mut Snapshot,
    ) -> Result<(), DecodeError> {
        let payload = core::mem::take(&mut self.payload);
        let mut src = ByteSource::new(&payload);
        let result = self
            .decode_walk(
                &mut src,
                !payload.is_empty(),
                true,
                base,
                prior,
                recall,
                out,
            )
            .and_then(|()| {
                if payload.is_empty() {
                    Ok(())
                } else {
                    src.finish()?;
                    self.check_not_idle()
                }
            });
        self.payload = payload;
        result
    }

    /// Blocks whose payload changes no section spell the empty payload a
    /// second way (FORMAT.md 3.4): checked last, after the payload's own
    /// rules.
    fn check_not_idle(&self) -> Result<(), DecodeError> {
        let idle = self
            .metas
            .iter()
            .all(|m| m.removed.is_empty() && m.changed.is_empty() && m.spawned.is_empty());
        if idle {
            return Err(DecodeError::NonCanonical);
        }
        Ok(())
    }

    /// Keeps the history of `out` against `base` (both in code form for a
    /// quantised schema), valid once the decode succeeds.
    fn note_history(&mut self, out: &Snapshot, base: &Snapshot) {
        let cur = out.sections().iter().map(|s| s.as_ref());
        let base = base.sections().iter().map(|s| s.as_ref());
        self.history.compute(&self.elements, cur, base);
        self.history_valid = true;
    }

    /// Rebuilds `out` from a model block (FORMAT.md, "Model block"): the
    /// rest of the packet from `at` on (the header's `MODEL` flag: no block
    /// header), coding the whole walk with the dictionary's model table.
    #[allow(clippy::too_many_arguments)]
    fn decode_model_block(
        &mut self,
        r: &mut Reader<'_>,
        at: usize,
        dict: Option<&DictTables>,
        (base, prior): (Option<&Snapshot>, Option<&Snapshot>),
        recall: Recalled<'_>,
        history: Option<&History>,
        out: &mut Snapshot,
    ) -> Result<(), DecodeError> {
        let size = r.remaining();
        if size == 0 {
            return Err(DecodeError::Truncated {
                offset: at,
                needed: 1,
            });
        }
        if size > block::MAX_BLOCK_CONTENT {
            return Err(DecodeError::BadBlockSize { offset: at });
        }
        let maps = core::mem::take(&mut self.context_maps);
        let table = dict.and_then(|d| d.1.clone());
        let Some((table, map)) =
            table.and_then(|t| Some((maps.for_table(&t)?, t)).map(|(m, t)| (t, m)))
        else {
            self.context_maps = maps;
            return Err(DecodeError::MissingModelTable { offset: at });
        };
        let body_at = r.pos();
        let result = r.bytes(size).and_then(|stream| {
            let dec = ModelDecoder::new(&table, stream).map_err(|error| DecodeError::Model {
                offset: body_at,
                error,
            })?;
            let mut src = WalkSource::new(map, dec, body_at).with_history(history);
            self.decode_walk(&mut src, true, false, base, prior, recall, out)?;
            src.finish()?;
            self.check_not_idle()
        });
        self.context_maps = maps;
        result
    }

    /// Reads the entity sets and rows of every section from `src` into
    /// `out`; `has_payload` is false for a packet without blocks (every
    /// section idle); `planes_ok`: sections may hold byte planes (the byte
    /// layout).
    #[allow(clippy::too_many_arguments)]
    fn decode_walk(
        &mut self,
        src: &mut impl TokenSource,
        has_payload: bool,
        planes_ok: bool,
        base: Option<&Snapshot>,
        prior: Option<&Snapshot>,
        recall: Recalled<'_>,
        out: &mut Snapshot,
    ) -> Result<(), DecodeError> {
        let sections = self.schema.sections();
        let max_entities = self.limits.max_entities_per_section;
        let mut used = 0usize;
        for (i, (m, ty)) in self.metas.iter_mut().zip(sections).enumerate() {
            m.clear();
            m.base_len = base.map_or(0, |b| b.sections()[i].len());
            let budget = tokens::SnapshotBudget {
                used,
                limit: self.limits.max_snapshot_bytes,
                per_entity: ty.record_size() + 4,
            };
            if has_payload {
                tokens::read_meta(src, i, max_entities, budget, planes_ok, m)?;
            } else if m.base_len > max_entities {
                return Err(DecodeError::TooManyEntities {
                    section: i,
                    count: m.base_len,
                    limit: max_entities,
                });
            }
            // The rebuilt snapshot, before anything is allocated for it
            // (read_meta checks it before the spawned ids when it has any).
            let spawned = m.spawned.len() + m.ranks.len();
            used = used.saturating_add((m.kept() + spawned).saturating_mul(budget.per_entity));
            if used > budget.limit {
                return Err(DecodeError::SnapshotTooLarge {
                    bytes: used,
                    limit: budget.limit,
                });
            }
        }

        // Sections coded against the recall need the baseline's.
        let recall = match self.metas.iter().position(|m| m.recall) {
            None => None,
            Some(section) => Some(recall.check(section)?),
        };
        if let Some(r) = recall {
            let (entries, ids) = &mut self.rank_scratch;
            for (i, m) in self.metas.iter_mut().enumerate().filter(|(_, m)| m.recall) {
                tokens::resolve_ranks(i, r, entries, ids, m)?;
            }
        }
        out.reset(&self.schema);
        let mut spawn_budget = self.limits.max_decoded_bytes;
        for (i, ((ty, m), sec)) in sections
            .iter()
            .zip(&self.metas)
            .zip(out.sections_mut())
            .enumerate()
        {
            // A predicted section (4.6): entities change against the
            // baseline, values against the prediction (a type with
            // integrated fields is decoded against the prediction alone).
            let (b, pred) = match (base, prior) {
                (Some(b), Some(p)) if ty.predicts() => {
                    let predicted = &mut self.predicted[i];
                    pipeline::predict::predict_spaced(
                        ty,
                        &b.sections()[i].as_ref(),
                        &p.sections()[i].as_ref(),
                        self.spacing,
                        predicted,
                    );
                    if ty.integrators().is_empty() {
                        (b.sections()[i].as_ref(), Some(predicted.as_ref()))
                    } else {
                        (predicted.as_ref(), None)
                    }
                }
                (Some(b), _) => (b.sections()[i].as_ref(), None),
                (None, _) => (SectionRef::empty(ty.record_size()), None),
            };
            let recalled = |id: u32, out: &mut [u8]| match recall.and_then(|r| r.get(i, id)) {
                Some(r) if r.len() == out.len() => {
                    out.copy_from_slice(r);
                    codes::record_to_codes(ty, i, id, out).map_err(DecodeError::BadBaseline)?;
                    Ok(true)
                }
                _ => Ok(false),
            };
            pipeline::decode_section(
                i,
                ty,
                &self.elements[i],
                &self.plane_orders[i],
                &b,
                pred.as_ref(),
                m,
                src,
                recalled,
                spawn_budget,
                &mut self.scratch,
                sec,
            )?;
            spawn_budget -= m.spawned.len() * ty.record_size();
        }
        Ok(())
    }
}

/// The recall a packet may need: the baseline sequence its header names and
/// the recall the caller supplied.
#[derive(Debug, Clone, Copy)]
struct Recalled<'a> {
    baseline: Option<u16>,
    recall: Option<&'a Recall>,
}

impl<'a> Recalled<'a> {
    fn new(baseline: Option<u16>, recall: Option<&'a Recall>) -> Self {
        Self { baseline, recall }
    }

    /// The recall for a packet whose `section` is coded against it: a
    /// keyframe has none (`BadEntitySet`), and the caller must have
    /// supplied the baseline's.
    fn check(self, section: usize) -> Result<&'a Recall, DecodeError> {
        let Some(sequence) = self.baseline else {
            return Err(DecodeError::BadEntitySet { section });
        };
        match self.recall {
            None => Err(DecodeError::MissingRecall { section, sequence }),
            Some(r) if r.sequence() != sequence => Err(DecodeError::RecallMismatch {
                expected: sequence,
                actual: r.sequence(),
            }),
            Some(r) => Ok(r),
        }
    }
}
