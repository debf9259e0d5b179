//! Every FilterOp on every scalar type, both byte orders, against the naive reference: random
//! records from a pool of values per type (edges included), random operands, many seeds.

use super::cases::{cases, record, schema, value};
use super::reference::{holds, Rng, V};
use crate::encode::RecordEncoder;
use crate::gpu::host_check::HostCheck;
use crate::scan::projection::assert_narrow_agrees;
use crate::scan::{FilterOp, ScanFilter};
use crate::schema::parse;

fn json_filter(op: FilterOp, vals: &[&str]) -> String {
    use crate::scan::FilterOp::*;
    let q = |t: &str| serde_json::to_string(t).expect("json string");
    let body = match op {
        IsNull | IsNotNull => String::new(),
        Between | In => format!(
            r#", "values": [{}]"#,
            vals.iter().map(|v| q(v)).collect::<Vec<_>>().join(",")
        ),
        _ => format!(r#", "value": {}"#, q(vals[0])),
    };
    format!(
        r#"[{{ "filters": [{{ "field": "x", "op": "{}"{body} }}] }}]"#,
        op.name()
    )
}

fn ids(out: &[u8], rs: usize) -> Vec<u16> {
    out.chunks_exact(rs)
        .map(|r| u16::from_le_bytes([r[0], r[1]]))
        .collect()
}

#[test]
fn every_op_on_every_type_matches_the_reference() {
    use crate::scan::FilterOp::*;
    let ops = [
        Eq, Ne, Lt, Le, Gt, Ge, Between, In, IsNull, IsNotNull, Prefix,
    ];
    let mut checked = 0;
    let mut narrowed = 0;
    let mut kernels = HostCheck::default();
    for case in cases() {
        for big in [false, true] {
            let sc = schema(&case, big);
            let enc = RecordEncoder::new(&sc);
            let field = sc.field("x").expect("x");
            for seed in 1..=4u64 {
                let mut rng = Rng(seed * 0x9e37_79b9_7f4a_7c15 + case.size as u64);
                let n = 50 + rng.below(100);
                let texts: Vec<&str> = (0..n).map(|_| rng.pick(&case.pool)).collect();
                let mut data = Vec::new();
                for (i, t) in texts.iter().enumerate() {
                    data.extend(record(&case, &enc, i as u16, t, big));
                }
                let operands: Vec<String> = case
                    .pool
                    .iter()
                    .chain(&case.more)
                    .filter(|t| *t != "NaN")
                    .cloned()
                    .collect();
                for op in ops {
                    if op.refusal(field).is_some() {
                        continue;
                    }
                    for _ in 0..6 {
                        let k = match op {
                            Between => 2,
                            In => 1 + rng.below(4),
                            IsNull | IsNotNull => 0,
                            _ => 1,
                        };
                        let mut vals: Vec<&str> = (0..k).map(|_| rng.pick(&operands)).collect();
                        if op == Prefix {
                            // Prefixes of pool values, cut at a character boundary.
                            let full = rng.pick(&case.pool).to_string();
                            let step = if case.ty == "bytes" { 2 } else { 1 };
                            let mut cut = rng.below(full.len() / step + 1) * step;
                            while !full.is_char_boundary(cut) {
                                cut -= 1;
                            }
                            vals = vec![Box::leak(full[..cut].to_string().into_boxed_str())];
                        }
                        let json = json_filter(op, &vals);
                        let f = ScanFilter::compile(&sc, &json)
                            .unwrap_or_else(|e| panic!("{} {json}: {e}", case.ty));
                        let got = ids(&f.filter(&data), sc.record_size);
                        // The same filter over narrow copies matches the same records.
                        narrowed += usize::from(assert_narrow_agrees(&f, &data));
                        // The same filter as generated GPU kernel source, run on the host.
                        kernels.add(&f, &data);
                        let vv: Vec<V> = vals.iter().map(|t| value(&case, t, op)).collect();
                        let want: Vec<u16> = texts
                            .iter()
                            .enumerate()
                            .filter(|(_, t)| holds(op, &value(&case, t, Eq), &vv))
                            .map(|(i, _)| i as u16)
                            .collect();
                        assert_eq!(
                            got, want,
                            "{}({}) big={big} seed={seed}: {json}",
                            case.ty, case.size
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 3000, "checked {checked}");
    assert_eq!(kernels.run(), checked);
    // Every op but those folded to a constant (is_null on a type without a null) has a narrow form.
    assert!(
        narrowed * 10 > checked * 9,
        "narrowed {narrowed} of {checked}"
    );
}

#[test]
fn masked_eq_on_every_type_compares_stored_bytes() {
    let mut kernels = HostCheck::default();
    for case in cases() {
        for big in [false, true] {
            let sc = schema(&case, big);
            let enc = RecordEncoder::new(&sc);
            let mut rng = Rng(0xfeed + case.size as u64);
            let texts: Vec<&str> = (0..80).map(|_| rng.pick(&case.pool)).collect::<Vec<_>>();
            let data: Vec<u8> = texts
                .iter()
                .enumerate()
                .flat_map(|(i, t)| record(&case, &enc, i as u16, t, big))
                .collect();
            let rs = sc.record_size;
            for _ in 0..12 {
                // A value from a real record (so some match) and a random sparse mask.
                let src = rng.below(texts.len());
                let field = &data[src * rs + 11..src * rs + 11 + case.size];
                let mask: Vec<u8> = (0..case.size)
                    .map(|_| {
                        if rng.below(3) == 0 {
                            rng.next() as u8
                        } else {
                            0
                        }
                    })
                    .collect();
                let hexs = |b: &[u8]| b.iter().map(|c| format!("{c:02x}")).collect::<String>();
                let json = format!(
                    r#"[{{"filters":[{{"field":"x","op":"masked_eq","value":"{}","mask":"{}"}}]}}]"#,
                    hexs(field),
                    hexs(&mask)
                );
                let f = ScanFilter::compile(&sc, &json).expect("masked_eq compiles");
                let got = ids(&f.filter(&data), rs);
                assert_narrow_agrees(&f, &data);
                kernels.add(&f, &data);
                let want: Vec<u16> = (0..texts.len())
                    .filter(|&i| {
                        let x = &data[i * rs + 11..i * rs + 11 + case.size];
                        x.iter()
                            .zip(&mask)
                            .zip(field)
                            .all(|((a, m), v)| a & m == v & m)
                    })
                    .map(|i| i as u16)
                    .collect();
                assert!(want.contains(&(src as u16)));
                assert_eq!(got, want, "{} {json}", case.ty);
            }
        }
    }
    assert!(kernels.run() > 100);
}

#[test]
fn sub_queries_are_or_ed_and_filters_and_ed() {
    let sc = parse(
        r#"{ "id": "t", "record_size": 16, "time_field": "ts", "fields": [
            { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
            { "name": "a", "offset": 8, "size": 4, "type": "uint32" },
            { "name": "b", "offset": 12, "size": 4, "type": "int32" } ] }"#,
    )
    .expect("schema");
    let mut data = Vec::new();
    for i in 0..3000i64 {
        data.extend(i.to_le_bytes());
        data.extend(((i % 7) as u32).to_le_bytes());
        data.extend(((i % 11) as i32 - 5).to_le_bytes());
    }
    let q = r#"[
        { "filters": [ { "field": "a", "op": "eq", "value": "3" }, { "field": "b", "op": "lt", "value": "0" } ] },
        { "filters": [ { "field": "ts", "op": "between", "values": ["100", "120"] } ] },
        { "filters": [ { "field": "b", "op": "in", "values": ["5", "4"] }, { "field": "a", "op": "ne", "value": "0" } ] } ]"#;
    let f = ScanFilter::compile(&sc, q).expect("compiles");
    let got: Vec<i64> = f
        .filter(&data)
        .chunks_exact(16)
        .map(|r| i64::from_le_bytes(r[..8].try_into().expect("8")))
        .collect();
    let want: Vec<i64> = (0..3000i64)
        .filter(|i| {
            let (a, b) = (i % 7, i % 11 - 5);
            (a == 3 && b < 0) || (100..=120).contains(i) || ((b == 5 || b == 4) && a != 0)
        })
        .collect();
    assert_eq!(got, want);
    assert!(
        assert_narrow_agrees(&f, &data),
        "OR of ANDs over narrow copies"
    );
    // No sub-queries: every record; a sub-query that can never match is folded away.
    let all = ScanFilter::compile(&sc, "[]").expect("empty");
    assert!(all.matches_all());
    assert_eq!(all.filter(&data), data);
    let never = ScanFilter::compile(
        &sc,
        r#"[{"filters":[{"field":"a","op":"lt","value":"0"}]}]"#,
    )
    .expect("never");
    assert!(never.matches_none());
    assert!(never.filter(&data).is_empty());
    let always = ScanFilter::compile(
        &sc,
        r#"[{"filters":[{"field":"a","op":"ge","value":"0"}]},{"filters":[{"field":"a","op":"eq","value":"1"}]}]"#,
    )
    .expect("always");
    assert!(always.matches_all());
    let mut kernels = HostCheck::default();
    for f in [&f, &all, &never, &always] {
        kernels.add(f, &data);
    }
    assert_eq!(kernels.run(), 4);
}
