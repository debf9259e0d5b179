//! Fuzzes the segment reader with arbitrary files: `SegmentReader::open`, `read_blocks` over every
//! block, and `verify_segment`. Beyond "never panics", a file that opens must hand back exactly
//! `records * record_size` bytes. Header and footer checksums are rewritten first where the file's
//! own lengths allow it, so mutations reach the layout checks instead of stopping at a CRC.
#![no_main]

use std::path::PathBuf;

use hd_engine_core::segment::{verify_segment, SegmentReader, TAIL_LEN};
use libfuzzer_sys::fuzz_target;

fn reseal(data: &mut [u8]) {
    if data.len() >= 28 {
        let h = u32::from_le_bytes([data[24], data[25], data[26], data[27]]) as usize;
        if (100..=data.len()).contains(&h) {
            let crc = crc32c::crc32c(&data[..h - 4]);
            data[h - 4..h].copy_from_slice(&crc.to_le_bytes());
        }
    }
    if data.len() >= TAIL_LEN {
        let t = data.len() - TAIL_LEN;
        let mut at = [0u8; 8];
        at.copy_from_slice(&data[t + 24..t + 32]);
        let f = u64::from_le_bytes(at);
        if f <= t as u64 {
            let crc = crc32c::crc32c(&data[f as usize..t + 116]);
            data[t + 116..t + 120].copy_from_slice(&crc.to_le_bytes());
        }
    }
}

fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("hd-fuzz-segment-{}.hdseg", std::process::id()))
}

fuzz_target!(|input: &[u8]| {
    let mut data = input.to_vec();
    if data.first().is_some_and(|b| b & 1 == 1) {
        reseal(&mut data);
    }
    let path = scratch();
    if std::fs::write(&path, &data).is_err() {
        return;
    }
    if let Ok(r) = SegmentReader::open(&path) {
        if let Ok(bytes) = r.read_blocks(0, r.blocks()) {
            assert_eq!(
                bytes.len() as u64,
                r.records() * u64::from(r.header().record_size)
            );
        }
    }
    let _ = verify_segment(&path);
});
