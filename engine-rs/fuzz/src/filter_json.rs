//! Fuzzes the filter compiler with arbitrary `sub_queries` JSON against a schema holding every
//! type (first input byte: bit 0 picks big-endian). Beyond "never panics": a refusal names a path
//! under `sub_queries`; a compiled filter returns a subsequence of the records, the same one twice;
//! and no block the zone maps rule out holds a matching record (zone skipping is sound).

use hd_engine_core::scan::{ScanFilter, ZonePlan};
use hd_engine_core::schema::parse;
use hd_engine_core::segment::{zone_fields_from_schema, Zone};

const FIELDS: &str = r#"
  { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
  { "name": "u8", "offset": 8, "size": 1, "type": "uint8", "enum": "proto" },
  { "name": "u16", "offset": 9, "size": 2, "type": "uint16" },
  { "name": "u32", "offset": 11, "size": 4, "type": "uint32" },
  { "name": "u64", "offset": 15, "size": 8, "type": "uint64" },
  { "name": "u128", "offset": 23, "size": 16, "type": "uint128" },
  { "name": "u256", "offset": 39, "size": 32, "type": "uint256" },
  { "name": "i8", "offset": 71, "size": 1, "type": "int8" },
  { "name": "i16", "offset": 72, "size": 2, "type": "int16" },
  { "name": "i32", "offset": 74, "size": 4, "type": "int32" },
  { "name": "i64", "offset": 78, "size": 8, "type": "int64" },
  { "name": "i128", "offset": 86, "size": 16, "type": "int128" },
  { "name": "i256", "offset": 102, "size": 32, "type": "int256" },
  { "name": "n", "offset": 134, "size": 8, "type": "numeric", "precision": 18, "scale": 3 },
  { "name": "n32", "offset": 142, "size": 32, "type": "numeric", "precision": 70, "scale": 5 },
  { "name": "f", "offset": 174, "size": 4, "type": "float" },
  { "name": "d", "offset": 178, "size": 8, "type": "double" },
  { "name": "b", "offset": 186, "size": 1, "type": "boolean" },
  { "name": "t4", "offset": 187, "size": 4, "type": "timestamp" },
  { "name": "ip", "offset": 191, "size": 4, "type": "ipv4" },
  { "name": "ip6", "offset": 195, "size": 16, "type": "ipv6" },
  { "name": "s", "offset": 211, "size": 12, "type": "string" },
  { "name": "by", "offset": 223, "size": 5, "type": "bytes" },
  { "name": "bl", "offset": 228, "size": 9, "type": "blob" },
  { "name": "mv", "offset": 237, "size": 2, "type": "chess_move" },
  { "name": "fen", "offset": 239, "size": 30, "type": "chess_fen" },
  { "name": "ports", "offset": 269, "size": 8, "type": "bytes", "array": { "element": "uint16", "count": 4 } },
  { "name": "fs", "offset": 277, "size": 8, "type": "bytes", "array": { "element": "float", "count": 2 } },
  { "name": "xs", "offset": 285, "size": 32, "type": "bytes", "array": { "element": "int128", "count": 2 } },
  { "name": "tiny", "offset": 317, "size": 3, "type": "bytes" }"#;
const RECORD: usize = 320;
const RECORDS: usize = 96;
const BLOCK: usize = 8;

/// Records from a fixed generator, with runs of zeros, ones and repeated bytes mixed in so
/// equality and null filters find matches.
fn records() -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = vec![0u8; RECORD * RECORDS];
    for (i, b) in out.iter_mut().enumerate() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = i / RECORD;
        *b = match r % 6 {
            0 => 0,
            1 => 0xff,
            2 => (x % 3) as u8,
            _ => x as u8,
        };
    }
    out
}

/// The target: never panics on any input, and holds the properties above.
pub fn run(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let order = if flags & 1 == 1 { "big" } else { "little" };
    let schema = parse(&format!(
        r#"{{ "id": "f", "record_size": {RECORD}, "byte_order": "{order}", "time_field": "ts",
             "enums": {{ "proto": {{ "values": {{ "tcp": 6 }} }} }}, "fields": [{FIELDS}] }}"#
    ))
    .expect("the fuzz schema is valid");
    let filter = match ScanFilter::compile(&schema, text) {
        Ok(f) => f,
        Err(e) => {
            assert!(e.path.starts_with("sub_queries"), "path {:?}", e.path);
            assert!(!e.message.is_empty());
            return;
        }
    };
    let data = records();
    let out = filter.filter(&data);
    assert_eq!(out, filter.filter(&data), "deterministic");
    assert_eq!(out.len() % RECORD, 0);
    // A subsequence of the input records, in order.
    let mut at = 0;
    for rec in out.chunks_exact(RECORD) {
        while at < RECORDS && &data[at * RECORD..(at + 1) * RECORD] != rec {
            at += 1;
        }
        assert!(at < RECORDS, "a record that is not in the input");
        at += 1;
    }
    if filter.matches_all() {
        assert_eq!(out, data);
    }
    // Zone soundness: a block the plan rules out holds no match.
    let fields = zone_fields_from_schema(&schema);
    let plan = ZonePlan::new(&filter, &fields);
    for block in data.chunks(BLOCK * RECORD) {
        let zones: Vec<Zone> = fields
            .iter()
            .map(|f| {
                let mut z = Zone::EMPTY;
                for rec in block.chunks_exact(RECORD) {
                    if let Some(k) = f.key(rec) {
                        z.merge(Zone { min: k, max: k });
                    }
                }
                z
            })
            .collect();
        if !plan.may_match(&zones) {
            assert!(
                filter.filter(block).is_empty(),
                "zones skipped a block with a match"
            );
        }
    }
}
