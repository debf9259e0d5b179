//! The per-type cases of the op tests: a pool of record values per type (edges included),
//! operands no record holds, a one-field schema in either byte order, and the reference value of
//! a text.

use super::reference::{hex, int, numeric, V};
use crate::encode::RecordEncoder;
use crate::scan::FilterOp;
use crate::schema::{parse, Schema};

/// How records are written and values read for one type.
pub(super) struct Case {
    pub(super) ty: &'static str,
    pub(super) size: usize,
    pub(super) extra: &'static str,
    pub(super) pool: Vec<String>,
    /// Operand texts beyond the pool (values no record holds).
    pub(super) more: Vec<String>,
}

fn s(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|x| x.to_string()).collect()
}

pub(super) fn cases() -> Vec<Case> {
    let c = |ty, size, extra, pool: &[&str], more: &[&str]| Case {
        ty,
        size,
        extra,
        pool: s(pool),
        more: s(more),
    };
    let max256 = format!("0x{}", "f".repeat(64));
    let min_i256 = format!("-0x8{}", "0".repeat(63));
    let max_i256 = format!("0x7{}", "f".repeat(63));
    let mut out = vec![
        c(
            "uint8",
            1,
            "",
            &["0", "1", "7", "128", "255", "42"],
            &["3", "200"],
        ),
        c(
            "uint16",
            2,
            "",
            &["0", "1", "300", "65535", "1000", "256"],
            &["2", "40000"],
        ),
        c(
            "uint32",
            4,
            "",
            &["0", "1", "70000", "4294967295", "123456", "16777216"],
            &["5", "0x10000"],
        ),
        c(
            "uint64",
            8,
            "",
            &[
                "0",
                "1",
                "18446744073709551615",
                "9223372036854775808",
                "5",
                "4294967296",
            ],
            &["6", "9223372036854775807"],
        ),
        c(
            "uint128",
            16,
            "",
            &[
                "0",
                "1",
                "340282366920938463463374607431768211455",
                "18446744073709551616",
                "99",
                "170141183460469231731687303715884105728",
            ],
            &["100", "18446744073709551615"],
        ),
        c(
            "int8",
            1,
            "",
            &["-128", "-1", "0", "1", "127", "-5"],
            &["-2", "100"],
        ),
        c(
            "int16",
            2,
            "",
            &["-32768", "-2", "0", "300", "32767", "-256"],
            &["-3", "255"],
        ),
        c(
            "int32",
            4,
            "",
            &["-2147483648", "-1", "0", "65536", "2147483647", "-70000"],
            &["-69999", "7"],
        ),
        c(
            "int64",
            8,
            "",
            &[
                "-9223372036854775808",
                "-1",
                "0",
                "4294967296",
                "9223372036854775807",
                "-4294967296",
            ],
            &["-4294967295", "8"],
        ),
        c(
            "int128",
            16,
            "",
            &[
                "-170141183460469231731687303715884105728",
                "-1",
                "0",
                "18446744073709551616",
                "170141183460469231731687303715884105727",
                "-18446744073709551616",
            ],
            &["-18446744073709551615", "9"],
        ),
        c(
            "numeric",
            8,
            r#", "precision": 18, "scale": 2"#,
            &[
                "-12.34",
                "0",
                "0.01",
                "9999999999999999.99",
                "-0.5",
                "12.3",
                "-9999999999999999.99",
            ],
            &["12.35", "-12.33", "1"],
        ),
        c(
            "numeric",
            4,
            r#", "precision": 9, "scale": 3"#,
            &["-1.5", "0", "0.001", "999999.999", "2.25"],
            &["2.251", "-1.499"],
        ),
        c(
            "numeric",
            16,
            r#", "precision": 38, "scale": 4"#,
            &[
                "-1.0001",
                "0",
                "12345678901234567890.1234",
                "-99999999999999999999999999999999.9999",
                "7",
            ],
            &["7.0001", "-1"],
        ),
        c(
            "float",
            4,
            "",
            &[
                "0",
                "-0",
                "1.5",
                "-2.25",
                "inf",
                "-inf",
                "NaN",
                "3.4028235e38",
                "1e-45",
                "-1e-45",
            ],
            &["1.25", "-3"],
        ),
        c(
            "double",
            8,
            "",
            &[
                "0",
                "-0",
                "1.5",
                "-2.25",
                "inf",
                "-inf",
                "NaN",
                "1.7976931348623157e308",
                "5e-324",
                "0.1",
            ],
            &["0.2", "-7.5"],
        ),
        c("boolean", 1, "", &["true", "false"], &[]),
        c(
            "timestamp",
            4,
            "",
            &["0", "1700000000", "4294967295", "86400"],
            &["1700000001"],
        ),
        c(
            "timestamp",
            8,
            "",
            &[
                "-1",
                "0",
                "1700000000",
                "-9223372036854775808",
                "9223372036854775807",
            ],
            &["-2", "1"],
        ),
        c(
            "ipv4",
            4,
            "",
            &["0", "16909060", "4294967295", "167772161"],
            &["167772162"],
        ),
        c(
            "ipv6",
            16,
            "",
            &[
                "0",
                "1",
                "340282366920938463463374607431768211455",
                "281470681743360",
                "42540766411282592856903984951653826560",
            ],
            &["2", "281470681743361"],
        ),
        c(
            "chess_move",
            2,
            "",
            &["0", "1", "772", "65535", "256"],
            &["773"],
        ),
        c(
            "string",
            12,
            "",
            &[
                "",
                "a",
                "ab",
                "abc",
                "b",
                "zzzzzzzzzzzz",
                "a b",
                "\u{e9}t\u{e9}",
            ],
            &["aa", "abcd", "c", "y"],
        ),
        c(
            "blob",
            10,
            "",
            &["", "k/1", "k/2", "k/10", "z"],
            &["k/", "k/3"],
        ),
        c(
            "bytes",
            6,
            "",
            &["", "00", "0102", "ff", "010203040506", "0100", "01"],
            &["0101", "fe", "010203"],
        ),
        c("chess_fen", 30, "", &[], &[]),
    ];
    out.push(c(
        "uint256",
        32,
        "",
        &[
            "0",
            "1",
            &max256,
            "18446744073709551616",
            "340282366920938463463374607431768211456",
            "77",
        ],
        &["78", "340282366920938463463374607431768211455"],
    ));
    out.push(c(
        "int256",
        32,
        "",
        &[
            &min_i256,
            "-1",
            "0",
            &max_i256,
            "-340282366920938463463374607431768211456",
            "5",
        ],
        &["-340282366920938463463374607431768211455", "6"],
    ));
    out.push(c(
        "numeric",
        32,
        r#", "precision": 76, "scale": 10"#,
        &[
            "-1.5",
            "0",
            "123456789012345678901234567890.0123456789",
            "-98765432109876543210987654321098765432109876543210.5",
            "3",
        ],
        &["3.0000000001", "-2"],
    ));
    // chess_fen: a few packed positions given as hex, plus the all-zero "no position".
    let fen = out
        .iter_mut()
        .find(|c| c.ty == "chess_fen")
        .expect("fen case");
    fen.pool = vec![
        String::new(),
        format!("ffff00000000ffff1e{}", "0".repeat(42)),
        format!("ffff00000000ffff1f{}", "0".repeat(42)),
        format!("ffff00000000efff1e{}", "1".repeat(42)),
    ];
    fen.more = vec![format!("01{}", "0".repeat(58))];
    out
}

pub(super) fn schema(case: &Case, big: bool) -> Schema {
    let order = if big { "big" } else { "little" };
    let rs = 11 + case.size + 3;
    let json = format!(
        r#"{{ "id": "t", "record_size": {rs}, "byte_order": "{order}", "time_field": "ts",
            "fields": [
              {{ "name": "id", "offset": 0, "size": 2, "type": "bytes" }},
              {{ "name": "ts", "offset": 2, "size": 8, "type": "timestamp" }},
              {{ "name": "x", "offset": 11, "size": {}, "type": "{}"{} }} ] }}"#,
        case.size, case.ty, case.extra
    );
    parse(&json).expect("test schema")
}

/// The reference value of a text, as a record holds it (`operand`: as a filter value).
pub(super) fn value(case: &Case, text: &str, op: FilterOp) -> V {
    match case.ty {
        "float" => V::F(f64::from(text.parse::<f32>().expect("float"))),
        "double" => V::F(text.parse::<f64>().expect("double")),
        "boolean" => V::B(text == "true"),
        "numeric" => {
            let scale = case
                .extra
                .split("\"scale\": ")
                .nth(1)
                .and_then(|t| t.trim().parse::<usize>().ok())
                .unwrap_or(0);
            numeric(text, scale)
        }
        "string" | "blob" => V::Bytes(text.as_bytes().to_vec()),
        "bytes" | "chess_fen" if op == FilterOp::Prefix => V::Bytes(hex(text, text.len() / 2)),
        "bytes" | "chess_fen" => V::Bytes(hex(text, case.size)),
        _ => int(text),
    }
}

/// Writes record `id` holding `text` in field x.
pub(super) fn record(case: &Case, enc: &RecordEncoder, id: u16, text: &str, big: bool) -> Vec<u8> {
    let mut rec = vec![0u8; enc.record_size];
    match case.ty {
        "chess_fen" => rec[11..41].copy_from_slice(&hex(text, 30)),
        "chess_move" => {
            let code: u16 = text.parse().expect("code");
            rec[11..13].copy_from_slice(&code.to_be_bytes());
        }
        _ => enc
            .encode_field(2, text, &mut rec)
            .expect("encodable test value"),
    }
    rec[0..2].copy_from_slice(&id.to_le_bytes());
    // Fill the bytes around the field so a filter reading past its field would be caught.
    rec[10] = if big { 0xa5 } else { 0x5a };
    let n = rec.len();
    rec[n - 3..].copy_from_slice(&[0xff, 0x00, 0x7f]);
    rec
}
