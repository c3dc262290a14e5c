#![no_main]
#[path = "../src/session_frames.rs"]
mod session_frames;
libfuzzer_sys::fuzz_target!(|data: &[u8]| session_frames::run(data));
