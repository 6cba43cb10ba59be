//! Output hygiene, packet headers, entity-id subsets and block streams.

use super::*;

pub(super) fn no_output_leak_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let schema = arb_schema(u, 2, 3, 2)?;
    let limits = if u.ratio(1, 4)? {
        arb_tight_limits(u)?
    } else {
        Limits::default()
    };
    let refs = arb_refs(u, &schema, false)?;
    let dict = if u.ratio(1, 3)? {
        Some(arb_dictionary(u, DICT_ID, refs.base.as_ref())?)
    } else {
        None
    };
    let mut fresh = Decoder::new(schema.clone());
    let mut used = Decoder::new(schema.clone());
    for d in [&mut fresh, &mut used] {
        d.set_limits(limits);
        if let Some(dict) = &dict {
            if d.add_dictionary(dict).is_err() {
                return Ok(());
            }
        }
    }

    // Dirty the second decoder's scratch with another packet first, a
    // predicted one when there is a prior.
    let other = match &refs.base {
        Some(b) => evolve_snapshot(u, &schema, b, true)?,
        None => arb_snapshot(u, &schema, true)?,
    };
    let mut enc = Encoder::new(schema.clone());
    enc.set_limits(limits);
    let seq: u16 = u.arbitrary()?;
    let mut p = Vec::new();
    let r = match (&refs.base, &refs.prior) {
        (Some(b), Some(pr)) => enc.encode_to_vec(
            &other,
            seq,
            tickpack::Reference::predicted(
                Baseline {
                    sequence: seq.wrapping_sub(1),
                    snapshot: b,
                },
                Baseline {
                    sequence: seq.wrapping_sub(2),
                    snapshot: pr,
                },
            ),
            &mut p,
        ),
        _ => enc.encode_to_vec(&other, seq, None, &mut p),
    };
    if r.is_ok() {
        let b = refs.base.as_ref().map(|snapshot| Baseline {
            sequence: seq.wrapping_sub(1),
            snapshot,
        });
        let pr = refs.prior.as_ref().map(|snapshot| Baseline {
            sequence: seq.wrapping_sub(2),
            snapshot,
        });
        let mut s = Snapshot::default();
        if let Err(e) = used.decode_into(&p, tickpack::Reference::from(b).with_prior(pr), &mut s) {
            panic!("valid packet does not decode: {e:?}");
        }
    }
    let mut junk = arb_junk(u, &schema)?;

    let picks: [u8; 6] = u.arbitrary()?;
    let packet = arb_packet(u, &schema, &refs, dict.as_ref())?;
    let (baseline, prior) = refs.pick(picks, &packet);
    let mut out = Snapshot::default();
    let expected = fresh.decode_into(
        &packet,
        tickpack::Reference::from(baseline).with_prior(prior),
        &mut out,
    );
    let got = used.decode_into(
        &packet,
        tickpack::Reference::from(baseline).with_prior(prior),
        &mut junk,
    );
    assert_eq!(
        expected, got,
        "decoding into junk with a used decoder gives a different result"
    );
    match expected {
        Ok(_) => assert!(out == junk, "decoding into junk gives a different snapshot"),
        Err(_) => {
            assert!(
                junk == Snapshot::new(&schema),
                "output not left empty on error: {} entities, {} sections",
                junk.entity_count(),
                junk.sections().len()
            );
            assert!(out == junk, "fresh output not left empty on error");
        }
    }
    Ok(())
}

/// A snapshot full of junk: entities with 0xff records, for this schema or
/// another one (other section count and record sizes).
pub(super) fn arb_junk(u: &mut Unstructured<'_>, schema: &Schema) -> AResult<Snapshot> {
    let shape = match u.int_in_range(0u8..=3)? {
        0 => return Ok(Snapshot::default()),
        1 => schema.clone(),
        _ => arb_schema(u, 4, 3, 4)?,
    };
    let mut snap = Snapshot::new(&shape);
    for i in 0..shape.sections().len() {
        let rs = shape.sections()[i].record_size();
        let n = u.int_in_range(0u32..=40)?;
        let Some(sec) = snap.section_mut(i) else {
            break;
        };
        let mut ids = Vec::new();
        let mut recs = Vec::new();
        for id in 0..n {
            ids.push(id * 3);
            recs.extend(std::iter::repeat_n(0xff, rs));
        }
        if let Ok(s) = Section::from_parts(ids, recs, rs) {
            *sec = s;
        }
    }
    Ok(snap)
}

// ---------------------------------------------------------------------------
// header_roundtrip
// ---------------------------------------------------------------------------

pub(super) fn header_roundtrip_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let sequence: u16 = u.arbitrary()?;
    let distance = match u.int_in_range(0u8..=4)? {
        0 => None,
        1 => Some(1),
        2 => Some(MAX_BASELINE_DISTANCE),
        _ => Some(u.int_in_range(1..=MAX_BASELINE_DISTANCE)?),
    };
    let baseline = distance.map(|d| sequence.wrapping_sub(d));
    // Baseline and prior together stay within 32767 of the packet.
    let prior = match distance {
        Some(d) if d < MAX_BASELINE_DISTANCE && u.ratio(1, 2)? => {
            let room = MAX_BASELINE_DISTANCE - d;
            let p = match u.int_in_range(0u8..=3)? {
                0 => 1,
                1 => room,
                _ => u.int_in_range(1..=room)?,
            };
            baseline.map(|b| b.wrapping_sub(p))
        }
        _ => None,
    };
    let dictionary: bool = u.arbitrary()?;
    // Keyframes carry the ids, deltas never do.
    let ids = if baseline.is_none() {
        Some(PacketIds {
            schema_id: u.arbitrary()?,
            dictionary_id: if dictionary {
                Some(u.arbitrary()?)
            } else {
                None
            },
        })
    } else {
        None
    };
    let checksum = match u.int_in_range(0u8..=2)? {
        0 => Checksum::None,
        1 => Checksum::U8(u.arbitrary()?),
        _ => Checksum::U16(u.arbitrary()?),
    };
    let h = PacketHeader {
        sequence,
        baseline,
        prior,
        dictionary,
        model: u.arbitrary()?,
        ids,
        checksum,
    };
    assert_eq!(h.baseline_distance(), distance);
    let mut out = Vec::new();
    h.write(&mut out);
    assert!(out.len() <= MAX_HEADER_LEN, "{} header bytes", out.len());
    let n = out.len();
    assert_eq!(PacketHeader::parse(&out), Ok((h, n)), "write then parse");
    // Trailing bytes are not the header's business.
    let tail: u8 = u.arbitrary()?;
    out.extend(std::iter::repeat_n(tail, u.int_in_range(0..=4)?));
    assert_eq!(PacketHeader::parse(&out), Ok((h, n)), "with trailing bytes");
    // Every strict prefix is truncated.
    for cut in 0..n {
        assert!(
            matches!(
                PacketHeader::parse(&out[..cut]),
                Err(DecodeError::Truncated { .. })
            ),
            "prefix of {cut} bytes: {:?}",
            PacketHeader::parse(&out[..cut])
        );
    }

    // Block headers: write then parse is the identity (a last block other
    // than RLE takes the rest of the packet as its body).
    let b = BlockHeader {
        last: u.arbitrary()?,
        block_type: *u.choose(&[BlockType::Raw, BlockType::Rle, BlockType::Zstd])?,
        size: u.int_in_range(1..=MAX_BLOCK_CONTENT)?,
    };
    let mut out = Vec::new();
    b.write(&mut out);
    let n = out.len();
    assert!(n <= BLOCK_HEADER_LEN, "{n} block header bytes");
    if b.last && b.block_type != BlockType::Rle {
        out.resize(n + b.size, 0);
    }
    assert_eq!(BlockHeader::parse(&out), Ok((b, n)), "write then parse");
    // Parse then write reproduces the header bytes.
    let raw: [u8; 3] = u.arbitrary()?;
    if let Ok((h, n)) = BlockHeader::parse(&raw) {
        let mut again = Vec::new();
        h.write(&mut again);
        assert_eq!(&again[..], &raw[..n], "parse then write of {raw:?}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// subset_roundtrip
// ---------------------------------------------------------------------------

pub(super) fn subset_roundtrip_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    // Arbitrary bytes as a subset of an arbitrary universe.
    let universe = match u.int_in_range(0u8..=3)? {
        0 => u.int_in_range(0..=16)?,
        1 | 2 => u.int_in_range(0..=2000)?,
        _ => u.int_in_range(0..=1 << 16)?,
    };
    let split = u.int_in_range(0..=u.len())?;
    let bytes = u.bytes(split)?;
    let mut out = vec![7, 7, 7];
    if let Some(n) = set_decode(bytes, universe, &mut out) {
        assert!(n <= bytes.len(), "consumed {n} of {} bytes", bytes.len());
        check_subset(universe, &out);
        // What was read must survive a canonical round trip.
        check_subset_roundtrip(universe, &out);
    }

    // Arbitrary subsets: dense, sparse, runs.
    let universe = u.int_in_range(0..=5000usize)?;
    let mut members = Vec::new();
    if universe > 0 {
        match u.int_in_range(0u8..=4)? {
            0 => {
                for m in 0..universe as u32 {
                    if u.arbitrary::<bool>()? {
                        members.push(m);
                    }
                }
            }
            1 => members.extend(0..universe as u32),
            2 => {
                let mut m = u.int_in_range(0..=universe as u32)?;
                while (m as usize) < universe {
                    members.push(m);
                    m = m.saturating_add(
                        u.int_in_range(1..=u32::try_from(universe).unwrap_or(u32::MAX))?,
                    );
                }
            }
            _ => {
                let mut pos = u.int_in_range(0..=8u32)?;
                while (pos as usize) < universe {
                    let take = u.int_in_range(1..=64u32)?;
                    let end = pos.saturating_add(take).min(universe as u32);
                    members.extend(pos..end);
                    pos = end.saturating_add(u.int_in_range(1..=64u32)?);
                }
            }
        }
    }
    check_subset_roundtrip(universe, &members);
    Ok(())
}

pub(super) fn check_subset(universe: usize, members: &[u32]) {
    assert!(
        members.len() <= universe,
        "{} members of {universe}",
        members.len()
    );
    if let Some(&last) = members.last() {
        assert!(
            (last as usize) < universe,
            "member {last} of universe {universe}"
        );
    }
    assert!(
        members.windows(2).all(|w| w[0] < w[1]),
        "members not strictly ascending"
    );
}

pub(super) fn check_subset_roundtrip(universe: usize, members: &[u32]) {
    // Sets are coded only when non-empty (the section flags say which).
    if members.is_empty() {
        return;
    }
    let mut enc = vec![0xab];
    set_encode(universe, members, &mut enc);
    let enc = &enc[1..];
    if universe == 1 {
        assert!(enc.is_empty(), "{} bytes for the only member", enc.len());
    }
    assert!(
        enc.len() <= 1 + universe.div_ceil(8),
        "{} bytes for universe {universe}, worse than a bitmap",
        enc.len()
    );
    let mut back = vec![1, 2, 3];
    assert_eq!(
        set_decode(enc, universe, &mut back),
        Some(enc.len()),
        "decode of encode"
    );
    assert_eq!(back, members, "subset round trip, universe {universe}");
    // Trailing bytes are left alone.
    let mut longer = enc.to_vec();
    longer.extend_from_slice(&[0x80, 0xff]);
    assert_eq!(set_decode(&longer, universe, &mut back), Some(enc.len()));
    assert_eq!(back, members);
}

// ---------------------------------------------------------------------------
// blocks_decode
// ---------------------------------------------------------------------------

pub(super) fn blocks_decode_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let mut blocks = Blocks::new(*u.choose(&[-1, 1, 3, 19])?);
    let cap = match u.int_in_range(0u8..=3)? {
        0 => u.int_in_range(0..=64)?,
        1 => u.int_in_range(0..=MAX_BLOCK_CONTENT * 3)?,
        2 => MAX_BLOCK_CONTENT,
        _ => 1 << 20,
    };
    let split = u.int_in_range(0..=u.len())?;
    let bytes = u.bytes(split)?;
    let mut out = vec![0xcc; u.int_in_range(0..=100)?];
    let r = blocks.decode(bytes, cap, &mut out);
    assert!(
        out.len() <= cap,
        "regenerated {} bytes, cap {cap} ({r:?})",
        out.len()
    );

    // Encode/decode of an arbitrary payload.
    let payload = arb_payload(u)?;
    if payload.is_empty() {
        return Ok(());
    }
    let enc = blocks.encode(&payload);
    let bound = payload.len() + payload.len().div_ceil(MAX_BLOCK_CONTENT) * BLOCK_HEADER_LEN;
    assert!(
        enc.len() <= bound,
        "{} block bytes for {}",
        enc.len(),
        payload.len()
    );
    let mut back = vec![1; 5];
    if let Err(e) = blocks.decode(&enc, payload.len(), &mut back) {
        panic!("blocks of {} bytes do not decode: {e:?}", payload.len());
    }
    assert!(back == payload, "blocks round trip");
    // Under a smaller cap: refused, and the cap still holds.
    let cap = u.int_in_range(0..=payload.len() - 1)?;
    let r = blocks.decode(&enc, cap, &mut back);
    assert!(
        matches!(r, Err(DecodeError::DecodedTooLarge { limit }) if limit == cap),
        "{} bytes under cap {cap}: {r:?}",
        payload.len()
    );
    assert!(back.len() <= cap);
    // A fresh coder decodes the same.
    let mut fresh = Blocks::new(3);
    if let Err(e) = fresh.decode(&enc, 1 << 20, &mut back) {
        panic!("fresh coder: {e:?}");
    }
    assert!(back == payload, "fresh coder round trip");
    Ok(())
}

/// A payload that is sometimes compressible and sometimes spans several blocks.
pub(super) fn arb_payload(u: &mut Unstructured<'_>) -> AResult<Vec<u8>> {
    Ok(match u.int_in_range(0u8..=4)? {
        0 => rest(u)?.to_vec(),
        1 => {
            let n = u.int_in_range(1..=MAX_BLOCK_CONTENT * 3)?;
            vec![u.arbitrary()?; n]
        }
        2 => {
            // A short motif repeated, with a few bytes changed.
            let n = u.int_in_range(1..=16)?.min(u.len());
            let motif = u.bytes(n)?.to_vec();
            let n = u.int_in_range(1..=MAX_BLOCK_CONTENT * 3)?;
            let mut p: Vec<u8> = motif.iter().copied().cycle().take(n).collect();
            if p.len() < n {
                p.resize(n, 0);
            }
            for _ in 0..u.int_in_range(0..=8)? {
                let at = u.int_in_range(0..=n - 1)?;
                p[at] = u.arbitrary()?;
            }
            p
        }
        _ => {
            let n = u.int_in_range(1..=MAX_BLOCK_CONTENT * 3)?;
            let mut rng = SplitMix64::new(u.arbitrary()?);
            let mask = *u.choose(&[0x01u8, 0x03, 0x0f, 0xff])?;
            (0..n).map(|_| rng.next_u64() as u8 & mask).collect()
        }
    })
}
