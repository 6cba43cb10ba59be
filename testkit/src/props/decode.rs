//! Arbitrary and mutated packets for the decoders, and the checks on what they decode to.

use super::*;

pub(super) fn decode_corrupt_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let schema = arb_schema(u, 2, 3, 3)?;
    let tight = u.ratio(1, 3)?;
    let limits = if tight {
        arb_tight_limits(u)?
    } else {
        Limits::default()
    };
    let refs = arb_refs(u, &schema, false)?;
    let dict = if u.ratio(1, 2)? {
        Some(arb_dictionary(u, DICT_ID, refs.base.as_ref())?)
    } else {
        None
    };

    let mut dec = Decoder::new(schema.clone());
    dec.set_limits(limits);
    if let Some(d) = &dict {
        if dec.add_dictionary(d).is_err() {
            return Ok(());
        }
    }
    let picks: [u8; 6] = u.arbitrary()?;
    let packet = arb_packet(u, &schema, &refs, dict.as_ref())?;
    let (baseline, prior) = refs.pick(picks, &packet);
    // Sometimes the baseline's recall: the entities of the other reference
    // snapshot that the baseline lacks (its sequence sometimes another).
    let recall = match (baseline, &refs.prior) {
        (Some(b), Some(older)) if u.ratio(1, 2)? => {
            let sequence = if u.ratio(7, 8)? {
                b.sequence
            } else {
                u.arbitrary()?
            };
            let from = Baseline {
                sequence: b.sequence.wrapping_sub(1),
                snapshot: older,
            };
            Some(Recall::keyframe(from.sequence).advance(from, b.snapshot, sequence, &limits))
        }
        _ => None,
    };
    let mut snap = Snapshot::default();
    let Ok(header) = dec.decode_into(
        &packet,
        tickpack::Reference::from(baseline)
            .with_prior(prior)
            .with_recall(recall.as_ref()),
        &mut snap,
    ) else {
        return Ok(());
    };
    let reference = tickpack::Reference::from(baseline)
        .with_prior(prior)
        .with_recall(recall.as_ref());
    check_decoded(&schema, &limits, &packet, &header, reference, &snap);
    // The next recall stays within the limits, whatever was decoded.
    if let (Some(b), Some(r)) = (baseline, &recall) {
        let next = r.advance(b, &snap, header.sequence, &limits);
        assert!(next.counted_bytes() <= limits.max_snapshot_bytes);
    }
    Ok(())
}

/// Checks a successfully decoded packet: header as parsed, well-formed
/// sections within the limits, and a re-encode/decode round trip.
pub(super) fn check_decoded(
    schema: &Schema,
    limits: &Limits,
    packet: &[u8],
    header: &PacketHeader,
    reference: tickpack::Reference<'_>,
    snap: &Snapshot,
) {
    let (baseline, prior, recall) = (reference.baseline, reference.prior, reference.recall);
    match PacketHeader::parse(packet) {
        Ok((h, _)) => assert_eq!(&h, header, "decoded header differs from parsed header"),
        Err(e) => panic!("packet decoded but its header does not parse: {e:?}"),
    }
    if let Some(ids) = header.ids {
        assert_eq!(ids.schema_id, schema.id());
    }
    if let Err(e) = snap.check(schema) {
        panic!("decoded snapshot does not fit the schema: {e:?}");
    }
    // The decoder caps spawns, not the entities a baseline already over the
    // limit keeps; so the limit is checked for baselines within it.
    let base_within = baseline.is_none_or(|b| {
        b.snapshot
            .sections()
            .iter()
            .all(|s| s.len() <= limits.max_entities_per_section)
    });
    for (i, s) in snap.sections().iter().enumerate() {
        if let Err(e) = SectionRef::new(s.ids(), s.records(), s.record_size()) {
            panic!("decoded section {i} is malformed: {e:?}");
        }
        if base_within || header.baseline.is_none() {
            assert!(
                s.len() <= limits.max_entities_per_section,
                "section {i} decoded {} entities, limit {}",
                s.len(),
                limits.max_entities_per_section
            );
        }
    }
    // Whatever was accepted must survive a canonical re-encode. Default
    // limits: the canonical payload is never larger than the one accepted.
    let (rebase, reprior) = (named(header.baseline, baseline), named(header.prior, prior));
    let mut enc = Encoder::new(schema.clone());
    let mut packet2 = Vec::new();
    let recall = recall.filter(|r| rebase.is_some_and(|b| b.sequence == r.sequence()));
    let reference = tickpack::Reference::from(rebase)
        .with_prior(rebase.and(reprior))
        .with_recall(recall);
    let r = enc.encode_to_vec(snap, header.sequence, reference, &mut packet2);
    match r {
        Ok(()) => {}
        // A canonical changed set can cost a few bytes more than the one
        // accepted; only a payload at the default limit could tip over.
        Err(EncodeError::PayloadTooLarge { .. }) => return,
        Err(e) => panic!("re-encoding a decoded snapshot failed: {e:?}"),
    }
    let mut s2 = Snapshot::default();
    match Decoder::new(schema.clone()).decode_into(
        &packet2,
        tickpack::Reference::from(rebase)
            .with_prior(reprior)
            .with_recall(recall),
        &mut s2,
    ) {
        Ok(h2) => {
            assert_eq!(h2.sequence, header.sequence);
            assert_eq!(h2.baseline, header.baseline);
            let prior = if schema.predicts() {
                header.prior
            } else {
                None
            };
            assert_eq!(h2.prior, prior);
            assert!(&s2 == snap, "re-encoded snapshot decodes differently");
        }
        Err(e) => panic!("re-encoded packet does not decode: {e:?}"),
    }
}

/// The snapshots a packet may be decoded against: a baseline and, with it,
/// sometimes a prior for [`DeltaOp::Predict`] fields.
pub(super) struct Refs {
    pub(super) base: Option<Snapshot>,
    pub(super) prior: Option<Snapshot>,
}

pub(super) fn arb_refs(u: &mut Unstructured<'_>, schema: &Schema, bulk: bool) -> AResult<Refs> {
    let base = if u.ratio(2, 3)? {
        Some(arb_snapshot(u, schema, bulk)?)
    } else {
        None
    };
    let prior = match &base {
        Some(b) if u.ratio(1, 2)? => Some(evolve_snapshot(u, schema, b, bulk)?),
        _ => None,
    };
    Ok(Refs { base, prior })
}

impl Refs {
    /// The baseline and prior to pass for `packet`: usually the ones it
    /// names (so decoding goes deep), sometimes none or a wrong sequence.
    /// `picks` is drawn before the packet, which takes the rest of the input.
    pub(super) fn pick(
        &self,
        picks: [u8; 6],
        packet: &[u8],
    ) -> (Option<Baseline<'_>>, Option<Baseline<'_>>) {
        let header = PacketHeader::parse(packet).ok().map(|(h, _)| h);
        (
            pick_ref(
                picks[0],
                [picks[1], picks[2]],
                header.and_then(|h| h.baseline),
                self.base.as_ref(),
            ),
            pick_ref(
                picks[3],
                [picks[4], picks[5]],
                header.and_then(|h| h.prior),
                self.prior.as_ref(),
            ),
        )
    }
}

/// `b`'s snapshot under sequence `seq`, if both are given.
pub(super) fn named<'a>(seq: Option<u16>, b: Option<Baseline<'a>>) -> Option<Baseline<'a>> {
    match (seq, b) {
        (Some(sequence), Some(b)) => Some(Baseline {
            sequence,
            snapshot: b.snapshot,
        }),
        _ => None,
    }
}

/// Usually `snap` under the sequence the packet names, sometimes nothing or
/// another sequence.
pub(super) fn pick_ref<'a>(
    choice: u8,
    other: [u8; 2],
    named: Option<u16>,
    snap: Option<&'a Snapshot>,
) -> Option<Baseline<'a>> {
    let snapshot = snap?;
    match (named, choice % 8) {
        (_, 0) => None,
        (Some(sequence), 2..) => Some(Baseline { sequence, snapshot }),
        _ => Some(Baseline {
            sequence: u16::from_le_bytes(other),
            snapshot,
        }),
    }
}

/// A packet for `schema`: raw bytes, a valid header then raw bytes, a valid
/// header and valid blocks around a raw payload, or a valid packet with
/// mutations. Consumes the rest of `u`.
pub(super) fn arb_packet(
    u: &mut Unstructured<'_>,
    schema: &Schema,
    refs: &Refs,
    dict: Option<&Dictionary>,
) -> AResult<Vec<u8>> {
    let mode = u.int_in_range(0u8..=9)?;
    if mode == 0 {
        return Ok(rest(u)?.to_vec());
    }
    if mode >= 7 {
        return arb_mutated_packet(u, schema, refs, dict);
    }
    // A header that passes the header, schema, baseline and dictionary checks
    // (mostly), then fuzzer-controlled blocks or payload.
    let sequence: u16 = u.arbitrary()?;
    let distance = u.int_in_range(1..=MAX_BASELINE_DISTANCE)?;
    let baseline = match refs.base {
        Some(_) if u.ratio(3, 4)? => Some(sequence.wrapping_sub(distance)),
        _ => None,
    };
    let prior = match baseline {
        Some(b) if distance < MAX_BASELINE_DISTANCE && u.ratio(2, 3)? => {
            Some(b.wrapping_sub(u.int_in_range(1..=MAX_BASELINE_DISTANCE - distance)?))
        }
        _ => None,
    };
    let dictionary_id = match (dict, u.int_in_range(0u8..=5)?) {
        (_, 0) => Some(u.arbitrary()?),
        (Some(d), 1..=3) => Some(d.id()),
        _ => None,
    };
    let schema_id = if u.ratio(1, 16)? {
        u.arbitrary()?
    } else {
        schema.id()
    };
    // Keyframes name their ids; deltas rely on the agreed ones.
    let ids = baseline.is_none().then_some(PacketIds {
        schema_id,
        dictionary_id,
    });
    // Bytes after the header as a model block's body (with or without a
    // dictionary, whose table may be missing).
    let model = mode <= 2 && u.ratio(1, 2)?;
    // A checksum fails unless the fuzzer finds it; sometimes try.
    let checksum = match u.int_in_range(0u8..=15)? {
        0 => Checksum::U8(u.arbitrary()?),
        1 => Checksum::U16(u.arbitrary()?),
        _ => Checksum::None,
    };
    let mut packet = Vec::new();
    PacketHeader {
        sequence,
        baseline,
        prior,
        dictionary: dictionary_id.is_some(),
        model,
        ids,
        checksum,
    }
    .write(&mut packet);
    let rest = rest(u)?;
    match mode {
        1 | 2 => packet.extend_from_slice(rest),
        3 | 4 => raw_blocks(rest, &mut packet),
        _ => {
            if rest.is_empty() {
                raw_blocks(rest, &mut packet);
            } else {
                packet.extend_from_slice(&Blocks::new(1).encode(rest));
            }
        }
    }
    Ok(packet)
}

/// `payload` as raw blocks of at most [`MAX_BLOCK_CONTENT`] bytes, the last
/// marked. An empty payload gets no block: the empty payload of an idle
/// packet.
pub(super) fn raw_blocks(payload: &[u8], out: &mut Vec<u8>) {
    let n = payload.len().div_ceil(MAX_BLOCK_CONTENT);
    for (i, chunk) in payload.chunks(MAX_BLOCK_CONTENT).enumerate() {
        BlockHeader {
            last: i + 1 == n,
            block_type: BlockType::Raw,
            size: chunk.len(),
        }
        .write(out);
        out.extend_from_slice(chunk);
    }
}

/// A valid packet (against the baseline and prior of `refs`, with `dict`),
/// then up to 8 mutations: byte sets, bit flips, truncation, insertion,
/// removal.
pub(super) fn arb_mutated_packet(
    u: &mut Unstructured<'_>,
    schema: &Schema,
    refs: &Refs,
    dict: Option<&Dictionary>,
) -> AResult<Vec<u8>> {
    let cur = match &refs.base {
        Some(b) => evolve_snapshot(u, schema, b, false)?,
        None => arb_snapshot(u, schema, false)?,
    };
    let sequence: u16 = u.arbitrary()?;
    let distance = u.int_in_range(1..=MAX_BASELINE_DISTANCE - 1)?;
    let bseq = sequence.wrapping_sub(distance);
    let pseq = bseq.wrapping_sub(u.int_in_range(1..=MAX_BASELINE_DISTANCE - distance)?);
    let mut enc = Encoder::with_level(schema.clone(), *u.choose(&[-1, 1, 3])?);
    if let Some(d) = dict {
        if u.ratio(3, 4)? && enc.set_dictionary(Some(d)).is_err() {
            return Ok(Vec::new());
        }
    }
    let baseline = refs.base.as_ref().map(|snapshot| Baseline {
        sequence: bseq,
        snapshot,
    });
    let prior = refs.prior.as_ref().map(|snapshot| Baseline {
        sequence: pseq,
        snapshot,
    });
    enc.set_checksum(u.ratio(1, 4)?);
    let mut packet = Vec::new();
    let r = match (baseline, prior) {
        (Some(b), Some(p)) if u.ratio(3, 4)? => enc.encode_to_vec(
            &cur,
            sequence,
            tickpack::Reference::predicted(b, p),
            &mut packet,
        ),
        _ => enc.encode_to_vec(&cur, sequence, baseline, &mut packet),
    };
    if r.is_err() {
        return Ok(Vec::new());
    }
    let count = u.int_in_range(0u8..=8)?;
    for _ in 0..count {
        if packet.is_empty() {
            break;
        }
        let at = u.int_in_range(0..=packet.len() - 1)?;
        match u.int_in_range(0u8..=5)? {
            0 | 1 => packet[at] = u.arbitrary()?,
            2 => packet[at] ^= 1 << u.int_in_range(0u8..=7)?,
            3 => packet.truncate(at),
            4 => packet.insert(at, u.arbitrary()?),
            _ => {
                packet.remove(at);
            }
        }
    }
    Ok(packet)
}
