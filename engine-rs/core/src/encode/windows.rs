//! Splitting a buffer of records into per-time-window buffers for batching: each record goes to
//! the window `floor(t / interval) · interval` of its time field. Windows come out in the order
//! their first record appears, records in their original order.

use std::collections::HashMap;

use crate::schema::{ByteOrder, Schema};

/// One time window's records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Window start, Unix seconds.
    pub start: i64,
    pub records: Vec<u8>,
    pub count: usize,
}

/// Reads the time field (Unix seconds) of one record.
pub fn record_time(schema: &Schema, rec: &[u8]) -> i64 {
    let f = &schema.fields[schema.time_field];
    let b = &rec[f.offset..f.offset + f.size];
    match (f.size, schema.byte_order) {
        (4, ByteOrder::Little) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
        (4, ByteOrder::Big) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i64,
        (_, ByteOrder::Little) => {
            i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        }
        (_, ByteOrder::Big) => i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    }
}

/// Splits `records` (whole records back to back) by time window. `interval` 0 means the schema's
/// `time_index_interval`.
pub fn time_windows(schema: &Schema, records: &[u8], interval: u32) -> Result<Vec<Window>, String> {
    let rs = schema.record_size;
    if !records.len().is_multiple_of(rs) {
        return Err(format!(
            "{} bytes is not a whole number of {rs}-byte records",
            records.len()
        ));
    }
    let iv = if interval == 0 {
        schema.time_index_interval
    } else {
        interval
    }
    .max(1) as i64;
    let mut out: Vec<Window> = Vec::new();
    let mut index: HashMap<i64, usize> = HashMap::new();
    let mut last: Option<(i64, usize)> = None;
    for rec in records.chunks_exact(rs) {
        let start = record_time(schema, rec).div_euclid(iv) * iv;
        // Records usually arrive in time order: check the previous window before hashing.
        let w = match last {
            Some((s, w)) if s == start => w,
            _ => *index.entry(start).or_insert_with(|| {
                out.push(Window {
                    start,
                    records: Vec::new(),
                    count: 0,
                });
                out.len() - 1
            }),
        };
        last = Some((start, w));
        out[w].records.extend_from_slice(rec);
        out[w].count += 1;
    }
    Ok(out)
}
