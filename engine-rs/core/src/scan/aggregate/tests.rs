//! The aggregate kernel against hand-worked values and a naive reference: every fn, every key
//! kind, wide integers, numeric scale, enum codes the schema does not define, masks, empty and
//! too many groups, and the refusals with their paths.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::scan::ScanFilter;
use crate::schema::{parse, Schema};

const RS: usize = 128;

fn schema() -> Schema {
    parse(
        r#"{ "id": "t", "record_size": 128, "byte_order": "little", "time_field": "ts",
        "enums": { "proto": { "values": { "tcp": 6, "udp": 17 }, "default_label": "other" } },
        "fields": [
          { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
          { "name": "proto", "offset": 8, "size": 1, "type": "uint8", "enum": "proto" },
          { "name": "flag", "offset": 9, "size": 1, "type": "boolean" },
          { "name": "port", "offset": 10, "size": 2, "type": "uint16" },
          { "name": "u", "offset": 12, "size": 8, "type": "uint64" },
          { "name": "i", "offset": 20, "size": 8, "type": "int64" },
          { "name": "n", "offset": 28, "size": 8, "type": "numeric", "precision": 18, "scale": 2 },
          { "name": "w", "offset": 36, "size": 16, "type": "int128" },
          { "name": "z", "offset": 52, "size": 32, "type": "uint256" },
          { "name": "d", "offset": 84, "size": 8, "type": "double" },
          { "name": "s", "offset": 92, "size": 16, "type": "string" },
          { "name": "i8", "offset": 108, "size": 1, "type": "int8" },
          { "name": "ts4", "offset": 112, "size": 4, "type": "timestamp" }
        ] }"#,
    )
    .expect("schema")
}

#[derive(Clone, Default)]
struct Rec {
    ts: i64,
    proto: u8,
    flag: bool,
    port: u16,
    u: u64,
    i: i64,
    n: i64,
    w: i128,
    z: [u8; 32],
    d: f64,
    i8: i8,
}

fn encode(recs: &[Rec]) -> Vec<u8> {
    let mut out = vec![0u8; recs.len() * RS];
    for (k, r) in recs.iter().enumerate() {
        let b = &mut out[k * RS..(k + 1) * RS];
        b[0..8].copy_from_slice(&r.ts.to_le_bytes());
        b[8] = r.proto;
        b[9] = u8::from(r.flag);
        b[10..12].copy_from_slice(&r.port.to_le_bytes());
        b[12..20].copy_from_slice(&r.u.to_le_bytes());
        b[20..28].copy_from_slice(&r.i.to_le_bytes());
        b[28..36].copy_from_slice(&r.n.to_le_bytes());
        b[36..52].copy_from_slice(&r.w.to_le_bytes());
        b[52..84].copy_from_slice(&r.z);
        b[84..92].copy_from_slice(&r.d.to_le_bytes());
        b[92..96].copy_from_slice(b"abcd");
        b[108] = r.i8 as u8;
        b[112..116].copy_from_slice(&(r.ts as u32).to_le_bytes());
    }
    out
}

fn run_with(json: &str, mask: Option<&[u8]>, filter: &str, recs: &[Rec]) -> Option<String> {
    let s = schema();
    let plan = Arc::new(AggregatePlan::compile(&s, json, mask).expect("plan"));
    let f = ScanFilter::compile(&s, filter).expect("filter");
    let mut st = AggregateState::new(Arc::clone(&plan));
    let data = encode(recs);
    f.select_chunks(&data, |c, sel| st.add(c, sel));
    // The filter over narrow copies selects the same records: the same partial, whether the
    // matches are read whole or aggregated from copies that also hold what the aggregate reads.
    if let Some(nw) = crate::scan::Projection::of_any(&f, None) {
        let mut narrow = AggregateState::new(Arc::clone(&plan));
        let copy = nw.projection.project(&data);
        nw.filter
            .select_chunks_narrow(&copy, &data, s.record_size, |c, sel| narrow.add(c, sel));
        assert_eq!(narrow.to_json(), st.to_json(), "narrow copies: {filter}");
    }
    if let Some(nw) = crate::scan::Projection::of_any(&f, Some(&plan)) {
        let remapped = nw.aggregate.as_ref().expect("the aggregate's narrow form");
        let mut narrow = AggregateState::new(Arc::clone(&plan));
        let copy = nw.projection.project(&data);
        nw.filter
            .select_chunks(&copy, |c, sel| narrow.add_narrow(remapped, c, sel));
        assert_eq!(
            narrow.to_json(),
            st.to_json(),
            "aggregated from narrow copies: {filter}"
        );
    }
    st.to_json()
}

fn run(json: &str, recs: &[Rec]) -> String {
    run_with(json, None, "[]", recs).expect("no overflow")
}

fn agg(keys: &str, measures: &str) -> String {
    format!(r#"{{"version":1,"group_by":[{keys}],"measures":[{measures}]}}"#)
}

#[test]
fn count_sum_min_max_of_uint64_above_2_pow_63() {
    let recs = [
        Rec {
            u: u64::MAX,
            ..Default::default()
        },
        Rec {
            u: (1 << 63) + 5,
            ..Default::default()
        },
    ];
    let j = run(
        &agg(
            "",
            r#"{"fn":"count"},{"fn":"sum","field":"u"},{"fn":"min","field":"u"},{"fn":"max","field":"u"},{"fn":"count","field":"u"}"#,
        ),
        &recs,
    );
    assert_eq!(
        j,
        r#"{"v":1,"groups":[{"k":[],"m":["2","27670116110564327428","9223372036854775813","18446744073709551615","2"]}]}"#
    );
}

#[test]
fn negative_int64_and_int8() {
    let recs = [
        Rec {
            i: -5,
            i8: -128,
            ..Default::default()
        },
        Rec {
            i: i64::MIN,
            i8: 127,
            ..Default::default()
        },
        Rec {
            i: 7,
            i8: -1,
            ..Default::default()
        },
    ];
    let j = run(
        &agg(
            "",
            r#"{"fn":"sum","field":"i"},{"fn":"min","field":"i"},{"fn":"max","field":"i"},{"fn":"sum","field":"i8"},{"fn":"min","field":"i8"}"#,
        ),
        &recs,
    );
    assert_eq!(
        j,
        r#"{"v":1,"groups":[{"k":[],"m":["-9223372036854775806","-9223372036854775808","7","-2","-128"]}]}"#
    );
}

#[test]
fn numeric_sums_the_scaled_integers() {
    let recs = [
        Rec {
            n: 12345,
            ..Default::default()
        },
        Rec {
            n: -5,
            ..Default::default()
        },
    ];
    let j = run(
        &agg("", r#"{"fn":"sum","field":"n"},{"fn":"max","field":"n"}"#),
        &recs,
    );
    assert_eq!(j, r#"{"v":1,"groups":[{"k":[],"m":["12340","12345"]}]}"#);
}

#[test]
fn wide_integers_sum_exactly() {
    let recs = [
        Rec {
            w: i128::MIN,
            z: [0xff; 32],
            ..Default::default()
        },
        Rec {
            w: i128::MIN,
            z: [0xff; 32],
            ..Default::default()
        },
        Rec {
            w: i128::MIN,
            z: [0; 32],
            ..Default::default()
        },
    ];
    let j = run(
        &agg(
            "",
            r#"{"fn":"sum","field":"w"},{"fn":"sum","field":"z"},{"fn":"max","field":"z"},{"fn":"min","field":"w"}"#,
        ),
        &recs,
    );
    assert_eq!(
        j,
        r#"{"v":1,"groups":[{"k":[],"m":["-510423550381407695195061911147652317184","231584178474632390847141970017375815706539969331281128078915168015826259279870","115792089237316195423570985008687907853269984665640564039457584007913129639935","-170141183460469231731687303715884105728"]}]}"#
    );
    let pos = [
        Rec {
            w: i128::MAX,
            ..Default::default()
        },
        Rec {
            w: i128::MAX,
            ..Default::default()
        },
    ];
    let j = run(&agg("", r#"{"fn":"sum","field":"w"}"#), &pos);
    assert_eq!(
        j,
        r#"{"v":1,"groups":[{"k":[],"m":["340282366920938463463374607431768211454"]}]}"#
    );
}

#[test]
fn enum_codes_the_schema_does_not_define_are_groups_too() {
    let recs = [
        Rec {
            proto: 6,
            u: 1,
            ..Default::default()
        },
        Rec {
            proto: 99,
            u: 2,
            ..Default::default()
        },
        Rec {
            proto: 6,
            u: 3,
            ..Default::default()
        },
    ];
    let j = run(
        &agg(
            r#"{"field":"proto"}"#,
            r#"{"fn":"count"},{"fn":"sum","field":"u"}"#,
        ),
        &recs,
    );
    assert_eq!(
        j,
        r#"{"v":1,"groups":[{"k":["6"],"m":["2","4"]},{"k":["99"],"m":["1","2"]}]}"#
    );
}

#[test]
fn every_key_kind_and_buckets_truncate_like_sql() {
    let recs = [
        Rec {
            ts: -5,
            flag: true,
            port: 443,
            i8: -3,
            ..Default::default()
        },
        Rec {
            ts: 7,
            flag: false,
            port: 443,
            i8: -3,
            ..Default::default()
        },
        Rec {
            ts: 8,
            flag: true,
            port: 80,
            i8: 4,
            ..Default::default()
        },
    ];
    let j = run(
        &agg(
            r#"{"field":"ts","bucket":3},{"field":"flag"},{"field":"port"},{"field":"i8"}"#,
            r#"{"fn":"count"},{"fn":"min","field":"ts"},{"fn":"max","field":"ts4"}"#,
        ),
        &recs,
    );
    assert_eq!(
        j,
        r#"{"v":1,"groups":[{"k":["-3","1","443","-3"],"m":["1","-5","4294967291"]},{"k":["6","0","443","-3"],"m":["1","7","7"]},{"k":["6","1","80","4"],"m":["1","8","8"]}]}"#
    );
    let j = run(
        &agg(r#"{"field":"ts4","bucket":5}"#, r#"{"fn":"count"}"#),
        &recs[1..],
    );
    assert_eq!(j, r#"{"v":1,"groups":[{"k":["5"],"m":["2"]}]}"#);
}

#[test]
fn doubles_take_min_and_max() {
    let recs = [
        Rec {
            d: -1.5,
            ..Default::default()
        },
        Rec {
            d: 2.25,
            ..Default::default()
        },
    ];
    let j = run(
        &agg("", r#"{"fn":"min","field":"d"},{"fn":"max","field":"d"}"#),
        &recs,
    );
    assert_eq!(j, r#"{"v":1,"groups":[{"k":[],"m":["-1.5","2.25"]}]}"#);
}

#[test]
fn no_matching_record_is_no_group() {
    assert_eq!(run(&agg("", r#"{"fn":"count"}"#), &[]), EMPTY_PARTIAL);
    let recs = [Rec {
        proto: 17,
        ..Default::default()
    }];
    let f = r#"[{"filters":[{"field":"proto","op":"eq","value":"6"}]}]"#;
    assert_eq!(
        run_with(
            &agg(r#"{"field":"proto"}"#, r#"{"fn":"count"}"#),
            None,
            f,
            &recs
        )
        .unwrap(),
        EMPTY_PARTIAL
    );
}

#[test]
fn hidden_fields_read_as_zeros() {
    let recs = [
        Rec {
            proto: 6,
            u: 10,
            port: 0x1234,
            ..Default::default()
        },
        Rec {
            proto: 17,
            u: 20,
            port: 0x5678,
            ..Default::default()
        },
    ];
    let mut mask = vec![0xffu8; RS];
    mask[12..20].fill(0); // u hidden
    mask[8] = 0; // proto hidden
    mask[11] = 0; // port's high byte hidden
    let j = run_with(
        &agg(r#"{"field":"proto"}"#, r#"{"fn":"count"},{"fn":"sum","field":"u"},{"fn":"max","field":"u"},{"fn":"sum","field":"port"}"#),
        Some(&mask),
        "[]",
        &recs,
    )
    .unwrap();
    assert_eq!(
        j,
        format!(
            r#"{{"v":1,"groups":[{{"k":["0"],"m":["2","0","0","{}"]}}]}}"#,
            0x34 + 0x78
        )
    );
    // Filters still see the stored values (as for records).
    let f = r#"[{"filters":[{"field":"u","op":"gt","value":"15"}]}]"#;
    let j = run_with(
        &agg("", r#"{"fn":"count"},{"fn":"sum","field":"u"}"#),
        Some(&mask),
        f,
        &recs,
    )
    .unwrap();
    assert_eq!(j, r#"{"v":1,"groups":[{"k":[],"m":["1","0"]}]}"#);
}

#[test]
fn more_groups_than_max_groups_is_an_overflow() {
    let recs: Vec<Rec> = (0..10)
        .map(|k| Rec {
            u: k,
            port: k as u16,
            ..Default::default()
        })
        .collect();
    let j =
        r#"{"version":1,"group_by":[{"field":"u"}],"measures":[{"fn":"count"}],"max_groups":9}"#;
    assert_eq!(run_with(j, None, "[]", &recs), None);
    let j =
        r#"{"version":1,"group_by":[{"field":"port"}],"measures":[{"fn":"count"}],"max_groups":9}"#;
    assert_eq!(run_with(j, None, "[]", &recs), None);
    let j =
        r#"{"version":1,"group_by":[{"field":"u"}],"measures":[{"fn":"count"}],"max_groups":10}"#;
    assert!(run_with(j, None, "[]", &recs).is_some());
}

/// xorshift64*
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn randomized_against_a_naive_fold() {
    for seed in 1..=20u64 {
        let mut r = Rng(seed * 0x9e37_79b9_7f4a_7c15);
        let n = (r.next() % 5000) as usize;
        let recs: Vec<Rec> = (0..n)
            .map(|_| Rec {
                ts: (r.next() % 100_000) as i64 - 50_000,
                proto: [1, 6, 17, 99][(r.next() % 4) as usize],
                flag: r.next().is_multiple_of(2),
                u: r.next(),
                i: r.next() as i64,
                n: (r.next() % 2_000_000) as i64 - 1_000_000,
                ..Default::default()
            })
            .collect();
        let filter = r#"[{"filters":[{"field":"ts","op":"ge","value":"-20000"}]},{"filters":[{"field":"proto","op":"eq","value":"99"}]}]"#;
        let got = run_with(
            &agg(
                r#"{"field":"proto"},{"field":"flag"},{"field":"ts","bucket":3600}"#,
                r#"{"fn":"count"},{"fn":"sum","field":"u"},{"fn":"sum","field":"i"},{"fn":"min","field":"i"},{"fn":"max","field":"n"}"#,
            ),
            None,
            filter,
            &recs,
        )
        .unwrap();
        type G = (u64, i128, i128, i64, i64);
        let mut want: BTreeMap<(u8, bool, i64), G> = BTreeMap::new();
        for x in recs.iter().filter(|x| x.ts >= -20000 || x.proto == 99) {
            let e = want
                .entry((x.proto, x.flag, x.ts - x.ts % 3600))
                .or_insert((0, 0, 0, i64::MAX, i64::MIN));
            e.0 += 1;
            e.1 += i128::from(x.u);
            e.2 += i128::from(x.i);
            e.3 = e.3.min(x.i);
            e.4 = e.4.max(x.n);
        }
        // Groups come in key order: proto, flag, then the bucket by its value.
        let groups: Vec<String> = want
            .iter()
            .map(|((p, f, b), g)| {
                format!(
                    r#"{{"k":["{p}","{}","{b}"],"m":["{}","{}","{}","{}","{}"]}}"#,
                    u8::from(*f),
                    g.0,
                    g.1,
                    g.2,
                    g.3,
                    g.4
                )
            })
            .collect();
        assert_eq!(
            got,
            format!(r#"{{"v":1,"groups":[{}]}}"#, groups.join(",")),
            "seed {seed}"
        );
    }
}

#[test]
fn refusals_name_their_path() {
    let s = schema();
    let cases = [
        (
            r#"{"group_by":[],"measures":[{"fn":"count"}]}"#,
            "aggregate.version",
        ),
        (
            r#"{"version":2,"measures":[{"fn":"count"}]}"#,
            "aggregate.version",
        ),
        (r#"{"version":1,"measures":[]}"#, "aggregate.measures"),
        (
            r#"{"version":1,"measures":[{"fn":"count"}],"limit":3}"#,
            "aggregate.limit",
        ),
        (
            r#"{"version":1,"measures":[{"fn":"count"},{"fn":"sum","field":"nope"}]}"#,
            "aggregate.measures[1].field",
        ),
        (
            r#"{"version":1,"measures":[{"fn":"sum","field":"d"}]}"#,
            "aggregate.measures[0].field",
        ),
        (
            r#"{"version":1,"measures":[{"fn":"sum","field":"ts"}]}"#,
            "aggregate.measures[0].field",
        ),
        (
            r#"{"version":1,"measures":[{"fn":"max","field":"s"}]}"#,
            "aggregate.measures[0].field",
        ),
        (
            r#"{"version":1,"measures":[{"fn":"avg","field":"u"}]}"#,
            "aggregate.measures[0].fn",
        ),
        (
            r#"{"version":1,"measures":[{"fn":"sum"}]}"#,
            "aggregate.measures[0].field",
        ),
        (
            r#"{"version":1,"group_by":[{"field":"s"}],"measures":[{"fn":"count"}]}"#,
            "aggregate.group_by[0].field",
        ),
        (
            r#"{"version":1,"group_by":[{"field":"w"}],"measures":[{"fn":"count"}]}"#,
            "aggregate.group_by[0].field",
        ),
        (
            r#"{"version":1,"group_by":[{"field":"u","bucket":5}],"measures":[{"fn":"count"}]}"#,
            "aggregate.group_by[0].bucket",
        ),
        (
            r#"{"version":1,"group_by":[{"field":"ts","bucket":0}],"measures":[{"fn":"count"}]}"#,
            "aggregate.group_by[0].bucket",
        ),
        (
            r#"{"version":1,"group_by":[{"field":"u"},{"field":"u"},{"field":"u"},{"field":"u"},{"field":"u"}],"measures":[{"fn":"count"}]}"#,
            "aggregate.group_by",
        ),
        (
            r#"{"version":1,"measures":[{"fn":"count"}],"max_groups":0}"#,
            "aggregate.max_groups",
        ),
        (
            r#"{"version":1,"measures":[{"fn":"count"}],"max_groups":2000000}"#,
            "aggregate.max_groups",
        ),
    ];
    for (json, path) in cases {
        let e = AggregatePlan::compile(&s, json, None).expect_err(json);
        assert_eq!(e.path, path, "{json}: {e}");
    }
    let e = AggregatePlan::compile(
        &s,
        r#"{"version":1,"measures":[{"fn":"count"}]}"#,
        Some(&[0xff; 3]),
    )
    .unwrap_err();
    assert_eq!(e.path, "field_mask");
}

#[test]
fn wide_text() {
    assert_eq!(Wide::from_i128(0).to_string(), "0");
    assert_eq!(Wide::from_i128(-1).to_string(), "-1");
    assert_eq!(
        Wide::from_u128(1_000_000_000_000_000_000).to_string(),
        "1000000000000000000"
    );
    assert_eq!(
        Wide::from_i128(i128::MIN).to_string(),
        i128::MIN.to_string()
    );
}

mod summaries {
    use super::*;
    use crate::hash::HashAlgorithm;
    use crate::scan::SegmentScanner;
    use crate::segment::{zone_fields_from_schema, SegmentConfig, SegmentReader, SegmentWriter};
    use std::path::{Path, PathBuf};

    struct Scratch(PathBuf);
    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let p = std::env::temp_dir().join(format!("hd-agg-{tag}-{}", std::process::id()));
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

    fn write(dir: &Path, data: &[u8]) -> PathBuf {
        let mut w = SegmentWriter::create(SegmentConfig {
            dir: dir.to_path_buf(),
            name: "s.hdseg".into(),
            dataset_id: "t".into(),
            batch_id: [9u8; 64],
            record_size: RS as u32,
            block_size: 16,
            algorithm: HashAlgorithm::Sha256,
            fields: zone_fields_from_schema(&schema()),
        })
        .expect("writer");
        w.append(data).expect("append");
        w.finish(None).expect("finish").path
    }

    fn recs(n: usize) -> Vec<Rec> {
        let mut r = Rng(77);
        (0..n)
            .map(|_| Rec {
                ts: (r.next() % 1000) as i64 - 500,
                proto: [6, 17, 250][(r.next() % 3) as usize],
                u: r.next(),
                i: r.next() as i64,
                n: (r.next() % 1000) as i64 - 500,
                port: r.next() as u16,
                ..Default::default()
            })
            .collect()
    }

    /// Scans `path` with the plan; returns the partial and the records the kernel read.
    fn scan(path: &Path, json: &str, filter: &str, verify: bool) -> (String, u64, bool) {
        let s = schema();
        let f = Arc::new(ScanFilter::compile(&s, filter).expect("filter"));
        let mut sc = SegmentScanner::open(path, f, verify).expect("open");
        sc.set_aggregate(Arc::new(
            AggregatePlan::compile(&s, json, None).expect("plan"),
        ));
        let from_summary = sc.answered_from_summary();
        let mut scanned = 0;
        loop {
            let st = sc.next(4).expect("step");
            scanned += st.scanned;
            if st.done {
                return (st.partial.expect("partial"), scanned, from_summary);
            }
        }
    }

    #[test]
    fn whole_batch_aggregates_come_from_the_summary_and_equal_a_scan() {
        let dir = Scratch::new("sum");
        let rs = recs(1000);
        let path = write(&dir.0, &encode(&rs));
        let cases = [
            agg("", r#"{"fn":"count"}"#),
            agg(
                "",
                r#"{"fn":"count"},{"fn":"sum","field":"u"},{"fn":"sum","field":"i"},{"fn":"min","field":"i"},{"fn":"max","field":"u"},{"fn":"min","field":"ts"},{"fn":"max","field":"n"},{"fn":"sum","field":"n"}"#,
            ),
            agg(
                r#"{"field":"proto"}"#,
                r#"{"fn":"count"},{"fn":"sum","field":"u"},{"fn":"sum","field":"port"},{"fn":"sum","field":"i8"}"#,
            ),
        ];
        for json in &cases {
            let (got, scanned, summary) = scan(&path, json, "[]", false);
            assert!(summary, "{json}");
            assert_eq!(scanned, 0, "{json}: no record read");
            // The same plan, folded over the records in memory.
            assert_eq!(got, run(json, &rs), "{json}");
            // verify_hash reads every block: the scan path, same answer.
            let (scanned_answer, n, summary) = scan(&path, json, "[]", true);
            assert!(!summary && n == 1000);
            assert_eq!(scanned_answer, got, "{json}");
        }
        // What the summary cannot answer is scanned: a filter, a key it lacks, min with a key.
        for (json, filter) in [
            (
                agg("", r#"{"fn":"count"}"#),
                r#"[{"filters":[{"field":"proto","op":"eq","value":"6"}]}]"#,
            ),
            (agg(r#"{"field":"port"}"#, r#"{"fn":"count"}"#), "[]"),
            (
                agg(r#"{"field":"proto"}"#, r#"{"fn":"min","field":"u"}"#),
                "[]",
            ),
            (agg("", r#"{"fn":"max","field":"d"}"#), "[]"),
            (agg("", r#"{"fn":"sum","field":"w"}"#), "[]"),
        ] {
            let (got, scanned, summary) = scan(&path, &json, filter, false);
            assert!(!summary && scanned > 0, "{json}");
            assert_eq!(got, run_with(&json, None, filter, &rs).unwrap(), "{json}");
        }
        // A hidden field read by the aggregate: never the summary's stored sums.
        let mut mask = vec![0xffu8; RS];
        mask[12..20].fill(0);
        let s = schema();
        let plan = AggregatePlan::compile(&s, &agg("", r#"{"fn":"sum","field":"u"}"#), Some(&mask))
            .unwrap();
        let f = Arc::new(ScanFilter::compile(&s, "[]").unwrap());
        let mut sc = SegmentScanner::open(&path, f, false).unwrap();
        sc.set_aggregate(Arc::new(plan));
        assert!(!sc.answered_from_summary());
        let mut last = sc.next(1000).unwrap();
        while !last.done {
            last = sc.next(1000).unwrap();
        }
        assert_eq!(
            last.partial.unwrap(),
            r#"{"v":1,"groups":[{"k":[],"m":["0"]}]}"#
        );
    }

    #[test]
    fn a_filter_the_batch_zones_prove_is_answered_from_the_summary() {
        let dir = Scratch::new("proven");
        let rs = recs(1000);
        let path = write(&dir.0, &encode(&rs));
        let by_proto = agg(
            r#"{"field":"proto"}"#,
            r#"{"fn":"count"},{"fn":"sum","field":"u"}"#,
        );
        let lo = rs.iter().map(|r| r.ts).min().expect("records");
        let hi = rs.iter().map(|r| r.ts).max().expect("records");
        let f = |body: String| format!(r#"[{body}]"#);
        // ts lies in lo ..= hi in every record: these filters hold for the whole batch.
        for filter in [
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"ge","value":"{lo}"}}]}}"#
            )),
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"gt","value":"{}"}},{{"field":"ts","op":"lt","value":"{}"}}]}}"#,
                lo - 1,
                hi + 1
            )),
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"between","values":["{lo}","{hi}"]}}]}}"#
            )),
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"ne","value":"{}"}}]}}"#,
                hi + 7
            )),
            // One sub-query proven is enough: the other adds nothing.
            f(format!(
                r#"{{"filters":[{{"field":"proto","op":"eq","value":"6"}}]}},{{"filters":[{{"field":"ts","op":"le","value":"{hi}"}}]}}"#
            )),
        ] {
            let filter = filter.as_str();
            let (got, scanned, summary) = scan(&path, &by_proto, filter, false);
            assert!(summary && scanned == 0, "{filter}");
            assert_eq!(
                got,
                run_with(&by_proto, None, filter, &rs).unwrap(),
                "{filter}"
            );
            assert_eq!(got, run(&by_proto, &rs), "{filter}: every record counts");
        }
        // Not proven: the zones show records on both sides, a set over several codes, a float
        // (its zones skip NaN), a filter on a field without zones; these are scanned.
        for filter in [
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"ge","value":"{}"}}]}}"#,
                lo + 1
            )),
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"lt","value":"{hi}"}}]}}"#
            )),
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"ne","value":"{hi}"}}]}}"#
            )),
            f(
                r#"{"filters":[{"field":"proto","op":"in","values":["6","17","250"]}]}"#
                    .to_string(),
            ),
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"ge","value":"{lo}"}},{{"field":"d","op":"ge","value":"-1e300"}}]}}"#
            )),
            f(format!(
                r#"{{"filters":[{{"field":"ts","op":"ge","value":"{}"}}]}},{{"filters":[{{"field":"ts","op":"le","value":"{}"}}]}}"#,
                lo + 1,
                hi - 1
            )),
        ] {
            let filter = filter.as_str();
            let (got, scanned, summary) = scan(&path, &by_proto, filter, false);
            assert!(!summary && scanned > 0, "{filter}");
            assert_eq!(
                got,
                run_with(&by_proto, None, filter, &rs).unwrap(),
                "{filter}"
            );
        }
    }

    #[test]
    fn an_empty_batch_has_no_group() {
        let dir = Scratch::new("empty");
        let path = write(&dir.0, &[]);
        let (got, _, summary) = scan(
            &path,
            &agg(r#"{"field":"proto"}"#, r#"{"fn":"count"}"#),
            "[]",
            false,
        );
        assert!(summary);
        assert_eq!(got, EMPTY_PARTIAL);
        let (got, _, _) = scan(&path, &agg("", r#"{"fn":"count"}"#), "[]", false);
        assert_eq!(got, EMPTY_PARTIAL);
    }

    #[test]
    fn every_summary_byte_is_covered_and_format_1_is_still_read() {
        let dir = Scratch::new("flip");
        let path = write(&dir.0, &encode(&recs(40)));
        let good = std::fs::read(&path).unwrap();
        let r = SegmentReader::open(&path).unwrap();
        let stats = r.stats().expect("format 2 has a summary").clone();
        let nf = r.header().fields.len();
        let t = good.len() - crate::segment::TAIL_LEN;
        let le = |at: usize| u64::from_le_bytes(good[at..at + 8].try_into().unwrap()) as usize;
        let filter_end = le(t + 40) + nf * 16;
        assert!(filter_end < t, "a summary section is there");
        for at in filter_end..t {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            assert!(
                SegmentReader::open(&path).is_err(),
                "flip at {at} not detected"
            );
        }
        // Format 1 (no summary): header version 1, the section cut out, both checksums resealed.
        let h = r.header().data_offset as usize;
        let mut old = good[..filter_end].to_vec();
        old.extend_from_slice(&good[t..]);
        old[8..10].copy_from_slice(&1u16.to_le_bytes());
        let hc = crc32c::crc32c(&old[..h - 4]);
        old[h - 4..h].copy_from_slice(&hc.to_le_bytes());
        let t1 = old.len() - crate::segment::TAIL_LEN;
        let f = le(t + 24);
        let fc = crc32c::crc32c(&old[f..t1 + 116]);
        old[t1 + 116..t1 + 120].copy_from_slice(&fc.to_le_bytes());
        std::fs::write(&path, &old).unwrap();
        let r1 = SegmentReader::open(&path).expect("format 1 reads");
        assert!(r1.stats().is_none());
        let (got, scanned, summary) = scan(&path, &agg("", r#"{"fn":"count"}"#), "[]", false);
        assert!(!summary && scanned == 40);
        assert_eq!(got, r#"{"v":1,"groups":[{"k":[],"m":["40"]}]}"#);
        // A summary whose counts do not add up is refused even with a good checksum.
        let mut enc = Vec::new();
        let mut wrong = stats.clone();
        wrong.code_fields[0].codes[0].count += 1;
        wrong.encode(&mut enc);
        assert!(crate::segment::BatchStats::decode(&enc, &r.header().fields, 40).is_err());
        let mut enc = Vec::new();
        stats.encode(&mut enc);
        assert_eq!(
            crate::segment::BatchStats::decode(&enc, &r.header().fields, 40).unwrap(),
            stats
        );
        assert!(
            crate::segment::BatchStats::decode(&enc[..enc.len() - 1], &r.header().fields, 40)
                .is_err()
        );
    }
}
