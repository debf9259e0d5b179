//! Schema parse and validation tests: a full valid schema, then every validation rule with the
//! path it reports.

use super::*;

const NETFLOW: &str = r#"{
  "id": "netflow", "name": "Network flows", "record_size": 150, "byte_order": "little",
  "time_field": "ts", "time_index_interval": 60,
  "enums": { "proto": { "values": { "icmp": 1, "tcp": 6, "udp": 17 }, "default_label": "other" } },
  "fields": [
    { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
    { "name": "proto", "offset": 8, "size": 1, "type": "uint8", "enum": "proto" },
    { "name": "src", "offset": 9, "size": 4, "type": "ipv4" },
    { "name": "src6", "offset": 13, "size": 16, "type": "ipv6" },
    { "name": "amount", "offset": 29, "size": 8, "type": "numeric", "precision": 18, "scale": 4 },
    { "name": "dt", "offset": 37, "size": 4, "type": "uint32", "time_reference": { "field": "ts", "unit": "ms" } },
    { "name": "ports", "offset": 41, "size": 8, "type": "bytes", "array": { "element": "uint16", "count": 4 } },
    { "name": "host", "offset": 49, "size": 32, "type": "string" }
  ]
}"#;

/// Parses a schema expected to fail and returns its issues as "path: message" lines.
fn issues(json: &str) -> Vec<String> {
    parse(json)
        .expect_err("schema should be refused")
        .iter()
        .map(|i| i.to_string())
        .collect()
}

/// The netflow schema with one field added.
fn with_field(extra: &str) -> String {
    NETFLOW.replace(
        r#"{ "name": "host""#,
        &format!("{extra},\n    {{ \"name\": \"host\""),
    )
}

fn has(list: &[String], needle: &str) -> bool {
    list.iter().any(|l| l.contains(needle))
}

#[test]
fn parses_the_contract_example() {
    let s = parse(NETFLOW).unwrap();
    assert_eq!(s.id, "netflow");
    assert_eq!(s.record_size, 150);
    assert_eq!(s.fields.len(), 8);
    assert_eq!(s.time_field, 0);
    assert_eq!(s.fields[1].enumeration, Some(0));
    assert_eq!(
        s.enums[0].labels,
        vec![(1, "icmp".into()), (6, "tcp".into()), (17, "udp".into())]
    );
    assert_eq!(
        s.fields[4].ty,
        FieldType::Numeric {
            precision: 18,
            scale: 4
        }
    );
    assert_eq!(
        s.fields[5].time_reference,
        Some(TimeReference {
            field: 0,
            unit: TimeUnit::Milliseconds
        })
    );
    let a = s.fields[6].array.as_ref().unwrap();
    assert_eq!((a.element_size, a.count), (2, 4));
    assert_eq!(s.field("host").unwrap().offset, 49);
}

#[test]
fn defaults_and_canonical_round_trip() {
    let s = parse(r#"{"id":"t","record_size":8,"time_field":"ts","fields":[{"name":"ts","offset":0,"size":8,"type":"timestamp"}]}"#).unwrap();
    assert_eq!(
        (s.name.as_str(), s.byte_order, s.time_index_interval),
        ("t", ByteOrder::Little, 60)
    );
    let full = parse(NETFLOW).unwrap();
    assert_eq!(parse(&describe(&full)).unwrap(), full);
    let big = parse(r#"{"id":"b","record_size":8,"time_field":"ts","enums":{"e":{"values":{"max":"18446744073709551615","x":9007199254740993}}},
      "fields":[{"name":"ts","offset":0,"size":8,"type":"timestamp"},{"name":"o","offset":0,"size":8,"type":"uint64","enum":"e","overlay":true}]}"#)
    .unwrap();
    assert_eq!(big.enums[0].labels[1], (u64::MAX, "max".into()));
    let text = describe(&big);
    assert!(text.contains(r#""max":"18446744073709551615""#), "{text}");
    assert_eq!(parse(&text).unwrap(), big);
}

#[test]
fn every_type_with_its_size() {
    let mut fields = Vec::new();
    let mut off = 8;
    for (t, size) in [
        ("uint8", 1),
        ("uint16", 2),
        ("uint32", 4),
        ("uint64", 8),
        ("uint128", 16),
        ("uint256", 32),
        ("int8", 1),
        ("int16", 2),
        ("int32", 4),
        ("int64", 8),
        ("int128", 16),
        ("int256", 32),
        ("float", 4),
        ("double", 8),
        ("boolean", 1),
        ("bytes", 3),
        ("string", 5),
        ("timestamp", 4),
        ("ipv4", 4),
        ("ipv6", 16),
        ("blob", 7),
        ("chess_move", 2),
        ("chess_fen", 30),
    ] {
        fields.push(format!(
            r#"{{"name":"f_{t}","offset":{off},"size":{size},"type":"{t}"}}"#
        ));
        off += size;
    }
    let json = format!(
        r#"{{"id":"all","record_size":{off},"time_field":"ts","fields":[{{"name":"ts","offset":0,"size":8,"type":"timestamp"}},{}]}}"#,
        fields.join(",")
    );
    let s = parse(&json).unwrap();
    assert_eq!(s.fields.len(), 24);
    assert_eq!(parse(&describe(&s)).unwrap(), s);
}

#[test]
fn reports_bad_json_and_top_level_problems() {
    assert!(has(&issues("{"), "not valid JSON"));
    assert!(has(&issues("[]"), "expected an object, got an array"));
    let l = issues(
        r#"{"id":"9bad","record_size":0,"byte_order":"middle","time_index_interval":0,"fieldz":[],"fields":[],"id2":1}"#,
    );
    assert!(has(&l, "id: \"9bad\" is not an identifier"), "{l:?}");
    assert!(has(&l, "record_size: must be at least 1"));
    assert!(has(&l, "byte_order: \"middle\" is not a byte order"));
    assert!(has(&l, "time_index_interval: interval 0"));
    assert!(has(&l, "fieldz: unknown key (did you mean \"fields\"?)"));
    assert!(has(&l, "time_field: missing required key"));
    assert!(has(&l, "fields: a schema needs at least one field"));
    assert!(has(
        &issues(r#"{"id":"a","id":"b","record_size":1,"time_field":"t","fields":[]}"#),
        "id: duplicate key"
    ));
    assert!(has(
        &issues(r#"{"id":"a","record_size":2000000,"time_field":"t","fields":[]}"#),
        "record_size: 2000000 is too large"
    ));
}

#[test]
fn reports_field_problems_with_paths() {
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "unit32" }"#,
    ));
    assert_eq!(
        l,
        vec!["fields[7].type: unknown type \"unit32\" (did you mean \"uint32\"?)".to_string()]
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 148, "size": 4, "type": "uint32" }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].offset: bytes 148..152 lie outside the record (record_size 150)"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 3, "type": "int32" }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].size: size 3 is wrong for int32: it is always 4 bytes"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 6, "type": "timestamp" }"#,
    ));
    assert!(
        has(&l, "fields[7].size: size 6 is wrong for timestamp"),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "type": "uint8", "colour": 1 }"#,
    ));
    assert!(has(&l, "fields[7].colour: unknown key"), "{l:?}");
    assert!(has(&l, "fields[7].size: missing required key"), "{l:?}");
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 0, "type": "bytes" }"#,
    ));
    assert!(has(&l, "fields[7].size: must be at least 1"), "{l:?}");
    let l = issues(&with_field(
        r#"{ "name": "host", "offset": 81, "size": 4, "type": "uint32" }"#,
    ));
    assert!(
        has(
            &l,
            "fields[8].name: duplicate field name \"host\" (also fields[7])"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "", "offset": 81, "size": 4, "type": "uint32" }"#,
    ));
    assert!(
        has(&l, "fields[7].name: field names are 1 to 128 bytes"),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": 5, "offset": -1, "size": 1.5, "type": "uint8" }"#,
    ));
    assert!(
        has(&l, "fields[7].name: expected a string, got an integer"),
        "{l:?}"
    );
    assert!(
        has(&l, "fields[7].offset: expected a non-negative integer"),
        "{l:?}"
    );
    assert!(
        has(
            &l,
            "fields[7].size: expected a non-negative integer, got a number"
        ),
        "{l:?}"
    );
}

#[test]
fn reports_overlaps_unless_declared_overlay() {
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 10, "size": 4, "type": "uint32" }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].offset: bytes 10..14 of \"x\" overlap \"src\" (fields[2], bytes 9..13)"
        ),
        "{l:?}"
    );
    parse(&with_field(
        r#"{ "name": "x", "offset": 10, "size": 4, "type": "uint32", "overlay": true }"#,
    ))
    .unwrap();
    // An overlap hidden behind a wide earlier field is still found.
    let l = issues(
        r#"{"id":"o","record_size":16,"time_field":"ts","fields":[{"name":"ts","offset":0,"size":8,"type":"timestamp"},
      {"name":"a","offset":8,"size":8,"type":"bytes"},{"name":"b","offset":9,"size":1,"type":"uint8"},{"name":"c","offset":12,"size":1,"type":"uint8"}]}"#,
    );
    assert_eq!(l.len(), 2, "{l:?}");
    assert!(has(
        &issues(&with_field(
            r#"{ "name": "x", "offset": 81, "size": 1, "type": "uint8", "overlay": 1 }"#
        )),
        "fields[7].overlay: expected a boolean"
    ));
}

#[test]
fn reports_enum_problems() {
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "string", "enum": "proto" }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].enum: enum on a non-integer field (type string)"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "int32", "enum": "proto" }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].enum: enum on a non-integer field (type int32)"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 1, "type": "uint8", "enum": "prot" }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].enum: unknown enum \"prot\" (did you mean \"proto\"?)"
        ),
        "{l:?}"
    );
    let big = NETFLOW.replace(r#""udp": 17"#, r#""udp": 17, "big": 300"#);
    assert!(has(
        &issues(&big),
        "fields[1].enum: enum \"proto\" has code 300 (label \"big\"), too big for uint8"
    ));
    let dup = NETFLOW.replace(r#""udp": 17"#, r#""udp": 17, "udp": 18, "again": 6"#);
    let l = issues(&dup);
    assert!(
        has(&l, "enums.proto.values.udp: duplicate label \"udp\""),
        "{l:?}"
    );
    assert!(
        has(
            &l,
            "enums.proto.values.again: duplicate code 6 (also label \"tcp\")"
        ),
        "{l:?}"
    );
    let bad = NETFLOW.replace(
        r#""udp": 17"#,
        r#""udp": -1, "x": 1.5, "y": 1e30, "z": "99999999999999999999""#,
    );
    let l = issues(&bad);
    assert!(has(&l, "enums.proto.values.udp: expected a code"), "{l:?}");
    assert!(has(&l, "enums.proto.values.x: expected a code"), "{l:?}");
    assert!(
        has(&l, "enums.proto.values.y: code does not fit in 64 bits"),
        "{l:?}"
    );
    assert!(
        has(
            &l,
            "enums.proto.values.z: code 99999999999999999999 does not fit"
        ),
        "{l:?}"
    );
    let l = issues(&NETFLOW.replace(r#""default_label": "other""#, r#""default": "other""#));
    assert!(
        has(
            &l,
            "enums.proto.default: unknown key (did you mean \"default_label\"?)"
        ),
        "{l:?}"
    );
    assert!(has(
        &issues(&NETFLOW.replace(r#"{ "icmp": 1, "tcp": 6, "udp": 17 }"#, "{}")),
        "enums.proto.values: an enum needs at least one label"
    ));
}

#[test]
fn reports_numeric_problems() {
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "numeric", "precision": 10, "scale": 2 }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].precision: precision 10 is out of range: 1..9 for a 4-byte numeric"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 8, "type": "numeric", "precision": 5, "scale": 6 }"#,
    ));
    assert!(
        has(&l, "fields[7].scale: scale 6 is larger than precision 5"),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 8, "type": "numeric" }"#,
    ));
    assert!(
        has(&l, "fields[7].precision: numeric fields need a precision"),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 5, "type": "numeric", "precision": 5 }"#,
    ));
    assert!(
        has(&l, "fields[7].size: size 5 is wrong for numeric"),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 8, "type": "uint64", "scale": 2 }"#,
    ));
    assert!(
        has(&l, "fields[7].scale: scale applies only to numeric fields"),
        "{l:?}"
    );
}

#[test]
fn reports_time_problems() {
    let l = issues(&NETFLOW.replace(r#""time_field": "ts""#, r#""time_field": "tss""#));
    assert!(
        has(
            &l,
            "time_field: no field named \"tss\" (did you mean \"ts\"?)"
        ),
        "{l:?}"
    );
    let l = issues(&NETFLOW.replace(r#""time_field": "ts""#, r#""time_field": "host""#));
    assert!(
        has(
            &l,
            "time_field: field \"host\" (fields[7]) is not a timestamp"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "uint32", "time_reference": { "field": "nope", "unit": "ms" } }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].time_reference.field: no field named \"nope\""
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "uint32", "time_reference": { "field": "src", "unit": "ms" } }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].time_reference.field: field \"src\" (fields[2]) is not a timestamp"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "float", "time_reference": { "field": "ts", "unit": "ms" } }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].time_reference: time_reference on a non-integer field (type float)"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "uint32", "time_reference": { "field": "ts", "unit": "days" } }"#,
    ));
    assert!(
        has(&l, "fields[7].time_reference.unit: unknown unit \"days\""),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 4, "type": "uint32", "time_reference": { "unit": "s" } }"#,
    ));
    assert!(
        has(&l, "fields[7].time_reference.field: missing required key"),
        "{l:?}"
    );
}

#[test]
fn reports_array_problems() {
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 8, "type": "string", "array": { "element": "uint16", "count": 4 } }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].array: array on a non-bytes field (type string)"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 8, "type": "bytes", "array": { "element": "uint32", "count": 3 } }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].array.count: 3 × 4 bytes does not fit in the field's 8 bytes"
        ),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 8, "type": "bytes", "array": { "element": "string", "count": 3 } }"#,
    ));
    assert!(has(&l, "fields[7].array.element: \"string\" cannot be an array element (elements are fixed-size scalars)"), "{l:?}");
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 8, "type": "bytes", "array": { "element": "uint8", "count": 0 } }"#,
    ));
    assert!(
        has(&l, "fields[7].array.count: must be at least 1"),
        "{l:?}"
    );
    let l = issues(&with_field(
        r#"{ "name": "x", "offset": 81, "size": 8, "type": "bytes", "array": { "element": "float", "count": 2, "enum": "proto" } }"#,
    ));
    assert!(
        has(
            &l,
            "fields[7].array.enum: enum on a non-integer field (type float)"
        ),
        "{l:?}"
    );
    parse(&with_field(r#"{ "name": "x", "offset": 81, "size": 8, "type": "bytes", "array": { "element": "uint8", "count": 8, "enum": "proto" } }"#)).unwrap();
}

#[test]
fn reports_many_problems_at_once() {
    let l = issues(
        r#"{"id":"m","record_size":4,"time_field":"ts","fields":[
      {"name":"ts","offset":0,"size":8,"type":"timestamp"},{"name":"a","offset":2,"size":2,"type":"chess"},{"name":"b","offset":9,"size":1,"type":"bool"}]}"#,
    );
    assert!(l.len() >= 4, "{l:?}");
    assert!(has(&l, "fields[1].type: unknown type \"chess\""));
    assert!(has(&l, "fields[2].type: unknown type \"bool\""));
}

#[test]
fn random_garbage_never_panics() {
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let base = NETFLOW.as_bytes();
    for _ in 0..3000 {
        let mut b = base.to_vec();
        for _ in 0..(next() % 6 + 1) {
            let i = (next() as usize) % b.len();
            match next() % 3 {
                0 => b[i] = (next() % 128) as u8,
                1 => {
                    b.remove(i);
                }
                _ => b.insert(i, b"{}[]\",:0123456789-e"[(next() % 19) as usize]),
            }
        }
        if let Ok(text) = std::str::from_utf8(&b) {
            if let Ok(s) = parse(text) {
                assert_eq!(parse(&describe(&s)).unwrap(), s);
            }
        }
    }
}
