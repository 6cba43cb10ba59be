//! Each section's row mode: masks and values or byte planes, settled by
//! the estimates, the payload limit or a trial that compresses both.

use super::{Encoder, Entropy, TRIAL_MAX_PAYLOAD};
use crate::pipeline::{self, EncodeScratch, RowMode};
use crate::snapshot::{Baseline, SectionRef};

impl Encoder {
    /// Runs the byte-plane estimate of sections that deferred it, and
    /// sizes the payload (written unless `defer`) with its outcome.
    pub(super) fn settle_planes(&mut self, defer: bool) {
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
    pub(super) fn fit_planes(&mut self, defer: bool) {
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
    pub(super) fn row_bytes(&self) -> usize {
        self.scratch
            .iter()
            .map(|s| s.row_bytes.saturating_sub(1))
            .fold(0usize, usize::saturating_add)
    }

    /// Keeps the sections settled as planes tentatively (by the middle
    /// estimate, `pipeline::encode_section`) when the rows of all sections
    /// take the payload over [`TRIAL_MAX_PAYLOAD`], where `fit_planes`
    /// would take that estimate; else codes them in full.
    pub(super) fn confirm_tentative<'s>(
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
            let (base, b0) = match (baseline, prior) {
                (Some(b), Some(_)) if ty.predicts() => (
                    self.predicted[i].as_ref(),
                    ty.integrators()
                        .is_empty()
                        .then(|| b.snapshot.sections()[i].as_ref()),
                ),
                (Some(b), _) => (b.snapshot.sections()[i].as_ref(), None),
                (None, _) => (SectionRef::empty(ty.record_size()), None),
            };
            pipeline::complete_section(
                ty,
                &self.elements[i],
                &self.plane_orders[i],
                &base,
                b0.as_ref(),
                &cur,
                scratch,
            );
        }
    }

    /// Builds the byte-plane rows that `pipeline::encode_section` left
    /// for a deferred estimate, against the baselines it was given.
    pub(super) fn build_deferred_rows<'s>(
        &mut self,
        sections: impl Iterator<Item = SectionRef<'s>>,
        baseline: Option<Baseline<'_>>,
        prior: Option<Baseline<'_>>,
    ) {
        for (i, ((cur, ty), scratch)) in sections
            .zip(self.schema.sections())
            .zip(&mut self.scratch)
            .enumerate()
        {
            let base = match (baseline, prior) {
                (Some(_), Some(_)) if ty.predicts() => self.predicted[i].as_ref(),
                (Some(b), _) => b.snapshot.sections()[i].as_ref(),
                (None, _) => SectionRef::empty(ty.record_size()),
            };
            pipeline::build_rows(ty, &self.plane_orders[i], &base, &cur, scratch);
        }
    }

    /// Gives every [`RowMode::Either`] section the middle estimate's
    /// choice; returns whether any became byte planes.
    pub(super) fn take_middle_estimate(&mut self) -> bool {
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
    pub(super) fn run_trial(&mut self) {
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
