//! Encode then decode of generated snapshots through every path, with and without baselines, priors and dictionaries.

use super::*;

pub(super) fn roundtrip_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let schema = arb_schema(u, 3, 6, 4)?;
    let level = *u.choose(&[-5, -1, 1, 3, 3, 3, 9, 19])?;
    let limits = if u.ratio(1, 4)? {
        arb_tight_limits(u)?
    } else {
        Limits::default()
    };
    let refs = arb_refs(u, &schema, true)?;
    let cur = match &refs.base {
        Some(b) if u.ratio(7, 8)? => {
            let mut cur = evolve_snapshot(u, &schema, b, true)?;
            if let Some(p) = &refs.prior {
                apply_predictions(u, &schema, b, p, &mut cur)?;
            }
            cur
        }
        _ => arb_snapshot(u, &schema, true)?,
    };
    let dict_id: u32 = u.arbitrary()?;
    let dict = if u.ratio(1, 3)? {
        Some(arb_dictionary(u, dict_id, refs.base.as_ref())?)
    } else {
        None
    };
    let sequence: u16 = u.arbitrary()?;
    let distance: u16 = match u.int_in_range(0u8..=15)? {
        0 => 1,
        1 => MAX_BASELINE_DISTANCE,
        2 => 0,
        3 => u.int_in_range(MAX_BASELINE_DISTANCE + 1..=u16::MAX)?,
        _ => u.int_in_range(1..=MAX_BASELINE_DISTANCE)?,
    };
    let bseq = sequence.wrapping_sub(distance);
    let baseline = refs.base.as_ref().map(|snapshot| Baseline {
        sequence: bseq,
        snapshot,
    });
    let distance_ok = (1..=MAX_BASELINE_DISTANCE).contains(&distance);
    // The prior's distance from the baseline; baseline and prior together
    // must stay within 32767 of the packet.
    let room = MAX_BASELINE_DISTANCE.saturating_sub(distance).max(1);
    let prior_distance: u16 = match u.int_in_range(0u8..=15)? {
        0 => 1,
        1 => room,
        2 => 0,
        3 => u.int_in_range(room..=u16::MAX)?,
        _ => u.int_in_range(1..=room)?,
    };
    let prior_ok = distance_ok
        && prior_distance != 0
        && u32::from(distance) + u32::from(prior_distance) <= u32::from(MAX_BASELINE_DISTANCE);
    let prior = refs.prior.as_ref().map(|snapshot| Baseline {
        sequence: bseq.wrapping_sub(prior_distance),
        snapshot,
    });

    let mut enc = Encoder::with_level(schema.clone(), level);
    let mut dec = Decoder::new(schema.clone());
    enc.set_limits(limits);
    dec.set_limits(limits);
    // Both ends keep each snapshot's history, which must agree.
    enc.set_keep_history(true);
    dec.set_keep_history(true);
    if let Some(d) = &dict {
        match (enc.set_dictionary(Some(d)), dec.add_dictionary(d)) {
            (Ok(()), Ok(())) => {}
            (e, f) => panic!("raw-content dictionary rejected: encoder {e:?}, decoder {f:?}"),
        }
    }
    let checksum = u.ratio(1, 3)?;
    enc.set_checksum(checksum);
    let header = |prior: Option<u16>| {
        let dictionary_id = dict.as_ref().map(Dictionary::id);
        let mut h = PacketHeader {
            sequence,
            baseline: baseline.map(|b| b.sequence),
            prior,
            dictionary: dictionary_id.is_some(),
            // A raw-content dictionary has no model table.
            model: false,
            ids: baseline.is_none().then_some(PacketIds {
                schema_id: schema.id(),
                dictionary_id,
            }),
            checksum: Checksum::None,
        };
        if checksum {
            h.checksum = Checksum::U16(cur.checksum(h.checksum_seed(dictionary_id)));
        }
        h
    };

    // With a prior first, so a leak of prediction state into the plain
    // encode below would show.
    if let (Some(b), Some(p)) = (baseline, prior) {
        let mut packet = Vec::new();
        let bad = !distance_ok || (schema.predicts() && !prior_ok);
        match enc.encode_to_vec(
            &cur,
            sequence,
            tickpack::Reference::predicted(b, p),
            &mut packet,
        ) {
            Ok(()) => {
                assert!(
                    !bad,
                    "encoded baseline {distance} and prior {prior_distance} back"
                );
                let named = schema.predicts().then_some(p.sequence);
                check_predicted(&mut enc, &mut dec, &header(named), &packet, &cur, b, p);
            }
            Err(e) => check_encode_error(&e, bad, &limits, &cur),
        }
    }

    let expected = header(None);
    match enc.encode(&cur, sequence, baseline) {
        Ok(packet) => {
            assert!(
                baseline.is_none() || distance_ok,
                "encoded a baseline {distance} back"
            );
            check_roundtrip(&mut enc, &mut dec, &expected, &packet, &cur, baseline);
        }
        Err(e) => check_encode_error(&e, baseline.is_some() && !distance_ok, &limits, &cur),
    }

    // The one-shot functions: default level, limits, no dictionary.
    match encode(&schema, &cur, sequence, baseline) {
        Ok(packet) => {
            assert!(
                baseline.is_none() || distance_ok,
                "encoded a baseline {distance} back"
            );
            let mut one = Encoder::new(schema.clone());
            let same = one.encode(&cur, sequence, baseline);
            assert!(
                same.as_ref() == Ok(&packet),
                "one-shot encode differs from Encoder::new"
            );
            match decode(&schema, &packet, baseline) {
                Ok((h, s)) => {
                    assert_eq!(
                        h,
                        PacketHeader {
                            dictionary: false,
                            ids: expected.ids.map(|i| PacketIds {
                                dictionary_id: None,
                                ..i
                            }),
                            checksum: Checksum::None,
                            ..expected
                        }
                    );
                    assert!(
                        s == cur,
                        "one-shot decode differs from the snapshot encoded"
                    );
                }
                Err(e) => panic!("one-shot decode failed: {e:?}"),
            }
        }
        Err(e) => check_encode_error(
            &e,
            baseline.is_some() && !distance_ok,
            &Limits::default(),
            &cur,
        ),
    }
    Ok(())
}

/// Checks a packet from [`Encoder::encode_to_vec`] with a prior: it decodes
/// with baseline and prior, is refused without the prior it names or with
/// another, and is the plain packet when the schema does not predict.
pub(super) fn check_predicted(
    enc: &mut Encoder,
    dec: &mut Decoder,
    expected: &PacketHeader,
    packet: &[u8],
    cur: &Snapshot,
    baseline: Baseline<'_>,
    prior: Baseline<'_>,
) {
    match PacketHeader::parse(packet) {
        Ok((h, _)) => assert_eq!(&h, expected, "parsed header (predicted)"),
        Err(e) => panic!("header of a predicted packet does not parse: {e:?}"),
    }
    let mut out = cur.clone();
    match dec.decode_into(
        packet,
        tickpack::Reference::predicted(baseline, prior),
        &mut out,
    ) {
        Ok(h) => {
            assert_eq!(&h, expected, "decoded header (predicted)");
            assert!(&out == cur, "predicted packet decodes to another snapshot");
            assert_eq!(
                enc.history(),
                dec.history(),
                "both ends' history (predicted)"
            );
        }
        Err(e) => panic!("predicted packet does not decode: {e:?}"),
    }
    if expected.prior.is_some() {
        let r = dec.decode_into(packet, Some(baseline), &mut out);
        assert_eq!(
            r,
            Err(DecodeError::MissingPrior {
                sequence: prior.sequence
            }),
            "predicted packet without its prior"
        );
        let wrong = Baseline {
            sequence: prior.sequence.wrapping_add(1),
            snapshot: prior.snapshot,
        };
        let r = dec.decode_into(
            packet,
            tickpack::Reference::predicted(baseline, wrong),
            &mut out,
        );
        assert_eq!(
            r,
            Err(DecodeError::PriorMismatch {
                expected: prior.sequence,
                actual: wrong.sequence
            }),
            "predicted packet with another prior"
        );
    } else {
        // No Predict field: the prior is ignored.
        match enc.encode(cur, expected.sequence, Some(baseline)) {
            Ok(p) => assert!(
                p == packet,
                "a prior changed a packet that predicts nothing"
            ),
            Err(e) => panic!("plain encode after a predicted one failed: {e:?}"),
        }
    }
}

/// Sets some entities of `cur` to `2·base − prior` on their
/// [`DeltaOp::Predict`] fields (and the baseline elsewhere), computed here
/// independently of the codec: the prediction of FORMAT.md 4.6 when the
/// packet is as far from the baseline as the baseline from the prior, so
/// its changed elements code as value 0 (they still count as changed: the
/// mask compares with the baseline); a value beside it at other spacings.
pub(super) fn apply_predictions(
    u: &mut Unstructured<'_>,
    schema: &Schema,
    base: &Snapshot,
    prior: &Snapshot,
    cur: &mut Snapshot,
) -> AResult<()> {
    for (i, ty) in schema.sections().iter().enumerate() {
        if !ty.predicts() {
            continue;
        }
        let (b, p) = (&base.sections()[i], &prior.sections()[i]);
        let mode = u.int_in_range(0u8..=3)?;
        let mut rng = SplitMix64::new(u.arbitrary()?);
        let Some(sec) = cur.section_mut(i) else { break };
        for (id, b0) in b.iter() {
            let Some(b1) = p.get(id) else { continue };
            let take = match mode {
                0 => false,
                1 => true,
                _ => rng.below(2) == 0,
            };
            if take && (sec.get(id).is_some() || rng.below(4) == 0) {
                if let Err(e) = sec.insert(id, &oracle_predict(ty, b0, b1)) {
                    panic!("inserting a prediction: {e:?}");
                }
            }
        }
    }
    Ok(())
}

/// `2·b0 − b1` element-wise (wrapping, little-endian) on the fields coded
/// with [`DeltaOp::Predict`], `b0` elsewhere: FORMAT.md 4.6's
/// `b0 + round((b0 − b1)·n/m)` for equal distances `n = m` only (the
/// distances are not inputs here; the scaled rule is tested in the codec).
pub(super) fn oracle_predict(ty: &EntityType, b0: &[u8], b1: &[u8]) -> Vec<u8> {
    let mut out = b0.to_vec();
    for (f, &off) in ty.fields().iter().zip(ty.offsets()) {
        if f.delta_op() != DeltaOp::Predict {
            continue;
        }
        let w = f.ty.size();
        for at in (off..off + f.size()).step_by(w) {
            let (mut x, mut y) = ([0u8; 8], [0u8; 8]);
            x[..w].copy_from_slice(&b0[at..at + w]);
            y[..w].copy_from_slice(&b1[at..at + w]);
            let v = u64::from_le_bytes(x)
                .wrapping_mul(2)
                .wrapping_sub(u64::from_le_bytes(y));
            out[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
    }
    out
}

/// An encoder error must be the one the inputs call for.
pub(super) fn check_encode_error(
    e: &EncodeError,
    bad_distance: bool,
    limits: &Limits,
    cur: &Snapshot,
) {
    match e {
        EncodeError::BaselineDistance { .. } => assert!(bad_distance, "unexpected {e:?}"),
        EncodeError::TooManyEntities {
            section,
            count,
            limit,
        } => {
            assert!(!bad_distance, "{e:?} before the baseline distance error");
            assert_eq!(*limit, limits.max_entities_per_section);
            assert_eq!(cur.sections()[*section].len(), *count);
            assert!(count > limit, "{e:?}");
        }
        EncodeError::SnapshotTooLarge { bytes, limit } => {
            assert!(!bad_distance, "{e:?} before the baseline distance error");
            assert_eq!(*limit, limits.max_snapshot_bytes);
            assert!(bytes > limit, "{e:?}");
        }
        EncodeError::PayloadTooLarge { size, limit } => {
            assert!(!bad_distance, "{e:?} before the baseline distance error");
            assert_eq!(*limit, limits.max_decoded_bytes);
            assert!(size > limit, "{e:?}");
            assert!(
                cur.sections()
                    .iter()
                    .all(|s| s.len() <= limits.max_entities_per_section),
                "{e:?}"
            );
        }
        _ => panic!("unexpected encode error {e:?}"),
    }
}

/// Decodes `packet` every way and checks it against `cur`, then re-encodes
/// through the other encoder entry points and compares bytes.
pub(super) fn check_roundtrip(
    enc: &mut Encoder,
    dec: &mut Decoder,
    expected: &PacketHeader,
    packet: &[u8],
    cur: &Snapshot,
    baseline: Option<Baseline<'_>>,
) {
    match PacketHeader::parse(packet) {
        Ok((h, n)) => {
            assert_eq!(&h, expected, "parsed header");
            let mut w = Vec::new();
            expected.write(&mut w);
            assert_eq!(&packet[..n], &w[..], "header bytes");
        }
        Err(e) => panic!("header of an encoded packet does not parse: {e:?}"),
    }
    match dec.decode(packet, baseline) {
        Ok((h, s)) => {
            assert_eq!(&h, expected, "decoded header");
            assert!(&s == cur, "decoded snapshot differs from the one encoded");
            assert_eq!(enc.history(), dec.history(), "both ends' history");
        }
        Err(e) => panic!("encoded packet does not decode: {e:?}"),
    }
    // decode_into a reused snapshot, with the decoder reused.
    let mut again = cur.clone();
    match dec.decode_into(packet, baseline, &mut again) {
        Ok(h) => assert_eq!(&h, expected),
        Err(e) => panic!("second decode failed: {e:?}"),
    }
    assert!(&again == cur, "decode_into a reused snapshot differs");

    // The encoder is deterministic and its entry points agree.
    let same = |r: Result<Vec<u8>, EncodeError>, what: &str| match r {
        Ok(p) => assert!(p == packet, "{what} gives different bytes"),
        Err(e) => panic!("{what} failed: {e:?}"),
    };
    same(
        enc.encode(cur, expected.sequence, baseline),
        "second encode",
    );
    let mut v = vec![0xee; 3];
    let r = enc
        .encode_to_vec(cur, expected.sequence, baseline, &mut v)
        .map(|()| v);
    same(r, "encode_to_vec");
    let refs: Vec<SectionRef<'_>> = cur.sections().iter().map(Section::as_ref).collect();
    let mut v = Vec::new();
    let r = enc
        .encode_sections(&refs, expected.sequence, baseline, &mut v)
        .map(|()| v);
    same(r, "encode_sections");

    let max = enc.max_encoded_len(cur, baseline.map(|b| b.snapshot));
    assert!(
        max >= packet.len(),
        "max_encoded_len {max} < packet {}",
        packet.len()
    );
    let mut buf = vec![0x55; max];
    let r = enc
        .encode_into(cur, expected.sequence, baseline, &mut buf)
        .map(|n| buf[..n].to_vec());
    same(r, "encode_into (max_encoded_len)");
    let mut buf = vec![0xaa; packet.len()];
    let r = enc
        .encode_into(cur, expected.sequence, baseline, &mut buf)
        .map(|n| buf[..n].to_vec());
    same(r, "encode_into (exact size)");
    if !packet.is_empty() {
        let mut buf = vec![0; packet.len() - 1];
        match enc.encode_into(cur, expected.sequence, baseline, &mut buf) {
            Err(EncodeError::OutputTooSmall { needed, available }) => {
                assert_eq!(available, buf.len());
                assert!(needed > available, "needed {needed}, available {available}");
            }
            r => panic!("encode_into one byte short: {r:?}"),
        }
    }
}
