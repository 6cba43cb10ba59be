//! Captures: round trips, and damage found at the right offset with every
//! tick before it intact.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tickpack::{DecodeError, Primitive, Schema, Snapshot};
use tickpack_sets::capture::{
    Capture, CaptureError, CaptureHeader, CaptureLimits, CaptureOptions, CaptureReader,
    CaptureThread, CaptureWriter, CapturedTick, Record, SentRecord,
};

fn schema() -> Schema {
    Schema::builder()
        .entity("ship")
        .field("pos", Primitive::F32, 2)
        .field("hp", Primitive::U16, 1)
        .default_record(&[0, 0, 0x80, 0x3f, 0, 0, 0, 0, 100, 0])
        .entity("shot")
        .field("owner", Primitive::U32, 1)
        .field("t", Primitive::F64, 1)
        .build()
        .unwrap()
}

/// Ticks with gaps, entities coming and going, NaN payloads, sent records.
fn ticks(n: u64) -> Vec<CapturedTick> {
    let s = schema();
    let mut out = Vec::new();
    for i in 0..n {
        let tick = 1000 + i * 3 + (i % 3);
        let mut snap = Snapshot::new(&s);
        for id in 0..(5 + i % 4) as u32 {
            if (id + i as u32).is_multiple_of(5) {
                continue; // despawned this tick
            }
            let x = if id == 1 {
                f32::from_bits(0x7fc0_0000 | i as u32)
            } else {
                id as f32 + i as f32 * 0.25
            };
            let mut rec = Vec::new();
            rec.extend_from_slice(&x.to_le_bytes());
            rec.extend_from_slice(&(-(i as f32)).to_le_bytes());
            rec.extend_from_slice(&(100 - id as u16).to_le_bytes());
            snap.section_mut(0).unwrap().insert(id * 7, &rec).unwrap();
        }
        if i.is_multiple_of(2) {
            let mut rec = (i as u32).to_le_bytes().to_vec();
            rec.extend_from_slice(&(i as f64 / 3.0).to_le_bytes());
            snap.section_mut(1).unwrap().insert(i as u32, &rec).unwrap();
        }
        let sent = if i == 0 {
            vec![SentRecord {
                client: 9,
                sequence: tick as u16,
                baseline: None,
                prior: None,
                bytes: 40,
            }]
        } else {
            vec![
                SentRecord {
                    client: 9,
                    sequence: tick as u16,
                    baseline: Some((tick - 3) as u16),
                    prior: (i > 2).then_some((tick - 6) as u16),
                    bytes: 12,
                },
                SentRecord {
                    client: 70_000,
                    sequence: 5,
                    baseline: None,
                    prior: None,
                    bytes: 0,
                },
            ]
        };
        out.push(CapturedTick {
            tick,
            snapshot: snap,
            sent,
        });
    }
    out
}

fn capture(n: u64) -> Capture {
    Capture {
        header: CaptureHeader::new("arena", "0.3.1", 30, schema()),
        ticks: ticks(n),
    }
}

fn options() -> CaptureOptions {
    CaptureOptions {
        level: 1,
        keyframe_interval: 4,
    }
}

fn bytes(c: &Capture) -> Vec<u8> {
    c.write(Vec::new(), options()).unwrap()
}

/// Reads what it can: the intact ticks and the error, if any.
fn read_partial(data: &[u8]) -> (Vec<CapturedTick>, Option<CaptureError>) {
    let r = match CaptureReader::new(data) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut ok = Vec::new();
    for t in r.ticks() {
        match t {
            Ok(t) => ok.push(t),
            Err(e) => return (ok, Some(e)),
        }
    }
    (ok, None)
}

/// `ok` is what the capture held, up to damage: whole ticks, and for the
/// last one possibly only the sent records before the damage.
fn intact(ok: &[CapturedTick], all: &[CapturedTick]) -> bool {
    ok.len() <= all.len()
        && ok.iter().zip(all).all(|(a, b)| {
            a.tick == b.tick && a.snapshot == b.snapshot && b.sent.starts_with(&a.sent)
        })
}

/// Offsets where each record starts, found by reading.
fn record_offsets(data: &[u8]) -> Vec<u64> {
    let mut r = CaptureReader::new(data).unwrap();
    let mut out = vec![r.offset()];
    while r.next_record().unwrap().is_some() {
        out.push(r.offset());
    }
    out
}

#[test]
fn round_trip_with_default_records_gaps_and_sends() {
    let c = capture(20);
    let data = bytes(&c);
    let back = Capture::read(&data[..], CaptureLimits::default()).unwrap();
    assert_eq!(back, c);
    assert_eq!(back.header.schema.id(), schema().id());
    // The streaming API sees the same.
    let mut r = CaptureReader::new(&data[..]).unwrap();
    let (mut t, mut s) = (0, 0);
    while let Some(rec) = r.next_record().unwrap() {
        match rec {
            Record::Tick { tick, snapshot } => {
                assert_eq!(tick, c.ticks[t].tick);
                assert_eq!(snapshot, &c.ticks[t].snapshot);
                t += 1;
            }
            Record::Sent(x) => {
                assert!(c.ticks[t - 1].sent.contains(&x));
                s += 1;
            }
        }
    }
    assert_eq!((t, s), (20, 39));
    assert!(r.next_record().unwrap().is_none(), "stays at the end");
}

#[test]
fn far_apart_ticks_are_stored_whole() {
    let mut c = capture(3);
    c.ticks[1].tick = c.ticks[0].tick + 40_000;
    c.ticks[2].tick = c.ticks[1].tick + 65_536;
    let data = c
        .write(
            Vec::new(),
            CaptureOptions {
                level: 3,
                keyframe_interval: 0,
            },
        )
        .unwrap();
    assert_eq!(
        Capture::read(&data[..], CaptureLimits::default()).unwrap(),
        c
    );
}

#[test]
fn every_truncation_keeps_the_ticks_before_it() {
    let c = capture(12);
    let data = bytes(&c);
    let starts = record_offsets(&data);
    for cut in 0..data.len() {
        let (ok, err) = read_partial(&data[..cut]);
        let err = err.unwrap_or_else(|| panic!("cut at {cut} read as complete"));
        match err {
            CaptureError::Truncated { offset, available } => {
                // The damaged record is the one the cut falls in.
                let rec = starts.iter().rev().find(|&&s| s <= cut as u64).copied();
                let expect = if (cut as u64) < starts[0] {
                    0
                } else {
                    rec.unwrap()
                };
                assert_eq!(offset, expect, "cut at {cut}");
                assert_eq!(offset + available, cut as u64, "cut at {cut}");
            }
            CaptureError::BadMagic if cut == 0 => {}
            e => panic!("cut at {cut}: {e:?}"),
        }
        assert!(intact(&ok, &c.ticks), "cut at {cut}");
    }
}

#[test]
fn every_flipped_byte_is_caught_at_its_record() {
    let c = capture(8);
    let data = bytes(&c);
    let starts = record_offsets(&data);
    for at in 0..data.len() {
        let mut bad = data.clone();
        bad[at] ^= 0x20;
        let (ok, err) = read_partial(&bad);
        let err = err.unwrap_or_else(|| panic!("flip at {at} went unnoticed"));
        let offset = err.offset().expect("reading errors carry an offset");
        let rec = starts
            .iter()
            .rev()
            .find(|&&s| s <= at as u64)
            .copied()
            .unwrap_or(0);
        assert!(offset <= at as u64, "flip at {at}: {err}");
        assert!(offset >= rec.min(starts[0]), "flip at {at}: {err}");
        assert!(intact(&ok, &c.ticks), "flip at {at}");
        assert!(!err.to_string().is_empty());
    }
}

fn header_bytes() -> Vec<u8> {
    let w = CaptureWriter::new(
        Vec::new(),
        &CaptureHeader::new("g", "1", 60, schema()),
        options(),
    )
    .unwrap();
    let mut v = w.finish().unwrap();
    v.truncate(record_offsets(&v)[0] as usize); // drop the end record
    v
}

/// A record with a valid checksum, so the reader gets past it.
fn record(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut r = vec![kind];
    let mut n = body.len() as u64;
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        r.push(if n > 0 { b | 0x80 } else { b });
        if n == 0 {
            break;
        }
    }
    r.extend_from_slice(body);
    let sum = xxhash_rust::xxh3::xxh3_64(&r) as u32;
    r.extend_from_slice(&sum.to_le_bytes());
    r
}

#[test]
fn crafted_records_get_typed_errors() {
    let h = header_bytes();
    let at = h.len() as u64;
    let read = |tail: &[u8]| {
        let mut d = h.clone();
        d.extend_from_slice(tail);
        read_partial(&d).1.unwrap()
    };
    // A length far past the limit: refused before any allocation.
    assert_eq!(
        read(&[1, 0xff, 0xff, 0xff, 0xff, 0x0f]),
        CaptureError::RecordTooLarge {
            offset: at,
            len: u64::from(u32::MAX),
            limit: 2 << 20
        }
    );
    assert!(matches!(
        read(&[1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
        CaptureError::RecordTooLarge { len: 0, .. }
    ));
    assert_eq!(
        read(&record(7, b"??")),
        CaptureError::UnknownRecord {
            offset: at,
            kind: 7
        }
    );
    assert!(matches!(
        read(&record(2, &[1, 0, 0, 0, 0])),
        CaptureError::BadRecord { offset, .. } if offset == at
    ));
    assert!(matches!(
        read(&record(1, &[5, 0x0f])),
        CaptureError::Packet { offset, error: DecodeError::UnsupportedVersion { version: 15 } } if offset == at
    ));
    assert_eq!(
        read(&record(3, &[4])),
        CaptureError::TickCount {
            offset: at,
            expected: 4,
            actual: 0
        }
    );
    let end = record(3, &[0]);
    let mut tail = end.clone();
    tail.push(0);
    assert_eq!(
        read(&tail),
        CaptureError::TrailingBytes {
            offset: at + end.len() as u64
        }
    );
    // Extension records (kind >= 0x80) are skipped.
    let mut tail = record(0x80, b"future");
    tail.extend_from_slice(&end);
    let mut d = h.clone();
    d.extend_from_slice(&tail);
    assert_eq!(read_partial(&d), (Vec::new(), None));
}

#[test]
fn header_damage_and_limits() {
    let data = bytes(&capture(2));
    assert_eq!(read_partial(b"GIF89a..").1, Some(CaptureError::BadMagic));
    assert_eq!(
        read_partial(&data[..5]).1,
        Some(CaptureError::Truncated {
            offset: 0,
            available: 5
        })
    );
    let mut v = data.clone();
    v[8] = 3;
    assert_eq!(
        read_partial(&v).1,
        Some(CaptureError::UnsupportedVersion { version: 3 })
    );
    let mut v = data.clone();
    v[9] = 1;
    assert_eq!(
        read_partial(&v).1,
        Some(CaptureError::ReservedBits { flags: 1 })
    );
    let small = CaptureLimits {
        max_header_bytes: 16,
        ..Default::default()
    };
    assert!(matches!(
        CaptureReader::with_limits(&data[..], small).map(|_| ()),
        Err(CaptureError::HeaderTooLarge { limit: 16, .. })
    ));
    let tiny = CaptureLimits {
        max_record_bytes: 8,
        ..Default::default()
    };
    let r = CaptureReader::with_limits(&data[..], tiny).unwrap();
    let errs: Vec<_> = r.ticks().filter_map(Result::err).collect();
    assert!(matches!(
        errs[..],
        [CaptureError::RecordTooLarge { limit: 8, .. }]
    ));
}

#[test]
fn writer_refuses_misuse() {
    let h = CaptureHeader::new("g", "1", 60, schema());
    let mut w = CaptureWriter::new(Vec::new(), &h, options()).unwrap();
    let sent = SentRecord {
        client: 1,
        sequence: 1,
        baseline: None,
        prior: None,
        bytes: 0,
    };
    assert_eq!(w.sent(&sent), Err(CaptureError::NoTick));
    let s = Snapshot::new(&schema());
    w.tick(5, &s).unwrap();
    assert_eq!(
        w.tick(5, &s),
        Err(CaptureError::TickOrder {
            previous: 5,
            tick: 5
        })
    );
    let other = Schema::builder()
        .entity("x")
        .field("a", Primitive::U8, 1)
        .build()
        .unwrap();
    assert!(matches!(
        w.tick(6, &Snapshot::new(&other)),
        Err(CaptureError::Encode(_))
    ));
    let long = "x".repeat(256);
    assert!(matches!(
        CaptureWriter::new(
            Vec::new(),
            &CaptureHeader::new(&long, "1", 60, schema()),
            options()
        ),
        Err(CaptureError::BadName { .. })
    ));
    // A capture without its end record reads as truncated after its ticks.
    let mut w = CaptureWriter::new(Vec::new(), &h, options()).unwrap();
    w.tick(1, &s).unwrap();
    w.flush().unwrap();
    assert_eq!(w.ticks(), 1);
}

#[test]
fn capture_thread_round_trip() {
    let c = capture(10);
    let mut t = CaptureThread::spawn(Vec::new(), &c.header, options(), 64).unwrap();
    for tick in &c.ticks {
        assert!(t.tick(tick.tick, Arc::new(tick.snapshot.clone())));
        for s in &tick.sent {
            assert!(t.sent(*s));
        }
    }
    assert_eq!(t.dropped(), 0);
    let data = t.finish().unwrap();
    assert_eq!(
        Capture::read(&data[..], CaptureLimits::default()).unwrap(),
        c
    );
}

/// Fails once (disk full) part-way through a write at byte `fail_at`, then
/// accepts writes again (space freed).
struct FullOnce {
    out: Vec<u8>,
    fail_at: usize,
    failed: bool,
}

impl std::io::Write for FullOnce {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.failed && self.out.len() + buf.len() > self.fail_at {
            let take = self.fail_at - self.out.len();
            if take > 0 {
                self.out.extend_from_slice(&buf[..take]);
                return Ok(take);
            }
            self.failed = true;
            return Err(std::io::ErrorKind::StorageFull.into());
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_write_fails_every_later_call() {
    let c = capture(6);
    let whole = bytes(&c);
    let offsets = record_offsets(&whole);
    // Fail half-way through the fourth record; the caller carries on.
    let fail_at = ((offsets[3] + offsets[4]) / 2) as usize;
    let sink = FullOnce {
        out: Vec::new(),
        fail_at,
        failed: false,
    };
    let mut w = CaptureWriter::new(sink, &c.header, options()).unwrap();
    let mut failed = false;
    for t in &c.ticks {
        let mut r = w.tick(t.tick, &t.snapshot);
        for s in &t.sent {
            r = r.and_then(|()| w.sent(s));
        }
        if failed {
            assert!(matches!(r, Err(CaptureError::Io { .. })), "{r:?}");
        }
        failed |= r.is_err();
    }
    assert!(failed);
    let Err(CaptureError::Io { .. }) = w.finish() else {
        panic!("finish reported a capture holding a torn record as written");
    };
}

#[test]
fn sends_of_a_tick_that_failed_are_refused_not_given_to_the_tick_before() {
    let h = CaptureHeader::new("g", "1", 60, schema());
    let mut w = CaptureWriter::new(Vec::new(), &h, options()).unwrap();
    let sent = SentRecord {
        client: 1,
        sequence: 6,
        baseline: Some(5),
        prior: None,
        bytes: 9,
    };
    let s = Snapshot::new(&schema());
    w.tick(5, &s).unwrap();
    let other = Schema::builder()
        .entity("x")
        .field("a", Primitive::U8, 1)
        .build()
        .unwrap();
    assert!(matches!(
        w.tick(6, &Snapshot::new(&other)),
        Err(CaptureError::Encode(_))
    ));
    assert_eq!(w.sent(&sent), Err(CaptureError::NoTick));
    w.tick(7, &s).unwrap();
    let later = SentRecord {
        sequence: 7,
        ..sent
    };
    w.sent(&later).unwrap();
    let c = Capture::read(&w.finish().unwrap()[..], CaptureLimits::default()).unwrap();
    let sends: Vec<_> = c.ticks.iter().map(|t| (t.tick, t.sent.clone())).collect();
    assert_eq!(sends, vec![(5, vec![]), (7, vec![later])]);
}

#[test]
fn a_header_a_default_reader_would_refuse_is_refused_by_the_writer() {
    // 40 types x 256 fields with 200-byte names: a schema text of about
    // 2.3 MB, over the default 1 MiB header limit.
    let mut b = Schema::builder();
    for t in 0..40 {
        b = b.entity(&format!("type{t:03}"));
        for f in 0..256 {
            b = b.field(&format!("{f:0>200}"), Primitive::U8, 1);
        }
    }
    let schema = b.build().unwrap();
    let header = CaptureHeader::new("game", "1", 60, schema);
    let r = CaptureWriter::new(Vec::new(), &header, options());
    assert!(matches!(
        r.map(|_| ()),
        Err(CaptureError::HeaderTooLarge { limit, .. }) if limit == CaptureLimits::default().max_header_bytes
    ));
}

/// A tick packet's header in the layout of version-1 captures: version 2
/// in byte 0, bit 6 `IDS` with the ids after the sequence (on every
/// keyframe, and on a delta when `delta_ids`), varint distances.
fn old_header(h: &tickpack::PacketHeader, delta_ids: bool) -> Vec<u8> {
    let mut b0 = 0x02u8;
    let ids = h.baseline.is_none() || delta_ids;
    let ext = h.checksum.width() as u8 | if h.prior.is_some() { 0x04 } else { 0 };
    for (on, bit) in [
        (h.baseline.is_some(), 0x10),
        (h.dictionary, 0x20),
        (ids, 0x40),
        (ext != 0, 0x80),
    ] {
        if on {
            b0 |= bit;
        }
    }
    let mut out = vec![b0];
    out.extend_from_slice(&h.sequence.to_le_bytes());
    if ext != 0 {
        out.push(ext);
    }
    if ids {
        out.extend_from_slice(&schema().id().to_le_bytes());
    }
    let varint = |out: &mut Vec<u8>, mut v: u16| loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        out.push(if v > 0 { b | 0x80 } else { b });
        if v == 0 {
            break;
        }
    };
    if let Some(b) = h.baseline {
        varint(&mut out, h.sequence.wrapping_sub(b));
    }
    if let (Some(b), Some(p)) = (h.baseline, h.prior) {
        varint(&mut out, b.wrapping_sub(p));
    }
    match h.checksum {
        tickpack::Checksum::None => {}
        tickpack::Checksum::U8(c) => out.push(c),
        tickpack::Checksum::U16(c) => out.extend_from_slice(&c.to_le_bytes()),
    }
    out
}

/// A capture of version 1 (recorded before format 3's header: its tick
/// packets carry version 2, bit 6 `IDS`, varint distances) reads back
/// whole: a user's old captures are not lost.
#[test]
fn captures_of_version_1_read_back() {
    let c = capture(20);
    let data = bytes(&c);
    let offsets = record_offsets(&data);
    // The preamble says version 1; the header checksum covers it.
    let start = offsets[0] as usize;
    let mut old = data[..start].to_vec();
    old[8] = 1;
    let sum = xxhash_rust::xxh3::xxh3_64(&old[..start - 4]) as u32;
    old[start - 4..start].copy_from_slice(&sum.to_le_bytes());
    let (mut patched, mut keyframes, mut delta_ids) = (0, 0, false);
    for w in offsets.windows(2) {
        let rec = &data[w[0] as usize..w[1] as usize];
        let (kind, mut pos, mut len, mut shift) = (rec[0], 1, 0usize, 0);
        loop {
            let b = rec[pos];
            pos += 1;
            len |= usize::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        let mut body = rec[pos..pos + len].to_vec();
        if kind == 1 {
            let mut at = 0;
            while body[at] & 0x80 != 0 {
                at += 1;
            }
            at += 1;
            let (h, n) = tickpack::PacketHeader::parse(&body[at..]).unwrap();
            // One delta carries the ids as well, as the old layout allowed.
            let ids = h.baseline.is_some() && !delta_ids;
            body.splice(at..at + n, old_header(&h, ids));
            patched += 1;
            keyframes += usize::from(h.baseline.is_none());
            delta_ids |= ids;
        }
        old.extend_from_slice(&record(kind, &body));
    }
    old.extend_from_slice(&data[*offsets.last().unwrap() as usize..]);
    assert_eq!(patched, 20);
    assert!(keyframes > 0 && delta_ids);
    assert_ne!(old, data);
    let (ok, err) = read_partial(&old);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(ok, c.ticks);
    // The same bytes claiming version 2 are not read as version 1's.
    let mut claimed = old.clone();
    claimed[8] = 2;
    let sum = xxhash_rust::xxh3::xxh3_64(&claimed[..start - 4]) as u32;
    claimed[start - 4..start].copy_from_slice(&sum.to_le_bytes());
    assert!(read_partial(&claimed).1.is_some());
}
