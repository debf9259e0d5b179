/**
 * Top records pushdown (sql/topPushdown.ts, docs/sql.md "Top records"): which statements push a
 * `top`, and — differentially — that a statement whose batches each sent only their best records
 * (the engine-rs TopPlan over every fetched batch, as a Storage Node does) answers exactly what it
 * answers with every matching record, over the peers bench's flow records with the setting on and off.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import { makeDataset } from '../../bench/peers/dataset';
import { FLOWS_SCHEMA } from '../../bench/peers/hd';
import { decodeRecords } from '../../engine-rs/decode';
import { evaluateFilter, ScanFilter, TopPlan } from '../../engine-rs/scan';
import { Schema } from '../../engine-rs/schema';
import { LocalSql } from '../../local/localSql';
import { filterJson } from '../../query/filter';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import { SqlEngine } from '../../sql/sqlEngine';
import type { TopSpec } from '../../query/hdQuery';

const schema = Schema.parse(FLOWS_SCHEMA);
const data = makeDataset(3000);
const T0 = data.first;
const BATCH_ROWS = 400;

/** A fetcher over the records in memory: window and filters by the real kernel, batches of 400 records, each cut to its top when the read has one. */
function memoryFetcher(seen: { tops: (TopSpec | undefined)[]; rows: number }): DatasetFetcher {
  return {
    async fetch(read, onBatch) {
      seen.tops.push(read.top);
      const window = ScanFilter.compile(schema, JSON.stringify([{ filters: [{ field: 'ts', op: 'between', values: [String(read.startTime), String(read.endTime)] }] }]));
      const top = read.top ? TopPlan.compile(schema, read.top) : undefined;
      const step = BATCH_ROWS * schema.recordSize;
      for (let at = 0; at < data.records.length; at += step) {
        let hits = evaluateFilter(window, data.records.subarray(at, at + step));
        if (read.subQueries.length > 0) hits = evaluateFilter(ScanFilter.compile(schema, JSON.stringify(read.subQueries.map((s) => ({ filters: s.filters.map(filterJson) })))), hits);
        if (top) hits = top.select(hits);
        if (hits.length === 0) continue;
        seen.rows += hits.length / schema.recordSize;
        await onBatch(await decodeRecords(schema, hits, read.columns ? { fields: read.columns } : undefined));
      }
      return { batchErrors: [], missingBatches: 0 };
    },
  };
}

const locals = [new LocalSql({ threads: 1 }), new LocalSql({ threads: 1 })] as const;
const seenOn = { tops: [] as (TopSpec | undefined)[], rows: 0 };
const seenOff = { tops: [] as (TopSpec | undefined)[], rows: 0 };
const engine = (local: LocalSql, topPushdown: boolean, seen: typeof seenOn): SqlEngine => new SqlEngine(new Catalog([schema]), local, memoryFetcher(seen), { lookbackSec: 3600, timeoutMs: 30_000, maxRows: 0, qos: 1, topPushdown }, () => data.end);
const on = engine(locals[0], true, seenOn);
const off = engine(locals[1], false, seenOff);

const W = `ts >= ${T0} AND ts < ${T0 + 3}`;
const json = (t: arrow.Table): string => JSON.stringify(t.toArray().map((r) => r.toJSON()), (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));

const plans = suite('topPushdown: which statements push a top');

const topOfSql = async (sql: string): Promise<TopSpec | undefined> => {
  const p = await on.plan(sql);
  assert.is((await off.plan(sql)).reads[0]?.top, undefined, 'never with the setting off');
  return p.reads[0]?.top;
};

plans('ORDER BY a plain orderable field with LIMIT, the WHERE pushed whole, pushes n + offset', async () => {
  assert.equal(await topOfSql(`SELECT ts, bytes FROM flows WHERE ${W} AND dport = 53 ORDER BY bytes DESC LIMIT 5`), { field: 'bytes', k: 5, desc: true });
  assert.equal(await topOfSql(`SELECT * FROM flows WHERE ${W} ORDER BY ts LIMIT 3 OFFSET 2`), { field: 'ts', k: 5, desc: false });
  assert.equal(await topOfSql(`SELECT t.flow_id, t.score AS s FROM flows t WHERE ${W} ORDER BY t.score ASC, flow_id DESC LIMIT 10`), { field: 'score', k: 10, desc: false });
  for (const f of ['amount', 'rtt', 'asn', 'vlan', 'ttl', 'packets', 'sport']) assert.equal(await topOfSql(`SELECT ${f} FROM flows WHERE ${W} ORDER BY ${f} DESC LIMIT 2`), { field: f, k: 2, desc: true }, f);
});

plans('anything that could pick other rows, or orders another way, pushes nothing', async () => {
  const none = [
    `SELECT ts FROM flows WHERE ${W} ORDER BY proto LIMIT 5`, // an enum orders by label position
    `SELECT ts FROM flows WHERE ${W} ORDER BY dt LIMIT 5`, // a delta time field
    `SELECT ts FROM flows WHERE ${W} ORDER BY host LIMIT 5`, // text
    `SELECT ts FROM flows WHERE ${W} ORDER BY src LIMIT 5`, // an address
    `SELECT ts FROM flows WHERE ${W} ORDER BY bytes + 1 LIMIT 5`,
    `SELECT ts FROM flows WHERE ${W} ORDER BY bytes`,
    `SELECT ts FROM flows WHERE ${W} LIMIT 5`,
    `SELECT DISTINCT ts FROM flows WHERE ${W} ORDER BY ts LIMIT 5`,
    `SELECT count(*) AS n FROM flows WHERE ${W} ORDER BY n LIMIT 5`,
    `SELECT bytes * 2 AS b FROM flows WHERE ${W} ORDER BY bytes LIMIT 5`,
    `SELECT packets AS bytes FROM flows WHERE ${W} ORDER BY bytes LIMIT 5`,
    `SELECT dport, max(bytes) AS b FROM flows WHERE ${W} GROUP BY dport ORDER BY dport LIMIT 5`,
    `SELECT ts FROM flows WHERE ${W} AND bytes % 7 = 1 ORDER BY ts LIMIT 5`,
    `SELECT ts FROM flows WHERE ${W} ORDER BY ts LIMIT 100001`,
    `SELECT ts FROM flows WHERE ${W} ORDER BY ts LIMIT 0`,
    `WITH x AS (SELECT * FROM flows WHERE ${W}) SELECT ts FROM x ORDER BY ts LIMIT 5`,
    `SELECT a.ts FROM flows a, flows b WHERE a.ts = b.ts AND a.ts >= ${T0} AND a.ts < ${T0 + 3} ORDER BY a.ts LIMIT 5`,
  ];
  for (const sql of none) assert.is(await topOfSql(sql), undefined, sql);
});

const diff = suite('topPushdown: the same answer with each batch cut to its best (differential)');

diff('every statement answers identically with the top pushed, reading fewer rows', async () => {
  const statements = [
    `SELECT ts, src, dst, host, bytes FROM flows WHERE ${W} AND dport = 53 ORDER BY bytes DESC LIMIT 5`,
    `SELECT ts, sport, dport, proto FROM flows WHERE ${W} ORDER BY ts, flow_id LIMIT 5`,
    `SELECT * FROM flows WHERE ${W} ORDER BY flow_id DESC LIMIT 7 OFFSET 3`,
    // Ties on the first key (255 values of ttl over 3 000 rows): every tied record is sent, the second key decides.
    `SELECT ttl, flow_id FROM flows WHERE ${W} ORDER BY ttl DESC, flow_id LIMIT 13`,
    `SELECT rtt, flow_id FROM flows WHERE ${W} ORDER BY rtt, flow_id LIMIT 9`,
    `SELECT score, flow_id FROM flows WHERE ${W} ORDER BY score DESC, flow_id LIMIT 9`,
    `SELECT amount, flow_id FROM flows WHERE ${W} ORDER BY amount, flow_id LIMIT 6`,
    `SELECT vlan, asn, flow_id FROM flows WHERE ${W} AND proto IN ('tcp', 'udp') ORDER BY vlan, asn, flow_id LIMIT 11`,
    `SELECT bytes FROM flows WHERE ${W} AND dport = 65535 ORDER BY bytes DESC LIMIT 3`,
  ];
  for (const sql of statements) {
    seenOn.rows = 0;
    seenOff.rows = 0;
    const [a, b] = [await on.execute(sql), await off.execute(sql)];
    assert.ok(seenOn.tops.at(-1) !== undefined, `pushed: ${sql}`);
    assert.is(json(a.table), json(b.table), sql);
    assert.ok(seenOn.rows <= seenOff.rows, `${seenOn.rows} rows read with the top, ${seenOff.rows} without: ${sql}`);
  }
  // The selective one reads a handful a batch, not every match.
  seenOn.rows = 0;
  seenOff.rows = 0;
  await on.execute(statements[2] as string);
  await off.execute(statements[2] as string);
  assert.ok(seenOn.rows <= 10 * Math.ceil(3000 / BATCH_ROWS), `${seenOn.rows} rows`);
  assert.is(seenOff.rows, 3000);
});

diff.after(async () => {
  for (const l of locals) await l.close();
});

plans.run();
diff.run();
