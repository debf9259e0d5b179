//! Columns → records: the Arrow encode path. The caller (TypeScript, `engine-rs/encodeArrow.ts`)
//! describes each column of an Arrow RecordBatch or Table once (`plan`) and passes its raw buffers
//! (values, validity bitmap, offsets); this module checks the description against the buffers
//! (`source`) and the schema (`accept`), then writes every field of every record into one output
//! buffer, column by column, reusing the per-type encoders (`scalar`). No value crosses back into
//! JavaScript.
//!
//! Rules (docs/decoding.md, "Encoding from Arrow"):
//! - a column fills the schema field of its name; a column the schema does not name is an error;
//! - a field without a column is left as the output had it (zero in a fresh buffer);
//! - a null writes zeros, as an empty value does in every other encoder;
//! - fields are written in declaration order (so on overlay bytes the later field wins), except
//!   delta time fields, which go last: their stored value depends on their source field's bytes.
//!
//! Records are written in blocks of about 256 KiB, every column filling its part of a block
//! while the block is in cache.

mod accept;
mod fast;
mod field;
mod plan;
mod raw;
mod scalar;
mod source;

pub use plan::{parse_plan, ChunkDesc, ColumnDesc, EncodePlan, TypeDesc};

use std::collections::HashSet;

use accept::Target;
use fast::DictTable;
use field::{ColumnWriter, Shape};
use source::{Chunk, Dict, Layout};

use super::{Kind, RecordEncoder};
use crate::schema::{FieldType, Schema};

/// Output bytes per block of records.
const BLOCK_BYTES: usize = 256 * 1024;

/// Why a batch could not be encoded. Every variant names the column; a value error names the row
/// too (0-based, counted over the whole batch or table).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ColumnError {
    /// The plan JSON could not be read (a bug of the caller, not of the data).
    #[error("{0}")]
    Plan(String),
    /// A column the schema does not name (or one named twice).
    #[error("column '{column}' {message}")]
    Column { column: String, message: String },
    /// A column whose Arrow type the field does not take.
    #[error("column '{column}' {message}")]
    Type { column: String, message: String },
    /// A value the field refuses: out of range, too long, an unknown label, ...
    #[error("column '{column}', row {row}: {message}")]
    Value {
        column: String,
        row: usize,
        message: String,
    },
    /// Buffers that do not hold what the plan says (too short, offsets out of bounds, ...).
    #[error("column '{column}': malformed Arrow data: {message}")]
    Shape { column: String, message: String },
}

impl ColumnError {
    /// The column the error concerns (empty for a plan error).
    pub fn column(&self) -> &str {
        match self {
            ColumnError::Plan(_) => "",
            ColumnError::Column { column, .. }
            | ColumnError::Type { column, .. }
            | ColumnError::Value { column, .. }
            | ColumnError::Shape { column, .. } => column,
        }
    }

    /// The row of a value error.
    pub fn row(&self) -> Option<usize> {
        match self {
            ColumnError::Value { row, .. } => Some(*row),
            _ => None,
        }
    }
}

fn shape(column: &str, message: impl Into<String>) -> ColumnError {
    ColumnError::Shape {
        column: column.to_string(),
        message: message.into(),
    }
}

/// The records a plan describes, in a fresh zeroed buffer of `rows × record_size` bytes.
pub fn encode_columns(
    schema: &Schema,
    plan: &EncodePlan,
    buffers: &[&[u8]],
) -> Result<Vec<u8>, ColumnError> {
    let len = plan
        .rows
        .checked_mul(schema.record_size)
        .ok_or_else(|| ColumnError::Plan(format!("{} rows are too many", plan.rows)))?;
    // A plan's row count is not trusted with an allocation that would abort the process.
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| {
        ColumnError::Plan(format!(
            "cannot allocate {len} bytes for {} records",
            plan.rows
        ))
    })?;
    out.resize(len, 0);
    encode_columns_into(schema, plan, buffers, &mut out)?;
    Ok(out)
}

/// Writes the records a plan describes into `out` (exactly `rows × record_size` bytes). Bytes no
/// column covers are left as they are, so `out` normally starts zeroed.
pub fn encode_columns_into(
    schema: &Schema,
    plan: &EncodePlan,
    buffers: &[&[u8]],
    out: &mut [u8],
) -> Result<(), ColumnError> {
    let rs = schema.record_size;
    if plan.rows.checked_mul(rs) != Some(out.len()) {
        return Err(ColumnError::Plan(format!(
            "the output holds {} bytes, not {} records of {rs} bytes",
            out.len(),
            plan.rows
        )));
    }
    let enc = RecordEncoder::new(schema);
    let dicts = dictionaries(plan, buffers)?;
    let mut writers = Vec::with_capacity(plan.columns.len());
    let mut seen = HashSet::new();
    for col in &plan.columns {
        if !seen.insert(col.name.as_str()) {
            return Err(ColumnError::Column {
                column: col.name.clone(),
                message: "appears twice in the batch".into(),
            });
        }
        writers.push(writer(schema, &enc, plan, col, buffers, &dicts)?);
    }
    // Declaration order, delta fields last (they read their source field's written bytes).
    writers.sort_by_key(|w| (matches!(w.shape, Shape::Delta { .. }), w.field));
    let block = (BLOCK_BYTES / rs.max(1)).max(1);
    for (b, recs) in out.chunks_mut(block * rs).enumerate() {
        for w in &mut writers {
            w.write(&enc, &dicts, b * block, recs)?;
        }
    }
    Ok(())
}

fn dictionaries<'a>(plan: &EncodePlan, buffers: &[&'a [u8]]) -> Result<Vec<Dict<'a>>, ColumnError> {
    plan.dictionaries
        .iter()
        .enumerate()
        .map(|(i, chunks)| {
            let chunks = chunks
                .iter()
                .map(|d| Chunk::new(d, buffers, 0))
                .collect::<Result<Vec<_>, _>>()
                .and_then(Dict::new);
            chunks.map_err(|e| shape("", format!("dictionary {i}: {e}")))
        })
        .collect()
}

/// The writer of one column: its field, how the field is filled, its checked chunks.
fn writer<'a>(
    schema: &Schema,
    enc: &RecordEncoder,
    plan: &EncodePlan,
    col: &ColumnDesc,
    buffers: &[&'a [u8]],
    dicts: &[Dict<'a>],
) -> Result<ColumnWriter<'a>, ColumnError> {
    let name = col.name.as_str();
    let f = enc
        .field_index(name.as_bytes())
        .ok_or_else(|| ColumnError::Column {
            column: name.to_string(),
            message: format!("is not a field of dataset '{}'", schema.id),
        })?;
    let field = &schema.fields[f];
    let p = &enc.plans[f];
    let shape_of = match (&field.time_reference, &p.array) {
        (Some(t), _) => {
            let src = &schema.fields[t.field];
            let layout = field::int_layout(&src.ty, src.size).ok_or_else(|| ColumnError::Type {
                column: name.to_string(),
                message: format!(
                    "has a time_reference source '{}' that is not an integer",
                    src.name
                ),
            })?;
            Shape::Delta {
                source: src.offset,
                source_name: src.name.clone(),
                source_layout: layout,
                unit: field::delta_unit(t.unit),
            }
        }
        (None, Some((kind, size, count))) => Shape::Array {
            kind: kind.clone(),
            size: *size,
            count: *count,
        },
        (None, None) => Shape::Scalar,
    };
    let target = match &shape_of {
        Shape::Scalar => Target::Scalar(&p.kind),
        Shape::Delta { .. } => Target::Delta,
        Shape::Array { kind, .. } => Target::Array(kind),
    };
    let hd_type = hd_type_name(schema, field);
    let mut chunks = Vec::with_capacity(col.chunks.len());
    let mut starts = Vec::with_capacity(col.chunks.len());
    let mut rows = 0usize;
    for d in &col.chunks {
        let c = Chunk::new(d, buffers, dicts.len()).map_err(|e| shape(name, e))?;
        accept::check(&target, &hd_type, &c, dicts).map_err(|message| ColumnError::Type {
            column: name.to_string(),
            message,
        })?;
        starts.push(rows);
        rows += c.len;
        chunks.push(c);
    }
    if rows != plan.rows {
        return Err(shape(
            name,
            format!(
                "the column holds {rows} values, the batch {} rows",
                plan.rows
            ),
        ));
    }
    let tables = tables(enc, &shape_of, &p.kind, p.size, &chunks, dicts);
    Ok(ColumnWriter {
        name: name.to_string(),
        field: f,
        offset: p.offset,
        size: p.size,
        kind: p.kind.clone(),
        shape: shape_of,
        chunks,
        starts,
        tables,
    })
}

/// The dictionaries the column's chunks (or, for an array, their elements) use, each encoded once
/// for the field's kind.
fn tables(
    enc: &RecordEncoder,
    shape: &Shape,
    kind: &Kind,
    size: usize,
    chunks: &[Chunk],
    dicts: &[Dict],
) -> Vec<Option<DictTable>> {
    let mut tables: Vec<Option<DictTable>> = dicts.iter().map(|_| None).collect();
    let (kind, size) = match shape {
        Shape::Scalar => (kind, size),
        Shape::Array { kind, size, .. } => (kind, *size),
        Shape::Delta { .. } => return tables,
    };
    for c in chunks {
        let values = match &c.layout {
            Layout::List { child, .. } | Layout::FixedList { child, .. } => child,
            _ => c,
        };
        if let Layout::Dictionary { dict, .. } = values.layout {
            if let (Some(slot @ None), Some(d)) = (tables.get_mut(dict), dicts.get(dict)) {
                *slot = Some(DictTable::new(enc, kind, size, d));
            }
        }
    }
    tables
}

/// How error messages name a field's type (`uint8`, `uint8 enum`, `bytes array`, ...).
fn hd_type_name(schema: &Schema, f: &crate::schema::Field) -> String {
    let mut s = f.ty.name();
    if let Some(e) = f.enumeration.and_then(|i| schema.enums.get(i)) {
        s = format!("{s} (enum {})", e.name);
    }
    if f.time_reference.is_some() {
        s = format!("{s} delta time");
    }
    if let Some(a) = &f.array {
        s = format!("{} array", a.element.name());
    }
    if let FieldType::Numeric { precision, scale } = f.ty {
        s = format!("numeric({precision},{scale})");
    }
    s
}

#[cfg(test)]
mod tests;
