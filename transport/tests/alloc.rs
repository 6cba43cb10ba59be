//! Fragment reassembly memory shown with a counting allocator: a peer
//! announcing 65535 parts makes us allocate per received part, and the
//! total stays under the configured cap.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tickpack_transport::{FragmentConfig, FragmentError, FragmentHeader, Reassembler};

use tickpack_testkit::counting::{peak_of, Counting, SERIAL};

#[global_allocator]
static A: Counting = Counting;

fn part(sequence: u16, index: u16, count: u16, len: usize) -> Vec<u8> {
    let mut d = Vec::new();
    FragmentHeader {
        sequence,
        index,
        count,
    }
    .write(&mut d);
    d.resize(d.len() + len, 0x5a);
    d
}

/// A receiver that allows 65535 parts per packet (the worst a `u16` count
/// can announce) but caps buffered bytes at 256 KiB.
fn permissive() -> FragmentConfig {
    FragmentConfig {
        max_parts: u16::MAX,
        max_buffered_bytes: 256 * 1024,
        ..FragmentConfig::default()
    }
}

#[test]
fn one_part_announcing_65535_allocates_one_part() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut r = Reassembler::new(permissive());
    let d = part(9, 12_345, u16::MAX, 1194);
    let (res, peak) = peak_of(|| r.handle(&d, Duration::ZERO));
    assert_eq!(res, Ok(None));
    eprintln!("one part of 65535 announced: peak heap growth {peak} bytes");
    // 65535 pre-allocated slots would be ~1 MiB even as `Option<Box<_>>`.
    assert!(peak < 4 * 1024, "peak {peak}");
}

#[test]
fn flood_of_65535_part_packets_stays_under_cap() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = permissive();
    let mut r = Reassembler::new(cfg);
    let parts: Vec<Vec<u8>> = (0..20_000u32)
        .map(|i| part((i % 8) as u16, (i * 7919 % 65_535) as u16, u16::MAX, 1194))
        .collect();
    let (max_buffered, peak) = peak_of(|| {
        let mut max_buffered = 0;
        for (i, d) in parts.iter().enumerate() {
            let now = Duration::from_millis(i as u64);
            match r.handle(d, now) {
                Ok(None) => {}
                other => panic!("unexpected {other:?}"),
            }
            assert!(r.buffered_bytes() <= cfg.max_buffered_bytes);
            assert!(r.pile_count() <= cfg.max_piles);
            max_buffered = max_buffered.max(r.buffered_bytes());
        }
        max_buffered
    });
    eprintln!(
        "20000 parts announcing 65535: max charged {max_buffered} B, peak heap growth {peak} B, cap {} B, stats {:?}",
        cfg.max_buffered_bytes,
        r.stats()
    );
    assert!(
        max_buffered > cfg.max_buffered_bytes * 9 / 10,
        "cap not reached"
    );
    assert!(peak <= cfg.max_buffered_bytes, "peak {peak}");
}

#[test]
fn default_config_refuses_65535_without_allocating() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut r = Reassembler::new(FragmentConfig::default());
    let d = part(1, 0, u16::MAX, 100);
    let (res, peak) = peak_of(|| r.handle(&d, Duration::ZERO));
    assert!(matches!(res, Err(FragmentError::TooManyParts { .. })));
    // The allocator counts the whole process: the test harness may allocate
    // a few bytes on another thread meanwhile.
    assert!(peak < 256, "refusing allocated {peak} bytes");
}
