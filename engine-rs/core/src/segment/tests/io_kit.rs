//! What the direct and io_uring segment tests share: a segment written in a given I/O mode, its
//! check against the buffered segment of the same records, and the bytes of the alignment-edge
//! tests.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

/// Writes `n` records in `chunk`-byte appends with `io` and finishes; returns the summary and the
/// mode that was in effect.
pub(super) fn write_io(
    dir: &Path,
    io_mode: SegmentIo,
    n: u32,
    chunk: usize,
) -> (SegmentSummary, SegmentIo) {
    let cfg = config(dir, HashAlgorithm::Sha256, 64);
    let data = records(n);
    let mut w = SegmentWriter::create_with_io(cfg, io_mode).expect("create");
    let mode = w.io();
    for c in data.chunks(chunk.max(1)) {
        w.append(c).expect("append");
    }
    (w.finish(None).expect("finish"), mode)
}

/// Asserts that `got`, a segment of `n` records, is byte for byte `buffered` (the same records
/// written buffered): the same counts and closing hash, its exact length, and that it verifies and
/// reads back.
pub(super) fn assert_same_as_buffered(n: u32, got: &SegmentSummary, buffered: &SegmentSummary) {
    assert_eq!(
        (got.records, got.blocks, got.bytes, got.closing_hash),
        (
            buffered.records,
            buffered.blocks,
            buffered.bytes,
            buffered.closing_hash
        )
    );
    let (fb, fg) = (
        fs::read(&buffered.path).unwrap(),
        fs::read(&got.path).unwrap(),
    );
    assert_eq!(fg.len() as u64, got.bytes, "{n} records: exact length");
    assert!(fb == fg, "{n} records: files differ");
    let v = verify_segment(&got.path).expect("verify");
    assert_eq!(
        (v.records, v.closing_hash),
        (u64::from(n), buffered.closing_hash)
    );
    if n > 0 {
        let r = SegmentReader::open(&got.path).unwrap();
        assert_eq!(r.read_blocks(0, got.blocks).unwrap(), records(n));
    }
}

/// A writer of batch 1 in `dir` with `io` (sha256, 64-record blocks).
pub(super) fn writer(dir: &Path, io: SegmentIo) -> SegmentWriter {
    SegmentWriter::create_with_io(config(dir, HashAlgorithm::Sha256, 64), io).unwrap()
}

/// Where the writer of batch 1 in `dir` keeps its partial file.
pub(super) fn partial_of_batch_1(dir: &Path) -> PathBuf {
    dir.join(format!("{}{PARTIAL_SUFFIX}", segment_file_name(&batch(1))))
}

/// `len` bytes of a known pattern, for the alignment-edge tests.
pub(super) fn edge_bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 % 251) as u8).collect()
}
