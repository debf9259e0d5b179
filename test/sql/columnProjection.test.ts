/**
 * Column projection in hd_sql: the planner names the columns a statement can read (every column
 * for a star and anything it cannot see through), the fetch decodes only those, and every answer
 * is the same as with every column loaded.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import { memoryEngine, T0 } from './support';

const test = suite('hd_sql column projection');
const projected = memoryEngine(300);
const full = memoryEngine(300, { projectColumns: false });
const W = `ts >= ${T0} AND ts < ${T0 + 200}`;

/** A result as comparable text: column names and types, then every row. */
function shown(t: arrow.Table): string[] {
  const big = (_: string, v: unknown): unknown => (typeof v === 'bigint' ? `${v}n` : v);
  return [t.schema.fields.map((f) => `${f.name}:${String(f.type)}`).join(','), ...t.toArray().map((r) => JSON.stringify(r.toJSON(), big))];
}

/** Statement → the columns the plan reads (undefined: all), and the same answer both ways. */
const cases: readonly [string, readonly string[] | undefined, (readonly (string | number)[])?][] = [
  [`SELECT count(*), sum(bytes), sum(packets) FROM flows WHERE ${W} AND proto = 'tcp' AND dst_port = 443`, ['ts', 'dst_port', 'proto', 'packets', 'bytes']],
  [`SELECT ts, src_ip, dst_ip, src_port, bytes FROM flows WHERE ${W} AND proto = 'udp' AND dst_port = 80 AND packets < 1000`, ['ts', 'src_ip', 'dst_ip', 'src_port', 'dst_port', 'proto', 'packets', 'bytes']],
  [`SELECT * FROM flows WHERE ${W} ORDER BY ts LIMIT 20`, undefined],
  [`SELECT f.* FROM flows f WHERE ${W} ORDER BY ts LIMIT 20`, undefined],
  [`SELECT * EXCLUDE (bytes) FROM flows WHERE ${W} ORDER BY ts LIMIT 5`, undefined],
  [`SELECT COLUMNS('.*port') FROM flows WHERE ${W} ORDER BY 1, 2 LIMIT 5`, undefined],
  [`FROM flows WHERE ${W} ORDER BY ts LIMIT 3`, undefined],
  [`SELECT f FROM flows f WHERE ${W} ORDER BY f.ts LIMIT 3`, undefined],
  [`SELECT a, b FROM flows f(a, b) WHERE a >= ${T0} ORDER BY a LIMIT 3`, undefined],
  [`SELECT #1, bytes FROM flows WHERE ${W} ORDER BY 1 LIMIT 3`, undefined],
  [`SELECT count(*) FROM flows a NATURAL JOIN flows b WHERE a.ts < ${T0 + 50} AND a.ts >= ${T0}`, undefined],
  [`SELECT count(*) FROM flows WHERE ts >= ${T0}`, ['ts']],
  [`SELECT src_ip AS s, bytes b FROM flows WHERE ${W} AND proto = 'tcp' ORDER BY dst_port DESC, s, b LIMIT 10`, ['ts', 'src_ip', 'dst_port', 'proto', 'bytes']],
  [`SELECT sum(bytes) FROM flows WHERE ${W} AND duration_ms = 5 AND packets < 10`, ['ts', 'packets', 'bytes', 'duration_ms']],
  [`SELECT "BYTES", Proto, count(*) n FROM flows WHERE ${W} GROUP BY ALL ORDER BY 1, 2 LIMIT 5`, ['ts', 'proto', 'bytes']],
  // ORDER BY ALL is a star in DuckDB's tree: read as "every column" (conservative).
  [`SELECT proto, count(*) n FROM flows WHERE ${W} GROUP BY ALL ORDER BY ALL`, undefined],
  [`WITH t AS (SELECT ts, bytes AS x FROM flows WHERE ${W}) SELECT max(x), count(*) FROM t`, ['ts', 'bytes']],
  [`WITH t AS (SELECT * FROM flows WHERE ${W}) SELECT bytes FROM t ORDER BY ts LIMIT 5`, undefined],
  [`SELECT a.ts, b.bytes FROM flows a JOIN flows b USING (ts) WHERE a.ts >= ${T0} AND a.ts < ${T0 + 30} AND b.ts >= ${T0} AND b.ts < ${T0 + 30} ORDER BY 1`, ['ts', 'bytes']],
  [`SELECT a.ts FROM flows a JOIN flows b USING (dst_port) WHERE a.ts >= ${T0} AND a.ts < ${T0 + 4} AND b.ts >= ${T0} AND b.ts < ${T0 + 4} ORDER BY 1`, ['ts', 'dst_port']],
  [`SELECT (SELECT max(bytes) FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 10}) AS m, count(*) FROM flows WHERE ${W} AND src_port = 1000`, ['ts', 'src_port', 'bytes']],
  [`SELECT list_transform([1, 2], x -> x + 1) AS l, dst_port FROM flows WHERE ${W} ORDER BY dst_port LIMIT 2`, ['ts', 'dst_port']],
  [`SELECT ts FROM flows WHERE ${W} AND ts < ${T0 + 3} UNION ALL SELECT bytes FROM flows WHERE ${W} AND ts < ${T0 + 3} ORDER BY 1`, ['ts', 'bytes']],
  [`SELECT src_port, dst_ip FROM flows WHERE ${W} AND dst_port = $1 ORDER BY ts LIMIT 4`, ['ts', 'dst_ip', 'src_port', 'dst_port'], [443]],
  [`SELECT CAST(src_ip AS VARCHAR) || ':' || src_port AS ep, count(*) FROM flows WHERE ${W} GROUP BY 1 ORDER BY 1`, ['ts', 'src_ip', 'src_port']],
  [`SELECT ts, packets, duration_ms, bytes, src_ip, dst_ip, src_port, dst_port, proto FROM flows WHERE ${W} ORDER BY ts LIMIT 3`, undefined],
];

test('each statement reads the columns it names, and answers as with every column', async () => {
  for (const [sql, columns, params] of cases) {
    const opts = params ? { params } : {};
    const a = await projected.engine.execute(sql, opts);
    const b = await full.engine.execute(sql, opts);
    assert.equal(a.plan.reads.map((r) => r.columns), a.plan.reads.map(() => columns), `columns of: ${sql}`);
    assert.ok(b.plan.reads.every((r) => r.columns === undefined), 'projection off loads everything');
    assert.equal(shown(a.table), shown(b.table), sql);
    assert.ok(a.table.numRows > 0, `the case reads rows: ${sql}`);
  }
});

test('a statement naming no column still counts the rows (the time field is read)', async () => {
  const sql = `SELECT count(*) AS n FROM flows`;
  const a = await projected.engine.execute(sql);
  assert.equal(a.plan.reads[0]?.columns, ['ts']);
  assert.equal(shown(a.table), shown((await full.engine.execute(sql)).table));
});

test('an unknown column is still DuckDB\'s error, not a decode error', async () => {
  try {
    await projected.engine.execute(`SELECT nope FROM flows WHERE ${W}`);
    assert.unreachable();
  } catch (err) {
    assert.is((err as { kind?: string }).kind, 'query_failed');
    assert.match((err as Error).message, /nope/);
  }
});

test('describe gives the same schema with projection', async () => {
  const sql = `SELECT src_ip, bytes FROM flows WHERE ${W}`;
  const d = await projected.engine.describe(sql, 0);
  assert.equal(d.fields.map((f) => `${f.name}:${String(f.type)}`), shown((await projected.engine.execute(sql)).table)[0]!.split(','));
});

test.after(async () => {
  await projected.local.close();
  await full.local.close();
});

test.run();
