//! Malformed sub-query JSON and filters a schema cannot take: each refused with its path.

use crate::scan::{ScanFilter, MAX_IN_VALUES};
use crate::schema::{parse, Schema};

fn schema() -> Schema {
    parse(
        r#"{ "id": "netflow", "record_size": 96, "time_field": "ts",
            "enums": { "proto": { "values": { "tcp": 6, "udp": 17 } } },
            "fields": [
              { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
              { "name": "proto", "offset": 8, "size": 1, "type": "uint8", "enum": "proto" },
              { "name": "port", "offset": 9, "size": 2, "type": "uint16" },
              { "name": "ok", "offset": 11, "size": 1, "type": "boolean" },
              { "name": "amount", "offset": 12, "size": 8, "type": "numeric", "precision": 18, "scale": 2 },
              { "name": "rtt", "offset": 20, "size": 4, "type": "float" },
              { "name": "host", "offset": 24, "size": 16, "type": "string" },
              { "name": "raw", "offset": 40, "size": 4, "type": "bytes" },
              { "name": "fen", "offset": 44, "size": 30, "type": "chess_fen" },
              { "name": "ports", "offset": 74, "size": 8, "type": "bytes", "array": { "element": "uint16", "count": 4 } },
              { "name": "key", "offset": 82, "size": 8, "type": "blob" },
              { "name": "src", "offset": 90, "size": 4, "type": "ipv4" } ] }"#,
    )
    .expect("schema")
}

fn refused(q: &str) -> String {
    match ScanFilter::compile(&schema(), q) {
        Ok(_) => panic!("accepted: {q}"),
        Err(e) => e.to_string(),
    }
}

fn one(filter: &str) -> String {
    refused(&format!(r#"[{{"filters":[{filter}]}}]"#))
}

#[test]
fn shape_errors_name_their_path() {
    assert!(refused("{").starts_with("sub_queries: not JSON"));
    assert_eq!(
        refused(r#"{"filters":[]}"#),
        "sub_queries: expected an array of sub-queries, got an object"
    );
    assert_eq!(
        refused("[1]"),
        "sub_queries[0]: expected an object, got an integer"
    );
    assert_eq!(
        refused(r#"[{"filter":[]}]"#),
        "sub_queries[0].filter: unknown key (did you mean \"filters\"?)"
    );
    assert!(refused(r#"[{}]"#).starts_with("sub_queries[0].filters: missing"));
    assert_eq!(
        refused(r#"[{"filters":{}}]"#),
        "sub_queries[0].filters: expected an array of filters, got an object"
    );
    assert!(
        refused(r#"[{"filters":[{"field":"port","op":"eq","value":"1"}]},{"filters":[]}]"#)
            .starts_with("sub_queries[1].filters: an empty sub-query is refused")
    );
    assert_eq!(
        one(r#"{"field":"port","op":"eq","valeu":"1"}"#),
        "sub_queries[0].filters[0].valeu: unknown key (did you mean \"value\"?)"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"eq","value":"1","value":"2"}"#),
        "sub_queries[0].filters[0].value: duplicate key"
    );
    assert_eq!(
        one(r#"{"op":"eq","value":"1"}"#),
        "sub_queries[0].filters[0].field: missing"
    );
    assert_eq!(
        one(r#"{"field":"port","value":"1"}"#),
        "sub_queries[0].filters[0].op: missing"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"equals","value":"1"}"#),
        "sub_queries[0].filters[0].op: unknown op \"equals\" (did you mean \"eq\"?)"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"eq","value":1}"#),
        "sub_queries[0].filters[0].value: expected a string, got an integer (values are strings whatever the field's type)"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"eq"}"#),
        "sub_queries[0].filters[0].value: eq needs a value"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"eq","values":["1"]}"#),
        "sub_queries[0].filters[0].values: eq takes value, not values"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"in","value":"1"}"#),
        "sub_queries[0].filters[0].value: in takes values, not value"
    );
    assert_eq!(
        one(r#"{"field":"host","op":"is_null","value":"1"}"#),
        "sub_queries[0].filters[0].value: is_null takes no value"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"eq","value":"1","mask":"ff"}"#),
        "sub_queries[0].filters[0].mask: eq takes no mask (only masked_eq does)"
    );
    assert_eq!(
        one(r#"{"field":"raw","op":"masked_eq","value":"ff"}"#),
        "sub_queries[0].filters[0].mask: masked_eq needs a mask"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"between","values":["1"]}"#),
        "sub_queries[0].filters[0].values: between takes exactly 2 values [lo, hi], got 1"
    );
    assert_eq!(
        one(r#"{"field":"port","op":"in","values":[]}"#),
        format!("sub_queries[0].filters[0].values: in takes 1 to {MAX_IN_VALUES} values, got 0")
    );
    let many: Vec<String> = (0..=MAX_IN_VALUES)
        .map(|i| format!("\"{}\"", i % 60000))
        .collect();
    assert!(one(&format!(
        r#"{{"field":"port","op":"in","values":[{}]}}"#,
        many.join(",")
    ))
    .contains("got 1025"));
    assert_eq!(
        one(r#"{"field":"port","op":"in","values":["1",2]}"#),
        "sub_queries[0].filters[0].values[1]: expected a string, got an integer (values are strings whatever the field's type)"
    );
}

#[test]
fn limits() {
    let sub = r#"{"filters":[{"field":"port","op":"eq","value":"1"}]}"#;
    let q16 = format!("[{}]", vec![sub; 16].join(","));
    assert!(ScanFilter::compile(&schema(), &q16).is_ok());
    let q17 = format!("[{}]", vec![sub; 17].join(","));
    assert_eq!(
        refused(&q17),
        "sub_queries: too many branches: 17 sub-queries, the limit is 16"
    );
    let f = r#"{"field":"port","op":"eq","value":"1"}"#;
    let ok = format!(r#"[{{"filters":[{}]}}]"#, vec![f; 64].join(","));
    assert!(ScanFilter::compile(&schema(), &ok).is_ok());
    let over = format!(r#"[{{"filters":[{}]}}]"#, vec![f; 65].join(","));
    assert_eq!(
        refused(&over),
        "sub_queries[0].filters: 65 filters in one sub-query, the limit is 64"
    );
    let huge = format!(
        r#"[{{"filters":[{{"field":"host","op":"eq","value":"{}"}}]}}]"#,
        "a".repeat(1 << 20)
    );
    assert!(refused(&huge).starts_with("sub_queries: "));
}

#[test]
fn schema_errors_name_their_path() {
    let cases: &[(&str, &str)] = &[
        (r#"{"field":"prto","op":"eq","value":"6"}"#, "sub_queries[0].filters[0].field: no field \"prto\" in dataset \"netflow\" (did you mean \"proto\"?)"),
        (r#"{"field":"proto","op":"eq","value":"300"}"#, "sub_queries[0].filters[0].value: 300 does not fit uint8"),
        (r#"{"field":"proto","op":"eq","value":"tcp"}"#, "sub_queries[0].filters[0].value: expected an integer (decimal or 0x hex), got \"tcp\""),
        (r#"{"field":"port","op":"eq","value":"-1"}"#, "sub_queries[0].filters[0].value: -1 does not fit uint16"),
        (r#"{"field":"ok","op":"lt","value":"true"}"#, "sub_queries[0].filters[0].op: lt is not allowed on boolean field \"ok\""),
        (r#"{"field":"ok","op":"eq","value":"yes"}"#, "sub_queries[0].filters[0].value: expected true or false, got \"yes\""),
        (r#"{"field":"port","op":"is_null"}"#, "sub_queries[0].filters[0].op: is_null is refused on uint16 field \"port\": zero is a value there, not null"),
        (r#"{"field":"amount","op":"eq","value":"1.234"}"#, "sub_queries[0].filters[0].value: 1.234 has more fractional digits than numeric(18,2) keeps (2)"),
        (r#"{"field":"amount","op":"eq","value":"1e20"}"#, "sub_queries[0].filters[0].value: 1e20 does not fit numeric(18,2)"),
        (r#"{"field":"rtt","op":"eq","value":"NaN"}"#, "sub_queries[0].filters[0].value: NaN is refused: it equals nothing, not even itself"),
        (r#"{"field":"rtt","op":"gt","value":"1e39"}"#, "sub_queries[0].filters[0].value: 1e39 does not fit float"),
        (r#"{"field":"host","op":"eq","value":"this text is too long"}"#, "sub_queries[0].filters[0].value: \"this text is too long\" is 21 bytes, string(16) holds 16"),
        (r#"{"field":"host","op":"eq","value":"a\u0000"}"#, "sub_queries[0].filters[0].value: \"a\\0\" ends in a zero byte, which stored text cannot (it is zero padding)"),
        (r#"{"field":"raw","op":"eq","value":"0102030405"}"#, "sub_queries[0].filters[0].value: \"0102030405\" is 5 bytes, bytes(4) holds 4"),
        (r#"{"field":"raw","op":"prefix","value":"xyz"}"#, "sub_queries[0].filters[0].value: expected hex, two digits a byte, got \"xyz\""),
        (r#"{"field":"fen","op":"lt","value":"00"}"#, "sub_queries[0].filters[0].op: lt is not allowed on chess_fen field \"fen\""),
        (r#"{"field":"key","op":"gt","value":"a"}"#, "sub_queries[0].filters[0].op: gt is not allowed on blob field \"key\""),
        (r#"{"field":"port","op":"prefix","value":"1"}"#, "sub_queries[0].filters[0].op: prefix is not allowed on uint16 field \"port\""),
        (r#"{"field":"port","op":"list_contains","value":"1"}"#, "sub_queries[0].filters[0].op: list_contains needs an array field; \"port\" is a plain uint16"),
        (r#"{"field":"ports","op":"list_contains","value":"70000"}"#, "sub_queries[0].filters[0].value: 70000 does not fit uint16"),
        (r#"{"field":"fen","op":"masked_eq","value":"00","mask":"zz"}"#, "sub_queries[0].filters[0].mask: expected hex, two digits a byte, got \"zz\""),
        (r#"{"field":"src","op":"eq","value":"10.0.0.1"}"#, "sub_queries[0].filters[0].value: expected an integer (decimal or 0x hex), got \"10.0.0.1\""),
        (r#"{"field":"ts","op":"between","values":["0","x"]}"#, "sub_queries[0].filters[0].values[1]: expected an integer (decimal or 0x hex), got \"x\""),
    ];
    for (filter, want) in cases {
        assert_eq!(&one(filter), want, "{filter}");
    }
    // The second sub-query's path.
    assert_eq!(
        refused(
            r#"[{"filters":[{"field":"port","op":"eq","value":"1"}]},{"filters":[{"field":"port","op":"eq","value":"1"},{"field":"proto","op":"eq","value":"300"}]}]"#
        ),
        "sub_queries[1].filters[1].value: 300 does not fit uint8"
    );
}

#[test]
fn accepted_value_forms() {
    let ok = |f: &str| {
        ScanFilter::compile(&schema(), &format!(r#"[{{"filters":[{f}]}}]"#))
            .unwrap_or_else(|e| panic!("{f}: {e}"));
    };
    ok(r#"{"field":"port","op":"eq","value":"0x1bb"}"#);
    ok(r#"{"field":"amount","op":"eq","value":"-12.50"}"#);
    ok(r#"{"field":"amount","op":"eq","value":"1.5e1"}"#);
    ok(r#"{"field":"rtt","op":"lt","value":"-inf"}"#);
    ok(r#"{"field":"raw","op":"eq","value":"0xA0"}"#);
    ok(
        r#"{"field":"fen","op":"masked_eq","value":"0000000000000000","mask":"0000000000000000ff"}"#,
    );
    ok(r#"{"field":"host","op":"prefix","value":""}"#);
}
