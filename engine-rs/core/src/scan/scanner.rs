//! Scans one segment with a compiled filter, a block range at a time: zone maps rule blocks out,
//! the blocks left are read (each checked against its CRC-32C) and run through the kernel. With
//! `verify_hash` every block is read, skipped or not, and fed to the hash chain; the last step
//! reports whether every block hash and the closing hash match the footer.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use thiserror::Error;

use super::aggregate::AggregateState;
use super::filter::ScanFilter;
use super::zones::{reduced_for_segment, ZonePlan};
use crate::gpu::{process_offload, Offload, GPU_STEP_FACTOR};
use crate::hash::ChainState;
use crate::segment::{SegmentError, SegmentReader, MAX_READ_BYTES};

mod fold;
mod offload;
mod pieces;
mod summaries;
use fold::Fold;
use pieces::{next_run, records_in, run_kernel};
pub use summaries::{GroupAnswer, GroupBudget, GroupFold};

/// Most record bytes one step reads (more than one block only while under this).
pub const MAX_STEP_BYTES: u64 = 16 << 20;
/// Record bytes read at a time within a step, so the CRC check, the hash and the kernel find
/// them in cache (at least one block).
const PIECE_BYTES: u64 = 256 << 10;

/// A scan could not start or go on.
#[derive(Debug, Error)]
pub enum ScanError {
    /// The segment is unreadable or damaged (a block checksum, I/O, a bad layout).
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// The segment's records are not the size the filter was compiled for.
    #[error("segment {path} holds {segment}-byte records, the filter was compiled for {filter}-byte records")]
    RecordSize {
        path: String,
        segment: u32,
        filter: usize,
    },
    /// The query's aggregate found more groups in the batch than its `max_groups`.
    #[error("aggregate.max_groups: more than {max} groups in one batch")]
    TooManyGroups { max: usize },
    /// `fold_into` before the batch's partial is complete, or on a scanner not set to fold.
    #[error("the batch's aggregate cannot be folded yet: {0}")]
    NotDone(&'static str),
    /// `fold_into` of a batch already folded (each batch counts once).
    #[error("the batch's aggregate was already folded into an accumulator")]
    Folded,
    /// The accumulator was created for another aggregate plan.
    #[error("the accumulator was created for another aggregate plan than this scan's")]
    PlanMismatch,
}

impl ScanError {
    /// Stable code for the bridge: the segment error's own, or `ERR_SCAN_RECORD_SIZE`.
    pub fn code(&self) -> &'static str {
        match self {
            ScanError::Segment(e) => e.code(),
            ScanError::RecordSize { .. } => "ERR_SCAN_RECORD_SIZE",
            ScanError::TooManyGroups { .. } => "ERR_SCAN_TOO_MANY_GROUPS",
            ScanError::NotDone(_) => "ERR_SCAN_NOT_DONE",
            ScanError::Folded => "ERR_SCAN_FOLDED",
            ScanError::PlanMismatch => "ERR_SCAN_PLAN",
        }
    }
}

/// What one step produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanStep {
    /// The matching records, back to back, in segment order.
    pub records: Vec<u8>,
    pub matched: u64,
    /// Records the kernel evaluated (those of blocks the zones did not rule out).
    pub scanned: u64,
    /// Blocks the zone maps ruled out in this step (or, for an aggregate answered from the batch
    /// summary, every block).
    pub blocks_skipped: u64,
    /// No blocks are left.
    pub done: bool,
    /// With verify_hash, on the step that finishes: whether the chain matched the footer.
    pub hash_ok: Option<bool>,
    /// With an aggregate, on the step that finishes: the batch's partial (aggregate frame JSON;
    /// `None` when the scanner folds, see `set_aggregate_fold`); `records` stays empty.
    pub partial: Option<String>,
}

/// A scan in progress over one segment.
pub struct SegmentScanner {
    reader: SegmentReader,
    filter: Arc<ScanFilter>,
    plan: ZonePlan,
    /// The batch filter rules the whole segment out.
    skip_all: bool,
    next_block: u64,
    chain: Option<ChainState>,
    hash_ok: Option<bool>,
    buf: Vec<u8>,
    /// The partial aggregate of the batch, when the query has one (built from the summary when
    /// that answers it).
    aggregate: Option<AggregateState>,
    /// The aggregate was answered from the batch summary (no record is read).
    from_summary: bool,
    /// The summary's answer as JSON (not built when folding).
    summary_partial: Option<String>,
    fold: Fold,
    /// The aggregate is complete: the summary answered it, or the finishing step ran.
    finished: bool,
    /// Steps read through the process's record cache (unless verify_hash, or turned off).
    record_cache: bool,
    /// Pieces the record cache served.
    cached_pieces: u64,
    /// The filter's narrow form, once worked out (`None` inside: it has none, or narrow copies
    /// are turned off for this scan).
    narrow: Option<Option<Arc<super::projection::Narrowed>>>,
    /// Pieces whose narrow copy the filter ran over.
    narrow_pieces: u64,
    /// Where plain filter steps go when they are large enough (the process's GPU, if the Storage
    /// Node turned one on; `set_offload` gives another).
    offload: Option<Arc<Offload>>,
    /// The wanted records of an offloaded step, gathered (kept between steps).
    gather: Vec<u8>,
}

impl SegmentScanner {
    /// Opens and validates `path` for a scan with `filter`; `verify_hash` recomputes the chain.
    pub fn open(
        path: &Path,
        filter: Arc<ScanFilter>,
        verify_hash: bool,
    ) -> Result<Self, ScanError> {
        // Queries open the same batches again and again: the footer comes from the cache while the file is unchanged.
        Self::over(SegmentReader::open_cached(path)?, filter, verify_hash)
    }

    /// Like [`SegmentScanner::open`] when the segment's footer is in the footer cache (the file
    /// unchanged since it was read); `None` when it is not (then `open` reads it). Cheap enough
    /// for the caller's own thread: an open, a stat and a lookup, no footer read.
    pub fn open_if_cached(
        path: &Path,
        filter: Arc<ScanFilter>,
        verify_hash: bool,
    ) -> Result<Option<Self>, ScanError> {
        match SegmentReader::open_if_cached(path)? {
            Some(r) => Ok(Some(Self::over(r, filter, verify_hash)?)),
            None => Ok(None),
        }
    }

    fn over(
        reader: SegmentReader,
        filter: Arc<ScanFilter>,
        verify_hash: bool,
    ) -> Result<Self, ScanError> {
        let h = reader.header();
        if h.record_size as usize != filter.record_size() {
            return Err(ScanError::RecordSize {
                path: reader.path().display().to_string(),
                segment: h.record_size,
                filter: filter.record_size(),
            });
        }
        let plan = ZonePlan::new(&filter, &h.fields);
        let skip_all = !plan.may_match(reader.batch_filter()) && reader.blocks() > 0;
        // The kernel leaves out what the batch's zones prove (a time range covering the batch);
        // zones and summaries still go by the filter as compiled.
        let filter = match reduced_for_segment(&filter, &h.fields, reader.batch_filter()) {
            Some(f) => Arc::new(f),
            None => filter,
        };
        let chain = if verify_hash {
            let c = ChainState::new(h.algorithm, h.record_size, h.block_size, &h.batch_id)
                .map_err(|e| SegmentError::Corrupt(e.to_string()))?;
            Some(c)
        } else {
            None
        };
        Ok(SegmentScanner {
            reader,
            filter,
            plan,
            skip_all,
            next_block: 0,
            chain,
            hash_ok: None,
            buf: Vec::new(),
            aggregate: None,
            from_summary: false,
            summary_partial: None,
            fold: Fold::Json,
            finished: false,
            record_cache: true,
            cached_pieces: 0,
            narrow: None,
            narrow_pieces: 0,
            offload: process_offload(),
            gather: Vec::new(),
        })
    }

    /// The open segment (header, counts, closing hash, zones).
    pub fn reader(&self) -> &SegmentReader {
        &self.reader
    }

    /// Reads this scan's blocks through the record cache (`on`, the default) or always from the
    /// file. Scans with verify_hash always read the file.
    pub fn set_record_cache(&mut self, on: bool) {
        self.record_cache = on;
    }

    /// Runs the filter over the record cache's narrow copies of its pieces where that gains
    /// (`on`, the default), or always over whole records (the differential tests' reference).
    pub fn set_narrow_copies(&mut self, on: bool) {
        self.narrow = if on { None } else { Some(None) };
    }

    /// Pieces whose narrow copy the filter ran over this scan.
    pub fn narrow_pieces(&self) -> u64 {
        self.narrow_pieces
    }

    /// Pieces of records the record cache served this scan (read from memory, checked before).
    pub fn cached_pieces(&self) -> u64 {
        self.cached_pieces
    }

    /// Whether every block has been scanned.
    pub fn is_done(&self) -> bool {
        self.next_block >= self.reader.blocks()
    }

    fn block_may_match(&self, b: u64) -> bool {
        if self.skip_all {
            return false;
        }
        let nf = self.reader.header().fields.len();
        let at = b as usize * nf;
        self.plan.may_match(&self.reader.zones()[at..at + nf])
    }

    /// Reads blocks `first .. end` into the buffer, checking each block's CRC.
    fn read(&mut self, first: u64, end: u64) -> Result<usize, ScanError> {
        let len = self.range_len(first, end)?;
        let mut buf = std::mem::take(&mut self.buf);
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let read = self.read_into(first, end, &mut buf[..len]);
        self.buf = buf;
        read.map(|()| len)
    }

    /// Record bytes in blocks `first .. end`, at most what one read may cover.
    pub(super) fn range_len(&self, first: u64, end: u64) -> Result<usize, ScanError> {
        let rs = u64::from(self.reader.header().record_size);
        let len: u64 = self.reader.block_index()[first as usize..end as usize]
            .iter()
            .map(|e| u64::from(e.records) * rs)
            .sum();
        if len > MAX_READ_BYTES {
            return Err(SegmentError::Range(format!(
                "{len} bytes in one block range, at most {MAX_READ_BYTES}"
            ))
            .into());
        }
        Ok(len as usize)
    }

    /// Reads blocks `first .. end` into `dst` (exactly [`Self::range_len`] bytes), checking each
    /// block's CRC.
    pub(super) fn read_into(&self, first: u64, end: u64, dst: &mut [u8]) -> Result<(), ScanError> {
        let rs = self.reader.header().record_size as usize;
        let entries = &self.reader.block_index()[first as usize..end as usize];
        self.reader
            .file()
            .read_exact_at(dst, entries[0].offset)
            .map_err(|source| SegmentError::Io {
                op: "read",
                path: self.reader.path().to_path_buf(),
                source,
            })?;
        let mut at = 0usize;
        for (k, e) in entries.iter().enumerate() {
            let n = e.records as usize * rs;
            if crc32c::crc32c(&dst[at..at + n]) != e.crc {
                return Err(SegmentError::BlockChecksum(first + k as u64).into());
            }
            at += n;
        }
        Ok(())
    }

    /// Scans up to `max_blocks` more blocks (at least one, and at most `MAX_STEP_BYTES` of
    /// records unless one block is larger).
    pub fn next(&mut self, max_blocks: u64) -> Result<ScanStep, ScanError> {
        let total = self.reader.blocks();
        let mut step = ScanStep::default();
        if self.next_block >= total {
            self.finish_chain();
            step.done = true;
            step.hash_ok = self.hash_ok;
            self.finish_aggregate(&mut step)?;
            return Ok(step);
        }
        let first = self.next_block;
        if self.skip_all && self.chain.is_none() {
            step.blocks_skipped = total - first;
            self.next_block = total;
            step.done = true;
            self.finish_aggregate(&mut step)?;
            return Ok(step);
        }
        let rs = u64::from(self.reader.header().record_size);
        // A step over narrow copies reads a fraction of the records' bytes: it covers as many
        // more blocks (up to 8 times), so it still takes about as long as a step over whole records.
        let offloading = self.offloading();
        let factor = if offloading {
            GPU_STEP_FACTOR
        } else {
            self.narrow_step_factor(first)
        };
        let index = self.reader.block_index();
        let mut end = first;
        let mut bytes = 0u64;
        while end < total && end - first < max_blocks.max(1).saturating_mul(factor) {
            let b = u64::from(index[end as usize].records) * rs;
            if end > first && bytes + b > MAX_STEP_BYTES * factor {
                break;
            }
            bytes += b;
            end += 1;
        }
        let wanted: Vec<bool> = (first..end).map(|b| self.block_may_match(b)).collect();
        step.blocks_skipped = wanted.iter().filter(|w| !**w).count() as u64;
        if offloading {
            let index = self.reader.block_index();
            let wanted_bytes: u64 = (first..end)
                .filter(|&b| wanted[(b - first) as usize])
                .map(|b| u64::from(index[b as usize].records) * rs)
                .sum();
            // A step too small for the offload takes the CPU path below (record cache, narrow copies).
            if self
                .offload
                .as_ref()
                .is_some_and(|o| o.takes(wanted_bytes as usize))
            {
                self.offload_step(first, end, &wanted, &mut step)?;
                return self.end_step(end, step);
            }
        }
        let verify = self.chain.is_some();
        let want = |b: u64| wanted[(b - first) as usize];
        if !verify && self.record_cache && SegmentReader::record_cache_on() {
            self.scan_pieces(first, end, &wanted, &mut step)?;
            return self.end_step(end, step);
        }
        let mut b = first;
        while b < end {
            if !verify && !want(b) {
                b += 1;
                continue;
            }
            // A piece of consecutive blocks small enough to stay in cache while its CRCs are
            // checked, it is hashed and the kernel reads it (wanted blocks only, unless every
            // block is hashed).
            let mut e = b;
            let mut bytes = 0u64;
            while e < end && (verify || want(e)) {
                let n = u64::from(self.reader.block_index()[e as usize].records) * rs;
                if e > b && bytes + n > PIECE_BYTES {
                    break;
                }
                bytes += n;
                e += 1;
            }
            let len = self.read(b, e)?;
            if let Some(c) = self.chain.as_mut() {
                c.update(&self.buf[..len]);
            }
            let mut k = b;
            while let Some((run, j)) = next_run(k, e, want) {
                k = run;
                let index = self.reader.block_index();
                let at = (index[k as usize].offset - index[b as usize].offset) as usize;
                let n = records_in(index, k, j);
                let range = at..at + (n * rs) as usize;
                step.matched += run_kernel(
                    &self.filter,
                    self.aggregate.as_mut(),
                    &self.buf[range],
                    &mut step.records,
                );
                step.scanned += n;
                k = j;
            }
            b = e;
        }
        self.end_step(end, step)
    }

    /// Records that blocks up to `end` were scanned; the step that reaches the last block
    /// finishes the chain and the aggregate.
    fn end_step(&mut self, end: u64, mut step: ScanStep) -> Result<ScanStep, ScanError> {
        self.next_block = end;
        if end >= self.reader.blocks() {
            self.finish_chain();
            step.done = true;
            step.hash_ok = self.hash_ok;
            self.finish_aggregate(&mut step)?;
        }
        Ok(step)
    }

    fn finish_chain(&mut self) {
        let Some(chain) = self.chain.take() else {
            return;
        };
        let result = chain.finish();
        let dl = self.reader.header().algorithm.digest_len();
        let index = self.reader.block_index();
        let blocks_ok = result.block_hashes.len() == index.len() * dl
            && result
                .block_hashes
                .chunks_exact(dl)
                .zip(index)
                .all(|(h, e)| h == e.hash.as_bytes());
        self.hash_ok = Some(blocks_ok && result.closing_hash == self.reader.closing_hash());
    }
}
