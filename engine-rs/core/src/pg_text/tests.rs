use super::*;

/// The rows back from DataRow messages: per row, per column, the text or None for NULL.
fn rows_of(mut b: &[u8]) -> Vec<Vec<Option<String>>> {
    let mut rows = Vec::new();
    while !b.is_empty() {
        assert_eq!(b[0], b'D');
        let len = i32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize;
        let msg = &b[5..1 + len];
        let n = i16::from_be_bytes([msg[0], msg[1]]) as usize;
        let mut at = 2;
        let mut row = Vec::new();
        for _ in 0..n {
            let l = i32::from_be_bytes([msg[at], msg[at + 1], msg[at + 2], msg[at + 3]]);
            at += 4;
            if l < 0 {
                row.push(None);
            } else {
                row.push(Some(
                    String::from_utf8(msg[at..at + l as usize].to_vec()).unwrap(),
                ));
                at += l as usize;
            }
        }
        assert_eq!(at, msg.len(), "message length covers exactly its values");
        rows.push(row);
        b = &b[1 + len..];
    }
    rows
}

fn write(cols: &[TextColumn<'_>], from: usize, to: usize) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    write_data_rows(cols, from, to, &mut out).unwrap();
    rows_of(&out)
}

fn col(cells: Cells<'_>) -> TextColumn<'_> {
    TextColumn {
        cells,
        validity: None,
    }
}

fn texts(rows: &[Vec<Option<String>>], c: usize) -> Vec<Option<&str>> {
    rows.iter().map(|r| r[c].as_deref()).collect()
}

#[test]
fn integers_of_every_width_and_sign() {
    let i8s: Vec<u8> = [-128i8, -1, 0, 127].iter().map(|v| *v as u8).collect();
    let u16s: Vec<u8> = [0u16, 1, 65535, 443]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let i32s: Vec<u8> = [i32::MIN, -5, 0, i32::MAX]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let u64s: Vec<u8> = [0u64, 1 << 53, (1 << 63) + 5, u64::MAX]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let i64s: Vec<u8> = [i64::MIN, -(1 << 53) - 1, 1_700_000_000, i64::MAX]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let cols = [
        col(Cells::Int {
            data: &i8s,
            width: 1,
            signed: true,
        }),
        col(Cells::Int {
            data: &u16s,
            width: 2,
            signed: false,
        }),
        col(Cells::Int {
            data: &i32s,
            width: 4,
            signed: true,
        }),
        col(Cells::Int {
            data: &u64s,
            width: 8,
            signed: false,
        }),
        col(Cells::Int {
            data: &i64s,
            width: 8,
            signed: true,
        }),
    ];
    let rows = write(&cols, 0, 4);
    assert_eq!(
        texts(&rows, 0),
        [Some("-128"), Some("-1"), Some("0"), Some("127")]
    );
    assert_eq!(
        texts(&rows, 1),
        [Some("0"), Some("1"), Some("65535"), Some("443")]
    );
    assert_eq!(
        texts(&rows, 2),
        [
            Some("-2147483648"),
            Some("-5"),
            Some("0"),
            Some("2147483647")
        ]
    );
    assert_eq!(
        texts(&rows, 3),
        [
            Some("0"),
            Some("9007199254740992"),
            Some("9223372036854775813"),
            Some("18446744073709551615")
        ]
    );
    assert_eq!(
        texts(&rows, 4),
        [
            Some("-9223372036854775808"),
            Some("-9007199254740993"),
            Some("1700000000"),
            Some("9223372036854775807")
        ]
    );
}

#[test]
fn floats_as_javascript_writes_them() {
    let f64s: Vec<u8> = [
        0.1,
        1e21,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        5e-324,
        123456.789,
        1e-7,
    ]
    .iter()
    .flat_map(|v: &f64| v.to_le_bytes())
    .collect();
    let rows = write(
        &[col(Cells::Float {
            data: &f64s,
            width: 8,
        })],
        0,
        9,
    );
    assert_eq!(
        texts(&rows, 0),
        [
            Some("0.1"),
            Some("1e+21"),
            Some("0"),
            Some("NaN"),
            Some("Infinity"),
            Some("-Infinity"),
            Some("5e-324"),
            Some("123456.789"),
            Some("1e-7")
        ]
    );
    // A float32 widens to the double JavaScript reads from a Float32Array.
    let f32s: Vec<u8> = [0.1f32, 2.5].iter().flat_map(|v| v.to_le_bytes()).collect();
    let rows = write(
        &[col(Cells::Float {
            data: &f32s,
            width: 4,
        })],
        0,
        2,
    );
    assert_eq!(texts(&rows, 0), [Some("0.10000000149011612"), Some("2.5")]);
}

#[test]
fn booleans_text_and_labels() {
    // Bits from offset 3: rows are bits 3, 4, 5 of 0b0010_1000 → t, f, t.
    let bits = [0b0010_1000u8];
    let offsets: Vec<u8> = [0i32, 0, 3, 7]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let data = "abcdéfg".as_bytes();
    let codes = [1u8, 0, 7];
    let cols = [
        col(Cells::Bool {
            bits: &bits,
            offset: 3,
        }),
        col(Cells::Text {
            offsets: &offsets,
            data,
        }),
        col(Cells::Labels {
            codes: &codes,
            width: 1,
            signed: false,
            labels: vec![b"tcp", b"udp"],
        }),
    ];
    let rows = write(&cols, 0, 3);
    assert_eq!(texts(&rows, 0), [Some("t"), Some("f"), Some("t")]);
    assert_eq!(texts(&rows, 1), [Some(""), Some("abc"), Some("déf")]);
    // A code the dictionary does not hold reads as NULL, as the JavaScript path wrote it.
    assert_eq!(texts(&rows, 2), [Some("udp"), Some("tcp"), None]);
    let neg = [255u8];
    let rows = write(
        &[col(Cells::Labels {
            codes: &neg,
            width: 1,
            signed: true,
            labels: vec![b"x"],
        })],
        0,
        1,
    );
    assert_eq!(texts(&rows, 0), [None]);
}

#[test]
fn nulls_from_the_validity_bits_and_a_row_range() {
    let ints: Vec<u8> = [10i32, 11, 12, 13, 14]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    // Validity from bit 1: rows 0..5 are bits 1..6 of 0b0101_1010 → 1,0,1,1,0.
    let valid = [0b0101_1010u8];
    let cols = [TextColumn {
        cells: Cells::Int {
            data: &ints,
            width: 4,
            signed: true,
        },
        validity: Some((&valid, 1)),
    }];
    let rows = write(&cols, 0, 5);
    assert_eq!(
        texts(&rows, 0),
        [Some("10"), None, Some("12"), Some("13"), None]
    );
    let rows = write(&cols, 2, 4);
    assert_eq!(texts(&rows, 0), [Some("12"), Some("13")]);
    assert!(write(&cols, 3, 3).is_empty());
}

#[test]
fn no_columns_is_a_row_of_none() {
    let rows = write(&[], 0, 2);
    assert_eq!(rows, vec![Vec::<Option<String>>::new(); 2]);
}

#[test]
fn short_or_bad_buffers_are_errors_not_panics() {
    let four = [0u8; 4];
    let err = |cols: &[TextColumn<'_>], to: usize| {
        let mut out = Vec::new();
        write_data_rows(cols, 0, to, &mut out).unwrap_err()
    };
    assert!(matches!(
        err(
            &[col(Cells::Int {
                data: &four,
                width: 8,
                signed: true
            })],
            1
        ),
        PgTextError::Column { column: 0, .. }
    ));
    assert!(matches!(
        err(
            &[col(Cells::Int {
                data: &four,
                width: 3,
                signed: true
            })],
            1
        ),
        PgTextError::Column { .. }
    ));
    assert!(matches!(
        err(
            &[col(Cells::Float {
                data: &four,
                width: 2
            })],
            1
        ),
        PgTextError::Column { .. }
    ));
    assert!(matches!(
        err(
            &[col(Cells::Bool {
                bits: &four[..1],
                offset: 7
            })],
            2
        ),
        PgTextError::Column { .. }
    ));
    let short_valid = TextColumn {
        cells: Cells::Int {
            data: &[0u8; 64],
            width: 1,
            signed: false,
        },
        validity: Some((&four[..1], 0)),
    };
    assert!(matches!(err(&[short_valid], 9), PgTextError::Column { .. }));
    // Offsets pointing past the text, going backwards, or too few of them.
    let past: Vec<u8> = [0i32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert!(matches!(
        err(
            &[col(Cells::Text {
                offsets: &past,
                data: b"abc"
            })],
            1
        ),
        PgTextError::Column { .. }
    ));
    let back: Vec<u8> = [0i32, 3, 1, 3]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert!(matches!(
        err(
            &[col(Cells::Text {
                offsets: &back,
                data: b"abc"
            })],
            3
        ),
        PgTextError::Column { .. }
    ));
    assert!(matches!(
        err(
            &[col(Cells::Text {
                offsets: &back[..4],
                data: b"abc"
            })],
            1
        ),
        PgTextError::Column { .. }
    ));
    let many = vec![
        col(Cells::Bool {
            bits: &four,
            offset: 0
        });
        40_000
    ];
    assert_eq!(err(&many, 1), PgTextError::TooManyColumns(40_000));
}

/// The CopyData messages' bodies, one string a row.
fn copy_lines(mut b: &[u8]) -> Vec<String> {
    let mut lines = Vec::new();
    while !b.is_empty() {
        assert_eq!(b[0], b'd');
        let len = i32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize;
        lines.push(String::from_utf8(b[5..1 + len].to_vec()).unwrap());
        b = &b[1 + len..];
    }
    lines
}

#[test]
fn copy_rows_are_tab_separated_with_text_escaped_and_nulls_as_backslash_n() {
    let ints: Vec<u8> = [7i64, -1, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let text = "a\tb\\c\nd\re\u{e9}\tplain";
    let offsets: Vec<u8> = [0i32, 9, 12, 17]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let valid = [0b011u8];
    let codes = [0u8, 1, 0];
    let cols = [
        col(Cells::Int {
            data: &ints,
            width: 8,
            signed: true,
        }),
        TextColumn {
            cells: Cells::Text {
                offsets: &offsets,
                data: text.as_bytes(),
            },
            validity: Some((&valid, 0)),
        },
        col(Cells::Labels {
            codes: &codes,
            width: 1,
            signed: false,
            labels: vec![b"x\ty"],
        }),
    ];
    let mut out = Vec::new();
    write_copy_rows(&cols, 0, 3, &mut out).unwrap();
    assert_eq!(
        copy_lines(&out),
        [
            "7\ta\\tb\\\\c\\nd\\re\tx\\ty\n",
            "-1\t\u{e9}\\t\t\\N\n",
            "0\t\\N\tx\\ty\n"
        ]
    );
    // A range, and no rows.
    let mut part = Vec::new();
    write_copy_rows(&cols, 1, 2, &mut part).unwrap();
    assert_eq!(copy_lines(&part), ["-1\t\u{e9}\\t\t\\N\n"]);
    let mut none = Vec::new();
    write_copy_rows(&cols, 2, 2, &mut none).unwrap();
    assert!(none.is_empty());
    // Bad buffers are errors here too.
    assert!(write_copy_rows(&cols, 0, 4, &mut Vec::new()).is_err());
}
