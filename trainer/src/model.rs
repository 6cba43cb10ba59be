//! `train`'s context-model step: count the model tokens of the training
//! packets (exactly the tokens the encoder codes), quantise the counts into
//! a table, and keep it when the held-out packets get smaller with it. A
//! table is trained for each set of context flags (each combination of the
//! changed-entity flags, the element history and the row's previous value);
//! the one whose held-out packets are smallest wins.

#![forbid(unsafe_code)]

use serde::Serialize;
use tickpack::model::{ContextConfig, ModelStats, ModelTable};
use tickpack::{Dictionary, Encoder, Schema};

use crate::measure::{mean, total_bytes, Job};
use crate::TrainerError;

/// What training a model table measured.
#[derive(Debug, Clone, Serialize)]
pub struct ModelReport {
    /// Probability slots of the table.
    pub slots: u64,
    /// Serialized table bytes.
    pub table_bytes: u64,
    /// Held-out delta bytes per packet with the dictionary alone.
    pub bytes_mean_without: f64,
    /// Held-out delta bytes per packet with the dictionary and the table
    /// (the encoder keeps the smaller of model block and blocks).
    pub bytes_mean_with: f64,
    /// Whether the table was kept.
    pub kept: bool,
    /// The table's context flags (`tickpack::model::ContextConfig`).
    pub flags: u16,
    /// Held-out delta bytes per packet with each flag combination tried:
    /// (flags, bytes).
    pub bytes_mean_by_flags: Vec<(u16, f64)>,
}

/// Trains a table on `train` for `schema`'s packets and measures it on
/// `held` against `dict` (the delta dictionary the table will ride on, as
/// the set holds it): one per combination of context flags, or for
/// `only` alone.
/// `Ok(None)` when the schema is too large for a context model.
pub fn train_model(
    schema: &Schema,
    level: i32,
    dict: &Dictionary,
    only: Option<u16>,
    train: &[Job<'_>],
    held: &[Job<'_>],
) -> Result<Option<(ModelTable, ModelReport)>, TrainerError> {
    let mut enc = Encoder::with_level(schema.clone(), level);
    let model_err = |e| TrainerError::Empty(format!("model table: {e}"));
    let dict_err = |e: tickpack::DictionaryError| TrainerError::Zstd(e.to_string());
    enc.set_dictionary(Some(dict)).map_err(dict_err)?;
    let without = total_bytes(&mut enc, held)?;
    let mut best: Option<(ModelTable, u64)> = None;
    let mut by_flags = Vec::new();
    let all = 0..=ContextConfig::KNOWN_FLAGS;
    for flags in all.filter(|f| only.is_none_or(|o| o == *f)) {
        enc.set_model_flags(flags);
        let Some(shape) = enc.model_shape() else {
            return Ok(None);
        };
        // More slots than a table may hold (which no loader would take):
        // none for a schema too large without flags (or with the only
        // flags asked for), else the flags are skipped.
        let Ok(mut stats) = ModelStats::new(shape) else {
            if flags == 0 || only.is_some() {
                return Ok(None);
            }
            continue;
        };
        for j in train {
            enc.model_tokens(j.snapshot, j.sequence, j.reference(), &mut stats)?;
        }
        if let Some(e) = stats.error() {
            return Err(model_err(e));
        }
        let table = ModelTable::from_stats(&stats)
            .with_flags(flags)
            .map_err(model_err)?;
        enc.set_dictionary(Some(&dict.clone().with_model(table.clone())))
            .map_err(dict_err)?;
        let with = total_bytes(&mut enc, held)?;
        by_flags.push((flags, mean(with, held.len())));
        // Ties go to the table without flags (the first).
        if best.as_ref().is_none_or(|(_, b)| with < *b) {
            best = Some((table, with));
        }
    }
    let Some((table, with)) = best else {
        return Ok(None);
    };
    let report = ModelReport {
        slots: table.shape().slots(),
        table_bytes: table.to_bytes().len() as u64,
        bytes_mean_without: mean(without, held.len()),
        bytes_mean_with: mean(with, held.len()),
        kept: with < without,
        flags: table.flags(),
        bytes_mean_by_flags: by_flags,
    };
    Ok(Some((table, report)))
}

/// The held-out packets' model bits (ideal code lengths, raw bits
/// included) under a table with context flags `flags` trained on `train`:
/// what `--operators-by model` minimises. `Ok(None)` when the schema is
/// too large for a context model.
pub fn held_out_model_bits(
    schema: &Schema,
    flags: u16,
    train: &[Job<'_>],
    held: &[Job<'_>],
) -> Result<Option<u64>, TrainerError> {
    let model_err = |e| TrainerError::Empty(format!("model table: {e}"));
    let mut enc = Encoder::new(schema.clone());
    enc.set_model_flags(flags);
    let Some(shape) = enc.model_shape() else {
        return Ok(None);
    };
    let (Ok(mut counts), Ok(mut held_counts)) = (ModelStats::new(shape), ModelStats::new(shape))
    else {
        return Ok(None);
    };
    for j in train {
        enc.model_tokens(j.snapshot, j.sequence, j.reference(), &mut counts)?;
    }
    for j in held {
        enc.model_tokens(j.snapshot, j.sequence, j.reference(), &mut held_counts)?;
    }
    if let Some(e) = counts.error().or(held_counts.error()) {
        return Err(model_err(e));
    }
    let table = ModelTable::from_stats(&counts);
    let bits = held_counts.cost_bits(&table).map_err(model_err)?;
    Ok(Some(bits.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack::model::DEFAULT_MAX_SLOTS;
    use tickpack::{Primitive, Snapshot};

    /// A schema whose context map has more slots than a table may hold
    /// (two sections of 4,096 one-byte elements: 1.3 M slots) trains
    /// without a table instead of failing the training.
    #[test]
    fn a_schema_too_large_for_a_table_trains_without_one() {
        let mut b = Schema::builder();
        for entity in ["a", "b"] {
            b = b.entity(entity);
            for field in ["w", "x", "y", "z"] {
                b = b.field(field, Primitive::U8, 1024);
            }
        }
        let schema = b.build().unwrap();
        let enc = Encoder::new(schema.clone());
        assert!(enc.model_shape().unwrap().slots() > DEFAULT_MAX_SLOTS as u64);
        let snap = Snapshot::new(&schema);
        let job = Job {
            snapshot: &snap,
            sequence: 1,
            baseline: None,
            prior: None,
            recall: None,
            history: None,
        };
        let dict = Dictionary::new(1, vec![0u8; 64]);
        let trained = train_model(&schema, 3, &dict, None, &[job], &[job]).unwrap();
        assert!(trained.is_none());
    }
}
