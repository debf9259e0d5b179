//! libFuzzer entry of `hd_engine_fuzz::segment_read` (the target and its properties live there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hd_engine_fuzz::segment_read::run(data));
