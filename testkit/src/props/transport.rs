//! Fragment reassembly and chunk transfer under hostile datagrams.

use super::*;

pub(super) fn fragment_reassembly_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use std::time::Duration;
    use tickpack_transport::{FragmentConfig, FragmentHeader, Fragmenter, Reassembler};

    let config = FragmentConfig {
        mtu: u.int_in_range(0..=300usize)?,
        max_parts: if u.arbitrary()? {
            u16::MAX
        } else {
            u.int_in_range(0..=64u16)?
        },
        max_piles: u.int_in_range(0..=8usize)?,
        max_buffered_bytes: u.int_in_range(0..=40_000usize)?,
        max_age: Duration::from_millis(u.int_in_range(0..=500u64)?),
    };
    let mut f = Fragmenter::new(config);
    let mut r = Reassembler::new(config);
    let mut flight: Vec<Vec<u8>> = Vec::new();
    let mut now = Duration::ZERO;
    let max_out = config.max_packet_len();
    for _ in 0..u.int_in_range(0..=300usize)? {
        if u.is_empty() {
            break;
        }
        match u.int_in_range(0..=6u8)? {
            0 => {
                let len = u.int_in_range(0..=max_out.min(6000))?;
                let packet = vec![u.arbitrary::<u8>()?; len];
                if let Ok(parts) = f.split(&packet) {
                    assert!(parts.iter().all(|p| p.len() <= config.mtu.max(7)));
                    flight.extend(parts);
                }
            }
            1 | 2 if !flight.is_empty() => {
                let i = u.choose_index(flight.len())?;
                let d = if u.arbitrary()? {
                    flight.swap_remove(i)
                } else {
                    flight[i].clone()
                };
                if let Ok(Some(p)) = r.handle(&d, now) {
                    assert!(p.len() <= max_out, "packet above the limit");
                }
            }
            3 if !flight.is_empty() => {
                let i = u.choose_index(flight.len())?;
                let mut d = flight.swap_remove(i);
                let pos = u.int_in_range(0..=5usize)?;
                if let Some(b) = d.get_mut(pos) {
                    *b = u.arbitrary()?;
                }
                let _ = r.handle(&d, now);
            }
            4 => {
                let mut d = Vec::new();
                FragmentHeader {
                    sequence: u.arbitrary()?,
                    index: u.arbitrary()?,
                    count: u.arbitrary()?,
                }
                .write(&mut d);
                let len = u.int_in_range(0..=400usize)?;
                d.resize(d.len() + len, 0xee);
                let _ = r.handle(&d, now);
            }
            5 => {
                let d: Vec<u8> = u.arbitrary()?;
                let _ = r.handle(&d, now);
            }
            _ => now += Duration::from_millis(u.int_in_range(0..=400u64)?),
        }
        assert!(
            r.buffered_bytes() <= config.max_buffered_bytes,
            "over byte cap"
        );
        assert!(r.pile_count() <= config.max_piles.max(1), "over pile cap");
    }

    // Honest phase.
    let config = FragmentConfig {
        mtu: u.int_in_range(7..=300usize)?,
        max_parts: 64,
        max_piles: 16,
        max_buffered_bytes: 1 << 20,
        max_age: Duration::from_secs(10),
    };
    let mut f = Fragmenter::new(config);
    let mut r = Reassembler::new(config);
    let n = u.int_in_range(1..=16usize)?;
    let mut packets = Vec::new();
    let mut parts: Vec<Vec<u8>> = Vec::new();
    for k in 0..n {
        let len = u.int_in_range(0..=config.max_packet_len().min(3000))?;
        let mut p = (k as u16).to_le_bytes().to_vec();
        p.resize(len.max(2), u.arbitrary()?);
        match f.split(&p) {
            Ok(ps) => parts.extend(ps),
            Err(e) => panic!("honest split failed: {e}"),
        }
        packets.push(p);
    }
    for _ in 0..u.int_in_range(0..=parts.len())? {
        let i = u.choose_index(parts.len())?;
        parts.push(parts[i].clone());
    }
    for i in (1..parts.len()).rev() {
        let j = u.int_in_range(0..=i)?;
        parts.swap(i, j);
    }
    let mut got: Vec<Option<Vec<u8>>> = vec![None; n];
    for d in &parts {
        match r.handle(d, Duration::ZERO) {
            Ok(Some(p)) => {
                let k = p
                    .first_chunk::<2>()
                    .map(|b| usize::from(u16::from_le_bytes(*b)))
                    .unwrap_or(usize::MAX);
                assert!(k < n, "unknown packet");
                assert!(got[k].is_none(), "packet delivered twice");
                got[k] = Some(p);
            }
            Ok(None) => {}
            Err(e) => panic!("honest part rejected: {e}"),
        }
    }
    for (k, p) in packets.into_iter().enumerate() {
        assert_eq!(got[k].as_ref(), Some(&p), "packet {k} not reassembled");
    }
    assert_eq!(r.buffered_bytes(), 0);
    Ok(())
}

pub(super) fn chunk_receiver_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use std::time::Duration;
    use tickpack_transport::chunk::{MAX_ACK_PACKET, SLICE_HEADER_LEN, SLICE_PACKET};
    use tickpack_transport::{ChunkConfig, ChunkReceiver, ChunkSender, MAX_CHUNK_SIZE};

    // Hostile phase.
    let limit = u.int_in_range(0..=MAX_CHUNK_SIZE)?;
    let mut r = ChunkReceiver::new(limit);
    let mut s = ChunkSender::new(ChunkConfig {
        bandwidth: 1_000_000,
        ..ChunkConfig::default()
    });
    let _ = s.send(vec![7; u.int_in_range(1..=20_000usize)?]);
    let mut now = Duration::ZERO;
    for _ in 0..u.int_in_range(0..=100usize)? {
        if u.is_empty() {
            break;
        }
        match u.int_in_range(0..=4u8)? {
            0 => {
                let d: Vec<u8> = u.arbitrary()?;
                let _ = r.handle_slice(&d);
            }
            1 => {
                // Header (chunk id, transfer, slice id, count) and size.
                let mut d = vec![SLICE_PACKET];
                d.extend_from_slice(&u.arbitrary::<[u8; SLICE_HEADER_LEN + 1]>()?);
                let len = u.int_in_range(0..=1100usize)?;
                d.resize(d.len() + len, 3);
                let _ = r.handle_slice(&d);
            }
            2 => {
                let d: Vec<u8> = u.arbitrary()?;
                let _ = s.handle_ack(&d);
            }
            3 => {
                now += Duration::from_millis(u.int_in_range(0..=200u64)?);
                while let Some(p) = s.poll_transmit(now) {
                    let _ = r.handle_slice(&p);
                }
            }
            _ => {
                if let Some(a) = r.poll_transmit() {
                    assert!(a.len() <= MAX_ACK_PACKET, "ack too long");
                    let _ = s.handle_ack(&a);
                }
            }
        }
        if let Some(c) = r.poll_chunk() {
            assert!(c.len() <= limit, "chunk above the limit");
        }
    }

    // Honest phase over a link the input mangles.
    let len = u.int_in_range(1..=20_000usize)?;
    let fill: u8 = u.arbitrary()?;
    let chunk: Vec<u8> = (0..len).map(|i| fill.wrapping_add(i as u8)).collect();
    let mut s = ChunkSender::new(ChunkConfig {
        bandwidth: 200_000,
        initial_burst: u.arbitrary()?,
        ..ChunkConfig::default()
    });
    let mut r = ChunkReceiver::new(MAX_CHUNK_SIZE);
    if s.send(chunk.clone()).is_err() {
        panic!("honest chunk refused");
    }
    let mut to_r: Vec<Vec<u8>> = Vec::new();
    let mut to_s: Vec<Vec<u8>> = Vec::new();
    let mut now = Duration::ZERO;
    let mut got = None;
    for step in 0..5_000u32 {
        // For the first 3 simulated seconds, while input lasts, it decides
        // drops, duplicates and reordering; then the link is clean (a link
        // that drops everything forever cannot complete anything).
        let mangle = step < 300 && !u.is_empty();
        now += Duration::from_millis(10);
        while let Some(p) = s.poll_transmit(now) {
            let fate = if mangle { u.int_in_range(0..=3u8)? } else { 0 };
            match fate {
                1 => {}
                2 => {
                    to_r.push(p.clone());
                    to_r.push(p);
                }
                _ => to_r.push(p),
            }
        }
        if mangle && to_r.len() > 1 && u.arbitrary()? {
            to_r.reverse();
        }
        for p in to_r.drain(..) {
            if let Err(e) = r.handle_slice(&p) {
                panic!("honest slice rejected: {e}");
            }
        }
        if let Some(c) = r.poll_chunk() {
            got = Some(c);
        }
        if let Some(a) = r.poll_transmit() {
            if !(mangle && u.ratio(1, 3)?) {
                to_s.push(a);
            }
        }
        if mangle && to_s.len() > 1 && u.arbitrary()? {
            to_s.reverse();
        }
        for a in to_s.drain(..) {
            if let Err(e) = s.handle_ack(&a) {
                panic!("honest ack rejected: {e}");
            }
        }
        if got.is_some() && !s.is_sending() {
            break;
        }
        assert!(step < 4_999, "honest transfer did not complete");
    }
    assert_eq!(got.as_ref(), Some(&chunk), "chunk differs");
    Ok(())
}
