//! The CSV ingest fast path (RFC 4180): a block of rows → packed records in one pass. Fields are
//! separated by the delimiter (default `,`); a field in double quotes may hold delimiters, line
//! breaks and `""` for a quote; rows end with `\n` or `\r\n`. The first row is the header unless
//! the caller gives the column names. Columns the schema does not name are skipped; an empty value
//! leaves its field zero. A row with a problem is left out and reported with the line it starts on.

use super::{LineError, Parsed, RecordEncoder};

/// How to read a CSV block.
#[derive(Debug, Clone)]
pub struct CsvOptions {
    /// Column names; `None` reads them from the block's first row.
    pub header: Option<Vec<String>>,
    pub delimiter: u8,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            header: None,
            delimiter: b',',
        }
    }
}

/// One row split into fields: the unquoted bytes of all fields back to back, and where each ends.
#[derive(Default)]
struct Row {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Row {
    fn field(&self, k: usize) -> &[u8] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.bytes[start..self.ends[k]]
    }
}

/// Reads one row starting at `*pos`; advances `*pos` past its line break and `*line` by the line
/// breaks consumed. `Err` carries the reason when the row is malformed (the rest of its line is
/// skipped).
fn read_row(
    buf: &[u8],
    pos: &mut usize,
    line: &mut u64,
    delim: u8,
    row: &mut Row,
) -> Result<(), String> {
    row.bytes.clear();
    row.ends.clear();
    let mut i = *pos;
    loop {
        if buf.get(i) == Some(&b'"') {
            let open_line = *line;
            i += 1;
            loop {
                match buf.get(i) {
                    None => {
                        *pos = buf.len();
                        return Err(format!(
                            "unterminated quoted field (opened on line {open_line})"
                        ));
                    }
                    Some(b'"') if buf.get(i + 1) == Some(&b'"') => {
                        row.bytes.push(b'"');
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        if c == b'\n' {
                            *line += 1;
                        }
                        row.bytes.push(c);
                        i += 1;
                    }
                }
            }
            match buf.get(i) {
                Some(&c) if c == delim => {}
                None | Some(b'\n') => {}
                Some(b'\r') if matches!(buf.get(i + 1), None | Some(b'\n')) => i += 1,
                Some(&c) => {
                    let end = buf[i..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(buf.len(), |k| i + k + 1);
                    *pos = end;
                    *line += 1;
                    return Err(format!(
                        "unexpected '{}' after a closing quote",
                        c.escape_ascii()
                    ));
                }
            }
        } else {
            let start = row.bytes.len();
            while let Some(&c) = buf.get(i) {
                if c == delim || c == b'\n' {
                    break;
                }
                row.bytes.push(c);
                i += 1;
            }
            // A CRLF line end: drop this field's own '\r' only. An empty last field must not
            // take the previous field's trailing '\r' (as in `a\r,\n`): the previous field's
            // end would then lie past the row's bytes (found by the ndjson_parse fuzz target).
            if buf.get(i) == Some(&b'\n')
                && row.bytes.len() > start
                && row.bytes.last() == Some(&b'\r')
            {
                row.bytes.pop();
            }
        }
        row.ends.push(row.bytes.len());
        match buf.get(i) {
            Some(&c) if c == delim => i += 1,
            Some(_) => {
                *pos = i + 1;
                *line += 1;
                return Ok(());
            }
            None => {
                *pos = buf.len();
                *line += 1;
                return Ok(());
            }
        }
    }
}

/// Parses a block of CSV rows whose first line is numbered `first_line`.
pub fn parse_csv(enc: &RecordEncoder, buf: &[u8], first_line: u64, opts: &CsvOptions) -> Parsed {
    let rs = enc.record_size;
    let mut out = Parsed::default();
    let mut row = Row::default();
    let mut columns: Option<Vec<Option<usize>>> = opts.header.as_ref().map(|h| {
        h.iter()
            .map(|name| enc.field_index(name.as_bytes()))
            .collect()
    });
    let mut pos = 0;
    let mut line = first_line;
    while pos < buf.len() {
        let this = line;
        let result = read_row(buf, &mut pos, &mut line, opts.delimiter, &mut row);
        if let Err(reason) = result {
            out.errors.push(LineError {
                line: this,
                field: None,
                reason,
            });
            continue;
        }
        if row.ends.len() == 1 && row.ends[0] == 0 {
            continue; // empty line
        }
        let Some(cols) = &columns else {
            let mut names = Vec::with_capacity(row.ends.len());
            let mut header = Vec::with_capacity(row.ends.len());
            for k in 0..row.ends.len() {
                let name = String::from_utf8_lossy(row.field(k)).into_owned();
                names.push(enc.field_index(name.as_bytes()));
                header.push(name);
            }
            columns = Some(names);
            out.header = Some(header);
            continue;
        };
        if row.ends.len() != cols.len() {
            let reason = format!(
                "row has {} fields, the header {}",
                row.ends.len(),
                cols.len()
            );
            out.errors.push(LineError {
                line: this,
                field: None,
                reason,
            });
            continue;
        }
        let start = out.records.len();
        out.records.resize(start + rs, 0);
        let rec = &mut out.records[start..];
        let before = out.errors.len();
        for (k, col) in cols.iter().enumerate() {
            let Some(f) = *col else { continue };
            let result = match std::str::from_utf8(row.field(k)) {
                Ok(text) => enc.encode_field(f, text, rec),
                Err(_) => Err("value is not UTF-8".to_string()),
            };
            if let Err(reason) = result {
                out.errors.push(LineError {
                    line: this,
                    field: Some(enc.plans[f].name.clone()),
                    reason,
                });
            }
        }
        if out.errors.len() == before {
            out.count += 1;
        } else {
            out.records.truncate(start);
        }
    }
    out.lines = line - first_line;
    out
}
