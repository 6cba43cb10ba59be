//! The error of [`Schema::quantize`](crate::Schema::quantize).

use core::fmt;

use super::plan::{Fault, FaultKind};

/// A value that cannot be quantised as its field declares. `section` is the
/// entity type, `entity` the entity id (or the record index for
/// [`EntityType::quantize_records`](crate::EntityType::quantize_records)),
/// `field` the field index and `element` the array element.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum QuantizeError {
    /// NaN or an infinity in a quantised float field.
    NotFinite {
        /// Entity type index.
        section: usize,
        /// Entity id or record index.
        entity: u32,
        /// Field index.
        field: usize,
        /// Array element.
        element: usize,
    },
    /// A value outside the declared range of a field whose policy is
    /// [`OutOfRange::Error`](super::OutOfRange::Error).
    OutOfRange {
        /// Entity type index.
        section: usize,
        /// Entity id or record index.
        entity: u32,
        /// Field index.
        field: usize,
        /// Array element.
        element: usize,
        /// The value.
        value: f64,
        /// Smallest value allowed.
        min: f64,
        /// Largest value allowed.
        max: f64,
    },
    /// A quaternion field holding four zeros (no rotation to quantise).
    ZeroQuaternion {
        /// Entity type index.
        section: usize,
        /// Entity id or record index.
        entity: u32,
        /// Field index.
        field: usize,
    },
    /// [`EntityType::to_codes`](crate::EntityType::to_codes): a value that
    /// is not exactly a quantised value.
    NotQuantized {
        /// Record index.
        entity: u32,
        /// Field index.
        field: usize,
        /// Array element.
        element: usize,
    },
    /// [`EntityType::from_codes`](crate::EntityType::from_codes): a code
    /// outside its limits, or non-canonical quaternion codes.
    BadCode {
        /// Record index.
        entity: u32,
        /// Field index.
        field: usize,
        /// Array element.
        element: usize,
    },
}

impl QuantizeError {
    pub(crate) fn from_fault(section: usize, entity: u32, f: Fault) -> Self {
        let (field, element) = (f.field, f.element);
        match f.what {
            FaultKind::NotFinite => Self::NotFinite {
                section,
                entity,
                field,
                element,
            },
            FaultKind::OutOfRange { value, min, max } => Self::OutOfRange {
                section,
                entity,
                field,
                element,
                value,
                min,
                max,
            },
            FaultKind::ZeroQuaternion => Self::ZeroQuaternion {
                section,
                entity,
                field,
            },
        }
    }
}

impl fmt::Display for QuantizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFinite {
                section,
                entity,
                field,
                element,
            } => write!(
                f,
                "section {section} entity {entity} field {field}[{element}] is not finite"
            ),
            Self::OutOfRange {
                section,
                entity,
                field,
                element,
                value,
                min,
                max,
            } => write!(
                f,
                "section {section} entity {entity} field {field}[{element}] is {value}, outside [{min}, {max}]"
            ),
            Self::ZeroQuaternion {
                section,
                entity,
                field,
            } => write!(
                f,
                "section {section} entity {entity} field {field} is a zero quaternion"
            ),
            Self::NotQuantized {
                entity,
                field,
                element,
            } => write!(
                f,
                "record {entity} field {field}[{element}] is not a quantised value"
            ),
            Self::BadCode {
                entity,
                field,
                element,
            } => write!(
                f,
                "record {entity} field {field}[{element}] holds an invalid code"
            ),
        }
    }
}

impl std::error::Error for QuantizeError {}
