#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tickpack::fuzz_props::fragment_reassembly(data));
