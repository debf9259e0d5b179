//! The NDJSON ingest fast path: a block of lines, one JSON object per line, → packed records in one
//! pass. A purpose-built scanner (no DOM per line): keys are matched against the schema by the order
//! seen on the previous line before any hashing, strings without escapes are used in place, and
//! numbers go straight to the field encoders as their text. Every JSON scalar is interpreted as its
//! text, exactly as `convert_record_to_binary` would interpret the same string; `null` leaves the
//! field zero; arrays are accepted for array fields.
//!
//! The common shapes take the fast paths of `super::fast` (a key spelled as on the previous line
//! matched with its quotes and colon in one compare; unescaped strings and plain unsigned numbers
//! written straight into the record); anything else, errors included, goes the general way.
//!
//! A line with any problem (broken JSON, a value a field refuses) is left out and reported with its
//! number; the lines around it are kept. Empty lines are skipped. Lines end with `\n` or `\r\n`.

use memchr::memchr;

use super::fast::{self, find_quote_or_backslash, FastFields};
use super::json_line::{ascii_cut, Line, Str, Syntax};
use super::{LineError, Parsed, RecordEncoder};

/// Scratch state kept across lines: the unescape buffer, the key order of the previous line and
/// the fast-path tables (`None`: general path only, which the tests compare against).
struct State {
    scratch: Vec<u8>,
    order: Vec<Option<usize>>,
    fast: Option<FastFields>,
}

/// Parses one non-empty line into `rec`; field problems go to `errors`. Returns false when the
/// line is to be left out.
fn parse_line(
    enc: &RecordEncoder,
    st: &mut State,
    line: &mut Line,
    line_no: u64,
    rec: &mut [u8],
    errors: &mut Vec<LineError>,
) -> bool {
    let before = errors.len();
    let syntax = parse_object(enc, st, line, line_no, rec, errors);
    if let Err(reason) = syntax {
        errors.push(LineError {
            line: line_no,
            field: None,
            reason,
        });
    }
    errors.len() == before
}

fn field_error(enc: &RecordEncoder, f: usize, line_no: u64, reason: String) -> LineError {
    LineError {
        line: line_no,
        field: Some(enc.plans[f].name.clone()),
        reason,
    }
}

fn parse_object(
    enc: &RecordEncoder,
    st: &mut State,
    l: &mut Line,
    line_no: u64,
    rec: &mut [u8],
    errors: &mut Vec<LineError>,
) -> Result<(), Syntax> {
    if l.peek() != Some(b'{') {
        return Err(format!(
            "line is not a JSON object (starts with '{}')",
            l.b[l.i].escape_ascii()
        ));
    }
    l.i += 1;
    l.ws();
    if l.peek() == Some(b'}') {
        l.i += 1;
    } else {
        let mut pos = 0;
        loop {
            l.ws();
            // The key of this position on the previous line, quotes and colon included.
            let hit = match (&st.fast, st.order.get(pos)) {
                (Some(ff), Some(&Some(f))) => ff.keys[f].matches(l.b, l.i).map(|n| (f, n)),
                _ => None,
            };
            let field = if let Some((f, n)) = hit {
                l.i += n;
                Some(f)
            } else {
                if l.peek() != Some(b'"') {
                    return l.fail("a key");
                }
                // Resolve the key to a field before the value reuses the scratch buffer.
                let field = match l.string(&mut st.scratch)? {
                    Str::Line(s, e) => resolve(enc, st, pos, &l.b[s..e]),
                    Str::Scratch => {
                        let key = std::mem::take(&mut st.scratch);
                        let f = resolve(enc, st, pos, &key);
                        st.scratch = key;
                        f
                    }
                };
                l.ws();
                if l.peek() != Some(b':') {
                    return l.fail("':'");
                }
                l.i += 1;
                field
            };
            pos += 1;
            l.ws();
            match (field, l.peek()) {
                (Some(f), _)
                    if st.fast.is_some() && fast_value(enc, l, f, line_no, rec, errors) => {}
                (None, _) => l.skip(&mut st.scratch, 0)?,
                (Some(f), Some(b'[')) if enc.plans[f].is_array() => {
                    parse_array(enc, st, l, f, line_no, rec, errors)?
                }
                (Some(f), Some(b'[' | b'{')) => {
                    l.skip(&mut st.scratch, 0)?;
                    errors.push(field_error(
                        enc,
                        f,
                        line_no,
                        "arrays and objects are accepted only for array fields".into(),
                    ));
                }
                (Some(f), _) => match l.scalar(&mut st.scratch)? {
                    None => enc.clear_field(f, rec),
                    Some(text) => {
                        if let Err(reason) = enc.encode_field(f, text, rec) {
                            errors.push(field_error(enc, f, line_no, reason));
                        }
                    }
                },
            }
            l.ws();
            match l.peek() {
                Some(b',') => l.i += 1,
                Some(b'}') => {
                    l.i += 1;
                    break;
                }
                _ => return l.fail("',' or '}'"),
            }
        }
    }
    l.ws();
    if l.i < l.b.len() {
        return l.fail("the end of the line after the object");
    }
    Ok(())
}

fn parse_array(
    enc: &RecordEncoder,
    st: &mut State,
    l: &mut Line,
    f: usize,
    line_no: u64,
    rec: &mut [u8],
    errors: &mut Vec<LineError>,
) -> Result<(), Syntax> {
    enc.clear_field(f, rec);
    l.i += 1;
    l.ws();
    if l.peek() == Some(b']') {
        l.i += 1;
        return Ok(());
    }
    let mut failed = false;
    let mut idx = 0;
    loop {
        l.ws();
        if matches!(l.peek(), Some(b'[' | b'{')) {
            l.skip(&mut st.scratch, 1)?;
            if !failed {
                errors.push(field_error(
                    enc,
                    f,
                    line_no,
                    format!("element {idx}: nested arrays and objects are not accepted"),
                ));
                failed = true;
            }
        } else if let Some(text) = l.scalar(&mut st.scratch)? {
            if let Err(reason) = enc.encode_element(f, idx, text, rec) {
                if !failed {
                    errors.push(field_error(enc, f, line_no, reason));
                    failed = true;
                }
            }
        }
        idx += 1;
        l.ws();
        match l.peek() {
            Some(b',') => l.i += 1,
            Some(b']') => {
                l.i += 1;
                return Ok(());
            }
            _ => return l.fail("',' or ']'"),
        }
    }
}

/// The fast path for the value of field `f` at `l.i`: an unescaped string or a plain unsigned
/// number of a scalar field. True when it wrote the field (or recorded the field's error, exactly
/// as the general path words it) and moved past the value; false leaves `l` and the record
/// untouched for the general path.
#[inline]
fn fast_value(
    enc: &RecordEncoder,
    l: &mut Line,
    f: usize,
    line_no: u64,
    rec: &mut [u8],
    errors: &mut Vec<LineError>,
) -> bool {
    let p = &enc.plans[f];
    if p.is_array() {
        return false;
    }
    let b = l.b;
    let (s, e, done) = match b.get(l.i) {
        Some(b'"') => {
            let (s, e) = (l.i + 1, find_quote_or_backslash(b, l.i + 1));
            if b.get(e) != Some(&b'"') {
                return false;
            }
            l.i = e + 1;
            (s, e, fast::string_value(enc, p, &b[s..e], rec))
        }
        Some(&first @ b'0'..=b'9') => {
            let (s, mut e, mut v) = (l.i, l.i, 0u64);
            while let Some(d) = b.get(e).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
                v = v.wrapping_mul(10).wrapping_add(d as u64);
                e += 1;
            }
            // Long numbers, leading zeros (an error), fractions and exponents go the general way.
            if e - s > 19
                || (e - s > 1 && first == b'0')
                || matches!(b.get(e), Some(b'.' | b'e' | b'E'))
            {
                return false;
            }
            l.i = e;
            (s, e, fast::uint_value(enc.order, p, v, rec))
        }
        _ => return false,
    };
    if !done {
        // The value is scanned but its type has no direct path, or the value is refused: the
        // field encoder writes it or words the error, as for the general path.
        if let Err(reason) = enc.encode_field(f, ascii_cut(b, s, e), rec) {
            errors.push(field_error(enc, f, line_no, reason));
        }
    }
    true
}

/// Field of a key: first the field seen at this position on the previous line, then the hash map.
#[inline]
fn resolve(enc: &RecordEncoder, st: &mut State, pos: usize, key: &[u8]) -> Option<usize> {
    if let Some(Some(f)) = st.order.get(pos) {
        let name = enc.plans[*f].name.as_bytes();
        // Keys are short: a byte loop beats a memcmp call.
        if name.len() == key.len() && name.iter().zip(key).all(|(a, b)| a == b) {
            return Some(*f);
        }
    }
    let f = enc.field_index(key);
    if pos < st.order.len() {
        st.order[pos] = f;
    } else if pos == st.order.len() {
        st.order.push(f);
    }
    f
}

/// Parses a block of NDJSON lines numbered from `first_line`. The block should end on a line
/// boundary (a streaming caller carries the unfinished tail to the next block); a final line
/// without `\n` is taken as whole.
pub fn parse_ndjson(enc: &RecordEncoder, buf: &[u8], first_line: u64) -> Parsed {
    parse_block(enc, buf, first_line, true)
}

/// [`parse_ndjson`] on the general path only, the reference the fast paths are tested against.
#[cfg(test)]
pub(super) fn parse_ndjson_general(enc: &RecordEncoder, buf: &[u8], first_line: u64) -> Parsed {
    parse_block(enc, buf, first_line, false)
}

fn parse_block(enc: &RecordEncoder, buf: &[u8], first_line: u64, fast: bool) -> Parsed {
    let rs = enc.record_size;
    let mut out = Parsed {
        records: Vec::with_capacity((buf.len() / 64 + 1).min(1 << 24) * rs.min(4096)),
        ..Default::default()
    };
    let mut st = State {
        scratch: Vec::new(),
        order: Vec::new(),
        fast: fast.then(|| FastFields::new(enc)),
    };
    let block_is_utf8 = fast::is_ascii(buf) || std::str::from_utf8(buf).is_ok();
    let mut line_no = first_line;
    let mut pos = 0;
    while pos < buf.len() {
        let end = memchr(b'\n', &buf[pos..]).map_or(buf.len(), |k| pos + k);
        let raw = &buf[pos..end];
        pos = end + 1;
        let this = line_no;
        line_no += 1;
        let mut line = Line { b: raw, i: 0 };
        line.ws();
        if line.i == raw.len() {
            continue;
        }
        // Checked per line only when the block as a whole is not UTF-8.
        if let Some(Err(e)) = (!block_is_utf8).then(|| std::str::from_utf8(raw)) {
            let reason = format!(
                "line is not UTF-8 (bad byte at column {})",
                e.valid_up_to() + 1
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
        if parse_line(
            enc,
            &mut st,
            &mut line,
            this,
            &mut out.records[start..],
            &mut out.errors,
        ) {
            out.count += 1;
        } else {
            out.records.truncate(start);
        }
    }
    out.lines = line_no - first_line;
    out
}
