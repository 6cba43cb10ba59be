//! Fragmentation and reassembly over a simulated link that loses,
//! duplicates and reorders datagrams.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use tickpack_testkit::rng::SplitMix64;
use tickpack_transport::{FragmentConfig, FragmentError, FragmentHeader, Fragmenter, Reassembler};

/// xorshift64*: deterministic, no dependency.
fn packet(id: u32, len: usize, rng: &mut SplitMix64) -> Vec<u8> {
    let mut p = id.to_le_bytes().to_vec();
    while p.len() < len.max(4) {
        p.push(rng.next_u64() as u8);
    }
    p
}

/// What a simulation saw: packets sent and delivered by id, the ids whose
/// parts all arrived, and the receiver.
struct Sim {
    sent: BTreeMap<u32, Vec<u8>>,
    delivered: BTreeMap<u32, Vec<u8>>,
    complete: Vec<u32>,
    r: Reassembler,
}

/// Sends `n` packets through a link with the given loss, duplication and
/// reorder window.
fn simulate(seed: u64, n: u32, loss_pct: u64, dup_pct: u64, window: usize) -> Sim {
    let cfg = FragmentConfig::default();
    let mut rng = SplitMix64::new(seed);
    let mut f = Fragmenter::new(cfg);
    let mut r = Reassembler::new(cfg);
    let mut sent = BTreeMap::new();
    let mut delivered = BTreeMap::new();
    let mut arrived_parts: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut in_flight: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut now = Duration::ZERO;
    for id in 0..n {
        let len = match rng.below(4) {
            0 => 1 + rng.below(1000) as usize,
            1 => 1 + rng.below(5000) as usize,
            _ => 1000 + rng.below(30_000) as usize,
        };
        let p = packet(id, len, &mut rng);
        let parts = f.split(&p).unwrap();
        arrived_parts.insert(id, (parts.len(), 0));
        sent.insert(id, p);
        for d in parts {
            if rng.below(100) < loss_pct {
                continue;
            }
            if rng.below(100) < dup_pct {
                in_flight.push((id, d.clone()));
            }
            in_flight.push((id, d));
        }
        // Reorder within a window, then deliver what falls out of it.
        for i in (1..in_flight.len()).rev() {
            let j = i.saturating_sub(rng.below(window as u64 + 1) as usize);
            in_flight.swap(i, j);
        }
        while in_flight.len() > window {
            let (pid, d) = in_flight.remove(0);
            deliver(&mut r, &d, now, pid, &mut arrived_parts, &mut delivered);
        }
        now += Duration::from_millis(16);
    }
    for (pid, d) in std::mem::take(&mut in_flight) {
        deliver(&mut r, &d, now, pid, &mut arrived_parts, &mut delivered);
    }
    let complete = arrived_parts
        .iter()
        .filter(|(_, &(total, got))| got >= total)
        .map(|(&id, _)| id)
        .collect();
    Sim {
        sent,
        delivered,
        complete,
        r,
    }
}

fn deliver(
    r: &mut Reassembler,
    d: &[u8],
    now: Duration,
    pid: u32,
    arrived: &mut BTreeMap<u32, (usize, usize)>,
    delivered: &mut BTreeMap<u32, Vec<u8>>,
) {
    FragmentHeader::parse(d).unwrap();
    if let Some(e) = arrived.get_mut(&pid) {
        e.1 += 1;
    }
    if let Some(p) = r.handle(d, now).unwrap() {
        let id = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
        assert_eq!(id, pid, "delivered by the part of another packet");
        assert!(
            delivered.insert(id, p).is_none(),
            "packet {id} delivered twice"
        );
    }
}

#[test]
fn clean_link_delivers_everything() {
    let Sim {
        sent, delivered, r, ..
    } = simulate(1, 300, 0, 0, 0);
    assert_eq!(sent, delivered);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn reorder_and_duplication_deliver_everything_once() {
    let Sim {
        sent, delivered, r, ..
    } = simulate(2, 300, 0, 20, 12);
    assert_eq!(sent, delivered);
    assert!(r.stats().duplicates > 0);
    assert_eq!(r.pile_count(), 0);
}

#[test]
fn loss_delivers_exactly_the_complete_packets() {
    let Sim {
        sent,
        delivered,
        complete,
        r,
    } = simulate(3, 500, 3, 10, 8);
    // Every packet whose parts all arrived (counting duplicates, so check
    // content instead of counts alone) is delivered intact, nothing else.
    for (id, p) in &delivered {
        assert_eq!(sent.get(id), Some(p));
    }
    for id in delivered.keys() {
        assert!(complete.contains(id));
    }
    let lost = sent.len() - delivered.len();
    assert!(lost > 0 && delivered.len() > 300, "lost {lost}");
    assert!(r.pile_count() <= r.config().max_piles);
    assert!(r.buffered_bytes() <= r.config().max_buffered_bytes);
    eprintln!(
        "delivered {} of {} packets, stats {:?}",
        delivered.len(),
        sent.len(),
        r.stats()
    );
}

#[test]
fn hostile_headers_give_typed_errors() {
    let cfg = FragmentConfig::default();
    let mut r = Reassembler::new(cfg);
    let now = Duration::ZERO;
    let part = |sequence, index, count, len: usize| {
        let mut d = Vec::new();
        FragmentHeader {
            sequence,
            index,
            count,
        }
        .write(&mut d);
        d.resize(d.len() + len, 0xab);
        d
    };
    assert_eq!(
        r.handle(&part(1, 0, 0, 10), now),
        Err(FragmentError::ZeroCount { sequence: 1 })
    );
    assert_eq!(
        r.handle(&part(1, 5, 5, 10), now),
        Err(FragmentError::BadIndex {
            sequence: 1,
            index: 5,
            count: 5
        })
    );
    assert_eq!(
        r.handle(&part(1, 0, u16::MAX, 10), now),
        Err(FragmentError::TooManyParts {
            sequence: 1,
            count: u16::MAX,
            limit: 256
        })
    );
    assert_eq!(
        r.handle(&part(1, 0, 2, 1195), now),
        Err(FragmentError::PartTooLarge {
            len: 1195,
            limit: 1194
        })
    );
    assert_eq!(r.handle(&part(1, 0, 3, 10), now), Ok(None));
    // A conflicting count discards the partial packet and starts over.
    assert_eq!(r.handle(&part(1, 1, 2, 10), now), Ok(None));
    assert_eq!(r.stats().conflicts, 1);
    assert_eq!(r.pile_count(), 1);
    // Fragmenter refuses what the receiver would refuse.
    let mut f = Fragmenter::new(cfg);
    assert_eq!(
        f.split(&vec![0; cfg.max_packet_len() + 1]),
        Err(FragmentError::PacketTooLarge {
            len: cfg.max_packet_len() + 1,
            limit: cfg.max_packet_len()
        })
    );
    assert_eq!(f.split(&vec![0; cfg.max_packet_len()]).unwrap().len(), 256);
    assert_eq!(r.stats().rejected, 4);
}

#[test]
fn forged_far_ahead_sequence_does_not_block_honest_packets() {
    let cfg = FragmentConfig::default();
    let mut f = Fragmenter::new(cfg);
    let mut r = Reassembler::new(cfg);
    let mut forged = Vec::new();
    FragmentHeader {
        sequence: 40_000,
        index: 0,
        count: 1,
    }
    .write(&mut forged);
    forged.push(1);
    assert_eq!(r.handle(&forged, Duration::ZERO).unwrap(), Some(vec![1]));
    for n in 0..100u32 {
        let p = vec![n as u8; 3000];
        let mut out = None;
        for d in f.split(&p).unwrap() {
            out = out.or(r.handle(&d, Duration::ZERO).unwrap());
        }
        assert_eq!(out, Some(p));
    }
}

/// A forged part with `count` parts for `sequence`, one byte of payload.
fn forged_part(sequence: u16, index: u16, count: u16) -> Vec<u8> {
    let mut d = Vec::new();
    FragmentHeader {
        sequence,
        index,
        count,
    }
    .write(&mut d);
    d.push(0xee);
    d
}

#[test]
fn a_forged_one_part_fragment_does_not_make_the_real_packet_a_duplicate() {
    let cfg = FragmentConfig::default();
    let mut f = Fragmenter::new(cfg);
    let mut r = Reassembler::new(cfg);
    let next = f.next_sequence();
    assert_eq!(
        r.handle(&forged_part(next, 0, 1), Duration::ZERO).unwrap(),
        Some(vec![0xee])
    );
    let p = vec![7u8; 3000];
    let mut out = None;
    for d in f.split(&p).unwrap() {
        out = out.or(r.handle(&d, Duration::ZERO).unwrap());
    }
    assert_eq!(out, Some(p));
}

#[test]
fn a_forged_part_claiming_200_parts_does_not_block_the_real_ones() {
    let cfg = FragmentConfig::default();
    let mut f = Fragmenter::new(cfg);
    let mut r = Reassembler::new(cfg);
    let next = f.next_sequence();
    assert_eq!(
        r.handle(&forged_part(next, 5, 200), Duration::ZERO),
        Ok(None)
    );
    let p = vec![9u8; 3000];
    let mut out = None;
    for d in f.split(&p).unwrap() {
        out = out.or(r.handle(&d, Duration::from_millis(1)).unwrap());
    }
    assert_eq!(out, Some(p), "the real packet waited for max_age");
    assert_eq!(r.stats().conflicts, 1);
    assert_eq!(r.buffered_bytes(), 0);
}
