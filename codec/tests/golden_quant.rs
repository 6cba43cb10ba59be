//! Golden vectors of a quantised schema (FORMAT.md, "Quantised fields"):
//! the schema id, the exact packets of a keyframe and a delta, the codes
//! they carry and the values they decode to. Stored as hex under
//! `tests/vectors/quant_*.hex`; regenerate deliberately with
//! `TICKPACK_BLESS=1 cargo test -p tickpack --test golden_quant`.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use tickpack::quant::{AngleUnit, Quantize};
use tickpack::{Baseline, Decoder, Encoder, Primitive, Schema, Snapshot};

/// A buoy: position in centimetres within ±100 m, heading in 8 bits,
/// orientation in smallest-three 8 bits, fill level 0..=100.
fn buoy_schema() -> Schema {
    Schema::builder()
        .entity("buoy")
        .field("pos", Primitive::F32, 2)
        .quantize(Quantize::step(0.01).with_range(-100.0, 100.0))
        .field("heading", Primitive::F32, 1)
        .quantize(Quantize::angle(8, AngleUnit::Degrees))
        .field("rot", Primitive::F32, 4)
        .quantize(Quantize::smallest_three(8))
        .field("level", Primitive::U8, 1)
        .quantize(Quantize::int_range(0, 100))
        .build()
        .unwrap()
}

fn buoy(pos: [f32; 2], heading: f32, rot: [f32; 4], level: u8) -> Vec<u8> {
    let mut r = Vec::new();
    for v in pos.iter().chain(&[heading]).chain(&rot) {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.push(level);
    r
}

fn ticks(schema: &Schema) -> (Snapshot, Snapshot) {
    let h = core::f32::consts::FRAC_1_SQRT_2;
    let mut a = Snapshot::new(schema);
    let mut b = Snapshot::new(schema);
    let s = a.section_mut(0).unwrap();
    s.insert(1, &buoy([12.345, -3.3], 90.7, [0.0, 0.0, 0.0, 1.0], 100))
        .unwrap();
    s.insert(2, &buoy([-99.999, 0.004], -45.0, [0.0, h, 0.0, h], 40))
        .unwrap();
    let s = b.section_mut(0).unwrap();
    s.insert(1, &buoy([12.5, -3.3], 92.1, [0.0, 0.1, 0.0, 0.995], 99))
        .unwrap();
    s.insert(2, &buoy([-99.999, 0.004], -45.0, [0.0, h, 0.0, h], 40))
        .unwrap();
    schema.quantize(&mut a).unwrap();
    schema.quantize(&mut b).unwrap();
    (a, b)
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .chunks(16)
        .map(|c| c.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn check(name: &str, bytes: &[u8]) {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "vectors",
        &format!("{name}.hex"),
    ]
    .iter()
    .collect();
    if std::env::var_os("TICKPACK_BLESS").is_some() {
        std::fs::write(&path, hex(bytes)).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (bless with TICKPACK_BLESS=1)", path.display()));
    assert_eq!(
        hex(bytes),
        want,
        "golden vector {name} changed: this is a wire-format change"
    );
}

fn f32s(rec: &[u8], n: usize) -> Vec<f32> {
    rec.chunks(4)
        .take(n)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn schema_id_is_pinned() {
    // Changing the hash of a declaration is a wire-format change.
    assert_eq!(buoy_schema().id(), 0x050a_b7da, "{:#x}", buoy_schema().id());
}

#[test]
fn codes_are_pinned() {
    let schema = buoy_schema();
    let ty = &schema.sections()[0];
    let (a, _) = ticks(&schema);
    let rec = a.sections()[0].get(2).unwrap();
    let mut codes = rec.to_vec();
    ty.to_codes(&mut codes).unwrap();
    let ints: Vec<i32> = codes[..28]
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // -99.999 m -> -10000 cm; 0.004 -> 0; -45° -> -32 of 256; the
    // quaternion (0, h, 0, h): index 1 rebuilt, (0, 0, 127) sent.
    assert_eq!(ints, [-10000, 0, -32, 1, 0, 0, 127]);
    assert_eq!(codes[28], 40);
    assert_eq!(f32s(rec, 3), [-100.0, 0.0, -45.0]);
}

#[test]
fn packets_are_pinned_and_decode_to_the_quantised_values() {
    let schema = buoy_schema();
    let (a, b) = ticks(&schema);
    let mut enc = Encoder::new(schema.clone());
    enc.set_checksum(true);
    let key = enc.encode(&a, 7, None).unwrap();
    let base = Baseline {
        sequence: 7,
        snapshot: &a,
    };
    let delta = enc.encode(&b, 8, Some(base)).unwrap();
    check("quant_keyframe", &key);
    check("quant_delta", &delta);

    let mut dec = Decoder::new(schema.clone());
    let (_, got_a) = dec.decode(&key, None).unwrap();
    assert_eq!(got_a, a);
    let (_, got_b) = dec.decode(&delta, Some(base)).unwrap();
    assert_eq!(got_b, b);
    let rec = got_b.sections()[0].get(1).unwrap();
    assert_eq!(f32s(rec, 3), [12.5, -3.3, 91.40625]);
    assert_eq!(rec[28], 99);
}

#[test]
fn layout_change_is_pinned() {
    // Buoy 2 tips past the tie of `y` and `w` (FORMAT.md 9.1): its baseline
    // (0, h, 0, h) has k = 1 and codes (0, 0, 127), re-expressed with k = 3
    // (0, 127, 0); now (0, 0.69, 0, 0.72) has k = 3 and codes (0, 124, 0),
    // recoded to (0, 124 − 127 + 0, 0 − 0 + 127) = (0, −3, 127). Against the
    // baseline's codes the row changes k (value 2) and q1 (value −3), and
    // q0, q2 are unchanged.
    let schema = buoy_schema();
    let (a, _) = ticks(&schema);
    let mut b = a.clone();
    let s = b.section_mut(0).unwrap();
    s.remove(2);
    s.insert(
        2,
        &buoy([-99.999, 0.004], -45.0, [0.0, 0.69, 0.0, 0.72], 40),
    )
    .unwrap();
    schema.quantize(&mut b).unwrap();
    let rec = b.sections()[0].get(2).unwrap();
    let mut codes = rec.to_vec();
    schema.sections()[0].to_codes(&mut codes).unwrap();
    let ints: Vec<i32> = codes[12..28]
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ints, [3, 0, 124, 0]);
    let mut enc = Encoder::new(schema.clone());
    enc.set_checksum(true);
    let base = Baseline {
        sequence: 7,
        snapshot: &a,
    };
    let delta = enc.encode(&b, 8, Some(base)).unwrap();
    check("quant_layout_delta", &delta);
    let (_, got) = Decoder::new(schema.clone())
        .decode(&delta, Some(base))
        .unwrap();
    assert_eq!(got, b);
}
