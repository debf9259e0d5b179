//! The batch summary as a state, and the scanner's fold mode: a state built from a summary writes
//! exactly the JSON `partial_from_stats` wrote before it was derived from that state (a copy of
//! the old code is the reference), and equals a scan; summary-answered and scanned batches fold
//! into one accumulator with the answer of one state over every record; fold_into's refusals.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::spec::k64_text;
use super::summary::zone_of;
use super::tests_merge::{cuts, random_plan, records, schema, state_over, Rng, RS};
use super::*;
use crate::hash::HashAlgorithm;
use crate::scan::key::Load64;
use crate::scan::{ScanError, ScanFilter, SegmentScanner};
use crate::segment::{
    zone_fields_from_schema, BatchStats, SegmentConfig, SegmentReader, SegmentWriter, Zone,
    ZoneField,
};

/// `partial_from_stats` as it was before the summary built a state: the reference its JSON must equal.
fn legacy_partial_from_stats(
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

pub(super) struct Scratch(pub(super) PathBuf);
impl Scratch {
    pub(super) fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("hd-fold-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch");
        Scratch(p)
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn write(dir: &Path, name: &str, data: &[u8], big: bool) -> PathBuf {
    let mut w = SegmentWriter::create(SegmentConfig {
        dir: dir.to_path_buf(),
        name: format!("{name}.hdseg"),
        dataset_id: "m".into(),
        batch_id: [7u8; 64],
        record_size: RS as u32,
        block_size: 16,
        algorithm: HashAlgorithm::Sha256,
        fields: zone_fields_from_schema(&schema(big)),
    })
    .expect("writer");
    w.append(data).expect("append");
    w.finish(None).expect("finish").path
}

/// A random aggregate of the shape a summary answers: no key or the enumeration, counts and sums
/// of integer zone fields, min / max without a key.
pub(super) fn summary_plan(r: &mut Rng) -> String {
    let zone_ints = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"];
    let keyed = r.below(2) == 0;
    let nm = 1 + r.below(5) as usize;
    let measures: Vec<String> = (0..nm)
        .map(|_| match r.below(if keyed { 3 } else { 5 }) {
            0 => r#"{"fn":"count"}"#.to_string(),
            1 => format!(r#"{{"fn":"count","field":"{}"}}"#, r.pick(&zone_ints)),
            2 => format!(r#"{{"fn":"sum","field":"{}"}}"#, r.pick(&zone_ints)),
            k => {
                let f = *r.pick(&[
                    "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "ts", "ts4",
                ]);
                let func = if k == 3 { "min" } else { "max" };
                format!(r#"{{"fn":"{func}","field":"{f}"}}"#)
            }
        })
        .collect();
    let key = if keyed { r#"{"field":"e"}"# } else { "" };
    format!(
        r#"{{"version":1,"group_by":[{key}],"measures":[{}]}}"#,
        measures.join(",")
    )
}

#[test]
fn a_summary_state_writes_the_json_partial_from_stats_wrote() {
    let dir = Scratch::new("stats");
    let mut answered = 0;
    for seed in 1..=40u64 {
        let mut r = Rng(seed * 0x2545_f491 + 1);
        let big = seed % 2 == 1;
        let s = schema(big);
        let n = if seed % 8 == 0 {
            0
        } else {
            r.below(700) as usize
        };
        let data = records(&mut r, n, big);
        let rd =
            SegmentReader::open(&write(&dir.0, &format!("s{seed}"), &data, big)).expect("open");
        let stats = rd.stats().expect("a summary");
        let (fields, zones) = (&rd.header().fields, rd.batch_filter());
        let all = ScanFilter::compile(&s, "[]").expect("filter");
        for k in 0..12 {
            let json = if k % 3 == 2 {
                random_plan(&mut r, None)
            } else {
                summary_plan(&mut r)
            };
            let plan = Arc::new(AggregatePlan::compile(&s, &json, None).expect("plan"));
            let want = legacy_partial_from_stats(&plan, fields, zones, stats, n as u64);
            let st = AggregateState::from_stats(Arc::clone(&plan), fields, zones, stats, n as u64);
            let got = st.as_ref().and_then(|st| st.to_json());
            assert_eq!(got, want, "seed {seed}: {json}");
            assert_eq!(
                partial_from_stats(&plan, fields, zones, stats, n as u64),
                want
            );
            if let Some(j) = got {
                answered += 1;
                // And it is what a scan of every record gives.
                assert_eq!(
                    Some(j),
                    state_over(&plan, &all, &data).to_json(),
                    "seed {seed}: {json}"
                );
            }
        }
    }
    assert!(answered > 200, "{answered} answered from summaries");
}

/// Scans `path` in fold mode to its end (or not at all when the summary answers); returns the
/// scanner and whether the summary answered.
pub(super) fn fold_scan(
    path: &Path,
    plan: &Arc<AggregatePlan>,
    verify: bool,
    big: bool,
) -> (SegmentScanner, bool) {
    let f = Arc::new(ScanFilter::compile(&schema(big), "[]").expect("filter"));
    let mut sc = SegmentScanner::open(path, f, verify).expect("open");
    let summary = sc.set_aggregate_fold(Arc::clone(plan));
    assert!(sc.summary_partial().is_none(), "no JSON when folding");
    if !summary {
        assert!(matches!(
            sc.fold_into(&mut AggregateAccumulator::new(Arc::clone(plan))),
            Err(ScanError::NotDone(_))
        ));
        loop {
            let st = sc.next(3).expect("step");
            assert!(st.partial.is_none(), "no JSON when folding");
            if st.done {
                break;
            }
        }
    }
    (sc, summary)
}

#[test]
fn summary_and_scanned_batches_fold_into_the_answer_over_every_record() {
    let dir = Scratch::new("fold");
    let mut kinds = (0, 0);
    for seed in 1..=12u64 {
        let mut r = Rng(seed * 977 + 3);
        let big = seed % 3 == 0;
        let s = schema(big);
        let n = 200 + r.below(1500) as usize;
        let data = records(&mut r, n, big);
        let k = 2 + r.below(8) as usize;
        let batches = cuts(&mut r, n, k);
        let paths: Vec<PathBuf> = batches
            .iter()
            .enumerate()
            .map(|(i, (a, b))| write(&dir.0, &format!("f{seed}-{i}"), &data[a * RS..b * RS], big))
            .collect();
        let all = ScanFilter::compile(&s, "[]").expect("filter");
        for json in [
            summary_plan(&mut r),
            summary_plan(&mut r),
            random_plan(&mut r, None),
        ] {
            let plan = Arc::new(AggregatePlan::compile(&s, &json, None).expect("plan"));
            let mut acc = AggregateAccumulator::new(Arc::clone(&plan));
            for p in &paths {
                // verify_hash reads every block: the scanned path for the same batch.
                let (mut sc, summary) = fold_scan(p, &plan, r.below(2) == 0, big);
                if summary {
                    kinds.0 += 1
                } else {
                    kinds.1 += 1
                }
                assert!(sc.fold_into(&mut acc).expect("fold"));
                assert!(matches!(sc.fold_into(&mut acc), Err(ScanError::Folded)));
            }
            let want = state_over(&plan, &all, &data).groups_json();
            assert_eq!(Some(acc.take_json()), want, "seed {seed}: {json}");
        }
    }
    assert!(
        kinds.0 > 20 && kinds.1 > 20,
        "{kinds:?} summary / scanned batches"
    );
}

#[test]
fn fold_into_refuses_what_it_cannot_merge() {
    let dir = Scratch::new("refuse");
    let s = schema(false);
    let data = records(&mut Rng(99), 300, false);
    let path = write(&dir.0, "r", &data, false);
    let plan = |j: &str| Arc::new(AggregatePlan::compile(&s, j, None).expect("plan"));
    let by_e = plan(r#"{"version":1,"group_by":[{"field":"e"}],"measures":[{"fn":"count"}]}"#);
    let f = || Arc::new(ScanFilter::compile(&s, "[]").expect("filter"));
    // A scan that sends JSON does not fold.
    let mut sc = SegmentScanner::open(&path, f(), false).expect("open");
    sc.set_aggregate(Arc::clone(&by_e));
    let mut acc = AggregateAccumulator::new(Arc::clone(&by_e));
    assert!(matches!(sc.fold_into(&mut acc), Err(ScanError::NotDone(_))));
    // An accumulator of another plan.
    let (mut sc, summary) = fold_scan(&path, &by_e, false, false);
    assert!(summary);
    let mut other = AggregateAccumulator::new(plan(r#"{"version":1,"measures":[{"fn":"count"}]}"#));
    assert!(matches!(
        sc.fold_into(&mut other),
        Err(ScanError::PlanMismatch)
    ));
    assert!(other.is_empty());
    assert!(sc.fold_into(&mut acc).expect("fold"));
    // More codes in the summary than max_groups: JSON as before, but no fold.
    let one = plan(
        r#"{"version":1,"group_by":[{"field":"e"}],"measures":[{"fn":"count"}],"max_groups":1}"#,
    );
    let mut sc = SegmentScanner::open(&path, f(), false).expect("open");
    sc.set_aggregate(Arc::clone(&one));
    assert!(sc
        .summary_partial()
        .is_some_and(|j| j.matches("\"k\"").count() > 1));
    let (mut sc, summary) = fold_scan(&path, &one, false, false);
    assert!(summary);
    let mut acc1 = AggregateAccumulator::new(Arc::clone(&one));
    assert!(matches!(
        sc.fold_into(&mut acc1),
        Err(ScanError::TooManyGroups { max: 1 })
    ));
    // Scanned, the last step refuses it, folding or not.
    let mut sc = SegmentScanner::open(&path, f(), true).expect("open");
    assert!(!sc.set_aggregate_fold(Arc::clone(&one)));
    let mut last = sc.next(1000);
    while matches!(&last, Ok(st) if !st.done) {
        last = sc.next(1000);
    }
    assert!(matches!(last, Err(ScanError::TooManyGroups { max: 1 })));
    // An empty batch folds: no group, but the accumulator counts it.
    let empty = write(&dir.0, "e", &[], false);
    let (mut sc, summary) = fold_scan(&empty, &by_e, false, false);
    assert!(summary);
    let mut acc = AggregateAccumulator::new(Arc::clone(&by_e));
    assert!(sc.fold_into(&mut acc).expect("fold"));
    assert!(!acc.is_empty() && acc.groups() == 0);
    assert_eq!(acc.take_json(), "[]");
}
