/**
 * A statement's shape: its text with the literals a new statement usually changes (numbers, string
 * literals) replaced by placeholders that name each literal's class. Dashboards send the same shape
 * with new literals each time (a new time window, a new port); the parse tree of one text of a shape
 * gives the tree of every other with the literals substituted (sql/treeTemplate.ts), without a
 * DuckDB round trip.
 *
 * The class is whatever decides the literal's type in DuckDB's tree, so `5`, `5.0`, `'5'` and
 * `5000000000` are different shapes: an integer is INTEGER up to 2^31-1 and BIGINT up to 2^63-1; a
 * decimal is DECIMAL(digits, digits after the point) (up to 18 digits); a string is VARCHAR (a
 * plain, E'' without backslashes, or dollar-quoted one, each its own class). Everything else stays
 * text of the shape: exponents (DOUBLE), wider numbers, `0x10`, `1_000`, B''/X''/N''/U&'' strings,
 * E'' strings with escapes, parameters (`$1`), quoted identifiers and comments.
 *
 * The tokenizer only has to find literals: text it misreads stays part of the shape or fails the
 * template's check against DuckDB's tree (sql/treeTemplate.ts), so a misread costs a round trip,
 * never a wrong tree.
 */

/** One literal of a statement's text. */
export interface ShapeLiteral {
  /** Where it is in the text (UTF-16 indices, end exclusive). */
  readonly start: number;
  readonly end: number;
  /** Its class in the shape: `i` INTEGER, `l` BIGINT, `d<w>.<s>` DECIMAL(w,s), `s` / `e` / `$` a VARCHAR as written. */
  readonly cls: string;
  /** The JSON text of its value as DuckDB's tree holds it (`value.value` of the constant). */
  readonly value: string;
}

/** A statement text as its shape and its literals. */
export interface StatementShape {
  /** The text with each literal replaced by `\0<class>\0`. */
  readonly key: string;
  readonly literals: readonly ShapeLiteral[];
}

const INT32_MAX = 2n ** 31n - 1n;
const INT64_MAX = 2n ** 63n - 1n;
/** Widest DECIMAL whose value DuckDB's tree holds as a plain JSON number. */
const MAX_DECIMAL_DIGITS = 18;

const isIdentChar = (c: string | undefined): boolean => c !== undefined && (/[\w$]/.test(c) || c.charCodeAt(0) >= 0x80);
const isIdentStart = (c: string | undefined): boolean => c !== undefined && (/[A-Za-z_]/.test(c) || c.charCodeAt(0) >= 0x80);
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/** End of the '…' string whose opening quote is at `i` ('' doubles a quote; `escapes`: backslash escapes too); -1 unterminated. */
function stringEnd(text: string, i: number, escapes: boolean): number {
  let j = i + 1;
  while (j < text.length) {
    const c = text[j];
    if (escapes && c === '\\') j += 2;
    else if (c === "'" && text[j + 1] === "'") j += 2;
    else if (c === "'") return j + 1;
    else j++;
  }
  return -1;
}

/** End of the block comment opening at `i` (nested, as PostgreSQL's); -1 unterminated. */
function commentEnd(text: string, i: number): number {
  let depth = 0;
  let j = i;
  while (j < text.length) {
    if (text[j] === '/' && text[j + 1] === '*') {
      depth++;
      j += 2;
    } else if (text[j] === '*' && text[j + 1] === '/') {
      depth--;
      j += 2;
      if (depth === 0) return j;
    } else j++;
  }
  return -1;
}

/** The number at `i` as a literal of the shape, or its end alone when it stays text. */
function numberAt(text: string, i: number): { end: number; literal?: ShapeLiteral } {
  let j = i;
  while (isDigit(text[j])) j++;
  const intDigits = text.slice(i, j);
  let fracDigits: string | undefined;
  if (text[j] === '.') {
    const k = j + 1;
    j = k;
    while (isDigit(text[j])) j++;
    fracDigits = text.slice(k, j);
  }
  let odd = false;
  if (text[j] === 'e' || text[j] === 'E') {
    // An exponent makes a DOUBLE: kept as text.
    odd = true;
    j++;
    if (text[j] === '+' || text[j] === '-') j++;
  }
  // `0x10`, `1_000`, `1.2.3`: not plain numbers; whatever DuckDB makes of them stays text.
  while (isIdentChar(text[j]) || text[j] === '.') {
    odd = true;
    j++;
  }
  if (odd) return { end: j };
  if (fracDigits === undefined) {
    const v = BigInt(intDigits);
    if (v > INT64_MAX) return { end: j };
    return { end: j, literal: { start: i, end: j, cls: v > INT32_MAX ? 'l' : 'i', value: v.toString() } };
  }
  const width = intDigits.length + fracDigits.length;
  if (width === 0 || width > MAX_DECIMAL_DIGITS) return { end: j };
  return { end: j, literal: { start: i, end: j, cls: `d${width}.${fracDigits.length}`, value: BigInt(intDigits + fracDigits).toString() } };
}

/**
 * The shape of `text`, or undefined when it has none (a NUL in it, an unterminated string or
 * comment: DuckDB then reports the statement as it is).
 */
export function statementShape(text: string): StatementShape | undefined {
  if (text.includes('\0')) return undefined;
  const literals: ShapeLiteral[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === "'") {
      const end = stringEnd(text, i, false);
      if (end < 0) return undefined;
      literals.push({ start: i, end, cls: 's', value: JSON.stringify(text.slice(i + 1, end - 1).replace(/''/g, "'")) });
      i = end;
    } else if (isIdentStart(c)) {
      let j = i + 1;
      while (isIdentChar(text[j])) j++;
      if (text[j] === "'") {
        // E'…': a literal unless it has escapes. B'…', X'…', N'…' and the like stay text.
        const escapes = j === i + 1 && (c === 'e' || c === 'E');
        const end = stringEnd(text, j, escapes);
        if (end < 0) return undefined;
        const body = text.slice(j + 1, end - 1);
        if (escapes && !body.includes('\\')) literals.push({ start: i, end, cls: 'e', value: JSON.stringify(body.replace(/''/g, "'")) });
        i = end;
      } else if (text[j] === '&' && text[j + 1] === "'" && j === i + 1 && (c === 'u' || c === 'U')) {
        const end = stringEnd(text, j + 1, false);
        if (end < 0) return undefined;
        i = end;
      } else i = j;
    } else if (c === '"') {
      let j = i + 1;
      for (;;) {
        const q = text.indexOf('"', j);
        if (q < 0) return undefined;
        if (text[q + 1] === '"') j = q + 2;
        else {
          i = q + 1;
          break;
        }
      }
    } else if (c === '-' && next === '-') {
      const j = text.indexOf('\n', i);
      i = j < 0 ? text.length : j;
    } else if (c === '/' && next === '*') {
      const end = commentEnd(text, i);
      if (end < 0) return undefined;
      i = end;
    } else if (c === '$') {
      if (isDigit(next)) {
        // A parameter ($1): not a literal.
        let j = i + 1;
        while (isDigit(text[j])) j++;
        i = j;
        continue;
      }
      const tag = /^\$(?:[A-Za-z_\x80-\uffff][\w\x80-\uffff]*)?\$/.exec(text.slice(i, i + 64));
      if (!tag) {
        i++;
        continue;
      }
      const close = text.indexOf(tag[0], i + tag[0].length);
      if (close < 0) return undefined;
      const end = close + tag[0].length;
      literals.push({ start: i, end, cls: '$', value: JSON.stringify(text.slice(i + tag[0].length, close)) });
      i = end;
    } else if (isDigit(c) || (c === '.' && isDigit(next))) {
      const n = numberAt(text, i);
      if (n.literal) literals.push(n.literal);
      i = n.end;
    } else i++;
  }
  let key = '';
  let at = 0;
  for (const l of literals) {
    key += `${text.slice(at, l.start)}\0${l.cls}\0`;
    at = l.end;
  }
  key += text.slice(at);
  return { key, literals };
}
