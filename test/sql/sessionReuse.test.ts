/**
 * hd_sql reuses DuckDB sessions across statements (sql/sessionPool.ts): no row of one statement is
 * seen by the next, a failed statement's session is not reused, concurrent statements each get
 * their own session, and the answers are those of a fresh engine.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import { LocalSql } from '../../local/localSql';
import { SessionPool } from '../../sql/sessionPool';
import { memoryEngine, T0 } from './support';

const test = suite('hd_sql session reuse');
const { engine, local, stats } = memoryEngine(300);
let opened = 0;
const open = local.openSession.bind(local);
local.openSession = async () => (opened++, open());

const show = (t: arrow.Table): string => JSON.stringify(t.toArray().map((r) => r.toJSON()), (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 20)); // parking runs after the answer

const statements = [
  `SELECT count(*) AS n, sum(bytes) AS b FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 100}`,
  `SELECT count(*) AS n, sum(bytes) AS b FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 100}`,
  `SELECT count(*) AS n FROM flows WHERE ts >= ${T0 + 50} AND ts < ${T0 + 300} AND dst_port = 443`,
  `SELECT count(*) AS n, min(ts) AS lo FROM flows WHERE ts >= ${T0}`,
  `SELECT * FROM flows WHERE ts >= ${T0 + 10} AND ts < ${T0 + 13} ORDER BY ts`,
  `SELECT count(*) AS n, sum(bytes) AS b FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 100}`,
  `SELECT table_name FROM information_schema.tables`,
  `SELECT src_ip, count(*) AS n FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 40} GROUP BY 1 ORDER BY 1`,
];

test('statements on reused sessions answer as a fresh engine does, one session for all', async () => {
  const want: string[] = [];
  for (const sql of statements) {
    const fresh = memoryEngine(300);
    want.push(show((await fresh.engine.execute(sql)).table));
    await fresh.local.close();
  }
  await engine.execute(statements[0]!); // the first statement opens the session the others reuse
  await settle();
  opened = 0;
  for (const [i, sql] of statements.entries()) {
    assert.is(show((await engine.execute(sql)).table), want[i], sql);
    await settle();
  }
  assert.is(opened, 0, 'every statement ran on the pooled session');
  // The fetched rows were loaded in a transaction the pool rolled back: nothing was truncated but the catalog's.
  const s = await (engine as unknown as { pool: SessionPool }).pool.take();
  assert.ok(s.parkedRows < 500, `rows emptied by TRUNCATE: ${s.parkedRows}`);
  assert.is(Number((await s.query('SELECT count(*) FROM flows')).getChildAt(0)?.get(0)), 0, 'no rows left in the parked table');
  await (engine as unknown as { pool: SessionPool }).pool.release(s);
  assert.ok(stats.reads > 0);
});

test('warmUp leaves a session ready: the first statement of a new engine opens none', async () => {
  const e = memoryEngine(30);
  let n = 0;
  const o = e.local.openSession.bind(e.local);
  e.local.openSession = async () => (n++, o());
  await e.engine.warmUp();
  await settle();
  assert.is(n, 1);
  const r = await e.engine.execute(`SELECT count(*) AS n FROM flows WHERE ts >= ${T0}`);
  assert.is(Number(r.table.getChild('n')?.get(0)), 30);
  assert.is(n, 1, 'the warmed session served it');
  await e.local.close();
});

test('a plan is reused for the same text only when it depends on neither the clock nor parameters', async () => {
  const bounded = `SELECT count(*) AS n FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 20}`;
  const a = await engine.execute(bounded);
  const b = await engine.execute(bounded);
  assert.ok(a.plan === b.plan, 'a bounded window: the same plan');
  assert.is(a.plan.volatile, false);
  const open = `SELECT count(*) AS n FROM flows WHERE ts >= ${T0}`;
  const c = await engine.execute(open);
  assert.ok(c.plan.volatile && c.plan !== (await engine.execute(open)).plan, 'no upper bound reads up to now: planned each time');
  const p = `SELECT count(*) AS n FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 20} AND dst_port = $1`;
  const d = await engine.execute(p, { params: [443] });
  const e = await engine.execute(p, { params: [80] });
  assert.ok(d.plan.volatile && d.plan !== e.plan, 'parameters push down: planned each time');
  assert.equal([Number(d.table.getChild('n')?.get(0)), Number(e.table.getChild('n')?.get(0))], [7, 7]);
  await settle();
});

test('a failed statement closes its session; the next one is right', async () => {
  await engine.execute(`SELECT count(*) FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 10}`);
  await settle();
  const pool = (engine as unknown as { pool: SessionPool }).pool;
  const discarded: unknown[] = [];
  const discard = pool.discard.bind(pool);
  pool.discard = async (s) => (discarded.push(s), discard(s));
  try {
    await engine.execute(`SELECT nope FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 10}`).then(
      () => assert.unreachable('unknown column'),
      (err: Error) => assert.match(err.message, /nope/),
    );
    assert.is(discarded.length, 1, 'the failed statement\'s session was closed');
    assert.ok((discarded[0] as { isClosed: boolean }).isClosed);
    const r = await engine.execute(`SELECT count(*) AS n FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 10}`);
    assert.is(Number(r.table.getChild('n')?.get(0)), 10);
  } finally {
    pool.discard = discard;
  }
});

test('concurrent statements each get a session and their own rows', async () => {
  await settle();
  const sql = (k: number): string => `SELECT count(*) AS n FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 10 * k}`;
  const out = await Promise.all([1, 2, 3, 4, 5, 6].map((k) => engine.execute(sql(k))));
  assert.equal(out.map((r) => Number(r.table.getChild('n')?.get(0))), [10, 20, 30, 40, 50, 60]);
  await settle();
  const again = await Promise.all([6, 5, 4, 3, 2, 1].map((k) => engine.execute(sql(k))));
  assert.equal(again.map((r) => Number(r.table.getChild('n')?.get(0))), [60, 50, 40, 30, 20, 10]);
});

test('the pool keeps at most maxIdle sessions and recycles one past maxParkedRows', async () => {
  const l = new LocalSql({ threads: 1 });
  try {
    const pool = new SessionPool(l, { maxIdle: 1, maxParkedRows: 0 });
    const [a, b] = [await pool.take(), await pool.take()];
    await pool.release(a);
    await pool.release(b);
    assert.is(pool.idleCount, 1);
    assert.ok(b.isClosed, 'beyond maxIdle: closed');
    const s = await pool.take();
    assert.is(s, a);
    await s.query('CREATE TEMP TABLE x AS SELECT 1 AS v');
    await s.register('y', (await s.query('SELECT 1 AS v')));
    await pool.release(s);
    assert.ok(s.isClosed, 'emptied rows past maxParkedRows: closed');
    assert.is(pool.idleCount, 0);
  } finally {
    await l.close();
  }
});

test.after(() => local.close());
test.run();
