//! Unit fields: a float array declared to hold a unit vector, such as a
//! rotation quaternion sent whole (FORMAT.md 4.10). Its last element is
//! then coded against the value the others imply (`±sqrt(1 − Σ others²)`),
//! which a game's normalised rotation matches to a few units in the last
//! place, instead of against its baseline value.

use super::{Field, Primitive};
use crate::error::SchemaError;

/// One unit field, resolved to record offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    /// The implied (last) element's index in the record (array items
    /// counted singly).
    pub(crate) element: u32,
    /// Byte offset of the field's first element.
    pub(crate) offset: usize,
    /// Elements of the field (at least 2).
    pub(crate) len: usize,
    pub(crate) ty: Primitive,
}

impl Unit {
    /// Byte offset of the implied element.
    #[inline]
    pub(crate) fn implied_offset(&self) -> usize {
        self.offset + (self.len - 1) * self.ty.size()
    }
}

/// Checks the declarations `unit` (per field) and returns the fields they
/// resolve to, in element order. `quantised(i)`: whether field `i` is
/// quantised; `integrated`: whether the type has integrated fields.
pub(crate) fn resolve(
    fields: &[Field],
    offsets: &[usize],
    unit: &[bool],
    quantised: impl Fn(usize) -> bool,
    integrated: bool,
) -> Result<Vec<Unit>, SchemaError> {
    let mut out = Vec::new();
    let mut element = 0u32;
    for (i, f) in fields.iter().enumerate() {
        element += f.len as u32;
        if !unit.get(i).copied().unwrap_or(false) {
            continue;
        }
        let bad = |reason: &str| SchemaError::BadUnit {
            field: f.name.clone(),
            reason: reason.to_owned(),
        };
        if !f.ty.is_float() {
            return Err(bad("not a float field"));
        }
        if f.len < 2 {
            return Err(bad("fewer than two elements"));
        }
        if quantised(i) {
            return Err(bad("the field is quantised"));
        }
        // An integrated type codes its rows in another order (4.9); the
        // two are not combined.
        if integrated {
            return Err(bad("the entity type has integrated fields"));
        }
        out.push(Unit {
            element: element - 1,
            offset: offsets[i],
            len: f.len,
            ty: f.ty,
        });
    }
    Ok(out)
}
