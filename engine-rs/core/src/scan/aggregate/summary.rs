//! Answering a whole-batch aggregate from the segment's batch summary (docs/segment.md "Batch
//! summary"), without reading records: possible when every record counts (no filter), no field the
//! aggregate reads is hidden, it has no key or one 1-byte unsigned key (an enumeration's codes), and
//! every measure is a count, or a sum / min / max (min / max only without a key) of an integer
//! zone field. Otherwise the batch is scanned.

use super::spec::{k64_text, AggFn, AggregatePlan, Read, ReadKind};
use super::EMPTY_PARTIAL;
use crate::scan::key::Load64;
use crate::segment::{BatchStats, Zone, ZoneField, ZoneKind};

/// The zone field `r` reads, if it is an integer zone field of the same layout.
fn zone_of(r: &Read, fields: &[ZoneField]) -> Option<usize> {
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
/// cannot answer this plan (the batch is then scanned).
pub fn partial_from_stats(
    plan: &AggregatePlan,
    fields: &[ZoneField],
    filter: &[Zone],
    stats: &BatchStats,
    records: u64,
) -> Option<String> {
    // Every measure's zone field (None for count).
    let mut cols = Vec::with_capacity(plan.measures.len());
    for m in &plan.measures {
        match (m.func, &m.read) {
            (AggFn::Count, _) => cols.push(None),
            (AggFn::Min | AggFn::Max, _) if !plan.keys.is_empty() => return None,
            (_, Some(r)) => cols.push(Some((zone_of(r, fields)?, r.kind))),
            (_, None) => return None,
        }
    }
    let measure_text = |count: u64, sums: &[i128], g: bool| -> Vec<String> {
        plan.measures
            .iter()
            .zip(&cols)
            .map(|(m, c)| match (m.func, c) {
                (AggFn::Sum, Some((j, _))) => sums[*j].to_string(),
                (AggFn::Min, Some((j, k))) if !g => k64_text(filter[*j].min, *k),
                (AggFn::Max, Some((j, k))) if !g => k64_text(filter[*j].max, *k),
                _ => count.to_string(),
            })
            .collect()
    };
    let quoted = |v: &[String]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(",")
    };
    match plan.keys.as_slice() {
        [] => {
            if records == 0 {
                return Some(EMPTY_PARTIAL.to_string());
            }
            let m = measure_text(records, &stats.sums, false);
            Some(format!(
                r#"{{"v":1,"groups":[{{"k":[],"m":[{}]}}]}}"#,
                quoted(&m)
            ))
        }
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
            let groups: Vec<String> = cf
                .codes
                .iter()
                .map(|c| {
                    format!(
                        r#"{{"k":["{}"],"m":[{}]}}"#,
                        c.code,
                        quoted(&measure_text(c.count, &c.sums, true))
                    )
                })
                .collect();
            Some(format!(r#"{{"v":1,"groups":[{}]}}"#, groups.join(",")))
        }
        _ => None,
    }
}
