//! Decoder memory at the default limits, measured with a counting
//! allocator: the bounds SECURITY.md states.
#![allow(clippy::unwrap_used)]

use tickpack::session::{Client, ClientConfig, Received};
use tickpack::{DecodeError, Decoder, Limits, Primitive, Schema, Snapshot};

mod counting;
use counting::{peak_of, SERIAL};

fn schema() -> Schema {
    Schema::builder()
        .entity("e")
        .field("v", Primitive::U8, 14)
        .build()
        .unwrap()
}

/// A keyframe at `sequence`: a raw block announcing `entities` spawned
/// entities, then RLE blocks of zeros (8,192 bytes each but the last) for
/// their ids (gap 0) and 14-byte records.
fn zero_bomb(s: &Schema, sequence: u16, entities: u32) -> Vec<u8> {
    let mut p = vec![1u8];
    p.extend_from_slice(&s.id().to_le_bytes());
    p.extend_from_slice(&sequence.to_le_bytes());
    let mut raw = Vec::new();
    let mut v = entities;
    while v >= 0x80 {
        raw.push((v as u8) | 0x80);
        v >>= 7;
    }
    raw.push(v as u8);
    p.extend_from_slice(&((raw.len() as u16 - 1) << 3).to_le_bytes());
    p.extend_from_slice(&raw);
    let mut zeros = entities as usize * 15;
    while zeros > 0 {
        let len = zeros.min(8192);
        zeros -= len;
        let last = u16::from(zeros == 0);
        let header = ((len as u16 - 1) << 3) | 2 | last;
        p.extend_from_slice(&header.to_le_bytes());
        p.push(0);
    }
    p
}

/// The most entities whose ids and records fit `bytes` of payload.
fn entities_for(bytes: usize) -> u32 {
    ((bytes - 8) / 15) as u32
}

/// What SECURITY.md promises for one decode: twice the payload limit
/// (the regenerated payload and its growth) plus twice the snapshot limit
/// (the output and the decoder's scratch planes).
fn decode_bound(l: &Limits) -> usize {
    2 * l.max_decoded_bytes + 2 * l.max_snapshot_bytes
}

#[test]
fn the_issues_372_byte_keyframe_is_refused_within_the_bound() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let mut dec = Decoder::new(s.clone());
    let _ = dec.decode(&[0xff], None);
    let p = zero_bomb(&s, 0, 65_536);
    assert_eq!(p.len(), 372);
    let mut out = Snapshot::new(&s);
    let (r, peak) = peak_of(|| dec.decode_into(&p, None, &mut out));
    assert_eq!(
        r,
        Err(DecodeError::DecodedTooLarge {
            limit: Limits::default().max_decoded_bytes
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
    let p = zero_bomb(&s, 0, entities_for(limits.max_decoded_bytes));
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

#[test]
fn a_session_client_holds_at_most_history_times_the_snapshot_limit() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = schema();
    let config = ClientConfig::default();
    let limits = config.limits;
    let history = config.history;
    let mut client = Client::new(s.clone(), config).unwrap();
    let entities = entities_for(limits.max_decoded_bytes);
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
    let bound = history * limits.max_snapshot_bytes + decode_bound(&limits);
    eprintln!("client peak {peak}, bound {bound}");
    assert!(peak <= bound, "peak {peak}, bound {bound}");
}
