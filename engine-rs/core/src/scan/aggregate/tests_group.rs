//! A group of small batches scanned in one call (`fold_group` with a scan budget): every batch it
//! folds is counted and folded exactly as its own scan would (filters matching none, some or all,
//! summary-answered batches in the mix, field masks), the budget is kept, and a batch that cannot
//! be read cleanly (a damaged block or footer, a missing file) is never folded.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::tests_fold::{summary_plan, write, Scratch};
use super::tests_merge::{cuts, random_mask, random_plan, records, schema, state_over, Rng, RS};
use super::tests_summaries::{damaged_copy, scan_fold};
use super::*;
use crate::scan::{GroupAnswer, GroupBudget, GroupFold, ScanFilter, SegmentScanner};
use crate::segment::SegmentReader;

/// A copy of `path` with one record byte of its first block changed (its CRC no longer holds).
fn damaged_block(path: &Path, to: PathBuf) -> PathBuf {
    let at = SegmentReader::open(path).expect("open").block_index()[0].offset as usize;
    let mut bytes = std::fs::read(path).expect("read");
    bytes[at + 3] ^= 0x5a;
    std::fs::write(&to, bytes).expect("write");
    to
}

/// What the batch's own scan (steps of `step` blocks) counts, or `None` when it cannot be read
/// to its end or folded alone; nothing is folded anywhere.
fn own_scan(
    path: &Path,
    filter: &Arc<ScanFilter>,
    plan: &Arc<AggregatePlan>,
    step: u64,
) -> Option<GroupAnswer> {
    let mut sc = SegmentScanner::open(path, Arc::clone(filter), false).ok()?;
    let rd = sc.reader();
    let (records, blocks) = (rd.records(), rd.blocks());
    let from_summary = sc.set_aggregate_fold(Arc::clone(plan));
    let mut a = GroupAnswer {
        records,
        blocks,
        matched: if from_summary { records } else { 0 },
        scanned: 0,
        blocks_skipped: if from_summary { blocks } else { 0 },
        from_summary,
    };
    if !from_summary {
        loop {
            let s = sc.next(step).ok()?;
            a.matched += s.matched;
            a.scanned += s.scanned;
            a.blocks_skipped += s.blocks_skipped;
            if s.done {
                break;
            }
        }
    }
    sc.fold_into(&mut AggregateAccumulator::new(Arc::clone(plan)))
        .ok()
        .filter(|ok| *ok)?;
    Some(a)
}

/// Random records cut into 2..11 batches, each written as a segment named `{tag}-{i}`: the
/// records, each batch's record range and its file.
fn batch_files(
    dir: &Path,
    tag: &str,
    r: &mut Rng,
    big: bool,
) -> (Vec<u8>, Vec<(usize, usize)>, Vec<PathBuf>) {
    let n = 200 + r.below(2400) as usize;
    let data = records(r, n, big);
    let k = 2 + r.below(10) as usize;
    let batches = cuts(r, n, k);
    let paths = batches
        .iter()
        .enumerate()
        .map(|(i, (a, b))| write(dir, &format!("{tag}-{i}"), &data[a * RS..b * RS], big))
        .collect();
    (data, batches, paths)
}

const FILTERS: [&str; 5] = [
    "[]",
    // Matches none (the zones rule every batch out).
    r#"[{"filters":[{"field":"u8","op":"gt","value":"254"},{"field":"u8","op":"lt","value":"1"}]}]"#,
    r#"[{"filters":[{"field":"u8","op":"le","value":"40"}]}]"#,
    r#"[{"filters":[{"field":"e","op":"eq","value":"6"}]},{"filters":[{"field":"i16","op":"lt","value":"0"}]}]"#,
    // Matches all (the zones prove it for every batch).
    r#"[{"filters":[{"field":"u8","op":"le","value":"255"}]}]"#,
];

#[test]
fn fold_group_folds_each_batch_as_its_own_scan_would() {
    let dir = Scratch::new("scan-group");
    let mut kinds = [0usize; 4];
    let mut bad_read = 0;
    for seed in 1..=24u64 {
        let mut r = Rng(seed * 104_729 + 11);
        let big = seed % 2 == 0;
        let s = schema(big);
        let (data, batches, mut paths) = batch_files(&dir.0, &format!("s{seed}"), &mut r, big);
        let good = paths.len();
        // The largest batch holds at least one block to damage.
        let largest = (0..good)
            .max_by_key(|i| batches[*i].1 - batches[*i].0)
            .expect("batches");
        let bad_block = damaged_block(&paths[largest], dir.0.join(format!("blk{seed}.hdseg")));
        let bad_footer = damaged_copy(&paths[0], dir.0.join(format!("ftr{seed}.hdseg")));
        paths.insert(good / 2, bad_block.clone());
        paths.push(bad_footer);
        paths.push(dir.0.join(format!("missing{seed}.hdseg")));
        for filter_json in FILTERS {
            let filter = Arc::new(ScanFilter::compile(&s, filter_json).expect("filter"));
            for _ in 0..3 {
                let json = if r.below(2) == 0 {
                    summary_plan(&mut r)
                } else {
                    random_plan(&mut r, None)
                };
                let mask = random_mask(&mut r);
                let plan =
                    Arc::new(AggregatePlan::compile(&s, &json, mask.as_deref()).expect("plan"));
                let rs = RS as u64;
                let budget = GroupBudget {
                    batch_bytes: rs * (100 + r.below(2000)),
                    group_bytes: rs * (200 + r.below(4000)),
                };
                let mut acc = AggregateAccumulator::new(Arc::clone(&plan));
                let folds = SegmentScanner::fold_group(&paths, &filter, &mut acc, budget);
                assert_eq!(folds.len(), paths.len());
                let why = format!("seed {seed} {filter_json} {json} {budget:?}");
                // Bytes of batches folded after reading records, and how many.
                let mut spent = (0u64, 0usize);
                let mut refused = false;
                let mut want = Vec::new();
                for (p, f) in paths.iter().zip(&folds) {
                    let own = own_scan(p, &filter, &plan, 1 + r.below(4));
                    let mut bytes = 0;
                    match f {
                        GroupFold::Folded(a) => {
                            assert_eq!(Some(*a), own, "{why}");
                            if a.scanned > 0 {
                                bytes = a.records * rs;
                            }
                            kinds[usize::from(!a.from_summary)] += 1;
                        }
                        GroupFold::Read => {
                            // Too large, or the batch's own read fails or refuses too.
                            let fits = own.is_some_and(|o| {
                                o.from_summary || o.records * rs <= budget.batch_bytes
                            });
                            assert!(!fits, "{why}: {p:?} {own:?}");
                            refused = true;
                            kinds[2] += 1;
                        }
                        GroupFold::Untried => {
                            // Opened, not answered from its summary, small, and past the group's budget.
                            let size = SegmentReader::open(p)
                                .expect("untried batches open")
                                .records()
                                * rs;
                            assert!(
                                own.is_none_or(|o| !o.from_summary) && size <= budget.batch_bytes
                            );
                            // Something was scanned before it (folded, or read and refused).
                            assert!(spent.1 > 0 || refused, "{why}");
                            kinds[3] += 1;
                        }
                    }
                    if p == &bad_block {
                        // Read on its own, its damaged block fails the read: never folded (above).
                        bad_read += usize::from(own.is_none());
                    }
                    if bytes > 0 {
                        spent = (spent.0 + bytes, spent.1 + 1);
                    }
                    if own.is_some() {
                        if !matches!(f, GroupFold::Folded(_)) {
                            // The caller reads it as usual, into the same accumulator.
                            scan_fold(p, &filter, &mut acc);
                        }
                        want.push(p.clone());
                    }
                }
                assert!(spent.1 <= 1 || spent.0 <= budget.group_bytes, "{why}");
                // The accumulator answers what one state over the folded batches' records would.
                let mut all = Vec::new();
                for p in &want {
                    let i = if p == &bad_block {
                        largest
                    } else {
                        paths[..good + 1]
                            .iter()
                            .filter(|q| *q != &bad_block)
                            .position(|q| q == p)
                            .expect("a good batch")
                    };
                    all.extend_from_slice(&data[batches[i].0 * RS..batches[i].1 * RS]);
                }
                assert_eq!(
                    Some(acc.take_json()),
                    state_over(&plan, &filter, &all).groups_json(),
                    "{why}"
                );
            }
        }
    }
    assert!(
        kinds.iter().all(|k| *k > 10),
        "{kinds:?} summary / scanned / read / untried"
    );
    assert!(bad_read > 10, "{bad_read} damaged blocks read");
}

#[test]
fn rows_group_gives_each_batch_the_matches_of_its_own_scan() {
    let dir = Scratch::new("rows-group");
    let mut kinds = [0usize; 3];
    for seed in 1..=16u64 {
        let mut r = Rng(seed * 7_919 + 3);
        let big = seed % 2 == 1;
        let s = schema(big);
        let (data, batches, mut paths) = batch_files(&dir.0, &format!("r{seed}"), &mut r, big);
        // Each path's records (none: missing) and whether a read of them may fail (damaged).
        let mut held: Vec<(Option<&[u8]>, bool)> = batches
            .iter()
            .map(|(a, b)| (Some(&data[a * RS..b * RS]), false))
            .collect();
        let largest = (0..paths.len())
            .max_by_key(|i| batches[*i].1 - batches[*i].0)
            .expect("batches");
        let bad = damaged_block(&paths[largest], dir.0.join(format!("rblk{seed}.hdseg")));
        paths.insert(1, bad);
        held.insert(1, (held[largest].0, true));
        paths.push(dir.0.join(format!("rmissing{seed}.hdseg")));
        held.push((None, true));
        for filter_json in FILTERS {
            let filter = Arc::new(ScanFilter::compile(&s, filter_json).expect("filter"));
            let rs = RS as u64;
            let budget = GroupBudget {
                batch_bytes: rs * (100 + r.below(2000)),
                group_bytes: rs * (200 + r.below(4000)),
            };
            let mut out = Vec::new();
            let folds = SegmentScanner::rows_group(&paths, &filter, None, budget, &mut out);
            assert_eq!(folds.len(), paths.len());
            let why = format!("seed {seed} {filter_json} {budget:?}");
            let mut want = Vec::new();
            let mut scanned = 0u64;
            for ((f, kept), (records, may_fail)) in folds.iter().zip(&held) {
                match f {
                    GroupFold::Folded(a) => {
                        assert_eq!(*kept, a.matched, "{why}: without a top every match is kept");
                        // A damaged batch is folded only when its damaged block was never read.
                        let own = filter.filter(records.expect("a folded batch exists"));
                        assert_eq!(a.matched as usize * RS, own.len(), "{why}");
                        assert!(!a.from_summary);
                        want.extend_from_slice(&own);
                        scanned += a.scanned;
                        kinds[0] += 1;
                    }
                    GroupFold::Read => {
                        let small = records.is_some_and(|d| d.len() as u64 <= budget.batch_bytes);
                        assert!(
                            *may_fail || !small,
                            "{why}: a small, sound batch left to its own read"
                        );
                        kinds[1] += 1;
                    }
                    GroupFold::Untried => {
                        assert!(
                            scanned > 0 || !want.is_empty() || kinds[0] > 0,
                            "{why}: untried first"
                        );
                        kinds[2] += 1;
                    }
                }
            }
            assert_eq!(
                out, want,
                "{why}: the matches of the scanned batches, in order"
            );
        }
    }
    assert!(
        kinds.iter().all(|k| *k > 5),
        "{kinds:?} scanned / read / untried"
    );
}
