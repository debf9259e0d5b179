//! Columnar query results (docs/hdwp.md, "columns"; docs/query.md, `result_format`): the body of
//! an HDWP `columns` frame. A Storage Node decodes the records a query matched (after its field
//! mask) into the Arrow-layout columns of the fields the client asked for and writes them here;
//! the client checks every length, offset and index against the dataset's plan before a typed
//! array views any of it, so a malformed body is a [`ColumnarError`], never a wrong column.
//!
//! Body layout (integers big-endian; column buffers as the decoder wrote them, little-endian):
//!
//! ```text
//! 0   1   format version (1)
//! 1   1   flags: bit 0 addresses raw; every other bit 0
//! 2   2   column count n
//! 4   4   rows
//! 8   2n  schema field index of each column, in column order
//! …       n columns, each:  u32 len, u32 null count, u8 parts (bit 0 validity, bit 1 offsets,
//!         bit 2 child), u32 data length + data, [u32 + offsets], [u32 + validity], [child column]
//! ```

use crate::decode::{
    decode_columns_projected, plan, Addresses, ArrowType, Column, Columns, DecodeError,
    DecodeOptions,
};
use crate::schema::Schema;

#[cfg(test)]
mod tests;

/// The body format this implementation writes and reads.
pub const COLUMNAR_VERSION: u8 = 1;
/// Flag bit: ipv4 / ipv6 columns are raw integers / bytes (otherwise inet text).
pub const FLAG_RAW_ADDRESSES: u8 = 0x01;
const PART_VALIDITY: u8 = 0x01;
const PART_OFFSETS: u8 = 0x02;
const PART_CHILD: u8 = 0x04;
/// Lists nest one level (an array field's elements are scalars).
const MAX_DEPTH: usize = 2;

/// Why a columnar body was refused; `code()` is stable (`ERR_COLUMNAR_*`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColumnarError {
    /// The body ends inside a field.
    #[error("columnar body ends inside {what} (at byte {at})")]
    Truncated { what: &'static str, at: usize },
    /// Format version or flags this reader does not know.
    #[error("columnar body: {0}")]
    Unsupported(String),
    /// The columns are not the ones asked for (count, field, order, row count, presentation).
    #[error("columnar body: {0}")]
    Projection(String),
    /// A column's buffers do not hold what its type and length say.
    #[error("columnar body: column '{column}': {message}")]
    Shape { column: String, message: String },
    /// Bytes after the last column.
    #[error("columnar body: {0} bytes after the last column")]
    Trailing(usize),
}

impl ColumnarError {
    /// The stable error code.
    pub fn code(&self) -> &'static str {
        match self {
            ColumnarError::Truncated { .. } => "ERR_COLUMNAR_TRUNCATED",
            ColumnarError::Unsupported(_) => "ERR_COLUMNAR_UNSUPPORTED",
            ColumnarError::Projection(_) => "ERR_COLUMNAR_PROJECTION",
            ColumnarError::Shape { .. } => "ERR_COLUMNAR_SHAPE",
            ColumnarError::Trailing(_) => "ERR_COLUMNAR_TRAILING",
        }
    }
}

/// Decodes `records` (a whole number of records; `mask`, when given, ANDed into a copy first) to
/// the columns of `fields` (schema field indices, in order) and writes them as one columnar body.
pub fn encode_columnar(
    schema: &Schema,
    records: &[u8],
    fields: &[usize],
    opts: &DecodeOptions,
    mask: Option<&[u8]>,
) -> Result<Vec<u8>, DecodeError> {
    let masked;
    let records = match mask {
        Some(m) => {
            let mut copy = records.to_vec();
            crate::policy::apply_field_mask(&mut copy, m).map_err(|e| DecodeError::Schema {
                field: String::new(),
                message: format!("field mask: {e}"),
            })?;
            masked = copy;
            &masked[..]
        }
        None => records,
    };
    let cols = decode_columns_projected(schema, records, opts, Some(fields))?;
    Ok(write_columnar(&cols, fields, opts))
}

/// Writes decoded columns (of `fields`, in that order) as a columnar body.
pub fn write_columnar(cols: &Columns, fields: &[usize], opts: &DecodeOptions) -> Vec<u8> {
    let mut size = 8 + 2 * fields.len();
    for c in &cols.columns {
        size += column_size(c);
    }
    let mut out = Vec::with_capacity(size);
    out.push(COLUMNAR_VERSION);
    out.push(if opts.addresses == Addresses::Raw {
        FLAG_RAW_ADDRESSES
    } else {
        0
    });
    out.extend_from_slice(&(fields.len() as u16).to_be_bytes());
    out.extend_from_slice(&(cols.rows as u32).to_be_bytes());
    for &f in fields {
        out.extend_from_slice(&(f as u16).to_be_bytes());
    }
    for c in &cols.columns {
        write_column(&mut out, c);
    }
    out
}

fn column_size(c: &Column) -> usize {
    13 + c.data.len()
        + c.offsets.as_ref().map_or(0, |o| 4 + o.len())
        + c.validity.as_ref().map_or(0, |v| 4 + v.len())
        + c.child.as_ref().map_or(0, |ch| column_size(ch))
}

fn write_column(out: &mut Vec<u8>, c: &Column) {
    out.extend_from_slice(&(c.len as u32).to_be_bytes());
    out.extend_from_slice(&(c.null_count as u32).to_be_bytes());
    let mut parts = 0u8;
    if c.validity.is_some() {
        parts |= PART_VALIDITY;
    }
    if c.offsets.is_some() {
        parts |= PART_OFFSETS;
    }
    if c.child.is_some() {
        parts |= PART_CHILD;
    }
    out.push(parts);
    out.extend_from_slice(&(c.data.len() as u32).to_be_bytes());
    out.extend_from_slice(&c.data);
    if let Some(o) = &c.offsets {
        out.extend_from_slice(&(o.len() as u32).to_be_bytes());
        out.extend_from_slice(o);
    }
    if let Some(v) = &c.validity {
        out.extend_from_slice(&(v.len() as u32).to_be_bytes());
        out.extend_from_slice(v);
    }
    if let Some(ch) = &c.child {
        write_column(out, ch);
    }
}

/// Reads a columnar body that must hold exactly the columns of `fields` (schema field indices, in
/// order) in the presentation of `opts`, `rows` rows (`None`: any). Every buffer is checked
/// against the column's Arrow type before it is returned.
pub fn read_columnar(
    schema: &Schema,
    fields: &[usize],
    opts: &DecodeOptions,
    rows: Option<usize>,
    body: &[u8],
) -> Result<Columns, ColumnarError> {
    let mut r = Cursor { buf: body, pos: 0 };
    let version = r.u8("the format version")?;
    if version != COLUMNAR_VERSION {
        return Err(ColumnarError::Unsupported(format!(
            "format version {version}; this reader knows {COLUMNAR_VERSION}"
        )));
    }
    let flags = r.u8("the flags")?;
    if flags & !FLAG_RAW_ADDRESSES != 0 {
        return Err(ColumnarError::Unsupported(format!(
            "unknown flag bits 0x{flags:02x}"
        )));
    }
    let raw = flags & FLAG_RAW_ADDRESSES != 0;
    if raw != (opts.addresses == Addresses::Raw) {
        return Err(ColumnarError::Projection(format!(
            "addresses are {}, the reader asked for {}",
            if raw { "raw" } else { "text" },
            if raw { "text" } else { "raw" }
        )));
    }
    let n = r.u16("the column count")? as usize;
    let body_rows = r.u32("the row count")? as usize;
    if let Some(want) = rows {
        if body_rows != want {
            return Err(ColumnarError::Projection(format!(
                "{body_rows} rows, the frame says {want}"
            )));
        }
    }
    if n != fields.len() {
        return Err(ColumnarError::Projection(format!(
            "{n} columns, {} were asked for",
            fields.len()
        )));
    }
    for (i, &want) in fields.iter().enumerate() {
        let got = r.u16("a field index")? as usize;
        if got != want {
            let name = |ix: usize| {
                schema
                    .fields
                    .get(ix)
                    .map_or(format!("#{ix}"), |f| format!("'{}'", f.name))
            };
            return Err(ColumnarError::Projection(format!(
                "column {i} is field {}, {} was asked for",
                name(got),
                name(want)
            )));
        }
    }
    let plan = plan(schema, opts).map_err(|e| ColumnarError::Projection(e.to_string()))?;
    let mut columns = Vec::with_capacity(n);
    for &f in fields {
        let p = plan
            .get(f)
            .ok_or_else(|| ColumnarError::Projection(format!("field index {f} out of range")))?;
        columns.push(read_column(&mut r, &p.name, &p.ty, body_rows, 0)?);
    }
    if r.pos != body.len() {
        return Err(ColumnarError::Trailing(body.len() - r.pos));
    }
    Ok(Columns {
        rows: body_rows,
        columns,
    })
}

fn shape(column: &str, message: String) -> ColumnarError {
    ColumnarError::Shape {
        column: column.to_string(),
        message,
    }
}

fn read_column(
    r: &mut Cursor<'_>,
    name: &str,
    ty: &ArrowType,
    want_len: usize,
    depth: usize,
) -> Result<Column, ColumnarError> {
    if depth >= MAX_DEPTH {
        return Err(shape(name, "lists nest deeper than one level".into()));
    }
    let len = r.u32("a column length")? as usize;
    if len != want_len {
        return Err(shape(name, format!("{len} values, {want_len} expected")));
    }
    let null_count = r.u32("a null count")? as usize;
    let parts = r.u8("a column's parts")?;
    if parts & !(PART_VALIDITY | PART_OFFSETS | PART_CHILD) != 0 {
        return Err(shape(name, format!("unknown part bits 0x{parts:02x}")));
    }
    let data = r.sized("column data")?.to_vec();
    let offsets = if parts & PART_OFFSETS != 0 {
        Some(r.sized("column offsets")?.to_vec())
    } else {
        None
    };
    let validity = if parts & PART_VALIDITY != 0 {
        Some(r.sized("a validity bitmap")?.to_vec())
    } else {
        None
    };
    // Validity: ceil(len / 8) bytes whose first `len` bits hold exactly `null_count` zeros.
    match &validity {
        Some(v) => {
            if v.len() != len.div_ceil(8) {
                return Err(shape(
                    name,
                    format!("validity of {} bytes for {len} values", v.len()),
                ));
            }
            let valid: usize = (0..len).filter(|i| v[i / 8] >> (i % 8) & 1 == 1).count();
            if len - valid != null_count {
                return Err(shape(
                    name,
                    format!(
                        "null count {null_count}, the bitmap holds {} nulls",
                        len - valid
                    ),
                ));
            }
        }
        None if null_count != 0 => {
            return Err(shape(
                name,
                format!("null count {null_count} without a validity bitmap"),
            ))
        }
        None => {}
    }
    let needs_offsets = matches!(
        ty,
        ArrowType::Utf8 | ArrowType::Binary | ArrowType::List { .. }
    );
    if needs_offsets != offsets.is_some() {
        return Err(shape(
            name,
            if needs_offsets {
                "offsets missing".to_string()
            } else {
                "offsets on a fixed-width column".to_string()
            },
        ));
    }
    let is_list = matches!(ty, ArrowType::List { .. });
    if is_list != (parts & PART_CHILD != 0) {
        return Err(shape(
            name,
            if is_list {
                "a list without its element column".to_string()
            } else {
                "an element column on a column that is not a list".to_string()
            },
        ));
    }
    let fixed = |width: usize| -> Result<(), ColumnarError> {
        let want = len.saturating_mul(width);
        if data.len() != want {
            return Err(shape(
                name,
                format!(
                    "{} data bytes, {len} values of {width} bytes are {want}",
                    data.len()
                ),
            ));
        }
        Ok(())
    };
    let mut child = None;
    match ty {
        ArrowType::Int { bit_width, .. } | ArrowType::Float { bit_width } => {
            fixed(*bit_width as usize / 8)?
        }
        ArrowType::Decimal { bit_width, .. } => fixed(*bit_width as usize / 8)?,
        ArrowType::FixedSizeBinary { byte_width } => fixed(*byte_width)?,
        ArrowType::Bool => {
            if data.len() != len.div_ceil(8) {
                return Err(shape(
                    name,
                    format!("{} bytes of booleans for {len} values", data.len()),
                ));
            }
        }
        ArrowType::Dictionary { labels } => {
            fixed(4)?;
            for (i, w) in data.chunks_exact(4).enumerate() {
                let ix = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                if ix < 0 || ix as usize >= labels.len() {
                    return Err(shape(
                        name,
                        format!(
                            "row {i}: dictionary index {ix}, the enum has {} labels",
                            labels.len()
                        ),
                    ));
                }
            }
        }
        ArrowType::Utf8 | ArrowType::Binary => {
            let o = offsets.as_deref().unwrap_or_default();
            check_offsets(name, o, len, data.len())?;
            if matches!(ty, ArrowType::Utf8) {
                let s = std::str::from_utf8(&data).map_err(|e| {
                    shape(
                        name,
                        format!("not UTF-8 (valid up to byte {})", e.valid_up_to()),
                    )
                })?;
                for w in o.chunks_exact(4) {
                    let at = u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize;
                    if !s.is_char_boundary(at) {
                        return Err(shape(name, format!("offset {at} splits a UTF-8 character")));
                    }
                }
            }
        }
        ArrowType::List { element } => {
            if !data.is_empty() {
                return Err(shape(name, "a list column carries data bytes".into()));
            }
            let o = offsets.as_deref().unwrap_or_default();
            // The element count is the last offset; check_offsets bounds it by the child's length.
            let last = if o.len() >= 4 {
                let w = &o[o.len() - 4..];
                u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize
            } else {
                0
            };
            let ch = read_column(r, name, element, last, depth + 1)?;
            check_offsets(name, o, len, ch.len)?;
            child = Some(Box::new(ch));
        }
    }
    Ok(Column {
        len,
        null_count,
        validity,
        offsets,
        data,
        child,
    })
}

/// `len + 1` little-endian i32 offsets from 0, never decreasing, ending at `end`.
fn check_offsets(name: &str, o: &[u8], len: usize, end: usize) -> Result<(), ColumnarError> {
    if o.len() != (len + 1) * 4 {
        return Err(shape(
            name,
            format!("{} offset bytes for {len} values", o.len()),
        ));
    }
    let mut prev = 0i64;
    for (i, w) in o.chunks_exact(4).enumerate() {
        let v = i32::from_le_bytes([w[0], w[1], w[2], w[3]]) as i64;
        if (i == 0 && v != 0) || v < prev {
            return Err(shape(
                name,
                format!("offset {i} is {v}: offsets start at 0 and never decrease"),
            ));
        }
        prev = v;
    }
    if prev as usize != end {
        return Err(shape(
            name,
            format!("the last offset is {prev}, the values hold {end}"),
        ));
    }
    Ok(())
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ColumnarError> {
        match self.pos.checked_add(n).filter(|&e| e <= self.buf.len()) {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(ColumnarError::Truncated { what, at: self.pos }),
        }
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, ColumnarError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, ColumnarError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, ColumnarError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A u32 length followed by that many bytes.
    fn sized(&mut self, what: &'static str) -> Result<&'a [u8], ColumnarError> {
        let n = self.u32(what)? as usize;
        self.take(n, what)
    }
}
