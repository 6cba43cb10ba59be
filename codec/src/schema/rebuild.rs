//! [`Schema::rebuild`]: the same schema with other delta operators or
//! default records, everything else kept.

use super::{DeltaOp, Field, Schema};
use crate::error::SchemaError;

impl Schema {
    /// The schema rebuilt with the delta operator `ops(section, field)`
    /// where it returns one (else the field's own) and the default record
    /// `defaults(section)` where it returns one (else the type's own).
    /// Names, types, lengths, quantisation, grids, integrations and unit
    /// fields are kept. The trainer uses it to apply the operators it chose.
    pub fn rebuild(
        &self,
        ops: impl Fn(usize, usize) -> Option<DeltaOp>,
        defaults: impl Fn(usize) -> Option<Vec<u8>>,
    ) -> Result<Schema, SchemaError> {
        let mut b = Schema::builder();
        for (s, ty) in self.sections().iter().enumerate() {
            b = b.entity(ty.name());
            for (i, (f, q)) in ty.fields().iter().zip(ty.quantization()).enumerate() {
                b = b.field_with(Field {
                    delta: ops(s, i).or(f.delta),
                    ..f.clone()
                });
                if let Some(q) = q {
                    b = b.quantize(*q);
                }
                if let Some(Some(step)) = ty.grids().nth(i) {
                    b = b.grid(step);
                }
                if let Some(Some(d)) = ty.integrations().get(i) {
                    b = b.integrate(d.clone());
                }
                if ty.units().get(i) == Some(&true) {
                    b = b.unit();
                }
            }
            let rec = defaults(s).unwrap_or_else(|| ty.default_record().to_vec());
            if rec.iter().any(|&x| x != 0) {
                b = b.default_record(&rec);
            }
        }
        b.build()
    }
}
