//! Fuzzes the columnar body reader (docs/hdwp.md, "columns"; `hd_engine_core::columnar`): the input
//! is a body read against a fixed schema of every column shape (integers, wide integer, decimal,
//! float, bool, bytes, text, addresses, chess, enum, array) and all its fields in order. Beyond
//! "never panics": a body that reads re-writes to exactly its bytes, and every buffer it returns
//! has the length its column's type and row count call for.

use hd_engine_core::columnar::{read_columnar, write_columnar};
use hd_engine_core::decode::DecodeOptions;
use hd_engine_core::schema::{parse, Schema};

fn schema() -> Schema {
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
          {"name":"i64","offset":88,"size":8,"type":"int64"}
        ]}"#,
    )
    .expect("the fuzz schema parses")
}

/// The target: never panics on any input, and holds the properties above.
pub fn run(input: &[u8]) {
    let s = schema();
    let fields: Vec<usize> = (0..s.fields.len()).collect();
    let opts = DecodeOptions::default();
    if let Ok(cols) = read_columnar(&s, &fields, &opts, None, input) {
        assert_eq!(cols.columns.len(), fields.len());
        for c in &cols.columns {
            assert_eq!(c.len, cols.rows, "a top-level column has one value a row");
        }
        assert_eq!(
            write_columnar(&cols, &fields, &opts),
            input,
            "a body that reads re-writes to its bytes"
        );
    }
}
