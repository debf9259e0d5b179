//! Fuzzes the NDJSON and CSV block parsers with arbitrary bytes against a schema holding every
//! HD type. Beyond "never panics": the output holds exactly `count` whole records, every error
//! names a line inside the block, and parsing the block split at a line boundary (as a streaming
//! caller would) gives the same records and errors.

use hd_engine_core::encode::csv::{parse_csv, CsvOptions};
use hd_engine_core::encode::ndjson::parse_ndjson;
use hd_engine_core::encode::RecordEncoder;
use hd_engine_core::schema::parse;

const SCHEMA: &str = r#"{"id":"f","record_size":160,"time_field":"ts",
  "enums":{"p":{"values":{"tcp":6,"udp":17}}},
  "fields":[{"name":"ts","offset":0,"size":8,"type":"timestamp"},{"name":"p","offset":8,"size":1,"type":"uint8","enum":"p"},
  {"name":"a","offset":9,"size":4,"type":"ipv4"},{"name":"b","offset":13,"size":16,"type":"ipv6"},{"name":"n","offset":29,"size":8,"type":"numeric","precision":18,"scale":2},
  {"name":"f","offset":37,"size":8,"type":"double"},{"name":"s","offset":45,"size":8,"type":"string"},{"name":"r","offset":53,"size":4,"type":"bytes","array":{"element":"uint16","count":2}},
  {"name":"w","offset":57,"size":32,"type":"int256"},{"name":"m","offset":89,"size":2,"type":"chess_move"},{"name":"fen","offset":91,"size":30,"type":"chess_fen"},
  {"name":"t","offset":121,"size":1,"type":"boolean"},{"name":"x","offset":122,"size":4,"type":"bytes"},{"name":"d","offset":126,"size":4,"type":"int32","time_reference":{"field":"ts","unit":"ms"}}]}"#;

/// The target: never panics on any input, and holds the properties above.
pub fn run(data: &[u8]) {
    let schema = parse(SCHEMA).expect("fuzz schema is valid");
    let enc = RecordEncoder::new(&schema);
    let lines = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let whole = parse_ndjson(&enc, data, 1);
    assert_eq!(whole.records.len(), whole.count * schema.record_size);
    assert!(whole.errors.iter().all(|e| e.line >= 1 && e.line <= lines));
    if let Some(cut) = data.iter().position(|&b| b == b'\n').map(|k| k + 1) {
        let a = parse_ndjson(&enc, &data[..cut], 1);
        let b = parse_ndjson(&enc, &data[cut..], 2);
        assert_eq!([a.records, b.records].concat(), whole.records);
        assert_eq!([a.errors, b.errors].concat(), whole.errors);
    }
    let csv = parse_csv(&enc, data, 1, &CsvOptions::default());
    assert_eq!(csv.records.len(), csv.count * schema.record_size);
    assert!(csv.errors.iter().all(|e| e.line >= 1 && e.line <= lines));
}
