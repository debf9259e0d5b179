//! Projection: decoding only some fields gives exactly those columns of the full decode.

use super::*;

/// Four fields of different builders (integer, text, an ipv4 as text, an enum) over 3 records.
fn mixed() -> (Schema, Vec<u8>) {
    let mut p = field("p", 13, 1, FieldType::UInt(8));
    p.enumeration = Some(0);
    let s = schema(
        14,
        ByteOrder::Little,
        vec![
            field("n", 0, 4, FieldType::UInt(32)),
            field("s", 4, 5, FieldType::String),
            field("ip", 9, 4, FieldType::Ipv4),
            p,
        ],
        vec![proto_enum()],
    );
    let mut recs = Vec::new();
    for k in 0u8..3 {
        recs.extend_from_slice(&u32::from(k).to_le_bytes());
        recs.extend_from_slice(&[b'a' + k, b'b', 0, 0, 0]);
        recs.extend_from_slice(&[192, 0, 2, k]);
        recs.push([6u8, 17, 99][k as usize]);
    }
    (s, recs)
}

#[test]
fn projected_columns_equal_the_full_decode_in_the_order_given() {
    let (s, recs) = mixed();
    let full = decode_columns(&s, &recs).expect("full");
    for names in [
        vec!["p", "n"],
        vec!["ip"],
        vec!["n", "s", "ip", "p"],
        vec!["s", "p", "ip"],
    ] {
        let ix = projection(&s, &names).expect("projection");
        let got = decode_columns_projected(&s, &recs, &DecodeOptions::default(), Some(&ix))
            .expect("projected");
        assert_eq!(got.rows, 3);
        let want: Vec<Column> = ix.iter().map(|&i| full.columns[i].clone()).collect();
        assert_eq!(got.columns, want, "{names:?}");
    }
}

#[test]
fn an_empty_projection_counts_rows_and_decodes_nothing() {
    let (s, recs) = mixed();
    let none: [&str; 0] = [];
    let ix = projection(&s, &none).expect("empty");
    let got = decode_columns_projected(&s, &recs, &DecodeOptions::default(), Some(&ix))
        .expect("projected");
    assert_eq!(got.rows, 3);
    assert!(got.columns.is_empty());
}

#[test]
fn unknown_or_repeated_names_are_clear_errors() {
    let (s, _) = mixed();
    let err = projection(&s, &["n", "nope"]).unwrap_err();
    assert!(matches!(&err, DecodeError::Schema { field, .. } if field == "nope"));
    let msg = err.to_string();
    assert!(
        msg.contains("'nope'") && msg.contains("no such field") && msg.contains("n, s, ip, p"),
        "{msg}"
    );
    let err = projection(&s, &["s", "s"]).unwrap_err();
    assert!(err.to_string().contains("named twice"), "{err}");
    // Field names are exact (the schema's spelling).
    assert!(projection(&s, &["N"]).is_err());
}

#[test]
fn an_index_out_of_range_is_an_error_not_a_panic() {
    let (s, recs) = mixed();
    let err =
        decode_columns_projected(&s, &recs, &DecodeOptions::default(), Some(&[7])).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

#[test]
fn the_record_length_is_still_checked() {
    let (s, recs) = mixed();
    let ix = projection(&s, &["n"]).expect("projection");
    assert!(matches!(
        decode_columns_projected(&s, &recs[..20], &DecodeOptions::default(), Some(&ix)),
        Err(DecodeError::RecordLength { .. })
    ));
}
