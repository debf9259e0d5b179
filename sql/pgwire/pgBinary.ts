/**
 * PostgreSQL's binary wire formats for the types drivers ask for in binary beyond the fixed-width
 * scalars: timestamp/timestamptz (int64 microseconds since 2000-01-01), date (int32 days since
 * 2000-01-01), numeric (base-10000 digits) and one-dimensional arrays. pgjdbc switches a prepared
 * statement to binary results after its fifth use, and psycopg sends datetimes as binary parameters.
 */

/** Milliseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC). */
const PG_EPOCH_MS = 946_684_800_000;
const MS_PER_DAY = 86_400_000;

/** A wire value that does not decode: the caller answers 08P01 (or 22P03 for a bad value). */
export class PgBinaryError extends Error {
  override readonly name = 'PgBinaryError';
}

function need(raw: Buffer, n: number, what: string): void {
  if (raw.length !== n) throw new PgBinaryError(`binary ${what} parameter must be ${n} bytes, got ${raw.length}`);
}

/** Binary timestamp of Unix milliseconds (a fraction carries the microseconds, as Arrow hands them over). */
export function timestampBinary(ms: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(Math.round(ms * 1000)) - BigInt(PG_EPOCH_MS) * 1000n);
  return b;
}

/** Binary time of microseconds since midnight. */
export function timeBinary(us: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(us);
  return b;
}

/** Binary date of Unix milliseconds (the day they fall in, UTC). */
export function dateBinary(ms: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(Math.floor((ms - PG_EPOCH_MS) / MS_PER_DAY));
  return b;
}

const pad = (n: number | bigint, w = 2): string => String(n).padStart(w, '0');

/** A binary timestamp parameter as ISO text DuckDB casts (`+00` when `withZone`). */
export function timestampFromBinary(raw: Buffer, withZone: boolean): string {
  need(raw, 8, 'timestamp');
  const us = raw.readBigInt64BE(0);
  if (us === 0x7fffffffffffffffn) return 'infinity';
  if (us === -0x8000000000000000n) return '-infinity';
  const unixUs = us + BigInt(PG_EPOCH_MS) * 1000n;
  const ms = unixUs / 1000n - (unixUs % 1000n < 0n ? 1n : 0n);
  const frac = ((unixUs % 1_000_000n) + 1_000_000n) % 1_000_000n;
  const d = new Date(Number(ms));
  if (Number.isNaN(d.getTime())) throw new PgBinaryError('binary timestamp parameter is out of range');
  const base = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return `${base}${frac === 0n ? '' : `.${pad(frac, 6)}`}${withZone ? '+00' : ''}`;
}

/** A binary date parameter as `YYYY-MM-DD`. */
export function dateFromBinary(raw: Buffer): string {
  need(raw, 4, 'date');
  const d = new Date(PG_EPOCH_MS + raw.readInt32BE(0) * MS_PER_DAY);
  if (Number.isNaN(d.getTime())) throw new PgBinaryError('binary date parameter is out of range');
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

/** Binary numeric of a decimal text like `-12.50` (NaN too). */
export function numericBinary(text: string): Buffer {
  const head = (ndigits: number, weight: number, sign: number, dscale: number): Buffer => {
    const b = Buffer.alloc(8);
    b.writeInt16BE(ndigits, 0);
    b.writeInt16BE(weight, 2);
    b.writeUInt16BE(sign, 4);
    b.writeInt16BE(dscale, 6);
    return b;
  };
  if (text === 'NaN') return head(0, 0, 0xc000, 0);
  const m = /^(-?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!m) throw new PgBinaryError(`${JSON.stringify(text)} is not a decimal`);
  const neg = m[1] === '-';
  const int = (m[2] ?? '').replace(/^0+/, '');
  const frac = m[3] ?? '';
  const dscale = frac.length;
  // Group into base-10000 digits aligned on the decimal point.
  const intPadded = int.padStart(Math.ceil(int.length / 4) * 4, '0');
  const fracPadded = frac.padEnd(Math.ceil(frac.length / 4) * 4, '0');
  const groups: number[] = [];
  for (let i = 0; i < intPadded.length; i += 4) groups.push(Number(intPadded.slice(i, i + 4)));
  for (let i = 0; i < fracPadded.length; i += 4) groups.push(Number(fracPadded.slice(i, i + 4)));
  let weight = intPadded.length / 4 - 1;
  // Strip leading and trailing zero groups (PostgreSQL's normal form).
  while (groups.length > 0 && groups[0] === 0) {
    groups.shift();
    weight--;
  }
  while (groups.length > 0 && groups[groups.length - 1] === 0) groups.pop();
  if (groups.length === 0) return head(0, 0, 0, dscale);
  const out = Buffer.alloc(groups.length * 2);
  groups.forEach((g, i) => out.writeInt16BE(g, i * 2));
  return Buffer.concat([head(groups.length, weight, neg ? 0x4000 : 0, dscale), out]);
}

/** A binary numeric parameter as decimal text. */
export function numericFromBinary(raw: Buffer): string {
  if (raw.length < 8) throw new PgBinaryError('binary numeric parameter is shorter than its 8-byte header');
  const ndigits = raw.readInt16BE(0);
  const weight = raw.readInt16BE(2);
  const sign = raw.readUInt16BE(4);
  const dscale = raw.readInt16BE(6);
  if (ndigits < 0 || dscale < 0 || raw.length !== 8 + ndigits * 2) throw new PgBinaryError('binary numeric parameter has a bad header');
  if (sign === 0xc000) return 'NaN';
  if (sign !== 0 && sign !== 0x4000) throw new PgBinaryError(`binary numeric parameter has a bad sign ${sign}`);
  let int = '';
  let frac = '';
  for (let i = 0; i < ndigits; i++) {
    const g = raw.readInt16BE(8 + i * 2);
    if (g < 0 || g > 9999) throw new PgBinaryError(`binary numeric parameter has a bad digit ${g}`);
    const w = weight - i;
    if (w >= 0) int += pad(g, 4);
    else frac = frac.padEnd((-w - 1) * 4, '0') + pad(g, 4);
  }
  // Digits beyond the last one given are zeros up to the weight.
  const lastWeight = weight - ndigits + 1;
  if (lastWeight > 0) int += '0000'.repeat(lastWeight);
  int = int.replace(/^0+/, '') || '0';
  frac = frac.padEnd(dscale, '0').slice(0, dscale);
  return `${sign === 0x4000 ? '-' : ''}${int}${dscale > 0 ? `.${frac}` : ''}`;
}

/** A one-dimensional binary array of already-encoded elements (null elements as null). */
export function arrayBinary(elementOid: number, items: readonly (Buffer | null)[]): Buffer {
  const head = Buffer.alloc(20);
  head.writeInt32BE(items.length === 0 ? 0 : 1, 0);
  head.writeInt32BE(items.some((x) => x === null) ? 1 : 0, 4);
  head.writeInt32BE(elementOid, 8);
  head.writeInt32BE(items.length, 12);
  head.writeInt32BE(1, 16);
  const parts: Buffer[] = [items.length === 0 ? head.subarray(0, 12) : head];
  for (const x of items) {
    const len = Buffer.alloc(4);
    len.writeInt32BE(x === null ? -1 : x.length);
    parts.push(len);
    if (x !== null) parts.push(x);
  }
  return Buffer.concat(parts);
}
