//! Scan steps sent to an offload (the GPU; docs/gpu.md): the wanted runs of a step gathered into
//! one buffer and filtered in one call.

use std::sync::Arc;

use super::pieces::{next_run, records_in};
use super::{ScanError, ScanStep, SegmentScanner};
use crate::gpu::Offload;

impl SegmentScanner {
    /// Sends this scan's steps to `offload` (or keeps them on the CPU kernel with `None`),
    /// instead of the process's offload.
    pub fn set_offload(&mut self, offload: Option<Arc<Offload>>) {
        self.offload = offload;
    }

    /// Whether steps may go to the offload: one is set and the scan does not audit the hash
    /// chain (which needs every block, in order, on the CPU).
    pub(super) fn offloading(&self) -> bool {
        self.offload.is_some() && self.chain.is_none()
    }

    /// One offloaded step: the wanted runs of blocks `first .. end` gathered into one buffer (each
    /// block's CRC checked as it is read) and filtered in one call; an aggregate folds what it selects.
    pub(super) fn offload_step(
        &mut self,
        first: u64,
        end: u64,
        wanted: &[bool],
        step: &mut ScanStep,
    ) -> Result<(), ScanError> {
        let Some(offload) = self.offload.clone() else {
            return Ok(());
        };
        let want = |b: u64| wanted[(b - first) as usize];
        // Kept between steps at its largest size, so steps after the first write over it.
        let mut gather = std::mem::take(&mut self.gather);
        let mut filled = 0;
        let mut k = first;
        while let Some((run, j)) = next_run(k, end, want) {
            // Straight into the gather buffer: a step is at most GPU_STEP_FACTOR * MAX_STEP_BYTES
            // (or one block), within what one read may cover.
            let len = self.range_len(run, j)?;
            if gather.len() < filled + len {
                gather.resize(filled + len, 0);
            }
            self.read_into(run, j, &mut gather[filled..filled + len])?;
            filled += len;
            step.scanned += records_in(self.reader.block_index(), run, j);
            k = j;
        }
        if filled > 0 {
            let data = &gather[..filled];
            step.matched += match self.aggregate.as_mut() {
                Some(agg) => offload.select_chunks(&self.filter, data, |c, sel| agg.add(c, sel)),
                None => offload.filter_into(&self.filter, data, &mut step.records),
            };
        }
        self.gather = gather;
        Ok(())
    }
}
