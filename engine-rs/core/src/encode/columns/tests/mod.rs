//! Columns → records: every conversion against the text encoder, nulls, chunks and bit offsets,
//! block boundaries, delta time, arrays, and each error kind with its column and row.

use serde_json::{json, Value};

mod errors;
mod fast_paths;

use super::*;
use crate::schema::parse;

const SCHEMA: &str = r#"{
  "id": "cols", "record_size": 128, "time_field": "ts", "byte_order": "little",
  "enums": { "proto": { "values": { "icmp": 1, "tcp": 6, "udp": 17 }, "default_label": "other" } },
  "fields": [
    { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
    { "name": "proto", "offset": 8, "size": 1, "type": "uint8", "enum": "proto" },
    { "name": "u8", "offset": 9, "size": 1, "type": "uint8" },
    { "name": "i16", "offset": 10, "size": 2, "type": "int16" },
    { "name": "u32", "offset": 12, "size": 4, "type": "uint32" },
    { "name": "i128", "offset": 16, "size": 16, "type": "int128" },
    { "name": "num", "offset": 32, "size": 8, "type": "numeric", "precision": 10, "scale": 2 },
    { "name": "f", "offset": 40, "size": 4, "type": "float" },
    { "name": "d", "offset": 44, "size": 8, "type": "double" },
    { "name": "ok", "offset": 52, "size": 1, "type": "boolean" },
    { "name": "host", "offset": 53, "size": 8, "type": "string" },
    { "name": "raw", "offset": 61, "size": 4, "type": "bytes" },
    { "name": "v4", "offset": 65, "size": 4, "type": "ipv4" },
    { "name": "v6", "offset": 69, "size": 16, "type": "ipv6" },
    { "name": "mv", "offset": 85, "size": 2, "type": "chess_move" },
    { "name": "dt", "offset": 87, "size": 4, "type": "uint32", "time_reference": { "field": "ts", "unit": "ms" } },
    { "name": "ports", "offset": 91, "size": 8, "type": "bytes", "array": { "element": "uint16", "count": 4 } },
    { "name": "ts4", "offset": 99, "size": 4, "type": "timestamp" },
    { "name": "tags", "offset": 103, "size": 3, "type": "bytes", "array": { "element": "uint8", "count": 3, "enum": "proto" } }
  ]
}"#;

/// Buffers and dictionaries of a plan under construction.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) buffers: Vec<Vec<u8>>,
    pub(super) dictionaries: Vec<Value>,
}

impl Batch {
    pub(super) fn buf(&mut self, b: Vec<u8>) -> usize {
        self.buffers.push(b);
        self.buffers.len() - 1
    }

    /// A validity bitmap from `valid` (None: no bitmap), starting at bit `offset`.
    pub(super) fn validity(&mut self, valid: Option<&[bool]>, offset: usize) -> Value {
        match valid {
            None => Value::Null,
            Some(v) => {
                let mut b = vec![0u8; (offset + v.len()).div_ceil(8) + 1];
                for (i, ok) in v.iter().enumerate() {
                    let p = offset + i;
                    b[p / 8] |= u8::from(*ok) << (p % 8);
                }
                json!(self.buf(b))
            }
        }
    }

    pub(super) fn ints(
        &mut self,
        vals: &[i128],
        bits: u8,
        signed: bool,
        valid: Option<&[bool]>,
    ) -> Value {
        let w = bits as usize / 8;
        let data = vals
            .iter()
            .flat_map(|v| v.to_le_bytes()[..w].to_vec())
            .collect();
        let (values, validity) = (self.buf(data), self.validity(valid, 0));
        json!({ "type": { "kind": "int", "bitWidth": bits, "signed": signed }, "length": vals.len(), "values": values, "validity": validity })
    }

    pub(super) fn strings(&mut self, vals: &[Option<&str>], kind: &str) -> Value {
        let (mut offsets, mut data) = (vec![0i32], Vec::new());
        for v in vals {
            data.extend_from_slice(v.unwrap_or("").as_bytes());
            offsets.push(data.len() as i32);
        }
        let valid: Vec<bool> = vals.iter().map(Option::is_some).collect();
        let o = self.buf(offsets.iter().flat_map(|x| x.to_le_bytes()).collect());
        let (d, validity) = (self.buf(data), self.validity(Some(&valid), 0));
        json!({ "type": { "kind": kind }, "length": vals.len(), "values": d, "offsets": o, "validity": validity })
    }

    pub(super) fn utf8(&mut self, vals: &[Option<&str>]) -> Value {
        self.strings(vals, "utf8")
    }

    pub(super) fn decimal(&mut self, vals: &[i128], bits: u16, precision: u8, scale: i32) -> Value {
        let data: Vec<u8> = vals
            .iter()
            .flat_map(|v| {
                let mut b = v.to_le_bytes().to_vec();
                if bits == 256 {
                    b.extend_from_slice(&[if *v < 0 { 0xff } else { 0 }; 16]);
                }
                b
            })
            .collect();
        let values = self.buf(data);
        json!({ "type": { "kind": "decimal", "bitWidth": bits, "precision": precision, "scale": scale }, "length": vals.len(), "values": values })
    }

    pub(super) fn encode(
        &self,
        rows: usize,
        columns: Vec<(&str, Vec<Value>)>,
    ) -> Result<Vec<u8>, ColumnError> {
        let cols: Vec<Value> = columns
            .into_iter()
            .map(|(n, c)| json!({ "name": n, "chunks": c }))
            .collect();
        let plan = json!({ "rows": rows, "columns": cols, "dictionaries": self.dictionaries });
        let plan = parse_plan(&plan.to_string()).map_err(ColumnError::Plan)?;
        let bufs: Vec<&[u8]> = self.buffers.iter().map(Vec::as_slice).collect();
        encode_columns(&parse(SCHEMA).unwrap(), &plan, &bufs)
    }
}

fn encoder() -> RecordEncoder {
    RecordEncoder::new(&parse(SCHEMA).unwrap())
}

/// The record `convert_record_to_binary` writes for these text values.
pub(super) fn by_text(pairs: &[(&str, &str)]) -> Vec<u8> {
    let (rec, errors) = encoder().convert_record_to_binary(pairs.iter().copied());
    assert!(errors.is_empty(), "{errors:?}");
    rec
}

pub(super) fn value_error(e: ColumnError) -> (String, usize, String) {
    match e {
        ColumnError::Value {
            column,
            row,
            message,
        } => (column, row, message),
        other => panic!("expected a value error, got {other:?}"),
    }
}

#[test]
fn typed_columns_match_the_text_encoder() {
    let mut b = Batch::default();
    let cols = vec![
        ("ts", vec![b.ints(&[1_700_000_000, -5], 64, true, None)]),
        ("proto", vec![b.utf8(&[Some("udp"), Some("6")])]),
        ("u8", vec![b.ints(&[255, 0], 32, false, None)]),
        ("i16", vec![b.ints(&[-32768, 7], 16, true, None)]),
        ("u32", vec![b.ints(&[4_294_967_295, 1], 64, true, None)]),
        ("i128", vec![b.decimal(&[i128::MIN, 42], 256, 39, 0)]),
        (
            "num",
            vec![b.decimal(&[-12_345, 9_999_999_999], 128, 12, 3)],
        ),
        ("f", vec![b.ints(&[3, -1], 8, true, None)]),
        ("ok", vec![b.ints(&[1, 0], 8, false, None)]),
        ("host", vec![b.utf8(&[Some("héllo"), Some("")])]),
        (
            "raw",
            vec![b.strings(&[Some("\u{1}\u{2}"), Some("abcd")], "binary")],
        ),
        ("v4", vec![b.utf8(&[Some("10.0.0.1"), Some("167772162")])]),
        (
            "v6",
            vec![b.utf8(&[Some("2001:db8::1"), Some("::ffff:1.2.3.4")])],
        ),
        ("mv", vec![b.utf8(&[Some("exd8=Q+"), Some("O-O")])]),
        (
            "ts4",
            vec![b.utf8(&[Some("2024-01-01T00:00:00Z"), Some("4294967295")])],
        ),
    ];
    let got = b.encode(2, cols).unwrap();
    let want = [
        by_text(&[
            ("ts", "1700000000"),
            ("proto", "udp"),
            ("u8", "255"),
            ("i16", "-32768"),
            ("u32", "4294967295"),
            ("i128", "-170141183460469231731687303715884105728"),
            ("num", "-12.35"),
            ("f", "3"),
            ("ok", "true"),
            ("host", "héllo"),
            ("raw", "0102"),
            ("v4", "10.0.0.1"),
            ("v6", "2001:db8::1"),
            ("mv", "exd8=Q+"),
            ("ts4", "2024-01-01T00:00:00Z"),
        ]),
        by_text(&[
            ("ts", "-5"),
            ("proto", "tcp"),
            ("u8", "0"),
            ("i16", "7"),
            ("u32", "1"),
            ("i128", "42"),
            ("num", "10000000.00"),
            ("f", "-1"),
            ("ok", "false"),
            ("raw", "61626364"),
            ("v4", "10.0.0.2"),
            ("v6", "::ffff:1.2.3.4"),
            ("mv", "O-O"),
            ("ts4", "4294967295"),
        ]),
    ]
    .concat();
    assert_eq!(got, want);
}

#[test]
fn nulls_write_zeros_and_absent_fields_stay_zero() {
    let mut b = Batch::default();
    let valid = [true, false, true];
    let cols = vec![
        ("u32", vec![b.ints(&[1, 2, 3], 32, false, Some(&valid))]),
        ("host", vec![b.utf8(&[None, Some("x"), None])]),
    ];
    let got = b.encode(3, cols).unwrap();
    let want = [
        by_text(&[("u32", "1")]),
        by_text(&[("host", "x")]),
        by_text(&[("u32", "3")]),
    ]
    .concat();
    assert_eq!(got, want);
    assert_eq!(b.encode(2, vec![]).unwrap(), vec![0u8; 256]);
}

#[test]
fn bit_offsets_dictionaries_and_chunks() {
    let mut b = Batch::default();
    // A Bool chunk sliced at bit 3 with a validity bitmap at the same offset.
    let bits = b.buf(vec![0b1010_1000, 0b0000_0001]);
    let validity = b.validity(Some(&[true, true, false, true, true, true]), 3);
    let ok = json!({ "type": { "kind": "bool" }, "length": 6, "offset": 3, "values": bits, "validity": validity });
    // Labels through a dictionary split over two chunks; the proto column in two chunks.
    let (l1, l2) = (b.utf8(&[Some("icmp"), Some("tcp")]), b.utf8(&[Some("udp")]));
    b.dictionaries.push(json!([l1, l2]));
    let idx = |b: &mut Batch, v: &[i128]| {
        let mut c = b.ints(v, 8, true, None);
        c["type"]["kind"] = json!("dictionary");
        c["dictionary"] = json!(0);
        c
    };
    let (p1, p2) = (idx(&mut b, &[2, 0]), idx(&mut b, &[1, 1, 2, 0]));
    let empty = b.ints(&[], 8, true, None);
    let got = b
        .encode(6, vec![("ok", vec![ok]), ("proto", vec![p1, empty, p2])])
        .unwrap();
    let want: Vec<u8> = [
        ("true", "udp"),
        ("false", "icmp"),
        ("", "tcp"),
        ("false", "tcp"),
        ("true", "udp"),
        ("true", "icmp"),
    ]
    .iter()
    .flat_map(|(ok, p)| by_text(&[("ok", ok), ("proto", p)]))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn many_rows_cross_block_boundaries() {
    // 256 KiB / 128 B = 2048 records a block; chunks of odd sizes straddle the boundaries.
    let n = 5000usize;
    let mut b = Batch::default();
    let mut chunks = Vec::new();
    let mut at = 0;
    for size in [1usize, 2046, 3, 1999, 951] {
        let vals: Vec<i128> = (at..at + size).map(|i| i as i128 * 3).collect();
        chunks.push(b.ints(&vals, 64, false, None));
        at += size;
    }
    assert_eq!(at, n);
    let got = b.encode(n, vec![("u32", chunks)]).unwrap();
    for i in 0..n {
        let v = u32::from_le_bytes(got[i * 128 + 12..i * 128 + 16].try_into().unwrap());
        assert_eq!(v as usize, i * 3, "row {i}");
    }
}

#[test]
fn delta_time_is_written_after_its_source() {
    let mut b = Batch::default();
    let mut abs = b.ints(&[1_700_000_000_123, 0], 64, true, None);
    abs["type"] = json!({ "kind": "timestamp", "unit": "ms" });
    // The source column comes after the delta column in the batch: order does not matter.
    let ts = b.ints(&[1_700_000_000, 0], 64, true, None);
    let got = b
        .encode(2, vec![("dt", vec![abs]), ("ts", vec![ts])])
        .unwrap();
    assert_eq!(
        got,
        [
            by_text(&[("ts", "1700000000"), ("dt", "123")]),
            by_text(&[])
        ]
        .concat()
    );
    // Seconds given as a Timestamp(s) against a ms delta: 2 s past the source is 2000 ms.
    let mut secs = b.ints(&[2], 64, true, None);
    secs["type"] = json!({ "kind": "timestamp", "unit": "s" });
    assert_eq!(
        &b.encode(1, vec![("dt", vec![secs])]).unwrap()[87..91],
        &2000u32.to_le_bytes()
    );
    // A time before its source does not fit the unsigned delta.
    let early = b.ints(&[5], 64, true, None);
    let src = b.ints(&[1], 64, true, None);
    let (col, row, msg) = value_error(
        b.encode(1, vec![("dt", vec![early]), ("ts", vec![src])])
            .unwrap_err(),
    );
    assert_eq!((col.as_str(), row), ("dt", 0));
    assert!(
        msg.contains("lies -995 ms from field 'ts' (1)") && msg.contains("out of range for uint32"),
        "{msg}"
    );
}

#[test]
fn arrays_from_lists_text_and_bytes() {
    let mut b = Batch::default();
    let child = b.ints(
        &[80, 443, 1, 2, 3, 4, 9],
        32,
        true,
        Some(&[true, true, true, false, true, true, true]),
    );
    let offsets = b.buf(
        [0i32, 2, 2, 6, 7]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect(),
    );
    let validity = b.validity(Some(&[true, false, true, true]), 0);
    let list = json!({ "type": { "kind": "list" }, "length": 4, "offsets": offsets, "validity": validity, "child": child });
    let tags = b.utf8(&[Some("[tcp, udp]"), None, Some("icmp"), Some("")]);
    let got = b
        .encode(4, vec![("ports", vec![list]), ("tags", vec![tags])])
        .unwrap();
    let want = [
        by_text(&[("ports", "[80, 443]"), ("tags", "[tcp, udp]")]),
        by_text(&[]),
        by_text(&[("ports", "1,,3,4"), ("tags", "icmp")]),
        by_text(&[("ports", "9")]),
    ]
    .concat();
    assert_eq!(got, want);
    // FixedSizeList of labels through a dictionary.
    let labels = b.utf8(&[Some("tcp"), Some("udp")]);
    b.dictionaries.push(json!([labels]));
    let mut idx = b.ints(&[0, 1, 1, 1, 0, 0], 32, true, None);
    idx["type"]["kind"] = json!("dictionary");
    idx["dictionary"] = json!(0);
    let fixed =
        json!({ "type": { "kind": "fixedSizeList", "listSize": 3 }, "length": 2, "child": idx });
    let got = b.encode(2, vec![("tags", vec![fixed])]).unwrap();
    assert_eq!(
        got,
        [
            by_text(&[("tags", "tcp,udp,udp")]),
            by_text(&[("tags", "udp,tcp,tcp")])
        ]
        .concat()
    );
    // Too many elements.
    let child = b.ints(&[1, 2, 3, 4, 5], 16, false, None);
    let offsets = b.buf([0i32, 5].iter().flat_map(|x| x.to_le_bytes()).collect());
    let long =
        json!({ "type": { "kind": "list" }, "length": 1, "offsets": offsets, "child": child });
    let (_, _, msg) = value_error(b.encode(1, vec![("ports", vec![long])]).unwrap_err());
    assert_eq!(msg, "the list has 5 elements, the field holds 4");
}

#[test]
fn floats_decimals_and_times_convert() {
    let mut b = Batch::default();
    let mut half = b.ints(&[0x3c00, 0xc000], 16, false, None);
    half["type"] = json!({ "kind": "float", "bitWidth": 16 });
    let mut f64s = b.ints(
        &[i128::from(1.25f64.to_bits()), i128::from(0.1f64.to_bits())],
        64,
        false,
        None,
    );
    f64s["type"] = json!({ "kind": "float", "bitWidth": 64 });
    let mut ts = b.ints(&[-1, 1_500], 64, true, None);
    ts["type"] = json!({ "kind": "timestamp", "unit": "ms" });
    let mut day = b.ints(&[1, 0], 32, true, None);
    day["type"] = json!({ "kind": "date", "unit": "day" });
    let mut prices = b.ints(
        &[
            i128::from(12.345f64.to_bits()),
            i128::from((-0.005f64).to_bits()),
        ],
        64,
        false,
        None,
    );
    prices["type"] = json!({ "kind": "float", "bitWidth": 64 });
    let cols = vec![
        ("f", vec![half]),
        ("d", vec![f64s]),
        ("ts", vec![ts]),
        ("ts4", vec![day]),
        ("num", vec![prices]),
    ];
    let got = b.encode(2, cols).unwrap();
    let want = [
        by_text(&[
            ("f", "1"),
            ("d", "1.25"),
            ("ts", "-1"),
            ("ts4", "86400"),
            ("num", "12.35"),
        ]),
        by_text(&[("f", "-2"), ("d", "0.1"), ("ts", "1"), ("num", "-0.01")]),
    ]
    .concat();
    assert_eq!(got, want);
    // Date32 -1 is before 1970: out of range for the 4-byte timestamp.
    let mut day = b.ints(&[-1], 32, true, None);
    day["type"] = json!({ "kind": "date", "unit": "day" });
    assert!(b.encode(1, vec![("ts4", vec![day])]).is_err());
    assert_eq!(raw::half_to_f32(0x0001), f32::from_bits(0x3380_0000));
    assert!(raw::half_to_f32(0x7e00).is_nan());
    assert_eq!(raw::half_to_f32(0xfc00), f32::NEG_INFINITY);
    assert_eq!(scalar::decimal_text_for_test(-5, 3), "-0.005");
    assert_eq!(scalar::decimal_text_for_test(12_345, 0), "12345");
}

#[test]
fn big_endian_records() {
    let schema = parse(r#"{ "id": "be", "record_size": 12, "byte_order": "big", "time_field": "ts",
        "fields": [{ "name": "ts", "offset": 0, "size": 8, "type": "timestamp" }, { "name": "a", "offset": 8, "size": 4, "type": "ipv4" }] }"#).unwrap();
    let mut b = Batch::default();
    let ts = b.ints(&[1], 64, true, None);
    let a = b.utf8(&[Some("10.0.0.1")]);
    let plan = json!({ "rows": 1, "columns": [{ "name": "ts", "chunks": [ts] }, { "name": "a", "chunks": [a] }] });
    let bufs: Vec<&[u8]> = b.buffers.iter().map(Vec::as_slice).collect();
    let got = encode_columns(&schema, &parse_plan(&plan.to_string()).unwrap(), &bufs).unwrap();
    assert_eq!(got, [0, 0, 0, 0, 0, 0, 0, 1, 10, 0, 0, 1]);
}
