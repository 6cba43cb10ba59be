//! Building a packet: checking the snapshot and its references, coding
//! each section against its baseline (or prediction), sizing the payload
//! and writing the packet header.

use super::{Encoder, Entropy, ModelStream, TRIAL_MAX_PAYLOAD};
use crate::error::EncodeError;
use crate::history::{kept_states, History};
use crate::packet::{Checksum, PacketHeader, PacketIds, MAX_BASELINE_DISTANCE};
use crate::pipeline;
use crate::quant::{codes, layout};
use crate::recall::Recall;
use crate::snapshot::{Baseline, Reference, SectionRef, Snapshot};

impl Encoder {
    pub(super) fn build_snapshot(
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
    pub(super) fn build<'s>(
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
                reference.history,
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
            let (b, p) = (
                baseline.and_then(|b| coded(b, base)),
                prior.and_then(|p| coded(p, prior_codes)),
            );
            // Smallest-three rows that changed layout (FORMAT.md 9.1), and back.
            recode(&self.schema, &mut c.cur, (b, p), sequence, false);
            self.build_coded(
                c.cur.sections().iter().map(|s| s.as_ref()),
                sections.clone(),
                sequence,
                b,
                p,
                recall,
                reference.history,
            )?;
            recode(&self.schema, &mut c.cur, (b, p), sequence, true);
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
    pub fn encode_coded_to_vec(
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
        let prior = coded
            .prior
            .filter(|_| coded.baseline.is_some() && self.schema.predicts());
        // Rows that changed layout are coded from a recoded copy (9.1).
        let mut c = core::mem::take(&mut self.codes);
        let recoded =
            coded.baseline.is_some() && self.schema.sections().iter().any(layout::has_rotations);
        if recoded {
            // Checked before they are read, as `build_coded` would.
            for b in coded.baseline.iter().chain(&prior) {
                if let Err(e) = b.snapshot.check(&self.schema) {
                    self.codes = c;
                    return Err(e.into());
                }
            }
            c.cur.reset_like(codes);
            for (i, s) in codes.sections().iter().enumerate() {
                c.cur.set_section(i, &s.as_ref());
            }
            let refs = (coded.baseline, prior);
            recode(&self.schema, &mut c.cur, refs, sequence, false);
        }
        let r = self.build_coded(
            if recoded { &c.cur } else { codes }
                .sections()
                .iter()
                .map(|s| s.as_ref()),
            snapshot.sections().iter().map(|s| s.as_ref()),
            sequence,
            coded.baseline,
            coded.prior,
            recall,
            coded.history,
        );
        self.codes = c;
        r?;
        self.finish_vec(out);
        Ok(())
    }

    /// [`Encoder::build`] on sections in code form; `values` are the same
    /// sections as the caller holds them, for the checksum. The recall
    /// holds values: recalled records are converted as they are used.
    #[allow(clippy::too_many_arguments)]
    fn build_coded<'s, 'v>(
        &mut self,
        sections: impl Iterator<Item = SectionRef<'s>> + Clone,
        values: impl Iterator<Item = SectionRef<'v>>,
        sequence: u16,
        baseline: Option<Baseline<'_>>,
        prior: Option<Baseline<'_>>,
        recall: Option<&Recall>,
        history: Option<&History>,
    ) -> Result<(), EncodeError> {
        self.history_valid = false;
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
        let defer =
            self.entropy != Entropy::Zstd && self.active_dict().is_some_and(|d| d.model.is_some());
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
        // A quantised schema resolves an undecided section by the trial,
        // or by a live outcome of one (`verdict`); while that is byte
        // planes, its sections may take planes as the middle estimate
        // predicts them, like payloads too large for a trial, without
        // coding their rows as masks and values first.
        let planes_ahead = predict.is_some() && self.verdict.planes_ahead();
        self.aligned_to_baseline.clear();
        self.aligned_to_baseline.resize(self.scratch.len(), false);
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
            // A predicted section (4.6): entities change against the
            // baseline, values against the prediction (a type with
            // integrated fields is coded against the prediction alone).
            let (base, pred) = match (baseline, prior) {
                (Some(b), Some(p)) if ty.predicts() => {
                    let predicted = &mut self.predicted[i];
                    pipeline::predict::predict_spaced(
                        ty,
                        &b.snapshot.sections()[i].as_ref(),
                        &p.snapshot.sections()[i].as_ref(),
                        pipeline::predict::Spacing::of(sequence, b.sequence, p.sequence),
                        predicted,
                    );
                    if ty.integrators().is_empty() {
                        (b.snapshot.sections()[i].as_ref(), Some(predicted.as_ref()))
                    } else {
                        (predicted.as_ref(), None)
                    }
                }
                (Some(b), _) => (b.snapshot.sections()[i].as_ref(), None),
                (None, _) => (SectionRef::empty(ty.record_size()), None),
            };
            scratch.ticks = baseline.map_or(0, |b| sequence.wrapping_sub(b.sequence));
            self.aligned_to_baseline[i] = baseline.is_some()
                && !(prior.is_some() && ty.predicts() && !ty.integrators().is_empty());
            let recalled = |id: u32, out: &mut [u8]| match recall.and_then(|r| r.get(i, id)) {
                Some(r) if r.len() == out.len() => {
                    out.copy_from_slice(r);
                    codes::record_to_codes(ty, i, id, out)?;
                    Ok(true)
                }
                _ => Ok(false),
            };
            let predict = match predict {
                Some(_) if planes_ahead && self.verdict.undecided(i) => Some(0),
                other => other,
            };
            pipeline::encode_section(
                ty,
                &self.elements[i],
                &self.plane_orders[i],
                &base,
                pred.as_ref(),
                &cur,
                recalled,
                defer,
                predict,
                scratch,
            )
            .map_err(EncodeError::Snapshot)?;
            // The recalled spawned entities go by their ranks in the recall
            // (FORMAT.md 4.1).
            let t = &mut scratch.tokens;
            if let (true, Some(r)) = (t.recall, recall) {
                t.ranks.clear();
                for (&id, _) in t.spawned.iter().zip(&t.recalled).filter(|(_, &hit)| hit) {
                    // Recalled means the recall holds it.
                    t.ranks.extend(r.rank_of(i, id));
                }
                t.ranks.sort_unstable();
            }
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
        self.note_history(sections.clone(), baseline, history);
        // An empty payload stands for "every section idle".
        if !self.scratch.iter().all(|s| s.tokens.is_idle()) {
            // Rows that alone pass the trial size settle `Either` sections
            // before the payload is sized, not after (`fit_planes`).
            if self.row_bytes() > TRIAL_MAX_PAYLOAD && !self.schema.is_quantized() {
                self.take_middle_estimate();
            }
            self.size_payload(defer);
            // The rows a deferred estimate weighs are built only when it
            // may run: when the model stream does not take the packet
            // without the blocks being tried.
            if defer
                && (self.weigh_planes
                    || self.payload_len > self.limits.max_decoded_bytes
                    || !self.model_takes_packet())
            {
                self.build_deferred_rows(sections.clone(), baseline, prior);
            }
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

    /// The kept entities' baseline history for the model walk, and the
    /// snapshot's own history when kept ([`Encoder::set_keep_history`]).
    fn note_history<'s>(
        &mut self,
        sections: impl Iterator<Item = SectionRef<'s>>,
        baseline: Option<Baseline<'_>>,
        history: Option<&History>,
    ) {
        let n = self.scratch.len();
        self.kept_history.resize_with(n, Vec::new);
        for (i, (s, kept)) in self.scratch.iter().zip(&mut self.kept_history).enumerate() {
            match history {
                Some(h) => kept_states(Some(h), i, s.tokens.base_len, &s.tokens.removed, kept),
                None => kept.clear(),
            }
        }
        self.note_row_history(history);
        match baseline.filter(|_| self.keep_history) {
            Some(b) => {
                let base = b.snapshot.sections().iter().map(|s| s.as_ref());
                let aligns = self.scratch.iter().zip(&self.aligned_to_baseline);
                let aligns = aligns.map(|(s, &ok)| ok.then(|| s.alignment()));
                let all = sections.zip(base).zip(aligns).map(|((c, b), a)| (c, b, a));
                self.history.compute_aligned(&self.elements, all);
                self.history_valid = true;
            }
            None => self.history_valid = false,
        }
    }

    /// The history bytes of each changed row's elements, when a table of
    /// flag `FLAG_ELEMENTS` may code the packet.
    fn note_row_history(&mut self, history: Option<&History>) {
        let flags = self
            .active_dict()
            .and_then(|d| d.model.as_ref())
            .map_or(0, |t| t.flags());
        #[cfg(feature = "training")]
        let flags = flags | self.model_flags;
        let want = flags & crate::model::ContextConfig::FLAG_ELEMENTS != 0;
        self.row_history.resize_with(self.scratch.len(), Vec::new);
        let mut bases = Vec::new();
        for (i, (s, rows)) in self.scratch.iter().zip(&mut self.row_history).enumerate() {
            rows.clear();
            let Some(h) = history.filter(|_| want) else {
                continue;
            };
            crate::model::changed_bases(&s.tokens.changed, &s.tokens.removed, &mut bases);
            let e = self.elements[i].len();
            for &b in &bases {
                // A row the history does not cover is unknown throughout.
                let known = h.row(i, b as usize);
                rows.extend_from_slice(&known[..known.len().min(e)]);
                rows.resize(
                    rows.len() + e - known.len().min(e),
                    crate::model::UNKNOWN_HISTORY,
                );
            }
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
            // Set by `finish_vec` when the model stream wins.
            model: false,
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

/// [`layout::recode_snapshot`] of the codes `cur` of packet `sequence`
/// against its baseline and prior in code form.
pub(super) fn recode(
    schema: &crate::Schema,
    cur: &mut crate::Snapshot,
    (b, p): (Option<Baseline<'_>>, Option<Baseline<'_>>),
    sequence: u16,
    undo: bool,
) {
    let spacing = match (b, p) {
        (Some(b), Some(p)) => pipeline::predict::Spacing::of(sequence, b.sequence, p.sequence),
        _ => pipeline::predict::Spacing { ahead: 1, back: 1 },
    };
    let (b, p) = (b.map(|b| b.snapshot), p.map(|p| p.snapshot));
    layout::recode_snapshot(schema, cur, b, p, spacing, undo);
}
