/**
 * JSON text → values, with integers beyond 2^53 kept exact as bigint. DuckDB's `json_serialize_sql`
 * writes BIGINT / HUGEINT constants as bare JSON numbers, which `JSON.parse` would round
 * (research note: the "BigInt trap").
 */

/** A parsed JSON value; integers outside the safe range are bigints. */
export type BigJsonValue = null | boolean | number | bigint | string | BigJsonValue[] | { [key: string]: BigJsonValue };

/**
 * Parses JSON text, giving integers that do not fit a double exactly as bigint.
 * @throws SyntaxError naming the offset of the first bad character.
 */
export function parseBigJson(text: string): BigJsonValue {
  // Without a run of 16 digits every integer in the text is below 10^15, safe as a double: the
  // engine's own parser is exact (and far faster than the one below, on every plan's tree).
  if (!LONG_DIGITS.test(text)) {
    try {
      return JSON.parse(text) as BigJsonValue;
    } catch {
      // The parser below names the offset of the first bad character.
    }
  }
  return parseSlowly(text);
}

/** 16 digits in a row: an integer there may not fit a double exactly. */
const LONG_DIGITS = /\d{16}/;
/** A JSON number, matched where the parser stands. */
const NUMBER = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y;

/** {@link parseBigJson} character by character: bigints for integers beyond 2^53. */
function parseSlowly(text: string): BigJsonValue {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`bad JSON at offset ${i}: ${what}`);
  };
  const ws = (): void => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  const value = (): BigJsonValue => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const o: { [key: string]: BigJsonValue } = {};
      ws();
      if (text[i] === '}') return i++, o;
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const k = str();
        ws();
        if (text[i++] !== ':') fail('expected ":"');
        // As JSON.parse makes it: an own property, whatever the key (`__proto__` too).
        Object.defineProperty(o, k, { value: value(), enumerable: true, writable: true, configurable: true });
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return i++, o;
        else fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const a: BigJsonValue[] = [];
      ws();
      if (text[i] === ']') return i++, a;
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return i++, a;
        else fail('expected "," or "]"');
      }
    }
    if (c === '"') return str();
    if (text.startsWith('true', i)) return (i += 4), true;
    if (text.startsWith('false', i)) return (i += 5), false;
    if (text.startsWith('null', i)) return (i += 4), null;
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) return fail('unexpected character');
    i += m[0].length;
    if (m[1] === undefined && m[2] === undefined) {
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    return Number(m[0]);
  };
  const str = (): string => {
    const start = i;
    i++;
    let escaped = false;
    while (i < text.length) {
      const c = text[i++];
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') return JSON.parse(text.slice(start, i)) as string;
    }
    return fail('unterminated string');
  };
  const v = value();
  ws();
  if (i !== text.length) fail('trailing characters');
  return v;
}

/** Marks a bigint in JSON.stringify's text: random, so no string of a tree holds it by chance. */
const BIG_MARK = `~big${Math.random().toString(36).slice(2, 10)}~`;
const BIG_MARKED = new RegExp(`"${BIG_MARK}(-?\\d+)${BIG_MARK}"`, 'g');

/** JSON text of a value from {@link parseBigJson}: bigints as bare numbers, as DuckDB reads them. */
export function stringifyBigJson(v: BigJsonValue): string {
  // The engine's JSON.stringify (it refuses a bigint); with bigints, each through a marked string
  // then unquoted; the text by hand below only when a string of the value happens to hold the mark.
  try {
    return JSON.stringify(v);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
  }
  let bigints = 0;
  const text = JSON.stringify(v, (_k, x: unknown) => {
    if (typeof x !== 'bigint') return x;
    bigints++;
    return `${BIG_MARK}${x.toString()}${BIG_MARK}`;
  });
  if (text.split(BIG_MARK).length - 1 === 2 * bigints) return bigints === 0 ? text : text.replace(BIG_MARKED, '$1');
  return stringifySlowly(v);
}

/** {@link stringifyBigJson} by hand. */
function stringifySlowly(v: BigJsonValue): string {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(stringifySlowly).join(',')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${stringifySlowly(x)}`).join(',')}}`;
  return JSON.stringify(v);
}
