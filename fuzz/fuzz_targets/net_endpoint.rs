#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tickpack_testkit::props::net_endpoint(data));
