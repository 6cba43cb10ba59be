//! The world the `server` and `client` examples share: balls moving on
//! circles, and a clock entity holding the tick, so a client can rebuild
//! the world of the tick it holds and check it byte for byte.

// Each example uses a part of it.
#![allow(dead_code)]

use std::error::Error;

use tickpack::{Primitive, Schema, Snapshot};

/// The protocol id in the connect tokens.
pub(crate) const PROTOCOL_ID: u64 = 0x0064_656d_6f00;
/// Balls in the world.
pub(crate) const BALLS: u32 = 8;

/// Balls (section 0) and the clock (section 1, entity 0: the tick).
pub(crate) fn schema() -> Result<Schema, Box<dyn Error>> {
    Ok(Schema::builder()
        .entity("ball")
        .field("pos", Primitive::F32, 2)
        .entity("clock")
        .field("tick", Primitive::U32, 1)
        .build()?)
}

/// The world on `tick`.
pub(crate) fn world(schema: &Schema, tick: u32) -> Result<Snapshot, Box<dyn Error>> {
    let mut w = Snapshot::new(schema);
    let balls = w.section_mut(0).ok_or("no ball section")?;
    for id in 0..BALLS {
        let (r, a) = (10.0 + id as f32 * 5.0, tick as f32 * 0.05 + id as f32);
        balls.insert(
            id,
            &[r * a.cos(), r * a.sin()].map(f32::to_le_bytes).concat(),
        )?;
    }
    w.section_mut(1)
        .ok_or("no clock section")?
        .insert(0, &tick.to_le_bytes())?;
    Ok(w)
}

/// The tick a world's clock shows.
pub(crate) fn tick_of(world: &Snapshot) -> Option<u32> {
    let rec = world.sections().get(1)?.get(0)?;
    Some(u32::from_le_bytes(rec.try_into().ok()?))
}

/// The value after `flag` on the command line.
pub(crate) fn arg(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).cloned()
}
