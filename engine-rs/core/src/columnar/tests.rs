//! Columnar bodies: every decoded column type written and read back unchanged, and every kind of
//! malformation refused with its code (never a panic, never a column that lies about its bytes).

use super::*;
use crate::schema::parse;

/// A schema of every column shape: integers, a wide integer, decimal, float, bool, bytes, text,
/// addresses, chess, an enum, and arrays.
pub(super) fn wide_schema() -> Schema {
    parse(
        r#"{"id":"c","record_size":96,"byte_order":"little","time_field":"ts",
        "enums":{"proto":{"values":{"tcp":6,"udp":17},"default_label":"other"}},
        "fields":[
          {"name":"ts","offset":0,"size":8,"type":"timestamp"},
          {"name":"u8","offset":8,"size":1,"type":"uint8"},
          {"name":"proto","offset":9,"size":1,"type":"uint8","enum":"proto"},
          {"name":"b","offset":10,"size":1,"type":"boolean"},
          {"name":"mv","offset":11,"size":2,"type":"chess_move"},
          {"name":"v4","offset":13,"size":4,"type":"ipv4"},
          {"name":"u128","offset":17,"size":16,"type":"uint128"},
          {"name":"n","offset":33,"size":8,"type":"numeric","precision":18,"scale":4},
          {"name":"d","offset":41,"size":8,"type":"double"},
          {"name":"s","offset":49,"size":10,"type":"string"},
          {"name":"raw","offset":59,"size":5,"type":"bytes"},
          {"name":"v6","offset":64,"size":16,"type":"ipv6"},
          {"name":"a","offset":80,"size":8,"type":"bytes","array":{"element":"uint16","count":4,"enum":"proto"}},
          {"name":"i256","offset":88,"size":8,"type":"int64"}
        ]}"#,
    )
    .expect("schema")
}

pub(super) fn records(rows: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..rows * 96)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn all(s: &Schema) -> Vec<usize> {
    (0..s.fields.len()).collect()
}

#[test]
fn round_trip_equals_the_decode() {
    let s = wide_schema();
    let recs = records(37, 7);
    for opts in [
        DecodeOptions::default(),
        DecodeOptions {
            addresses: Addresses::Raw,
        },
    ] {
        for fields in [all(&s), vec![9, 0, 12], vec![5], vec![]] {
            let body = encode_columnar(&s, &recs, &fields, &opts, None).expect("encode");
            let got = read_columnar(&s, &fields, &opts, Some(37), &body).expect("read");
            let want = decode_columns_projected(&s, &recs, &opts, Some(&fields)).expect("decode");
            assert_eq!(got, want);
        }
    }
}

#[test]
fn the_mask_applies_before_the_decode() {
    let s = wide_schema();
    let recs = records(5, 3);
    let mut mask = vec![0xffu8; 96];
    mask[13..17].fill(0); // v4 hidden
    let body = encode_columnar(&s, &recs, &[5], &DecodeOptions::default(), Some(&mask)).unwrap();
    let got = read_columnar(&s, &[5], &DecodeOptions::default(), Some(5), &body).unwrap();
    let mut masked = recs.clone();
    crate::policy::apply_field_mask(&mut masked, &mask).unwrap();
    let want =
        decode_columns_projected(&s, &masked, &DecodeOptions::default(), Some(&[5])).unwrap();
    assert_eq!(got, want);
    // Every address reads 0.0.0.0.
    let text = std::str::from_utf8(&got.columns[0].data).unwrap();
    assert_eq!(text, "0.0.0.0".repeat(5));
}

fn code(r: Result<Columns, ColumnarError>) -> &'static str {
    r.err().map(|e| e.code()).unwrap_or("ok")
}

#[test]
fn malformed_bodies_are_refused_with_a_code() {
    let s = wide_schema();
    let opts = DecodeOptions::default();
    let f = all(&s);
    let body = encode_columnar(&s, &records(9, 11), &f, &opts, None).unwrap();
    let read = |b: &[u8]| read_columnar(&s, &f, &opts, Some(9), b);
    assert_eq!(code(read(&body)), "ok");
    // Every truncation fails, none panics.
    for n in 0..body.len() {
        assert_ne!(code(read(&body[..n])), "ok", "cut at {n}");
    }
    let mut b = body.clone();
    b[0] = 2;
    assert_eq!(code(read(&b)), "ERR_COLUMNAR_UNSUPPORTED");
    let mut b = body.clone();
    b[1] = 0x80;
    assert_eq!(code(read(&b)), "ERR_COLUMNAR_UNSUPPORTED");
    let mut b = body.clone();
    b[1] = FLAG_RAW_ADDRESSES;
    assert_eq!(code(read(&b)), "ERR_COLUMNAR_PROJECTION");
    assert_eq!(
        code(read_columnar(&s, &f, &opts, Some(8), &body)),
        "ERR_COLUMNAR_PROJECTION"
    );
    assert_eq!(
        code(read_columnar(&s, &f[1..], &opts, Some(9), &body)),
        "ERR_COLUMNAR_PROJECTION"
    );
    let mut b = body.clone();
    b.push(0);
    assert_eq!(code(read(&b)), "ERR_COLUMNAR_TRAILING");
    // Every single-byte flip after the projection header is refused or reads columns whose
    // buffers still check out (a flipped value byte is a different value, not a malformation).
    for i in 8..body.len() {
        let mut b = body.clone();
        b[i] ^= 0xff;
        if let Ok(c) = read(&b) {
            assert_eq!(c.rows, 9);
        }
    }
}

#[test]
fn shape_errors_name_the_column() {
    let s = wide_schema();
    let opts = DecodeOptions::default();
    // proto alone: a dictionary index past the labels.
    let mut body = encode_columnar(&s, &records(2, 5), &[2], &opts, None).unwrap();
    let at = body.len() - 4;
    body[at..].copy_from_slice(&99i32.to_le_bytes());
    let e = read_columnar(&s, &[2], &opts, Some(2), &body).unwrap_err();
    assert_eq!(e.code(), "ERR_COLUMNAR_SHAPE");
    assert!(e.to_string().contains("'proto'"), "{e}");
    // s alone: an offset past the data.
    let cols = decode_columns_projected(&s, &records(2, 5), &opts, Some(&[9])).unwrap();
    let mut c = cols.clone();
    let o = c.columns[0].offsets.as_mut().unwrap();
    let n = o.len();
    o[n - 4..].copy_from_slice(&1000i32.to_le_bytes());
    let body = write_columnar(&c, &[9], &opts);
    assert_eq!(
        code(read_columnar(&s, &[9], &opts, Some(2), &body)),
        "ERR_COLUMNAR_SHAPE"
    );
    // Invalid UTF-8 in a text column.
    let mut c = cols;
    if !c.columns[0].data.is_empty() {
        c.columns[0].data[0] = 0xff;
        let body = write_columnar(&c, &[9], &opts);
        assert_eq!(
            code(read_columnar(&s, &[9], &opts, Some(2), &body)),
            "ERR_COLUMNAR_SHAPE"
        );
    }
}
