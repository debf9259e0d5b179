//! Merging partials: for random plans (every key kind, byte keys included, every measure over 8- to 256-bit fields of
//! both byte orders, masks, filters) over random records cut into random batches, the merged
//! partial of the batches is exactly the partial of one state over all the records; the
//! accumulator's `max_groups` check, empty batches and plan mismatches.

use std::sync::Arc;

use super::*;
use crate::scan::ScanFilter;
use crate::schema::{parse, Schema};

pub(super) const RS: usize = 152;

/// (name, offset, size, type); `e` is an enumeration.
const FIELDS: [(&str, usize, usize, &str); 17] = [
    ("ts", 0, 8, "timestamp"),
    ("e", 8, 1, "uint8"),
    ("b", 9, 1, "boolean"),
    ("u8", 10, 1, "uint8"),
    ("i8", 11, 1, "int8"),
    ("u16", 12, 2, "uint16"),
    ("i16", 14, 2, "int16"),
    ("u32", 16, 4, "uint32"),
    ("i32", 20, 4, "int32"),
    ("u64", 24, 8, "uint64"),
    ("i64", 32, 8, "int64"),
    ("u128", 40, 16, "uint128"),
    ("i128", 56, 16, "int128"),
    ("u256", 72, 32, "uint256"),
    ("i256", 104, 32, "int256"),
    ("d", 136, 8, "double"),
    ("ts4", 144, 4, "timestamp"),
];

/// The test schema in `little` or `big` byte order.
pub(super) fn schema(big: bool) -> Schema {
    let fields: Vec<String> = FIELDS
        .iter()
        .map(|(n, o, s, t)| {
            let e = if *n == "e" { r#","enum":"proto""# } else { "" };
            format!(r#"{{"name":"{n}","offset":{o},"size":{s},"type":"{t}"{e}}}"#)
        })
        .collect();
    // Keys read as their bytes, as views of the fields above (they share their random bytes).
    let views = [
        r#"{"name":"raw1","offset":10,"size":1,"type":"bytes","overlay":true}"#,
        r#"{"name":"raw2","offset":12,"size":2,"type":"bytes","overlay":true}"#,
        r#"{"name":"s4","offset":16,"size":4,"type":"string","overlay":true}"#,
        r#"{"name":"ip","offset":20,"size":4,"type":"ipv4","overlay":true}"#,
        r#"{"name":"arr","offset":24,"size":8,"type":"bytes","overlay":true,"array":{"element":"uint16","count":4}}"#,
    ];
    let fields: Vec<String> = fields.into_iter().chain(views.map(String::from)).collect();
    let order = if big { "big" } else { "little" };
    parse(&format!(
        r#"{{"id":"m","record_size":{RS},"byte_order":"{order}","time_field":"ts",
        "enums":{{"proto":{{"values":{{"tcp":6,"udp":17}},"default_label":"other"}}}},
        "fields":[{}]}}"#,
        fields.join(",")
    ))
    .expect("schema")
}

/// xorshift64*
pub(super) struct Rng(pub(super) u64);
impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub(super) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// `n` records: each field either random bytes or a small value (-2 ..= 3, sign-extended to the
/// field's width, so unsigned fields also get their largest values), so that groups repeat and
/// sums cross every boundary; `e` takes a few codes (defined and not).
pub(super) fn records(r: &mut Rng, n: usize, big: bool) -> Vec<u8> {
    let mut out = vec![0u8; n * RS];
    for rec in out.chunks_exact_mut(RS) {
        for (name, off, size, _) in FIELDS {
            let f = &mut rec[off..off + size];
            if r.below(2) == 0 {
                for b in f.iter_mut() {
                    *b = r.next() as u8;
                }
            } else {
                let v = r.below(6) as i64 - 2;
                let ext = if v < 0 { 0xff } else { 0 };
                for (i, b) in f.iter_mut().enumerate() {
                    *b = if i < 8 { (v >> (8 * i)) as u8 } else { ext };
                }
                if big {
                    f.reverse();
                }
            }
            if name == "e" {
                f[0] = *r.pick(&[0, 6, 6, 17, 200, 255]);
            }
        }
    }
    out
}

/// A random `aggregate` JSON: 0 to 4 keys, 1 to 6 measures.
pub(super) fn random_plan(r: &mut Rng, max_groups: Option<usize>) -> String {
    let keys = [
        r#"{"field":"e"}"#,
        r#"{"field":"b"}"#,
        r#"{"field":"u8"}"#,
        r#"{"field":"i8"}"#,
        r#"{"field":"u16"}"#,
        r#"{"field":"i16"}"#,
        r#"{"field":"i64"}"#,
        r#"{"field":"ts","bucket":1}"#,
        r#"{"field":"ts","bucket":3600}"#,
        r#"{"field":"ts","bucket":9223372036854775807}"#,
        r#"{"field":"ts4","bucket":7}"#,
        r#"{"field":"ts4"}"#,
        r#"{"field":"raw1"}"#,
        r#"{"field":"raw2"}"#,
        r#"{"field":"s4"}"#,
        r#"{"field":"ip"}"#,
        r#"{"field":"arr"}"#,
    ];
    let nk = r.below(5) as usize;
    let keys: Vec<&str> = (0..nk).map(|_| *r.pick(&keys)).collect();
    let ints = [
        "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "u128", "i128", "u256", "i256",
    ];
    let nm = 1 + r.below(6) as usize;
    let measures: Vec<String> = (0..nm)
        .map(|_| match r.below(5) {
            0 => r#"{"fn":"count"}"#.to_string(),
            1 => format!(r#"{{"fn":"count","field":"{}"}}"#, r.pick(&ints)),
            2 => format!(r#"{{"fn":"sum","field":"{}"}}"#, r.pick(&ints)),
            k => {
                let f = if r.below(4) == 0 {
                    *r.pick(&["d", "ts", "ts4"])
                } else {
                    *r.pick(&ints)
                };
                let func = if k == 3 { "min" } else { "max" };
                format!(r#"{{"fn":"{func}","field":"{f}"}}"#)
            }
        })
        .collect();
    let max = max_groups.map_or(String::new(), |m| format!(r#","max_groups":{m}"#));
    format!(
        r#"{{"version":1,"group_by":[{}],"measures":[{}]{max}}}"#,
        keys.join(","),
        measures.join(",")
    )
}

/// A mask hiding some bits now and then (`None` mostly).
pub(super) fn random_mask(r: &mut Rng) -> Option<Vec<u8>> {
    if r.below(4) != 0 {
        return None;
    }
    Some(
        (0..RS)
            .map(|_| *r.pick(&[0xff, 0xff, 0xff, 0x0f, 0x00, 0xf0]))
            .collect(),
    )
}

fn random_filter(r: &mut Rng) -> &'static str {
    const FILTERS: [&str; 4] = [
        "[]",
        "[]",
        r#"[{"filters":[{"field":"u8","op":"le","value":"2"}]}]"#,
        r#"[{"filters":[{"field":"e","op":"eq","value":"6"}]},{"filters":[{"field":"i16","op":"lt","value":"0"}]}]"#,
    ];
    FILTERS[r.below(4) as usize]
}

/// The state of `plan` over the records of `data` that `filter` selects.
pub(super) fn state_over(plan: &Arc<AggregatePlan>, f: &ScanFilter, data: &[u8]) -> AggregateState {
    let mut st = AggregateState::new(Arc::clone(plan));
    f.select_chunks(data, |c, sel| st.add(c, sel));
    st
}

/// Cut points splitting `n` records into `k` batches (some empty).
pub(super) fn cuts(r: &mut Rng, n: usize, k: usize) -> Vec<(usize, usize)> {
    let mut at: Vec<usize> = (1..k).map(|_| r.below(n as u64 + 1) as usize).collect();
    at.push(0);
    at.push(n);
    at.sort_unstable();
    at.windows(2).map(|w| (w[0], w[1])).collect()
}

#[test]
fn merged_batches_equal_one_state_over_all_records() {
    // Seeds whose answer had many groups: the test reaches the hash and direct indexes.
    let mut many = 0;
    for seed in 1..=300u64 {
        let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let big = seed % 2 == 0;
        let s = schema(big);
        let json = random_plan(&mut r, None);
        let mask = random_mask(&mut r);
        let plan = Arc::new(AggregatePlan::compile(&s, &json, mask.as_deref()).expect("plan"));
        let filter = ScanFilter::compile(&s, random_filter(&mut r)).expect("filter");
        let n = r.below(if seed % 10 == 0 { 20 } else { 3000 }) as usize;
        let data = records(&mut r, n, big);
        let whole = state_over(&plan, &filter, &data).to_json().expect("fits");
        let k = 1 + r.below(12) as usize;
        let batches: Vec<AggregateState> = cuts(&mut r, n, k)
            .into_iter()
            .map(|(a, b)| state_over(&plan, &filter, &data[a * RS..b * RS]))
            .collect();
        let ctx = format!("seed {seed}: {json}");
        many += usize::from(state_over(&plan, &filter, &data).groups() > 50);
        // In batch order, through merge, with the group count predicted before each merge.
        let mut merged = AggregateState::new(Arc::clone(&plan));
        for b in &batches {
            let want = merged.merged_groups(b);
            merged.merge(b).expect("same plan");
            assert_eq!(merged.groups(), want, "{ctx}");
        }
        assert_eq!(merged.to_json().expect("fits"), whole, "{ctx}");
        // In reverse order, through an accumulator of an equal plan compiled again.
        let again = Arc::new(AggregatePlan::compile(&s, &json, mask.as_deref()).expect("plan"));
        let mut acc = AggregateAccumulator::new(again);
        for b in batches.iter().rev() {
            assert_eq!(acc.fold(b), Ok(true), "{ctx}");
        }
        assert_eq!(acc.batches(), batches.len() as u64);
        let groups = acc.take_json();
        assert_eq!(format!(r#"{{"v":1,"groups":{groups}}}"#), whole, "{ctx}");
        assert!(acc.is_empty() && acc.groups() == 0 && acc.take_json() == "[]");
        // The accumulator is reusable after take: the same answer again.
        for b in &batches {
            assert_eq!(acc.fold(b), Ok(true));
        }
        assert_eq!(format!(r#"{{"v":1,"groups":{}}}"#, acc.take_json()), whole);
    }
    assert!(many > 50, "{many} seeds with many groups");
}

#[test]
fn groups_json_is_what_to_json_wraps() {
    let s = schema(false);
    let plan = Arc::new(
        AggregatePlan::compile(
            &s,
            r#"{"version":1,"group_by":[{"field":"e"}],"measures":[{"fn":"count"}]}"#,
            None,
        )
        .expect("plan"),
    );
    let f = ScanFilter::compile(&s, "[]").expect("filter");
    let empty = AggregateState::new(Arc::clone(&plan));
    assert_eq!(empty.groups_json().as_deref(), Some("[]"));
    assert_eq!(empty.to_json().as_deref(), Some(EMPTY_PARTIAL));
    let st = state_over(&plan, &f, &records(&mut Rng(5), 100, false));
    let j = st.to_json().expect("fits");
    assert_eq!(
        j,
        format!(r#"{{"v":1,"groups":{}}}"#, st.groups_json().unwrap())
    );
}

#[test]
fn an_accumulator_refuses_more_groups_than_max_groups_and_is_left_unchanged() {
    let (mut refused, mut overflowed) = (0, 0);
    for seed in 1..=60u64 {
        let mut r = Rng(seed * 7919);
        let s = schema(seed % 2 == 0);
        let max = 3 + r.below(20) as usize;
        let json = random_plan(&mut r, Some(max));
        let plan = Arc::new(AggregatePlan::compile(&s, &json, None).expect("plan"));
        // The same aggregate without the cap: the reference for each taken chunk of batches.
        let open = json.replace(&format!(r#","max_groups":{max}"#), "");
        let open = Arc::new(AggregatePlan::compile(&s, &open, None).expect("plan"));
        let f = ScanFilter::compile(&s, "[]").expect("filter");
        let n = r.below(400) as usize;
        let data = records(&mut r, n, seed % 2 == 0);
        let ctx = format!("seed {seed}: {json}");
        let mut acc = AggregateAccumulator::new(Arc::clone(&plan));
        // The batches in the accumulator now, as a record range.
        let mut held: Option<(usize, usize)> = None;
        let check = |taken: String, (a, b): (usize, usize)| {
            let want = state_over(&open, &f, &data[a * RS..b * RS]).groups_json();
            assert_eq!(Some(taken), want, "{ctx}");
        };
        let k = 1 + r.below(30) as usize;
        for (a, b) in cuts(&mut r, n, k) {
            let batch = state_over(&plan, &f, &data[a * RS..b * RS]);
            if batch.overflowed() {
                let max_err = MergeError::Overflowed { max };
                assert_eq!(acc.fold(&batch), Err(max_err), "{ctx}");
                overflowed += 1;
                if let Some(h) = held.take() {
                    check(acc.take_json(), h);
                }
                continue;
            }
            let before = (acc.groups(), acc.batches());
            let fits = acc.merged_groups(&batch) <= max;
            if acc.fold(&batch).expect("same plan") {
                assert!(fits, "{ctx}");
                assert!(acc.groups() <= max);
                held = Some((held.map_or(a, |h| h.0), b));
                continue;
            }
            assert!(!fits, "{ctx}");
            refused += 1;
            assert_eq!((acc.groups(), acc.batches()), before, "{ctx}: unchanged");
            check(
                acc.take_json(),
                held.take().expect("a refused fold follows folds"),
            );
            // Into the emptied accumulator it always fits.
            assert_eq!(acc.fold(&batch), Ok(true), "{ctx}");
            held = Some((a, b));
        }
        if let Some(h) = held {
            check(acc.take_json(), h);
        }
    }
    assert!(
        refused > 20 && overflowed > 5,
        "{refused} refused, {overflowed} overflowed"
    );
}

#[test]
fn empty_batches_and_plan_mismatches() {
    let s = schema(false);
    let f = ScanFilter::compile(&s, "[]").expect("filter");
    let data = records(&mut Rng(11), 50, false);
    for json in [
        r#"{"version":1,"measures":[{"fn":"count"},{"fn":"min","field":"i256"}]}"#,
        r#"{"version":1,"group_by":[{"field":"u16"}],"measures":[{"fn":"sum","field":"i64"}]}"#,
        r#"{"version":1,"group_by":[{"field":"u8"},{"field":"b"}],"measures":[{"fn":"max","field":"u128"}]}"#,
    ] {
        let plan = Arc::new(AggregatePlan::compile(&s, json, None).expect("plan"));
        let empty = state_over(&plan, &f, &[]);
        let full = state_over(&plan, &f, &data);
        let mut acc = AggregateAccumulator::new(Arc::clone(&plan));
        assert!(acc.is_empty());
        assert_eq!(acc.take_json(), "[]");
        // An empty batch was answered: the accumulator is no longer empty, yet has no group.
        assert_eq!(acc.fold(&empty), Ok(true));
        assert!(!acc.is_empty() && acc.groups() == 0);
        assert_eq!(acc.take_json(), "[]");
        assert!(acc.is_empty());
        // Empty batches around a full one change nothing.
        for b in [&empty, &full, &empty] {
            assert_eq!(acc.fold(b), Ok(true));
        }
        assert_eq!(Some(acc.take_json()), full.groups_json(), "{json}");
        let mut m = state_over(&plan, &f, &data);
        m.merge(&empty).expect("same plan");
        assert_eq!(m.to_json(), full.to_json());
    }
    // Another plan's partial is refused, whether merged or folded.
    let a = Arc::new(
        AggregatePlan::compile(&s, r#"{"version":1,"measures":[{"fn":"count"}]}"#, None)
            .expect("plan"),
    );
    let b = Arc::new(
        AggregatePlan::compile(
            &s,
            r#"{"version":1,"measures":[{"fn":"count"}],"max_groups":5}"#,
            None,
        )
        .expect("plan"),
    );
    let mut acc = AggregateAccumulator::new(Arc::clone(&a));
    let other = state_over(&b, &f, &data);
    assert_eq!(acc.fold(&other), Err(MergeError::PlanMismatch));
    let mut st = AggregateState::new(a);
    assert_eq!(st.merge(&other), Err(MergeError::PlanMismatch));
    assert!(acc.is_empty() && st.groups() == 0);
}
