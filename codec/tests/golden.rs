//! Golden vectors: the exact bytes of packets for fixed inputs, stored as
//! hex under `tests/vectors/`. A change here is a wire-format change (bump
//! `FORMAT_VERSION` and FORMAT.md with it) or a change of the encoder's
//! choices within the format (the decoder reads old and new bytes alike;
//! say so in the commit). Regenerate deliberately with
//! `TICKPACK_BLESS=1 cargo test -p tickpack --test golden`.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use tickpack::{Baseline, Decoder, Dictionary, Encoder, Primitive, Schema, Snapshot};

/// The FORMAT.md worked example: ships with x: f32, hp: u16, flags: u8.
fn ship_schema() -> Schema {
    Schema::builder()
        .entity("ship")
        .field("x", Primitive::F32, 1)
        .field("hp", Primitive::U16, 1)
        .field("flags", Primitive::U8, 1)
        .build()
        .unwrap()
}

fn ship(x: f32, hp: u16, flags: u8) -> Vec<u8> {
    let mut r = x.to_le_bytes().to_vec();
    r.extend_from_slice(&hp.to_le_bytes());
    r.push(flags);
    r
}

fn ships(list: &[(u32, f32, u16, u8)]) -> Snapshot {
    ships_in(&ship_schema(), list)
}

/// Ships in any schema with the ship layout.
fn ships_in(s: &Schema, list: &[(u32, f32, u16, u8)]) -> Snapshot {
    let mut snap = Snapshot::new(s);
    for &(id, x, hp, f) in list {
        snap.section_mut(0)
            .unwrap()
            .insert(id, &ship(x, hp, f))
            .unwrap();
    }
    snap
}

fn tick0() -> Snapshot {
    ships(&[(3, 100.0, 250, 1), (7, 101.5, 250, 0)])
}

fn tick1() -> Snapshot {
    // ship 3 moves, ship 7 is destroyed, ship 12 spawns.
    ships(&[(3, 100.25, 250, 1), (12, -20.0, 100, 2)])
}

/// A larger, deterministic case: 3 entity types, 200 entities, zstd blocks.
fn arena() -> (Schema, Snapshot, Snapshot) {
    let schema = Schema::builder()
        .entity("player")
        .field("pos", Primitive::F32, 3)
        .field("yaw", Primitive::F32, 1)
        .field("health", Primitive::U8, 1)
        .entity("projectile")
        .field("pos", Primitive::F32, 3)
        .field("owner", Primitive::U16, 1)
        .entity("pickup")
        .field("kind", Primitive::U8, 1)
        .field("cell", Primitive::I32, 2)
        .build()
        .unwrap();
    let mut a = Snapshot::new(&schema);
    let mut b = Snapshot::new(&schema);
    for i in 0..32u32 {
        let f = i as f32;
        let mut rec: Vec<u8> = [f * 3.0, 5.0, -f, f * 0.1]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        rec.push(100);
        a.section_mut(0).unwrap().insert(i, &rec).unwrap();
        if i % 3 == 0 {
            rec[0..4].copy_from_slice(&(f * 3.0 + 0.25).to_le_bytes());
            rec[16] = 90;
        }
        b.section_mut(0).unwrap().insert(i, &rec).unwrap();
    }
    for i in 0..150u32 {
        let f = i as f32;
        let mut rec: Vec<u8> = [f, 1.0, f * 2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        rec.extend_from_slice(&((i % 32) as u16).to_le_bytes());
        if i % 5 != 0 {
            a.section_mut(1).unwrap().insert(1000 + i, &rec).unwrap();
        }
        rec[0..4].copy_from_slice(&(f + 1.5).to_le_bytes());
        if i % 7 != 0 {
            b.section_mut(1).unwrap().insert(1000 + i, &rec).unwrap();
        }
    }
    for i in 0..18u32 {
        let mut rec = vec![(i % 4) as u8];
        rec.extend_from_slice(&(i as i32 * 10).to_le_bytes());
        rec.extend_from_slice(&(-(i as i32)).to_le_bytes());
        a.section_mut(2).unwrap().insert(i * 2, &rec).unwrap();
        b.section_mut(2).unwrap().insert(i * 2, &rec).unwrap();
    }
    (schema, a, b)
}

/// A crowd of 2,600 bodies whose keyframe payload is over
/// [`tickpack::MAX_BLOCK_CONTENT`], so its packet holds two blocks.
fn crowd() -> (Schema, Snapshot) {
    let schema = Schema::builder()
        .entity("body")
        .field("pos", Primitive::F32, 3)
        .field("team", Primitive::U32, 1)
        .build()
        .unwrap();
    let mut snap = Snapshot::new(&schema);
    for i in 0..2600u32 {
        let mut rec: Vec<u8> = [(i % 64) as f32 * 2.0, 0.5, (i / 64) as f32]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        rec.extend_from_slice(&(i % 4).to_le_bytes());
        snap.section_mut(0).unwrap().insert(i * 3, &rec).unwrap();
    }
    (schema, snap)
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
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
    let text = hex(bytes)
        .split(' ')
        .collect::<Vec<_>>()
        .chunks(16)
        .map(|c| c.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    if std::env::var_os("TICKPACK_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (bless with TICKPACK_BLESS=1)", path.display()));
    assert_eq!(
        text, want,
        "golden vector {name} changed: a wire-format change or a change of the encoder's choices"
    );
}

/// Name, schema, packet, baselines (none; baseline; baseline and prior), decoded snapshot.
type Vector = (
    &'static str,
    Schema,
    Vec<u8>,
    Vec<(u16, Snapshot)>,
    Snapshot,
);

fn vectors() -> Vec<Vector> {
    let s = ship_schema();
    let mut enc = Encoder::new(s.clone());
    let k = enc.encode(&tick0(), 0xfffe, None).unwrap();
    let d = enc
        .encode(
            &tick1(),
            0x0001,
            Some(Baseline {
                sequence: 0xfffe,
                snapshot: &tick0(),
            }),
        )
        .unwrap();
    let idle = enc
        .encode(
            &tick0(),
            0x0002,
            Some(Baseline {
                sequence: 0xfffe,
                snapshot: &tick0(),
            }),
        )
        .unwrap();
    let dict = Dictionary::new(
        0x7a6b_0001,
        b"tickpack golden dictionary: raw content used as history".to_vec(),
    );
    enc.set_dictionary(Some(&dict)).unwrap();
    let kd = enc.encode(&tick0(), 5, None).unwrap();
    // Prediction and checksum: x predicted from two baselines.
    let sp = Schema::builder()
        .entity("ship")
        .field_with(tickpack::Field {
            name: "x".into(),
            ty: Primitive::F32,
            len: 1,
            delta: Some(tickpack::DeltaOp::Predict),
        })
        .field("hp", Primitive::U16, 1)
        .field("flags", Primitive::U8, 1)
        .build()
        .unwrap();
    let p_ticks: Vec<Snapshot> = (0..3)
        .map(|t| {
            let mut snap = Snapshot::new(&sp);
            for (id, x) in [(3u32, 100.0f32), (7, -40.0)] {
                let rec = ship(x + t as f32 * 1.5, 250, 1);
                snap.section_mut(0).unwrap().insert(id, &rec).unwrap();
            }
            snap
        })
        .collect();
    let mut enc = Encoder::new(sp.clone());
    enc.set_checksum(true);
    let mut pd = Vec::new();
    enc.encode_to_vec(
        &p_ticks[2],
        20,
        tickpack::Reference::predicted(
            Baseline {
                sequence: 19,
                snapshot: &p_ticks[1],
            },
            Baseline {
                sequence: 18,
                snapshot: &p_ticks[0],
            },
        ),
        &mut pd,
    )
    .unwrap();
    // A grid of 0.25 on x: 100.0 -> 100.25 is one step.
    let sg = Schema::builder()
        .entity("ship")
        .field("x", Primitive::F32, 1)
        .grid(0.25)
        .field("hp", Primitive::U16, 1)
        .field("flags", Primitive::U8, 1)
        .build()
        .unwrap();
    let (g0, g1) = (
        ships_in(&sg, &[(3, 100.0, 250, 1), (7, 101.5, 250, 0)]),
        ships_in(&sg, &[(3, 100.25, 250, 1), (7, 101.0, 250, 0)]),
    );
    let gd = Encoder::new(sg.clone())
        .encode(
            &g1,
            9,
            Some(Baseline {
                sequence: 8,
                snapshot: &g0,
            }),
        )
        .unwrap();
    // A position integrated from its velocity over a millisecond clock:
    // x moves exactly as predicted (100 + 10 · 50 ms = 100.5, unchanged in
    // the mask), y does not (predicted 49.8, sent 49.75).
    let si = Schema::builder()
        .entity("body")
        .field("t", Primitive::I32, 1)
        .field("vel", Primitive::F32, 2)
        .field("pos", Primitive::F32, 2)
        .integrate(tickpack::Integrate::new("vel", "t", 0.001))
        .build()
        .unwrap();
    let body = |t: i32, pos: [f32; 2]| {
        let mut rec = t.to_le_bytes().to_vec();
        for v in [10.0f32, -4.0, pos[0], pos[1]] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        let mut snap = Snapshot::new(&si);
        snap.section_mut(0).unwrap().insert(1, &rec).unwrap();
        snap
    };
    let (i0, i1) = (body(1000, [100.0, 50.0]), body(1050, [100.5, 49.75]));
    let id = Encoder::new(si.clone())
        .encode(
            &i1,
            31,
            Some(Baseline {
                sequence: 30,
                snapshot: &i0,
            }),
        )
        .unwrap();
    // The same body declared position first, then hit points, velocity and
    // clock: the changed row's values go hit points, clock, then the
    // integrated `pos.y` last (FORMAT.md 4.9).
    let sl = Schema::builder()
        .entity("body")
        .field("pos", Primitive::F32, 2)
        .integrate(tickpack::Integrate::new("vel", "t", 0.001))
        .field("hp", Primitive::U16, 1)
        .field("vel", Primitive::F32, 2)
        .field("t", Primitive::I32, 1)
        .build()
        .unwrap();
    let late = |t: i32, hp: u16, pos: [f32; 2]| {
        let mut rec = Vec::new();
        for v in pos {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        rec.extend_from_slice(&hp.to_le_bytes());
        for v in [10.0f32, -4.0] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        rec.extend_from_slice(&t.to_le_bytes());
        let mut snap = Snapshot::new(&sl);
        snap.section_mut(0).unwrap().insert(1, &rec).unwrap();
        snap
    };
    let (l0, l1) = (late(1000, 7, [100.0, 50.0]), late(1050, 9, [100.5, 49.75]));
    let ld = Encoder::new(sl.clone())
        .encode(
            &l1,
            41,
            Some(Baseline {
                sequence: 40,
                snapshot: &l0,
            }),
        )
        .unwrap();
    // Over the packet's tick distance (3 ticks of 50 ms): a clock at 50 per
    // tick (1000 -> 1150, unchanged in the mask) and a whole position moved
    // by its velocity (x: 100 + 10 · 0.15 = 101.5, rounded to even 102 and
    // sent 102, unchanged; y: 50 − 0.6 = 49.4 predicts 49, sent 48).
    let st = Schema::builder()
        .entity("body")
        .field("t", Primitive::I32, 1)
        .integrate(tickpack::Integrate::new(
            tickpack::Integrate::ONE,
            tickpack::Integrate::TICKS,
            50.0,
        ))
        .field("vel", Primitive::F32, 2)
        .field("pos", Primitive::F32, 2)
        .integrate(tickpack::Integrate::new(
            "vel",
            tickpack::Integrate::TICKS,
            0.05,
        ))
        .build()
        .unwrap();
    let ticked = |t: i32, pos: [f32; 2]| {
        let mut rec = t.to_le_bytes().to_vec();
        for v in [10.0f32, -4.0, pos[0], pos[1]] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        let mut snap = Snapshot::new(&st);
        snap.section_mut(0).unwrap().insert(1, &rec).unwrap();
        snap
    };
    let (t0, t1) = (ticked(1000, [100.0, 50.0]), ticked(1150, [102.0, 48.0]));
    let td = Encoder::new(st.clone())
        .encode(
            &t1,
            63,
            Some(Baseline {
                sequence: 60,
                snapshot: &t0,
            }),
        )
        .unwrap();
    // A unit field: `rot.w` goes 0.8 → 0.96, coded against the value
    // `rot.z` = 0.28 implies (FORMAT.md 4.10).
    let su = Schema::builder()
        .entity("body")
        .field("rot", Primitive::F32, 4)
        .unit()
        .field("hp", Primitive::U16, 1)
        .build()
        .unwrap();
    let unit = |z: f32, w: f32| {
        let mut rec = Vec::new();
        for v in [0.0f32, 0.0, z, w] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        rec.extend_from_slice(&7u16.to_le_bytes());
        let mut snap = Snapshot::new(&su);
        snap.section_mut(0).unwrap().insert(1, &rec).unwrap();
        snap
    };
    let (u0, u1) = (unit(0.6, 0.8), unit(0.28, 0.96));
    let ud = Encoder::new(su.clone())
        .encode(
            &u1,
            51,
            Some(Baseline {
                sequence: 50,
                snapshot: &u0,
            }),
        )
        .unwrap();
    let (arena_s, a, b) = arena();
    let mut enc = Encoder::new(arena_s.clone());
    let ak = enc.encode(&a, 100, None).unwrap();
    let ad = enc
        .encode(
            &b,
            106,
            Some(Baseline {
                sequence: 100,
                snapshot: &a,
            }),
        )
        .unwrap();
    let (crowd_s, c) = crowd();
    let mut enc = Encoder::new(crowd_s.clone());
    let mut payload = Vec::new();
    enc.payload(&c, 7, None, &mut payload).unwrap();
    assert!(payload.len() > tickpack::MAX_BLOCK_CONTENT);
    let ck = enc.encode(&c, 7, None).unwrap();
    vec![
        ("ship_keyframe", s.clone(), k, vec![], tick0()),
        ("ship_delta", s.clone(), d, vec![(0xfffe, tick0())], tick1()),
        (
            "ship_idle",
            s.clone(),
            idle,
            vec![(0xfffe, tick0())],
            tick0(),
        ),
        ("ship_keyframe_dict", s, kd, vec![], tick0()),
        (
            "ship_predicted_checksum",
            sp,
            pd,
            vec![(19, p_ticks[1].clone()), (18, p_ticks[0].clone())],
            p_ticks[2].clone(),
        ),
        ("ship_grid_delta", sg, gd, vec![(8, g0)], g1),
        ("body_integrated_delta", si, id, vec![(30, i0)], i1),
        ("body_integrated_late_delta", sl, ld, vec![(40, l0)], l1),
        ("body_ticks_delta", st, td, vec![(60, t0)], t1),
        ("body_unit_delta", su, ud, vec![(50, u0)], u1),
        ("arena_keyframe", arena_s.clone(), ak, vec![], a.clone()),
        ("arena_delta", arena_s, ad, vec![(100, a)], b),
        ("crowd_keyframe", crowd_s, ck, vec![], c),
    ]
}

#[test]
fn golden_vectors() {
    let dict = Dictionary::new(
        0x7a6b_0001,
        b"tickpack golden dictionary: raw content used as history".to_vec(),
    );
    for (name, schema, bytes, base, want) in vectors() {
        check(name, &bytes);
        let mut dec = Decoder::new(schema);
        dec.add_dictionary(&dict).unwrap();
        let mut b = base.iter().map(|(sequence, snapshot)| Baseline {
            sequence: *sequence,
            snapshot,
        });
        let (baseline, prior) = (b.next(), b.next());
        let mut got = Snapshot::default();
        dec.decode_into(
            &bytes,
            tickpack::Reference::from(baseline).with_prior(prior),
            &mut got,
        )
        .unwrap();
        assert_eq!(got, want, "{name}");
    }
}

/// The FORMAT.md worked example: payloads (what blocks compress) and
/// packets. Run with `--nocapture` to print the bytes the document shows.
#[test]
fn worked_example_stages() {
    let s = ship_schema();
    let (t0, t1) = (tick0(), tick1());
    println!("schema id: {:#010x}", s.id());
    println!("tick0 records: {}", hex(t0.sections()[0].records()));
    println!("tick1 records: {}", hex(t1.sections()[0].records()));
    let mut enc = Encoder::new(s.clone());
    let mut payload = Vec::new();
    enc.payload(&t0, 0xfffe, None, &mut payload).unwrap();
    println!("keyframe payload: {}", hex(&payload));
    // Side byte 0x14: flags 20 (spawned, byte planes) as the bits 0 0 1 0
    // 1; spawn list 3, 7; then the rows as byte planes: ship 3 against the
    // zero default record, ship 7 against ship 3. Byte 0 of x, hp, flags;
    // byte 1 of x, hp; bytes 2 and 3 of x.
    assert_eq!(
        hex(&payload),
        "14 01 03 03 00 00 f4 00 02 01 00 00 01 00 90 06 85 00"
    );
    let b = Baseline {
        sequence: 0xfffe,
        snapshot: &t0,
    };
    enc.payload(&t1, 0x0001, Some(b), &mut payload).unwrap();
    println!("delta payload: {}", hex(&payload));
    for (name, _, bytes, _, _) in vectors() {
        println!("{name}: {} bytes: {}", bytes.len(), hex(&bytes));
    }
}

/// FORMAT.md 7.4: ship 7 leaves at `0x0001` and comes back unchanged at
/// `0x0002`, coded against the recall of `0x0001`, next to a new ship 12
/// coded against the default record.
#[test]
fn golden_recall() {
    let s = ship_schema();
    let limits = tickpack::Limits::default();
    let t0 = tick0();
    let t1 = ships(&[(3, 100.25, 250, 1)]);
    let t2 = ships(&[(3, 100.25, 250, 1), (7, 101.5, 250, 0), (12, -20.0, 100, 2)]);
    let b0 = Baseline {
        sequence: 0xfffe,
        snapshot: &t0,
    };
    let r1 = tickpack::Recall::keyframe(0xfffe).advance(b0, &t1, 0x0001, &limits);
    assert_eq!(r1.get(0, 7), t0.sections()[0].get(7));
    let b1 = Baseline {
        sequence: 0x0001,
        snapshot: &t1,
    };
    let reference = tickpack::Reference::delta(b1).with_recall(&r1);
    let bytes = Encoder::new(s.clone())
        .encode(&t2, 0x0002, reference)
        .unwrap();
    check("ship_recall", &bytes);
    println!("ship_recall: {}", hex(&bytes));
    let mut dec = Decoder::new(s);
    assert_eq!(dec.decode(&bytes, reference).unwrap().1, t2);
    assert_eq!(
        dec.decode(&bytes, b1).unwrap_err(),
        tickpack::DecodeError::MissingRecall {
            section: 0,
            sequence: 0x0001
        }
    );
}

/// A model block: the worked example's delta coded with a uniform model
/// table (`Entropy::Model`). The header's `MODEL` flag (`0x40`) announces
/// it and no block header follows (FORMAT.md 3.1, "Model block").
#[test]
fn golden_model_delta() {
    use tickpack::model::ModelTable;
    let s = ship_schema();
    let mut enc = Encoder::new(s.clone());
    let table = ModelTable::uniform(enc.model_shape().unwrap()).unwrap();
    let dict = Dictionary::new(0x7a6b_0002, b"tickpack golden model".to_vec()).with_model(table);
    enc.set_dictionary(Some(&dict)).unwrap();
    enc.set_entropy(tickpack::Entropy::Model);
    let t0 = tick0();
    let b0 = Baseline {
        sequence: 0xfffe,
        snapshot: &t0,
    };
    let bytes = enc.encode(&tick1(), 0x0001, b0).unwrap();
    check("ship_model_delta", &bytes);
    println!("ship_model_delta: {}", hex(&bytes));
    // BASELINE, DICTIONARY and MODEL with distance 3; the sequence.
    assert_eq!(bytes[..3], [0x73, 0x01, 0x00]);
    let mut dec = Decoder::new(s);
    dec.add_dictionary(&dict).unwrap();
    dec.agree(Some(dict.id()), None).unwrap();
    assert_eq!(dec.decode(&bytes, b0).unwrap().1, tick1());
}
