//! Properties the fuzz targets assert, shared with the regression test that
//! replays committed crash inputs (feature `internals`).
//!
//! Each property takes raw fuzzer bytes, builds its inputs from them with
//! [`arbitrary::Unstructured`], and panics only if the property is violated.
//! Running out of input bytes is never a failure: generators fall back to
//! zeros and small sizes. The fuzz targets in `fuzz/fuzz_targets/` are
//! one-liners calling these functions, one target per property, named after
//! it; [`PROPERTIES`] lists them for the regression test.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use arbitrary::{Result as AResult, Unstructured};

use crate::internals::{subset_decode, subset_encode, Blocks};
use crate::{
    decode, encode, Baseline, BlockHeader, BlockType, DecodeError, Decoder, DeltaOp, Dictionary,
    EncodeError, Encoder, EntityType, Field, Limits, PacketHeader, Primitive, Schema, Section,
    SectionRef, Snapshot, BLOCK_HEADER_LEN, MAX_BASELINE_DISTANCE, MAX_BLOCK_CONTENT,
    MAX_HEADER_LEN,
};

/// A property: panics on the input that violates it.
pub type Property = fn(&[u8]);

/// Every property by name: the fuzz target of the same name calls it.
pub const PROPERTIES: &[(&str, Property)] = &[
    ("decode_corrupt", decode_corrupt),
    ("roundtrip", roundtrip),
    ("no_output_leak", no_output_leak),
    ("header_roundtrip", header_roundtrip),
    ("subset_roundtrip", subset_roundtrip),
    ("blocks_decode", blocks_decode),
    ("session_ops", session_ops),
    ("capture_read", capture_read),
    ("dictset_load", dictset_load),
    ("fragment_reassembly", fragment_reassembly),
    ("chunk_receiver", chunk_receiver),
    ("huffman_decode", huffman_decode),
];

/// The id the fuzzed decoders register their dictionary under.
pub const DICT_ID: u32 = 0xd1c7_0001;

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

/// The per-client baseline state machine, server and client sides, driven
/// by an arbitrary list of operations (tick and send, deliver, drop,
/// duplicate, reorder, ack, garbage ack, garbage packet, request full).
/// After every step: whatever the client applied equals what the server
/// sent for that sequence, its newest state is a state the server sent, the
/// server's baseline only moves forward and is a snapshot it sent, and no
/// packet the server made is ever undecodable.
pub fn session_ops(data: &[u8]) {
    let _ = session_ops_inner(&mut Unstructured::new(data));
}

/// Arbitrary bytes, or a valid capture truncated or with bytes changed,
/// read as a `.tpcap` with tight limits: ticks come out or a typed error
/// naming an offset within the input, never a panic; an intact capture
/// reads back exactly what was written.
pub fn capture_read(data: &[u8]) {
    let _ = capture_read_inner(&mut Unstructured::new(data));
}

/// Arbitrary manifest bytes and dictionary files (or a valid set with bytes
/// changed) loaded as a dictionary set: `Ok` or a typed error, never a
/// panic; a loaded set's dictionaries match their manifest.
pub fn dictset_load(data: &[u8]) {
    let _ = dictset_load_inner(&mut Unstructured::new(data));
}

/// Arbitrary bytes decoded as a packet, with an arbitrary small schema, an
/// optional baseline and prior (passed with the sequences the packet names),
/// an optional registered dictionary and optionally tight [`Limits`]. Some
/// inputs get a valid header (or valid header and blocks, or are a valid
/// packet with mutations) so decoding reaches blocks and payload parsing.
///
/// Decoding must return `Ok` or `Err`, never panic. A successful decode must
/// give a well-formed snapshot that respects the limits and survives a
/// re-encode/decode round trip.
pub fn decode_corrupt(data: &[u8]) {
    let _ = decode_corrupt_inner(&mut Unstructured::new(data));
}

/// Arbitrary schema (every [`DeltaOp`]), snapshot, baseline, prior,
/// dictionary, level, limits, checksum and sequence numbers (across the u16
/// wrap): encode then decode gives the identical snapshot and header, through
/// [`Encoder::encode`], [`Encoder::encode_into`] (exactly sized and
/// [`Encoder::max_encoded_len`]-sized buffers), [`Encoder::encode_to_vec`],
/// [`Encoder::encode_sections`], [`Encoder::encode_predicted_to_vec`] and the
/// one-shot [`encode`]/[`decode`]. Encoder errors must be justified by the
/// inputs.
pub fn roundtrip(data: &[u8]) {
    let _ = roundtrip_inner(&mut Unstructured::new(data));
}

/// Decoding a (valid or corrupt) packet into a [`Snapshot`] full of junk, with
/// a decoder that already decoded another packet, gives the same result as a
/// fresh decoder into a fresh snapshot; on error the output is left empty.
pub fn no_output_leak(data: &[u8]) {
    let _ = no_output_leak_inner(&mut Unstructured::new(data));
}

/// [`PacketHeader::parse`] then [`PacketHeader::write`] reproduces the parsed
/// prefix exactly; write then parse of an arbitrary header (baseline distance
/// 1..=32767) is the identity; [`BlockHeader`] `to_bytes`/`from_bytes` are
/// inverse.
pub fn header_roundtrip(data: &[u8]) {
    // The raw bytes as a header prefix.
    if let Ok((h, n)) = PacketHeader::parse(data) {
        assert!(n <= MAX_HEADER_LEN && n <= data.len(), "header length {n}");
        if let Some(d) = h.baseline_distance() {
            assert!((1..=MAX_BASELINE_DISTANCE).contains(&d), "distance {d}");
        }
        if let Some(p) = h.prior {
            let Some(b) = h.baseline else {
                panic!("a prior without a baseline: {h:?}")
            };
            let total = h.sequence.wrapping_sub(p);
            assert!(
                b != p
                    && (1..=MAX_BASELINE_DISTANCE).contains(&total)
                    && total > h.sequence.wrapping_sub(b),
                "prior {p} not strictly before baseline {b} within 32767 of {}",
                h.sequence
            );
        }
        let mut out = Vec::new();
        h.write(&mut out);
        assert_eq!(out, &data[..n], "parse then write of {h:?}");
    }
    let _ = header_roundtrip_inner(&mut Unstructured::new(data));
}

/// Entity-set coding: encode then decode is the identity for arbitrary
/// subsets, never larger than a bitmap; decoding arbitrary bytes never panics
/// and gives ascending indices below the universe.
pub fn subset_roundtrip(data: &[u8]) {
    let _ = subset_roundtrip_inner(&mut Unstructured::new(data));
}

/// Block coding: decoding arbitrary bytes under a cap never panics and never
/// regenerates more than the cap; encode then decode of arbitrary payloads is
/// the identity.
pub fn blocks_decode(data: &[u8]) {
    let _ = blocks_decode_inner(&mut Unstructured::new(data));
}

// ---------------------------------------------------------------------------
// decode_corrupt
// ---------------------------------------------------------------------------

fn decode_corrupt_inner(u: &mut Unstructured<'_>) -> AResult<()> {
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
    let mut snap = Snapshot::default();
    let Ok(header) = dec.decode_predicted_into(&packet, baseline, prior, &mut snap) else {
        return Ok(());
    };
    check_decoded(&schema, &limits, &packet, &header, baseline, prior, &snap);
    Ok(())
}

/// Checks a successfully decoded packet: header as parsed, well-formed
/// sections within the limits, and a re-encode/decode round trip.
fn check_decoded(
    schema: &Schema,
    limits: &Limits,
    packet: &[u8],
    header: &PacketHeader,
    baseline: Option<Baseline<'_>>,
    prior: Option<Baseline<'_>>,
    snap: &Snapshot,
) {
    match PacketHeader::parse(packet) {
        Ok((h, _)) => assert_eq!(&h, header, "decoded header differs from parsed header"),
        Err(e) => panic!("packet decoded but its header does not parse: {e:?}"),
    }
    assert_eq!(header.schema_id, schema.id());
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
    let r = match (rebase, reprior) {
        (Some(b), Some(p)) => {
            enc.encode_predicted_to_vec(snap, header.sequence, b, p, &mut packet2)
        }
        _ => enc.encode_to_vec(snap, header.sequence, rebase, &mut packet2),
    };
    match r {
        Ok(()) => {}
        // A canonical changed set can cost a few bytes more than the one
        // accepted; only a payload at the default limit could tip over.
        Err(EncodeError::PayloadTooLarge { .. }) => return,
        Err(e) => panic!("re-encoding a decoded snapshot failed: {e:?}"),
    }
    let mut s2 = Snapshot::default();
    match Decoder::new(schema.clone()).decode_predicted_into(&packet2, rebase, reprior, &mut s2) {
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
struct Refs {
    base: Option<Snapshot>,
    prior: Option<Snapshot>,
}

fn arb_refs(u: &mut Unstructured<'_>, schema: &Schema, bulk: bool) -> AResult<Refs> {
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
    fn pick(&self, picks: [u8; 6], packet: &[u8]) -> (Option<Baseline<'_>>, Option<Baseline<'_>>) {
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
fn named<'a>(seq: Option<u16>, b: Option<Baseline<'a>>) -> Option<Baseline<'a>> {
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
fn pick_ref<'a>(
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
fn arb_packet(
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
    let dictionary = match (dict, u.int_in_range(0u8..=5)?) {
        (_, 0) => Some(u.arbitrary()?),
        (Some(d), 1..=3) => Some(d.id()),
        _ => None,
    };
    let schema_id = if u.ratio(1, 16)? {
        u.arbitrary()?
    } else {
        schema.id()
    };
    // A checksum fails unless the fuzzer finds it; sometimes try.
    let checksum = if u.ratio(1, 8)? {
        Some(u.arbitrary()?)
    } else {
        None
    };
    let mut packet = Vec::new();
    PacketHeader {
        schema_id,
        sequence,
        baseline,
        prior,
        dictionary,
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
/// marked. An empty payload gets one (invalid) empty-content raw header so
/// the packet still has a last block.
fn raw_blocks(payload: &[u8], out: &mut Vec<u8>) {
    if payload.is_empty() {
        out.extend_from_slice(
            &BlockHeader {
                last: true,
                block_type: BlockType::Raw,
                size: 1,
            }
            .to_bytes(),
        );
        return;
    }
    let n = payload.len().div_ceil(MAX_BLOCK_CONTENT);
    for (i, chunk) in payload.chunks(MAX_BLOCK_CONTENT).enumerate() {
        out.extend_from_slice(
            &BlockHeader {
                last: i + 1 == n,
                block_type: BlockType::Raw,
                size: chunk.len(),
            }
            .to_bytes(),
        );
        out.extend_from_slice(chunk);
    }
}

/// A valid packet (against the baseline and prior of `refs`, with `dict`),
/// then up to 8 mutations: byte sets, bit flips, truncation, insertion,
/// removal.
fn arb_mutated_packet(
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
        (Some(b), Some(p)) if u.ratio(3, 4)? => {
            enc.encode_predicted_to_vec(&cur, sequence, b, p, &mut packet)
        }
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

// ---------------------------------------------------------------------------
// roundtrip
// ---------------------------------------------------------------------------

fn roundtrip_inner(u: &mut Unstructured<'_>) -> AResult<()> {
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
    if let Some(d) = &dict {
        match (enc.set_dictionary(Some(d)), dec.add_dictionary(d)) {
            (Ok(()), Ok(())) => {}
            (e, f) => panic!("raw-content dictionary rejected: encoder {e:?}, decoder {f:?}"),
        }
    }
    let checksum = u.ratio(1, 3)?;
    enc.set_checksum(checksum);
    let header = |prior: Option<u16>| {
        let mut h = PacketHeader {
            schema_id: schema.id(),
            sequence,
            baseline: baseline.map(|b| b.sequence),
            prior,
            dictionary: dict.as_ref().map(Dictionary::id),
            checksum: None,
        };
        if checksum {
            h.checksum = Some(cur.checksum(h.checksum_seed()));
        }
        h
    };

    // With a prior first, so a leak of prediction state into the plain
    // encode below would show.
    if let (Some(b), Some(p)) = (baseline, prior) {
        let mut packet = Vec::new();
        let bad = !distance_ok || (schema.predicts() && !prior_ok);
        match enc.encode_predicted_to_vec(&cur, sequence, b, p, &mut packet) {
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
                            dictionary: None,
                            checksum: None,
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

/// Checks a packet from [`Encoder::encode_predicted_to_vec`]: it decodes
/// with baseline and prior, is refused without the prior it names or with
/// another, and is the plain packet when the schema does not predict.
fn check_predicted(
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
    match dec.decode_predicted_into(packet, Some(baseline), Some(prior), &mut out) {
        Ok(h) => {
            assert_eq!(&h, expected, "decoded header (predicted)");
            assert!(&out == cur, "predicted packet decodes to another snapshot");
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
        let r = dec.decode_predicted_into(packet, Some(baseline), Some(wrong), &mut out);
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

/// Sets some entities of `cur` to exactly the prediction `2·base − prior` on
/// their [`DeltaOp::Predict`] fields (and the baseline elsewhere), the case
/// a predicting encoder codes as unchanged. Computed here independently of
/// the codec.
fn apply_predictions(
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
        let mut rng = Rng(u.arbitrary()?);
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
/// with [`DeltaOp::Predict`], `b0` elsewhere.
fn oracle_predict(ty: &EntityType, b0: &[u8], b1: &[u8]) -> Vec<u8> {
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
fn check_encode_error(e: &EncodeError, bad_distance: bool, limits: &Limits, cur: &Snapshot) {
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
fn check_roundtrip(
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

// ---------------------------------------------------------------------------
// no_output_leak
// ---------------------------------------------------------------------------

fn no_output_leak_inner(u: &mut Unstructured<'_>) -> AResult<()> {
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
        (Some(b), Some(pr)) => enc.encode_predicted_to_vec(
            &other,
            seq,
            Baseline {
                sequence: seq.wrapping_sub(1),
                snapshot: b,
            },
            Baseline {
                sequence: seq.wrapping_sub(2),
                snapshot: pr,
            },
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
        if let Err(e) = used.decode_predicted_into(&p, b, pr, &mut s) {
            panic!("valid packet does not decode: {e:?}");
        }
    }
    let mut junk = arb_junk(u, &schema)?;

    let picks: [u8; 6] = u.arbitrary()?;
    let packet = arb_packet(u, &schema, &refs, dict.as_ref())?;
    let (baseline, prior) = refs.pick(picks, &packet);
    let mut out = Snapshot::default();
    let expected = fresh.decode_predicted_into(&packet, baseline, prior, &mut out);
    let got = used.decode_predicted_into(&packet, baseline, prior, &mut junk);
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
fn arb_junk(u: &mut Unstructured<'_>, schema: &Schema) -> AResult<Snapshot> {
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

fn header_roundtrip_inner(u: &mut Unstructured<'_>) -> AResult<()> {
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
    let h = PacketHeader {
        schema_id: u.arbitrary()?,
        sequence,
        baseline,
        prior,
        dictionary: u.arbitrary()?,
        checksum: u.arbitrary()?,
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

    // Block headers: every 16-bit value is a header, and packing is inverse.
    let raw: [u8; 2] = u.arbitrary()?;
    let b = BlockHeader::from_bytes(raw);
    assert!((1..=MAX_BLOCK_CONTENT).contains(&b.size), "{b:?}");
    assert_eq!(b.to_bytes(), raw, "from_bytes then to_bytes of {raw:?}");
    let b = BlockHeader {
        last: u.arbitrary()?,
        block_type: *u.choose(&[
            BlockType::Raw,
            BlockType::Rle,
            BlockType::Zstd,
            BlockType::Huffman,
        ])?,
        size: u.int_in_range(1..=MAX_BLOCK_CONTENT)?,
    };
    assert_eq!(
        BlockHeader::from_bytes(b.to_bytes()),
        b,
        "to_bytes then from_bytes"
    );
    assert_eq!(b.to_bytes().len(), BLOCK_HEADER_LEN);
    Ok(())
}

// ---------------------------------------------------------------------------
// subset_roundtrip
// ---------------------------------------------------------------------------

fn subset_roundtrip_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    // Arbitrary bytes as a subset of an arbitrary universe.
    let universe = match u.int_in_range(0u8..=3)? {
        0 => u.int_in_range(0..=16)?,
        1 | 2 => u.int_in_range(0..=2000)?,
        _ => u.int_in_range(0..=1 << 16)?,
    };
    let split = u.int_in_range(0..=u.len())?;
    let bytes = u.bytes(split)?;
    let mut out = vec![7, 7, 7];
    if let Some(n) = subset_decode(bytes, universe, &mut out) {
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

fn check_subset(universe: usize, members: &[u32]) {
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

fn check_subset_roundtrip(universe: usize, members: &[u32]) {
    let mut enc = vec![0xab];
    subset_encode(universe, members, &mut enc);
    let enc = &enc[1..];
    if universe == 0 {
        assert!(enc.is_empty(), "{} bytes for an empty universe", enc.len());
    }
    assert!(
        enc.len() <= 1 + universe.div_ceil(8),
        "{} bytes for universe {universe}, worse than a bitmap",
        enc.len()
    );
    let mut back = vec![1, 2, 3];
    assert_eq!(
        subset_decode(enc, universe, &mut back),
        Some(enc.len()),
        "decode of encode"
    );
    assert_eq!(back, members, "subset round trip, universe {universe}");
    // Trailing bytes are left alone.
    let mut longer = enc.to_vec();
    longer.extend_from_slice(&[0x80, 0xff]);
    assert_eq!(subset_decode(&longer, universe, &mut back), Some(enc.len()));
    assert_eq!(back, members);
}

// ---------------------------------------------------------------------------
// blocks_decode
// ---------------------------------------------------------------------------

fn blocks_decode_inner(u: &mut Unstructured<'_>) -> AResult<()> {
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
fn arb_payload(u: &mut Unstructured<'_>) -> AResult<Vec<u8>> {
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
            let mut rng = Rng(u.arbitrary()?);
            let mask = *u.choose(&[0x01u8, 0x03, 0x0f, 0xff])?;
            (0..n).map(|_| rng.next() as u8 & mask).collect()
        }
    })
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// The rest of the input.
fn rest<'a>(u: &mut Unstructured<'a>) -> AResult<&'a [u8]> {
    let n = u.len();
    u.bytes(n)
}

const PRIMITIVES: [Primitive; 10] = [
    Primitive::U8,
    Primitive::I8,
    Primitive::U16,
    Primitive::I16,
    Primitive::U32,
    Primitive::I32,
    Primitive::U64,
    Primitive::I64,
    Primitive::F32,
    Primitive::F64,
];

const DELTA_OPS: [Option<DeltaOp>; 6] = [
    None,
    Some(DeltaOp::Sub),
    Some(DeltaOp::Xor),
    Some(DeltaOp::Int),
    Some(DeltaOp::None),
    Some(DeltaOp::Predict),
];

/// A valid schema: 1..=`sections` entity types of 1..=`fields` fields, each
/// any primitive, array length 1..=`max_len`, any delta operator, and
/// sometimes a default record.
fn arb_schema(
    u: &mut Unstructured<'_>,
    sections: usize,
    fields: usize,
    max_len: usize,
) -> AResult<Schema> {
    let mut b = Schema::builder();
    for s in 0..u.int_in_range(1..=sections)? {
        b = b.entity(&format!("e{s}"));
        let mut size = 0;
        for f in 0..u.int_in_range(1..=fields)? {
            let ty = *u.choose(&PRIMITIVES)?;
            let len = u.int_in_range(1..=max_len)?;
            size += ty.size() * len;
            b = b.field_with(Field {
                name: format!("f{f}"),
                ty,
                len,
                delta: *u.choose(&DELTA_OPS)?,
            });
        }
        if u.ratio(1, 4)? {
            let mut rec = Vec::with_capacity(size);
            arb_record(u, size, &[], &mut rec)?;
            b = b.default_record(&rec);
        }
    }
    match b.build() {
        Ok(s) => Ok(s),
        Err(e) => panic!("valid schema rejected: {e:?}"),
    }
}

/// Small limits, so both limit checks are reached.
fn arb_tight_limits(u: &mut Unstructured<'_>) -> AResult<Limits> {
    Ok(Limits {
        max_entities_per_section: u.int_in_range(0..=24)?,
        max_decoded_bytes: u.int_in_range(0..=3000)?,
        max_snapshot_bytes: u.int_in_range(0..=4000)?,
    })
}

/// A raw-content dictionary: fuzzer bytes, or record bytes of `base` so the
/// encoder finds matches in it. Never starts with zstd's dictionary magic.
fn arb_dictionary(
    u: &mut Unstructured<'_>,
    id: u32,
    base: Option<&Snapshot>,
) -> AResult<Dictionary> {
    let mut bytes = match base {
        Some(b) if u.ratio(1, 2)? => {
            let mut v: Vec<u8> = b
                .sections()
                .iter()
                .flat_map(|s| s.records().iter().copied())
                .collect();
            v.truncate(u.int_in_range(0..=4096)?);
            v
        }
        _ => {
            let n = u.int_in_range(0..=256)?;
            u.bytes(n.min(u.len()))?.to_vec()
        }
    };
    if bytes.len() < 16 && u.ratio(1, 2)? {
        bytes.resize(16, 0x5a);
    }
    if bytes.starts_with(&[0x37, 0xa4, 0x30, 0xec]) {
        bytes[0] = 0;
    }
    Ok(Dictionary::new(id, bytes))
}

/// One record of `rs` bytes appended to `out`: random bytes (NaN payloads and
/// all), a tweak of `prev`, a constant, or repeated float specials.
fn arb_record(u: &mut Unstructured<'_>, rs: usize, prev: &[u8], out: &mut Vec<u8>) -> AResult<()> {
    const SPECIALS: [u64; 6] = [
        0x7ff0_0000_0000_0001, // f64 signalling NaN with payload
        0xfff8_0000_dead_beef, // f64 negative quiet NaN with payload
        0x8000_0000_8000_0000, // -0.0 as f32 pairs
        0x7f80_0001_ffc0_1234, // f32 sNaN, f32 negative qNaN with payload
        0x7f80_0000_ff80_0000, // f32 inf, -inf
        0x0000_0001_0000_0001, // subnormals
    ];
    let start = out.len();
    match u.int_in_range(0u8..=5)? {
        0 | 1 => {
            for _ in 0..rs {
                out.push(u.arbitrary()?);
            }
        }
        2 if prev.len() == rs && rs > 0 => {
            out.extend_from_slice(prev);
            for _ in 0..u.int_in_range(0u8..=3)? {
                let at = start + u.int_in_range(0..=rs - 1)?;
                out[at] = out[at].wrapping_add(u.arbitrary()?);
            }
        }
        3 => {
            let b = *u.choose(&[0x00, 0xff, 0x7f, 0x80, 0x01])?;
            out.resize(start + rs, b);
        }
        4 => {
            let pat = u.choose(&SPECIALS)?.to_le_bytes();
            out.extend(pat.iter().copied().cycle().take(rs));
        }
        _ => out.resize(start + rs, 0),
    }
    Ok(())
}

/// Ascending entity ids: small, near `u32::MAX`, or anywhere, with gaps
/// mostly small.
fn arb_ids(u: &mut Unstructured<'_>, max: usize) -> AResult<Vec<u32>> {
    let n = u.int_in_range(0..=max)?;
    let mut id: u64 = match u.int_in_range(0u8..=3)? {
        0 | 1 => u.int_in_range(0..=8)?,
        2 => u64::from(u32::MAX) - u.int_in_range(0..=40)?,
        _ => u64::from(u.arbitrary::<u32>()?),
    };
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let Ok(v) = u32::try_from(id) else { break };
        ids.push(v);
        id += match u.int_in_range(0u8..=7)? {
            0..=5 => u.int_in_range(1..=3)?,
            6 => u.int_in_range(1..=1000)?,
            _ => 1 + u64::from(u.arbitrary::<u32>()?),
        };
    }
    Ok(ids)
}

/// A snapshot: per section either a few fuzzer-chosen entities or (if
/// `bulk`) sometimes many generated ones, enough to span several blocks.
fn arb_snapshot(u: &mut Unstructured<'_>, schema: &Schema, bulk: bool) -> AResult<Snapshot> {
    let mut sections = Vec::new();
    for ty in schema.sections() {
        let rs = ty.record_size();
        if bulk && u.ratio(1, 8)? {
            let n = u.int_in_range(1..=1200)?;
            let mut rng = Rng(u.arbitrary()?);
            let mut map = BTreeMap::new();
            let mut id = rng.below(16) as u32;
            let mut prev = vec![0u8; rs];
            let noise = u.int_in_range(0u8..=3)?;
            for _ in 0..n {
                let rec = rng.record(&prev, noise);
                map.insert(id, rec.clone());
                prev = rec;
                id = id.saturating_add(1 + rng.below(3) as u32);
            }
            sections.push(section_from_map(map, rs));
        } else {
            let ids = arb_ids(u, 12)?;
            let mut records = Vec::with_capacity(ids.len() * rs);
            for i in 0..ids.len() {
                let prev = if i > 0 {
                    records[(i - 1) * rs..].to_vec()
                } else {
                    Vec::new()
                };
                arb_record(u, rs, &prev, &mut records)?;
            }
            match Section::from_parts(ids, records, rs) {
                Ok(s) => sections.push(s),
                Err(e) => panic!("generated section rejected: {e:?}"),
            }
        }
    }
    match Snapshot::from_sections(schema, sections) {
        Ok(s) => Ok(s),
        Err(e) => panic!("generated snapshot rejected: {e:?}"),
    }
}

/// The next tick after `base`: entities despawn, stay, change and spawn.
fn evolve_snapshot(
    u: &mut Unstructured<'_>,
    schema: &Schema,
    base: &Snapshot,
    bulk: bool,
) -> AResult<Snapshot> {
    let mut sections = Vec::new();
    for (ty, b) in schema.sections().iter().zip(base.sections()) {
        let rs = ty.record_size();
        let mut map: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        if b.len() > 32 || (bulk && u.ratio(1, 8)?) {
            // Generated evolution, for large sections.
            let mut rng = Rng(u.arbitrary()?);
            let despawn = u.int_in_range(0..=64u64)?;
            let change = u.int_in_range(0..=256u64)?;
            let noise = u.int_in_range(0u8..=3)?;
            for (id, rec) in b.iter() {
                let r = rng.below(256);
                if r < despawn {
                    continue;
                }
                let rec = if rng.below(256) < change {
                    rng.record(rec, noise)
                } else {
                    rec.to_vec()
                };
                map.insert(id, rec);
            }
            let spawn = u.int_in_range(0..=b.len().min(400) + 8)?;
            let top = b.ids().last().map_or(64, |&t| u64::from(t) + 64);
            let mut prev = vec![0u8; rs];
            for _ in 0..spawn {
                let id = rng.below(top.min(u64::from(u32::MAX)) + 1) as u32;
                let rec = rng.record(&prev, noise);
                prev.clone_from(&rec);
                map.insert(id, rec);
            }
        } else {
            let mut rec = Vec::with_capacity(rs);
            for (id, old) in b.iter() {
                match u.int_in_range(0u8..=4)? {
                    0 => {}
                    1 | 2 => {
                        map.insert(id, old.to_vec());
                    }
                    _ => {
                        rec.clear();
                        arb_record(u, rs, old, &mut rec)?;
                        map.insert(id, rec.clone());
                    }
                }
            }
            let mut prev = Vec::new();
            for id in arb_ids(u, 6)? {
                rec.clear();
                arb_record(u, rs, &prev, &mut rec)?;
                prev.clone_from(&rec);
                map.insert(id, rec.clone());
            }
        }
        sections.push(section_from_map(map, rs));
    }
    match Snapshot::from_sections(schema, sections) {
        Ok(s) => Ok(s),
        Err(e) => panic!("evolved snapshot rejected: {e:?}"),
    }
}

fn section_from_map(map: BTreeMap<u32, Vec<u8>>, rs: usize) -> Section {
    let ids: Vec<u32> = map.keys().copied().collect();
    let records: Vec<u8> = map.into_values().flatten().collect();
    match Section::from_parts(ids, records, rs) {
        Ok(s) => s,
        Err(e) => panic!("generated section rejected: {e:?}"),
    }
}

/// splitmix64, for the bulk generators (fuzzer bytes pick the seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// A record near `prev`: `noise` 0 copies it, 1 nudges a byte, 2 nudges
    /// a few, 3 is random.
    fn record(&mut self, prev: &[u8], noise: u8) -> Vec<u8> {
        let mut r = prev.to_vec();
        if r.is_empty() {
            return r;
        }
        let n = r.len() as u64;
        match noise {
            0 => {}
            1 => {
                let at = self.below(n) as usize;
                r[at] = r[at].wrapping_add(1);
            }
            2 => {
                for _ in 0..4 {
                    let at = self.below(n) as usize;
                    r[at] = r[at].wrapping_add(self.next() as u8 & 7);
                }
            }
            _ => r.iter_mut().for_each(|b| *b = self.next() as u8),
        }
        r
    }
}

// ---------------------------------------------------------------------------
// Session, capture and dictionary-set properties
// ---------------------------------------------------------------------------

fn session_ops_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use crate::session::{
        seq_newer, Client, ClientConfig, DropReason, Received, Server, ServerConfig, View,
    };
    use std::sync::Arc;

    let schema = arb_schema(u, 2, 3, 2)?;
    let history = u.int_in_range(1..=12usize)?;
    let config = ServerConfig {
        history,
        first_sequence: u.arbitrary()?,
        checksum: u.arbitrary()?,
        ..ServerConfig::default()
    };
    let Ok(mut server) = Server::new(schema.clone(), config) else {
        return Ok(());
    };
    let client_cfg = ClientConfig {
        history,
        ..ClientConfig::default()
    };
    let Ok(mut client) = Client::new(schema.clone(), client_cfg) else {
        return Ok(());
    };
    server.connect(1);
    let mut world = arb_snapshot(u, &schema, false)?;
    let mut sent: BTreeMap<u16, Arc<Snapshot>> = BTreeMap::new();
    let mut flight: Vec<Vec<u8>> = Vec::new();
    for _ in 0..u.int_in_range(1..=200usize)? {
        if u.is_empty() {
            break;
        }
        let before = server.acked(1);
        match u.int_in_range(0..=8u8)? {
            0 | 1 => {
                world = evolve_snapshot(u, &schema, &world, false)?;
                let w = Arc::new(world.clone());
                let seq = server.begin_tick(w.clone());
                sent.insert(seq, w);
                if let Ok(p) = server.send(1, &View::all()) {
                    flight.push(p.to_vec());
                }
            }
            2 | 3 if !flight.is_empty() => {
                let i = u.choose_index(flight.len())?;
                let p = flight.remove(i);
                match client.receive(&p) {
                    Received::Applied { sequence, .. } => {
                        assert_eq!(
                            client.get(sequence),
                            sent.get(&sequence).map(|s| &**s),
                            "applied a wrong state"
                        );
                    }
                    Received::Dropped(DropReason::Undecodable(e)) => {
                        panic!("server packet undecodable: {e}")
                    }
                    Received::Dropped(_) => {}
                }
            }
            4 if !flight.is_empty() => {
                let i = u.choose_index(flight.len())?;
                flight.remove(i);
            }
            5 if !flight.is_empty() => {
                let i = u.choose_index(flight.len())?;
                let p = flight[i].clone();
                flight.push(p);
            }
            6 => {
                let _ = server.handle_message(&client.message(1).to_bytes());
            }
            7 => {
                let _ = server.ack(1, u.arbitrary()?);
                let garbage: Vec<u8> = u.arbitrary()?;
                let _ = server.handle_message(&garbage);
                let r = client.receive(&garbage);
                if let Received::Applied { sequence, .. } = r {
                    // Only a byte-exact copy of a real packet can apply.
                    assert_eq!(client.get(sequence), sent.get(&sequence).map(|s| &**s));
                }
            }
            _ => client.request_full(),
        }
        if let Some((seq, snap)) = client.latest() {
            assert_eq!(
                Some(snap),
                sent.get(&seq).map(|s| &**s),
                "newest state not one the server sent"
            );
        }
        if let (Some(b), Some(a)) = (before, server.acked(1)) {
            assert!(
                a == b || seq_newer(a, b),
                "baseline moved backwards: {b} -> {a}"
            );
        }
        if let Some(a) = server.acked(1) {
            assert!(sent.contains_key(&a), "baseline {a} was never sent");
        }
    }
    Ok(())
}

fn capture_read_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use crate::capture::{CaptureHeader, CaptureLimits, CaptureReader, CaptureWriter};

    let limits = CaptureLimits {
        max_header_bytes: 64 << 10,
        max_record_bytes: 256 << 10,
        decoder: Limits {
            max_entities_per_section: 1000,
            max_decoded_bytes: 256 << 10,
            max_snapshot_bytes: 1 << 20,
        },
    };
    let (bytes, written) = if u.arbitrary()? {
        (rest(u)?.to_vec(), None)
    } else {
        let schema = arb_schema(u, 2, 3, 2)?;
        let header = CaptureHeader::new("fuzz", "1", 60, schema.clone());
        let Ok(mut w) = CaptureWriter::new(Vec::new(), &header, Default::default()) else {
            return Ok(());
        };
        let mut snap = arb_snapshot(u, &schema, false)?;
        let mut ticks = Vec::new();
        for t in 0..u.int_in_range(0..=6u64)? {
            if w.tick(t, &snap).is_err() {
                return Ok(());
            }
            ticks.push(snap.clone());
            snap = evolve_snapshot(u, &schema, &snap, false)?;
        }
        let Ok(mut bytes) = w.finish() else {
            return Ok(());
        };
        let intact = !u.arbitrary::<bool>()?;
        if !intact && !bytes.is_empty() {
            for _ in 0..u.int_in_range(1..=4usize)? {
                let i = u.choose_index(bytes.len())?;
                bytes[i] = u.arbitrary()?;
            }
            let keep = u.int_in_range(0..=bytes.len())?;
            bytes.truncate(keep);
        }
        (bytes, intact.then_some(ticks))
    };
    let len = bytes.len() as u64;
    let reader = match CaptureReader::with_limits(&bytes[..], limits) {
        Ok(r) => r,
        Err(e) => {
            assert!(written.is_none(), "intact capture refused: {e}");
            assert!(e.offset().is_none_or(|o| o <= len), "offset past the input");
            return Ok(());
        }
    };
    let mut got = Vec::new();
    for t in reader.ticks() {
        match t {
            Ok(t) => got.push(t.snapshot),
            Err(e) => {
                assert!(written.is_none(), "intact capture failed: {e}");
                assert!(e.offset().is_none_or(|o| o <= len), "offset past the input");
                break;
            }
        }
    }
    if let Some(w) = written {
        assert_eq!(got, w, "capture round trip");
    }
    Ok(())
}

fn dictset_load_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use crate::dictset::{DictSetError, DictionarySet};

    let mut manifest: Vec<u8>;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    if u.arbitrary()? {
        manifest = u.arbitrary()?;
        for _ in 0..u.int_in_range(0..=2usize)? {
            files.insert(u.arbitrary()?, u.arbitrary()?);
        }
    } else {
        // The shipped racing set, with bytes of the manifest or of one
        // dictionary changed.
        manifest = include_bytes!("../../dictionaries/racing-lobby/1/manifest.json").to_vec();
        files.insert(
            "keyframe.dict".into(),
            include_bytes!("../../dictionaries/racing-lobby/1/keyframe.dict").to_vec(),
        );
        files.insert(
            "delta.dict".into(),
            include_bytes!("../../dictionaries/racing-lobby/1/delta.dict").to_vec(),
        );
        for _ in 0..u.int_in_range(0..=3usize)? {
            let target = match u.int_in_range(0..=2u8)? {
                0 => &mut manifest,
                1 => files.entry("keyframe.dict".into()).or_default(),
                _ => files.entry("delta.dict".into()).or_default(),
            };
            if !target.is_empty() {
                let i = u.choose_index(target.len())?;
                target[i] = u.arbitrary()?;
            }
        }
    }
    let r = DictionarySet::from_manifest(&manifest, |name| {
        files.get(name).cloned().ok_or_else(|| DictSetError::Io {
            file: name.into(),
            kind: std::io::ErrorKind::NotFound,
            message: "missing".into(),
        })
    });
    if let Ok(set) = r {
        for (_, d) in set.dictionaries() {
            assert!(
                set.manifest().dictionaries.iter().any(|e| e.id == d.id()),
                "dictionary not in manifest"
            );
        }
        let _ = set.decoder();
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Transport properties
// ---------------------------------------------------------------------------

/// Fragment reassembly under arbitrary configs and hostile datagrams
/// (garbage, honest parts with header fields changed, drops, duplicates,
/// reordering, time jumps): `handle` never panics, buffered bytes and piles
/// never exceed the caps, nothing longer than the largest allowed packet
/// comes out. Then honest parts only, in an arbitrary order with
/// duplicates: every packet reassembles exactly, once.
pub fn fragment_reassembly(data: &[u8]) {
    let _ = fragment_reassembly_inner(&mut Unstructured::new(data));
}

/// Chunk receiver and sender fed arbitrary or mutated slices and acks:
/// typed errors, never a panic, acks within their size bound, no chunk
/// above the receiver's limit. Then an honest transfer over a link whose
/// drops, duplicates and delays the input picks completes, and the chunk
/// read equals the chunk sent.
pub fn chunk_receiver(data: &[u8]) {
    let _ = chunk_receiver_inner(&mut Unstructured::new(data));
}

fn fragment_reassembly_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use crate::transport::{FragmentConfig, FragmentHeader, Fragmenter, Reassembler};
    use std::time::Duration;

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

fn chunk_receiver_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use crate::transport::chunk::{MAX_ACK_PACKET, SLICE_PACKET};
    use crate::transport::{ChunkConfig, ChunkReceiver, ChunkSender, MAX_CHUNK_SIZE};
    use std::time::Duration;

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
                let mut d = vec![SLICE_PACKET];
                d.extend_from_slice(&u.arbitrary::<[u8; 6]>()?);
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

// ---------------------------------------------------------------------------
// Huffman blocks
// ---------------------------------------------------------------------------

/// Arbitrary bytes as a Huffman block body under a trained or arbitrary
/// table: decodes or gives a typed error, never panics, never regenerates
/// more than 8192 bytes or more symbols than the stream has bits; and
/// encode then decode of arbitrary data under the table is the identity.
pub fn huffman_decode(data: &[u8]) {
    let _ = huffman_decode_inner(&mut Unstructured::new(data));
}

fn huffman_decode_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use crate::internals::{huffman_decode as decode_body, huffman_encode};
    use crate::HuffmanTable;

    let table = if u.arbitrary()? {
        let mut counts = [0u64; 256];
        for c in counts.iter_mut() {
            *c = if u.arbitrary()? {
                u64::from(u.arbitrary::<u16>()?) << u.int_in_range(0..=20u32)?
            } else {
                0
            };
        }
        HuffmanTable::from_counts(&counts)
    } else {
        match HuffmanTable::from_bytes(u.bytes(HuffmanTable::SERIALIZED_LEN)?) {
            Ok(t) => t,
            Err(_) => return Ok(()),
        }
    };
    let len = u.int_in_range(1..=MAX_BLOCK_CONTENT)?;
    let plain: Vec<u8> = (0..len).map(|_| u.arbitrary::<u8>().unwrap_or(0)).collect();
    let mut body = Vec::new();
    huffman_encode(&table, &plain, &mut body);
    let mut out = Vec::new();
    assert_eq!(
        decode_body(&table, &body, &mut out),
        Ok(()),
        "own encoding refused"
    );
    assert_eq!(out, plain, "Huffman round trip");
    let hostile = rest(u)?;
    if decode_body(&table, hostile, &mut out).is_ok() {
        assert!(out.len() <= MAX_BLOCK_CONTENT && out.len() <= hostile.len() * 8);
    }
    Ok(())
}
