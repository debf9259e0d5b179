//! Narrow copies: which bytes a filter keeps, where they land, when it is not worth it, and that
//! the filter over them matches what it matches over whole records (more in `tests/ops.rs`,
//! `tests/lists.rs` and `tests/segments.rs`, which check every op and the scanner).

use super::{assert_narrow_agrees, Projection};
use crate::scan::ScanFilter;
use crate::schema::{parse, Schema};
use crate::test_rng::Rng;

/// A flows-like record of 150 bytes: the fields a dashboard filters on are a few bytes of it.
fn flows() -> Schema {
    parse(
        r#"{ "id": "f", "record_size": 150, "time_field": "ts", "fields": [
            { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
            { "name": "proto", "offset": 8, "size": 1, "type": "uint8" },
            { "name": "dport", "offset": 9, "size": 2, "type": "uint16" },
            { "name": "sport", "offset": 11, "size": 2, "type": "uint16" },
            { "name": "bytes", "offset": 16, "size": 8, "type": "uint64" },
            { "name": "host", "offset": 40, "size": 32, "type": "string" },
            { "name": "rest", "offset": 72, "size": 78, "type": "bytes" } ] }"#,
    )
    .expect("schema")
}

fn records(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let hosts = ["a.example", "b.example", "", "a.example.org"];
    let mut out = vec![0u8; n * 150];
    for (i, r) in out.chunks_exact_mut(150).enumerate() {
        r[..8].copy_from_slice(&(1_000 + i as i64 / 7).to_le_bytes());
        r[8] = [6u8, 17, 1][rng.below(3)];
        r[9..11].copy_from_slice(&[22u16, 80, 443, 8080][rng.below(4)].to_le_bytes());
        r[11..13].copy_from_slice(&((rng.next() % 65_536) as u16).to_le_bytes());
        r[16..24].copy_from_slice(&(rng.next() % 100_000).to_le_bytes());
        let h = hosts[rng.below(hosts.len())].as_bytes();
        r[40..40 + h.len()].copy_from_slice(h);
        r[72] = rng.below(256) as u8;
    }
    out
}

fn filter(json: &str) -> ScanFilter {
    ScanFilter::compile(&flows(), json).expect("filter")
}

#[test]
fn keeps_the_bytes_the_filter_loads_back_to_back() {
    let f = filter(
        r#"[{"filters":[{"field":"ts","op":"ge","value":"1010"},{"field":"proto","op":"eq","value":"6"},{"field":"dport","op":"eq","value":"443"}]}]"#,
    );
    let nw = Projection::of(&f).expect("a narrow form");
    // ts, proto and dport touch: one span of 11 bytes.
    assert_eq!(nw.projection.width(), 11);
    assert_eq!(nw.filter.record_size(), 11);
    let data = records(3000, 1);
    let narrow = nw.projection.project(&data);
    assert_eq!(narrow.len(), 3000 * 11);
    assert_eq!(
        &narrow[11..22],
        &data[150..161],
        "record 1's first 11 bytes"
    );
    assert!(assert_narrow_agrees(&f, &data));

    // Two separate ranges (sport, and the first bytes of host the prefix compares), in record order.
    let g = filter(
        r#"[{"filters":[{"field":"host","op":"prefix","value":"a."}]},{"filters":[{"field":"sport","op":"lt","value":"1024"}]}]"#,
    );
    let nw = Projection::of(&g).expect("a narrow form");
    let w = nw.projection.width();
    assert!(
        (4..=34).contains(&w),
        "sport and a prefix of host: {w} bytes"
    );
    let narrow = nw.projection.project(&data[..150]);
    assert_eq!(&narrow[..2], &data[11..13]);
    assert_eq!(&narrow[2..], &data[40..40 + w - 2]);
    assert!(assert_narrow_agrees(&g, &data));
}

#[test]
fn not_when_nothing_is_evaluated_or_the_loads_are_wide() {
    assert!(
        Projection::of(&filter("[]")).is_none(),
        "every record matches"
    );
    assert!(
        Projection::of(&filter(
            r#"[{"filters":[{"field":"proto","op":"lt","value":"0"}]}]"#
        ))
        .is_none(),
        "no record can match"
    );
    // The whole of host (32 bytes), bytes and ts: more than a quarter of the record.
    let wide = filter(
        r#"[{"filters":[{"field":"host","op":"eq","value":"a.example.org"},{"field":"bytes","op":"gt","value":"1"},{"field":"ts","op":"gt","value":"1"}]}]"#,
    );
    assert!(Projection::of(&wide).is_none());
    assert!(
        Projection::of_any(&wide, None).is_some(),
        "the tests' form keeps any width"
    );
}

#[test]
fn another_set_of_bytes_is_another_key() {
    let a = Projection::of(&filter(
        r#"[{"filters":[{"field":"proto","op":"eq","value":"6"}]}]"#,
    ))
    .expect("proto");
    let b = Projection::of(&filter(
        r#"[{"filters":[{"field":"proto","op":"eq","value":"17"}]}]"#,
    ))
    .expect("proto");
    let c = Projection::of(&filter(
        r#"[{"filters":[{"field":"dport","op":"eq","value":"22"}]}]"#,
    ))
    .expect("dport");
    // The copies depend on the bytes kept, not on the values compared.
    assert_eq!(a.projection.key(), b.projection.key());
    assert_ne!(a.projection.key(), c.projection.key());
}

#[test]
fn random_filters_over_narrow_copies_match_the_same_records() {
    let data = records(5000, 9);
    let leaves = [
        r#"{"field":"proto","op":"eq","value":"6"}"#,
        r#"{"field":"proto","op":"in","values":["1","17"]}"#,
        r#"{"field":"dport","op":"ne","value":"443"}"#,
        r#"{"field":"dport","op":"between","values":["20","100"]}"#,
        r#"{"field":"ts","op":"lt","value":"1300"}"#,
        r#"{"field":"bytes","op":"ge","value":"50000"}"#,
        r#"{"field":"host","op":"eq","value":"b.example"}"#,
        r#"{"field":"host","op":"is_null"}"#,
        r#"{"field":"sport","op":"masked_eq","value":"0001","mask":"00ff"}"#,
    ];
    let mut rng = Rng(77);
    let mut narrowed = 0;
    for _ in 0..200 {
        let subs: Vec<String> = (0..1 + rng.below(3))
            .map(|_| {
                let fs: Vec<&str> = (0..1 + rng.below(3))
                    .map(|_| leaves[rng.below(leaves.len())])
                    .collect();
                format!(r#"{{"filters":[{}]}}"#, fs.join(","))
            })
            .collect();
        let f = filter(&format!("[{}]", subs.join(",")));
        narrowed += usize::from(assert_narrow_agrees(&f, &data));
    }
    assert!(narrowed > 190, "narrowed {narrowed} of 200");
}
