//! Zone skipping: whether a block (or a whole segment, by its batch filter) can hold a record the
//! filter matches, from the min and max order key of each zone-mapped field. A block is skipped
//! when no sub-query can match in it; a sub-query cannot match when any one of its filters
//! cannot. Filters without a zone test (masked_eq, list ops, wide numbers, fields the segment
//! keeps no zones for) never rule a block out.

use super::filter::ScanFilter;
use super::pred::{CompiledFilter, ZoneCheck, ZoneHint};
use crate::segment::{Zone, ZoneField, ZoneKind};

impl ZoneCheck {
    /// Whether a field whose keys lie in `z` can satisfy the check.
    pub fn may_match(&self, z: Zone) -> bool {
        match self {
            ZoneCheck::Within { lo, hi } => !z.is_empty() && z.min <= *hi && z.max >= *lo,
            // An empty zone here means no keys were recorded; stay on the safe side.
            ZoneCheck::Outside { lo, hi } => z.is_empty() || z.min < *lo || z.max > *hi,
            ZoneCheck::AnyOf(keys) => {
                if z.is_empty() {
                    return false;
                }
                let first = keys.partition_point(|&k| k < z.min);
                keys.get(first).is_some_and(|&k| k <= z.max)
            }
        }
    }

    /// Whether every key in `z` satisfies the check (an empty zone proves nothing).
    pub fn all_match(&self, z: Zone) -> bool {
        if z.is_empty() {
            return false;
        }
        match self {
            ZoneCheck::Within { lo, hi } => z.min >= *lo && z.max <= *hi,
            ZoneCheck::Outside { lo, hi } => z.max < *lo || z.min > *hi,
            ZoneCheck::AnyOf(keys) => z.min == z.max && keys.binary_search(&z.min).is_ok(),
        }
    }
}

fn same_field(h: &ZoneHint, f: &ZoneField) -> bool {
    h.offset == f.offset
        && h.size == f.size
        && h.kind == f.kind
        && (h.kind == ZoneKind::Bytes || h.size == 1 || h.big_endian == f.big_endian)
}

/// `filter` without the filters that every record of a segment passes, by the segment's batch
/// zones (`zones`, one per field of `fields`): an exact zone check that every key of the batch's
/// zone passes (a time range that covers the whole batch) needs no evaluation per record there.
/// `None` when no filter is proven so.
pub fn reduced_for_segment(
    filter: &ScanFilter,
    fields: &[ZoneField],
    zones: &[Zone],
) -> Option<ScanFilter> {
    if filter.matches_all() || filter.matches_none() {
        return None;
    }
    filter.without(|c| {
        exact_check(c, fields)
            .is_some_and(|(i, check)| zones.get(i).is_some_and(|z| check.all_match(*z)))
    })
}

/// The zone field of `fields` that `c`'s exact zone check reads, and the check: a zone every key
/// of which passes it proves `c` for every record there. `None` when `c` has no exact check on a
/// zone field of the segment.
fn exact_check<'a>(c: &'a CompiledFilter, fields: &[ZoneField]) -> Option<(usize, &'a ZoneCheck)> {
    let h = c.zone.as_ref().filter(|h| h.exact)?;
    Some((fields.iter().position(|f| same_field(h, f))?, &h.check))
}

/// A filter's zone tests resolved against one segment's zone fields.
#[derive(Clone, Debug)]
pub struct ZonePlan {
    /// Per sub-query: (zone field index, check) of each filter the zones can rule on.
    subs: Vec<Vec<(usize, ZoneCheck)>>,
    /// Per sub-query whose every filter has an exact zone check on a zone field of the segment:
    /// those checks (a zone passing all of them proves the sub-query matches every record there).
    provable: Vec<Vec<(usize, ZoneCheck)>>,
    match_all: bool,
    match_none: bool,
}

impl ZonePlan {
    /// Resolves `filter`'s zone tests against the zone fields a segment declares.
    pub fn new(filter: &ScanFilter, fields: &[ZoneField]) -> ZonePlan {
        let subs = filter
            .subs()
            .iter()
            .map(|sub| {
                sub.iter()
                    .filter_map(|c| {
                        let h = c.zone.as_ref()?;
                        let i = fields.iter().position(|f| same_field(h, f))?;
                        Some((i, h.check.clone()))
                    })
                    .collect()
            })
            .collect();
        let provable = filter
            .subs()
            .iter()
            .filter_map(|sub| {
                sub.iter()
                    .map(|c| exact_check(c, fields).map(|(i, check)| (i, check.clone())))
                    .collect::<Option<Vec<_>>>()
            })
            .collect();
        ZonePlan {
            subs,
            provable,
            match_all: filter.matches_all(),
            match_none: filter.matches_none(),
        }
    }

    /// Whether records whose zones are `zones` (one per zone field, in header order) may match.
    pub fn may_match(&self, zones: &[Zone]) -> bool {
        if self.match_all {
            return true;
        }
        if self.match_none {
            return false;
        }
        self.subs.iter().any(|checks| {
            checks
                .iter()
                .all(|(i, c)| zones.get(*i).is_none_or(|z| c.may_match(*z)))
        })
    }

    /// Whether every record whose zones are `zones` surely matches: the filter matches all, or
    /// some sub-query's filters are all exact zone checks that every key of their zone passes.
    /// (Used to answer an aggregate from a batch summary when the filter covers the whole batch.)
    pub fn must_match(&self, zones: &[Zone]) -> bool {
        if self.match_all {
            return true;
        }
        self.provable.iter().any(|checks| {
            checks
                .iter()
                .all(|(i, c)| zones.get(*i).is_some_and(|z| c.all_match(*z)))
        })
    }

    /// Whether any zone test applies at all (otherwise every block is scanned).
    pub fn can_skip(&self) -> bool {
        self.match_none || self.subs.iter().all(|s| !s.is_empty())
    }
}
