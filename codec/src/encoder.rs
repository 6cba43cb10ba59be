//! The reusable [`Encoder`].
//!
//! Over 600 lines on purpose: one type whose configuration, entry points,
//! per-section row mode (masks and values or byte planes, with its trial)
//! and per-block choice (zstd, Huffman, model) share its private state.

#![forbid(unsafe_code)]

use std::sync::Arc;

use crate::block::{self, BlockHeader, BlockType, CDict, Coders, HuffmanTable, ZstdBlocks};
use crate::dict::Dictionary;
use crate::error::{DictionaryError, EncodeError};
use crate::limits::Limits;
use crate::model::{self, ContextMap, ModelShape, ModelStats, ModelTable};
use crate::packet::{Checksum, PacketHeader, PacketIds, MAX_BASELINE_DISTANCE, MAX_HEADER_LEN};
use crate::pipeline::layout::{ByteSink, LenSink};
use crate::pipeline::values::{self, Element};
use crate::pipeline::{self, tokens, EncodeScratch, RowMode};
use crate::quant::cache::CodeCache;
use crate::quant::codes;
use crate::recall::Recall;
use crate::schema::Schema;
use crate::snapshot::{Baseline, Reference, SectionRef, Snapshot};
use crate::verdict::Verdict;

/// Which entropy coders the encoder may use for each block. Raw and RLE
/// blocks are always available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Entropy {
    /// The smallest of zstd and the dictionary's Huffman table, per block,
    /// or the dictionary's context model for the whole payload when that
    /// is smaller. With a model, the blocks are only tried when they may
    /// win: when a section spawns an entity that is not recalled (whole
    /// records, where the dictionary's long matches pay) and the model
    /// stream is more than two thirds of the payload, or when it is more
    /// than seven eighths of it (its rows as masks and values: byte planes
    /// are only chosen for the blocks); otherwise the model stream is sent.
    #[default]
    Best,
    /// zstd only.
    Zstd,
    /// The Huffman table only (zstd if the dictionary has none).
    Huffman,
    /// The dictionary's context model for every non-empty payload, without
    /// trying the blocks (faster to encode); as `Best` when the dictionary
    /// has no model table or the stream would not fit one block.
    Model,
}

/// Where the model stream of the packet being built stands.
enum ModelStream {
    /// No packet is being built.
    Idle,
    /// To be coded, by the payload's sizing walk or when the packet is
    /// finished.
    Due,
    /// Coded by the sizing walk.
    Coded(Vec<u8>),
    /// The sizing walk could not code it (a token outside the table).
    Failed,
}

/// A dictionary digested for this encoder's level.
struct Prepared {
    id: u32,
    cdict: CDict,
    /// The dictionary digested for blocks up to [`block::SMALL_BLOCK`]
    /// bytes, at [`block::small_block_level`].
    small_cdict: CDict,
    huffman: Option<Arc<HuffmanTable>>,
    /// The dictionary's model table, when it fits the schema's context map.
    model: Option<Arc<ModelTable>>,
}

/// Payloads up to this many bytes settle an undecided row mode
/// ([`RowMode::Either`]) by compressing both forms; larger ones take the
/// estimate's choice, which costs one compression instead of two (measured
/// on the comparison report's arena: 0.02% more bytes, a third less
/// encoding time). Quake 3 delta packets and the golden vectors stay below
/// it. Schemas with quantisation always compress both forms: their masks
/// and small integer values compress better than the estimate assumes
/// (the quantised arena without a dictionary: 1.0% more bytes with the
/// estimate).
const TRIAL_MAX_PAYLOAD: usize = 1024;

/// The default zstd level: 3, zstd's own default. Blocks of up to 1 KiB
/// are compressed one level lower (2: zstd's `fast` strategy), which on
/// small packets is faster at the same size.
pub const DEFAULT_LEVEL: i32 = 3;

/// Encodes snapshots into packets. Keeps a zstd context, the prepared
/// dictionary and scratch buffers, so after the first packets the hot path
/// does not allocate.
///
/// With a schema that declares quantisation ([`crate::quant`]), every
/// snapshot, baseline and prior must hold quantised values (pass the world
/// through [`Schema::quantize`] once per tick); the encoder codes their
/// integer codes and refuses anything else with
/// [`SnapshotError::NotQuantized`](crate::SnapshotError::NotQuantized).
/// It keeps the code forms of the snapshots it coded recently
/// ([`Encoder::set_code_cache`]), so a baseline it sent itself is not
/// converted again; the [`Decoder`](crate::Decoder) does the same with the
/// 32 snapshots it rebuilt last (at most 4 MiB). It also carries each
/// section's last row-mode estimate forward, so a section of many changed
/// rows that went as byte planes is not sized as masks and values again
/// every packet; packets may then differ in size by a few bytes from what
/// a new encoder would send (each decodes all the same).
///
/// ```
/// use tickpack::{Baseline, Decoder, Encoder, Primitive, Reference, Schema, Snapshot};
/// let schema = Schema::builder().entity("car").field("pos", Primitive::F32, 3).build()?;
/// let mut tick0 = Snapshot::new(&schema);
/// tick0.section_mut(0).unwrap().insert(7, &[0; 12])?;
/// let mut tick1 = tick0.clone();
/// tick1.section_mut(0).unwrap().insert(7, &1.5f32.to_le_bytes().repeat(3))?;
///
/// let (mut enc, mut dec) = (Encoder::new(schema.clone()), Decoder::new(schema));
/// let key = enc.encode(&tick0, 0, Reference::KEYFRAME)?;
/// let (_, got0) = dec.decode(&key, Reference::KEYFRAME)?;
/// let base = Baseline { sequence: 0, snapshot: &got0 };
/// let delta = enc.encode(&tick1, 1, base)?;
/// let (header, got1) = dec.decode(&delta, base)?;
/// assert_eq!((header.baseline, got1), (Some(0), tick1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Encoder {
    schema: Schema,
    limits: Limits,
    blocks: ZstdBlocks,
    dict: Option<Prepared>,
    keyframe_dict: Option<Prepared>,
    entropy: Entropy,
    /// Whether the packet being built is a keyframe (no baseline).
    keyframe: bool,
    checksum_len: usize,
    elements: Vec<Vec<Element>>,
    /// Each section's byte-plane order.
    plane_orders: Vec<Vec<u16>>,
    sink: ByteSink,
    scratch: Vec<EncodeScratch>,
    predicted: Vec<crate::snapshot::Section>,
    header: Vec<u8>,
    /// The payload, when `payload_written`; its length either way. With a
    /// model stream to try first, the payload's bytes are only written
    /// when blocks are built or the payload is asked for.
    payload: Vec<u8>,
    payload_len: usize,
    payload_written: bool,
    block_scratch: Vec<u8>,
    packet: Vec<u8>,
    /// The schema's model contexts (`None`: too large for a model).
    context_map: Option<ContextMap>,
    model_out: Vec<u8>,
    /// The packet's model stream when the payload's sizing walk coded it.
    model_stream: ModelStream,
    codes: crate::quant::codes::CodeSpace,
    /// The two candidates' blocks of a row-mode trial, and which of them
    /// holds this packet's blocks (`Some` only when the trial ran for the
    /// packet being built).
    trial: [Vec<u8>; 2],
    /// The payload form a row-mode trial set aside.
    trial_payload: Vec<u8>,
    trial_winner: Option<usize>,
    /// A section's row mode is [`RowMode::Either`]: the trial runs when
    /// the blocks are built (not at all when the model stream is sent
    /// without trying them).
    trial_pending: bool,
    /// Every section codes its rows as masks and values, whatever its row
    /// mode (counting model decisions, [`Encoder::model_tokens`]).
    full_rows: bool,
    /// A clear row-mode trial outcome carried over (quantised schemas).
    verdict: Verdict,
}

impl core::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Encoder")
            .field("schema_id", &self.schema.id())
            .field("level", &self.blocks.level())
            .field("dictionary", &self.dict.as_ref().map(|d| d.id))
            .finish()
    }
}

impl Encoder {
    /// An encoder at the default level and limits, without dictionary.
    pub fn new(schema: Schema) -> Self {
        Self::with_level(schema, DEFAULT_LEVEL)
    }

    /// An encoder at zstd level `level` (1..=22; negative levels are
    /// faster). Blocks of up to 1 KiB use `level - 1` (not below 1).
    pub fn with_level(schema: Schema, level: i32) -> Self {
        let scratch = schema
            .sections()
            .iter()
            .map(|_| EncodeScratch::default())
            .collect();
        let predicted = schema
            .sections()
            .iter()
            .map(|_| Default::default())
            .collect();
        let elements: Vec<_> = schema.sections().iter().map(values::elements).collect();
        let context_map = model::context_map(&elements);
        let plane_orders = elements
            .iter()
            .map(|e| pipeline::planes::order(e))
            .collect();
        Self {
            schema,
            limits: Limits::default(),
            blocks: ZstdBlocks::new(level),
            dict: None,
            keyframe_dict: None,
            entropy: Entropy::Best,
            keyframe: false,
            checksum_len: 0,
            elements,
            plane_orders,
            sink: ByteSink::default(),
            scratch,
            predicted,
            header: Vec::with_capacity(MAX_HEADER_LEN),
            payload: Vec::new(),
            payload_len: 0,
            payload_written: true,
            block_scratch: Vec::new(),
            packet: Vec::new(),
            context_map,
            model_out: Vec::new(),
            model_stream: ModelStream::Idle,
            codes: Default::default(),
            trial: Default::default(),
            trial_payload: Vec::new(),
            trial_winner: None,
            trial_pending: false,
            full_rows: false,
            verdict: Verdict::default(),
        }
    }

    /// With a quantised schema: keeps the code forms of at most `entries`
    /// recently coded snapshots, baselines and priors, and at most `bytes`
    /// of them (values and codes together), but always the 3 one packet
    /// needs; the least recently used goes first. The default, 32 and
    /// 4 MiB, covers one client's baselines; an encoder shared by many
    /// clients (as the session [`Server`](crate::session::Server)'s) needs
    /// room for every client's recent snapshots. Without quantisation this
    /// does nothing.
    pub fn set_code_cache(&mut self, entries: usize, bytes: usize) {
        self.codes.cache = CodeCache::new(entries, bytes);
    }

    /// Sets the limits (use the decoder's, so every packet is accepted).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Compresses every following packet with `dict`, digested once here at
    /// the encoder's level. `None` goes back to no dictionary.
    pub fn set_dictionary(&mut self, dict: Option<&Dictionary>) -> Result<(), DictionaryError> {
        self.dict = self.prepare(dict)?;
        self.verdict.clear();
        Ok(())
    }

    /// Compresses keyframes (packets without baseline) with `dict` instead
    /// of the [`set_dictionary`](Encoder::set_dictionary) one: keyframes and
    /// deltas have different statistics, and the trainer makes one
    /// dictionary for each. `None`: keyframes use the main dictionary.
    pub fn set_keyframe_dictionary(
        &mut self,
        dict: Option<&Dictionary>,
    ) -> Result<(), DictionaryError> {
        self.keyframe_dict = self.prepare(dict)?;
        self.verdict.clear();
        Ok(())
    }

    fn prepare(&self, dict: Option<&Dictionary>) -> Result<Option<Prepared>, DictionaryError> {
        Ok(match dict {
            None => None,
            Some(d) => Some(Prepared {
                id: d.id(),
                cdict: CDict::new(d.bytes(), self.blocks.level(), block::MAX_BLOCK_CONTENT)
                    .ok_or(DictionaryError::Rejected { id: d.id() })?,
                small_cdict: CDict::new(
                    d.bytes(),
                    block::small_block_level(self.blocks.level()),
                    block::SMALL_BLOCK,
                )
                .ok_or(DictionaryError::Rejected { id: d.id() })?,
                huffman: d.huffman_arc(),
                model: d.model_arc().filter(|t| {
                    self.context_map
                        .as_ref()
                        .is_some_and(|m| m.shape() == t.shape())
                }),
            }),
        })
    }

    /// Which entropy coders blocks may use (default [`Entropy::Best`]).
    pub fn set_entropy(&mut self, entropy: Entropy) {
        self.entropy = entropy;
        self.verdict.clear();
    }

    /// The dictionary for the packet being built.
    fn active_dict(&self) -> Option<&Prepared> {
        match (&self.keyframe_dict, self.keyframe) {
            (Some(k), true) => Some(k),
            _ => self.dict.as_ref(),
        }
    }

    /// Sends a 16-bit checksum of the snapshot in every packet (3 bytes
    /// with the header's extension byte), so a receiver that reconstructs
    /// anything else gets
    /// [`DecodeError::ChecksumMismatch`](crate::DecodeError::ChecksumMismatch)
    /// instead of a silently wrong state. Off by default. Same as
    /// `set_checksum_len(if on { 2 } else { 0 })`.
    pub fn set_checksum(&mut self, on: bool) {
        self.set_checksum_len(if on { 2 } else { 0 });
    }

    /// Sends the low `len` bytes (0, 1 or 2; more counts as 2) of the
    /// snapshot's checksum in every packet. One byte misses one wrong
    /// state in 256, two bytes one in 65,536.
    pub fn set_checksum_len(&mut self, len: usize) {
        self.checksum_len = len.min(2);
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// An upper bound on the packet size for `snapshot` against `baseline`.
    pub fn max_encoded_len(&self, snapshot: &Snapshot, baseline: Option<&Snapshot>) -> usize {
        let mut payload = 0usize;
        for (i, s) in snapshot.sections().iter().enumerate() {
            let b = baseline
                .and_then(|b| b.sections().get(i))
                .map_or(0, |b| b.len());
            // Flags; two entity sets (head and bitmap, never larger than
            // that as a list); spawn count and ids; every row at its largest.
            let rows = s.len() * values::max_row_len(&self.elements[i]);
            payload += 1 + 2 * (10 + 1 + b.div_ceil(8)) + 10 + 5 * s.len() + rows;
        }
        MAX_HEADER_LEN + block::max_blocks_len(payload)
    }

    /// Encodes `snapshot` as packet `sequence` against `reference` (a
    /// [`Reference`], or `None` / `Some(baseline)` / a [`Baseline`]), into a
    /// new vector.
    pub fn encode<'r>(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: impl Into<Reference<'r>>,
    ) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.encode_to_vec(snapshot, sequence, reference, &mut out)?;
        Ok(out)
    }

    /// Like [`Encoder::encode`], replacing the contents of `out` (its
    /// capacity is reused).
    pub fn encode_to_vec<'r>(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: impl Into<Reference<'r>>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        self.build_snapshot(snapshot, sequence, reference.into())?;
        self.finish_vec(out);
        Ok(())
    }

    /// Like [`Encoder::encode`], writing into `out` and returning the packet
    /// length; [`EncodeError::OutputTooSmall`] names the size needed
    /// ([`Encoder::max_encoded_len`] is always enough).
    pub fn encode_into<'r>(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: impl Into<Reference<'r>>,
        out: &mut [u8],
    ) -> Result<usize, EncodeError> {
        self.build_snapshot(snapshot, sequence, reference.into())?;
        self.finish(out)
    }

    /// Encodes borrowed sections (for example [`SectionRef::from_pod`] over
    /// your own arrays) without building a [`Snapshot`]; `sections` has one
    /// entry per entity type.
    pub fn encode_sections<'r>(
        &mut self,
        sections: &[SectionRef<'_>],
        sequence: u16,
        reference: impl Into<Reference<'r>>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let expected = self.schema.sections().len();
        if sections.len() != expected {
            return Err(EncodeError::Snapshot(crate::SnapshotError::SectionCount {
                expected,
                actual: sections.len(),
            }));
        }
        self.build(sections.iter().copied(), sequence, reference.into())?;
        self.finish_vec(out);
        Ok(())
    }

    /// The uncompressed payload `encode` would cut into blocks (the
    /// sections' entity sets, masks and values, without header): exactly
    /// the bytes zstd and its dictionaries see, so dictionary training
    /// samples come from here.
    pub fn payload<'r>(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: impl Into<Reference<'r>>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        self.build_snapshot(snapshot, sequence, reference.into())?;
        self.settle_planes(false);
        self.run_trial();
        self.ensure_payload();
        out.clear();
        out.extend_from_slice(&self.payload);
        Ok(())
    }

    /// The shape a model table must have to code this schema's packets
    /// (`None`: the schema is too large for a context model).
    pub fn model_shape(&self) -> Option<ModelShape> {
        self.context_map.as_ref().map(ContextMap::shape)
    }

    /// Counts into `stats` the model tokens of the packet `encode` would
    /// build against `reference`: training data for a [`ModelTable`].
    /// `stats` must have [`Encoder::model_shape`]'s shape.
    pub fn model_tokens<'r>(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: impl Into<Reference<'r>>,
        stats: &mut ModelStats,
    ) -> Result<(), EncodeError> {
        // The model codes every row as masks and values: no section may
        // skip them.
        self.full_rows = true;
        let built = self.build_snapshot(snapshot, sequence, reference.into());
        self.full_rows = false;
        built?;
        if let (Some(map), false) = (&self.context_map, self.payload_len == 0) {
            model::count_sections(map, stats, &self.scratch, &self.elements);
        }
        Ok(())
    }

    fn bound(&self) -> usize {
        self.header.len() + block::max_blocks_len(self.payload_len)
    }

    fn build_snapshot(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: Reference<'_>,
    ) -> Result<(), EncodeError> {
        snapshot.check(&self.schema)?;
        self.build(
            snapshot.sections().iter().map(|s| s.as_ref()),
            sequence,
            reference,
        )
    }

    /// Builds header and payload into the scratch buffers. A quantised
    /// schema codes the integer codes of its quantised fields: the
    /// snapshot, baseline and prior are converted first (refusing values
    /// that were not quantised), and the checksum covers the values.
    fn build<'s>(
        &mut self,
        sections: impl Iterator<Item = SectionRef<'s>> + Clone,
        sequence: u16,
        reference: Reference<'_>,
    ) -> Result<(), EncodeError> {
        let (baseline, prior) = (reference.baseline, reference.prior);
        let recall = recall_of(&reference)?;
        if !self.schema.is_quantized() {
            return self.build_coded(
                sections.clone(),
                sections,
                sequence,
                baseline,
                prior,
                recall,
            );
        }
        let mut c = core::mem::take(&mut self.codes);
        let r = (|| {
            c.cur.reset(&self.schema);
            for (i, (s, d)) in sections.clone().zip(c.cur.sections_mut()).enumerate() {
                codes::section_to_codes(&self.schema, i, &s, d)?;
            }
            let base = match baseline {
                Some(b) => Some(c.cache.code_form(&self.schema, b.sequence, b.snapshot)?),
                None => None,
            };
            let prior_codes = match prior.filter(|_| baseline.is_some() && self.schema.predicts()) {
                Some(p) => Some(c.cache.code_form(&self.schema, p.sequence, p.snapshot)?),
                None => None,
            };
            let coded = |b: Baseline<'_>, i: Option<usize>| {
                i.map(|i| Baseline {
                    sequence: b.sequence,
                    snapshot: c.cache.codes(i),
                })
            };
            self.build_coded(
                c.cur.sections().iter().map(|s| s.as_ref()),
                sections.clone(),
                sequence,
                baseline.and_then(|b| coded(b, base)),
                prior.and_then(|p| coded(p, prior_codes)),
                recall,
            )?;
            c.cache.insert(sequence, sections, &mut c.cur);
            Ok(())
        })();
        self.codes = c;
        r
    }

    /// [`Encoder::encode_to_vec`] for a quantised schema when the caller
    /// has every snapshot in code form already (the session server converts
    /// each tick's world once for all its clients): `codes` is `snapshot`
    /// in code form, and the baseline and prior of `coded` are in code
    /// form; its recall holds values, as always. Converting `snapshot` must
    /// give exactly `codes`.
    pub(crate) fn encode_coded_to_vec(
        &mut self,
        snapshot: &Snapshot,
        codes: &Snapshot,
        sequence: u16,
        coded: Reference<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        snapshot.check(&self.schema)?;
        codes.check(&self.schema)?;
        let recall = recall_of(&coded)?;
        self.build_coded(
            codes.sections().iter().map(|s| s.as_ref()),
            snapshot.sections().iter().map(|s| s.as_ref()),
            sequence,
            coded.baseline,
            coded.prior,
            recall,
        )?;
        self.finish_vec(out);
        Ok(())
    }

    /// [`Encoder::build`] on sections in code form; `values` are the same
    /// sections as the caller holds them, for the checksum. The recall
    /// holds values: recalled records are converted as they are used.
    fn build_coded<'s, 'v>(
        &mut self,
        sections: impl Iterator<Item = SectionRef<'s>> + Clone,
        values: impl Iterator<Item = SectionRef<'v>>,
        sequence: u16,
        baseline: Option<Baseline<'_>>,
        prior: Option<Baseline<'_>>,
        recall: Option<&Recall>,
    ) -> Result<(), EncodeError> {
        if let Some(b) = baseline {
            b.snapshot.check(&self.schema)?;
            let d = sequence.wrapping_sub(b.sequence);
            if d == 0 || d > MAX_BASELINE_DISTANCE {
                return Err(EncodeError::BaselineDistance {
                    sequence,
                    baseline: b.sequence,
                });
            }
        }
        // A prior only matters to schemas that predict, and needs a baseline.
        let prior = prior.filter(|_| baseline.is_some() && self.schema.predicts());
        if let (Some(b), Some(p)) = (baseline, prior) {
            p.snapshot.check(&self.schema)?;
            let d = b.sequence.wrapping_sub(p.sequence);
            let total = u32::from(sequence.wrapping_sub(b.sequence)) + u32::from(d);
            if d == 0 || total > u32::from(MAX_BASELINE_DISTANCE) {
                return Err(EncodeError::BaselineDistance {
                    sequence,
                    baseline: p.sequence,
                });
            }
        }
        self.keyframe = baseline.is_none();
        self.trial_winner = None;
        self.trial_pending = false;
        self.payload.clear();
        self.payload_len = 0;
        self.payload_written = true;
        if let ModelStream::Coded(buf) =
            core::mem::replace(&mut self.model_stream, ModelStream::Due)
        {
            self.model_out = buf;
        }
        let limit = self.limits.max_entities_per_section;
        let snapshot_bytes = sections
            .clone()
            .map(|s| s.len().saturating_mul(s.record_size() + 4))
            .fold(0usize, usize::saturating_add);
        if snapshot_bytes > self.limits.max_snapshot_bytes {
            return Err(EncodeError::SnapshotTooLarge {
                bytes: snapshot_bytes,
                limit: self.limits.max_snapshot_bytes,
            });
        }
        // With a model stream to try first, the payload's bytes and the
        // byte-plane estimate wait until blocks are built: until then the
        // payload is sized with every section as masks and values.
        let defer = self.entropy != Entropy::Zstd
            && self.context_map.is_some()
            && self.active_dict().is_some_and(|d| d.model.is_some());
        // A delta packet that settles now and sends no recall may let a
        // section skip its masks and values when its recent packets went as
        // byte planes (`pipeline::encode_section`), provided no section's
        // rows can push the payload past its limit, where every section
        // goes back to masks and values.
        let predict = (!defer
            && !self.full_rows
            && recall.is_none()
            && baseline.is_some()
            && payload_bound(sections.clone(), baseline) <= self.limits.max_decoded_bytes)
            .then_some(if self.schema.is_quantized() {
                usize::MAX
            } else {
                TRIAL_MAX_PAYLOAD
            });
        for (i, ((cur, ty), scratch)) in sections
            .clone()
            .zip(self.schema.sections())
            .zip(&mut self.scratch)
            .enumerate()
        {
            if cur.record_size() != ty.record_size() {
                return Err(EncodeError::RecordSize {
                    section: i,
                    expected: ty.record_size(),
                    actual: cur.record_size(),
                });
            }
            if cur.len() > limit {
                return Err(EncodeError::TooManyEntities {
                    section: i,
                    count: cur.len(),
                    limit,
                });
            }
            let base = match (baseline, prior) {
                (Some(b), Some(p)) if ty.predicts() => {
                    let predicted = &mut self.predicted[i];
                    pipeline::predict_section(
                        ty,
                        &b.snapshot.sections()[i].as_ref(),
                        &p.snapshot.sections()[i].as_ref(),
                        predicted,
                    );
                    predicted.as_ref()
                }
                (Some(b), _) => b.snapshot.sections()[i].as_ref(),
                (None, _) => SectionRef::empty(ty.record_size()),
            };
            let recalled = |id: u32, out: &mut [u8]| match recall.and_then(|r| r.get(i, id)) {
                Some(r) if r.len() == out.len() => {
                    out.copy_from_slice(r);
                    codes::record_to_codes(ty, i, id, out)?;
                    Ok(true)
                }
                _ => Ok(false),
            };
            pipeline::encode_section(
                ty,
                &self.elements[i],
                &self.plane_orders[i],
                &base,
                &cur,
                recalled,
                defer,
                predict,
                scratch,
            )
            .map_err(EncodeError::Snapshot)?;
        }
        if self.scratch.iter().any(|s| s.tentative) {
            self.confirm_tentative(sections.clone(), baseline, prior);
        }
        // The decoder caps the records a packet spawns at the payload limit.
        let spawned: usize = self
            .scratch
            .iter()
            .zip(self.schema.sections())
            .map(|(s, ty)| s.tokens.spawned.len() * ty.record_size())
            .sum();
        if spawned > self.limits.max_decoded_bytes {
            return Err(EncodeError::PayloadTooLarge {
                size: spawned,
                limit: self.limits.max_decoded_bytes,
            });
        }
        // An empty payload stands for "every section idle".
        if !self.scratch.iter().all(|s| s.tokens.is_idle()) {
            // Rows that alone pass the trial size settle `Either` sections
            // before the payload is sized, not after (`fit_planes`).
            if self.row_bytes() > TRIAL_MAX_PAYLOAD && !self.schema.is_quantized() {
                self.take_middle_estimate();
            }
            self.size_payload(defer);
            if self.payload_len > self.limits.max_decoded_bytes {
                // Byte planes may still fit.
                self.settle_planes(defer);
            }
            self.fit_planes(defer);
        }
        if self.payload_len > self.limits.max_decoded_bytes {
            return Err(EncodeError::PayloadTooLarge {
                size: self.payload_len,
                limit: self.limits.max_decoded_bytes,
            });
        }
        self.write_header(values, sequence, baseline, prior);
        Ok(())
    }

    /// Runs the byte-plane estimate of sections that deferred it, and
    /// sizes the payload (written unless `defer`) with its outcome.
    fn settle_planes(&mut self, defer: bool) {
        let mut any = false;
        for ((s, e), (order, ty)) in self
            .scratch
            .iter_mut()
            .zip(&self.elements)
            .zip(self.plane_orders.iter().zip(self.schema.sections()))
        {
            if s.pending {
                pipeline::settle_planes(e.len(), order, ty.record_size(), s);
                any = true;
            }
        }
        if any {
            self.size_payload(defer);
            self.fit_planes(defer);
        }
    }

    /// Sections whose row mode is [`RowMode::Either`] take the estimate's
    /// choice when the payload is over [`TRIAL_MAX_PAYLOAD`] (schemas
    /// without quantisation). Byte planes
    /// may be larger than masks and values before compression: when they
    /// do not fit the limit, every section goes back to masks and values.
    /// Then notes whether a row-mode trial is due.
    fn fit_planes(&mut self, defer: bool) {
        if self.payload_len > TRIAL_MAX_PAYLOAD
            && !self.schema.is_quantized()
            && self.take_middle_estimate()
        {
            self.size_payload(defer);
        }
        let planes = self.scratch.iter().any(|s| s.tokens.planes);
        if planes && self.payload_len > self.limits.max_decoded_bytes {
            for s in &mut self.scratch {
                s.tokens.planes = false;
                s.mode = RowMode::Tokens;
            }
            self.size_payload(defer);
        }
        self.trial_pending = self.entropy != Entropy::Model
            && self
                .scratch
                .iter()
                .any(|s| matches!(s.mode, RowMode::Either { .. }));
    }

    /// At most the payload bytes of the sections' rows in the forms their
    /// estimates left them ([`RowMode::Either`] as masks and values): each
    /// section's count of kind-bit bytes may round up by one.
    fn row_bytes(&self) -> usize {
        self.scratch
            .iter()
            .map(|s| s.row_bytes.saturating_sub(1))
            .fold(0usize, usize::saturating_add)
    }

    /// Keeps the sections settled as planes tentatively (by the middle
    /// estimate, `pipeline::encode_section`) when the rows of all sections
    /// take the payload over [`TRIAL_MAX_PAYLOAD`], where `fit_planes`
    /// would take that estimate; else codes them in full.
    fn confirm_tentative<'s>(
        &mut self,
        sections: impl Iterator<Item = SectionRef<'s>>,
        baseline: Option<Baseline<'_>>,
        prior: Option<Baseline<'_>>,
    ) {
        let sure = self.row_bytes() > TRIAL_MAX_PAYLOAD;
        for (i, ((cur, ty), scratch)) in sections
            .zip(self.schema.sections())
            .zip(&mut self.scratch)
            .enumerate()
        {
            if !core::mem::take(&mut scratch.tentative) || sure {
                continue;
            }
            // The baseline `encode_section` was given: the predicted one
            // (still in `self.predicted`) or the baseline's.
            let base = match (baseline, prior) {
                (Some(_), Some(_)) if ty.predicts() => self.predicted[i].as_ref(),
                (Some(b), _) => b.snapshot.sections()[i].as_ref(),
                (None, _) => SectionRef::empty(ty.record_size()),
            };
            pipeline::complete_section(
                ty,
                &self.elements[i],
                &self.plane_orders[i],
                &base,
                &cur,
                scratch,
            );
        }
    }

    /// Gives every [`RowMode::Either`] section the middle estimate's
    /// choice; returns whether any became byte planes.
    fn take_middle_estimate(&mut self) -> bool {
        let mut flipped = false;
        for s in &mut self.scratch {
            if let RowMode::Either { planes } = s.mode {
                s.mode = if planes {
                    RowMode::Planes
                } else {
                    RowMode::Tokens
                };
                s.tokens.planes = planes;
                flipped |= planes;
            }
        }
        flipped
    }

    /// Runs the row-mode trial if one is pending.
    fn run_trial(&mut self) {
        if core::mem::take(&mut self.trial_pending) {
            self.row_mode_trial();
        }
    }

    /// Sections whose row mode is [`RowMode::Either`] (now as masks and
    /// values in the payload): compresses the payload as it is and with
    /// those sections as byte planes, and keeps the smaller (ties: masks
    /// and values), with its blocks for `finish`. A quantised schema takes
    /// a clear outcome of a recent trial instead ([`Verdict`]).
    fn row_mode_trial(&mut self) {
        self.ensure_payload();
        let either = |s: &EncodeScratch| matches!(s.mode, RowMode::Either { .. });
        let quantized = self.schema.is_quantized();
        if quantized {
            if let Some(w) = self
                .verdict
                .take(self.keyframe, self.scratch.iter().map(either))
            {
                if w == 1 {
                    self.write_planes();
                }
                return;
            }
        }
        let [mut tokens_blocks, mut planes_blocks] = core::mem::take(&mut self.trial);
        tokens_blocks.clear();
        self.append_blocks(&mut tokens_blocks);
        either_planes(&mut self.scratch, true);
        // The payload with masks and values is kept aside, to be put back
        // if it wins.
        let mut tokens_payload = core::mem::take(&mut self.trial_payload);
        core::mem::swap(&mut self.payload, &mut tokens_payload);
        let tokens_len = self.payload_len;
        self.write_payload();
        let mut winner = 0;
        let planes_fit = self.payload_len <= self.limits.max_decoded_bytes;
        if planes_fit {
            planes_blocks.clear();
            self.append_blocks(&mut planes_blocks);
            if planes_blocks.len() < tokens_blocks.len() {
                winner = 1;
            }
        }
        if winner == 0 {
            either_planes(&mut self.scratch, false);
            core::mem::swap(&mut self.payload, &mut tokens_payload);
            self.payload_len = tokens_len;
        }
        self.trial_payload = tokens_payload;
        if quantized {
            let planes = planes_fit.then_some(planes_blocks.len());
            self.verdict.note(
                self.keyframe,
                self.scratch.iter().map(either),
                tokens_blocks.len(),
                planes,
            );
        }
        self.trial = [tokens_blocks, planes_blocks];
        self.trial_winner = Some(winner);
    }

    /// Writes the payload with the [`RowMode::Either`] sections as byte
    /// planes, unless that takes it over the payload limit (then it stays
    /// with masks and values).
    fn write_planes(&mut self) {
        either_planes(&mut self.scratch, true);
        let mut tokens_payload = core::mem::take(&mut self.trial_payload);
        core::mem::swap(&mut self.payload, &mut tokens_payload);
        let tokens_len = self.payload_len;
        self.write_payload();
        if self.payload_len > self.limits.max_decoded_bytes {
            either_planes(&mut self.scratch, false);
            core::mem::swap(&mut self.payload, &mut tokens_payload);
            self.payload_len = tokens_len;
        }
        self.trial_payload = tokens_payload;
    }

    /// Appends the payload's blocks (zstd, Huffman, raw or RLE per block,
    /// as the entropy setting allows) to `out`.
    fn append_blocks(&mut self, out: &mut Vec<u8>) {
        let prepared = match (&self.keyframe_dict, self.keyframe) {
            (Some(k), true) => Some(k),
            _ => self.dict.as_ref(),
        };
        let huffman = prepared.and_then(|p| p.huffman.as_deref());
        let coders = Coders {
            zstd: self.entropy != Entropy::Huffman || huffman.is_none(),
            dict: prepared.map(|p| &p.cdict),
            small_dict: prepared.map(|p| &p.small_cdict),
            huffman: huffman.filter(|_| self.entropy != Entropy::Zstd),
        };
        block::encode_blocks(
            &mut self.blocks,
            coders,
            &self.payload,
            &mut self.block_scratch,
            out,
        );
    }

    /// Writes the sections' sets and rows, each section in its row mode,
    /// as the payload.
    fn write_payload(&mut self) {
        let was_written = core::mem::replace(&mut self.payload_written, true);
        self.sink.clear();
        for (i, s) in self.scratch.iter().enumerate() {
            tokens::write_meta(&mut self.sink, i, &s.tokens, s.tokens.planes);
        }
        for (i, s) in self.scratch.iter().enumerate() {
            if s.tokens.planes {
                self.sink.raw(&s.planes);
            } else {
                tokens::write_rows(&mut self.sink, i, self.elements[i].len(), &s.tokens);
            }
        }
        self.sink.finish_into(&mut self.payload);
        // A payload sized by `size_payload` is written with that length.
        debug_assert!(was_written || self.payload.len() == self.payload_len);
        self.payload_len = self.payload.len();
    }

    /// Writes the payload, or with `defer` only counts its length (the
    /// same as [`Encoder::write_payload`] would write).
    fn size_payload(&mut self, defer: bool) {
        if !defer {
            self.payload_written = true;
            self.write_payload();
            return;
        }
        let mut len = LenSink::new();
        if self.size_with_model(&mut len) {
            self.payload.clear();
            self.payload_len = len.len();
            self.payload_written = false;
            return;
        }
        for (i, s) in self.scratch.iter().enumerate() {
            tokens::write_meta(&mut len, i, &s.tokens, s.tokens.planes);
        }
        for (i, s) in self.scratch.iter().enumerate() {
            if s.tokens.planes {
                len.raw(s.planes.len());
            } else {
                tokens::write_rows(&mut len, i, self.elements[i].len(), &s.tokens);
            }
        }
        self.payload.clear();
        self.payload_len = len.len();
        self.payload_written = false;
    }

    /// Counts the payload's length into `len` while coding the model
    /// stream, in one walk, when the packet's stream is due and the walks
    /// are the same (no section as byte planes); returns whether it did.
    fn size_with_model(&mut self, len: &mut LenSink) -> bool {
        let table = match (&self.keyframe_dict, self.keyframe) {
            (Some(k), true) => Some(k),
            _ => self.dict.as_ref(),
        }
        .and_then(|p| p.model.as_deref());
        let (Some(table), Some(map)) = (table, &self.context_map) else {
            return false;
        };
        if !matches!(self.model_stream, ModelStream::Due)
            || self.entropy == Entropy::Zstd
            || self.scratch.iter().any(|s| s.tokens.planes)
        {
            return false;
        }
        let buf = core::mem::take(&mut self.model_out);
        self.model_stream =
            match model::encode_sections_sized(map, table, &self.scratch, &self.elements, buf, len)
            {
                Ok(stream) => ModelStream::Coded(stream),
                Err(_) => ModelStream::Failed,
            };
        true
    }

    /// Writes the payload if only its length was counted.
    fn ensure_payload(&mut self) {
        if !self.payload_written {
            self.write_payload();
        }
    }

    fn write_header<'s>(
        &mut self,
        sections: impl Iterator<Item = SectionRef<'s>>,
        sequence: u16,
        baseline: Option<Baseline<'_>>,
        prior: Option<Baseline<'_>>,
    ) {
        let dictionary_id = self.active_dict().map(|d| d.id);
        let mut h = PacketHeader {
            sequence,
            baseline: baseline.map(|b| b.sequence),
            prior: prior.map(|p| p.sequence),
            dictionary: dictionary_id.is_some(),
            ids: baseline.is_none().then_some(PacketIds {
                schema_id: self.schema.id(),
                dictionary_id,
            }),
            checksum: Checksum::None,
        };
        if self.checksum_len > 0 {
            let full = crate::snapshot::digest_sections(sections, h.checksum_seed(dictionary_id));
            h.checksum = Checksum::of_len(self.checksum_len, full);
        }
        self.header.clear();
        h.write(&mut self.header);
    }

    /// Replaces `out` with header and blocks.
    fn finish_vec(&mut self, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(self.bound());
        out.extend_from_slice(&self.header);
        let prepared = match (&self.keyframe_dict, self.keyframe) {
            (Some(k), true) => Some(k),
            _ => self.dict.as_ref(),
        };
        if self.payload_len == 0 {
            return;
        }
        // The model stream first: `Entropy::Model` keeps it without trying
        // the blocks; `Best` keeps it when it is smaller than they are.
        let table = prepared.and_then(|p| p.model.as_deref());
        let mut model = None;
        let coded = core::mem::replace(&mut self.model_stream, ModelStream::Idle);
        if let (Some(table), Some(map), false) =
            (table, &self.context_map, self.entropy == Entropy::Zstd)
        {
            let stream = match coded {
                ModelStream::Coded(stream) => Ok(stream),
                ModelStream::Failed => Err(()),
                ModelStream::Idle | ModelStream::Due => {
                    let buf = core::mem::take(&mut self.model_out);
                    model::encode_sections(map, table, &self.scratch, &self.elements, buf)
                        .map_err(|_| ())
                }
            };
            if let Ok(stream) = stream {
                if (1..=block::MAX_BLOCK_CONTENT).contains(&stream.len()) {
                    model = Some(stream);
                } else {
                    self.model_out = stream;
                }
            }
        }
        if let Some(stream) = model {
            if self.entropy != Entropy::Model && self.blocks_may_win(stream.len()) {
                self.finish_blocks(out);
            }
            let blocks = out.len() - self.header.len();
            if blocks == 0 || stream.len() < blocks {
                out.truncate(self.header.len());
                BlockHeader {
                    last: true,
                    block_type: BlockType::Model,
                    size: stream.len(),
                }
                .write(out);
                out.extend_from_slice(&stream);
            }
            self.model_out = stream;
            return;
        }
        self.finish_blocks(out);
    }

    /// Whether `Entropy::Best` tries the blocks against a model stream of
    /// `model` bytes, the payload sized as by `build_coded` (with the
    /// byte-plane choice deferred, every row as masks and values, unless
    /// that length is over the payload limit):
    /// - when a section spawns an entity that is not recalled (whole
    ///   records against the default record, where a dictionary's long
    ///   matches can beat the model) and the model saved less than a third
    ///   of the payload;
    /// - when the model saved less than an eighth of the payload.
    ///
    /// Elsewhere the blocks win rarely and by little. Measured on the
    /// Quake 3 demos (`q3_replay`, each trained on the other four): trying
    /// the blocks for every packet saves 0.044% of the bytes over trying
    /// them on spawns and over seven eighths; of those tries the blocks won
    /// 31, and every one with a spawn had a model stream of at least 0.67
    /// of the payload, so the two-thirds limit loses 1 byte over the five
    /// demos while the blocks are built for 0.25-1.1% of the packets
    /// instead of 0.9-2.8% (a limit of 11/16 would lose 537 bytes on one
    /// demo).
    /// On the racing lobby and the cube pile with their shipped sets the
    /// model streams are 0.81-0.83 and 0.64-0.72 of the payload and always
    /// smaller than the blocks.
    fn blocks_may_win(&self, model: usize) -> bool {
        let spawns = self
            .scratch
            .iter()
            .any(|s| s.tokens.recalled.iter().any(|&r| !r));
        (spawns && model.saturating_mul(3) > self.payload_len.saturating_mul(2))
            || model.saturating_mul(8) > self.payload_len.saturating_mul(7)
    }

    /// Appends the payload's blocks to `out`: the row-mode trial's when it
    /// built them for this packet, else freshly encoded.
    fn finish_blocks(&mut self, out: &mut Vec<u8>) {
        self.settle_planes(true);
        self.run_trial();
        match self.trial_winner {
            Some(w) => out.extend_from_slice(&self.trial[w]),
            None => {
                self.ensure_payload();
                self.append_blocks(out);
            }
        }
    }

    /// Writes header and blocks into `out`, returning the length.
    fn finish(&mut self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut packet = core::mem::take(&mut self.packet);
        self.finish_vec(&mut packet);
        let n = packet.len();
        let r = match out.get_mut(..n) {
            Some(dst) => {
                dst.copy_from_slice(&packet);
                Ok(n)
            }
            None => Err(EncodeError::OutputTooSmall {
                needed: n,
                available: out.len(),
            }),
        };
        self.packet = packet;
        r
    }
}

/// Puts the [`RowMode::Either`] sections' rows as byte planes (`on`) or as
/// masks and values.
fn either_planes(scratch: &mut [EncodeScratch], on: bool) {
    for s in scratch
        .iter_mut()
        .filter(|s| matches!(s.mode, RowMode::Either { .. }))
    {
        s.tokens.planes = on;
    }
}

/// More payload bytes than a packet of `sections` against `baseline` can
/// take in any row mode: per section its entity sets (at most five bytes
/// per id, baseline ids included) and per entity a row of at most four
/// bytes per record byte (byte planes take one; a varint at most two per
/// value byte, masks and kind bits at most one more) and sixteen more.
fn payload_bound<'s>(
    sections: impl Iterator<Item = SectionRef<'s>>,
    baseline: Option<Baseline<'_>>,
) -> usize {
    let base = |i: usize| {
        baseline
            .and_then(|b| b.snapshot.sections().get(i))
            .map_or(0, |s| s.len())
    };
    sections
        .enumerate()
        .map(|(i, s)| {
            let rows = s.len().saturating_mul(4 * s.record_size() + 16 + 5);
            rows.saturating_add(base(i).saturating_mul(5))
                .saturating_add(32)
        })
        .fold(0usize, usize::saturating_add)
}

/// The reference's recall when it has a baseline, refusing a recall that is
/// not the baseline's.
fn recall_of<'r>(reference: &Reference<'r>) -> Result<Option<&'r Recall>, EncodeError> {
    let recall = reference.recall.filter(|_| reference.baseline.is_some());
    if let (Some(b), Some(r)) = (reference.baseline, recall) {
        if r.sequence() != b.sequence {
            return Err(EncodeError::RecallMismatch {
                baseline: b.sequence,
                recall: r.sequence(),
            });
        }
    }
    Ok(recall)
}
