//! Decoder memory at the default limits, measured with a counting
//! allocator: the bounds SECURITY.md states.
#![allow(clippy::unwrap_used)]

use tickpack::quant::Quantize;
use tickpack::{DecodeError, Decoder, Limits, Primitive, Schema, Snapshot};
use tickpack_session::{Client, ClientConfig, Received};

use tickpack_testkit::counting::{peak_of, Counting, SERIAL};

#[global_allocator]
static A: Counting = Counting;

fn schema() -> Schema {
    Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 14)
        .build()
        .unwrap()
}

/// A keyframe at `sequence` (format 3: no flags, the schema id) spawning
/// `entities` entities with all-zero records: a raw block with the section
/// flags and the spawn count, then RLE blocks of zeros (8,192 bytes each
/// but the last) for the ids (gap 0) and the rows (one group byte of zero
/// each: nothing differs from the default record).
fn zero_bomb(s: &Schema, sequence: u16, entities: u32) -> Vec<u8> {
    bomb(s, sequence, entities, false)
}

/// [`zero_bomb`], or with `planes` its rows as byte planes (section flags
/// 20; 14 zero plane bytes per entity instead of one group byte).
fn bomb(s: &Schema, sequence: u16, entities: u32, planes: bool) -> Vec<u8> {
    let mut p = vec![0x03u8];
    p.extend_from_slice(&sequence.to_le_bytes());
    p.extend_from_slice(&s.id().to_le_bytes());
    let mut raw = vec![if planes { 20u8 } else { 4u8 }];
    let mut v = entities - 1;
    while v >= 0x80 {
        raw.push((v as u8) | 0x80);
        v >>= 7;
    }
    raw.push(v as u8);
    p.push(0x00);
    p.extend_from_slice(&(raw.len() as u16 - 1).to_le_bytes());
    p.extend_from_slice(&raw);
    let mut zeros = entities as usize * if planes { 15 } else { 2 };
    while zeros > 0 {
        let len = zeros.min(8192);
        zeros -= len;
        if zeros == 0 {
            p.push(0x03);
            let mut v = len;
            while v >= 0x80 {
                p.push((v as u8) | 0x80);
                v >>= 7;
            }
            p.push(v as u8);
        } else {
            p.push(0x02);
            p.extend_from_slice(&(len as u16 - 1).to_le_bytes());
        }
        p.push(0);
    }
    p
}

/// The most entities of [`zero_bomb`] the limits accept: the spawned
/// records within `max_decoded_bytes`, the snapshot within
/// `max_snapshot_bytes`.
fn entities_for(l: &Limits) -> u32 {
    (l.max_decoded_bytes / 14).min(l.max_snapshot_bytes / 18) as u32
}

/// What SECURITY.md promises for one decode: twice the payload limit
/// (the regenerated payload and its growth) plus twice the snapshot limit
/// (the output and the decoder's scratch planes).
fn decode_bound(l: &Limits) -> usize {
    2 * l.max_decoded_bytes + 2 * l.max_snapshot_bytes
}

#[test]
fn a_keyframe_of_65536_zero_entities_is_refused_within_the_bound() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let mut dec = Decoder::new(s.clone());
    let _ = dec.decode(&[0xff], None);
    let p = zero_bomb(&s, 0, 65_536);
    assert!(p.len() < 200, "{} bytes", p.len());
    let mut out = Snapshot::new(&s);
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert_eq!(
        r,
        Err(DecodeError::SnapshotTooLarge {
            bytes: 65_536 * 18,
            limit: Limits::default().max_snapshot_bytes
        })
    );
    assert!(
        peak <= 2 * Limits::default().max_decoded_bytes,
        "peak {peak}"
    );
}

#[test]
fn the_largest_bomb_the_defaults_accept_stays_within_the_bound() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let limits = Limits::default();
    let mut dec = Decoder::new(s.clone());
    let _ = dec.decode(&[0xff], None);
    let p = zero_bomb(&s, 0, entities_for(&limits));
    let mut out = Snapshot::new(&s);
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert!(r.is_ok(), "{r:?}");
    assert!(out.sections()[0].len() > 17_000);
    eprintln!("decode peak {peak} for {} bytes", p.len());
    assert!(
        peak <= decode_bound(&limits),
        "peak {peak} for {} bytes",
        p.len()
    );
}

#[test]
fn the_largest_byte_plane_bomb_the_defaults_accept_stays_within_the_bound() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let limits = Limits::default();
    let mut dec = Decoder::new(s.clone());
    let _ = dec.decode(&[0xff], None);
    // Ids and planes fill the payload limit.
    let p = bomb(&s, 0, (limits.max_decoded_bytes / 15) as u32, true);
    let mut out = Snapshot::new(&s);
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert!(r.is_ok(), "{r:?}");
    assert!(out.sections()[0].len() > 17_000);
    assert!(
        peak <= decode_bound(&limits),
        "peak {peak} for {} bytes",
        p.len()
    );
}

#[test]
fn a_snapshot_over_the_limit_is_refused_before_it_is_built() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let limits = Limits {
        max_decoded_bytes: 1 << 20,
        ..Limits::default()
    };
    let mut dec = Decoder::new(s.clone());
    dec.set_limits(limits);
    let _ = dec.decode(&[0xff], None);
    let p = zero_bomb(&s, 0, 65_536);
    let mut out = Snapshot::new(&s);
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert_eq!(
        r,
        Err(DecodeError::SnapshotTooLarge {
            bytes: 65_536 * 18,
            limit: limits.max_snapshot_bytes
        })
    );
    assert!(peak <= 2 * limits.max_decoded_bytes, "peak {peak}");
}

/// [`schema`] with its field quantised (codes equal to values), so the
/// decoder keeps code forms of what it rebuilt.
fn quantised_schema() -> Schema {
    Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 14)
        .quantize(Quantize::int_range(0, 255))
        .build()
        .unwrap()
}

/// What SECURITY.md promises a quantised decoder keeps besides: the code
/// forms of recent snapshots (4 MiB, or 3 snapshots' values and codes when
/// those are larger) and the rebuilt snapshot's codes.
fn code_cache_bound(l: &Limits) -> usize {
    (4 << 20).max(6 * l.max_snapshot_bytes) + l.max_snapshot_bytes
}

#[test]
fn a_session_client_holds_at_most_history_times_the_snapshot_limit() {
    client_holds_at_most(schema(), 0);
}

#[test]
fn a_quantised_session_client_holds_at_most_that_and_its_code_cache() {
    client_holds_at_most(
        quantised_schema(),
        code_cache_bound(&ClientConfig::default().limits),
    );
}

/// A quantised decoder's code forms stay within their bound whatever the
/// order of snapshot sizes: the 32 entries small snapshots may take are
/// not all refilled with large ones, and entries sized for large ones do
/// not stay when smaller ones get more entries.
#[test]
fn a_quantised_decoder_keeps_its_code_cache_bound_whatever_the_sizes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = quantised_schema();
    let limits = Limits::default();
    let mut dec = Decoder::new(s.clone());
    let mut out = Snapshot::new(&s);
    let large = entities_for(&limits);
    // 32 keyframes of one entity, then 40 of the largest, then 40 each of
    // half, a quarter and an eighth of that.
    let sizes = [1, large, large / 2, large / 4, large / 8];
    let (decoded, peak) = peak_of(|| {
        (0..192u16)
            .filter(|&seq| {
                let entities = sizes[(usize::from(seq) + 8) / 40];
                let p = zero_bomb(&s, seq, entities);
                dec.decode_into(&p, None, &mut out).is_ok()
            })
            .count()
    });
    assert_eq!(decoded, 192);
    let bound = decode_bound(&limits) + code_cache_bound(&limits);
    eprintln!("decoder peak {peak}, bound {bound}");
    assert!(peak <= bound, "peak {peak}, bound {bound}");
}

/// A session client applying twice its history of the largest keyframes
/// the limits accept peaks within its history of snapshots, one decode and
/// `extra` bytes.
fn client_holds_at_most(s: Schema, extra: usize) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let config = ClientConfig::default();
    let limits = config.limits;
    let history = config.history;
    let mut client = Client::new(s.clone(), config).unwrap();
    let entities = entities_for(&limits);
    let (applied, peak) = peak_of(|| {
        let mut applied = 0;
        for seq in 0..(2 * history as u16) {
            let p = zero_bomb(&s, seq, entities);
            if matches!(client.receive(&p), Received::Applied { .. }) {
                applied += 1;
            }
        }
        applied
    });
    assert_eq!(applied, 2 * history);
    let bound = history * limits.max_snapshot_bytes + decode_bound(&limits) + extra;
    eprintln!("client peak {peak}, bound {bound}");
    assert!(peak <= bound, "peak {peak}, bound {bound}");
}

/// A session client applying deltas that change every entity of the
/// largest snapshot whose keyframe fits the payload limit keeps each snapshot's
/// history beside it (a byte per entity and per element, never more than
/// the snapshot counts): it peaks within twice its history of snapshots
/// and one decode.
#[test]
fn a_session_client_keeping_histories_holds_at_most_twice_its_snapshots() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let config = ClientConfig::default();
    let limits = config.limits;
    let history = config.history;
    let mut client = Client::new(s.clone(), config).unwrap();
    let mut enc = tickpack::Encoder::new(s.clone());
    enc.set_limits(limits);
    enc.set_keep_history(true);
    // The keyframe's records (14 bytes and a spawn gap each) fit the
    // payload limit; a delta row is 3 to 4 bytes.
    let entities = (limits.max_decoded_bytes / 16).min(limits.max_snapshot_bytes / 18) as u32;
    let snapshot = |seq: u16| {
        let mut sec = tickpack::Section::new(14);
        for id in 0..entities {
            let mut rec = [0u8; 14];
            rec[(id % 14) as usize] = seq as u8;
            sec.insert(id, &rec).unwrap();
        }
        Snapshot::from_sections(&s, vec![sec]).unwrap()
    };
    let snaps: Vec<Snapshot> = (0..2 * history as u16).map(snapshot).collect();
    let mut packets = Vec::new();
    let mut kept: Option<tickpack::History> = None;
    for (i, snap) in snaps.iter().enumerate() {
        let base = i.checked_sub(1).map(|b| tickpack::Baseline {
            sequence: b as u16,
            snapshot: &snaps[b],
        });
        let reference = tickpack::Reference::from(base).with_history(kept.as_ref());
        packets.push(enc.encode(snap, i as u16, reference).unwrap());
        kept = enc.history().cloned();
    }
    assert!(kept.is_some_and(|h| h.entities(0) == entities as usize));
    let (applied, peak) = peak_of(|| {
        let mut applied = 0;
        for p in &packets {
            if matches!(client.receive(p), Received::Applied { .. }) {
                applied += 1;
            }
        }
        applied
    });
    assert_eq!(applied, 2 * history);
    let bound = 2 * history * limits.max_snapshot_bytes + decode_bound(&limits);
    eprintln!("client peak {peak}, bound {bound}");
    assert!(peak <= bound, "peak {peak}, bound {bound}");
}

/// A sender that moves 8,192 entities with ids 32 apart (one per group of
/// the recall) in and out of view every tick, so that every recall the
/// client keeps is new and sparse. Counting each group (FORMAT.md 4.7)
/// keeps a recall's memory near its counted size: the client peaks within
/// its history of snapshots and as many recalls of at most twice the
/// snapshot limit, plus one decode.
#[test]
fn sparse_ids_in_and_out_of_view_keep_recalls_within_the_bound() {
    use std::sync::Arc;
    use tickpack_session::{Server, ServerConfig, View};

    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 1)
        .build()
        .unwrap();
    let limits = Limits {
        max_snapshot_bytes: 256 << 10,
        ..Limits::default()
    };
    let config = ClientConfig {
        limits,
        ..ClientConfig::default()
    };
    let history = config.history;
    // The packets, made by a server whose client acks every one.
    let mut server = Server::new(
        s.clone(),
        ServerConfig {
            limits,
            ..ServerConfig::default()
        },
    )
    .unwrap();
    let mut acker = Client::new(s.clone(), config.clone()).unwrap();
    server
        .accept(1, &acker.answer(&server.hello().to_bytes()).unwrap())
        .unwrap();
    let mut world = Snapshot::new(&s);
    for k in 0..16_384u32 {
        world.section_mut(0).unwrap().insert(k * 32, &[1]).unwrap();
    }
    let world = Arc::new(world);
    let halves: Vec<View> = (0..2u32)
        .map(|h| View::filter(vec![(0..8192u32).map(|k| (2 * k + h) * 32).collect()]))
        .collect();
    let mut packets = Vec::new();
    for t in 0..2 * history {
        server.begin_tick(world.clone());
        let p = server.send(1, &halves[t % 2]).unwrap();
        assert!(matches!(acker.receive(&p), Received::Applied { .. }));
        server
            .handle_message(1, &acker.message().to_bytes())
            .unwrap();
        packets.push(p);
    }
    drop((server, acker));
    let mut client = Client::new(s.clone(), config).unwrap();
    client
        .answer(
            &Server::new(
                s,
                ServerConfig {
                    limits,
                    ..ServerConfig::default()
                },
            )
            .unwrap()
            .hello()
            .to_bytes(),
        )
        .unwrap();
    let (applied, peak) = peak_of(|| {
        packets
            .iter()
            .filter(|p| matches!(client.receive(p), Received::Applied { .. }))
            .count()
    });
    assert_eq!(applied, packets.len());
    let bound = history * 3 * limits.max_snapshot_bytes + decode_bound(&limits);
    eprintln!("client peak {peak}, bound {bound}");
    assert!(peak <= bound, "peak {peak}, bound {bound}");
}
