//! list_contains / not_list_contains on arrays of every element type, both byte orders.

use super::reference::{int, Rng, V};
use crate::encode::RecordEncoder;
use crate::gpu::host_check::HostCheck;
use crate::scan::projection::assert_narrow_agrees;
use crate::scan::ScanFilter;
use crate::schema::parse;

struct ListCase {
    element: &'static str,
    esize: usize,
    pool: &'static [&'static str],
}

const CASES: &[ListCase] = &[
    ListCase {
        element: "uint8",
        esize: 1,
        pool: &["0", "1", "6", "17", "255"],
    },
    ListCase {
        element: "uint16",
        esize: 2,
        pool: &["0", "80", "443", "65535", "8080"],
    },
    ListCase {
        element: "uint32",
        esize: 4,
        pool: &["0", "1", "4294967295", "65536"],
    },
    ListCase {
        element: "uint64",
        esize: 8,
        pool: &["0", "7", "18446744073709551615"],
    },
    ListCase {
        element: "uint128",
        esize: 16,
        pool: &["0", "5", "340282366920938463463374607431768211455"],
    },
    ListCase {
        element: "uint256",
        esize: 32,
        pool: &["0", "9", "340282366920938463463374607431768211456"],
    },
    ListCase {
        element: "int8",
        esize: 1,
        pool: &["-128", "-1", "0", "127"],
    },
    ListCase {
        element: "int16",
        esize: 2,
        pool: &["-300", "0", "300", "-1"],
    },
    ListCase {
        element: "int32",
        esize: 4,
        pool: &["-2147483648", "0", "5", "-5"],
    },
    ListCase {
        element: "int64",
        esize: 8,
        pool: &["-1", "0", "9223372036854775807"],
    },
    ListCase {
        element: "int128",
        esize: 16,
        pool: &["-1", "0", "18446744073709551616"],
    },
    ListCase {
        element: "int256",
        esize: 32,
        pool: &["-1", "0", "-340282366920938463463374607431768211456"],
    },
    ListCase {
        element: "float",
        esize: 4,
        pool: &["0", "-0", "1.5", "-2.5", "inf", "NaN"],
    },
    ListCase {
        element: "double",
        esize: 8,
        pool: &["0", "-0", "0.1", "-2.5", "-inf", "NaN"],
    },
    ListCase {
        element: "boolean",
        esize: 1,
        pool: &["true", "false"],
    },
    ListCase {
        element: "ipv4",
        esize: 4,
        pool: &["0", "167772161", "4294967295"],
    },
    ListCase {
        element: "ipv6",
        esize: 16,
        pool: &["0", "1", "281470681743360"],
    },
];

fn value(c: &ListCase, t: &str) -> V {
    match c.element {
        "float" => V::F(f64::from(t.parse::<f32>().expect("f32"))),
        "double" => V::F(t.parse::<f64>().expect("f64")),
        "boolean" => V::B(t == "true"),
        _ => int(t),
    }
}

#[test]
fn list_contains_on_every_element_type() {
    const COUNT: usize = 4;
    let mut kernels = HostCheck::default();
    for c in CASES {
        for big in [false, true] {
            let size = c.esize * COUNT;
            let json = format!(
                r#"{{ "id": "t", "record_size": {}, "byte_order": "{}", "time_field": "ts",
                    "fields": [ {{ "name": "ts", "offset": 0, "size": 4, "type": "timestamp" }},
                    {{ "name": "xs", "offset": 5, "size": {size}, "type": "bytes",
                       "array": {{ "element": "{}", "count": {COUNT} }} }} ] }}"#,
                5 + size + 2,
                if big { "big" } else { "little" },
                c.element
            );
            let sc = parse(&json).expect("schema");
            let enc = RecordEncoder::new(&sc);
            let mut rng = Rng(0xabc + c.esize as u64 + u64::from(big));
            let mut lists = Vec::new();
            let mut data = Vec::new();
            for i in 0..120u32 {
                let n = rng.below(COUNT + 1);
                let items: Vec<&str> = (0..n).map(|_| c.pool[rng.below(c.pool.len())]).collect();
                let mut rec = vec![0u8; sc.record_size];
                rec[..4].copy_from_slice(&i.to_le_bytes());
                for (k, t) in items.iter().enumerate() {
                    enc.encode_element(1, k, t, &mut rec).expect("element");
                }
                // Unset slots are zero elements: the reference sees them too.
                let mut all: Vec<&str> = items.clone();
                let zero = if c.element == "boolean" { "false" } else { "0" };
                all.resize(COUNT, zero);
                lists.push(all);
                data.extend(rec);
            }
            let extra: &[&str] = if c.element == "boolean" { &[] } else { &["2"] };
            for v in c.pool.iter().chain(extra).filter(|v| **v != "NaN") {
                let want_v = value(c, v);
                for (op, negate) in [("list_contains", false), ("not_list_contains", true)] {
                    let q =
                        format!(r#"[{{"filters":[{{"field":"xs","op":"{op}","value":"{v}"}}]}}]"#);
                    let f = ScanFilter::compile(&sc, &q).unwrap_or_else(|e| panic!("{q}: {e}"));
                    assert!(
                        assert_narrow_agrees(&f, &data),
                        "{q}: list filters have a narrow form"
                    );
                    kernels.add(&f, &data);
                    let got: Vec<u32> = f
                        .filter(&data)
                        .chunks_exact(sc.record_size)
                        .map(|r| u32::from_le_bytes([r[0], r[1], r[2], r[3]]))
                        .collect();
                    let want: Vec<u32> = lists
                        .iter()
                        .enumerate()
                        .filter(|(_, l)| {
                            l.iter().any(|t| {
                                value(c, t).cmp(&want_v) == Some(std::cmp::Ordering::Equal)
                            }) != negate
                        })
                        .map(|(i, _)| i as u32)
                        .collect();
                    assert_eq!(got, want, "{} big={big}: {q}", c.element);
                }
            }
        }
    }
    assert!(kernels.run() > 50);
}
