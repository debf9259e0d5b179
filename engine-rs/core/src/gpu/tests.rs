//! Random filter programs (ORs of ANDs over fields of every shape the kernel knows) as generated
//! kernel source, against the CPU kernel: compiled and run on the host, and on the GPU where one is.

use super::codegen;
use super::host_check::HostCheck;
use crate::encode::RecordEncoder;
use crate::scan::ScanFilter;
use crate::schema::parse;
use crate::test_rng::Rng;

struct Field {
    name: &'static str,
    pool: &'static [&'static str],
    ops: &'static [&'static str],
}

const FIELDS: &[Field] = &[
    Field {
        name: "ts",
        pool: &["0", "1000", "1700000000000", "1700000000500", "99"],
        ops: &["eq", "ne", "lt", "le", "gt", "ge", "between", "in"],
    },
    Field {
        name: "a",
        pool: &["0", "1", "7", "4294967295", "65536", "300"],
        ops: &["eq", "ne", "lt", "ge", "between", "in"],
    },
    Field {
        name: "b",
        pool: &["-32768", "-1", "0", "5", "32767", "-300"],
        ops: &["eq", "ne", "lt", "le", "gt", "between", "in"],
    },
    Field {
        name: "c",
        pool: &["-1.5", "0", "-0", "2.25", "1e300", "-1e-300", "NaN"],
        ops: &["eq", "ne", "lt", "gt", "ge", "between", "in"],
    },
    Field {
        name: "s",
        pool: &["", "a", "ab", "abc", "b", "zzzzzz", "abd"],
        ops: &[
            "eq",
            "ne",
            "lt",
            "ge",
            "between",
            "in",
            "prefix",
            "is_null",
            "is_not_null",
        ],
    },
    Field {
        name: "w",
        pool: &[
            "0",
            "-1",
            "170141183460469231731687303715884105727",
            "-170141183460469231731687303715884105728",
            "12",
        ],
        ops: &["eq", "ne", "lt", "gt", "between", "in"],
    },
    Field {
        name: "z",
        pool: &[
            "0",
            "1",
            "340282366920938463463374607431768211456",
            "0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        ],
        ops: &["eq", "ne", "le", "gt", "between", "in"],
    },
    Field {
        name: "xs",
        pool: &["0", "80", "443", "65535"],
        ops: &["list_contains", "not_list_contains"],
    },
];

fn schema(big: bool) -> crate::schema::Schema {
    let order = if big { "big" } else { "little" };
    parse(&format!(
        r#"{{ "id": "g", "record_size": 82, "byte_order": "{order}", "time_field": "ts", "fields": [
            {{ "name": "ts", "offset": 0, "size": 8, "type": "timestamp" }},
            {{ "name": "a", "offset": 8, "size": 4, "type": "uint32" }},
            {{ "name": "b", "offset": 12, "size": 2, "type": "int16" }},
            {{ "name": "c", "offset": 14, "size": 8, "type": "double" }},
            {{ "name": "s", "offset": 22, "size": 6, "type": "string" }},
            {{ "name": "w", "offset": 28, "size": 16, "type": "int128" }},
            {{ "name": "z", "offset": 44, "size": 32, "type": "uint256" }},
            {{ "name": "xs", "offset": 76, "size": 6, "type": "bytes", "array": {{ "element": "uint16", "count": 3 }} }} ] }}"#
    ))
    .expect("test schema")
}

fn filter_json(rng: &mut Rng) -> String {
    let q = |t: &str| serde_json::to_string(t).expect("json");
    let branches: Vec<String> = (0..1 + rng.below(3))
        .map(|_| {
            let filters: Vec<String> = (0..1 + rng.below(3))
                .map(|_| {
                    let f = &FIELDS[rng.below(FIELDS.len())];
                    let op = f.ops[rng.below(f.ops.len())];
                    let operand = |rng: &mut Rng| loop {
                        let v = f.pool[rng.below(f.pool.len())];
                        if v != "NaN" {
                            return v;
                        }
                    };
                    let body = match op {
                        "is_null" | "is_not_null" => String::new(),
                        "between" => {
                            format!(r#", "values": [{}, {}]"#, q(operand(rng)), q(operand(rng)))
                        }
                        "in" => {
                            let vs: Vec<String> =
                                (0..1 + rng.below(5)).map(|_| q(operand(rng))).collect();
                            format!(r#", "values": [{}]"#, vs.join(","))
                        }
                        _ => format!(r#", "value": {}"#, q(operand(rng))),
                    };
                    format!(r#"{{ "field": "{}", "op": "{op}"{body} }}"#, f.name)
                })
                .collect();
            format!(r#"{{ "filters": [{}] }}"#, filters.join(", "))
        })
        .collect();
    format!("[{}]", branches.join(", "))
}

fn records(big: bool, rng: &mut Rng, n: usize) -> Vec<u8> {
    let sc = schema(big);
    let enc = RecordEncoder::new(&sc);
    let mut data = Vec::with_capacity(n * sc.record_size);
    for _ in 0..n {
        let mut rec = vec![0u8; sc.record_size];
        for (i, f) in FIELDS.iter().enumerate() {
            if f.name == "xs" {
                for k in 0..rng.below(4) {
                    enc.encode_element(i, k, f.pool[rng.below(f.pool.len())], &mut rec)
                        .expect("element");
                }
            } else if rng.below(8) != 0 {
                // One field in eight left zero: nulls for is_null.
                enc.encode_field(i, f.pool[rng.below(f.pool.len())], &mut rec)
                    .expect("value");
            }
        }
        data.extend(rec);
    }
    data
}

#[test]
fn random_filter_programs_as_kernel_source_match_the_cpu_kernel() {
    let mut kernels = HostCheck::default();
    let mut matched = 0;
    for big in [false, true] {
        let sc = schema(big);
        for seed in 0..200u64 {
            let mut rng = Rng(seed * 0x9e37_79b9_7f4a_7c15 + u64::from(big));
            let data = records(big, &mut rng, 200);
            let json = filter_json(&mut rng);
            let f = ScanFilter::compile(&sc, &json).unwrap_or_else(|e| panic!("{json}: {e}"));
            matched += f.filter(&data).len() / sc.record_size;
            kernels.add(&f, &data);
        }
    }
    assert!(
        matched > 10_000,
        "the random programs match something ({matched} records)"
    );
    assert_eq!(kernels.run(), 400);
}

#[test]
fn the_source_names_one_entry_per_filter_and_bakes_in_the_record_size() {
    let sc = schema(false);
    let f = ScanFilter::compile(
        &sc,
        r#"[{"filters":[{"field":"a","op":"in","values":["1","7"]}]}]"#,
    )
    .expect("filter");
    let src = codegen::program(&[("one", &f), ("two", &f)]);
    for name in ["one", "two"] {
        assert_eq!(
            src.matches(&format!("HD_ENTRY hd_filter_{name}(")).count(),
            2,
            "a device and a host entry for {name}"
        );
    }
    assert!(src.contains("data + i * 82ULL"));
    assert!(
        src.contains("HD_TABLE u64 one_t0[2] = {0x1ULL,0x7ULL};"),
        "the IN set as a sorted table:\n{src}"
    );
}

#[test]
fn no_gpu_here_is_a_plain_error_not_a_panic() {
    // Either a device opens (a GPU machine) or the reason is one of the documented ones.
    match super::GpuDevice::open(0) {
        Ok(d) => assert!(!d.name().is_empty() && d.memory() > 0),
        Err(e) => eprintln!("no GPU: {e}"),
    }
    assert!(
        super::GpuDevice::open(999).is_err(),
        "ordinal 999 is never a device"
    );
}
