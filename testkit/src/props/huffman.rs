//! Huffman block bodies under trained and arbitrary tables.

use super::*;

pub(super) fn huffman_decode_inner(u: &mut Unstructured<'_>) -> AResult<()> {
    use tickpack::internals::{huffman_decode as decode_body, huffman_encode};
    use tickpack::HuffmanTable;

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
