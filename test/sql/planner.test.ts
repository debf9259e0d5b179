/**
 * The SQL planner: what pushes down to the Storage Nodes (and in which form), what stays local,
 * the time window, catalog statements and the error kinds, on trees DuckDB itself parsed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { LocalSql } from '../../local/localSql';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import type { Plan } from '../../sql/planner';
import { SqlEngine } from '../../sql/sqlEngine';
import { SqlError } from '../../sql/sqlError';

const flows = Schema.parse(readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8'));
const arrays = Schema.parse({
  id: 'events', name: 'Events', record_size: 64, time_field: 'ts',
  enums: { kind: { values: { a: 1, b: 2 }, default_label: 'z' } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'kinds', offset: 8, size: 4, type: 'bytes', array: { element: 'uint8', count: 4, enum: 'kind' } },
    { name: 'ports', offset: 12, size: 8, type: 'bytes', array: { element: 'uint16', count: 4 } },
    { name: 'dt', offset: 20, size: 4, type: 'uint32', time_reference: { field: 'ts', unit: 'ms' } },
    { name: 'host', offset: 24, size: 8, type: 'string' },
    { name: 'v6', offset: 32, size: 16, type: 'ipv6' },
    { name: 'ratio', offset: 48, size: 8, type: 'double' },
  ],
});
const NOW = 1_700_003_600;
const noFetch: DatasetFetcher = { fetch: () => Promise.reject(new Error('not in this test')) };
const local = new LocalSql({ threads: 1 });
const engine = new SqlEngine(new Catalog([flows, arrays]), local, noFetch, { lookbackSec: 3600, timeoutMs: 10_000, maxRows: 0, qos: 1 }, () => NOW);

const plan = suite('sql planner');


const filtersOf = (p: Plan, i = 0): unknown => p.reads[i]?.subQueries.map((s) => s.filters);

plan('scalar comparisons, enum labels and ipv4 literals push down in the column form; the time bound sets the window', async () => {
  const p = await engine.plan("SELECT proto, count(*) FROM flows WHERE ts >= 1700000000 AND ts < 1700000600 AND proto = 'tcp' AND dst_ip = '10.0.0.2' AND 443 = dst_port AND bytes BETWEEN 1 AND 10 AND src_port IN (1, 2) AND src_ip < '10.0.0.10' GROUP BY proto");
  assert.is(p.reads.length, 1);
  assert.is(p.reads[0]!.schema.id, 'flows');
  assert.is(p.reads[0]!.startTime, 1700000000);
  assert.is(p.reads[0]!.endTime, 1700000599);
  assert.equal(filtersOf(p), [[
    { field: 'ts', op: 'ge', value: '1700000000' },
    { field: 'ts', op: 'lt', value: '1700000600' },
    { field: 'proto', op: 'eq', value: '6' },
    { field: 'dst_ip', op: 'eq', value: '167772162' },
    { field: 'dst_port', op: 'eq', value: '443' },
    { field: 'bytes', op: 'between', values: ['1', '10'] },
    { field: 'src_port', op: 'in', values: ['1', '2'] },
    { field: 'src_ip', op: 'lt', value: '167772170' },
  ]]);
  assert.equal(p.notices, []);
});

plan('what stays local: OR, functions, expressions, enum ranges and the default label, address casts, out-of-range values, decimals', async () => {
  const p = await engine.plan("SELECT * FROM flows WHERE ts > 1700000000 AND (dst_port = 1 OR dst_port = 2) AND abs(bytes) = 3 AND packets + 1 = 2 AND proto < 'udp' AND proto = 'other' AND CAST(src_ip AS VARCHAR) < '10.0.0.1' AND dst_port = 70000 AND bytes = 2.5 AND proto = 'nope'");
  assert.equal(filtersOf(p), [[{ field: 'ts', op: 'gt', value: '1700000000' }]]);
  assert.is(p.reads[0]!.startTime, 1700000001);
  assert.is(p.reads[0]!.endTime, NOW, 'a lower bound alone reads up to now');
});

plan('no time bound: the default lookback, with a notice; the human-readable name resolves to the dataset', async () => {
  const p = await engine.plan('SELECT count(*) FROM "Network flows" f WHERE f.dst_port = 53');
  assert.is(p.reads[0]!.schema.id, 'flows');
  assert.is(p.reads[0]!.endTime, NOW);
  assert.is(p.reads[0]!.startTime, NOW - 3600 + 1);
  assert.equal(filtersOf(p), [[{ field: 'dst_port', op: 'eq', value: '53' }]]);
  assert.match(p.notices[0] ?? '', /HD_SQL_DEFAULT_LOOKBACK_SEC/);
});

plan('list_contains (labels to codes) and NOT list_contains push down; len() and delta time stay local; strings and ipv6', async () => {
  const p = await engine.plan("SELECT * FROM events WHERE ts BETWEEN 1700000000 AND 1700000059 AND list_contains(kinds, 'b') AND NOT array_contains(ports, 80) AND len(ports) = 4 AND dt > 5 AND host = 'web' AND v6 = '2001:db8::1' AND ratio > 0.5");
  assert.equal(filtersOf(p), [[
    { field: 'ts', op: 'between', values: ['1700000000', '1700000059'] },
    { field: 'kinds', op: 'list_contains', value: '2' },
    { field: 'ports', op: 'not_list_contains', value: '80' },
    { field: 'host', op: 'eq', value: 'web' },
    { field: 'v6', op: 'eq', value: String((0x20010db8n << 96n) + 1n) },
  ]]);
});

plan('two references of a dataset: each one a sub-query (OR), the window their union; a reference without filters reads everything', async () => {
  const p = await engine.plan('SELECT * FROM flows a WHERE ts >= 1700000000 AND ts <= 1700000059 AND dst_port = 1 UNION ALL SELECT * FROM flows WHERE ts >= 1700000120 AND ts <= 1700000179 AND dst_port = 2');
  assert.is(p.reads.length, 1);
  assert.equal(p.reads[0]!.subQueries.length, 2);
  assert.is(p.reads[0]!.startTime, 1700000000);
  assert.is(p.reads[0]!.endTime, 1700000179);
  const j = await engine.plan('SELECT * FROM flows a JOIN events e ON a.ts = e.ts WHERE a.dst_port = 1');
  assert.is(j.reads.length, 2);
  assert.equal(j.reads.map((r) => r.subQueries.length), [0, 0], 'joins push nothing (yet)');
  const sub = await engine.plan('SELECT count(*) FROM (SELECT * FROM flows WHERE dst_port = 7) t WHERE t.bytes > 3');
  assert.equal(filtersOf(sub), [[{ field: 'dst_port', op: 'eq', value: '7' }]]);
});

plan('a contradictory time range reads nothing; $n parameters push down when bound', async () => {
  const p = await engine.plan('SELECT * FROM flows WHERE ts > 1700000100 AND ts < 1700000050');
  assert.ok(p.reads[0]!.startTime > p.reads[0]!.endTime);
  const q = await engine.plan('SELECT * FROM flows WHERE ts >= $1 AND proto = $2', [1700000000, 'udp']);
  assert.equal(filtersOf(q), [[{ field: 'ts', op: 'ge', value: '1700000000' }, { field: 'proto', op: 'eq', value: '17' }]]);
});

plan('catalog statements read no dataset and are rewritten to our catalog tables', async () => {
  const s = await engine.plan('SHOW TABLES');
  assert.is(s.reads.length, 0);
  assert.ok(s.usesCatalog);
  const c = await engine.plan("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'flows'");
  assert.ok(c.usesCatalog);
  const r = await engine.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'flows' ORDER BY ordinal_position");
  assert.equal(r.table.toArray().slice(0, 6).map((x) => `${x.column_name}:${x.data_type}`), ['ts:bigint', 'src_ip:inet', 'dst_ip:inet', 'src_port:integer', 'dst_port:integer', 'proto:text']);
  const t = await engine.execute('SHOW TABLES');
  assert.equal(t.table.toArray().map((x) => x.name), ['flows', 'events']);
});

plan('pg_catalog tables named without their schema (as drivers send them) are the engine\'s, not datasets', async () => {
  const p = await engine.plan('SELECT nspname FROM pg_namespace ORDER BY nspname');
  assert.is(p.reads.length, 0);
  const r = await engine.execute('SELECT count(*) > 0 AS any FROM pg_namespace');
  assert.equal(r.table.toArray().map((x) => x.any), [true]);
  // A name that is neither a dataset nor a pg_ table is still an unknown table.
  await engine.plan('SELECT * FROM pgx_nothing').then(
    () => assert.unreachable('planned'),
    (err: SqlError) => assert.is(err.kind, 'unknown_dataset'),
  );
});

const errors = suite('sql planner errors');
errors.after(() => local.close());
const kindOf = async (sql: string): Promise<string> => {
  try {
    await engine.plan(sql);
  } catch (err) {
    assert.instance(err, SqlError);
    return `${(err as SqlError).kind} ${(err as SqlError).codes.sqlstate}`;
  }
  return 'no error';
};
errors('writes and DDL are unsupported (0A000), bad syntax 42601 with a position, unknown tables 42P01, several statements 0A000', async () => {
  assert.is(await kindOf('INSERT INTO flows VALUES (1)'), 'unsupported_statement 0A000');
  assert.is(await kindOf('DROP TABLE flows'), 'unsupported_statement 0A000');
  assert.is(await kindOf('CREATE TABLE x (a int)'), 'unsupported_statement 0A000');
  assert.is(await kindOf('SELEC 1'), 'invalid_statement 42601');
  assert.is(await kindOf(''), 'invalid_statement 42601');
  assert.is(await kindOf('SELECT * FROM nope'), 'unknown_dataset 42P01');
  assert.is(await kindOf('SELECT * FROM information_schema.triggers'), 'unknown_dataset 42P01');
  assert.is(await kindOf('SELECT * FROM pg_catalog.pg_stat_activity'), 'unknown_dataset 42P01');
  assert.is(await kindOf('SELECT 1; SELECT 2'), 'unsupported_statement 0A000');
  assert.is(await kindOf("SELECT 'it''s'"), 'no error');
  assert.is(await kindOf('WITH x AS (SELECT * FROM flows) SELECT * FROM x'), 'no error');
});

plan.run();
errors.run();
