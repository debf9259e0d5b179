//! Scans through the record cache (`segment::record_cache`): the wanted blocks of a step are read
//! as pieces on a fixed grid of about `PIECE_BYTES`, so later queries ask for the same pieces
//! whichever blocks their zones rule out, and each piece is read and CRC-checked once while kept.

use super::{ScanError, ScanStep, SegmentScanner, PIECE_BYTES};
use crate::scan::aggregate::AggregateState;
use crate::scan::filter::ScanFilter;
use crate::scan::projection::{Narrowed, Projection};
use std::sync::Arc;

use crate::segment::{BlockEntry, PieceLookup, SegmentError, SegmentReader};

/// Where a piece's runs of wanted blocks are read from.
enum Source {
    /// The record cache's piece.
    Cached(Arc<Vec<u8>>),
    /// The whole piece, read into the scanner's buffer (and kept).
    Buffer,
    /// Each run from the file, as without the cache.
    Runs,
}

impl SegmentScanner {
    /// The filter's narrow form (`projection.rs`), worked out on first use; `None` when the
    /// filter gains nothing from narrow copies or they are turned off for this scan.
    fn narrowed(&mut self) -> Option<Arc<Narrowed>> {
        let aggregate = self.aggregate.as_ref().map(|a| a.plan());
        self.narrow
            .get_or_insert_with(|| Projection::of_scan(&self.filter, aggregate).map(Arc::new))
            .clone()
    }

    /// The narrow form this scan uses (the tests' view of [`Self::narrowed`]).
    #[cfg(test)]
    pub(crate) fn narrow_form(&mut self) -> Option<Arc<Narrowed>> {
        self.narrowed()
    }

    /// Blocks per piece of the record cache's grid (about `PIECE_BYTES` of records).
    fn piece_grid(&self) -> u64 {
        let rs = u64::from(self.reader.header().record_size);
        let block_bytes = u64::from(self.reader.header().block_size).max(1) * rs;
        (PIECE_BYTES / block_bytes.max(1)).max(1)
    }

    /// How many times a step's blocks may grow when it starts on a piece the record cache keeps a
    /// narrow copy of for this filter: the record size over the copy's width, at most 8; 1 when
    /// the step reads whole records (no narrow form, verify_hash, the cache off or cold there).
    pub(super) fn narrow_step_factor(&mut self, first: u64) -> u64 {
        if self.chain.is_some() || !self.record_cache || !SegmentReader::record_cache_on() {
            return 1;
        }
        let Some(nw) = self.narrowed() else {
            return 1;
        };
        let grid = self.piece_grid();
        let piece_first = first / grid * grid;
        let piece_end = (piece_first + grid).min(self.reader.blocks());
        if self
            .reader
            .find_narrow(piece_first, piece_end, nw.projection.key())
            .is_none()
        {
            return 1;
        }
        let width = nw.projection.width().max(1) as u64;
        (self.filter.record_size() as u64 / width).clamp(1, 8)
    }

    /// Scans the wanted blocks of `first .. end` through the record cache: pieces on a fixed grid
    /// of about `PIECE_BYTES` (so later queries ask for the same pieces, whichever blocks their
    /// zones rule out). A piece read for the second time recently is read whole, checked and
    /// kept; a first read reads only the wanted blocks, as without the cache.
    pub(super) fn scan_pieces(
        &mut self,
        first: u64,
        end: u64,
        wanted: &[bool],
        step: &mut ScanStep,
    ) -> Result<(), ScanError> {
        let rs = u64::from(self.reader.header().record_size);
        let grid = self.piece_grid();
        let total = self.reader.blocks();
        let want = |b: u64| wanted[(b - first) as usize];
        let narrowed = self.narrowed();
        let mut k = first;
        while let Some((run, _)) = next_run(k, end, want) {
            k = run;
            let piece_first = k / grid * grid;
            let piece_end = (piece_first + grid).min(total);
            let source = match self.reader.find_piece(piece_first, piece_end) {
                PieceLookup::Hit(p) => {
                    self.cached_pieces += 1;
                    Source::Cached(p)
                }
                PieceLookup::Admit => match self.read(piece_first, piece_end) {
                    Ok(len) => {
                        self.reader
                            .keep_piece(piece_first, piece_end, self.buf[..len].to_vec());
                        Source::Buffer
                    }
                    // A damaged block the query may not need: only the wanted blocks are read
                    // (and checked), so the batch fails only if one of them is damaged.
                    Err(ScanError::Segment(SegmentError::BlockChecksum(_))) => Source::Runs,
                    Err(e) => return Err(e),
                },
                PieceLookup::Miss => Source::Runs,
            };
            let stop = piece_end.min(end);
            // A kept piece and a filter that loads a few bytes of each record: the filter runs
            // over the piece's narrow copy, and only matching records are read whole.
            let narrow = match (&source, &narrowed) {
                (Source::Cached(p), Some(nw)) => {
                    self.narrow_pieces += 1;
                    let key = nw.projection.key();
                    Some(match self.reader.find_narrow(piece_first, piece_end, key) {
                        Some(copy) => copy,
                        None => self.reader.keep_narrow(
                            piece_first,
                            piece_end,
                            key,
                            nw.projection.project(p),
                        ),
                    })
                }
                _ => None,
            };
            while let Some((run, j)) = next_run(k, stop, want) {
                k = run;
                let index = self.reader.block_index();
                let at = (index[k as usize].offset - index[piece_first as usize].offset) as usize;
                let len = (records_in(index, k, j) * rs) as usize;
                if let (Some(copy), Some(nw), Source::Cached(p)) = (&narrow, &narrowed, &source) {
                    let w = nw.projection.width();
                    let (r0, n) = (at / rs as usize, len / rs as usize);
                    step.matched += run_kernel_narrow(
                        nw,
                        self.aggregate.as_mut(),
                        &copy[r0 * w..(r0 + n) * w],
                        &p[at..at + len],
                        rs as usize,
                        &mut step.records,
                    );
                    step.scanned += n as u64;
                    k = j;
                    continue;
                }
                let data = match &source {
                    Source::Cached(p) => {
                        // Staged into the scanner's buffer first: one sequential copy brings the
                        // run into the CPU's cache at full memory bandwidth, where the kernel's
                        // strided field loads run fast; straight from the kept piece they wait
                        // on memory (a 4.5 MB batch: 0.47 ms read from the file, 0.55 ms from
                        // the piece, 0.32 ms staged).
                        if self.buf.len() < len {
                            self.buf.resize(len, 0);
                        }
                        self.buf[..len].copy_from_slice(&p[at..at + len]);
                        &self.buf[..len]
                    }
                    Source::Buffer => &self.buf[at..at + len],
                    Source::Runs => {
                        let n = self.read(k, j)?;
                        &self.buf[..n]
                    }
                };
                step.matched += run_kernel(
                    &self.filter,
                    self.aggregate.as_mut(),
                    data,
                    &mut step.records,
                );
                step.scanned += len as u64 / rs;
                k = j;
            }
            k = k.max(stop);
        }
        Ok(())
    }
}

/// Runs the filter over `data` (whole records): matches fold into `aggregate` when the query has
/// one, else are appended to `records`. Returns how many matched.
pub(super) fn run_kernel(
    filter: &ScanFilter,
    aggregate: Option<&mut AggregateState>,
    data: &[u8],
    records: &mut Vec<u8>,
) -> u64 {
    match aggregate {
        Some(agg) => filter.select_chunks(data, |c, sel| agg.add(c, sel)),
        None => filter.filter_into(data, records),
    }
}

/// [`run_kernel`] with the filter's narrow form `nw` evaluated over `narrow` (its copies of the
/// records) and the matches taken from `raw`, the same records whole (`raw_size` bytes each) —
/// or, when the copies hold what the aggregate reads too, aggregated from the copies.
fn run_kernel_narrow(
    nw: &Narrowed,
    aggregate: Option<&mut AggregateState>,
    narrow: &[u8],
    raw: &[u8],
    raw_size: usize,
    records: &mut Vec<u8>,
) -> u64 {
    let filter = &nw.filter;
    match (aggregate, &nw.aggregate) {
        (Some(agg), Some(plan)) => {
            filter.select_chunks(narrow, |c, sel| agg.add_narrow(plan, c, sel))
        }
        (Some(agg), None) => {
            filter.select_chunks_narrow(narrow, raw, raw_size, |c, sel| agg.add(c, sel))
        }
        (None, _) => filter.filter_into_narrow(narrow, raw, raw_size, records),
    }
}

/// The next run of wanted blocks at or after `from` and before `stop`: its first block and the
/// block after its last.
pub(super) fn next_run(from: u64, stop: u64, want: impl Fn(u64) -> bool) -> Option<(u64, u64)> {
    let first = (from..stop).find(|&b| want(b))?;
    let end = (first..stop).find(|&b| !want(b)).unwrap_or(stop);
    Some((first, end))
}

/// Records in blocks `first .. end` of a segment's block index.
pub(super) fn records_in(index: &[BlockEntry], first: u64, end: u64) -> u64 {
    index[first as usize..end as usize]
        .iter()
        .map(|x| u64::from(x.records))
        .sum()
}
