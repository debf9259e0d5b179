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
        o[k] = value();
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
    const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
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

/** JSON text of a value from {@link parseBigJson}: bigints as bare numbers, as DuckDB reads them. */
export function stringifyBigJson(v: BigJsonValue): string {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(stringifyBigJson).join(',')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${stringifyBigJson(x)}`).join(',')}}`;
  return JSON.stringify(v);
}
