//! A group of batches answered from their summaries in one call (`fold_group` without a scan
//! budget) and the accumulators merged whole (`absorb`): the same answer as folding batch by
//! batch, never an answer from a damaged or missing segment, and `max_groups` kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::tests_fold::{summary_plan, write, Scratch};
use super::tests_merge::{cuts, records, schema, state_over, Rng, RS};
use super::*;
use crate::scan::{GroupBudget, GroupFold, ScanFilter, SegmentScanner};

/// `fold_group` answering from summaries only: per path, the folded batch's (records, blocks).
fn fold_summaries(
    paths: &[PathBuf],
    filter: &Arc<ScanFilter>,
    acc: &mut AggregateAccumulator,
) -> Vec<Option<(u64, u64)>> {
    SegmentScanner::fold_group(paths, filter, acc, GroupBudget::SUMMARIES_ONLY)
        .into_iter()
        .map(|f| match f {
            GroupFold::Folded(a) => {
                assert!(a.from_summary && a.scanned == 0 && a.matched == a.records);
                Some((a.records, a.blocks))
            }
            GroupFold::Read => None,
            GroupFold::Untried => panic!("nothing is scanned, so nothing is left untried"),
        })
        .collect()
}

/// Scans `path` with `filter` in fold mode to its end (unless its summary answers) and folds it.
pub(super) fn scan_fold(path: &Path, filter: &Arc<ScanFilter>, acc: &mut AggregateAccumulator) {
    let mut sc = SegmentScanner::open(path, Arc::clone(filter), false).expect("open");
    if !sc.set_aggregate_fold(Arc::clone(acc.plan())) {
        while !sc.next(4).expect("step").done {}
    }
    assert!(sc.fold_into(acc).expect("fold"));
}

/// A copy of `path` with one footer byte changed (its checksum no longer holds).
pub(super) fn damaged_copy(path: &Path, to: PathBuf) -> PathBuf {
    let mut bytes = std::fs::read(path).expect("read");
    let at = bytes.len() - 40;
    bytes[at] ^= 0x5a;
    std::fs::write(&to, bytes).expect("write");
    to
}

#[test]
fn fold_summaries_answers_exactly_the_batches_one_by_one_folds_would() {
    let dir = Scratch::new("group");
    let mut kinds = (0, 0);
    for seed in 1..=10u64 {
        let mut r = Rng(seed * 7919 + 5);
        let big = seed % 2 == 0;
        let s = schema(big);
        let n = 300 + r.below(1200) as usize;
        let data = records(&mut r, n, big);
        let k = 2 + r.below(6) as usize;
        let mut paths: Vec<PathBuf> = cuts(&mut r, n, k)
            .iter()
            .enumerate()
            .map(|(i, (a, b))| write(&dir.0, &format!("g{seed}-{i}"), &data[a * RS..b * RS], big))
            .collect();
        let good = paths.len();
        // Never answered from: a damaged footer, a missing file.
        paths.push(damaged_copy(
            &paths[0],
            dir.0.join(format!("bad{seed}.hdseg")),
        ));
        paths.push(dir.0.join(format!("missing{seed}.hdseg")));
        for (fi, filter_json) in [
            "[]",
            r#"[{"filters":[{"field":"u8","op":"eq","value":"3"}]}]"#,
        ]
        .iter()
        .enumerate()
        {
            let filter = Arc::new(ScanFilter::compile(&s, filter_json).expect("filter"));
            for _ in 0..3 {
                let json = summary_plan(&mut r);
                let plan = Arc::new(AggregatePlan::compile(&s, &json, None).expect("plan"));
                let mut acc = AggregateAccumulator::new(Arc::clone(&plan));
                let answers = fold_summaries(&paths, &filter, &mut acc);
                assert_eq!(answers.len(), paths.len());
                assert_eq!(answers[good], None, "damaged footer: {json}");
                assert_eq!(answers[good + 1], None, "missing file: {json}");
                for (p, a) in paths[..good].iter().zip(&answers) {
                    // Answered exactly when the batch's own fold would take its summary.
                    let mut one =
                        SegmentScanner::open(p, Arc::clone(&filter), false).expect("open");
                    let summary = one.set_aggregate_fold(Arc::clone(&plan));
                    let fits = summary
                        && one
                            .fold_into(&mut AggregateAccumulator::new(Arc::clone(&plan)))
                            .is_ok();
                    assert_eq!(a.is_some(), fits, "seed {seed} filter {fi}: {json}");
                    match a {
                        Some(a) => {
                            let rd = one.reader();
                            assert_eq!(*a, (rd.records(), rd.blocks()));
                            kinds.0 += 1;
                        }
                        // The caller reads it as usual, into the same accumulator.
                        None => {
                            scan_fold(p, &filter, &mut acc);
                            kinds.1 += 1;
                        }
                    }
                }
                let want = state_over(&plan, &filter, &data).groups_json();
                assert_eq!(
                    Some(acc.take_json()),
                    want,
                    "seed {seed} filter {fi}: {json}"
                );
            }
        }
    }
    assert!(kinds.0 > 20 && kinds.1 > 20, "{kinds:?} answered / read");
}

#[test]
fn fold_summaries_leaves_out_batches_past_max_groups() {
    let dir = Scratch::new("group-max");
    let s = schema(false);
    let all = Arc::new(ScanFilter::compile(&s, "[]").expect("filter"));
    let paths: Vec<PathBuf> = (0..3)
        .map(|i| {
            write(
                &dir.0,
                &format!("m{i}"),
                &records(&mut Rng(40 + i), 200, false),
                false,
            )
        })
        .collect();
    let plan = |max: usize| {
        let j = format!(
            r#"{{"version":1,"group_by":[{{"field":"e"}}],"measures":[{{"fn":"count"}}],"max_groups":{max}}}"#
        );
        Arc::new(AggregatePlan::compile(&s, &j, None).expect("plan"))
    };
    // Each batch alone has more codes than one group: none is folded, the accumulator stays empty.
    let mut acc = AggregateAccumulator::new(plan(1));
    assert!(fold_summaries(&paths, &all, &mut acc)
        .iter()
        .all(Option::is_none));
    assert!(acc.is_empty());
    // Room for every code: all folded, as one accumulator over all of them.
    let mut acc = AggregateAccumulator::new(plan(64));
    let answers = fold_summaries(&paths, &all, &mut acc);
    assert!(answers.iter().all(Option::is_some));
    assert_eq!(acc.batches(), 3);
}

#[test]
fn absorb_moves_a_whole_accumulator_and_keeps_max_groups() {
    let s = schema(false);
    let all = ScanFilter::compile(&s, "[]").expect("filter");
    let plan = |j: &str| Arc::new(AggregatePlan::compile(&s, j, None).expect("plan"));
    let by_e = plan(
        r#"{"version":1,"group_by":[{"field":"e"}],"measures":[{"fn":"count"},{"fn":"sum","field":"u16"}]}"#,
    );
    let mut r = Rng(17);
    let (a, b) = (records(&mut r, 300, false), records(&mut r, 200, false));
    let mut left = AggregateAccumulator::new(Arc::clone(&by_e));
    let mut right = AggregateAccumulator::new(Arc::clone(&by_e));
    assert!(left.fold(&state_over(&by_e, &all, &a)).expect("fold"));
    assert!(right.fold(&state_over(&by_e, &all, &b)).expect("fold"));
    assert!(left.absorb(&mut right).expect("absorb"));
    assert!(right.is_empty() && right.groups() == 0);
    assert_eq!(left.batches(), 2);
    let both: Vec<u8> = a.iter().chain(&b).copied().collect();
    assert_eq!(
        Some(left.take_json()),
        state_over(&by_e, &all, &both).groups_json()
    );
    // An empty accumulator absorbs as nothing.
    assert!(left.absorb(&mut right).expect("absorb"));
    assert!(left.is_empty());
    // Past max_groups: refused, both unchanged.
    let one = plan(
        r#"{"version":1,"group_by":[{"field":"e"}],"measures":[{"fn":"count"}],"max_groups":1}"#,
    );
    let only = |code: u8| -> Vec<u8> {
        let mut v = records(&mut Rng(5), 10, false);
        for rec in v.chunks_exact_mut(RS) {
            rec[8] = code;
        }
        v
    };
    let mut six = AggregateAccumulator::new(Arc::clone(&one));
    let mut udp = AggregateAccumulator::new(Arc::clone(&one));
    assert!(six.fold(&state_over(&one, &all, &only(6))).expect("fold"));
    assert!(udp.fold(&state_over(&one, &all, &only(17))).expect("fold"));
    assert!(!six.absorb(&mut udp).expect("absorb"));
    assert_eq!(
        (six.groups(), six.batches(), udp.groups(), udp.batches()),
        (1, 1, 1, 1)
    );
    // Another plan's accumulator.
    let mut other = AggregateAccumulator::new(plan(r#"{"version":1,"measures":[{"fn":"count"}]}"#));
    assert_eq!(six.absorb(&mut other), Err(MergeError::PlanMismatch));
}
