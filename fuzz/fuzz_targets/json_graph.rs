#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| rffi_fuzz::json_graph::run(data));
