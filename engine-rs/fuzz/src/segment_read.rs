//! Fuzzes the segment reader with arbitrary files: `SegmentReader::open`, `read_blocks` over every
//! block, and `verify_segment`. Beyond "never panics", a file that opens must hand back exactly
//! `records * record_size` bytes, and a query scan (`SegmentScanner`, with and without verify_hash)
//! over it either fails with a typed error or returns only whole records of the file, each block
//! at most once. Header and footer checksums are rewritten first where the file's
//! own lengths allow it, so mutations reach the layout checks instead of stopping at a CRC.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hd_engine_core::scan::{ScanFilter, SegmentScanner};
use hd_engine_core::schema::parse;
use hd_engine_core::segment::{verify_segment, SegmentReader, TAIL_LEN};

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

/// A scratch file of this process and call (tests run targets on several threads at once).
fn scratch() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "hd-fuzz-segment-{}-{}.hdseg",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Scans `path` as the Storage Node's query path does: a filter on the first byte of each record
/// (zone maps in play when the file has a zone field there), every step until done.
fn scan(path: &Path, record_size: u32, file: &[u8], verify: bool) {
    let Ok(schema) = parse(&format!(
        r#"{{"id":"f","record_size":{record_size},"fields":[{{"name":"a","offset":0,"size":1,"type":"uint8"}}]}}"#
    )) else {
        return;
    };
    let filter = ScanFilter::compile(
        &schema,
        r#"[{"filters":[{"field":"a","op":"ge","value":"128"}]}]"#,
    )
    .expect("the fuzz filter compiles");
    let Ok(mut s) = SegmentScanner::open(path, Arc::new(filter), verify) else {
        return;
    };
    let r = record_size as usize;
    for _ in 0..=s.reader().blocks() {
        let Ok(step) = s.next(3) else {
            return;
        };
        assert_eq!(step.records.len() % r, 0, "whole records");
        for rec in step.records.chunks_exact(r) {
            assert!(rec[0] >= 128, "only matching records");
            assert!(
                file.windows(r).any(|w| w == rec),
                "a record that is not in the file"
            );
        }
        if step.done {
            return;
        }
    }
    panic!("the scan did not finish within its block count");
}

/// The target: never panics on any input, and holds the properties above.
pub fn run(input: &[u8]) {
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
        let rs = r.header().record_size;
        if rs <= 4096 && r.records() <= 1 << 16 {
            scan(&path, rs, &data, false);
            scan(&path, rs, &data, true);
        }
    }
    let _ = verify_segment(&path);
    let _ = std::fs::remove_file(&path);
}
