//! Segment tests: a scratch directory per test, records with known field values.

mod damage;
mod direct;
mod footer_cache;
mod io_kit;
mod roundtrip;
mod uring;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;
use crate::hash::HashAlgorithm;

/// A fresh directory under the system temp dir, removed when dropped.
pub(super) struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "hd-seg-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Record layout used by the tests (16 bytes): u32 LE at 0, i16 BE at 4, f64 LE at 6, 2 bytes text at 14.
pub(super) const R: u32 = 16;

pub(super) fn fields() -> Vec<ZoneField> {
    vec![
        ZoneField {
            offset: 0,
            size: 4,
            kind: ZoneKind::Unsigned,
            big_endian: false,
        },
        ZoneField {
            offset: 4,
            size: 2,
            kind: ZoneKind::Signed,
            big_endian: true,
        },
        ZoneField {
            offset: 6,
            size: 8,
            kind: ZoneKind::Float,
            big_endian: false,
        },
        ZoneField {
            offset: 14,
            size: 2,
            kind: ZoneKind::Bytes,
            big_endian: false,
        },
    ]
}

/// Record `i`: u = i*7, s = 100 - i*3, f = i/2 - 5 (NaN when i % 11 == 10), text "a" + i%26.
pub(super) fn record(i: u32) -> [u8; R as usize] {
    let mut r = [0u8; R as usize];
    r[0..4].copy_from_slice(&(i * 7).to_le_bytes());
    r[4..6].copy_from_slice(&(100 - i as i16 * 3).to_be_bytes());
    let f = if i % 11 == 10 {
        f64::NAN
    } else {
        f64::from(i) / 2.0 - 5.0
    };
    r[6..14].copy_from_slice(&f.to_le_bytes());
    r[14] = b'a';
    r[15] = b'a' + (i % 26) as u8;
    r
}

pub(super) fn records(n: u32) -> Vec<u8> {
    (0..n).flat_map(record).collect()
}

pub(super) fn batch(n: u8) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[63] = n;
    b
}

pub(super) fn config(dir: &Path, alg: HashAlgorithm, block: u32) -> SegmentConfig {
    SegmentConfig {
        dir: dir.to_path_buf(),
        name: segment_file_name(&batch(1)),
        dataset_id: "trades".into(),
        batch_id: batch(1),
        record_size: R,
        block_size: block,
        algorithm: alg,
        fields: fields(),
    }
}

/// Writes `n` records in chunks of `chunk` bytes and finishes with the right closing hash.
pub(super) fn write(
    dir: &Path,
    alg: HashAlgorithm,
    block: u32,
    n: u32,
    chunk: usize,
) -> SegmentSummary {
    let cfg = config(dir, alg, block);
    let data = records(n);
    let mut expect = crate::hash::ChainState::new(alg, R, block, &cfg.batch_id).expect("chain");
    expect.update(&data);
    let closing = expect.finish().closing_hash;
    let mut w = SegmentWriter::create(cfg).expect("create");
    for c in data.chunks(chunk.max(1)) {
        w.append(c).expect("append");
    }
    w.finish(Some(closing.as_bytes())).expect("finish")
}
