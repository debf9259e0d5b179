//! Full verification of a segment's hash chain, and crash recovery of a segment directory.
//!
//! Recovery rules (docs/segment.md, "Recovery"): a `*.hdseg.partial` file is a batch that never
//! committed, so it was never acknowledged — it is deleted (the SCC re-sends unacknowledged
//! batches). A `*.hdseg` file is opened and verified; one that fails with damage (bad magic,
//! checksum, truncation, chain mismatch) is moved to `quarantine/` and never served.

use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::{io, SegmentError};
use super::reader::SegmentReader;
use super::writer::sync_dir;
use super::{PARTIAL_SUFFIX, SEGMENT_EXT};
use crate::hash::{ChainState, Digest};

/// Sub-directory damaged segments are moved to.
pub const QUARANTINE_DIR: &str = "quarantine";
/// Bytes read per step while verifying.
const VERIFY_STEP: usize = 4 << 20;

/// A segment whose chain verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub records: u64,
    pub blocks: u64,
    pub closing_hash: Digest,
}

/// Recomputes the hash chain over every record of `path` and compares every block hash and the
/// closing hash with the footer (block CRCs are checked on the way).
pub fn verify_segment(path: &Path) -> Result<Verified, SegmentError> {
    // Through the footer cache: a start-up's verification leaves each footer there for the first
    // queries (the footer is validated the same way; the records are checked below either way).
    let reader = SegmentReader::open_cached(path)?;
    let h = reader.header();
    let mut chain = ChainState::new(h.algorithm, h.record_size, h.block_size, &h.batch_id)
        .map_err(|e| SegmentError::Corrupt(e.to_string()))?;
    let file = File::open(path).map_err(io("open", path))?;
    let mut buf = vec![0u8; VERIFY_STEP];
    for (i, e) in reader.block_index().iter().enumerate() {
        let mut left = u64::from(e.records) * u64::from(h.record_size);
        let mut at = e.offset;
        let mut crc = 0u32;
        while left > 0 {
            let n = left.min(VERIFY_STEP as u64) as usize;
            file.read_exact_at(&mut buf[..n], at)
                .map_err(io("read", path))?;
            crc = crc32c::crc32c_append(crc, &buf[..n]);
            chain.update(&buf[..n]);
            at += n as u64;
            left -= n as u64;
        }
        if crc != e.crc {
            return Err(SegmentError::BlockChecksum(i as u64));
        }
    }
    let result = chain.finish();
    let dl = h.algorithm.digest_len();
    for (i, (computed, e)) in result
        .block_hashes
        .chunks_exact(dl)
        .zip(reader.block_index())
        .enumerate()
    {
        if computed != e.hash.as_bytes() {
            return Err(SegmentError::ChainMismatch(i as u64));
        }
    }
    if result.closing_hash != reader.closing_hash() {
        return Err(SegmentError::ClosingHash {
            expected: reader.closing_hash().to_hex(),
            actual: result.closing_hash.to_hex(),
        });
    }
    Ok(Verified {
        records: reader.records(),
        blocks: reader.blocks(),
        closing_hash: result.closing_hash,
    })
}

/// How thoroughly recovery checks complete segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoverOptions {
    /// Recompute every chain (true), or check only header, footer and layout (false: fast start).
    pub verify_chains: bool,
}

impl Default for RecoverOptions {
    fn default() -> Self {
        RecoverOptions {
            verify_chains: true,
        }
    }
}

/// A segment moved to quarantine, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quarantined {
    /// Where it lies now (under `quarantine/`).
    pub path: PathBuf,
    /// The error code (`ERR_SEGMENT_*`).
    pub code: &'static str,
    pub reason: String,
}

/// What recovery found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Complete segments that verified, sorted.
    pub complete: Vec<PathBuf>,
    /// Partial files deleted, sorted.
    pub discarded: Vec<PathBuf>,
    /// Damaged segments moved aside, sorted by original name.
    pub quarantined: Vec<Quarantined>,
}

/// A free name in the quarantine directory for `name` (`name`, `name.1`, `name.2`, ...).
fn quarantine_target(qdir: &Path, name: &str) -> PathBuf {
    let mut p = qdir.join(name);
    let mut n = 1u32;
    while p.exists() {
        p = qdir.join(format!("{name}.{n}"));
        n += 1;
    }
    p
}

/// Recovers the segment directory `dir` after a crash or at start-up (see the module doc).
/// Only I/O failures on the directory itself fail the call; damaged files are quarantined.
pub fn recover_dir(dir: &Path, opts: RecoverOptions) -> Result<Recovery, SegmentError> {
    let mut names: Vec<String> = Vec::new();
    for entry in fs::read_dir(dir).map_err(io("read directory", dir))? {
        let entry = entry.map_err(io("read directory", dir))?;
        let is_file = entry
            .file_type()
            .map_err(io("stat", &entry.path()))?
            .is_file();
        if let (true, Some(name)) = (is_file, entry.file_name().to_str()) {
            names.push(name.to_string());
        }
    }
    names.sort();
    let mut out = Recovery::default();
    let mut changed = false;
    for name in names {
        let path = dir.join(&name);
        if name.ends_with(&format!("{SEGMENT_EXT}{PARTIAL_SUFFIX}")) {
            fs::remove_file(&path).map_err(io("remove", &path))?;
            out.discarded.push(path);
            changed = true;
            continue;
        }
        if !name.ends_with(SEGMENT_EXT) {
            continue;
        }
        let check = if opts.verify_chains {
            verify_segment(&path).map(|_| ())
        } else {
            // Through the footer cache, as verify_segment: the first queries after a start find it there.
            SegmentReader::open_cached(&path).map(|_| ())
        };
        match check {
            Ok(()) => out.complete.push(path),
            Err(e) if e.is_damage() => {
                let qdir = dir.join(QUARANTINE_DIR);
                fs::create_dir_all(&qdir).map_err(io("create directory", &qdir))?;
                let target = quarantine_target(&qdir, &name);
                fs::rename(&path, &target).map_err(io("rename", &path))?;
                sync_dir(&qdir)?;
                out.quarantined.push(Quarantined {
                    path: target,
                    code: e.code(),
                    reason: e.to_string(),
                });
                changed = true;
            }
            Err(e) => return Err(e),
        }
    }
    if changed {
        sync_dir(dir)?;
    }
    Ok(out)
}
