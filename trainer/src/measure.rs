//! Running the real encoder over planned packets.

#![forbid(unsafe_code)]

use std::collections::HashMap;

use tickpack::{
    Baseline, DeltaOp, Encoder, History, Recall, Reference, Schema, Snapshot, MAX_BLOCK_CONTENT,
};

use crate::captures::TickMeta;
use crate::replay::Packet;
use crate::TrainerError;

/// One packet of one capture, ready to encode.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The snapshot sent.
    pub snapshot: &'a Snapshot,
    /// Its sequence (the tick number's low 16 bits).
    pub sequence: u16,
    /// Its baseline: sequence and snapshot.
    pub baseline: Option<(u16, &'a Snapshot)>,
    /// The prior baseline for predicted fields.
    pub prior: Option<(u16, &'a Snapshot)>,
    /// The baseline's recall, if known (see [`crate::recalls`]).
    pub recall: Option<&'a Recall>,
    /// The baseline's history, if known (see [`crate::recalls`]).
    pub history: Option<&'a History>,
}

impl<'a> Job<'a> {
    /// The job for `packet` of a capture with `ticks`, its snapshots taken
    /// from `held` (by tick index); an error if one is not there.
    pub fn new(
        ticks: &[TickMeta],
        held: &'a HashMap<usize, Snapshot>,
        packet: Packet,
    ) -> Result<Self, TrainerError> {
        let at = |i: usize| -> Result<(u16, &'a Snapshot), TrainerError> {
            match (ticks.get(i), held.get(&i)) {
                (Some(t), Some(s)) => Ok((t.tick as u16, s)),
                _ => Err(TrainerError::Empty(format!(
                    "tick index {i} was planned but not loaded"
                ))),
            }
        };
        let (sequence, snapshot) = at(packet.tick)?;
        Ok(Self {
            snapshot,
            sequence,
            baseline: packet.baseline.map(at).transpose()?,
            prior: packet.baseline.and(packet.prior).map(at).transpose()?,
            recall: None,
            history: None,
        })
    }

    /// The same job coded with `recall` (its baseline's).
    pub fn with_recall(self, recall: Option<&'a Recall>) -> Self {
        Self { recall, ..self }
    }

    /// The same job coded with `history` (its baseline's).
    pub fn with_history(self, history: Option<&'a History>) -> Self {
        Self { history, ..self }
    }

    /// What the job is coded against, in the codec's form: baseline, prior
    /// and the baseline's recall and history.
    pub fn reference(&self) -> Reference<'a> {
        Reference::from(self.codec_baseline())
            .with_prior(self.codec_prior())
            .with_recall(self.recall.filter(|_| self.baseline.is_some()))
            .with_history(self.history.filter(|_| self.baseline.is_some()))
    }

    /// The same snapshot as a keyframe.
    pub fn keyframe(&self) -> Self {
        Self {
            baseline: None,
            prior: None,
            recall: None,
            history: None,
            ..*self
        }
    }

    /// The baseline in the codec's form.
    pub fn codec_baseline(&self) -> Option<Baseline<'a>> {
        self.baseline
            .map(|(sequence, snapshot)| Baseline { sequence, snapshot })
    }

    /// The prior in the codec's form.
    pub fn codec_prior(&self) -> Option<Baseline<'a>> {
        self.prior
            .map(|(sequence, snapshot)| Baseline { sequence, snapshot })
    }
}

/// Encodes `job` with `encoder`: with its prior when it has one (the
/// encoder uses it only if the schema has `predict` fields) and its recall.
pub fn encode(encoder: &mut Encoder, job: &Job<'_>, out: &mut Vec<u8>) -> Result<(), TrainerError> {
    encoder.encode_to_vec(job.snapshot, job.sequence, job.reference(), out)?;
    Ok(())
}

/// `b0` with every `predict` field of every entity also in `b1` replaced by
/// `2·b0 − b1` (per element, wrapping, on the bit values), whatever the
/// distances: FORMAT.md 4.6's prediction `b0 + round((b0 − b1)·n/m)` only
/// when the packet is as far from `b0` as `b0` from `b1` (`n = m`). The
/// changed values of such a packet are coded against it; which elements
/// changed is still judged against `b0` itself.
pub fn predicted(schema: &Schema, b0: &Snapshot, b1: &Snapshot) -> Snapshot {
    let mut out = b0.clone();
    for (s, ty) in schema.sections().iter().enumerate() {
        let elems: Vec<(usize, usize)> = ty
            .fields()
            .iter()
            .zip(ty.offsets())
            .filter(|(f, _)| f.delta_op() == DeltaOp::Predict)
            .flat_map(|(f, &o)| (0..f.len).map(move |i| (o + i * f.ty.size(), f.ty.size())))
            .collect();
        let (Some(prior), Some(sec)) = (b1.sections().get(s), out.section_mut(s)) else {
            continue;
        };
        if elems.is_empty() {
            continue;
        }
        let ids = sec.ids().to_vec();
        let mut rec = Vec::with_capacity(ty.record_size());
        for id in ids {
            let (Some(r0), Some(r1)) = (sec.get(id), prior.get(id)) else {
                continue;
            };
            rec.clear();
            rec.extend_from_slice(r0);
            for &(o, w) in &elems {
                let mut a = [0u8; 8];
                let mut b = [0u8; 8];
                a[..w].copy_from_slice(&r0[o..o + w]);
                b[..w].copy_from_slice(&r1[o..o + w]);
                let v = u64::from_le_bytes(a)
                    .wrapping_mul(2)
                    .wrapping_sub(u64::from_le_bytes(b));
                rec[o..o + w].copy_from_slice(&v.to_le_bytes()[..w]);
            }
            // Same id, same size: replacing a record cannot fail.
            let _ = sec.insert(id, &rec);
        }
    }
    out
}

/// Total packet bytes of `jobs` with `encoder`.
pub fn total_bytes(encoder: &mut Encoder, jobs: &[Job<'_>]) -> Result<u64, TrainerError> {
    let mut out = Vec::new();
    let mut total = 0u64;
    for j in jobs {
        encode(encoder, j, &mut out)?;
        total += out.len() as u64;
    }
    Ok(total)
}

/// The payloads an encoder with `schema` cuts into blocks for `jobs`, cut
/// the same way (at most [`MAX_BLOCK_CONTENT`] bytes each): the samples a
/// block dictionary is trained on. Returned as one buffer and the sample
/// sizes. A job with a prior gives the predicted packet's payload (for
/// quantised fields the prediction runs on the integer codes, which
/// [`predicted`] on the values would not reproduce).
pub fn block_samples(
    schema: &Schema,
    jobs: &[Job<'_>],
) -> Result<(Vec<u8>, Vec<usize>), TrainerError> {
    let mut encoder = Encoder::new(schema.clone());
    let mut data = Vec::new();
    let mut sizes = Vec::new();
    let mut payload = Vec::new();
    for j in jobs {
        encoder.payload(j.snapshot, j.sequence, j.reference(), &mut payload)?;
        for chunk in payload.chunks(MAX_BLOCK_CONTENT) {
            data.extend_from_slice(chunk);
            sizes.push(chunk.len());
        }
    }
    Ok((data, sizes))
}

/// The "raw snapshot" plain zstd frames compress in `eval`.
pub use tickpack_scenarios::raw::write as raw_snapshot;

/// Mean of `total` over `n` (0 when `n` is 0).
pub fn mean(total: u64, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        total as f64 / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::captures::with_ops;
    use tickpack::{Field, PacketHeader, Primitive};

    /// The samples of a predicted packet are the bytes the codec compresses:
    /// same blocks as `Encoder::encode_to_vec` with `Reference::predicted`, header aside.
    #[test]
    fn predicted_payload_matches_the_codec() {
        let schema = Schema::builder()
            .entity("car")
            .field_with(Field {
                name: "pos".into(),
                ty: Primitive::F32,
                len: 3,
                delta: Some(DeltaOp::Predict),
            })
            .field_with(Field {
                name: "lap".into(),
                ty: Primitive::U16,
                len: 1,
                delta: Some(DeltaOp::Predict),
            })
            .field("hp", Primitive::U8, 1)
            .build()
            .unwrap();
        let snap = |t: u32| {
            let mut s = Snapshot::new(&schema);
            for id in 0..10u32 {
                if (id + t).is_multiple_of(4) {
                    continue;
                }
                let mut rec = Vec::new();
                for k in 0..3 {
                    let v = id as f32 * 10.0 + k as f32 + (t * t) as f32 * 0.37;
                    rec.extend_from_slice(&v.to_le_bytes());
                }
                rec.extend_from_slice(&((t * 300) as u16).to_le_bytes());
                rec.push((id + t) as u8);
                s.section_mut(0).unwrap().insert(id, &rec).unwrap();
            }
            s
        };
        let (b1, b0, cur) = (snap(1), snap(2), snap(3));
        let job = Job {
            snapshot: &cur,
            sequence: 3,
            baseline: Some((2, &b0)),
            prior: Some((1, &b1)),
            recall: None,
            history: None,
        };
        let mut packet = Vec::new();
        encode(&mut Encoder::new(schema.clone()), &job, &mut packet).unwrap();
        let (h, len) = PacketHeader::parse(&packet).unwrap();
        assert_eq!(h.prior, Some(1));
        // Encode the sample payload the same way, as a packet of the int schema.
        let ints = with_ops(&schema, &[vec![DeltaOp::Int; 3]]).unwrap();
        let p = predicted(&schema, &b0, &b1);
        let mut same = Vec::new();
        Encoder::new(ints)
            .encode_to_vec(
                &cur,
                3,
                Some(Baseline {
                    sequence: 2,
                    snapshot: &p,
                }),
                &mut same,
            )
            .unwrap();
        let (_, len2) = PacketHeader::parse(&same).unwrap();
        assert_eq!(packet[len..], same[len2..]);
        let (data, sizes) = block_samples(&schema, &[job]).unwrap();
        assert_eq!(sizes.iter().sum::<usize>(), data.len());
    }
}
