//! The reusable [`Encoder`]: its configuration and entry points. The
//! packet is built in `build` (sections, payload size, header), each
//! section's row mode is settled in `rows`, and `payload` writes the
//! payload and chooses its blocks or the model stream.

mod build;
mod payload;
mod rows;

use std::sync::Arc;

use crate::block::{self, CDict, ZstdBlocks};
use crate::dict::Dictionary;
use crate::error::{DictionaryError, EncodeError};
use crate::history::History;
use crate::limits::Limits;
#[cfg(feature = "training")]
use crate::model::{self, ModelShape, ModelStats};
use crate::model::{ContextMaps, ModelTable};
use crate::packet::MAX_HEADER_LEN;
use crate::pipeline::layout::ByteSink;
use crate::pipeline::values::{self, Element};
use crate::pipeline::{self, EncodeScratch};
use crate::quant::cache::CodeCache;
use crate::schema::Schema;
use crate::snapshot::{Reference, SectionRef, Snapshot};
use crate::verdict::Verdict;

/// Which entropy coders the encoder may use for each block. Raw and RLE
/// blocks are always available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Entropy {
    /// zstd blocks (raw or RLE where smaller), or the dictionary's context
    /// model for the whole payload when that
    /// is smaller. With a model, the blocks are only tried when they may
    /// win: when a section spawns an entity that is not recalled (whole
    /// records, where the dictionary's long matches pay) and the model
    /// stream is more than two thirds of the payload, or when it is more
    /// than seven eighths of it (its rows as masks and values: byte planes
    /// are only chosen for the blocks); otherwise the model stream is sent.
    #[default]
    Best,
    /// zstd blocks only, no context model.
    Zstd,
    /// The dictionary's context model for every non-empty payload, without
    /// trying the blocks (faster to encode); blocks as `Best` sends them
    /// when the dictionary has no model table or the stream would not fit
    /// one block, except that a row mode the estimate left undecided is
    /// not settled by compressing both forms (a packet may be a few bytes
    /// larger).
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
    /// The dictionary's model table, when it fits the schema's context map.
    model: Option<Arc<ModelTable>>,
}

/// Payloads up to this many bytes settle an undecided row mode
/// ([`RowMode::Either`]) by compressing both forms; larger ones take the
/// estimate's choice, which costs one compression instead of two (measured
/// on the comparison report's arena: 0.02% more bytes, a third less
/// encoding time). Quake 3 delta packets and the golden vectors stay below
/// it. Schemas with quantisation settle it by the trial at any size, or by
/// a recent trial's outcome (`verdict`): their masks and small integer
/// values compress better than the estimate assumes (the quantised arena
/// without a dictionary: 1.0% more bytes with the estimate).
const TRIAL_MAX_PAYLOAD: usize = 1024;

/// The default zstd level: 3, zstd's own default. Blocks of up to 1 KiB
/// are compressed one level lower (2: zstd's `fast` strategy), which on
/// small packets is faster at the same size. Blocks without a dictionary
/// of up to 16 KiB at levels 1-3 may take a sparser match finder instead,
/// where probes find it no larger (`block::matcher`).
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
    keyframe_dict: KeyframeDict,
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
    /// The schema's model contexts per table flags.
    context_maps: ContextMaps,
    /// Per section, the baseline history of each kept entity of the
    /// packet being built (empty without one).
    kept_history: Vec<Vec<u8>>,
    /// Per section, the history bytes of each changed row's elements
    /// (with a table of flag `FLAG_ELEMENTS`).
    row_history: Vec<Vec<u8>>,
    /// Whether encoding keeps each snapshot's [`History`], and the last.
    keep_history: bool,
    history: History,
    history_valid: bool,
    /// Per section: the packet's alignment was made against the baseline
    /// itself (not a prediction of it), so the history can reuse it.
    aligned_to_baseline: Vec<bool>,
    /// The table flags [`Encoder::model_tokens`] counts for.
    #[cfg(feature = "training")]
    model_flags: u16,
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
    /// The byte-plane estimate runs whatever the model stream
    /// ([`Encoder::payload`]): the rows it weighs are always built.
    weigh_planes: bool,
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
    /// faster). Blocks of up to 1 KiB use `level - 1` (not below 1); at
    /// levels 1-3, blocks without a dictionary of up to 16 KiB may use a
    /// sparser match finder where probes find it no larger
    /// ([`DEFAULT_LEVEL`]).
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
        let context_maps = ContextMaps::new(&elements);
        let plane_orders = elements
            .iter()
            .map(|e| pipeline::planes::order(e))
            .collect();
        Self {
            schema,
            limits: Limits::default(),
            blocks: ZstdBlocks::new(level),
            dict: None,
            keyframe_dict: KeyframeDict::Delta,
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
            context_maps,
            kept_history: Vec::new(),
            row_history: Vec::new(),
            keep_history: false,
            history: History::default(),
            history_valid: false,
            aligned_to_baseline: Vec::new(),
            #[cfg(feature = "training")]
            model_flags: 0,
            model_out: Vec::new(),
            model_stream: ModelStream::Idle,
            codes: Default::default(),
            trial: Default::default(),
            trial_payload: Vec::new(),
            trial_winner: None,
            trial_pending: false,
            full_rows: false,
            weigh_planes: false,
            verdict: Verdict::default(),
        }
    }

    /// With a quantised schema: keeps the code forms of at most `entries`
    /// recently coded snapshots, baselines and priors, and at most `bytes`
    /// of them (values and codes together), but always the 3 one packet
    /// needs; the least recently used goes first. The default, 32 and
    /// 4 MiB, covers one client's baselines; an encoder shared by many
    /// clients (as in tickpack-session's `Server`) needs
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

    /// What keyframes (packets without baseline) are compressed with,
    /// beside the [`set_dictionary`](Encoder::set_dictionary) one for
    /// deltas: keyframes and deltas have different statistics, and the
    /// trainer makes one dictionary for each. The default is
    /// [`KeyframeDictionary::Delta`].
    pub fn set_keyframe_dictionary(
        &mut self,
        dict: KeyframeDictionary<'_>,
    ) -> Result<(), DictionaryError> {
        self.keyframe_dict = match dict {
            KeyframeDictionary::Delta => KeyframeDict::Delta,
            KeyframeDictionary::None => KeyframeDict::None,
            KeyframeDictionary::Own(d) => match self.prepare(Some(d))? {
                Some(p) => KeyframeDict::Own(p),
                None => KeyframeDict::None,
            },
        };
        self.verdict.clear();
        Ok(())
    }

    fn prepare(&mut self, dict: Option<&Dictionary>) -> Result<Option<Prepared>, DictionaryError> {
        if let Some((d, t)) = dict.and_then(|d| Some((d, d.model_arc()?))) {
            self.context_maps.build(&self.elements, t.flags());
            // A table of another shape would be ignored packet after packet.
            if self.context_maps.for_table(&t).is_none() {
                return Err(DictionaryError::ModelMismatch { id: d.id() });
            }
        }
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
                model: d
                    .model_arc()
                    .filter(|t| self.context_maps.for_table(t).is_some()),
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
        active(&self.dict, &self.keyframe_dict, self.keyframe)
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
        let blocks = MAX_HEADER_LEN + block::max_blocks_len(payload);
        // `Entropy::Model` sends the model stream (at most one block's
        // content) without comparing it with the blocks, and a table that
        // mispredicts the packet makes it longer than the payload.
        let model = self.entropy == Entropy::Model
            && active(&self.dict, &self.keyframe_dict, baseline.is_none())
                .is_some_and(|p| p.model.is_some());
        if model {
            blocks.max(MAX_HEADER_LEN + block::BLOCK_HEADER_LEN + block::MAX_BLOCK_CONTENT)
        } else {
            blocks
        }
    }

    /// Encodes `snapshot` as packet `sequence` against `reference` (a
    /// [`Reference`], or `None` / `Some(baseline)` / a [`Baseline`](crate::Baseline)), into a
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
    /// samples come from here. Feature `training`.
    #[cfg(feature = "training")]
    pub fn payload<'r>(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: impl Into<Reference<'r>>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        self.weigh_planes = true;
        let built = self.build_snapshot(snapshot, sequence, reference.into());
        self.weigh_planes = false;
        built?;
        self.settle_planes(false);
        self.run_trial();
        self.ensure_payload();
        out.clear();
        out.extend_from_slice(&self.payload);
        Ok(())
    }

    /// The shape a model table must have to code this schema's packets
    /// (`None`: the schema is too large for a context model). Feature
    /// `training`.
    #[cfg(feature = "training")]
    pub fn model_shape(&self) -> Option<ModelShape> {
        self.context_maps
            .get(self.model_flags)
            .map(model::ContextMap::shape)
    }

    /// Counts [`Encoder::model_tokens`] and gives
    /// [`Encoder::model_shape`] for tables of flags `flags`
    /// (`tickpack::model::ContextConfig::FLAG_CHANGED`; default 0), unknown
    /// flags as 0. Feature `training`.
    #[cfg(feature = "training")]
    pub fn set_model_flags(&mut self, flags: u16) {
        let flags = flags & model::ContextConfig::KNOWN_FLAGS;
        self.context_maps.build(&self.elements, flags);
        self.model_flags = flags;
    }

    /// Keeps the [`History`] of every snapshot encoded against a baseline
    /// ([`Encoder::history`]); off by default (it costs a pass over the
    /// snapshot and its baseline).
    pub fn set_keep_history(&mut self, on: bool) {
        self.keep_history = on;
        self.history_valid = false;
    }

    /// What the snapshot last encoded changed against its baseline, when
    /// [`Encoder::set_keep_history`] is on and it had one: give it as the
    /// [`Reference::history`] of packets coded against that snapshot (the
    /// decoder's [`Decoder::history`](crate::Decoder::history) of the same
    /// packet is equal).
    pub fn history(&self) -> Option<&History> {
        self.history_valid.then_some(&self.history)
    }

    /// Counts into `stats` the model tokens of the packet `encode` would
    /// build against `reference`: training data for a [`ModelTable`].
    /// `stats` must have [`Encoder::model_shape`]'s shape. Feature
    /// `training`.
    #[cfg(feature = "training")]
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
        if let (Some(map), false) = (
            self.context_maps.get(self.model_flags),
            self.payload_len == 0,
        ) {
            model::count_sections(
                map,
                stats,
                &self.scratch,
                &self.elements,
                &self.kept_history,
                &self.row_history,
            );
        }
        Ok(())
    }

    /// Hands to `sink` the model tokens [`Encoder::model_tokens`] counts,
    /// in coding order (for `internals::model_tokens`). The inner result
    /// is the first token outside the schema's context map.
    #[cfg(feature = "internals")]
    pub(crate) fn record_model_tokens(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: Reference<'_>,
        sink: &mut dyn model::ModelSink,
    ) -> Result<Result<(), model::ModelError>, EncodeError> {
        self.full_rows = true;
        let built = self.build_snapshot(snapshot, sequence, reference);
        self.full_rows = false;
        built?;
        Ok(match (self.context_maps.get(0), self.payload_len == 0) {
            (Some(map), false) => model::record_sections(
                map,
                sink,
                &self.scratch,
                &self.elements,
                &self.kept_history,
                &self.row_history,
            ),
            _ => Ok(()),
        })
    }

    /// Builds the packet `encode` would build against `reference` (every
    /// row as masks and values, as the model codes them) and hands `f` its
    /// walk. `None` for an empty payload. For `internals::walk_tokens` and
    /// `internals::model_tokens_labelled`.
    #[cfg(feature = "internals")]
    pub(crate) fn with_walk<R>(
        &mut self,
        snapshot: &Snapshot,
        sequence: u16,
        reference: Reference<'_>,
        f: impl FnOnce(Walk<'_>) -> R,
    ) -> Result<Option<R>, EncodeError> {
        self.full_rows = true;
        let built = self.build_snapshot(snapshot, sequence, reference);
        self.full_rows = false;
        built?;
        if self.payload_len == 0 {
            return Ok(None);
        }
        let table = self.active_dict().and_then(|d| d.model.as_deref());
        let map = match table {
            Some(t) => self.context_maps.for_table(t),
            None => self.context_maps.get(0),
        };
        Ok(Some(f(Walk {
            map,
            table,
            scratch: &self.scratch,
            elements: &self.elements,
            kept: &self.kept_history,
            rows: &self.row_history,
        })))
    }

    fn bound(&self) -> usize {
        self.header.len() + block::max_blocks_len(self.payload_len)
    }
}

/// The dictionary a packet uses: for a keyframe the one
/// [`KeyframeDict`] says, else the main one. Takes the fields rather than
/// the encoder, so callers may borrow its other fields mutably meanwhile.
fn active<'a>(
    dict: &'a Option<Prepared>,
    keyframe_dict: &'a KeyframeDict,
    keyframe: bool,
) -> Option<&'a Prepared> {
    match (keyframe_dict, keyframe) {
        (KeyframeDict::Own(k), true) => Some(k),
        (KeyframeDict::None, true) => None,
        _ => dict.as_ref(),
    }
}

/// What keyframes are compressed with
/// ([`Encoder::set_keyframe_dictionary`]).
#[derive(Debug, Clone, Copy)]
pub enum KeyframeDictionary<'a> {
    /// The delta dictionary ([`Encoder::set_dictionary`]), as deltas.
    Delta,
    /// No dictionary (a dictionary set without a keyframe dictionary).
    None,
    /// This dictionary.
    Own(&'a Dictionary),
}

/// The prepared form of a [`KeyframeDictionary`].
enum KeyframeDict {
    Delta,
    None,
    Own(Prepared),
}

/// A packet's walk as the model block codes it, for the `internals`
/// module: the context map and model table of the packet's dictionary
/// (the schema's flag-0 map without a table), the sections' scratch and
/// elements, and the baseline's history the contexts read.
#[cfg(feature = "internals")]
pub(crate) struct Walk<'a> {
    pub(crate) map: Option<&'a model::ContextMap>,
    pub(crate) table: Option<&'a ModelTable>,
    pub(crate) scratch: &'a [EncodeScratch],
    pub(crate) elements: &'a [Vec<Element>],
    pub(crate) kept: &'a [Vec<u8>],
    pub(crate) rows: &'a [Vec<u8>],
}
