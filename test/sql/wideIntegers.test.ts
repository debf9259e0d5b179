/**
 * uint64, uint128, int128, uint256 and int256 columns compare, sort and give min / max exactly
 * (the reference's type mapping), checked against BigInt over generated rows: pushed to the
 * (in-memory) nodes and not, aggregates pushed where they may be, BIGNUM storage of 256-bit values
 * against DuckDB's own, and the refusal of inexact 256-bit literals.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import pg from 'pg';
import { mulberry32 } from '../../lib/mulberry32';
import { bignumBytes } from '../../local/bignum';
import { LocalSql } from '../../local/localSql';
import { LocalSqlError } from '../../local/localSqlError';
import { PgServer } from '../../sql/pgwire/pgServer';
import { SqlError } from '../../sql/sqlError';
import { addrEngines, addrRows, B0, cellText, rowsOf, type AddrRow } from './addressSupport';

type Wide = 'big' | 'u128' | 'i128' | 'u256' | 'i256';
const WIDE: readonly Wide[] = ['big', 'u128', 'i128', 'u256', 'i256'];
const W = `ts >= ${B0} AND ts < ${B0 + 100_000}`;
const cmp = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);
const OPS: Record<string, (a: bigint, b: bigint) => boolean> = { '<': (a, b) => a < b, '<=': (a, b) => a <= b, '>': (a, b) => a > b, '>=': (a, b) => a >= b, '=': (a, b) => a === b, '<>': (a, b) => a !== b };

const bignum = suite('256-bit integers as BIGNUM');

bignum('the loader writes DuckDB\'s own BIGNUM bytes: text, order, min / max, sum are exact', async () => {
  const rnd = mulberry32(31);
  const bits = (b: number): bigint => Array.from({ length: b / 16 }, () => BigInt(Math.floor(rnd() * 65536))).reduce((a, g) => (a << 16n) | g, 0n);
  const values = [0n, 1n, -1n, 255n, 256n, -256n, -255n, (1n << 255n) - 1n, -(1n << 255n), (1n << 64n), -(1n << 64n), ...Array.from({ length: 400 }, () => bits(256) - (1n << 255n)), ...Array.from({ length: 100 }, () => bits(32) - (1n << 31n))];
  const sql = new LocalSql({ threads: 1 });
  const s = await sql.openSession();
  try {
    const field = new arrow.Field('x', new arrow.Utf8(), true, new Map([['hd.type', 'int256']]));
    const col = arrow.vectorFromArray([...values.map(String), null], new arrow.Utf8());
    await s.register('w', new arrow.Table(new arrow.Schema([field]), [new arrow.RecordBatch(new arrow.Schema([field]), arrow.makeData({ type: new arrow.Struct([field]), length: col.length, nullCount: 0, children: [col.data[0]!] }))]));
    const t = await s.query(`SELECT typeof(x) AS type, CAST(x AS VARCHAR) AS text, x = CAST(CAST(x AS VARCHAR) AS BIGNUM) AS same FROM w`);
    for (let i = 0; i < values.length; i++) {
      assert.is(t.getChild('type')?.get(i), 'BIGNUM');
      assert.is(t.getChild('text')?.get(i), String(values[i]), 'DuckDB reads our bytes as the value');
      assert.is(t.getChild('same')?.get(i), true, 'our bytes are DuckDB\'s for the value');
    }
    const sorted = [...values].sort(cmp).map(String);
    assert.equal(rowsOf(await s.query('SELECT x FROM w WHERE x IS NOT NULL ORDER BY x')), sorted);
    const sum = values.reduce((a, b) => a + b, 0n);
    assert.equal(rowsOf(await s.query('SELECT min(x), max(x), sum(x), count(x) FROM w')), [`${sorted[0]}|${sorted[sorted.length - 1]}|${sum}|${values.length}`]);
    assert.equal([...bignumBytes(-1n)], [0x7f, 0xff, 0xfe, 0xfe]);
  } finally {
    await s.close();
    await sql.close();
  }
});

bignum('a value that is not a decimal integer is refused while loading, naming the column and row', async () => {
  const sql = new LocalSql({ threads: 1 });
  const s = await sql.openSession();
  try {
    const field = new arrow.Field('u', new arrow.Utf8(), true, new Map([['hd.type', 'uint256']]));
    const col = arrow.vectorFromArray(['12', '1e5'], new arrow.Utf8());
    const batch = new arrow.RecordBatch(new arrow.Schema([field]), arrow.makeData({ type: new arrow.Struct([field]), length: 2, nullCount: 0, children: [col.data[0]!] }));
    await s.register('bad', new arrow.Table(new arrow.Schema([field]), [batch])).then(
      () => assert.unreachable('must refuse'),
      (err: unknown) => {
        assert.instance(err, LocalSqlError);
        assert.is((err as LocalSqlError).code, 'ERR_SQL_LOAD');
        assert.match(String(err), /column "u" row 1: "1e5" is not a decimal integer/);
      },
    );
  } finally {
    await s.close();
    await sql.close();
  }
});

bignum.run();

/** What BigInt says the statement `SELECT ts, col FROM addr WHERE col op lit ORDER BY col, ts` answers. */
function expected(rows: readonly AddrRow[], col: Wide, keep: (v: bigint) => boolean): string[] {
  return rows
    .filter((r) => keep(r[col]))
    .sort((a, b) => cmp(a[col], b[col]) || a.ts - b.ts)
    .map((r) => `${r.ts}|${r[col]}`);
}

const differential = suite('wide integers: differential against BigInt');

for (const seed of [12, 40]) {
  differential(`seed ${seed}: comparisons, BETWEEN, IN, ORDER BY, min / max, pushed and not`, async () => {
    const rows = addrRows(seed, 360);
    const { pushed, local, sql } = addrEngines(rows, seed === 40 ? 'big' : 'little');
    const rnd = mulberry32(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const run = async (q: string): Promise<string[][]> => [rowsOf((await pushed.execute(q)).table), rowsOf((await local.execute(q)).table)];
    try {
      for (const col of WIDE) {
        for (let k = 0; k < 5; k++) {
          const op = pick(Object.keys(OPS));
          const lit = pick(rows)[col];
          // 256-bit literals are quoted (beyond 2^127 only a quoted literal is exact); the others either way.
          const text = col.endsWith('256') || rnd() < 0.5 ? `'${lit}'` : String(lit);
          const want = expected(rows, col, (v) => OPS[op]!(v, lit));
          for (const got of await run(`SELECT ts, ${col} FROM addr WHERE ${W} AND ${col} ${op} ${text} ORDER BY ${col}, ts`)) assert.equal(got, want, `${col} ${op} ${text}`);
        }
        const [lo, hi] = [pick(rows)[col], pick(rows)[col]].sort(cmp) as [bigint, bigint];
        const ins = [pick(rows)[col], pick(rows)[col], 7n];
        const between = expected(rows, col, (v) => v >= lo && v <= hi || ins.includes(v));
        for (const got of await run(`SELECT ts, ${col} FROM addr WHERE ${W} AND (${col} BETWEEN '${lo}' AND '${hi}' OR ${col} IN (${ins.map((x) => `'${x}'`).join(', ')})) ORDER BY ${col}, ts`)) assert.equal(got, between, `${col} BETWEEN / IN`);
        const all = rows.map((r) => r[col]).sort(cmp);
        for (const got of await run(`SELECT min(${col}), max(${col}), count(DISTINCT ${col}) FROM addr WHERE ${W}`)) assert.equal(got, [`${all[0]}|${all[all.length - 1]}|${new Set(all).size}`], `min / max of ${col}`);
        const top = [...rows].sort((a, b) => cmp(b[col], a[col]) || a.ts - b.ts).slice(0, 7).map((r) => `${r[col]}`);
        for (const got of await run(`SELECT ${col} FROM addr WHERE ${W} ORDER BY ${col} DESC, ts LIMIT 7`)) assert.equal(got, top, `ORDER BY ${col} DESC`);
      }
    } finally {
      await sql.close();
    }
  });
}

differential.run();

const pushdown = suite('wide integers: pushdown and literals');

pushdown('256-bit comparisons push down (quoted literals too), narrow the read and split aggregates; min / max of 128 / 256 bits keep the record path', async () => {
  const rows = addrRows(21, 360);
  const { pushed, local, fetcher, sql } = addrEngines(rows, 'little', { explainPushdown: true });
  try {
    const lit = -(1n << 200n);
    const q = `SELECT ts, i256 FROM addr WHERE ${W} AND i256 < '${lit}' AND u256 >= 1000 ORDER BY i256, ts`;
    const want = expected(rows, 'i256', (v) => v < lit).filter((r) => rows.find((x) => x.ts === Number(r.split('|')[0]))!.u256 >= 1000n);
    assert.ok(want.length > 0 && want.length < rows.length / 2, `${want.length} rows`);
    const before = fetcher.returned;
    const a = await pushed.execute(q);
    assert.is(fetcher.returned - before, want.length, 'the nodes returned only the matching rows');
    assert.equal(rowsOf(a.table), want);
    assert.equal(rowsOf((await local.execute(q)).table), want);
    assert.ok(a.notices.some((n) => n.includes(`i256 lt ${lit}`) && n.includes('u256 ge 1000')), a.notices.join('; '));
    const counted = `SELECT n, count(*), max(big) FROM addr WHERE ${W} AND u256 > '${1n << 255n}' GROUP BY n ORDER BY n`;
    const c = await pushed.execute(counted);
    assert.ok(c.aggregatePushed, c.notices.join('; '));
    assert.equal(rowsOf(c.table), rowsOf((await local.execute(counted)).table));
    const extremes = `SELECT max(u256), min(i256), max(u128), min(i128) FROM addr WHERE ${W}`;
    const e = await pushed.execute(extremes);
    assert.not.ok(e.aggregatePushed);
    const m = (col: Wide, f: (a: bigint, b: bigint) => bigint): bigint => rows.map((r) => r[col]).reduce(f);
    const big = (a: bigint, b: bigint): bigint => (a > b ? a : b);
    const small = (a: bigint, b: bigint): bigint => (a < b ? a : b);
    assert.equal(rowsOf(e.table), [[m('u256', big), m('i256', small), m('u128', big), m('i128', small)].join('|')]);
    assert.is(e.table.schema.fields[0]?.metadata.get('hd.type'), undefined); // an aggregate's column is not the field itself
    const plain = await pushed.execute(`SELECT u256, u128 FROM addr WHERE ${W} ORDER BY ts LIMIT 1`);
    assert.is(plain.table.schema.fields[0]?.metadata.get('hd.type'), 'uint256');
    assert.is(cellText(plain.table.getChildAt(1)?.get(0)), String(rows[0]!.u128));
  } finally {
    await sql.close();
  }
});

pushdown('an unquoted literal beyond 2^127 is a double in DuckDB: compared with a 256-bit column it fails the statement', async () => {
  const rows = addrRows(22, 60);
  const { pushed, sql } = addrEngines(rows);
  try {
    for (const q of [`SELECT count(*) FROM addr WHERE ${W} AND u256 = ${(1n << 256n) - 1n}`, `SELECT count(*) FROM addr WHERE ${W} AND i256 IN (1, 1e70)`, `SELECT count(*) FROM addr WHERE ${W} AND u256 BETWEEN 0 AND 2e76`]) {
      await pushed.execute(q).then(
        () => assert.unreachable(`must fail: ${q}`),
        (err: unknown) => {
          assert.instance(err, SqlError);
          assert.is((err as SqlError).codes.sqlstate, '42000');
          assert.match(String(err), /is a 256-bit integer and compares exactly: .* write it in quotes/);
        },
      );
    }
    // 128-bit literals are exact unquoted: DuckDB reads them as HUGEINT / UHUGEINT.
    const max = (1n << 128n) - 1n;
    const n = (await pushed.execute(`SELECT count(*) FROM addr WHERE ${W} AND u128 = ${max}`)).table.getChildAt(0)?.get(0);
    assert.is(Number(n), rows.filter((r) => r.u128 === max).length);
  } finally {
    await sql.close();
  }
});

pushdown('node-postgres reads every wide integer exactly', async () => {
  const rows = addrRows(23, 120);
  const { pushed, sql } = addrEngines(rows);
  const server = new PgServer(pushed, { host: '127.0.0.1', port: 0 });
  const { port } = await server.listen();
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'tester', database: 'hd' });
  await c.connect();
  try {
    const r = await c.query({ text: `SELECT max(u256), min(i256), max(u128), min(i128), max(big) FROM addr WHERE ${W} AND u256 > $1`, values: ['9'], rowMode: 'array' });
    const kept = rows.filter((x) => x.u256 > 9n);
    const ext = (col: Wide, max: boolean): string => String(kept.map((x) => x[col]).reduce((a, b) => ((max ? b > a : b < a) ? b : a)));
    assert.equal(r.rows[0], [ext('u256', true), ext('i256', false), ext('u128', true), ext('i128', false), ext('big', true)]);
  } finally {
    await c.end();
    await server.close();
    await sql.close();
  }
});

pushdown.run();
