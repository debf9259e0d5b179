//! Merging partial aggregates exactly: a Storage Node folds the partials of many batches of one
//! query into one [`AggregateAccumulator`] and sends one aggregate frame for them all instead of
//! one per batch (with many small batches the per-batch frames cost more than the scans).
//!
//! Counts and i128 sums add, 384-bit sums add, min / max compare order keys; a batch's group finds
//! the accumulator's group with the same key tuple through the state's own index, so the merged
//! JSON is exactly what one state over all the records would write.

use std::sync::Arc;

use thiserror::Error;

use super::spec::AggregatePlan;
use super::state::{Acc, AggregateState, Index, Keys, NONE};

/// Why two partials cannot be merged.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum MergeError {
    /// The partials were computed for different plans (their groups and measures do not line up).
    #[error("the partials were computed for different aggregate plans")]
    PlanMismatch,
    /// The batch's partial is void: it found more groups than the plan's `max_groups`.
    #[error("aggregate.max_groups: more than {max} groups in one batch")]
    Overflowed { max: usize },
}

impl AggregateState {
    /// Whether `other` was computed for the same plan (the same compiled plan, or an equal one).
    pub fn same_plan(&self, other: &AggregateState) -> bool {
        Arc::ptr_eq(&self.plan, &other.plan) || *self.plan == *other.plan
    }

    /// The group holding key tuple `k`, if there is one.
    fn find(&self, k: &Keys) -> Option<u32> {
        match &self.index {
            Index::Global => (!self.keys.is_empty()).then_some(0),
            Index::Direct(t) => t.get(k[0] as usize).copied().filter(|&g| g != NONE),
            Index::Hash(m) => m.get(k).copied(),
        }
    }

    /// The group of key tuple `k`, made when missing. No `max_groups` check: callers check the
    /// count first ([`Self::merged_groups`]), or, building from a batch summary, must keep every group.
    pub(super) fn group_of(&mut self, k: Keys) -> u32 {
        if let Some(g) = self.find(&k) {
            return g;
        }
        let g = self.new_group(k);
        match &mut self.index {
            Index::Global => {}
            // Keys of a state of the same plan fit the table (one key of at most 16 bits).
            Index::Direct(t) => {
                if let Some(slot) = t.get_mut(k[0] as usize) {
                    *slot = g;
                }
            }
            Index::Hash(m) => {
                m.insert(k, g);
            }
        }
        g
    }

    /// The number of groups `self` would hold after merging `other` into it.
    pub fn merged_groups(&self, other: &AggregateState) -> usize {
        let new = other.keys.iter().filter(|k| self.find(k).is_none()).count();
        self.keys.len() + new
    }

    /// Merges `other` (a partial of the same plan) into `self`: afterwards `self` is the partial
    /// of both record sets. `max_groups` is not enforced here (see [`Self::merged_groups`]).
    pub fn merge(&mut self, other: &AggregateState) -> Result<(), MergeError> {
        if !self.same_plan(other) {
            return Err(MergeError::PlanMismatch);
        }
        if other.overflow || self.overflow {
            return Err(MergeError::Overflowed {
                max: self.plan.max_groups,
            });
        }
        // other's group g is self's group map[g].
        let map: Vec<usize> = other
            .keys
            .iter()
            .map(|k| self.group_of(*k) as usize)
            .collect();
        for (mine, theirs) in self.accs.iter_mut().zip(&other.accs) {
            // Wrapping like the per-record accumulation: unreachable for fewer than 2^64 records.
            match (mine, theirs) {
                (Acc::Count(a), Acc::Count(b)) => {
                    for (&g, v) in map.iter().zip(b) {
                        a[g] = a[g].wrapping_add(*v);
                    }
                }
                (Acc::Sum(a), Acc::Sum(b)) => {
                    for (&g, v) in map.iter().zip(b) {
                        a[g] = a[g].wrapping_add(*v);
                    }
                }
                (Acc::Wide(a), Acc::Wide(b)) => {
                    for (&g, v) in map.iter().zip(b) {
                        a[g].add(v);
                    }
                }
                (Acc::Min(a), Acc::Min(b)) => {
                    for (&g, v) in map.iter().zip(b) {
                        if *v < a[g] {
                            a[g] = *v;
                        }
                    }
                }
                (Acc::Max(a), Acc::Max(b)) => {
                    for (&g, v) in map.iter().zip(b) {
                        if *v > a[g] {
                            a[g] = *v;
                        }
                    }
                }
                // The same plan gives the same measure kinds in the same order.
                _ => return Err(MergeError::PlanMismatch),
            }
        }
        Ok(())
    }

    /// Empties the state (no group, no overflow), keeping its allocations: the direct table is
    /// reset slot by slot rather than refilled, since it has 2^16 slots and few are used.
    pub fn clear(&mut self) {
        match &mut self.index {
            Index::Global => {}
            Index::Direct(t) => {
                for k in &self.keys {
                    if let Some(slot) = t.get_mut(k[0] as usize) {
                        *slot = NONE;
                    }
                }
            }
            Index::Hash(m) => m.clear(),
        }
        self.keys.clear();
        for a in &mut self.accs {
            match a {
                Acc::Count(v) => v.clear(),
                Acc::Sum(v) => v.clear(),
                Acc::Wide(v) => v.clear(),
                Acc::Min(v) | Acc::Max(v) => v.clear(),
            }
        }
        self.overflow = false;
    }
}

/// The merged partials of many batches of one query (one plan), held until they are sent.
pub struct AggregateAccumulator {
    state: AggregateState,
    /// Batches folded in since creation or the last take.
    batches: u64,
}

impl AggregateAccumulator {
    /// An empty accumulator for `plan`.
    pub fn new(plan: Arc<AggregatePlan>) -> Self {
        AggregateAccumulator {
            state: AggregateState::new(plan),
            batches: 0,
        }
    }

    /// The plan the accumulator merges partials of.
    pub fn plan(&self) -> &Arc<AggregatePlan> {
        &self.state.plan
    }

    /// Groups held now.
    pub fn groups(&self) -> usize {
        self.state.groups()
    }

    /// Batches folded in since creation or the last [`Self::take_json`].
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// Whether nothing has been folded in since creation or the last [`Self::take_json`] (a
    /// folded batch with no matching record counts: it was answered).
    pub fn is_empty(&self) -> bool {
        self.batches == 0
    }

    /// The number of groups the accumulator would hold after folding `batch` in (what
    /// [`Self::fold`] compares with `max_groups`).
    pub fn merged_groups(&self, batch: &AggregateState) -> usize {
        self.state.merged_groups(batch)
    }

    /// Merges a finished batch's partial. `Ok(false)`, leaving the accumulator unchanged, when
    /// the result would hold more groups than the plan's `max_groups` (take, then fold again).
    pub fn fold(&mut self, batch: &AggregateState) -> Result<bool, MergeError> {
        if !self.state.same_plan(batch) {
            return Err(MergeError::PlanMismatch);
        }
        let max = self.state.plan.max_groups;
        // A batch summary's groups are not capped when built (its JSON never was): check here,
        // so a folded batch obeys max_groups exactly as a scanned one does.
        if batch.overflowed() || batch.groups() > max {
            return Err(MergeError::Overflowed { max });
        }
        if self.state.merged_groups(batch) > max {
            return Ok(false);
        }
        self.state.merge(batch)?;
        self.batches += 1;
        Ok(true)
    }

    /// Moves everything `other` (an accumulator of the same plan) holds into `self`: its groups
    /// and its batch count; `other` is left empty. `Ok(false)`, both unchanged, when `self`
    /// would then hold more groups than the plan's `max_groups` (take, then absorb again).
    pub fn absorb(&mut self, other: &mut AggregateAccumulator) -> Result<bool, MergeError> {
        if !self.state.same_plan(&other.state) {
            return Err(MergeError::PlanMismatch);
        }
        if other.batches == 0 {
            return Ok(true);
        }
        if self.state.merged_groups(&other.state) > self.state.plan.max_groups {
            return Ok(false);
        }
        self.state.merge(&other.state)?;
        self.batches += other.batches;
        other.state.clear();
        other.batches = 0;
        Ok(true)
    }

    /// The merged groups as the JSON array of an aggregate frame's `groups` (`[]` when none),
    /// and the accumulator emptied.
    pub fn take_json(&mut self) -> String {
        // The state never overflows: fold checks the count before merging.
        let json = self.state.groups_json().unwrap_or_else(|| "[]".to_string());
        self.state.clear();
        self.batches = 0;
        json
    }
}
