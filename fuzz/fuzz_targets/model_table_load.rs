#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tickpack_testkit::props::model_table_load(data));
