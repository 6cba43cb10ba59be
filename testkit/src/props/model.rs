//! The context model: its stream decoder, its table loader, and model
//! blocks inside packets.

use super::*;
use tickpack::model::{
    ModelDecoder, ModelEncoder, ModelShape, ModelSink, ModelStats, ModelTable, DEFAULT_MAX_SLOTS,
};
use tickpack::Entropy;

#[derive(Debug, Clone, Copy)]
enum Tok {
    Bit(u32, bool),
    Uint(u32, u64),
    Sint(u32, u64),
}

fn arb_tokens(u: &mut Unstructured<'_>, shape: ModelShape) -> AResult<Vec<Tok>> {
    let n = u.int_in_range(0..=400usize)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let v: u64 = match u.int_in_range(0..=3u8)? {
            0 => u.int_in_range(0..=3)?,
            1 => u64::from(u.arbitrary::<u16>()?),
            2 => u.arbitrary()?,
            _ => u64::MAX - u64::from(u.arbitrary::<u8>()?),
        };
        let t = match u.int_in_range(0..=2u8)? {
            0 if shape.bit_contexts > 0 => {
                Tok::Bit(u.int_in_range(0..=shape.bit_contexts - 1)?, u.ratio(1, 5)?)
            }
            1 if shape.value_contexts > 0 => {
                Tok::Uint(u.int_in_range(0..=shape.value_contexts - 1)?, v)
            }
            2 if shape.value_contexts > 0 => {
                Tok::Sint(u.int_in_range(0..=shape.value_contexts - 1)?, v)
            }
            _ => continue,
        };
        out.push(t);
    }
    Ok(out)
}

fn feed(sink: &mut impl ModelSink, tokens: &[Tok]) {
    for &t in tokens {
        match t {
            Tok::Bit(c, b) => sink.bit(c, b),
            Tok::Uint(c, v) => sink.uint(c, v),
            Tok::Sint(c, v) => sink.sint(c, v),
        }
    }
}

pub(super) fn model_decode_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let shape = ModelShape {
        bit_contexts: u.int_in_range(0..=8)?,
        value_contexts: u.int_in_range(0..=4)?,
    };
    let tokens = arb_tokens(u, shape)?;
    let table = match u.int_in_range(0..=3u8)? {
        // Trained on the tokens themselves: skewed probabilities.
        0 => {
            let Ok(mut stats) = ModelStats::new(shape) else {
                return Ok(());
            };
            feed(&mut stats, &tokens);
            assert_eq!(stats.error(), None, "in-range tokens counted as errors");
            ModelTable::from_stats(&stats)
        }
        // Trained on unrelated tokens.
        1 => {
            let other = arb_tokens(u, shape)?;
            let Ok(mut stats) = ModelStats::new(shape) else {
                return Ok(());
            };
            feed(&mut stats, &other);
            ModelTable::from_stats(&stats)
        }
        // Arbitrary probabilities, extremes included: the class
        // frequencies derived from them cover every leaf.
        2 => {
            let slots = shape.slots() as usize;
            let mut probs = Vec::with_capacity(slots);
            for _ in 0..slots {
                probs.push(match u.int_in_range(0..=2u8)? {
                    0 => 1,
                    1 => 4095,
                    _ => u.int_in_range(1..=4095u16)?,
                });
            }
            match ModelTable::from_probabilities(shape, probs) {
                Ok(t) => t,
                Err(e) => panic!("probabilities in range refused: {e}"),
            }
        }
        _ => match ModelTable::uniform(shape) {
            Ok(t) => t,
            Err(_) => return Ok(()),
        },
    };

    // Encode then decode is the identity, and the stream ends where the
    // decoder stops.
    let mut enc = ModelEncoder::new(&table, Vec::new());
    feed(&mut enc, &tokens);
    let bytes = match enc.finish() {
        Ok(b) => b,
        Err(e) => panic!("in-range tokens refused: {e}"),
    };
    let mut dec = match ModelDecoder::new(&table, &bytes) {
        Ok(d) => d,
        Err(e) => panic!("own stream refused at start: {e}"),
    };
    for &t in &tokens {
        let ok = match t {
            Tok::Bit(c, b) => dec.bit(c) == Ok(b),
            Tok::Uint(c, v) => dec.uint(c) == Ok(v),
            Tok::Sint(c, v) => dec.sint(c) == Ok(v),
        };
        assert!(ok, "model round trip differs at {t:?}");
    }
    assert_eq!(dec.finish(), Ok(()), "own stream has trailing bytes");

    // Hostile bytes under the same table: values or typed errors, any
    // number of calls, no panic.
    let calls = u.int_in_range(0..=600usize)?;
    let ops: Vec<u8> = (0..calls).map(|_| u.arbitrary().unwrap_or(0)).collect();
    let hostile = rest(u)?;
    if let Ok(mut dec) = ModelDecoder::new(&table, hostile) {
        for op in ops {
            let c = u32::from(op >> 2);
            let r = match op & 3 {
                0 => dec.bit(c).map(u64::from),
                1 => dec.uint(c),
                _ => dec.sint(c),
            };
            if r.is_err() {
                break;
            }
        }
        let _ = dec.finish();
    }
    Ok(())
}

/// Recomputes the checksum at the end of model table `bytes` (FORMAT.md,
/// "Model table": xxh3-64 of everything before it) so that damage to the
/// fields it covers reaches their parser; too short a table is left as is.
pub(super) fn fix_model_checksum(bytes: &mut [u8]) {
    const CHECKSUM_LEN: usize = 8;
    let Some(body_len) = bytes.len().checked_sub(CHECKSUM_LEN) else {
        return;
    };
    let (body, sum) = bytes.split_at_mut(body_len);
    sum.copy_from_slice(&xxhash_rust::xxh3::xxh3_64(body).to_le_bytes());
}

pub(super) fn model_table_load_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let bytes: Vec<u8> = if u.arbitrary()? {
        // A valid table, then damaged.
        let shape = ModelShape {
            bit_contexts: u.int_in_range(0..=40)?,
            value_contexts: u.int_in_range(0..=6)?,
        };
        let tokens = arb_tokens(u, shape)?;
        let Ok(mut stats) = ModelStats::new(shape) else {
            return Ok(());
        };
        feed(&mut stats, &tokens);
        let table = ModelTable::from_stats(&stats);
        let mut b = table.to_bytes();
        assert_eq!(
            ModelTable::from_bytes(&b).as_ref(),
            Ok(&table),
            "table round trip"
        );
        for _ in 0..u.int_in_range(0..=3u8)? {
            match u.int_in_range(0..=2u8)? {
                0 if !b.is_empty() => {
                    let at = u.int_in_range(0..=b.len() - 1)?;
                    b[at] ^= u.arbitrary::<u8>()? | 1;
                }
                1 => b.truncate(u.int_in_range(0..=b.len())?),
                _ => {
                    let n = u.int_in_range(0..=8)?;
                    b.extend_from_slice(u.bytes(n)?);
                }
            }
        }
        // Mostly with the checksum recomputed, else every change stops at
        // it and the fields behind it are never parsed damaged.
        if u.ratio(3, 4)? {
            fix_model_checksum(&mut b);
        }
        b
    } else {
        rest(u)?.to_vec()
    };
    let limit = if u.arbitrary().unwrap_or(false) {
        u.int_in_range(0..=4096usize).unwrap_or(0)
    } else {
        DEFAULT_MAX_SLOTS
    };
    if let Ok(t) = ModelTable::from_bytes_limited(&bytes, limit) {
        assert!(
            t.probabilities().len() <= limit,
            "table over the slot limit"
        );
        assert!(
            t.probabilities().iter().all(|&p| (1..4096).contains(&p)),
            "probability out of range"
        );
        assert_eq!(
            ModelTable::from_bytes_limited(&t.to_bytes(), limit).as_ref(),
            Ok(&t),
            "reloaded table differs"
        );
        // One byte form per table: what loads saves to the same bytes.
        assert!(
            t.to_bytes() == bytes,
            "a table loaded from a second byte form"
        );
    }
    Ok(())
}

pub(super) fn model_block_decode_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    let schema = arb_schema(u, 3, 5, 4)?;
    let mut enc = Encoder::new(schema.clone());
    let Some(shape) = enc.model_shape() else {
        return Ok(());
    };
    let Ok(mut stats) = ModelStats::new(shape) else {
        return Ok(());
    };
    let base = arb_snapshot(u, &schema, false)?;
    let cur = evolve_snapshot(u, &schema, &base, false)?;
    let b = Baseline {
        sequence: 1,
        snapshot: &base,
    };
    // Train on this very packet so the model block is chosen.
    if let Err(e) = enc.model_tokens(&cur, 2, b, &mut stats) {
        panic!("model_tokens refused a valid snapshot: {e}");
    }
    let dict = Dictionary::new(DICT_ID, vec![7u8; 64]).with_model(ModelTable::from_stats(&stats));
    if enc.set_dictionary(Some(&dict)).is_err() {
        return Ok(());
    }
    enc.set_entropy(Entropy::Model);
    let packet = match enc.encode(&cur, 2, Some(b)) {
        Ok(p) => p,
        Err(e) => panic!("encode refused a valid snapshot: {e}"),
    };
    let mut dec = Decoder::new(schema.clone());
    if dec.add_dictionary(&dict).is_err() {
        return Ok(());
    }
    match dec.decode(&packet, Some(b)) {
        Ok((_, got)) => assert!(got == cur, "model packet decodes to another snapshot"),
        Err(e) => panic!("own model packet refused: {e}"),
    }
    // The same packet damaged: a snapshot or a typed error.
    let mut bad = packet.clone();
    for _ in 0..u.int_in_range(1..=4u8)? {
        match u.int_in_range(0..=2u8)? {
            0 if !bad.is_empty() => {
                let at = u.int_in_range(0..=bad.len() - 1)?;
                bad[at] ^= u.arbitrary::<u8>()? | 1;
            }
            1 => bad.truncate(u.int_in_range(0..=bad.len())?),
            _ => {
                let n = u.int_in_range(0..=4)?;
                bad.extend_from_slice(u.bytes(n)?);
            }
        }
    }
    let _ = dec.decode(&bad, Some(b));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack::model::ModelError;

    #[test]
    fn a_fixed_checksum_lets_damage_reach_the_fields_behind_it() {
        let shape = ModelShape {
            bit_contexts: 16,
            value_contexts: 0,
        };
        let mut stats = ModelStats::new(shape).unwrap();
        let tokens: Vec<Tok> = (0..256u32).map(|i| Tok::Bit(i % 16, i % 3 == 0)).collect();
        feed(&mut stats, &tokens);
        let table = ModelTable::from_stats(&stats);
        let intact = table.to_bytes();
        // The last two body bytes are a stored probability.
        let at = intact.len() - 9;
        let mut b = intact.clone();
        b[at] = 0;
        b[at - 1] = 0;
        assert!(matches!(
            ModelTable::from_bytes(&b),
            Err(ModelError::Checksum { .. })
        ));
        fix_model_checksum(&mut b);
        let e = ModelTable::from_bytes(&b).unwrap_err();
        assert!(!matches!(e, ModelError::Checksum { .. }), "{e}");
        // An intact body with a damaged checksum is whole again.
        let mut c = intact.clone();
        *c.last_mut().unwrap() ^= 1;
        fix_model_checksum(&mut c);
        assert_eq!(c, intact);
    }
}
