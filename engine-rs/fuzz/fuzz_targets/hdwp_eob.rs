//! libFuzzer entry of `hd_engine_fuzz::hdwp_eob` (the target and its properties live there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hd_engine_fuzz::hdwp_eob::run(data));
