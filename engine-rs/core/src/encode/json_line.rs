//! The JSON scanner under the NDJSON fast path: one line at a time, no DOM. Strings without
//! escapes stay in the line, escaped ones are unescaped into a scratch buffer; numbers are
//! returned as their text; values of keys the schema does not name are skipped (nested up to
//! `MAX_DEPTH`). Errors say what was expected and what was found, with the column.

use memchr::memchr2;

use super::fast::find_quote_or_backslash;

/// Deepest nesting skipped inside values of keys the schema does not name.
const MAX_DEPTH: usize = 64;

/// Where a scanned string lives: in the line, or unescaped into the scratch buffer.
pub(super) enum Str {
    Line(usize, usize),
    Scratch,
}

/// A slice of a line already checked as UTF-8, cut at ASCII delimiters (quotes, number ends), so
/// it is UTF-8 too.
#[inline]
pub(super) fn ascii_cut(b: &[u8], s: usize, e: usize) -> &str {
    debug_assert!(std::str::from_utf8(&b[s..e]).is_ok());
    // SAFETY: `b` is a whole line known to be UTF-8 (`parse_ndjson` checks the block, or the line
    // when the block holds invalid bytes; a block cut at '\n' cuts no character), and `s`
    // and `e` sit next to ASCII bytes (a quote, a digit or a delimiter), which never fall inside a
    // multi-byte UTF-8 sequence; so `b[s..e]` is valid UTF-8.
    unsafe { std::str::from_utf8_unchecked(&b[s..e]) }
}

/// One line being scanned: its bytes and the scan position.
pub(super) struct Line<'a> {
    pub b: &'a [u8],
    pub i: usize,
}

/// A syntax error: the whole line is left out with this reason.
pub(super) type Syntax = String;

fn hex4(b: &[u8]) -> Option<u32> {
    if b.len() < 4 {
        return None;
    }
    b[..4]
        .iter()
        .try_fold(0u32, |a, &c| Some(a << 4 | (c as char).to_digit(16)?))
}

impl<'a> Line<'a> {
    #[inline]
    pub(super) fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\r') {
            self.i += 1;
        }
    }

    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    pub(super) fn fail<T>(&self, what: &str) -> Result<T, Syntax> {
        let got = match self.peek() {
            None => "the end of the line".to_string(),
            Some(c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(c) => format!("byte {c:#04x}"),
        };
        Err(format!(
            "broken JSON at column {}: expected {what}, found {got}",
            self.i + 1
        ))
    }

    /// Scans a string starting at its opening quote.
    pub(super) fn string(&mut self, scratch: &mut Vec<u8>) -> Result<Str, Syntax> {
        let start = self.i + 1;
        // Keys and values are short: a word-at-a-time scan beats a SIMD search's setup here.
        let k = find_quote_or_backslash(self.b, start);
        match self.b.get(k) {
            Some(b'"') => {
                self.i = k + 1;
                return Ok(Str::Line(start, k));
            }
            None => {
                self.i = self.b.len();
                return self.fail("a closing quote");
            }
            Some(_) => {}
        }
        scratch.clear();
        let mut i = start;
        loop {
            let Some(k) = memchr2(b'"', b'\\', &self.b[i..]) else {
                self.i = self.b.len();
                return self.fail("a closing quote");
            };
            scratch.extend_from_slice(&self.b[i..i + k]);
            i += k;
            if self.b[i] == b'"' {
                self.i = i + 1;
                return Ok(Str::Scratch);
            }
            let esc = self.b.get(i + 1).copied();
            i += 2;
            let c = match esc {
                Some(b'"') => b'"',
                Some(b'\\') => b'\\',
                Some(b'/') => b'/',
                Some(b'b') => 8,
                Some(b'f') => 12,
                Some(b'n') => b'\n',
                Some(b'r') => b'\r',
                Some(b't') => b'\t',
                Some(b'u') => {
                    let bad = |s: &mut Self, at: usize| {
                        s.i = at;
                        s.fail("a \\u escape of 4 hex digits (surrogates in pairs)")
                    };
                    let Some(hi) = hex4(&self.b[i..]) else {
                        return bad(self, i);
                    };
                    i += 4;
                    let cp = if (0xD800..0xDC00).contains(&hi) {
                        let lo = if self.b[i..].starts_with(b"\\u") {
                            hex4(&self.b[i + 2..])
                        } else {
                            None
                        };
                        match lo {
                            Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                i += 6;
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            }
                            _ => return bad(self, i),
                        }
                    } else {
                        hi
                    };
                    let Some(ch) = char::from_u32(cp) else {
                        return bad(self, i);
                    };
                    let mut tmp = [0u8; 4];
                    scratch.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                    continue;
                }
                _ => {
                    self.i = i - 1;
                    return self.fail("a valid escape");
                }
            };
            scratch.push(c);
        }
    }

    /// Scans a JSON number, returning its text range.
    pub(super) fn number(&mut self) -> Result<(usize, usize), Syntax> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let digits = |i: &mut usize| {
            let s = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            *i - s
        };
        let int_start = i;
        let n = digits(&mut i);
        if n == 0 {
            self.i = int_start;
            return self.fail("a number");
        }
        if n > 1 && b[int_start] == b'0' {
            self.i = int_start;
            return self.fail("a number without leading zeros");
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if digits(&mut i) == 0 {
                self.i = i;
                return self.fail("digits after the decimal point");
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                self.i = i;
                return self.fail("exponent digits");
            }
        }
        self.i = i;
        Ok((start, i))
    }

    pub(super) fn literal(&mut self, word: &'static str) -> Result<&'static str, Syntax> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(word)
        } else {
            self.fail("true, false or null")
        }
    }

    /// Skips any value (for keys the schema does not name, or values a field refuses).
    pub(super) fn skip(&mut self, scratch: &mut Vec<u8>, depth: usize) -> Result<(), Syntax> {
        if depth > MAX_DEPTH {
            return self.fail(&format!("at most {MAX_DEPTH} levels of nesting"));
        }
        match self.peek() {
            Some(b'"') => self.string(scratch).map(|_| ()),
            Some(b'-' | b'0'..=b'9') => self.number().map(|_| ()),
            Some(b't') => self.literal("true").map(|_| ()),
            Some(b'f') => self.literal("false").map(|_| ()),
            Some(b'n') => self.literal("null").map(|_| ()),
            Some(open @ (b'[' | b'{')) => {
                let close = if open == b'[' { b']' } else { b'}' };
                self.i += 1;
                self.ws();
                if self.peek() == Some(close) {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    if open == b'{' {
                        if self.peek() != Some(b'"') {
                            return self.fail("a key");
                        }
                        self.string(scratch)?;
                        self.ws();
                        if self.peek() != Some(b':') {
                            return self.fail("':'");
                        }
                        self.i += 1;
                        self.ws();
                    }
                    self.skip(scratch, depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(c) if c == close => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => {
                            return self.fail(if open == b'[' {
                                "',' or ']'"
                            } else {
                                "',' or '}'"
                            })
                        }
                    }
                }
            }
            _ => self.fail("a value"),
        }
    }

    /// Scans a scalar value and returns its text (`None` for null). Strings land in the line or
    /// the scratch buffer.
    pub(super) fn scalar<'s>(&mut self, scratch: &'s mut Vec<u8>) -> Result<Option<&'s str>, Syntax>
    where
        'a: 's,
    {
        let b: &'a [u8] = self.b;
        match self.peek() {
            Some(b'"') => match self.string(scratch)? {
                Str::Line(s, e) => Ok(Some(ascii_cut(b, s, e))),
                // Unescaped text is the line's own bytes plus whole encoded chars.
                Str::Scratch => std::str::from_utf8(scratch)
                    .map(Some)
                    .map_err(|_| "broken JSON: string is not UTF-8".to_string()),
            },
            Some(b'-' | b'0'..=b'9') => {
                let (s, e) = self.number()?;
                Ok(Some(ascii_cut(b, s, e)))
            }
            Some(b't') => self.literal("true").map(Some),
            Some(b'f') => self.literal("false").map(Some),
            Some(b'n') => self.literal("null").map(|_| None),
            _ => self.fail("a value"),
        }
    }
}
