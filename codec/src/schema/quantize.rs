//! Quantisation on a schema: what the server applies to its world, and the
//! record transforms between values and integer codes (see
//! [`quant`](crate::quant)).

use super::{EntityType, Schema};
use crate::error::SnapshotError;
use crate::quant::{plan, Quantize, QuantizeError};
use crate::snapshot::Snapshot;

impl EntityType {
    /// The quantisation of each field, parallel to [`EntityType::fields`].
    pub fn quantization(&self) -> &[Option<Quantize>] {
        &self.quant
    }

    /// Whether any field is quantised.
    pub fn is_quantized(&self) -> bool {
        !self.slots.is_empty()
    }

    /// Quantises records laid out back to back (for example a
    /// `bytemuck::cast_slice_mut` of your own `#[repr(C)]` array): every
    /// quantised field becomes the value its code stands for. Errors name
    /// the record index as `entity` and `section` 0. See [`Schema::quantize`].
    pub fn quantize_records(&self, records: &mut [u8]) -> Result<(), QuantizeError> {
        if self.slots.is_empty() {
            return Ok(());
        }
        for (i, rec) in records.chunks_exact_mut(self.record_size).enumerate() {
            plan::quantize(&self.slots, rec)
                .map_err(|f| QuantizeError::from_fault(0, i as u32, f))?;
        }
        Ok(())
    }

    /// Replaces every quantised value of records laid out back to back by
    /// its integer code, in place: the form the encoder codes (FORMAT.md,
    /// "Quantised fields"). Each value must be exactly a quantised value.
    pub fn to_codes(&self, records: &mut [u8]) -> Result<(), QuantizeError> {
        plan::records_to_codes(&self.slots, records, self.record_size).map_err(
            |(i, field, element)| QuantizeError::NotQuantized {
                entity: i as u32,
                field,
                element,
            },
        )
    }

    /// The inverse of [`EntityType::to_codes`]: codes back to values,
    /// refusing codes outside their limits (and non-canonical quaternion
    /// codes) as a decoder does.
    pub fn from_codes(&self, records: &mut [u8]) -> Result<(), QuantizeError> {
        plan::records_from_codes(&self.slots, records, self.record_size).map_err(
            |(i, field, element)| QuantizeError::BadCode {
                entity: i as u32,
                field,
                element,
            },
        )
    }

    /// The quantised fields.
    pub(crate) fn slots(&self) -> &[plan::Slot] {
        &self.slots
    }
}

impl Schema {
    /// Whether any entity type has quantised fields.
    pub fn is_quantized(&self) -> bool {
        self.sections.iter().any(EntityType::is_quantized)
    }

    /// Replaces every quantised field of `snapshot` by the value its code
    /// stands for (see [`quant`](crate::quant)). The server calls this on
    /// its world once per tick, before encoding and before keeping the
    /// snapshot as a baseline: what it then holds is exactly what every
    /// client decodes, so deltas never drift. The encoder refuses a
    /// snapshot that was not quantised. Quantising twice changes nothing.
    ///
    /// On error the snapshot is partly quantised: entities before the one
    /// named in the error are done. Sections whose record size is not the
    /// schema's are left alone (the encoder refuses them).
    ///
    /// Cost: one division and one multiplication per fixed-point or angle
    /// value; a quaternion also rebuilds its largest component (a square
    /// root) once or twice.
    pub fn quantize(&self, snapshot: &mut Snapshot) -> Result<(), QuantizeError> {
        for (i, (ty, sec)) in self
            .sections
            .iter()
            .zip(snapshot.sections_mut())
            .enumerate()
        {
            if ty.slots.is_empty() || sec.record_size() != ty.record_size {
                continue;
            }
            let (ids, records) = sec.parts_mut();
            for (&id, rec) in ids.iter().zip(records.chunks_exact_mut(ty.record_size)) {
                plan::quantize(&ty.slots, rec).map_err(|f| QuantizeError::from_fault(i, id, f))?;
            }
        }
        Ok(())
    }

    /// Checks that every quantised value of `snapshot` is exactly a
    /// quantised value (what the encoder requires).
    pub fn check_quantized(&self, snapshot: &Snapshot) -> Result<(), SnapshotError> {
        let mut scratch = Vec::new();
        for (i, (ty, sec)) in self.sections.iter().zip(snapshot.sections()).enumerate() {
            if ty.slots.is_empty() {
                continue;
            }
            for (id, rec) in sec.iter() {
                scratch.clear();
                scratch.extend_from_slice(rec);
                plan::to_codes(&ty.slots, &mut scratch).map_err(|(field, element)| {
                    SnapshotError::NotQuantized {
                        section: i,
                        id,
                        field,
                        element,
                    }
                })?;
            }
        }
        Ok(())
    }
}
