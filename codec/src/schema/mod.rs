//! Entity schemas: named fields of primitive types, their byte layout, the
//! delta operator of each field, and the schema id that goes on the wire.
//!
//! A record is the fields laid out in declaration order, little-endian, with
//! no padding: the same bytes as a `#[repr(C)]` struct with no padding on a
//! little-endian machine.

use crate::error::SchemaError;
use crate::quant::{plan, Quantize};

mod integrate;
mod quantize;
mod rebuild;
#[cfg(feature = "serde")]
mod text;
mod unit;
pub use integrate::Integrate;
pub(crate) use integrate::Integrator;
pub(crate) use unit::Unit;

/// Most entity types (sections) one schema may declare.
pub const MAX_SECTIONS: usize = 64;
/// Most fields one entity type may declare.
pub const MAX_FIELDS: usize = 256;
/// Largest record, in bytes. Keeps one record well inside one 32 KiB block.
pub const MAX_RECORD_SIZE: usize = 4096;
/// Largest fixed-size array length of one field.
pub const MAX_ARRAY_LEN: usize = 1024;

/// A primitive field type. Multi-byte values are little-endian on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Primitive {
    /// `u8`
    U8,
    /// `i8`
    I8,
    /// `u16`
    U16,
    /// `i16`
    I16,
    /// `u32`
    U32,
    /// `i32`
    I32,
    /// `u64`
    U64,
    /// `i64`
    I64,
    /// `f32`, any bit pattern (NaN payloads survive)
    F32,
    /// `f64`, any bit pattern (NaN payloads survive)
    F64,
}

impl Primitive {
    /// Size in bytes.
    pub const fn size(self) -> usize {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 => 8,
        }
    }

    /// Whether this is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, Self::F32 | Self::F64)
    }

    const fn code(self) -> u8 {
        self as u8
    }

    /// The element of this type at the start of `bytes` (little-endian) as
    /// binary64: floats exactly, integers rounded to nearest-even; `None`
    /// when `bytes` is shorter than the type.
    pub fn to_f64(self, bytes: &[u8]) -> Option<f64> {
        // One fixed-width load per size (a copy of a variable length would
        // call `memcpy`).
        let u = match self.size() {
            1 => u64::from(*bytes.first()?),
            2 => u64::from(u16::from_le_bytes(bytes.get(..2)?.try_into().ok()?)),
            4 => u64::from(u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?)),
            _ => u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?),
        };
        Some(match self {
            Self::U8 | Self::U16 | Self::U32 | Self::U64 => u as f64,
            Self::I8 => f64::from(u as u8 as i8),
            Self::I16 => f64::from(u as u16 as i16),
            Self::I32 => f64::from(u as u32 as i32),
            Self::I64 => u as i64 as f64,
            Self::F32 => f64::from(f32::from_bits(u as u32)),
            Self::F64 => f64::from_bits(u),
        })
    }
}

/// How a field is coded against its reference value (the baseline record for
/// a changed entity, the previous new entity for a spawned one).
///
/// `Sub` and `Xor` work byte by byte; `Int` subtracts whole values (floats as
/// their bit patterns) with wrapping arithmetic and zigzag-maps the result so
/// small changes in either direction give small numbers.
/// See FORMAT.md, "Delta operators", for the measurements behind the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum DeltaOp {
    /// Byte-wise wrapping subtraction.
    Sub,
    /// Byte-wise XOR.
    Xor,
    /// Element-wise wrapping subtraction, zigzag-mapped.
    Int,
    /// No delta: the value itself is sent.
    None,
    /// Like `Int`, but a changed element's value is coded against a linear
    /// prediction from the baseline `b0` and the prior `b1`, extrapolated
    /// over the packet's distances (`b0 + (b0 − b1)·n/m`, element-wise
    /// integer arithmetic on the integer or float bit values, FORMAT.md
    /// 4.6) when the packet names a prior and the entity is in both; else
    /// against `b0`. Whether an element changed is still judged against
    /// `b0`. For values that move at a steady rate.
    Predict,
}

impl DeltaOp {
    /// The operator used when a field does not name one.
    pub const fn default_for(_ty: Primitive) -> Self {
        DeltaOp::Int
    }

    const fn code(self) -> u8 {
        match self {
            Self::Sub => 0,
            Self::Xor => 1,
            Self::Int => 2,
            Self::None => 3,
            Self::Predict => 4,
        }
    }
}

/// One field of an entity type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Field {
    /// Field name, unique within its entity type.
    pub name: String,
    /// Element type.
    #[cfg_attr(feature = "serde", serde(rename = "type"))]
    pub ty: Primitive,
    /// Array length; 1 for a scalar.
    #[cfg_attr(
        feature = "serde",
        serde(default = "text::one", skip_serializing_if = "text::is_one")
    )]
    pub len: usize,
    /// Delta operator; `None` means [`DeltaOp::default_for`] the type.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub delta: Option<DeltaOp>,
}

impl Field {
    /// Size of the field in a record.
    pub fn size(&self) -> usize {
        self.ty.size() * self.len
    }

    /// The operator in force.
    pub fn delta_op(&self) -> DeltaOp {
        self.delta.unwrap_or(DeltaOp::default_for(self.ty))
    }
}

/// A run of bytes in a record with one element width and one delta operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) offset: usize,
    pub(crate) len: usize,
    pub(crate) width: usize,
    pub(crate) op: DeltaOp,
}

/// An entity type: a named record layout. Built with [`SchemaBuilder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityType {
    name: String,
    fields: Vec<Field>,
    offsets: Vec<usize>,
    record_size: usize,
    default_record: Vec<u8>,
    spans: Vec<Span>,
    quant: Vec<Option<Quantize>>,
    /// Per field: the bits of its lossless float grid step, if declared.
    grid: Vec<Option<u64>>,
    /// Per field: its integration, if declared; and the elements it
    /// resolves to.
    integrate: Vec<Option<Integrate>>,
    integrators: Vec<Integrator>,
    /// Per field: whether it is declared a unit vector; and the fields
    /// that are.
    unit: Vec<bool>,
    units: Vec<Unit>,
    slots: Vec<plan::Slot>,
}

impl EntityType {
    /// Entity type name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Fields in record order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// Byte offset of each field in the record.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Record size in bytes.
    pub fn record_size(&self) -> usize {
        self.record_size
    }

    /// The record new entities are coded against (all zero unless set).
    pub fn default_record(&self) -> &[u8] {
        &self.default_record
    }

    /// Per field: the step of its lossless float grid, if declared (see
    /// [`SchemaBuilder::grid`]).
    pub fn grids(&self) -> impl ExactSizeIterator<Item = Option<f64>> + '_ {
        self.grid.iter().map(|g| g.map(f64::from_bits))
    }

    /// Per field: its integration over a velocity and a time field, if
    /// declared (see [`SchemaBuilder::integrate`]).
    pub fn integrations(&self) -> &[Option<Integrate>] {
        &self.integrate
    }

    /// The integrated elements, in element order.
    pub(crate) fn integrators(&self) -> &[Integrator] {
        &self.integrators
    }

    /// Per field: whether it is declared a unit vector (see
    /// [`SchemaBuilder::unit`]).
    pub fn units(&self) -> &[bool] {
        &self.unit
    }

    /// The unit fields, in field order.
    pub(crate) fn unit_fields(&self) -> &[Unit] {
        &self.units
    }

    /// Field layout merged into runs of equal element width and operator.
    pub(crate) fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Whether any field uses [`DeltaOp::Predict`].
    pub fn predicts(&self) -> bool {
        self.spans.iter().any(|s| s.op == DeltaOp::Predict)
    }

    /// Byte offset and size of each element (array items counted singly).
    pub fn element_layout(&self) -> impl Iterator<Item = (usize, Primitive)> + '_ {
        self.fields
            .iter()
            .zip(&self.offsets)
            .flat_map(|(f, &o)| (0..f.len).map(move |i| (o + i * f.ty.size(), f.ty)))
    }

    /// Checks that `T` has exactly this layout: same size, and for each
    /// field of `T` (as declared by [`PodLayout`]) the same offset, type and
    /// array length. `bytemuck::Pod` already guarantees `T` has no padding.
    pub fn check_pod<T: PodLayout>(&self) -> Result<(), SchemaError> {
        let size = core::mem::size_of::<T>();
        if size != self.record_size {
            return Err(SchemaError::PodMismatch {
                reason: format!(
                    "struct is {size} bytes, entity type `{}` is {}",
                    self.name, self.record_size
                ),
            });
        }
        let pod = T::fields();
        if pod.len() != self.fields.len() {
            return Err(SchemaError::PodMismatch {
                reason: format!(
                    "struct has {} fields, entity type `{}` has {}",
                    pod.len(),
                    self.name,
                    self.fields.len()
                ),
            });
        }
        let mut covered = 0;
        for ((p, f), &off) in pod.iter().zip(&self.fields).zip(&self.offsets) {
            if p.name != f.name || p.ty != f.ty || p.len != f.len || p.offset != off {
                return Err(SchemaError::PodMismatch {
                    reason: format!(
                        "struct field `{}` ({:?} x{} at {}) vs schema field `{}` ({:?} x{} at {})",
                        p.name, p.ty, p.len, p.offset, f.name, f.ty, f.len, off
                    ),
                });
            }
            covered += f.size();
        }
        if covered != size {
            return Err(SchemaError::PodMismatch {
                reason: format!("fields cover {covered} of {size} bytes: padding"),
            });
        }
        Ok(())
    }

    fn new(
        name: String,
        fields: Vec<Field>,
        quant: Vec<Option<Quantize>>,
        grid: Vec<Option<f64>>,
        integrate: Vec<Option<Integrate>>,
        unit: Vec<bool>,
        default: Option<Vec<u8>>,
    ) -> Result<Self, SchemaError> {
        check_name(&name)?;
        if fields.is_empty() {
            return Err(SchemaError::NoFields { entity: name });
        }
        if fields.len() > MAX_FIELDS {
            return Err(SchemaError::RecordTooLarge {
                entity: name,
                size: fields.len(),
                limit: MAX_FIELDS,
            });
        }
        let mut offsets = Vec::with_capacity(fields.len());
        let mut size = 0usize;
        for (i, f) in fields.iter().enumerate() {
            check_name(&f.name)?;
            if fields[..i].iter().any(|g| g.name == f.name) {
                return Err(SchemaError::DuplicateName {
                    name: f.name.clone(),
                });
            }
            if f.len == 0 || f.len > MAX_ARRAY_LEN {
                return Err(SchemaError::BadArrayLength {
                    field: f.name.clone(),
                    len: f.len,
                });
            }
            offsets.push(size);
            size += f.size();
            if size > MAX_RECORD_SIZE {
                return Err(SchemaError::RecordTooLarge {
                    entity: name,
                    size,
                    limit: MAX_RECORD_SIZE,
                });
            }
        }
        let default_record = match default {
            Some(d) if d.len() != size => {
                return Err(SchemaError::DefaultRecordSize {
                    entity: name,
                    expected: size,
                    actual: d.len(),
                })
            }
            Some(d) => d,
            None => vec![0; size],
        };
        let mut spans: Vec<Span> = Vec::new();
        for (f, &off) in fields.iter().zip(&offsets) {
            let (width, op) = (f.ty.size(), f.delta_op());
            match spans.last_mut() {
                Some(s) if s.width == width && s.op == op && s.offset + s.len == off => {
                    s.len += f.size();
                }
                _ => spans.push(Span {
                    offset: off,
                    len: f.size(),
                    width,
                    op,
                }),
            }
        }
        let mut quant = quant;
        quant.resize(fields.len(), None);
        let mut slots = Vec::new();
        for (i, ((f, &offset), q)) in fields.iter().zip(&offsets).zip(&quant).enumerate() {
            if let Some(q) = q {
                let kind = q
                    .check(f.ty, f.len)
                    .map_err(|reason| SchemaError::BadQuantize {
                        field: f.name.clone(),
                        reason,
                    })?;
                slots.push(plan::Slot {
                    field: i,
                    offset,
                    ty: f.ty,
                    len: f.len,
                    kind,
                });
            }
        }
        let mut grid: Vec<Option<u64>> = grid.into_iter().map(|g| g.map(f64::to_bits)).collect();
        grid.resize(fields.len(), None);
        for ((f, g), q) in fields.iter().zip(&grid).zip(&quant) {
            let Some(step) = g.map(f64::from_bits) else {
                continue;
            };
            let bad = |reason: &str| SchemaError::BadGrid {
                field: f.name.clone(),
                reason: reason.to_owned(),
            };
            if !f.ty.is_float() {
                return Err(bad("not a float field"));
            }
            if q.is_some() {
                return Err(bad("the field is quantised"));
            }
            if !(step.is_finite() && step > 0.0) {
                return Err(bad("the step is not a positive finite number"));
            }
        }
        let mut integrate = integrate;
        integrate.resize(fields.len(), None);
        let integrators = integrate::resolve(
            &fields,
            &offsets,
            &integrate,
            |i| quant.get(i).is_some_and(Option::is_some),
            |i| grid.get(i).is_some_and(Option::is_some),
        )?;
        let mut unit = unit;
        unit.resize(fields.len(), false);
        let units = unit::resolve(
            &fields,
            &offsets,
            &unit,
            |i| quant.get(i).is_some_and(Option::is_some),
            !integrators.is_empty(),
        )?;
        Ok(Self {
            name,
            fields,
            offsets,
            record_size: size,
            default_record,
            spans,
            quant,
            grid,
            integrate,
            integrators,
            unit,
            units,
            slots,
        })
    }
}

fn check_name(name: &str) -> Result<(), SchemaError> {
    if name.is_empty() || name.len() > 255 {
        return Err(SchemaError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// A set of entity types, one section each, with a stable 32-bit id.
///
/// ```
/// use tickpack::{Primitive, Schema};
/// let schema = Schema::builder()
///     .entity("car")
///     .field("pos", Primitive::F32, 3)
///     .field("speed", Primitive::F32, 1)
///     .build()
///     .unwrap();
/// assert_eq!(schema.sections()[0].record_size(), 16);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    sections: Vec<EntityType>,
    id: u32,
}

impl Schema {
    /// Starts a builder.
    pub fn builder() -> SchemaBuilder {
        SchemaBuilder::default()
    }

    /// Entity types in section order.
    pub fn sections(&self) -> &[EntityType] {
        &self.sections
    }

    /// The schema id: a hash of names, types, array lengths, delta operators
    /// and default records. Peers with different schemas get
    /// [`DecodeError::SchemaMismatch`](crate::DecodeError::SchemaMismatch).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Whether any entity type uses [`DeltaOp::Predict`].
    pub fn predicts(&self) -> bool {
        self.sections.iter().any(EntityType::predicts)
    }

    fn from_sections(sections: Vec<EntityType>) -> Result<Self, SchemaError> {
        if sections.is_empty() {
            return Err(SchemaError::NoSections);
        }
        if sections.len() > MAX_SECTIONS {
            return Err(SchemaError::TooManySections {
                count: sections.len(),
                limit: MAX_SECTIONS,
            });
        }
        for (i, s) in sections.iter().enumerate() {
            if sections[..i].iter().any(|t| t.name == s.name) {
                return Err(SchemaError::DuplicateName {
                    name: s.name.clone(),
                });
            }
        }
        let id = schema_hash(&sections);
        Ok(Self { sections, id })
    }
}

/// FNV-1a 64 over a canonical byte form, folded to 32 bits. Stable across
/// platforms and releases: changing it is a wire format change.
fn schema_hash(sections: &[EntityType]) -> u32 {
    let mut h = Fnv::new();
    h.write(b"tickpack schema 1");
    h.write(&(sections.len() as u32).to_le_bytes());
    for s in sections {
        h.write_str(&s.name);
        h.write(&(s.fields.len() as u32).to_le_bytes());
        for f in &s.fields {
            h.write_str(&f.name);
            h.write(&[f.ty.code(), f.delta_op().code()]);
            h.write(&(f.len as u32).to_le_bytes());
        }
        h.write(&s.default_record);
    }
    // Quantisation is hashed after everything else, and only when declared,
    // so schemas without it keep their ids.
    if sections.iter().any(EntityType::is_quantized) {
        h.write(b"quantize");
        let mut bytes = Vec::new();
        for (i, s) in sections.iter().enumerate() {
            for (j, q) in s.quant.iter().enumerate() {
                if let Some(q) = q {
                    bytes.clear();
                    q.id_bytes(&mut bytes);
                    h.write(&(i as u32).to_le_bytes());
                    h.write(&(j as u32).to_le_bytes());
                    h.write(&bytes);
                }
            }
        }
    }
    // Grids likewise, after quantisation.
    if sections.iter().any(|s| s.grid.iter().any(Option::is_some)) {
        h.write(b"grid");
        for (i, s) in sections.iter().enumerate() {
            for (j, g) in s.grid.iter().enumerate() {
                if let Some(step) = g {
                    h.write(&(i as u32).to_le_bytes());
                    h.write(&(j as u32).to_le_bytes());
                    h.write(&step.to_le_bytes());
                }
            }
        }
    }
    // Integrations likewise, after grids.
    if sections.iter().any(|s| !s.integrators.is_empty()) {
        h.write(b"integrate");
        let mut bytes = Vec::new();
        for (i, s) in sections.iter().enumerate() {
            for (j, d) in s.integrate.iter().enumerate() {
                if let Some(d) = d {
                    bytes.clear();
                    integrate::id_bytes(&s.fields, d, &mut bytes);
                    h.write(&(i as u32).to_le_bytes());
                    h.write(&(j as u32).to_le_bytes());
                    h.write(&bytes);
                }
            }
        }
    }
    // Unit fields likewise, after integrations.
    if sections.iter().any(|s| !s.units.is_empty()) {
        h.write(b"unit");
        for (i, s) in sections.iter().enumerate() {
            for (j, _) in s.unit.iter().enumerate().filter(|(_, &u)| u) {
                h.write(&(i as u32).to_le_bytes());
                h.write(&(j as u32).to_le_bytes());
            }
        }
    }
    let v = h.0;
    (v ^ (v >> 32)) as u32
}

pub(crate) struct Fnv(pub(crate) u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn write_str(&mut self, s: &str) {
        self.write(&(s.len() as u32).to_le_bytes());
        self.write(s.as_bytes());
    }
}

/// Builds a [`Schema`] one entity type at a time.
#[derive(Debug, Default)]
pub struct SchemaBuilder {
    done: Vec<(String, Vec<Field>, Option<Vec<u8>>)>,
    quant: Vec<Vec<Option<Quantize>>>,
    grid: Vec<Vec<Option<f64>>>,
    integrate: Vec<Vec<Option<Integrate>>>,
    unit: Vec<Vec<bool>>,
}

impl SchemaBuilder {
    /// Starts a new entity type (a new section).
    pub fn entity(mut self, name: &str) -> Self {
        self.done.push((name.to_owned(), Vec::new(), None));
        self.quant.push(Vec::new());
        self.grid.push(Vec::new());
        self.integrate.push(Vec::new());
        self.unit.push(Vec::new());
        self
    }

    /// Adds a field to the current entity type; `len` 1 is a scalar, more
    /// is a fixed-size array. Uses the type's default delta operator.
    pub fn field(self, name: &str, ty: Primitive, len: usize) -> Self {
        self.field_with(Field {
            name: name.to_owned(),
            ty,
            len,
            delta: None,
        })
    }

    /// Adds a fully specified field to the current entity type.
    pub fn field_with(mut self, field: Field) -> Self {
        if self.done.is_empty() {
            self.done.push((String::new(), Vec::new(), None));
            self.quant.push(Vec::new());
            self.grid.push(Vec::new());
            self.integrate.push(Vec::new());
            self.unit.push(Vec::new());
        }
        if let Some(e) = self.done.last_mut() {
            e.1.push(field);
            if let Some(q) = self.quant.last_mut() {
                q.resize(e.1.len(), None);
            }
            if let Some(g) = self.grid.last_mut() {
                g.resize(e.1.len(), None);
            }
            if let Some(g) = self.integrate.last_mut() {
                g.resize(e.1.len(), None);
            }
            if let Some(u) = self.unit.last_mut() {
                u.resize(e.1.len(), false);
            }
        }
        self
    }

    /// Quantises the field added last (see [`quant`](crate::quant));
    /// [`build`](SchemaBuilder::build) checks that it fits the field's type
    /// and length. Without a field it does nothing.
    pub fn quantize(mut self, quantize: Quantize) -> Self {
        if let Some(q) = self.quant.last_mut().and_then(|q| q.last_mut()) {
            *q = Some(quantize);
        }
        self
    }

    /// Declares a lossless float grid of `step` on the field added last (an
    /// `f32` or `f64` field, not quantised): where a value and its reference
    /// are both exact whole multiples of `step` (`k · step` computed in
    /// binary64 and rounded to the field's type gives back the value's
    /// bits), the difference is coded as the whole number of steps instead
    /// of the bit-pattern difference; every other value is coded bit-exactly
    /// as without a grid. Nothing is lost either way. For values a game
    /// snaps to a grid, such as angles sent as 16-bit fractions of a turn
    /// (`360 / 65536` degrees). Part of the schema id.
    /// [`build`](SchemaBuilder::build) checks it; without a field it does
    /// nothing.
    pub fn grid(mut self, step: f64) -> Self {
        if let Some(g) = self.grid.last_mut().and_then(|g| g.last_mut()) {
            *g = Some(step);
        }
        self
    }

    /// Declares the field added last (a numeric field, not quantised) as
    /// the integral of a velocity field (or a constant rate) over a time
    /// field (or the packet's tick distance) of the same entity type,
    /// declared before or after it ([`Integrate`]; those may be integrated
    /// themselves, without a cycle): a changed entity's value is coded
    /// against its baseline value moved by the mean of the baseline's and
    /// the current velocity times the time elapsed, in binary64 (FORMAT.md
    /// 4.9), so a body moving as its velocity says, or a clock, costs
    /// little. Lossless: a value
    /// off the prediction is coded against it bit-exactly. For positions
    /// sent with their velocity and a time stamp, such as Quake 3's player
    /// origin, velocity and command time. Part of the schema id.
    /// [`build`](SchemaBuilder::build) checks it; without a field it does
    /// nothing.
    pub fn integrate(mut self, integrate: Integrate) -> Self {
        if let Some(g) = self.integrate.last_mut().and_then(|g| g.last_mut()) {
            *g = Some(integrate);
        }
        self
    }

    /// Declares the field added last (an `f32` or `f64` array of at least
    /// two elements, not quantised, in a type without integrated fields) a
    /// unit vector, such as a rotation quaternion sent whole: in a changed
    /// entity its last element is coded against the value its other
    /// elements imply, `sqrt(1 − Σ others²)` in binary64 with the sign of
    /// its baseline value (FORMAT.md 4.10), instead of against the
    /// baseline value. Lossless: a value off the implied one (a vector
    /// that is not quite unit) is coded against it bit-exactly. Part of
    /// the schema id. [`build`](SchemaBuilder::build) checks it; without a
    /// field it does nothing.
    pub fn unit(mut self) -> Self {
        if let Some(u) = self.unit.last_mut().and_then(|u| u.last_mut()) {
            *u = true;
        }
        self
    }

    /// Sets the record new entities of the current type are coded against.
    pub fn default_record(mut self, record: &[u8]) -> Self {
        if let Some(e) = self.done.last_mut() {
            e.2 = Some(record.to_vec());
        }
        self
    }

    /// Adds an entity type whose layout (and quantisation, grids and
    /// integrations) is taken from a `#[repr(C)]` struct.
    pub fn entity_from_pod<T: PodLayout>(mut self, name: &str) -> Self {
        self = self.entity(name);
        for f in T::fields() {
            self = self.field(f.name, f.ty, f.len);
            if let Some(q) = f.quantize {
                self = self.quantize(q);
            }
            if let Some(g) = f.grid {
                self = self.grid(g);
            }
            if let Some(i) = f.integrate {
                self = self.integrate(i);
            }
            if f.unit {
                self = self.unit();
            }
        }
        self
    }

    /// Validates and builds the schema.
    pub fn build(self) -> Result<Schema, SchemaError> {
        let sections = self
            .done
            .into_iter()
            .zip(self.quant)
            .zip(self.grid)
            .zip(self.integrate)
            .zip(self.unit)
            .map(|(((((n, f, d), q), g), i), u)| EntityType::new(n, f, q, g, i, u, d))
            .collect::<Result<Vec<_>, _>>()?;
        Schema::from_sections(sections)
    }
}

mod pod;
pub use pod::{Grid, PodCoding, PodField, PodLayout, PrimitiveType, UnitVector};

#[cfg(test)]
mod tests;
