//! `train`'s context-model step: count the model tokens of the training
//! packets (exactly the tokens the encoder codes), quantise the counts into
//! a table, and keep it when the held-out packets get smaller with it.

#![forbid(unsafe_code)]

use serde::Serialize;
use tickpack::model::{ModelStats, ModelTable};
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
    /// Held-out delta bytes per packet with the dictionary alone (and its
    /// Huffman table when the set keeps one).
    pub bytes_mean_without: f64,
    /// Held-out delta bytes per packet with the dictionary and the table
    /// (the encoder keeps the smaller of model block and blocks).
    pub bytes_mean_with: f64,
    /// Whether the table was kept.
    pub kept: bool,
}

/// Trains a table on `train` for `schema`'s packets and measures it on
/// `held` against `dict` (the delta dictionary the table will ride on, as
/// the set holds it).
/// `Ok(None)` when the schema is too large for a context model.
pub fn train_model(
    schema: &Schema,
    level: i32,
    dict: &Dictionary,
    train: &[Job<'_>],
    held: &[Job<'_>],
) -> Result<Option<(ModelTable, ModelReport)>, TrainerError> {
    let mut enc = Encoder::with_level(schema.clone(), level);
    let Some(shape) = enc.model_shape() else {
        return Ok(None);
    };
    let model_err = |e| TrainerError::Empty(format!("model table: {e}"));
    let mut stats = ModelStats::new(shape).map_err(model_err)?;
    for j in train {
        enc.model_tokens(j.snapshot, j.sequence, j.reference(), &mut stats)?;
    }
    if let Some(e) = stats.error() {
        return Err(model_err(e));
    }
    let table = ModelTable::from_stats(&stats);
    let dict_err = |e: tickpack::DictionaryError| TrainerError::Zstd(e.to_string());
    enc.set_dictionary(Some(dict)).map_err(dict_err)?;
    let without = total_bytes(&mut enc, held)?;
    enc.set_dictionary(Some(&dict.clone().with_model(table.clone())))
        .map_err(dict_err)?;
    let with = total_bytes(&mut enc, held)?;
    let report = ModelReport {
        slots: shape.slots(),
        table_bytes: table.to_bytes().len() as u64,
        bytes_mean_without: mean(without, held.len()),
        bytes_mean_with: mean(with, held.len()),
        kept: with < without,
    };
    Ok(Some((table, report)))
}
