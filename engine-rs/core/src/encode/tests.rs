//! Record encoding tests: map → record, NDJSON and CSV blocks (good lines kept around bad ones,
//! line numbers, split points), time windows, and random garbage.

use super::csv::{parse_csv, CsvOptions};
use super::ndjson::parse_ndjson;
use super::windows::time_windows;
use super::*;
use crate::schema::parse;

const SCHEMA: &str = r#"{
  "id": "netflow", "record_size": 64, "time_field": "ts", "time_index_interval": 60,
  "enums": { "proto": { "values": { "icmp": 1, "tcp": 6, "udp": 17 }, "default_label": "other" } },
  "fields": [
    { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
    { "name": "proto", "offset": 8, "size": 1, "type": "uint8", "enum": "proto" },
    { "name": "src", "offset": 9, "size": 4, "type": "ipv4" },
    { "name": "bytes", "offset": 13, "size": 4, "type": "uint32" },
    { "name": "ports", "offset": 17, "size": 8, "type": "bytes", "array": { "element": "uint16", "count": 4 } },
    { "name": "host", "offset": 25, "size": 12, "type": "string" },
    { "name": "ok", "offset": 37, "size": 1, "type": "boolean" },
    { "name": "amount", "offset": 38, "size": 8, "type": "numeric", "precision": 18, "scale": 2 },
    { "name": "mv", "offset": 46, "size": 2, "type": "chess_move" },
    { "name": "delta", "offset": 48, "size": 4, "type": "int32" },
    { "name": "ratio", "offset": 52, "size": 8, "type": "double" }
  ]
}"#;

fn enc() -> RecordEncoder {
    RecordEncoder::new(&parse(SCHEMA).unwrap())
}

fn u32_at(rec: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(rec[off..off + 4].try_into().unwrap())
}

fn i64_at(rec: &[u8], off: usize) -> i64 {
    i64::from_le_bytes(rec[off..off + 8].try_into().unwrap())
}

#[test]
fn convert_record_to_binary_semantics() {
    let e = enc();
    let (rec, errs) = e.convert_record_to_binary([
        ("ts", "1700000000"),
        ("proto", "udp"),
        ("src", "10.0.0.1"),
        ("ports", "[80, 443]"),
        ("host", "example"),
        ("unknown_key", "ignored"),
        ("amount", "-12.34"),
        ("mv", "Nbd7"),
        ("ratio", "0.5"),
    ]);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(rec.len(), 64);
    assert_eq!(i64_at(&rec, 0), 1_700_000_000);
    assert_eq!(rec[8], 17);
    assert_eq!(u32_at(&rec, 9), 0x0a000001);
    assert_eq!(&rec[17..25], &[80, 0, 0xbb, 1, 0, 0, 0, 0]);
    assert_eq!(&rec[25..37], b"example\0\0\0\0\0");
    assert_eq!(i64_at(&rec, 38), -1234);
    assert_eq!(
        crate::types::chess::code_to_san(u16::from_be_bytes([rec[46], rec[47]])),
        "Nbd7"
    );
    assert_eq!(f64::from_le_bytes(rec[52..60].try_into().unwrap()), 0.5);
}

#[test]
fn convert_reports_bad_values_and_leaves_them_zero() {
    let e = enc();
    let (rec, errs) = e.convert_record_to_binary([
        ("bytes", "-1"),
        ("proto", "sctp"),
        ("src", "1.2.3.4"),
        ("host", ""),
    ]);
    assert_eq!(errs.len(), 2);
    assert_eq!(
        errs[0],
        FieldError {
            field: "bytes".into(),
            reason: "value \"-1\" is out of range for uint32".into()
        }
    );
    assert_eq!(errs[1].field, "proto");
    assert_eq!(u32_at(&rec, 13), 0);
    assert_eq!(u32_at(&rec, 9), 0x01020304);
    assert!(rec[25..37].iter().all(|&b| b == 0));
}

#[test]
fn ndjson_good_lines_kept_around_bad_ones() {
    let e = enc();
    let text = concat!(
        "{\"ts\": 1700000000, \"proto\": \"tcp\", \"src\": \"10.0.0.1\", \"bytes\": 1500, \"ports\": [80, 443], \"ok\": true}\n",
        "{\"ts\": 1700000001, \"proto\": \"udp\"\n",
        "\n",
        "   \r\n",
        "{\"ts\": 1700000002, \"bytes\": \"12\", \"host\": \"caf\\u00e9 \\ud83d\\ude00\", \"amount\": 1.5, \"extra\": {\"a\": [1, {\"b\": null}]}}\r\n",
        "{\"ts\": 1, \"bytes\": 4294967296}\n",
        "{\"ts\": 1, \"src\": \"300.1.1.1\"}\n",
        "{\"ts\": 1, \"proto\": \"sctp\"}\n",
        "{\"ts\": 1, \"host\": \"this is far too long\"}\n",
        "[1, 2, 3]\n",
        "{\"ts\": 1, \"bytes\": 1.5, \"src\": true}\n",
        "{\"ts\": null, \"ratio\": -2.5e-3, \"delta\": -7, \"mv\": \"O-O-O#\"}\n",
        "{\"ts\": 1} trailing\n",
        "{\"ts\": 1, \"ports\": [1, 2, 3, 4, 5]}\n",
        "{\"ts\": 1, \"host\": [\"a\"]}\n",
        "{\"ts\": 01}\n",
        "{\"host\": \"bad \\x escape\"}\n",
        "{\"ts\": 1700000003}"
    );
    let p = parse_ndjson(&e, text.as_bytes(), 10);
    assert_eq!(p.count, 4, "{:#?}", p.errors);
    assert_eq!(p.records.len(), 4 * 64);
    let r: Vec<&[u8]> = p.records.chunks(64).collect();
    assert_eq!(i64_at(r[0], 0), 1_700_000_000);
    assert_eq!(r[0][8], 6);
    assert_eq!(r[0][37], 1);
    assert_eq!(&r[0][17..21], &[80, 0, 0xbb, 1]);
    assert_eq!(u32_at(r[1], 13), 12);
    assert_eq!(&r[1][25..35], "café 😀".as_bytes());
    assert_eq!(i64_at(r[1], 38), 150);
    assert_eq!(i64_at(r[2], 0), 0, "null leaves the field zero");
    assert_eq!(i32::from_le_bytes(r[2][48..52].try_into().unwrap()), -7);
    assert_eq!(i64_at(r[3], 0), 1_700_000_003);
    let errs: Vec<(u64, Option<&str>, &str)> = p
        .errors
        .iter()
        .map(|e| (e.line, e.field.as_deref(), e.reason.as_str()))
        .collect();
    let at = |line: u64| {
        errs.iter()
            .filter(|e| e.0 == line)
            .cloned()
            .collect::<Vec<_>>()
    };
    assert!(
        at(11)[0]
            .2
            .contains("broken JSON at column 34: expected ',' or '}', found the end of the line"),
        "{errs:?}"
    );
    assert_eq!(
        at(15),
        vec![(
            15,
            Some("bytes"),
            "value \"4294967296\" is out of range for uint32"
        )]
    );
    assert_eq!(at(16)[0].1, Some("src"));
    assert!(at(16)[0].2.contains("expected an IPv4 address"));
    assert_eq!(
        at(17),
        vec![(17, Some("proto"), "unknown label \"sctp\" for enum proto")]
    );
    assert_eq!(
        at(18),
        vec![(18, Some("host"), "text is 20 bytes, the field holds 12")]
    );
    assert!(at(19)[0].2.contains("line is not a JSON object"));
    assert_eq!(at(20).len(), 2, "both bad fields of one line are reported");
    assert!(at(22)[0].2.contains("expected the end of the line"));
    assert!(at(23)[0].2.contains("more than 4 elements"));
    assert!(at(24)[0].2.contains("only for array fields"));
    assert!(at(25)[0].2.contains("expected a number"));
    assert!(at(26)[0].2.contains("a valid escape"));
    assert_eq!(errs.len(), 13);
}

#[test]
fn ndjson_rejects_bad_utf8_and_broken_escapes() {
    let e = enc();
    let p = parse_ndjson(&e, b"{\"host\": \"\xff\"}\n{\"host\": \"\\ud800\"}\n{\"host\": \"\\u12\"}\n{\"host\": \"ok\"}\n", 1);
    assert_eq!(p.count, 1);
    assert_eq!(
        p.errors.iter().map(|e| e.line).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(p.errors[0].reason.contains("not UTF-8"));
}

#[test]
fn ndjson_split_at_every_point_gives_the_same_result() {
    let e = enc();
    let text = b"{\"ts\": 5, \"host\": \"a\"}\n{\"ts\": \"x\"}\n\n{\"ts\": 7, \"ports\": \"1,2\"}\r\n{bad\n{\"ts\": 9}\n";
    let whole = parse_ndjson(&e, text, 1);
    assert_eq!(whole.count, 3);
    for cut in 0..=text.len() {
        // A streaming caller: each block ends on a line boundary, the tail carried to the next.
        let (mut records, mut errors, mut line) = (Vec::new(), Vec::new(), 1u64);
        let mut carry: Vec<u8> = Vec::new();
        for piece in [&text[..cut], &text[cut..]] {
            carry.extend_from_slice(piece);
            let upto = carry.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1);
            let block: Vec<u8> = carry.drain(..upto).collect();
            let p = parse_ndjson(&e, &block, line);
            line += block.iter().filter(|&&b| b == b'\n').count() as u64;
            records.extend(p.records);
            errors.extend(p.errors);
        }
        assert!(carry.is_empty());
        assert_eq!(records, whole.records, "cut {cut}");
        assert_eq!(errors, whole.errors, "cut {cut}");
    }
}

#[test]
fn csv_quoting_and_errors() {
    let e = enc();
    let text = concat!(
        "ts,host,proto,ports,ignored\r\n",
        "1,\"a,b\",tcp,\"80,443\",x\r\n",
        "2,\"say \"\"hi\"\"\",udp,,\n",
        "\n",
        "3,\"two\nlines\",icmp,[1],\n",
        "4,\"bad\"x,tcp,,\n",
        "5,ok,sctp,,\n",
        "6,short\n",
        "7,\"\",,,\n",
        "8,\"open"
    );
    let p = parse_csv(&e, text.as_bytes(), 1, &CsvOptions::default());
    let errs: Vec<(u64, Option<&str>)> = p
        .errors
        .iter()
        .map(|e| (e.line, e.field.as_deref()))
        .collect();
    assert_eq!(
        errs,
        vec![(7, None), (8, Some("proto")), (9, None), (11, None)],
        "{:#?}",
        p.errors
    );
    assert!(p.errors[0].reason.contains("after a closing quote"));
    assert!(p.errors[2]
        .reason
        .contains("row has 2 fields, the header 5"));
    assert!(p.errors[3].reason.contains("unterminated quoted field"));
    assert_eq!(p.count, 4);
    let r: Vec<&[u8]> = p.records.chunks(64).collect();
    assert_eq!(&r[0][25..28], b"a,b");
    assert_eq!(&r[0][17..21], &[80, 0, 0xbb, 1]);
    assert_eq!(&r[1][25..35], b"say \"hi\"\0\0");
    assert_eq!(&r[2][25..34], b"two\nlines");
    assert_eq!(i64_at(r[3], 0), 7);
}

#[test]
fn csv_an_empty_last_field_keeps_the_previous_fields_carriage_return() {
    // The ndjson_parse fuzz target's panic (engine-rs/fuzz/seeds/ndjson_parse/crash-*): the empty
    // last field took the '\r' ending the field before it, whose end then lay past the row.
    let e = enc();
    let opts = CsvOptions {
        header: Some(vec!["host".into(), "proto".into()]),
        delimiter: b',',
    };
    let p = parse_csv(&e, b"a\r,\n\"b\r\",\n", 1, &opts);
    assert_eq!(p.count, 2, "{:#?}", p.errors);
    let r: Vec<&[u8]> = p.records.chunks(64).collect();
    assert_eq!(&r[0][25..27], b"a\r");
    assert_eq!(&r[1][25..27], b"b\r");
    // A CRLF line end still loses its '\r'.
    let p = parse_csv(&e, b"a,tcp\r\n", 1, &opts);
    assert_eq!(p.count, 1, "{:#?}", p.errors);
}

#[test]
fn csv_given_header_and_delimiter() {
    let e = enc();
    let opts = CsvOptions {
        header: Some(vec!["host".into(), "ts".into()]),
        delimiter: b';',
    };
    let p = parse_csv(&e, b"x;1\ny;2", 40, &opts);
    assert_eq!(p.count, 2);
    assert_eq!(i64_at(&p.records[64..], 0), 2);
    let p = parse_csv(&e, b"x;nope\n", 40, &opts);
    assert_eq!(p.errors[0].line, 40);
    assert_eq!(p.errors[0].field.as_deref(), Some("ts"));
}

#[test]
fn csv_split_at_every_row_boundary() {
    let e = enc();
    let opts = CsvOptions {
        header: Some(vec!["ts".into(), "host".into()]),
        delimiter: b',',
    };
    let text = b"1,a\n2,\"b\nc\"\n3,x\"y\n\n4,d\n";
    let whole = parse_csv(&e, text, 1, &opts);
    assert_eq!(whole.count, 4);
    // Row boundaries (the caller never cuts inside a quoted field).
    for cut in [0, 4, 12, 17, 18, text.len()] {
        let a = parse_csv(&e, &text[..cut], 1, &opts);
        let first = 1 + text[..cut].iter().filter(|&&b| b == b'\n').count() as u64;
        let b = parse_csv(&e, &text[cut..], first, &opts);
        assert_eq!([a.records, b.records].concat(), whole.records, "cut {cut}");
        assert_eq!([a.errors, b.errors].concat(), whole.errors, "cut {cut}");
    }
}

#[test]
fn time_windows_in_record_order() {
    let s = parse(SCHEMA).unwrap();
    let e = RecordEncoder::new(&s);
    let p = parse_ndjson(
        &e,
        b"{\"ts\":61}\n{\"ts\":5}\n{\"ts\":119}\n{\"ts\":-1}\n{\"ts\":0}\n",
        1,
    );
    let w = time_windows(&s, &p.records, 0).unwrap();
    assert_eq!(
        w.iter().map(|w| (w.start, w.count)).collect::<Vec<_>>(),
        vec![(60, 2), (0, 2), (-60, 1)]
    );
    assert_eq!(i64_at(&w[0].records[64..], 0), 119);
    assert_eq!(time_windows(&s, &p.records, 1000).unwrap().len(), 2);
    assert!(time_windows(&s, &p.records[1..], 0).is_err());
}

#[test]
fn random_garbage_never_panics() {
    let e = enc();
    let mut seed: u64 = 0x2545F4914F6CDD1D;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let base = b"{\"ts\": 1700000000, \"proto\": \"tcp\", \"ports\": [1, 2], \"host\": \"h\\u00e9\", \"x\": {\"y\": [true, null]}}\n";
    let alphabet = b"{}[]\",:\\u0123456789-.eE \ntrufalsn\r\xff";
    for _ in 0..20_000 {
        let mut b = base.to_vec();
        for _ in 0..(next() % 5 + 1) {
            let i = (next() as usize) % b.len();
            let c = alphabet[(next() as usize) % alphabet.len()];
            match next() % 3 {
                0 => b[i] = c,
                1 => {
                    b.remove(i);
                }
                _ => b.insert(i, c),
            }
        }
        let p = parse_ndjson(&e, &b, 1);
        assert_eq!(p.records.len(), p.count * 64);
        let q = parse_csv(&e, &b, 1, &CsvOptions::default());
        assert_eq!(q.records.len(), q.count * 64);
    }
}

/// The fast paths must change nothing: random lines (good ones, near misses, keys in changing
/// order, values at every type's limits, escapes, byte mutations) parse the same with and without
/// them — records, counts, errors and their wording.
#[test]
fn ndjson_fast_paths_match_the_general_path() {
    use super::ndjson::parse_ndjson_general;
    let e = enc();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let keys = [
        "\"ts\"",
        "\"proto\"",
        "\"src\"",
        "\"bytes\"",
        "\"ports\"",
        "\"host\"",
        "\"ok\"",
        "\"amount\"",
        "\"mv\"",
        "\"delta\"",
        "\"ratio\"",
        "\"other\"",
        "\"t\\u0073\"",
        "\"ts \"",
    ];
    let values = [
        "0",
        "1",
        "01",
        "255",
        "256",
        "65535",
        "65536",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999",
        "1700000000",
        "-1",
        "-0",
        "1.5",
        "1e3",
        "2E-2",
        "\"tcp\"",
        "\"udp\"",
        "\"icmp\"",
        "\"sctp\"",
        "\"6\"",
        "\"300\"",
        "\"10.0.0.1\"",
        "\"255.255.255.255\"",
        "\"256.0.0.1\"",
        "\"01.2.3.4\"",
        "\"167772161\"",
        "\"\"",
        "\"example\"",
        "\"exactly12byt\"",
        "\"thirteen byte\"",
        "\"caf\\u00e9\"",
        "\"a\\\"b\"",
        "\"2024-02-29T12:00:00Z\"",
        "\"1700000000\"",
        "true",
        "false",
        "null",
        "[1, 2]",
        "[80, 443, 65536]",
        "{\"a\": 1}",
        "\"Nbd7\"",
        "\"O-O\"",
        "\"12.34\"",
        "\"0x10\"",
        "\"héllo\"",
        "\"h\\u00e9\"",
        "1234567890123456789",
    ];
    let alphabet = b"{}[]\",:\\u0123456789-.eE \ntrufalsn\r";
    let mut text = Vec::new();
    for round in 0..4000 {
        text.clear();
        for _ in 0..(next() % 6 + 1) {
            let n = next() % 8;
            let mut line = String::from("{");
            for k in 0..n {
                if k > 0 {
                    line.push_str(if next() % 5 == 0 { " , " } else { "," });
                }
                // Mostly one key order, so the previous-line cache hits and misses both happen.
                let key = if next() % 4 == 0 {
                    keys[(next() as usize) % keys.len()]
                } else {
                    keys[k as usize]
                };
                line.push_str(key);
                line.push_str(if next() % 6 == 0 { " : " } else { ":" });
                line.push_str(values[(next() as usize) % values.len()]);
            }
            line.push('}');
            let mut b = line.into_bytes();
            if round % 3 == 0 {
                for _ in 0..(next() % 3) {
                    let i = (next() as usize) % b.len();
                    let c = alphabet[(next() as usize) % alphabet.len()];
                    match next() % 3 {
                        0 => b[i] = c,
                        1 => {
                            b.remove(i);
                        }
                        _ => b.insert(i, c),
                    }
                }
            }
            text.extend_from_slice(&b);
            text.push(b'\n');
        }
        let fast = parse_ndjson(&e, &text, 7);
        let general = parse_ndjson_general(&e, &text, 7);
        let shown = String::from_utf8_lossy(&text);
        assert_eq!(fast.count, general.count, "{shown}");
        assert_eq!(fast.records, general.records, "{shown}");
        assert_eq!(fast.errors, general.errors, "{shown}");
        assert_eq!(fast.lines, general.lines, "{shown}");
    }
}
