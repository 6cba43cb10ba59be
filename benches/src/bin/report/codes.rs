//! What a user would pick instead of tickpack's own stages once the game
//! quantises: the same codecs fed the integer codes of the quantised fields
//! (`f32` codes as `i32`, `f64` codes as `i64`, FORMAT.md "Quantised
//! fields"), so the gain of quantising and the gain of tickpack's stages
//! show separately.

use tickpack::{Primitive, Schema, Section, Snapshot};

use crate::methods::Res;

/// The schema of the code form: every quantised float field becomes the
/// integer of its width, nothing quantised.
pub(crate) fn code_schema(schema: &Schema) -> Res<Schema> {
    let mut b = Schema::builder();
    for ty in schema.sections() {
        b = b.entity(ty.name());
        for (f, q) in ty.fields().iter().zip(ty.quantization()) {
            let prim = match (f.ty, q) {
                (Primitive::F32, Some(_)) => Primitive::I32,
                (Primitive::F64, Some(_)) => Primitive::I64,
                (p, _) => p,
            };
            b = b.field(&f.name, prim, f.len);
        }
    }
    Ok(b.build()?)
}

/// Every tick in code form, under [`code_schema`].
pub(crate) fn code_ticks(
    schema: &Schema,
    codes: &Schema,
    ticks: &[Snapshot],
) -> Res<Vec<Snapshot>> {
    ticks
        .iter()
        .map(|t| {
            let sections = t
                .sections()
                .iter()
                .zip(schema.sections())
                .map(|(s, ty)| {
                    let mut recs = s.records().to_vec();
                    ty.to_codes(&mut recs)?;
                    Ok(Section::from_parts(
                        s.ids().to_vec(),
                        recs,
                        ty.record_size(),
                    )?)
                })
                .collect::<Res<Vec<_>>>()?;
            Ok(Snapshot::from_sections(codes, sections)?)
        })
        .collect()
}
