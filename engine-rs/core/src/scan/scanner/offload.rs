//! Scan steps sent to an offload (the GPU; docs/gpu.md): the wanted runs of a step gathered into
//! one buffer and filtered in one call.

use std::sync::Arc;

use super::pieces::{next_run, records_in};
use super::{ScanError, ScanStep, SegmentScanner, MAX_STEP_BYTES};
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
        let mut gather = std::mem::take(&mut self.gather);
        gather.clear();
        let mut k = first;
        while let Some((run, j)) = next_run(k, end, want) {
            // Read in ranges of at most MAX_STEP_BYTES (one read is bounded by MAX_READ_BYTES).
            let rs = u64::from(self.reader.header().record_size);
            let mut b = run;
            while b < j {
                let mut e = b + 1;
                let mut bytes = records_in(self.reader.block_index(), b, e) * rs;
                while e < j
                    && bytes + records_in(self.reader.block_index(), e, e + 1) * rs
                        <= MAX_STEP_BYTES
                {
                    bytes += records_in(self.reader.block_index(), e, e + 1) * rs;
                    e += 1;
                }
                let n = self.read(b, e)?;
                gather.extend_from_slice(&self.buf[..n]);
                b = e;
            }
            step.scanned += records_in(self.reader.block_index(), run, j);
            k = j;
        }
        if !gather.is_empty() {
            step.matched += match self.aggregate.as_mut() {
                Some(agg) => offload.select_chunks(&self.filter, &gather, |c, sel| agg.add(c, sel)),
                None => offload.filter_into(&self.filter, &gather, &mut step.records),
            };
        }
        self.gather = gather;
        Ok(())
    }
}
