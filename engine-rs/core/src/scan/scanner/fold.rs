//! The scanner's aggregate: set before the first step, answered from the batch summary or
//! completed by the finishing step, then sent as JSON on that step or kept natively and merged
//! into a query's accumulator (`fold_into`), which saves a JSON partial per batch.

use std::sync::Arc;

use super::{ScanError, ScanStep, SegmentScanner};
use crate::scan::aggregate::{AggregateAccumulator, AggregatePlan, AggregateState, MergeError};

/// What becomes of the batch's partial aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fold {
    /// Sent as JSON on the finishing step (`set_aggregate`).
    Json,
    /// Kept for `fold_into` (`set_aggregate_fold`).
    Pending,
    /// Merged into an accumulator already.
    Folded,
}

impl SegmentScanner {
    /// Accumulates `plan` over the matching records instead of returning them; the step that
    /// finishes carries the partial. Call before the first `next`.
    /// A whole batch that the segment's summary can answer (no filter or one the batch's zones
    /// prove holds for every record, no hash to verify, see
    /// `AggregateState::from_stats`) is answered from it: no block is read.
    pub fn set_aggregate(&mut self, plan: Arc<AggregatePlan>) {
        self.start_aggregate(plan, Fold::Json);
    }

    /// Like [`Self::set_aggregate`], but no JSON is built (neither from the summary nor on the
    /// finishing step, which carries no `partial`): the partial stays here until
    /// [`Self::fold_into`]. Returns whether the batch summary answered it (no step need run).
    pub fn set_aggregate_fold(&mut self, plan: Arc<AggregatePlan>) -> bool {
        self.start_aggregate(plan, Fold::Pending);
        self.from_summary
    }

    fn start_aggregate(&mut self, plan: Arc<AggregatePlan>, fold: Fold) {
        // A narrow form worked out before is worked out again with the aggregate's bytes (one
        // turned off stays off).
        if matches!(self.narrow, Some(Some(_))) {
            self.narrow = None;
        }
        // The filter must hold for every record: none at all, or one the batch's zones prove.
        let covers_all =
            self.filter.matches_all() || self.plan.must_match(self.reader.batch_filter());
        let mut summary = None;
        if self.chain.is_none() && covers_all && self.next_block == 0 {
            if let Some(stats) = self.reader.stats() {
                summary = AggregateState::from_stats(
                    Arc::clone(&plan),
                    &self.reader.header().fields,
                    self.reader.batch_filter(),
                    stats,
                    self.reader.records(),
                );
            }
        }
        self.fold = fold;
        self.from_summary = summary.is_some();
        self.finished = self.from_summary;
        self.summary_partial = None;
        if let Some(st) = &summary {
            self.next_block = self.reader.blocks();
            if fold == Fold::Json {
                self.summary_partial = st.to_json();
            }
        }
        self.aggregate = Some(summary.unwrap_or_else(|| AggregateState::new(plan)));
    }

    /// Whether the batch's aggregate was answered from its summary.
    pub fn answered_from_summary(&self) -> bool {
        self.from_summary
    }

    /// The batch's partial when its summary answers the aggregate (the finishing step carries the
    /// same); `None` when folding.
    pub fn summary_partial(&self) -> Option<&str> {
        self.summary_partial.as_deref()
    }

    /// The finishing step's partial; an overflow of `max_groups` is an error (when folding too).
    pub(super) fn finish_aggregate(&mut self, step: &mut ScanStep) -> Result<(), ScanError> {
        let Some(a) = self.aggregate.as_ref() else {
            return Ok(());
        };
        if self.from_summary {
            // Every record of the batch counts (no filter); no block was read.
            step.matched = self.reader.records();
            step.blocks_skipped = self.reader.blocks();
            step.partial = self.summary_partial.clone();
        } else if a.overflowed() {
            return Err(ScanError::TooManyGroups {
                max: a.max_groups(),
            });
        } else if self.fold == Fold::Json {
            step.partial = a.to_json();
        }
        self.finished = true;
        Ok(())
    }

    /// Merges the batch's partial into `acc` (after [`Self::set_aggregate_fold`], once the
    /// summary answered it or the finishing step ran). `Ok(false)`, leaving `acc` unchanged, when
    /// `acc` would then hold more than `max_groups` groups (take it, then fold again). A batch
    /// folds once; its partial is released then.
    pub fn fold_into(&mut self, acc: &mut AggregateAccumulator) -> Result<bool, ScanError> {
        match self.fold {
            Fold::Json => return Err(ScanError::NotDone("the scan was not set to fold")),
            Fold::Folded => return Err(ScanError::Folded),
            Fold::Pending => {}
        }
        let Some(state) = self.aggregate.as_ref().filter(|_| self.finished) else {
            return Err(ScanError::NotDone("the batch is not scanned to its end"));
        };
        let merged = acc.fold(state).map_err(|e| match e {
            MergeError::PlanMismatch => ScanError::PlanMismatch,
            MergeError::Overflowed { max } => ScanError::TooManyGroups { max },
        })?;
        if merged {
            self.fold = Fold::Folded;
            self.aggregate = None;
        }
        Ok(merged)
    }
}
