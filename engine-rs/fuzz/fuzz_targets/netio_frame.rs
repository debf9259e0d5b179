//! libFuzzer entry of `hd_engine_fuzz::netio_frame` (the target and its properties live there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hd_engine_fuzz::netio_frame::run(data));
