//! Schemas from `#[repr(C)]` [`bytemuck::Pod`] structs: the field list a
//! struct reports ([`PodLayout`], usually through `pod_layout!`) and the
//! Rust types that map to primitives.

use super::Primitive;

/// One field of a `#[repr(C)]` struct, as reported by [`PodLayout`].
#[derive(Debug, Clone, PartialEq)]
pub struct PodField {
    /// Field name.
    pub name: &'static str,
    /// Byte offset in the struct.
    pub offset: usize,
    /// Element type.
    pub ty: Primitive,
    /// Array length (1 for a scalar).
    pub len: usize,
    /// The field's quantisation, if the struct declares one
    /// (`field: type => quantisation` in [`pod_layout!`](crate::pod_layout)).
    pub quantize: Option<crate::quant::Quantize>,
    /// The step of the field's lossless float grid, if the struct declares
    /// one (`field: type => Grid(step)`; see
    /// [`SchemaBuilder::grid`](crate::SchemaBuilder::grid)).
    pub grid: Option<f64>,
    /// The field's integration, if the struct declares one
    /// (`field: type => Integrate::new(velocity, time, scale)`; see
    /// [`SchemaBuilder::integrate`](crate::SchemaBuilder::integrate)).
    pub integrate: Option<super::Integrate>,
    /// Whether the struct declares the field a unit vector
    /// (`field: [f32; 4] => UnitVector`; see
    /// [`SchemaBuilder::unit`](crate::SchemaBuilder::unit)).
    pub unit: bool,
}

/// A unit vector, declared on a float array of
/// [`pod_layout!`](crate::pod_layout) (`rot: [f32; 4] => UnitVector`); the
/// same as [`SchemaBuilder::unit`](crate::SchemaBuilder::unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitVector;

impl PodCoding for UnitVector {
    fn apply(self, field: &mut PodField) {
        field.unit = true;
    }
}

/// A lossless float grid of the given step, declared on a field of
/// [`pod_layout!`](crate::pod_layout) (`angles: [f32; 3] => Grid(360.0 / 65536.0)`);
/// the same as [`SchemaBuilder::grid`](crate::SchemaBuilder::grid).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid(pub f64);

/// What may follow `=>` on a field of [`pod_layout!`](crate::pod_layout): a
/// [`Quantize`](crate::quant::Quantize), a [`Grid`] or an
/// [`Integrate`](super::Integrate).
pub trait PodCoding {
    /// Records the coding on `field`.
    fn apply(self, field: &mut PodField);
}

impl PodCoding for crate::quant::Quantize {
    fn apply(self, field: &mut PodField) {
        field.quantize = Some(self);
    }
}

impl PodCoding for Grid {
    fn apply(self, field: &mut PodField) {
        field.grid = Some(self.0);
    }
}

impl PodCoding for super::Integrate {
    fn apply(self, field: &mut PodField) {
        field.integrate = Some(self);
    }
}

/// A primitive Rust type with a [`Primitive`] counterpart; arrays of them
/// report their length.
pub trait PrimitiveType {
    /// The wire type of one element.
    const PRIMITIVE: Primitive;
    /// Number of elements.
    const LEN: usize = 1;
}

macro_rules! prim {
    ($($t:ty => $p:ident),*) => {$(
        impl PrimitiveType for $t { const PRIMITIVE: Primitive = Primitive::$p; }
    )*};
}
prim!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32,
      u64 => U64, i64 => I64, f32 => F32, f64 => F64);

impl<T: PrimitiveType, const N: usize> PrimitiveType for [T; N] {
    const PRIMITIVE: Primitive = T::PRIMITIVE;
    const LEN: usize = N;
}

/// The field layout of a `#[repr(C)]` [`bytemuck::Pod`] struct, usually
/// implemented with [`pod_layout!`](crate::pod_layout).
pub trait PodLayout: bytemuck::Pod {
    /// Fields in declaration order.
    fn fields() -> Vec<PodField>;
}

/// Implements [`PodLayout`] for a `#[repr(C)]` struct from its field list,
/// taking offsets from `core::mem::offset_of!`. A field may declare its
/// quantisation ([`Quantize`](crate::quant::Quantize)), a lossless float
/// grid ([`Grid`]) or an integration ([`Integrate`](crate::Integrate)) after
/// `=>`.
///
/// ```
/// use tickpack::quant::Quantize;
/// use tickpack::{Grid, Integrate};
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Car { pos: [f32; 3], rot: [f32; 4], speed: f32, view: [f32; 2] }
/// tickpack::pod_layout!(Car {
///     pos: [f32; 3] => Quantize::step(0.001),
///     rot: [f32; 4] => Quantize::smallest_three(10),
///     speed: f32,
///     view: [f32; 2] => Grid(360.0 / 65536.0),
/// });
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Body { ms: i32, vel: [f32; 3], pos: [f32; 3] }
/// tickpack::pod_layout!(Body {
///     ms: i32,
///     vel: [f32; 3],
///     pos: [f32; 3] => Integrate::new("vel", "ms", 0.001),
/// });
/// let body = tickpack::Schema::builder().entity_from_pod::<Body>("body").build().unwrap();
/// assert_eq!(body.sections()[0].integrations()[2], Some(Integrate::new("vel", "ms", 0.001)));
///
/// let schema = tickpack::Schema::builder().entity_from_pod::<Car>("car").build().unwrap();
/// let car = &schema.sections()[0];
/// car.check_pod::<Car>().unwrap();
/// assert_eq!(car.quantization()[1], Some(Quantize::smallest_three(10)));
/// assert_eq!(car.grids().nth(3), Some(Some(360.0 / 65536.0)));
/// ```
#[macro_export]
macro_rules! pod_layout {
    ($t:ty { $($f:ident : $ft:ty $(=> $q:expr)?),* $(,)? }) => {
        impl $crate::PodLayout for $t {
            fn fields() -> ::std::vec::Vec<$crate::PodField> {
                ::std::vec![$({
                    #[allow(unused_mut)]
                    let mut field = $crate::PodField {
                        name: ::core::stringify!($f),
                        offset: ::core::mem::offset_of!($t, $f),
                        ty: <$ft as $crate::PrimitiveType>::PRIMITIVE,
                        len: <$ft as $crate::PrimitiveType>::LEN,
                        quantize: ::core::option::Option::None,
                        grid: ::core::option::Option::None,
                        integrate: ::core::option::Option::None,
                        unit: false,
                    };
                    $($crate::PodCoding::apply($q, &mut field);)?
                    field
                }),*]
            }
        }
    };
}
