/**
 * ipv4 / ipv6 columns compare, sort and aggregate on their integers (the reference's presentation
 * rule 1) while clients see their text. Randomised differential tests: for generated rows (values
 * where text order and integer order part) and many statement shapes, hd_sql's answer — with its
 * filters pushed to the (in-memory) nodes, and with every row fetched and nothing pushed — equals
 * DuckDB's answer over the same rows stored as plain integers, addresses printed by the decoder's
 * rules. Also: what is pushed, aggregate pushdown, refusals, result names, and a real client.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import pg from 'pg';
import { arrowSchemaFor } from '../../engine-rs/decode';
import { mulberry32 } from '../../lib/mulberry32';
import { ensureAddressFunctions } from '../../sql/addressFunctions';
import { ipv4Text, ipv6Text } from '../../sql/inetAddress';
import { PgServer } from '../../sql/pgwire/pgServer';
import { SqlError } from '../../sql/sqlError';
import { addrEngines, addrRows, B0, oracleSession, rowsOf, type AddrRow } from './addressSupport';

/** A shape: the statement for hd_sql, the same over the oracle's integers, and which oracle columns are addresses. */
interface Shape {
  readonly hd: string;
  readonly oracle: string;
  readonly addr?: Readonly<Record<number, 'ipv4' | 'ipv6'>>;
  readonly params?: readonly unknown[];
  /** True when the statement's order is partial (compare as a multiset). */
  readonly unordered?: boolean;
}

const W = `ts >= ${B0} AND ts < ${B0 + 100_000}`;
const OPS = ['<', '<=', '>', '>=', '=', '<>'];

/** Shapes drawn with literals from the data (and beyond it), in the forms users write them. */
function shapes(rows: readonly AddrRow[], seed: number): Shape[] {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const a4 = (): number => (rnd() < 0.8 ? pick(rows).src : Math.floor(rnd() * 2 ** 32));
  const a6 = (): bigint => (rnd() < 0.8 ? pick(rows).src6 : pick(rows).dst6);
  /** A non-canonical spelling of an ipv6 address that means the same integer. */
  const spelled = (v: bigint): string => (rnd() < 0.5 ? ipv6Text(v).toUpperCase() : Array.from({ length: 8 }, (_, g) => ((v >> BigInt(112 - 16 * g)) & 0xffffn).toString(16).padStart(4, '0')).join(':'));
  const out: Shape[] = [];
  for (let k = 0; k < 6; k++) {
    const op = pick(OPS);
    const [l4, l6] = [a4(), a6()];
    out.push({ hd: `SELECT ts, src FROM addr WHERE ${W} AND src ${op} '${ipv4Text(l4)}' ORDER BY src, ts`, oracle: `SELECT ts, src FROM oracle WHERE src ${op} ${l4} ORDER BY src, ts`, addr: { 1: 'ipv4' } });
    out.push({ hd: `SELECT ts, src6 FROM addr WHERE ${W} AND '${spelled(l6)}' ${op} src6 ORDER BY src6 DESC, ts`, oracle: `SELECT ts, src6 FROM oracle WHERE ${l6} ${op} src6 ORDER BY src6 DESC, ts`, addr: { 1: 'ipv6' } });
  }
  const [x, y] = [a4(), a4()].sort((p, q) => p - q) as [number, number];
  const [u, v] = [a6(), a6()].sort((p, q) => (p < q ? -1 : p > q ? 1 : 0)) as [bigint, bigint];
  const ins = [a4(), a4(), a4()];
  const ins6 = [a6(), a6(), a6()];
  out.push(
    { hd: `SELECT count(*), min(ts) FROM addr WHERE ${W} AND src BETWEEN '${ipv4Text(x)}' AND '${ipv4Text(y)}' AND src6 NOT BETWEEN '${ipv6Text(u)}' AND '${spelled(v)}'`, oracle: `SELECT count(*), min(ts) FROM oracle WHERE src BETWEEN ${x} AND ${y} AND src6 NOT BETWEEN ${u} AND ${v}` },
    { hd: `SELECT ts FROM addr WHERE ${W} AND (src IN (${ins.map((i) => `'${ipv4Text(i)}'`).join(', ')}) OR src6 NOT IN (${ins6.map((i) => `'${spelled(i)}'`).join(', ')})) ORDER BY ts`, oracle: `SELECT ts FROM oracle WHERE src IN (${ins.join(', ')}) OR src6 NOT IN (${ins6.join(', ')}) ORDER BY ts` },
    { hd: `SELECT min(src), max(src), min(src6), max(src6), max(dst) FILTER (WHERE n > 2), count(*) FROM addr WHERE ${W} AND src6 > '${ipv6Text(u)}'`, oracle: `SELECT min(src), max(src), min(src6), max(src6), max(dst) FILTER (WHERE n > 2), count(*) FROM oracle WHERE src6 > ${u}`, addr: { 0: 'ipv4', 1: 'ipv4', 2: 'ipv6', 3: 'ipv6', 4: 'ipv4' } },
    { hd: `SELECT n, min(src6) AS lo, max(src6) AS hi FROM addr WHERE ${W} GROUP BY n ORDER BY hi DESC, n`, oracle: `SELECT n, min(src6) AS lo, max(src6) AS hi FROM oracle GROUP BY n ORDER BY hi DESC, n`, addr: { 1: 'ipv6', 2: 'ipv6' } },
    { hd: `SELECT src6, count(*) AS c FROM addr WHERE ${W} GROUP BY src6 ORDER BY 1 DESC LIMIT 12`, oracle: `SELECT src6, count(*) AS c FROM oracle GROUP BY src6 ORDER BY 1 DESC LIMIT 12`, addr: { 0: 'ipv6' } },
    { hd: `SELECT ts, src < dst, src6 >= dst6 FROM addr WHERE ${W} AND src <> dst ORDER BY ts`, oracle: `SELECT ts, src < dst, src6 >= dst6 FROM oracle WHERE src <> dst ORDER BY ts` },
    { hd: `SELECT ts, row_number() OVER (ORDER BY src6, ts) AS r, max(src) OVER (PARTITION BY n) AS m FROM addr WHERE ${W} ORDER BY ts`, oracle: `SELECT ts, row_number() OVER (ORDER BY src6, ts) AS r, max(src) OVER (PARTITION BY n) AS m FROM oracle ORDER BY ts`, addr: { 2: 'ipv4' } },
    { hd: `SELECT src AS a FROM addr WHERE ${W} AND ts < ${B0 + 40} UNION SELECT dst FROM addr WHERE ${W} ORDER BY a DESC LIMIT 25`, oracle: `SELECT src AS a FROM oracle WHERE ts < ${B0 + 40} UNION SELECT dst FROM oracle ORDER BY a DESC LIMIT 25`, addr: { 0: 'ipv4' } },
    { hd: `WITH c(s, t) AS (SELECT src6, ts FROM addr WHERE ${W}) SELECT s FROM c WHERE s <= '${spelled(v)}' ORDER BY s, t`, oracle: `WITH c(s, t) AS (SELECT src6, ts FROM oracle) SELECT s FROM c WHERE s <= ${v} ORDER BY s, t`, addr: { 0: 'ipv6' } },
    { hd: `SELECT x.src FROM (SELECT src, ts FROM addr WHERE ${W}) x WHERE x.src >= '${ipv4Text(x)}' ORDER BY x.src, x.ts LIMIT 30`, oracle: `SELECT x.src FROM (SELECT src, ts FROM oracle) x WHERE x.src >= ${x} ORDER BY x.src, x.ts LIMIT 30`, addr: { 0: 'ipv4' } },
    { hd: `SELECT ts FROM addr WHERE ${W} AND src = (SELECT max(src) FROM addr WHERE ${W}) ORDER BY ts`, oracle: `SELECT ts FROM oracle WHERE src = (SELECT max(src) FROM oracle) ORDER BY ts` },
    { hd: `SELECT ts, src6 FROM addr WHERE ${W} AND src6 > $1 AND src <= $2 ORDER BY src6, ts`, oracle: `SELECT ts, src6 FROM oracle WHERE src6 > ${u} AND src <= ${y} ORDER BY src6, ts`, addr: { 1: 'ipv6' }, params: [spelled(u), ipv4Text(y)] },
    { hd: `SELECT ts, src FROM addr WHERE ${W} AND src = $1 ORDER BY ts`, oracle: `SELECT ts, src FROM oracle WHERE src = ${ins[0]} ORDER BY ts`, addr: { 1: 'ipv4' }, params: [ipv4Text(ins[0]!)] },
    { hd: `SELECT string_agg(src, ',' ORDER BY src, ts) FROM addr WHERE ${W} AND n = 1`, oracle: `SELECT string_agg(CAST(src AS VARCHAR), ',' ORDER BY src, ts) FROM oracle WHERE n = 1`, addr: {} },
    { hd: `SELECT DISTINCT src6 FROM addr WHERE ${W} ORDER BY src6 LIMIT 15`, oracle: `SELECT DISTINCT src6 FROM oracle ORDER BY src6 LIMIT 15`, addr: { 0: 'ipv6' } },
    { hd: `SELECT ts FROM addr WHERE ${W} AND src6 > ANY (SELECT dst6 FROM addr WHERE ${W} AND n = 3) ORDER BY ts`, oracle: `SELECT ts FROM oracle WHERE src6 > ANY (SELECT dst6 FROM oracle WHERE n = 3) ORDER BY ts` },
    { hd: `WITH c AS (SELECT dst FROM addr WHERE ${W} AND n = 2) SELECT ts FROM addr WHERE ${W} AND src < (SELECT max(dst) FROM c) ORDER BY ts`, oracle: `WITH c AS (SELECT dst FROM oracle WHERE n = 2) SELECT ts FROM oracle WHERE src < (SELECT max(dst) FROM c) ORDER BY ts` },
    { hd: `SELECT dst AS src, ts FROM addr WHERE ${W} ORDER BY src, ts LIMIT 20`, oracle: `SELECT dst AS src, ts FROM oracle ORDER BY src, ts LIMIT 20`, addr: { 0: 'ipv4' } },
    { hd: `SELECT * FROM (SELECT ts, src6 FROM addr WHERE ${W}) ORDER BY src6 DESC, ts LIMIT 20`, oracle: `SELECT * FROM (SELECT ts, src6 FROM oracle) ORDER BY src6 DESC, ts LIMIT 20`, addr: { 1: 'ipv6' } },
    { hd: `SELECT dst6 FROM addr WHERE ${W} AND n < 2 UNION ALL SELECT src6 FROM addr WHERE ${W} AND n > 3 ORDER BY 1 LIMIT 20`, oracle: `SELECT dst6 FROM oracle WHERE n < 2 UNION ALL SELECT src6 FROM oracle WHERE n > 3 ORDER BY 1 LIMIT 20`, addr: { 0: 'ipv6' } },
  );
  return out;
}

/** The oracle's string_agg lists integers: print them as the column's text before comparing. */
function agg(rowsText: string[]): string[] {
  return rowsText.map((r) => (/^[0-9,]+$/.test(r) ? r.split(',').map((x) => ipv4Text(Number(x))).join(',') : r));
}

const differential = suite('addresses: differential against DuckDB over the integers');

for (const seed of [3, 17, 99]) {
  differential(`seed ${seed}: pushed, not pushed and the integers agree on every shape`, async () => {
    const rows = addrRows(seed, 420);
    const { pushed, local, sql } = addrEngines(rows, seed === 17 ? 'big' : 'little');
    const oracle = await oracleSession(sql, rows);
    try {
      for (const s of shapes(rows, seed)) {
        const opts = s.params ? { params: s.params as string[] } : {};
        const want = rowsOf(await oracle.query(s.oracle), s.addr);
        const a = rowsOf((await pushed.execute(s.hd, opts)).table);
        const b = rowsOf((await local.execute(s.hd, opts)).table);
        const fix = /string_agg/.test(s.hd) ? agg : (x: string[]): string[] => x;
        assert.equal(a, fix(want), `pushed: ${s.hd}`);
        assert.equal(b, fix(want), `not pushed: ${s.hd}`);
      }
    } finally {
      await oracle.close();
      await sql.close();
    }
  });
}

differential.run();

const pushdown = suite('addresses: pushdown');

pushdown('range comparisons on addresses push as their integers, narrow the read, and give the same rows as not pushing', async () => {
  const rows = addrRows(5, 360);
  const { pushed, local, fetcher, sql } = addrEngines(rows, 'little', { explainPushdown: true });
  try {
    const q = `SELECT ts, src, src6 FROM addr WHERE ${W} AND src < '10.0.0.9' AND src6 BETWEEN '::ffff:0.0.0.0' AND '::FFFF:255.255.255.255' ORDER BY src, ts`;
    const want = rows.filter((r) => r.src < 0x0a000009 && r.src6 >= 0xffff00000000n && r.src6 <= 0xffffffffffffn).length;
    assert.ok(want > 0 && want < rows.length / 4, `${want} matching rows`);
    const before = fetcher.returned;
    const a = await pushed.execute(q);
    assert.is(fetcher.returned - before, want, 'the nodes returned only the matching rows');
    assert.is(a.table.numRows, want);
    const filters = a.notices.find((n) => n.includes('pushed down:')) ?? '';
    assert.ok(filters.includes('src lt 167772169') && filters.includes('src6 between [281470681743360, 281474976710655]'), filters);
    assert.equal(rowsOf(a.table), rowsOf((await local.execute(q)).table));
    // Equality with a spelling of the address that is not its text: pushed as the integer, matched as the text.
    const eq = `SELECT count(*) FROM addr WHERE ${W} AND src6 IN ('0:0:0:0:0:FFFF:10.0.0.9', '::1')`;
    const n = rows.filter((r) => r.src6 === 0xffff0a000009n || r.src6 === 1n).length;
    for (const e of [pushed, local]) assert.is(Number((await e.execute(eq)).table.getChildAt(0)?.get(0)), n);
  } finally {
    await sql.close();
  }
});

pushdown('aggregate pushdown: a count over an address range splits; min / max of addresses keep the record path; both exact', async () => {
  const rows = addrRows(8, 360);
  const { pushed, local, sql } = addrEngines(rows, 'little', { explainPushdown: true }); // the fixture's partials read little-endian fields
  const oracle = await oracleSession(sql, rows);
  try {
    const counted = `SELECT n, count(*) AS c FROM addr WHERE ${W} AND src6 < '2001:db8::20' AND src >= '10.0.0.2' GROUP BY n ORDER BY n`;
    const a = await pushed.execute(counted);
    assert.ok(a.aggregatePushed, a.notices.join('; '));
    const want = rowsOf(await oracle.query(`SELECT n, count(*) AS c FROM oracle WHERE src6 < ${0x20010db8n << 96n | 0x20n} AND src >= ${0x0a000002} GROUP BY n ORDER BY n`));
    assert.equal(rowsOf(a.table), want);
    assert.equal(rowsOf((await local.execute(counted)).table), want);
    const extremes = `SELECT min(src), max(src), min(src6), max(src6) FROM addr WHERE ${W}`;
    const b = await pushed.execute(extremes);
    assert.not.ok(b.aggregatePushed);
    assert.ok(b.notices.some((x) => /aggregate not pushed down: min\(src\): ipv4 is not summed or compared/.test(x)), b.notices.join('; '));
    assert.equal(rowsOf(b.table), rowsOf(await oracle.query('SELECT min(src), max(src), min(src6), max(src6) FROM oracle'), { 0: 'ipv4', 1: 'ipv4', 2: 'ipv6', 3: 'ipv6' }));
  } finally {
    await oracle.close();
    await sql.close();
  }
});

pushdown.run();

const refusals = suite('addresses: literals that are not addresses');

refusals('fail the statement with 42000 naming the literal, for literals and bound parameters', async () => {
  const rows = addrRows(2, 60);
  const { pushed, sql } = addrEngines(rows);
  const cases: [string, readonly unknown[], RegExp][] = [
    [`SELECT count(*) FROM addr WHERE ${W} AND src < '10.0'`, [], /src is an ipv4 address and compares on its integer: the literal "10.0" is not an IPv4 address/],
    [`SELECT count(*) FROM addr WHERE ${W} AND src6 = '10.0.0.1'`, [], /"10.0.0.1" is not an IPv6 address \(an IPv4 address reads ::ffff:10.0.0.1 in an ipv6 column\)/],
    [`SELECT count(*) FROM addr WHERE ${W} AND src IN ('10.0.0.1', '010.0.0.2')`, [], /"010.0.0.2" is not an IPv4 address/],
    [`SELECT count(*) FROM addr WHERE ${W} AND dst BETWEEN '1.1.1.1' AND '1.1.1.256'`, [], /dst is an ipv4 address .*"1.1.1.256"/],
    [`SELECT count(*) FROM addr WHERE ${W} AND src > $1`, [5], /bind parameter \$1 as the address's text, got number/],
    [`SELECT count(*) FROM addr WHERE ${W} AND src6 >= $1`, ['nope'], /parameter \$1 "nope" is not an IPv6 address/],
  ];
  try {
    for (const [q, params, re] of cases) {
      try {
        await pushed.execute(q, params.length > 0 ? { params: params as never[] } : {});
        assert.unreachable(`must fail: ${q}`);
      } catch (err) {
        assert.instance(err, SqlError, String(err));
        assert.is((err as SqlError).codes.sqlstate, '42000');
        assert.match((err as SqlError).message, re);
      }
    }
    // A cast makes the value plain text again: compared as text, as written.
    const text = (await pushed.execute(`SELECT count(*) FROM addr WHERE ${W} AND CAST(src AS VARCHAR) < '10.0.0.9'`)).table.getChildAt(0)?.get(0);
    assert.is(Number(text), rows.filter((r) => ipv4Text(r.src) < '10.0.0.9').length);
  } finally {
    await sql.close();
  }
});

refusals.run();

const names = suite('addresses: result names and the wire');

names('a rewritten select item keeps the name and type DuckDB gives the item as written', async () => {
  const rows = addrRows(4, 60);
  const { pushed, sql, schema } = addrEngines(rows);
  const s = await sql.openSession();
  try {
    await ensureAddressFunctions(sql, s);
    await s.register('addr', arrowSchemaFor(schema));
    const statements = [
      `SELECT max(src), MIN(Src6) FILTER (WHERE n > 1), src < '10.0.0.9', coalesce(max(dst), '0.0.0.0'), (max(src) > '1.0.0.0') = true, string_agg(src, ',' ORDER BY src) FROM addr WHERE ${W} GROUP BY src`,
      `SELECT max(src) OVER (PARTITION BY n ORDER BY src6), src6 BETWEEN '::1' AND '::2', src, ts AS "max(src)", row_number() OVER (ORDER BY dst DESC) FROM addr WHERE ${W}`,
    ];
    for (const q of statements) {
      const plan = await pushed.plan(q);
      assert.ok(plan.rewrittenTree !== undefined && plan.namePins === undefined, 'rewritten, names pinned');
      const text = String((await s.query(`SELECT json_deserialize_sql('${plan.rewrittenTree!.replace(/'/g, "''")}'::JSON) AS t`)).getChildAt(0)?.get(0));
      assert.match(text, /hd_inet[46]_key/);
      const shape = (t: arrow.Table): string[] => t.schema.fields.map((f) => `${f.name}:${String(f.type)}`);
      assert.equal(shape(await s.query(text)), shape(await s.query(q)), q);
    }
  } finally {
    await s.close();
    await sql.close();
  }
});

names('node-postgres sees the addresses as text, ordered and compared on their integers', async () => {
  const rows = addrRows(6, 300);
  const { pushed, sql } = addrEngines(rows);
  const oracle = await oracleSession(sql, rows);
  const server = new PgServer(pushed, { host: '127.0.0.1', port: 0 });
  const { port } = await server.listen();
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'tester', database: 'hd' });
  await c.connect();
  try {
    const lo = rows[7]!.src6;
    const r = await c.query({ text: `SELECT ts, src, src6 FROM addr WHERE ${W} AND src6 >= $1 AND src < $2 ORDER BY src6, src DESC, ts LIMIT 20`, values: [ipv6Text(lo).toUpperCase(), '10.0.0.10'], rowMode: 'array' });
    const want = rowsOf(await oracle.query(`SELECT ts, src, src6 FROM oracle WHERE src6 >= ${lo} AND src < ${0x0a00000a} ORDER BY src6, src DESC, ts LIMIT 20`), { 1: 'ipv4', 2: 'ipv6' });
    assert.ok(want.length > 0);
    assert.equal(r.rows.map((x: unknown[]) => x.map(String).join('|')), want);
    const m = await c.query({ text: `SELECT max(src), min(src6) FROM addr WHERE ${W}`, rowMode: 'array' });
    assert.equal(m.fields.map((f) => f.name), ['max', 'min']);
    assert.equal(m.rows[0], rowsOf(await oracle.query('SELECT max(src), min(src6) FROM oracle'), { 0: 'ipv4', 1: 'ipv6' })[0]!.split('|'));
    const err = await c.query(`SELECT count(*) FROM addr WHERE ${W} AND src < '10.0'`).then(() => undefined, (e: { code?: string; message: string }) => e);
    assert.is(err?.code, '42000');
    assert.match(String(err?.message), /is not an IPv4 address/);
  } finally {
    await c.end();
    await server.close();
    await oracle.close();
    await sql.close();
  }
});

names.run();
