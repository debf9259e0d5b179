//! Answering a whole-batch aggregate from the segment's batch summary (docs/segment.md "Batch
//! summary"), without reading records: possible when every record counts (no filter), no field the
//! aggregate reads is hidden, it has no key or one 1-byte unsigned key (an enumeration's codes), and
//! every measure is a count, or a sum / min / max (min / max only without a key) of an integer
//! zone field. Otherwise the batch is scanned.

use std::sync::Arc;

use super::spec::{AggFn, AggregatePlan, Read, ReadKind, MAX_GROUP_KEYS};
use super::state::{Acc, AggregateState, Keys};
use crate::scan::key::{Load64, K256};
use crate::segment::{BatchStats, Zone, ZoneField, ZoneKind};

/// The zone field `r` reads, if it is an integer zone field of the same layout.
pub(super) fn zone_of(r: &Read, fields: &[ZoneField]) -> Option<usize> {
    if !r.visible() {
        return None;
    }
    let ReadKind::K64 {
        load,
        signed,
        float: None,
    } = r.kind
    else {
        return None;
    };
    let be = matches!(
        load,
        Load64::U16Be
            | Load64::U32Be
            | Load64::U64Be
            | Load64::I16Be
            | Load64::I32Be
            | Load64::I64Be
    );
    let kind = if signed {
        ZoneKind::Signed
    } else {
        ZoneKind::Unsigned
    };
    fields.iter().position(|f| {
        f.offset as usize == r.off
            && usize::from(f.size) == r.size
            && f.kind == kind
            && (f.size == 1 || f.big_endian == be)
    })
}

/// The partial JSON of a batch of `records` records from its summary, or `None` when the summary
/// cannot answer this plan (the batch is then scanned). The JSON of [`AggregateState::from_stats`].
pub fn partial_from_stats(
    plan: &AggregatePlan,
    fields: &[ZoneField],
    filter: &[Zone],
    stats: &BatchStats,
    records: u64,
) -> Option<String> {
    AggregateState::from_stats(Arc::new(plan.clone()), fields, filter, stats, records)?.to_json()
}

impl AggregateState {
    /// The partial of a whole batch of `records` records built from its summary (`filter`: the
    /// batch's zones, for min / max), or `None` when the summary cannot answer `plan`. Groups are
    /// not capped at `max_groups` here: a summary's answer never was (see
    /// `AggregateAccumulator::fold`, which checks).
    pub fn from_stats(
        plan: Arc<AggregatePlan>,
        fields: &[ZoneField],
        filter: &[Zone],
        stats: &BatchStats,
        records: u64,
    ) -> Option<AggregateState> {
        // Every measure's zone field (None for count).
        let mut cols = Vec::with_capacity(plan.measures.len());
        for m in &plan.measures {
            match (m.func, &m.read) {
                (AggFn::Count, _) => cols.push(None),
                (AggFn::Min | AggFn::Max, _) if !plan.keys.is_empty() => return None,
                (_, Some(r)) => cols.push(Some(zone_of(r, fields)?)),
                (_, None) => return None,
            }
        }
        // Per group: its key tuple, record count and per-zone-field sums.
        let groups: Vec<(Keys, u64, &[i128])> = match plan.keys.as_slice() {
            [] if records == 0 => Vec::new(),
            [] => vec![([0; MAX_GROUP_KEYS], records, stats.sums.as_slice())],
            [k] if k.bucket.is_none() => {
                let ReadKind::K64 {
                    load: Load64::U8,
                    float: None,
                    ..
                } = k.read.kind
                else {
                    return None;
                };
                let zf = zone_of(&k.read, fields)?;
                let cf = stats.code_fields.iter().find(|c| c.field == zf)?;
                cf.codes
                    .iter()
                    .map(|c| ([u64::from(c.code), 0, 0, 0], c.count, c.sums.as_slice()))
                    .collect()
            }
            _ => return None,
        };
        // A summary that does not hold a measure's field (not one written for this layout) cannot answer.
        let fits = |sums: &[i128]| {
            cols.iter()
                .flatten()
                .all(|&j| j < sums.len() && j < filter.len())
        };
        if !groups.iter().all(|(_, _, sums)| fits(sums)) {
            return None;
        }
        let mut st = AggregateState::new(Arc::clone(&plan));
        for (keys, count, sums) in groups {
            let g = st.group_of(keys) as usize;
            for (acc, col) in st.accs.iter_mut().zip(&cols) {
                match (acc, col) {
                    (Acc::Count(v), _) => v[g] = count,
                    (Acc::Sum(v), Some(j)) => v[g] = sums[*j],
                    (Acc::Min(v), Some(j)) => {
                        v[g] = K256 {
                            hi: 0,
                            lo: u128::from(filter[*j].min),
                        }
                    }
                    (Acc::Max(v), Some(j)) => {
                        v[g] = K256 {
                            hi: 0,
                            lo: u128::from(filter[*j].max),
                        }
                    }
                    // zone_of admits only 64-bit integers: their sums are `Sum`, not `Wide`.
                    _ => return None,
                }
            }
        }
        Some(st)
    }
}
