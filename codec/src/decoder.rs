//! The reusable [`Decoder`].

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::Arc;

use crate::block::{self, DDict, HuffmanTable, ZstdBlocks};
use crate::dict::Dictionary;
use crate::encoder::DEFAULT_LEVEL;
use crate::error::{DecodeError, DictionaryError};
use crate::limits::Limits;
use crate::packet::PacketHeader;
use crate::pipeline::{self, DecodeScratch, SectionMeta};
use crate::schema::Schema;
use crate::snapshot::Baseline;
use crate::snapshot::{SectionRef, Snapshot};
use crate::wire::Reader;

/// Decodes packets into snapshots. Holds any number of dictionaries (by
/// id), a zstd context and scratch buffers.
///
/// Decoding never panics and never allocates beyond [`Limits`]: any
/// malformed packet gives a [`DecodeError`] and leaves the output empty.
pub struct Decoder {
    schema: Schema,
    limits: Limits,
    blocks: ZstdBlocks,
    dicts: HashMap<u32, (Arc<DDict>, Option<Arc<HuffmanTable>>)>,
    payload: Vec<u8>,
    metas: Vec<SectionMeta>,
    predicted: Vec<crate::snapshot::Section>,
    scratch: DecodeScratch,
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
            .map(|_| SectionMeta::default())
            .collect();
        Self {
            schema,
            limits: Limits::default(),
            blocks: ZstdBlocks::new(DEFAULT_LEVEL),
            dicts: HashMap::new(),
            payload: Vec::new(),
            metas,
            predicted,
            scratch: DecodeScratch::default(),
        }
    }

    /// Sets the limits.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Adds (or replaces) a dictionary; packets name it by its id.
    pub fn add_dictionary(&mut self, dict: &Dictionary) -> Result<(), DictionaryError> {
        let d = DDict::new(dict.bytes()).ok_or(DictionaryError::Rejected { id: dict.id() })?;
        self.dicts
            .insert(dict.id(), (Arc::new(d), dict.huffman_arc()));
        Ok(())
    }

    /// Removes a dictionary; returns whether it was held.
    pub fn remove_dictionary(&mut self, id: u32) -> bool {
        self.dicts.remove(&id).is_some()
    }

    /// Decodes `packet` into a new snapshot. A delta packet needs the
    /// baseline it names ([`PacketHeader::parse`] tells which).
    pub fn decode(
        &mut self,
        packet: &[u8],
        baseline: Option<Baseline<'_>>,
    ) -> Result<(PacketHeader, Snapshot), DecodeError> {
        let mut out = Snapshot::default();
        let h = self.decode_into(packet, baseline, &mut out)?;
        Ok((h, out))
    }

    /// Decodes into `out`, reusing its buffers. On error `out` is left
    /// empty (no entities), never half-updated.
    pub fn decode_into(
        &mut self,
        packet: &[u8],
        baseline: Option<Baseline<'_>>,
        out: &mut Snapshot,
    ) -> Result<PacketHeader, DecodeError> {
        self.decode_predicted_into(packet, baseline, None, out)
    }

    /// Like [`Decoder::decode_into`] for packets that may also name a prior
    /// baseline ([`PacketHeader::prior`]), made by
    /// [`Encoder::encode_predicted_to_vec`](crate::Encoder::encode_predicted_to_vec).
    /// `prior` is ignored when the packet names none.
    pub fn decode_predicted_into(
        &mut self,
        packet: &[u8],
        baseline: Option<Baseline<'_>>,
        prior: Option<Baseline<'_>>,
        out: &mut Snapshot,
    ) -> Result<PacketHeader, DecodeError> {
        let r = self.decode_inner(packet, baseline, prior, out);
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

    fn decode_inner(
        &mut self,
        packet: &[u8],
        baseline: Option<Baseline<'_>>,
        prior: Option<Baseline<'_>>,
        out: &mut Snapshot,
    ) -> Result<PacketHeader, DecodeError> {
        let mut r = Reader::new(packet);
        let header = PacketHeader::read(&mut r)?;
        if header.schema_id != self.schema.id() {
            return Err(DecodeError::SchemaMismatch {
                expected: self.schema.id(),
                actual: header.schema_id,
            });
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
        let dict = match header.dictionary {
            None => None,
            Some(id) => Some(
                self.dicts
                    .get(&id)
                    .cloned()
                    .ok_or(DecodeError::UnknownDictionary { id })?,
            ),
        };
        block::decode_blocks(
            &mut self.blocks,
            dict.as_ref().map(|d| &*d.0),
            dict.as_ref().and_then(|d| d.1.as_deref()),
            &mut r,
            self.limits.max_decoded_bytes,
            &mut self.payload,
        )?;

        let mut p = Reader::new(&self.payload);
        let sections = self.schema.sections();
        let mut plane_bytes = 0usize;
        let mut snapshot_bytes = 0usize;
        for (i, (ty, m)) in sections.iter().zip(&mut self.metas).enumerate() {
            let base_len = base.map_or(0, |b| b.sections()[i].len());
            pipeline::decode_meta(i, base_len, self.limits.max_entities_per_section, &mut p, m)?;
            // rows <= payload length / 1 and record_size <= 4096: no overflow.
            plane_bytes += m.rows() * ty.record_size();
            snapshot_bytes =
                snapshot_bytes.saturating_add(m.entities().saturating_mul(ty.record_size() + 4));
        }
        if snapshot_bytes > self.limits.max_snapshot_bytes {
            return Err(DecodeError::SnapshotTooLarge {
                bytes: snapshot_bytes,
                limit: self.limits.max_snapshot_bytes,
            });
        }
        let meta_end = p.pos();
        if p.remaining() < plane_bytes {
            return Err(DecodeError::Truncated {
                offset: self.payload.len(),
                needed: plane_bytes - p.remaining(),
            });
        }
        if p.remaining() > plane_bytes {
            return Err(DecodeError::PayloadTrailing {
                count: p.remaining() - plane_bytes,
            });
        }

        out.reset(&self.schema);
        let mut pos = meta_end;
        for (i, ((ty, m), sec)) in sections
            .iter()
            .zip(&self.metas)
            .zip(out.sections_mut())
            .enumerate()
        {
            let b = match (base, prior) {
                (Some(b), Some(p)) if ty.predicts() => {
                    let predicted = &mut self.predicted[i];
                    pipeline::predict_section(
                        ty,
                        &b.sections()[i].as_ref(),
                        &p.sections()[i].as_ref(),
                        predicted,
                    );
                    predicted.as_ref()
                }
                (Some(b), _) => b.sections()[i].as_ref(),
                (None, _) => SectionRef::empty(ty.record_size()),
            };
            let len = m.rows() * ty.record_size();
            pipeline::decode_section(
                i,
                ty,
                &b,
                m,
                &self.payload[pos..pos + len],
                &mut self.scratch,
                sec,
            )?;
            pos += len;
        }
        if let Some(expected) = header.checksum {
            let actual = out.checksum(header.checksum_seed());
            if actual != expected {
                return Err(DecodeError::ChecksumMismatch { expected, actual });
            }
        }
        Ok(header)
    }
}
