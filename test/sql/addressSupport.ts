/**
 * A generated dataset of addresses and wide integers for the address / wide-integer tests: every
 * ipv4, ipv6, uint64, uint128, int128, uint256 and int256 value drawn (seeded) from ranges where
 * text order and integer order disagree (10.0.0.9 / 10.0.0.10, `::ffff:` mapped addresses, 2^63,
 * 2^127, negative 256-bit values), written as raw record bytes; engines over it (pushdown on, and a
 * fetcher that ignores pushed filters); and the same rows in DuckDB as plain integers, the oracle.
 */
import type * as arrow from 'apache-arrow';
import { Schema } from '../../engine-rs/schema';
import { mulberry32 } from '../../lib/mulberry32';
import { LocalSql } from '../../local/localSql';
import type { LocalSqlSession } from '../../local/localSqlSession';
import { Catalog } from '../../sql/catalog';
import { ipv4Text, ipv6Text } from '../../sql/inetAddress';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import { SqlEngine, type SqlEngineSettings } from '../../sql/sqlEngine';
import { aggFetcher } from './aggregateSupport';

/** Unix seconds of the first batch. */
export const B0 = 1_700_000_040 - (1_700_000_040 % 60);
const SIZE = 160;

/** The dataset (`byte_order` as given: ipv4 and the wide integers are stored in it; ipv6 is big-endian always). */
export function addrSchema(order: 'little' | 'big' = 'little'): Schema {
  return Schema.parse(
    JSON.stringify({
      id: 'addr',
      record_size: SIZE,
      byte_order: order,
      time_field: 'ts',
      time_index_interval: 60,
      fields: [
        { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
        { name: 'src', offset: 8, size: 4, type: 'ipv4' },
        { name: 'dst', offset: 12, size: 4, type: 'ipv4' },
        { name: 'src6', offset: 16, size: 16, type: 'ipv6' },
        { name: 'dst6', offset: 32, size: 16, type: 'ipv6' },
        { name: 'big', offset: 48, size: 8, type: 'uint64' },
        { name: 'u128', offset: 56, size: 16, type: 'uint128' },
        { name: 'i128', offset: 72, size: 16, type: 'int128' },
        { name: 'u256', offset: 88, size: 32, type: 'uint256' },
        { name: 'i256', offset: 120, size: 32, type: 'int256' },
        { name: 'n', offset: 152, size: 2, type: 'uint16' },
      ],
    }),
  );
}

/** One generated row: the integers each field stores. */
export interface AddrRow {
  readonly ts: number;
  readonly src: number;
  readonly dst: number;
  readonly src6: bigint;
  readonly dst6: bigint;
  readonly big: bigint;
  readonly u128: bigint;
  readonly i128: bigint;
  readonly u256: bigint;
  readonly i256: bigint;
  readonly n: number;
}

/** A seeded generator of values near the places where text order and integer order part. */
export function addrRows(seed: number, count: number): AddrRow[] {
  const rnd = mulberry32(seed);
  const int = (n: number): number => Math.floor(rnd() * n);
  const bits = (b: number): bigint => {
    let v = 0n;
    for (let i = 0; i < b; i += 16) v = (v << 16n) | BigInt(int(65536));
    return v & ((1n << BigInt(b)) - 1n);
  };
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const ipv4 = (): number => pick([() => 0x0a000000 + int(24), () => 0x0a000000 + int(300), () => int(2 ** 32), () => pick([0, 2 ** 32 - 1, 0x7fffffff, 0x80000000, 0x0a00000a, 0x0a000009, 0x0a000002])])();
  const ipv6 = (): bigint =>
    pick([
      () => 0xffff00000000n | BigInt(ipv4()), // IPv4-mapped: ::ffff:a.b.c.d
      () => (0x20010db8n << 96n) | BigInt(int(40)), // 2001:db8::x
      () => bits(128),
      () => BigInt(int(20)), // ::, ::1 ... ::13
      () => bits(16) << BigInt(16 * int(8)), // one group: long zero runs
      () => pick([0n, (1n << 128n) - 1n, 1n << 127n, (1n << 127n) - 1n, 0xffffn << 112n]),
    ])();
  const u64 = (): bigint => pick([() => bits(64), () => (1n << 63n) + BigInt(int(5)) - 2n, () => BigInt(int(1000)), () => pick([0n, (1n << 64n) - 1n])])();
  const u128 = (): bigint => pick([() => bits(128), () => (1n << 127n) + BigInt(int(5)) - 2n, () => BigInt(int(1000)), () => pick([0n, (1n << 128n) - 1n, 1n << 64n])])();
  const i128 = (): bigint => pick([() => bits(128) - (1n << 127n), () => BigInt(int(2000)) - 1000n, () => pick([-(1n << 127n), (1n << 127n) - 1n, -1n, 0n])])();
  const u256 = (): bigint => pick([() => bits(256), () => (1n << 255n) + BigInt(int(5)) - 2n, () => BigInt(int(1000)), () => bits(130), () => pick([0n, (1n << 256n) - 1n, 1n << 128n, 9n, 10n])])();
  const i256 = (): bigint => pick([() => bits(256) - (1n << 255n), () => BigInt(int(2000)) - 1000n, () => -bits(200), () => pick([-(1n << 255n), (1n << 255n) - 1n, -1n, 0n, -10n, -9n])])();
  return Array.from({ length: count }, (_, i) => ({ ts: B0 + i, src: ipv4(), dst: ipv4(), src6: ipv6(), dst6: ipv6(), big: u64(), u128: u128(), i128: i128(), u256: u256(), i256: i256(), n: int(5) }));
}

/** `v` as `size` bytes of two's complement in `order`. */
function put(buf: Buffer, at: number, size: number, v: bigint, order: 'little' | 'big'): void {
  let x = BigInt.asUintN(size * 8, v);
  for (let i = 0; i < size; i++) {
    buf[order === 'little' ? at + i : at + size - 1 - i] = Number(x & 0xffn);
    x >>= 8n;
  }
}

/** The rows as raw records, in batches of one minute (60 rows each). */
export function addrBatches(rows: readonly AddrRow[], order: 'little' | 'big' = 'little'): Buffer[] {
  const out: Buffer[] = [];
  for (let b = 0; b * 60 < rows.length; b++) {
    const part = rows.slice(b * 60, b * 60 + 60);
    const buf = Buffer.alloc(SIZE * part.length);
    part.forEach((r, i) => {
      const o = i * SIZE;
      put(buf, o, 8, BigInt(r.ts), order);
      put(buf, o + 8, 4, BigInt(r.src), order);
      put(buf, o + 12, 4, BigInt(r.dst), order);
      put(buf, o + 16, 16, r.src6, 'big');
      put(buf, o + 32, 16, r.dst6, 'big');
      put(buf, o + 48, 8, r.big, order);
      put(buf, o + 56, 16, r.u128, order);
      put(buf, o + 72, 16, r.i128, order);
      put(buf, o + 88, 32, r.u256, order);
      put(buf, o + 120, 32, r.i256, order);
      put(buf, o + 152, 2, BigInt(r.n), order);
    });
    out.push(buf);
  }
  return out;
}

/** Engines over the rows: `pushed` (filters and aggregates pushed), `local` (every row fetched, nothing pushed). */
export function addrEngines(rows: readonly AddrRow[], order: 'little' | 'big' = 'little', settings: Partial<SqlEngineSettings> = {}): { pushed: SqlEngine; local: SqlEngine; fetcher: ReturnType<typeof aggFetcher> & { returned: number }; sql: LocalSql; schema: Schema } {
  const schema = addrSchema(order);
  const inner = aggFetcher(schema, addrBatches(rows, order));
  let returned = 0;
  const fetcher = Object.assign(inner, { returned: 0 });
  const counting: DatasetFetcher = {
    fetch: (read, onBatch, opts) =>
      inner.fetch(read, async (b) => {
        returned += b.numRows;
        fetcher.returned = returned;
        await onBatch(b);
      }, opts),
    fetchAggregate: inner.fetchAggregate!.bind(inner),
  };
  const everything: DatasetFetcher = { fetch: (read, onBatch, opts) => inner.fetch({ ...read, subQueries: [] }, onBatch, opts) };
  const sql = new LocalSql({ threads: 1 });
  const base: SqlEngineSettings = { lookbackSec: 3600, timeoutMs: 20_000, maxRows: 0, qos: 1, ...settings };
  const catalog = new Catalog([schema]);
  const now = (): number => B0 + rows.length + 60;
  return { pushed: new SqlEngine(catalog, sql, counting, base, now), local: new SqlEngine(catalog, sql, everything, { ...base, aggregatePushdown: false }, now), fetcher, sql, schema };
}

/**
 * The oracle: the rows in DuckDB as integers (`src`, `dst` UINTEGER; `src6`, `dst6` UHUGEINT; `big`
 * UBIGINT; `u128` UHUGEINT; `i128` HUGEINT; `ts` BIGINT; `n` INTEGER), table `oracle`.
 */
export async function oracleSession(sql: LocalSql, rows: readonly AddrRow[]): Promise<LocalSqlSession> {
  const s = await sql.openSession();
  const values = rows.map((r) => `(${r.ts}, ${r.src}, ${r.dst}, '${r.src6}', '${r.dst6}', '${r.big}', '${r.u128}', '${r.i128}', ${r.n})`);
  await s.query(`CREATE TEMP TABLE oracle_raw (ts BIGINT, src UINTEGER, dst UINTEGER, src6 VARCHAR, dst6 VARCHAR, big VARCHAR, u128 VARCHAR, i128 VARCHAR, n INTEGER)`);
  for (let i = 0; i < values.length; i += 500) await s.query(`INSERT INTO oracle_raw VALUES ${values.slice(i, i + 500).join(', ')}`);
  await s.query(`CREATE TEMP TABLE oracle AS SELECT ts, src, dst, CAST(src6 AS UHUGEINT) AS src6, CAST(dst6 AS UHUGEINT) AS dst6, CAST(big AS UBIGINT) AS big, CAST(u128 AS UHUGEINT) AS u128, CAST(i128 AS HUGEINT) AS i128, n FROM oracle_raw`);
  return s;
}

/**
 * A cell as text; Decimal256(39, 0) (128-bit integers) from its words, which apache-arrow's own
 * toString misprints beyond 2^64.
 */
export function cellText(v: unknown): string {
  if (v instanceof Uint32Array) {
    let x = 0n;
    for (let i = v.length - 1; i >= 0; i--) x = (x << 32n) | BigInt(v[i]!);
    return BigInt.asIntN(32 * v.length, x).toString();
  }
  return String(v);
}

/** Cells as text: addresses in `addrCols` (oracle integers) printed as the decoder prints them. */
export function rowsOf(t: arrow.Table, addrCols: Readonly<Record<number, 'ipv4' | 'ipv6'>> = {}): string[] {
  const out: string[] = [];
  for (let i = 0; i < t.numRows; i++) {
    out.push(
      t.schema.fields
        .map((_, c) => {
          const v = t.getChildAt(c)?.get(i) as unknown;
          if (v === null || v === undefined) return 'NULL';
          const k = addrCols[c];
          if (k === 'ipv4') return ipv4Text(Number(v));
          if (k === 'ipv6') return ipv6Text(BigInt(cellText(v)));
          return cellText(v);
        })
        .join('|'),
    );
  }
  return out;
}
