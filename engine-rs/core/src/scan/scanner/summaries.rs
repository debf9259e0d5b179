//! A group of batches answered from their summaries in one call: a Storage Node asking for a
//! query's batches one by one pays an open, a step and a close each (and a thread hand-off for
//! every one of them); for batches whose summary answers the aggregate there is nothing to read,
//! so one call folds them all into an accumulator. Each footer comes from the footer cache, or is
//! read and validated as on any open: a damaged footer is never answered from.

use std::path::Path;
use std::sync::Arc;

use super::SegmentScanner;
use crate::scan::aggregate::{AggregateAccumulator, SummaryAnswer};
use crate::scan::filter::ScanFilter;
use crate::segment::SegmentReader;

impl SegmentScanner {
    /// Folds into `acc` every segment of `paths` whose summary answers `acc`'s plan with
    /// `filter` (the filter holds for every record, as [`Self::set_aggregate_fold`] decides; no
    /// hash is verified here). Returns, per path in order, the answer of each folded batch, or
    /// `None` for one the caller reads as usual: its summary cannot answer, it cannot be opened
    /// (the caller's own open then says why), or folding it would pass `max_groups` (or it has
    /// more groups than that itself). Batches not folded leave `acc` unchanged.
    pub fn fold_summaries<P: AsRef<Path>>(
        paths: &[P],
        filter: &Arc<ScanFilter>,
        acc: &mut AggregateAccumulator,
    ) -> Vec<Option<SummaryAnswer>> {
        let plan = Arc::clone(acc.plan());
        paths
            .iter()
            .map(|p| {
                let reader = SegmentReader::open_cached(p.as_ref()).ok()?;
                let mut sc = Self::over(reader, Arc::clone(filter), false).ok()?;
                if !sc.set_aggregate_fold(Arc::clone(&plan)) {
                    return None;
                }
                // Ok(false): the accumulator is full; Err: the batch alone has too many groups.
                if !sc.fold_into(acc).unwrap_or(false) {
                    return None;
                }
                Some(SummaryAnswer {
                    records: sc.reader.records(),
                    blocks: sc.reader.blocks(),
                })
            })
            .collect()
    }
}
