//! Decode: a buffer of fixed-width records → typed column buffers ready to become Arrow vectors.
//!
//! `plan` maps each schema field to its presentation (the reference's type mapping and column
//! rules, see docs/schema.md "Decoding and presentation") and a column builder; `decode_columns`
//! walks the records in cache-sized blocks and lets every builder take its values from each block,
//! so each column is one pass over the records that reads each record's bytes while they are hot.
//! Fixed-width columns are written into one preallocated buffer: no allocation per value.

mod buf;
mod chess;
mod enums;
mod inet;
mod list;
mod numbers;
mod plan;
mod text;
mod wide;

pub use plan::{plan, plan_json, type_name, ArrowType, ColumnPlan};

use crate::schema::Schema;

/// Records handed to the builders at a time: enough bytes to amortise the per-block dispatch,
/// few enough to stay in the L2 cache while every column reads them.
const BLOCK_BYTES: usize = 256 * 1024;

/// How ipv4 / ipv6 fields are presented.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Addresses {
    /// Inet text (`192.0.2.1`, `2001:db8::1`, RFC 5952): the SQL presentation.
    #[default]
    Text,
    /// ipv4 as its unsigned 32-bit value, ipv6 as 16 bytes in network order: for the SQL layer's
    /// comparisons on the underlying integer.
    Raw,
}

/// Options of a decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    pub addresses: Addresses,
}

/// Why a buffer of records could not be decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("records buffer of {len} bytes is not a whole number of {record_size}-byte records of dataset '{dataset}' ({rest} bytes left over)")]
    RecordLength {
        dataset: String,
        len: usize,
        record_size: usize,
        rest: usize,
    },
    #[error("field '{field}' cannot be decoded: {message}")]
    Schema { field: String, message: String },
    #[error("column '{column}' holds more than 2 GiB of values, beyond Arrow's 32-bit offsets; decode fewer records at a time")]
    TooLarge { column: String },
}

/// One decoded column, in Arrow's memory layout (native byte order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Number of values (rows; for a list's child, elements).
    pub len: usize,
    pub null_count: usize,
    /// Validity bitmap, LSB first, 1 = valid; `None` when no value is null.
    pub validity: Option<Vec<u8>>,
    /// i32 offsets (`len + 1`) of Utf8, Binary and List columns.
    pub offsets: Option<Vec<u8>>,
    /// Values: fixed-width primitives, decimal words, bit-packed booleans, variable-length bytes,
    /// or Int32 dictionary indices. Empty for a List (its values are in `child`).
    pub data: Vec<u8>,
    /// The element column of a List.
    pub child: Option<Box<Column>>,
}

impl Column {
    /// A variable-width column (Utf8 or Binary) with no nulls, from `(offsets, data)`.
    pub(crate) fn var_width(len: usize, (offsets, data): (Vec<u8>, Vec<u8>)) -> Column {
        Column {
            len,
            null_count: 0,
            validity: None,
            offsets: Some(offsets),
            data,
            child: None,
        }
    }
}

/// The decoded columns of a buffer of records, in schema field order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    pub rows: usize,
    pub columns: Vec<Column>,
}

/// A column builder: takes its values from each block of whole records, then yields the column.
pub(crate) trait Builder: Send {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError>;
    fn finish(self: Box<Self>) -> Column;
}

/// Decodes `records` (a whole number of records) into one column per schema field, with the
/// default options (addresses as text).
pub fn decode_columns(schema: &Schema, records: &[u8]) -> Result<Columns, DecodeError> {
    decode_columns_with(schema, records, &DecodeOptions::default())
}

/// Decodes `records` into one column per schema field.
pub fn decode_columns_with(
    schema: &Schema,
    records: &[u8],
    opts: &DecodeOptions,
) -> Result<Columns, DecodeError> {
    decode_columns_projected(schema, records, opts, None)
}

/// The schema field indices of `names`, in the order given: a decode's projection. An unknown
/// name or one given twice is a `DecodeError::Schema` naming it (and, when unknown, the fields).
pub fn projection<S: AsRef<str>>(schema: &Schema, names: &[S]) -> Result<Vec<usize>, DecodeError> {
    let mut out: Vec<usize> = Vec::with_capacity(names.len());
    for n in names {
        let n = n.as_ref();
        let Some(&i) = schema.by_name.get(n) else {
            let known: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
            return Err(DecodeError::Schema {
                field: n.to_string(),
                message: format!(
                    "dataset '{}' has no such field (its fields: {})",
                    schema.id,
                    known.join(", ")
                ),
            });
        };
        if out.contains(&i) {
            return Err(DecodeError::Schema {
                field: n.to_string(),
                message: "named twice in the projection".into(),
            });
        }
        out.push(i);
    }
    Ok(out)
}

/// Decodes `records` into the columns of `fields` (schema field indices from `projection`, in
/// that order), or of every field when `None`. A field left out costs nothing: it gets no
/// builder, so its bytes are never read.
pub fn decode_columns_projected(
    schema: &Schema,
    records: &[u8],
    opts: &DecodeOptions,
    fields: Option<&[usize]>,
) -> Result<Columns, DecodeError> {
    let rs = schema.record_size;
    if rs == 0 || !records.len().is_multiple_of(rs) {
        return Err(DecodeError::RecordLength {
            dataset: schema.id.clone(),
            len: records.len(),
            record_size: rs,
            rest: if rs == 0 {
                records.len()
            } else {
                records.len() % rs
            },
        });
    }
    let rows = records.len() / rs;
    let mut builders = plan::builders(schema, opts, rows, fields)?;
    let block = (BLOCK_BYTES / rs).max(1) * rs;
    for chunk in records.chunks(block) {
        for b in builders.iter_mut() {
            b.extend(chunk)?;
        }
    }
    Ok(Columns {
        rows,
        columns: builders.into_iter().map(|b| b.finish()).collect(),
    })
}

#[cfg(test)]
mod tests;
