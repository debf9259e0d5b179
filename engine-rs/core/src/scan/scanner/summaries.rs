//! A group of small batches in one call: a Storage Node asking for a query's batches one by one
//! pays an open, a step and a close each (and a thread hand-off for every one of them), which for
//! a batch of a few hundred records costs far more than its kernel work. One call folds every
//! batch of the group into an accumulator: a batch its summary answers without reading a record,
//! and, within a byte budget, a small batch by scanning it with the same filter and plan (zone
//! maps, the kernel, the aggregate fold) as its own scan would; for rows, the same budget scans
//! small batches whole and hands back their matches (with a top, each batch's best). Each footer
//! comes from the footer cache, or is read and validated as on any open: a damaged segment is
//! never folded.

use std::path::Path;
use std::sync::Arc;

use super::SegmentScanner;
use crate::scan::aggregate::AggregateAccumulator;
use crate::scan::filter::ScanFilter;
use crate::scan::TopPlan;
use crate::segment::SegmentReader;

/// How much of a group is scanned (batches their summaries answer cost nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupBudget {
    /// Record bytes of one batch scanned here at most; a larger batch is read as usual.
    pub batch_bytes: u64,
    /// Record bytes scanned for the whole group at most: a batch that would pass it is not
    /// tried ([`GroupFold::Untried`]), so the call stays as short as a read step.
    pub group_bytes: u64,
}

impl GroupBudget {
    /// Only batches their summaries answer are folded (none is scanned, not even one the zones
    /// rule out whole).
    pub const SUMMARIES_ONLY: GroupBudget = GroupBudget {
        batch_bytes: 0,
        group_bytes: 0,
    };
}

/// A batch folded by [`SegmentScanner::fold_group`], counted as its own scan would count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupAnswer {
    /// Records of the batch.
    pub records: u64,
    /// Blocks of the batch.
    pub blocks: u64,
    /// Records that matched (every record when the summary answered).
    pub matched: u64,
    /// Records the kernel evaluated (none when the summary answered).
    pub scanned: u64,
    /// Blocks not read: ruled out by the zone maps, or every block when the summary answered.
    pub blocks_skipped: u64,
    /// The batch's summary answered it (no block was read).
    pub from_summary: bool,
}

/// What [`SegmentScanner::fold_group`] did with one batch of the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupFold {
    /// Folded into the accumulator.
    Folded(GroupAnswer),
    /// Not folded; the caller reads it as usual (its own read says why it cannot be read, if so).
    Read,
    /// Not tried: the group's scan budget was spent before it (the caller may group it again).
    Untried,
}

/// What a group has scanned so far against its [`GroupBudget`].
#[derive(Default)]
struct Spent {
    bytes: u64,
    any: bool,
}

impl Spent {
    /// Whether a batch of `bytes` record bytes (0: the zones rule it out whole) is scanned in the
    /// group: `Err(Read)` when over the batch limit, `Err(Untried)` when past the group's budget
    /// (the first batch scanned always fits).
    fn admit(&mut self, budget: GroupBudget, bytes: u64) -> Result<(), GroupFold> {
        if budget.batch_bytes == 0 || bytes > budget.batch_bytes {
            return Err(GroupFold::Read);
        }
        if self.any && self.bytes.saturating_add(bytes) > budget.group_bytes {
            return Err(GroupFold::Untried);
        }
        self.bytes = self.bytes.saturating_add(bytes);
        self.any |= bytes > 0;
        Ok(())
    }
}

impl SegmentScanner {
    /// Record bytes a group's scan of this batch reads (none when the zones rule it out whole).
    fn group_bytes(&self) -> u64 {
        if self.skip_all {
            0
        } else {
            self.reader
                .records()
                .saturating_mul(u64::from(self.reader.header().record_size))
        }
    }

    /// Scans this batch to its end, adding to `answer`; `out` takes the matching records unless
    /// the scanner aggregates. `None` on any error (a block checksum, I/O, too many groups).
    fn scan_to_end(&mut self, answer: &mut GroupAnswer, out: &mut Vec<u8>) -> Option<()> {
        loop {
            let mut step = self.next(u64::MAX).ok()?;
            answer.matched += step.matched;
            answer.scanned += step.scanned;
            answer.blocks_skipped += step.blocks_skipped;
            if out.is_empty() {
                *out = std::mem::take(&mut step.records);
            } else {
                out.append(&mut step.records);
            }
            if step.done {
                return Some(());
            }
        }
    }

    /// Scans the small batches of `paths` (in order) with `filter` in one call, no hash verified:
    /// each of at most `budget.batch_bytes` record bytes, scanned to its end, while the group's
    /// scanned bytes stay within `budget.group_bytes` (the first batch scanned always fits), its
    /// matching records appended to `out` in order — with `top`, only the batch's best (as its own
    /// read keeps them), so a group of many matches hands back a few. Per path: the fold, and the
    /// records it added to `out`. A batch that cannot be opened or read cleanly, or is too large,
    /// is [`GroupFold::Read`] and adds nothing; one past the budget is [`GroupFold::Untried`].
    pub fn rows_group<P: AsRef<Path>>(
        paths: &[P],
        filter: &Arc<ScanFilter>,
        top: Option<&TopPlan>,
        budget: GroupBudget,
        out: &mut Vec<u8>,
    ) -> Vec<(GroupFold, u64)> {
        let rs = filter.record_size().max(1) as u64;
        let mut spent = Spent::default();
        paths
            .iter()
            .map(|p| {
                let Ok(reader) = SegmentReader::open_cached(p.as_ref()) else {
                    return (GroupFold::Read, 0);
                };
                let Ok(mut sc) = Self::over(reader, Arc::clone(filter), false) else {
                    return (GroupFold::Read, 0);
                };
                if let Err(f) = spent.admit(budget, sc.group_bytes()) {
                    return (f, 0);
                }
                let mut answer = GroupAnswer {
                    records: sc.reader.records(),
                    blocks: sc.reader.blocks(),
                    matched: 0,
                    scanned: 0,
                    blocks_skipped: 0,
                    from_summary: false,
                };
                // Straight into `out`, cut back to where the batch began if it is not kept.
                let start = out.len();
                if sc.scan_to_end(&mut answer, out).is_none() {
                    out.truncate(start);
                    return (GroupFold::Read, 0);
                }
                if let Some(t) = top {
                    let Ok(best) = t.select(&out[start..]) else {
                        out.truncate(start);
                        return (GroupFold::Read, 0);
                    };
                    out.truncate(start);
                    out.extend_from_slice(&best);
                }
                let kept = (out.len() - start) as u64 / rs;
                (GroupFold::Folded(answer), kept)
            })
            .collect()
    }

    /// Folds into `acc` the batches of `paths` (in order) that one call can answer with `filter`
    /// and `acc`'s plan, no hash verified: those their summary answers (the filter holds for
    /// every record, as [`Self::set_aggregate_fold`] decides), and those of at most
    /// `budget.batch_bytes` record bytes, scanned to their end, while the group's scanned bytes
    /// stay within `budget.group_bytes` (the first batch scanned always fits). A batch that
    /// cannot be opened or read cleanly, whose groups alone pass `max_groups`, or whose fold
    /// would take `acc` past `max_groups`, is [`GroupFold::Read`]; a batch not folded leaves
    /// `acc` unchanged.
    pub fn fold_group<P: AsRef<Path>>(
        paths: &[P],
        filter: &Arc<ScanFilter>,
        acc: &mut AggregateAccumulator,
        budget: GroupBudget,
    ) -> Vec<GroupFold> {
        let plan = Arc::clone(acc.plan());
        let mut spent = Spent::default();
        paths
            .iter()
            .map(|p| {
                let Ok(reader) = SegmentReader::open_cached(p.as_ref()) else {
                    return GroupFold::Read;
                };
                let Ok(mut sc) = Self::over(reader, Arc::clone(filter), false) else {
                    return GroupFold::Read;
                };
                let records = sc.reader.records();
                let blocks = sc.reader.blocks();
                let mut answer = GroupAnswer {
                    records,
                    blocks,
                    matched: records,
                    scanned: 0,
                    blocks_skipped: blocks,
                    from_summary: true,
                };
                if !sc.set_aggregate_fold(Arc::clone(&plan)) {
                    // Zones that rule the whole batch out read nothing: no budget spent.
                    if let Err(f) = spent.admit(budget, sc.group_bytes()) {
                        return f;
                    }
                    answer = GroupAnswer {
                        matched: 0,
                        blocks_skipped: 0,
                        from_summary: false,
                        ..answer
                    };
                    // Any error (a block checksum, I/O, too many groups): read as usual. The
                    // aggregating scanner leaves `records` empty.
                    if sc.scan_to_end(&mut answer, &mut Vec::new()).is_none() {
                        return GroupFold::Read;
                    }
                }
                // Ok(false): the accumulator is full; Err: the batch alone has too many groups.
                if !sc.fold_into(acc).unwrap_or(false) {
                    return GroupFold::Read;
                }
                GroupFold::Folded(answer)
            })
            .collect()
    }
}
