//! PostgreSQL text-format DataRow messages, and `COPY ... TO STDOUT` text rows, from Arrow-layout
//! column buffers.
//!
//! hd_sql's PostgreSQL door sends every result row as a DataRow ('D') message whose values are
//! text. Writing them cell by cell in JavaScript cost more than the rest of a 400 000-row answer
//! (issue #17, Q4b); here one call writes a block of rows from the columns' buffers as they are:
//! integers through `itoa`, floats as ECMAScript's `Number.prototype.toString` writes them
//! (`ryu-js`, so the text is the one the JavaScript path wrote), UTF-8 bytes copied, booleans as
//! `t`/`f`, enum labels by code. Types with no rule here are rendered to text first by the caller
//! and arrive as [`Cells::Text`]. `COPY` rows are the same values, tab-separated, in CopyData messages.
//!
//! Every buffer comes from outside Rust: lengths are checked before a row is written and a bad
//! descriptor is an error, never a panic.

#[cfg(test)]
mod tests;

use thiserror::Error;

/// The values of one result column, as Arrow lays them out. Row `i` of the block is element `i`
/// (value buffers start at the chunk's first row), except booleans, whose bits start at `offset`.
#[derive(Debug, Clone)]
pub enum Cells<'a> {
    /// Little-endian integers of `width` bytes (1, 2, 4 or 8).
    Int {
        data: &'a [u8],
        width: u8,
        signed: bool,
    },
    /// Little-endian IEEE floats of `width` bytes (4 or 8).
    Float { data: &'a [u8], width: u8 },
    /// One bit a row, least significant bit first, row `i` at bit `offset + i`.
    Bool { bits: &'a [u8], offset: usize },
    /// UTF-8 text: row `i` is `data[offsets[i]..offsets[i + 1]]` (offsets little-endian i32).
    Text { offsets: &'a [u8], data: &'a [u8] },
    /// Dictionary codes (integers as in `Int`) naming `labels`; a code with no label is NULL.
    Labels {
        codes: &'a [u8],
        width: u8,
        signed: bool,
        labels: Vec<&'a [u8]>,
    },
}

/// One result column: its values and, when some are NULL, its validity bits (row `i` at bit
/// `offset + i`, 1 = valid).
#[derive(Debug, Clone)]
pub struct TextColumn<'a> {
    pub cells: Cells<'a>,
    pub validity: Option<(&'a [u8], usize)>,
}

/// Why a block of rows could not be written.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PgTextError {
    #[error("column {column}: {what}")]
    Column { column: usize, what: String },
    #[error("a DataRow holds at most 32767 columns, not {0}")]
    TooManyColumns(usize),
    #[error("a row of {0} bytes is larger than a PostgreSQL message can be")]
    RowTooLarge(usize),
}

impl PgTextError {
    /// The code JS errors carry for this failure.
    pub fn code(&self) -> &'static str {
        "HD_PG_TEXT_ROWS"
    }
}

fn bad(column: usize, what: impl Into<String>) -> PgTextError {
    PgTextError::Column {
        column,
        what: what.into(),
    }
}

/// Checks that `cols` can give rows `0..rows` (every buffer long enough, widths known).
fn check(cols: &[TextColumn<'_>], rows: usize) -> Result<(), PgTextError> {
    if cols.len() > i16::MAX as usize {
        return Err(PgTextError::TooManyColumns(cols.len()));
    }
    for (c, col) in cols.iter().enumerate() {
        if let Some((bits, offset)) = col.validity {
            if rows > 0 && (offset + rows).div_ceil(8) > bits.len() {
                return Err(bad(c, "validity bitmap shorter than the rows"));
            }
        }
        match &col.cells {
            Cells::Int { data, width, .. }
            | Cells::Labels {
                codes: data, width, ..
            } => {
                if !matches!(width, 1 | 2 | 4 | 8) {
                    return Err(bad(c, format!("integer width {width}")));
                }
                if data.len() < rows * *width as usize {
                    return Err(bad(c, "values shorter than the rows"));
                }
            }
            Cells::Float { data, width } => {
                if !matches!(width, 4 | 8) {
                    return Err(bad(c, format!("float width {width}")));
                }
                if data.len() < rows * *width as usize {
                    return Err(bad(c, "values shorter than the rows"));
                }
            }
            Cells::Bool { bits, offset } => {
                if rows > 0 && (offset + rows).div_ceil(8) > bits.len() {
                    return Err(bad(c, "boolean bits shorter than the rows"));
                }
            }
            Cells::Text { offsets, data } => {
                if offsets.len() < (rows + 1) * 4 {
                    return Err(bad(c, "text offsets shorter than the rows"));
                }
                let at = |i: usize| i32_at(offsets, i);
                let (first, last) = (at(0), at(rows));
                if first < 0 || last < first || last as usize > data.len() {
                    return Err(bad(c, "text offsets outside the text bytes"));
                }
            }
        }
    }
    Ok(())
}

#[inline(always)]
fn i32_at(b: &[u8], i: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[i * 4..i * 4 + 4]);
    i32::from_le_bytes(a)
}

#[inline(always)]
fn bit(bits: &[u8], k: usize) -> bool {
    (bits[k >> 3] >> (k & 7)) & 1 == 1
}

/// The integer at row `i` as i128 (every 8-byte value, signed or not, fits).
#[inline(always)]
fn int_at(data: &[u8], width: u8, signed: bool, i: usize) -> i128 {
    let w = width as usize;
    let b = &data[i * w..i * w + w];
    match (w, signed) {
        (1, true) => b[0] as i8 as i128,
        (1, false) => b[0] as i128,
        (2, true) => i16::from_le_bytes([b[0], b[1]]) as i128,
        (2, false) => u16::from_le_bytes([b[0], b[1]]) as i128,
        (4, true) => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i128,
        (4, false) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i128,
        (_, s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            if s {
                i64::from_le_bytes(a) as i128
            } else {
                u64::from_le_bytes(a) as i128
            }
        }
    }
}

/// The text of one value: NULL, text needing no COPY escapes (numbers, `t`/`f`), or text that may.
enum Value<'x> {
    Null,
    Plain(&'x [u8]),
    Text(&'x [u8]),
}

/// The value of row `i` of `col` (column `c`, for errors); numbers are written into `ints` / `floats`.
#[inline(always)]
fn value_of<'r, 'x: 'r>(
    col: &'r TextColumn<'x>,
    c: usize,
    i: usize,
    ints: &'r mut itoa::Buffer,
    floats: &'r mut ryu_js::Buffer,
) -> Result<Value<'r>, PgTextError> {
    if let Some((bits, offset)) = col.validity {
        if !bit(bits, offset + i) {
            return Ok(Value::Null);
        }
    }
    Ok(match &col.cells {
        Cells::Int {
            data,
            width,
            signed,
        } => Value::Plain(ints.format(int_at(data, *width, *signed, i)).as_bytes()),
        Cells::Float { data, width } => {
            let v = if *width == 4 {
                f32::from_le_bytes([
                    data[i * 4],
                    data[i * 4 + 1],
                    data[i * 4 + 2],
                    data[i * 4 + 3],
                ]) as f64
            } else {
                let mut a = [0u8; 8];
                a.copy_from_slice(&data[i * 8..i * 8 + 8]);
                f64::from_le_bytes(a)
            };
            Value::Plain(floats.format(v).as_bytes())
        }
        Cells::Bool { bits, offset } => {
            Value::Plain(if bit(bits, offset + i) { b"t" } else { b"f" })
        }
        Cells::Text { offsets, data } => {
            let (a, b) = (i32_at(offsets, i), i32_at(offsets, i + 1));
            if a < 0 || b < a || b as usize > data.len() {
                return Err(bad(
                    c,
                    format!("text offsets of row {i} outside the text bytes"),
                ));
            }
            Value::Text(&data[a as usize..b as usize])
        }
        Cells::Labels {
            codes,
            width,
            signed,
            labels,
        } => {
            let code = int_at(codes, *width, *signed, i);
            match usize::try_from(code).ok().and_then(|k| labels.get(k)) {
                Some(label) => Value::Text(label),
                None => Value::Null,
            }
        }
    })
}

/// How a row's message is laid out: its type byte and what comes before, between and after the
/// values (DataRow and COPY text differ only there).
trait RowFormat {
    /// The message type byte.
    const TAG: u8;
    /// Before the first value of a row of `columns` values.
    fn begin(out: &mut Vec<u8>, columns: usize);
    /// Value `c` of the row.
    fn value(out: &mut Vec<u8>, c: usize, v: Value<'_>);
    /// After the last value.
    fn end(out: &mut Vec<u8>);
}

/// DataRow ('D'): the column count, then each value as its length and bytes (-1: NULL).
struct DataRow;

impl RowFormat for DataRow {
    const TAG: u8 = b'D';
    fn begin(out: &mut Vec<u8>, columns: usize) {
        // check() refused more than i16::MAX columns.
        out.extend_from_slice(&(columns as i16).to_be_bytes());
    }
    fn value(out: &mut Vec<u8>, _: usize, v: Value<'_>) {
        match v {
            Value::Null => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Value::Plain(b) | Value::Text(b) => {
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(b);
            }
        }
    }
    fn end(_: &mut Vec<u8>) {}
}

/// CopyData ('d') of COPY text: values separated by tabs, `\N` for NULL, text escaped, a newline last.
struct CopyText;

impl RowFormat for CopyText {
    const TAG: u8 = b'd';
    fn begin(_: &mut Vec<u8>, _: usize) {}
    fn value(out: &mut Vec<u8>, c: usize, v: Value<'_>) {
        if c > 0 {
            out.push(b'\t');
        }
        match v {
            Value::Null => out.extend_from_slice(b"\\N"),
            Value::Plain(b) => out.extend_from_slice(b),
            Value::Text(b) => copy_escaped(out, b),
        }
    }
    fn end(out: &mut Vec<u8>) {
        out.push(b'\n');
    }
}

/// Appends rows `from..to` of `cols` as `F`'s messages, each one's length filled in after its body.
fn write_rows<F: RowFormat>(
    cols: &[TextColumn<'_>],
    from: usize,
    to: usize,
    out: &mut Vec<u8>,
) -> Result<(), PgTextError> {
    check(cols, to)?;
    let (mut ints, mut floats) = (itoa::Buffer::new(), ryu_js::Buffer::new());
    for i in from..to {
        let start = out.len();
        out.push(F::TAG);
        out.extend_from_slice(&[0; 4]);
        F::begin(out, cols.len());
        for (c, col) in cols.iter().enumerate() {
            F::value(out, c, value_of(col, c, i, &mut ints, &mut floats)?);
        }
        F::end(out);
        let len = out.len() - start - 1;
        let len = i32::try_from(len).map_err(|_| PgTextError::RowTooLarge(len))?;
        out[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

/// Appends rows `from..to` of `cols` to `out` as DataRow messages, text format.
pub fn write_data_rows(
    cols: &[TextColumn<'_>],
    from: usize,
    to: usize,
    out: &mut Vec<u8>,
) -> Result<(), PgTextError> {
    write_rows::<DataRow>(cols, from, to, out)
}

/// Appends rows `from..to` of `cols` to `out` as `COPY ... TO STDOUT` text: one CopyData message
/// a row, values separated by tabs, `\N` for NULL, backslash, tab, newline and carriage return in
/// text escaped with a backslash, the row ended by a newline.
pub fn write_copy_rows(
    cols: &[TextColumn<'_>],
    from: usize,
    to: usize,
    out: &mut Vec<u8>,
) -> Result<(), PgTextError> {
    write_rows::<CopyText>(cols, from, to, out)
}

/// `b` with COPY text's escapes: runs without a special byte are copied whole.
fn copy_escaped(out: &mut Vec<u8>, b: &[u8]) {
    let mut rest = b;
    while let Some(k) = rest
        .iter()
        .position(|&x| matches!(x, b'\\' | b'\t' | b'\n' | b'\r'))
    {
        out.extend_from_slice(&rest[..k]);
        out.push(b'\\');
        out.push(match rest[k] {
            b'\t' => b't',
            b'\n' => b'n',
            b'\r' => b'r',
            x => x,
        });
        rest = &rest[k + 1..];
    }
    out.extend_from_slice(rest);
}
