/**
 * Row passthrough (sql/rowPassthrough.ts): which statements pass, and — differentially — that a
 * statement answered from the fetched batches gives exactly DuckDB's answer (names, types, rows in
 * order) over every field type of the peers bench's flow records, with the setting on and off.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { makeDataset } from '../../bench/peers/dataset';
import { FLOWS_SCHEMA } from '../../bench/peers/hd';
import { decodeRecords } from '../../engine-rs/decode';
import { evaluateFilter, ScanFilter } from '../../engine-rs/scan';
import { Schema } from '../../engine-rs/schema';
import { LocalSql } from '../../local/localSql';
import { filterJson } from '../../query/filter';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import type { RowStream } from '../../sql/engineTypes';
import { SqlEngine } from '../../sql/sqlEngine';

const schema = Schema.parse(FLOWS_SCHEMA);
const data = makeDataset(3000);
const T0 = data.first;

/** A fetcher over the records in memory: the window and the pushed filters applied by the real kernel, batches of 500 rows. */
function memoryFetcher(stats: { reads: number }): DatasetFetcher {
  return {
    async fetch(read, onBatch) {
      stats.reads++;
      const window = ScanFilter.compile(schema, JSON.stringify([{ filters: [{ field: 'ts', op: 'between', values: [String(read.startTime), String(read.endTime)] }] }]));
      let hits = evaluateFilter(window, data.records);
      if (read.subQueries.length > 0) hits = evaluateFilter(ScanFilter.compile(schema, JSON.stringify(read.subQueries.map((s) => ({ filters: s.filters.map(filterJson) })))), hits);
      const step = 500 * schema.recordSize;
      for (let at = 0; at < hits.length; at += step) await onBatch(await decodeRecords(schema, hits.subarray(at, at + step), read.columns ? { fields: read.columns } : undefined));
      return { batchErrors: [], missingBatches: 0 };
    },
  };
}

// One DuckDB per engine, as in hd_sql: an engine's sessions keep the dataset table between statements.
const locals = [new LocalSql({ threads: 1 }), new LocalSql({ threads: 1 })] as const;
const stats = { reads: 0 };
const engine = (local: LocalSql, rowPassthrough: boolean): SqlEngine => new SqlEngine(new Catalog([schema]), local, memoryFetcher(stats), { lookbackSec: 3600, timeoutMs: 30_000, maxRows: 0, qos: 1, rowPassthrough }, () => data.end);
const on = engine(locals[0], true);
const off = engine(locals[1], false);

/** Two of the data's three seconds: 2 048 rows, in several fetched batches. */
const W = `ts >= ${T0 + 1} AND ts < ${T0 + 3}`;
const json = (t: arrow.Table): string => JSON.stringify(t.toArray().map((r) => r.toJSON()), (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
const shape = (t: arrow.Table): string => t.schema.fields.map((f) => `${f.name}:${String(f.type)}`).join(', ');

const plans = suite('rowPassthrough: which statements pass');

const passes = async (sql: string): Promise<boolean> => {
  const planned = (await on.plan(sql)).passthrough !== undefined;
  // The planner's answer is the function's over the parse tree; and with the setting off, never.
  assert.is((await off.plan(sql)).passthrough, undefined);
  return planned;
};

plans('columns of one dataset with a WHERE pushed whole pass; anything computed does not', async () => {
  for (const sql of [`SELECT ts, src FROM flows WHERE ${W}`, `SELECT * FROM flows WHERE ${W} AND proto = 'udp'`, `SELECT f.ts AS t, f.bytes FROM flows f WHERE ${W} LIMIT 5`, `SELECT flows.* FROM flows WHERE ${W}`]) {
    assert.ok(await passes(sql), sql);
  }
  for (const sql of [
    `SELECT ts + 1 FROM flows WHERE ${W}`,
    `SELECT ts FROM flows WHERE ${W} ORDER BY ts`,
    `SELECT DISTINCT proto FROM flows WHERE ${W}`,
    `SELECT ts FROM flows WHERE ${W} LIMIT 5 OFFSET 2`,
    `SELECT ts FROM flows WHERE ${W} AND bytes * 2 > 10`,
    `SELECT count(*) FROM flows WHERE ${W}`,
    `SELECT ts, ts FROM flows WHERE ${W}`,
    `SELECT * EXCLUDE (src) FROM flows WHERE ${W}`,
    `WITH x AS (SELECT ts FROM flows WHERE ${W}) SELECT ts FROM x`,
    `SELECT a.ts FROM flows a, flows b WHERE a.ts = b.ts`,
  ]) {
    assert.not.ok(await passes(sql), sql);
  }
});

const same = suite('rowPassthrough: the same answer as DuckDB');

same('every field type, projections, aliases, limits and empty results: identical names, types and rows', async () => {
  const statements = [
    `SELECT * FROM flows WHERE ${W}`,
    `SELECT ts, src, dst, sport, bytes FROM flows WHERE ${W} AND proto = 'udp' AND dport = 22 AND packets < 1000`,
    `SELECT host, tags, ports, amount, rtt, score, ok, dt, src6 FROM flows WHERE ${W} AND proto = 'tcp'`,
    `SELECT f.country AS c, f.flow_id, TS FROM flows f WHERE ${W}`,
    `SELECT proto, asn, vlan, ttl FROM flows WHERE ${W} LIMIT 7`,
    `SELECT ts FROM flows WHERE ${W} LIMIT 0`,
    `SELECT ts, bytes FROM flows WHERE ${W} AND bytes < 0`,
    `SELECT ts FROM flows WHERE ts >= ${T0 + 10_000}`,
    `SELECT src, bytes FROM flows WHERE ${W} AND proto = 'icmp' LIMIT 100000`,
  ];
  let rows = 0;
  for (const sql of statements) {
    const a = await on.execute(sql);
    const b = await off.execute(sql);
    assert.ok(a.passedThrough === true, `passes: ${sql}`);
    assert.ok(b.passedThrough !== true, `setting off: ${sql}`);
    assert.is(shape(a.table), shape(b.table), sql);
    assert.is(a.table.numRows, b.table.numRows, sql);
    assert.is(json(a.table), json(b.table), sql);
    rows += a.table.numRows;
    assert.equal(a.notices, b.notices, sql);
  }
  assert.ok(rows > 4000, `the statements answered rows (${rows})`);
});

same('a statement that does not pass takes the DuckDB path with the setting on', async () => {
  const r = await on.execute(`SELECT ts FROM flows WHERE ${W} ORDER BY bytes DESC LIMIT 3`);
  assert.ok(r.passedThrough !== true);
  assert.is(r.table.numRows, 3);
});

same('HD_SQL_MAX_ROWS cuts a passing-through answer as it cuts DuckDB\'s, with the same notice', async () => {
  const capped = (local: LocalSql, rowPassthrough: boolean): SqlEngine => new SqlEngine(new Catalog([schema]), local, memoryFetcher(stats), { lookbackSec: 3600, timeoutMs: 30_000, maxRows: 10, qos: 1, rowPassthrough }, () => data.end);
  const sql = `SELECT ts, host FROM flows WHERE ${W}`;
  const a = await capped(locals[0], true).execute(sql);
  const b = await capped(locals[1], false).execute(sql);
  assert.ok(a.passedThrough === true);
  assert.is(a.table.numRows, 10);
  assert.is(json(a.table), json(b.table));
  assert.equal(a.notices, b.notices);
  assert.match(a.notices.join(' '), /HD_SQL_MAX_ROWS/);
});

const streamed = suite('rowPassthrough: rows streamed to a door as they arrive');

/** A door that keeps what it is given: the columns once, then the batches. */
function door(): RowStream & { schema?: arrow.Schema; batches: arrow.RecordBatch[]; begins: number } {
  const d = {
    begins: 0,
    batches: [] as arrow.RecordBatch[],
    schema: undefined as arrow.Schema | undefined,
    begin(schema: arrow.Schema): void {
      assert.is(d.batches.length, 0, 'the columns come before the rows');
      d.begins++;
      d.schema = schema;
    },
    async rows(b: arrow.RecordBatch): Promise<void> {
      d.batches.push(b);
    },
  };
  return d;
}

streamed('the streamed rows are DuckDB\'s answer: names, types, rows in order, LIMIT, notices; several batches, the columns once', async () => {
  const statements = [
    `SELECT * FROM flows WHERE ${W}`,
    `SELECT host, tags, ports, amount, rtt, score, ok, dt, src6, proto FROM flows WHERE ${W} AND proto = 'tcp'`,
    `SELECT f.country AS c, f.flow_id, TS FROM flows f WHERE ${W}`,
    `SELECT proto, asn, vlan, ttl FROM flows WHERE ${W} LIMIT 700`,
    `SELECT src, bytes FROM flows WHERE ${W} AND proto = 'icmp' LIMIT 100000`,
  ];
  for (const sql of statements) {
    const d = door();
    const a = await on.execute(sql, { rows: d });
    const b = await off.execute(sql);
    assert.ok(a.passedThrough === true && a.streamed !== undefined, `streamed: ${sql}`);
    assert.is(a.table.numRows, 0, 'the rows went to the door, not into the table');
    assert.is(d.begins, 1);
    const got = new arrow.Table(d.schema as arrow.Schema, d.batches);
    assert.is(shape(got), shape(b.table), sql);
    assert.is(a.streamed, b.table.numRows, sql);
    assert.is(got.numRows, b.table.numRows, sql);
    assert.is(json(got), json(b.table), sql);
    assert.equal(a.notices, b.notices, sql);
  }
  const d = door();
  await on.execute(`SELECT ts, host FROM flows WHERE ${W}`, { rows: d });
  assert.ok(d.batches.length > 1, `handed on batch by batch (${d.batches.length})`);
});

streamed('nothing to send, a statement that computes, and HD_SQL_STRICT answer whole; HD_SQL_MAX_ROWS cuts the stream with the notice', async () => {
  for (const sql of [`SELECT ts FROM flows WHERE ts >= ${T0 + 10_000}`, `SELECT ts FROM flows WHERE ${W} ORDER BY bytes DESC LIMIT 3`, `SELECT ts FROM flows WHERE ${W} LIMIT 0`]) {
    const d = door();
    const r = await on.execute(sql, { rows: d });
    assert.is(r.streamed, undefined, sql);
    assert.is(d.begins, 0, sql);
  }
  const strict = new SqlEngine(new Catalog([schema]), locals[0], memoryFetcher(stats), { lookbackSec: 3600, timeoutMs: 30_000, maxRows: 0, qos: 1, rowPassthrough: true, strict: true }, () => data.end);
  const d = door();
  const r = await strict.execute(`SELECT ts FROM flows WHERE ${W}`, { rows: d });
  assert.is(r.streamed, undefined);
  assert.ok(r.table.numRows > 0 && d.begins === 0, 'HD_SQL_STRICT answers whole');
  const capped = (local: LocalSql, rowPassthrough: boolean): SqlEngine => new SqlEngine(new Catalog([schema]), local, memoryFetcher(stats), { lookbackSec: 3600, timeoutMs: 30_000, maxRows: 600, qos: 1, rowPassthrough }, () => data.end);
  const c = door();
  const a = await capped(locals[0], true).execute(`SELECT ts, host FROM flows WHERE ${W}`, { rows: c });
  const b = await capped(locals[1], false).execute(`SELECT ts, host FROM flows WHERE ${W}`);
  assert.is(a.streamed, 600);
  assert.is(json(new arrow.Table(c.schema as arrow.Schema, c.batches)), json(b.table));
  assert.equal(a.notices, b.notices);
  assert.match(a.notices.join(' '), /HD_SQL_MAX_ROWS/);
});

// The last suite closes the engines' DuckDBs.
streamed.after(async () => {
  await Promise.all(locals.map((l) => l.close()));
});

plans.run();
same.run();
streamed.run();
