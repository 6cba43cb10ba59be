#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tickpack::fuzz_props::huffman_decode(data));
