/**
 * The data every system of `npm run bench:peers` gets: the 150-byte network flows of
 * bench/flows.ts (deterministic xorshift32, 1024 records a second from ts 1 700 000 000), as HD's
 * records and as the rows a peer loads (CSV for PostgreSQL and chDB, ILP lines for QuestDB, JS
 * values for DuckDB's appender). Every peer row carries the same 22 fields as the record.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { FLOW, generate } from '../flows';

/** First record's timestamp (seconds) and records per second, as bench/flows.ts writes them. */
export const T0 = 1_700_000_000;
export const PER_SECOND = 1024;
/** HD batches by the schema's time_index_interval (60 s): batch k covers [minute(k), minute(k)+60). */
export const INTERVAL = FLOW.time_index_interval as number;

/** Timestamp (seconds) of record i. */
export const tsOf = (i: number): number => T0 + Math.floor(i / PER_SECOND);

/** The records, and the minute-aligned batches HD ingests them in (contiguous, records sorted by ts). */
export interface Dataset {
  readonly n: number;
  readonly records: Buffer;
  /** Time range of the data: [first, end) in seconds. */
  readonly first: number;
  readonly end: number;
  readonly batches: readonly { readonly start: number; readonly from: number; readonly to: number }[];
}

/** Generates n records (bench/flows.ts) and cuts them into minute batches. */
export function makeDataset(n: number): Dataset {
  const records = generate(n);
  const batches: { start: number; from: number; to: number }[] = [];
  let from = 0;
  while (from < n) {
    const start = tsOf(from) - (tsOf(from) % INTERVAL);
    const to = Math.min(n, (start + INTERVAL - T0) * PER_SECOND);
    batches.push({ start, from, to });
    from = to;
  }
  return { n, records, first: T0, end: tsOf(n - 1) + 1, batches };
}

/** Column names, in record order, for the peers' tables. */
export const COLUMNS = ['ts', 'proto', 'src', 'dst', 'src6', 'sport', 'dport', 'bytes', 'packets', 'dt', 'amount', 'ttl', 'rtt', 'score', 'ok', 'host', 'ports', 'tags', 'asn', 'vlan', 'flow_id', 'country'] as const;

const PROTO: Record<number, string> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 47: 'gre' };
const label = (code: number): string => PROTO[code] ?? 'other';
const hex = (b: Buffer, o: number): string => ((b[o] as number) * 256 + (b[o + 1] as number)).toString(16);

function ipv4(b: Buffer, o: number): string {
  const v = b.readUInt32LE(o);
  return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

function ipv6(b: Buffer, o: number): string {
  let s = hex(b, o);
  for (let k = 2; k < 16; k += 2) s += `:${hex(b, o + k)}`;
  return s;
}

function text(b: Buffer, o: number, size: number): string {
  let e = o;
  while (e < o + size && b[e] !== 0) e++;
  return b.toString('latin1', o, e);
}

/** numeric(18,4) from its scaled int64 (small enough here to be exact as a double). */
function decimal(scaled: number): string {
  const neg = scaled < 0;
  const a = Math.abs(scaled);
  const frac = String(a % 10_000).padStart(4, '0');
  return `${neg ? '-' : ''}${Math.floor(a / 10_000)}.${frac}`;
}

/** One record's values as JS values (integers as numbers, amount as its decimal text). */
export type Row = [number, string, string, string, string, number, number, number, number, number, string, number, number, number, boolean, string, string, string, number, number, number, string];

/** Decodes record i of `b` into `row` (the peers' text forms; arrays as PostgreSQL array literals). */
export function readRow(b: Buffer, i: number): Row {
  const o = i * 150;
  const ports = `{${b.readUInt16LE(o + 107)},${b.readUInt16LE(o + 109)},${b.readUInt16LE(o + 111)},${b.readUInt16LE(o + 113)}}`;
  let tags = '{';
  for (let k = 0; k < 8; k++) tags += (k ? ',' : '') + label(b[o + 115 + k] as number);
  return [
    b.readUInt32LE(o) + b.readInt32LE(o + 4) * 2 ** 32,
    label(b[o + 8] as number),
    ipv4(b, o + 9),
    ipv4(b, o + 13),
    ipv6(b, o + 17),
    b.readUInt16LE(o + 33),
    b.readUInt16LE(o + 35),
    b.readUInt32LE(o + 37) + b.readUInt32LE(o + 41) * 2 ** 32,
    b.readUInt32LE(o + 45),
    b.readUInt32LE(o + 49),
    decimal(b.readUInt32LE(o + 53) + b.readInt32LE(o + 57) * 2 ** 32),
    b[o + 61] as number,
    b.readFloatLE(o + 62),
    b.readDoubleLE(o + 66),
    b[o + 74] !== 0,
    text(b, o + 75, 32),
    ports,
    `${tags}}`,
    b.readInt32LE(o + 123),
    b.readInt16LE(o + 127),
    b.readUInt32LE(o + 129) + b.readInt32LE(o + 133) * 2 ** 32,
    text(b, o + 137, 13),
  ];
}

/** Writes lines made by `line` for every record to `file`, 16 384 lines a write. */
function writeLines(d: Dataset, file: string, line: (r: Row) => string): void {
  const fd = openSync(file, 'w');
  try {
    const lines: string[] = [];
    for (let i = 0; i < d.n; i++) {
      lines.push(line(readRow(d.records, i)));
      if (lines.length === 16_384 || i === d.n - 1) {
        writeSync(fd, lines.join(''));
        lines.length = 0;
      }
    }
  } finally {
    closeSync(fd);
  }
}

/** CSV without a header; arrays as '{..}' text (quoted: they hold commas). */
export function writeCsv(d: Dataset, file: string): void {
  writeLines(d, file, (r) => `${r[0]},${r[1]},${r[2]},${r[3]},${r[4]},${r[5]},${r[6]},${r[7]},${r[8]},${r[9]},${r[10]},${r[11]},${r[12]},${r[13]},${r[14]},${r[15]},"${r[16]}","${r[17]}",${r[18]},${r[19]},${r[20]},${r[21]}\n`);
}

/**
 * InfluxDB line protocol for QuestDB: proto a symbol (tag), the rest fields (integers `i`, strings
 * quoted), the designated timestamp `t` from ts in nanoseconds.
 */
export function writeIlp(d: Dataset, file: string): void {
  writeLines(
    d,
    file,
    (r) =>
      `flows,proto=${r[1]} ts=${r[0]}i,src="${r[2]}",dst="${r[3]}",src6="${r[4]}",sport=${r[5]}i,dport=${r[6]}i,bytes=${r[7]}i,packets=${r[8]}i,dt=${r[9]}i,amount=${r[10]},ttl=${r[11]}i,rtt=${r[12]},score=${r[13]},ok=${r[14] ? 't' : 'f'},host="${r[15]}",ports="${r[16]}",tags="${r[17]}",asn=${r[18]}i,vlan=${r[19]}i,flow_id=${r[20]}i,country="${r[21]}" ${r[0]}000000000\n`,
  );
}
