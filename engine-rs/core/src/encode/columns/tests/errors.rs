//! Each error kind of the columns encoder: value errors with their column and row, wrong Arrow
//! types with what the field takes instead, unknown and repeated columns, malformed buffers.

use serde_json::{json, Value};

use super::{value_error, Batch};
use crate::encode::columns::{parse_plan, ColumnError};

#[test]
fn value_errors_name_column_and_row() {
    let mut b = Batch::default();
    let cases: Vec<(&str, Value, usize, &str)> = vec![
        (
            "u8",
            b.ints(&[1, 256], 16, false, None),
            1,
            "value 256 is out of range for uint8",
        ),
        (
            "u32",
            b.ints(&[-1], 64, true, None),
            0,
            "value -1 is out of range for uint32",
        ),
        (
            "host",
            b.utf8(&[Some("ok"), Some("ok"), Some("far too long")]),
            2,
            "text is 12 bytes, the field holds 8",
        ),
        (
            "proto",
            b.utf8(&[Some("sctp")]),
            0,
            "unknown label \"sctp\" for enum proto",
        ),
        (
            "v4",
            b.utf8(&[Some("1.2.3.256")]),
            0,
            "expected an IPv4 address",
        ),
        (
            "num",
            b.decimal(&[100_000_000_000], 128, 12, 2),
            0,
            "value 1000000000.00 is out of range for numeric(10,2)",
        ),
        ("i128", b.decimal(&[-1], 256, 39, 0), 0, ""),
        (
            "ok",
            b.ints(&[2], 8, true, None),
            0,
            "expected 0 or 1 for a boolean, got 2",
        ),
        (
            "ts4",
            b.ints(&[-1], 64, true, None),
            0,
            "out of range for a 4-byte timestamp",
        ),
        ("mv", b.utf8(&[Some("Nz9")]), 0, ""),
    ];
    for (col, chunk, row, want) in cases {
        if want.is_empty() && col == "i128" {
            // int128 is signed: -1 fits. Checked here so the case list stays uniform.
            assert!(b.encode(1, vec![(col, vec![chunk])]).is_ok());
            continue;
        }
        let rows = chunk["length"].as_u64().unwrap() as usize;
        let (c, r, msg) = value_error(b.encode(rows, vec![(col, vec![chunk])]).unwrap_err());
        assert_eq!((c.as_str(), r), (col, row), "{msg}");
        assert!(msg.contains(want), "{col}: {msg}");
    }
}

#[test]
fn type_column_and_shape_errors() {
    let mut b = Batch::default();
    let mut float = b.ints(&[0], 32, true, None);
    float["type"] = json!({ "kind": "float", "bitWidth": 32 });
    let e = b.encode(1, vec![("u8", vec![float])]).unwrap_err();
    assert!(matches!(e, ColumnError::Type { .. }));
    assert_eq!(e.to_string(), "column 'u8' is Float32; a uint8 field takes an integer column (Int8..Int64, Uint8..Uint64), Decimal with scale 0, or Utf8 text");
    let scaled = b.decimal(&[1], 128, 10, 2);
    assert!(b
        .encode(1, vec![("i128", vec![scaled])])
        .unwrap_err()
        .to_string()
        .contains("is Decimal128(10, 2); a int128 field"));
    let other = json!({ "type": { "kind": "other", "name": "Struct<{a:Int32}>" }, "length": 1 });
    assert!(b
        .encode(1, vec![("ts", vec![other])])
        .unwrap_err()
        .to_string()
        .starts_with("column 'ts' is Struct<{a:Int32}>; a timestamp field takes Timestamp"));
    let text = b.utf8(&[Some("5")]);
    assert!(b
        .encode(1, vec![("dt", vec![text])])
        .unwrap_err()
        .to_string()
        .contains("the absolute time as an integer"));
    let x = b.ints(&[1], 8, true, None);
    let e = b.encode(1, vec![("nope", vec![x.clone()])]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "column 'nope' is not a field of dataset 'cols'"
    );
    assert_eq!(e.column(), "nope");
    assert!(b
        .encode(1, vec![("u8", vec![x.clone()]), ("u8", vec![x.clone()])])
        .unwrap_err()
        .to_string()
        .contains("appears twice"));
    // Shape: wrong row count, short buffers, offsets past the data, a missing buffer.
    assert!(b
        .encode(2, vec![("u8", vec![x.clone()])])
        .unwrap_err()
        .to_string()
        .contains("holds 1 values, the batch 2 rows"));
    let mut short = x.clone();
    short["length"] = json!(9);
    assert!(matches!(
        b.encode(9, vec![("u8", vec![short])]).unwrap_err(),
        ColumnError::Shape { .. }
    ));
    let mut bad = b.utf8(&[Some("ab")]);
    let offsets = b.buf([0i32, 99].iter().flat_map(|x| x.to_le_bytes()).collect());
    bad["offsets"] = json!(offsets);
    let e = b.encode(1, vec![("host", vec![bad])]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "column 'host': malformed Arrow data: row 0: the offsets point outside the data buffer"
    );
    let mut missing = x;
    missing["values"] = json!(999);
    assert!(b
        .encode(1, vec![("u8", vec![missing])])
        .unwrap_err()
        .to_string()
        .contains("values buffer 999 was not passed"));
    assert!(matches!(b.encode(1, vec![]).map(|_| ()), Ok(())));
    assert!(parse_plan("{\"rows\": 1}").is_err());
}

#[test]
fn a_row_count_past_memory_is_an_error_not_an_abort() {
    let b = Batch::default();
    let e = b.encode(1 << 50, vec![]).unwrap_err();
    assert!(matches!(e, ColumnError::Plan(_)), "{e:?}");
    assert!(e.to_string().starts_with("cannot allocate"), "{e}");
    let e = b.encode(usize::MAX / 2, vec![]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{} rows are too many", usize::MAX / 2)
    );
}

fn rand(r: &mut u64) -> u64 {
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    *r
}

fn pick<T: Copy>(r: &mut u64, of: &[T]) -> T {
    of[(rand(r) % of.len() as u64) as usize]
}

/// A random chunk description over random buffers.
fn garbage_chunk(r: &mut u64, b: &mut Batch, depth: u32) -> Value {
    let ty = match rand(r) % 12 {
        0 => {
            json!({ "kind": "int", "bitWidth": pick(r, &[8, 16, 32, 64]), "signed": rand(r).is_multiple_of(2) })
        }
        1 => json!({ "kind": "float", "bitWidth": pick(r, &[16, 32, 64]) }),
        2 => json!({ "kind": "bool" }),
        3 => {
            json!({ "kind": "decimal", "bitWidth": pick(r, &[128, 256]), "precision": 20, "scale": rand(r) % 5 })
        }
        4 => json!({ "kind": pick(r, &["utf8", "largeUtf8", "binary", "largeBinary"]) }),
        5 => json!({ "kind": "fixedSizeBinary", "byteWidth": rand(r) % 20 }),
        6 => json!({ "kind": "timestamp", "unit": "ms" }),
        7 => json!({ "kind": "date", "unit": "day" }),
        8 => json!({ "kind": "dictionary", "bitWidth": 8, "signed": true }),
        9 => json!({ "kind": pick(r, &["list", "largeList"]) }),
        10 => json!({ "kind": "fixedSizeList", "listSize": rand(r) % 4 }),
        _ => json!({ "kind": "null" }),
    };
    let len = (rand(r) % 12) as usize;
    let mut garbage = |n: usize| -> usize {
        let bytes = (0..n).map(|_| rand(r) as u8).collect();
        b.buf(bytes)
    };
    let (values, offsets, validity) = (garbage(len * 9), garbage((len + 1) * 5), garbage(3));
    let mut c = json!({ "type": ty, "length": len, "offset": len % 5,
        "values": values, "offsets": offsets, "validity": validity });
    if depth < 2 {
        c["child"] = garbage_chunk(r, b, depth + 1);
    }
    if r.is_multiple_of(3) {
        c["dictionary"] = json!(0);
    }
    c
}

#[test]
fn garbage_arrow_data_never_panics() {
    let mut r = 0x9e37_79b9_7f4a_7c15u64;
    let names = [
        "ts", "proto", "u8", "num", "host", "v6", "mv", "dt", "ports", "tags", "ok",
    ];
    let (mut ok, mut failed) = (0, 0);
    for i in 0..3000 {
        let mut b = Batch::default();
        let dict = garbage_chunk(&mut r, &mut b, 2);
        b.dictionaries.push(json!([dict]));
        let c = garbage_chunk(&mut r, &mut b, 0);
        let rows = c["length"].as_u64().unwrap_or(0) as usize;
        match b.encode(rows, vec![(names[i % names.len()], vec![c])]) {
            Ok(out) => {
                assert_eq!(out.len(), rows * 128);
                ok += 1;
            }
            Err(_) => failed += 1,
        }
    }
    assert!(ok > 0 && failed > 0, "{ok} encoded, {failed} refused");
}
