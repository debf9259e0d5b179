/**
 * Aggregate pushdown end to end (issue #17 item 1; docs/sql.md "Aggregate pushdown"): real SCC and
 * Storage Node processes holding ingested flows, and two `hd run pipelines/sql.yaml` processes in
 * front of them in direct SCC mode — one with HD_SQL_AGGREGATE_PUSHDOWN=true, one with false, both
 * with HD_SQL_EXPLAIN_PUSHDOWN=true. Every statement of a set (count(*), filtered count/sum, GROUP BY
 * an enum with an IN filter, min/max of the time field, a time bucket, HAVING/ORDER BY/LIMIT)
 * answers the same rows both ways, and the explain notice says the first computed it on the nodes.
 * The fetcher's refusal paths run against the same nodes (an unknown field: batch errors 11; more
 * groups than max_groups: the node's stream ends with error 11), and a batch damaged on every replica
 * is absent from the aggregate exactly as from the rows, with the same notice. The times of
 * `SELECT count(*) FROM flows` and the GROUP BY, pushdown on and off, are printed (no assertion).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import type { AggregatePartial } from '../../sql/aggregateMerge';
import type { AggregateSpec } from '../../sql/aggregatePushdown';
import { QueryClientFetcher } from '../../sql/datasetFetcher';
import { SqlError } from '../../sql/sqlError';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { ingestMinutes } from '../support/ingestMinutes';
import { flowsFixture, flowsSchemaJson } from './flowsFixture';
import { sqlProcessEnv } from './sqlProcessEnv';

const FIXTURE = flowsFixture(8, 4000);
const { t0: T0, batches: BATCHES, perBatch: PER_BATCH, all, window: WINDOW } = FIXTURE;
const schema = Schema.parse(flowsSchemaJson);

/** The statements compared; each must split (the notice says the aggregate was pushed). */
const STATEMENTS: readonly string[] = [
  'SELECT count(*) FROM flows',
  `SELECT count(*) AS n, sum(bytes) AS total FROM flows WHERE ${WINDOW} AND dst_port = 443`,
  `SELECT proto, count(*) AS n, sum(bytes) AS total, max(bytes) AS hi FROM flows WHERE ${WINDOW} AND proto IN ('tcp', 'udp') GROUP BY proto ORDER BY proto`,
  `SELECT min(ts) AS lo, max(ts) AS hi FROM flows WHERE ts > ${T0 - 1}`,
  `SELECT ts - ts % 120 AS bucket, count(*) AS n, min(bytes) AS lo, max(bytes) AS hi FROM flows WHERE ${WINDOW} GROUP BY bucket ORDER BY bucket`,
  `SELECT dst_port, count(*) AS n, sum(bytes) AS total, avg(duration_ms) AS mean FROM flows WHERE ${WINDOW} GROUP BY dst_port HAVING count(*) > 100 ORDER BY total DESC, dst_port LIMIT 3`,
];
const GROUP_BY = STATEMENTS[2] as string;

interface Sql {
  proc: HdProcess;
  pgPort: number;
}

let cluster: Cluster;
let dir: string;
let ids: string[] = [];
let on: Sql;
let off: Sql;

async function startSql(pushdown: boolean): Promise<Sql> {
  const [pgPort, returnPort] = [await freePort(), await freePort()];
  const proc = startHd(
    ['run', 'pipelines/sql.yaml', '--quiet'],
    sqlProcessEnv(
      { pgPort, returnPort },
      {
        HD_SQL_SCC_TARGETS: `${cluster.host}:${cluster.scc.productionPort}:${cluster.scc.queryGrpcPort}`,
        HD_SQL_SCHEMA_DIR: path.join(dir, 'schemas'),
        HD_SQL_DEFAULT_LOOKBACK_SEC: '7200',
        HD_SQL_AGGREGATE_PUSHDOWN: String(pushdown),
        HD_SQL_TOP_PUSHDOWN: String(pushdown),
        HD_SQL_EXPLAIN_PUSHDOWN: 'true',
      },
    ),
  );
  await waitForPort('127.0.0.1', pgPort, proc, 60_000);
  return { proc, pgPort };
}

/** Runs `text` on `sql`: its rows (as node-postgres gives them), its notices and how long it took. */
async function ask(sql: Sql, text: string): Promise<{ rows: unknown[]; notices: string[]; ms: number }> {
  const c = new pg.Client({ host: '127.0.0.1', port: sql.pgPort, user: 'hd', database: 'hd' });
  const notices: string[] = [];
  c.on('notice', (n) => notices.push(n.message ?? ''));
  await c.connect();
  try {
    const started = performance.now();
    const r = await c.query({ text, rowMode: 'array' });
    const ms = performance.now() - started;
    return { rows: [r.fields.map((f) => `${f.name}:${f.dataTypeID}`), ...r.rows], notices, ms };
  } finally {
    await c.end();
  }
}

/** Notices other than the explain ones (default lookback, absent batches): these must agree. */
/** The notices that say something of the answer; the lookback's "up to <now>" may tick between the two runs. */
const real = (notices: readonly string[]): string[] => notices.filter((n) => !/: pushed down: |: aggregate /.test(n)).map((n) => n.replace(/ up to \d+ \(HD_SQL_DEFAULT_LOOKBACK_SEC\)/, ' up to <now> (HD_SQL_DEFAULT_LOOKBACK_SEC)'));

const e2e = suite('aggregate pushdown end to end: hd_sql processes over a real SCC and Storage Nodes (direct SCC mode)');
e2e.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-agg-e2e-'));
  mkdirSync(path.join(dir, 'schemas'));
  writeFileSync(path.join(dir, 'schemas', 'flows.json'), flowsSchemaJson);
  cluster = await startCluster({ recordSize: 64, schemas: [flowsSchemaJson] });
  ids = await ingestMinutes(cluster, flowsSchemaJson, T0, BATCHES, (b) =>
    all.slice(b * PER_BATCH, (b + 1) * PER_BATCH).map((x) => ({ ts: String(x.ts), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', src_port: '1000', dst_port: String(x.dst_port), proto: x.proto, packets: '1', bytes: String(x.bytes), duration_ms: String(5 + (x.bytes % 7)) })),
  );
  [on, off] = await Promise.all([startSql(true), startSql(false)]);
});
e2e.after(async () => {
  await Promise.all([on?.proc.stop(), off?.proc.stop()]);
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

e2e('each statement answers the same with HD_SQL_AGGREGATE_PUSHDOWN=true and false, and the first was computed on the Storage Nodes', async () => {
  for (const text of STATEMENTS) {
    const [a, b] = [await ask(on, text), await ask(off, text)];
    assert.equal(a.rows, b.rows, text);
    assert.equal(real(a.notices), real(b.notices), `notices of ${text}`);
    assert.ok(a.notices.some((n) => /flows: aggregate pushed to the Storage Nodes: .*group\(s\) merged from \d+ partial\(s\)/.test(n)), `${text}: ${a.notices.join('; ')}`);
    assert.not.ok(b.notices.some((n) => /aggregate pushed to the Storage Nodes/.test(n)), `${text}: ${b.notices.join('; ')}`);
  }
  // A few answers against what was ingested, so "the same" is also right.
  const count = await ask(on, STATEMENTS[0] as string);
  assert.equal(count.rows.slice(1), [[String(all.length)]]);
  const grouped = await ask(on, GROUP_BY);
  const expect = ['tcp', 'udp'].map((p) => {
    const xs = all.filter((x) => x.proto === p);
    return [p, String(xs.length), String(xs.reduce((s, x) => s + x.bytes, 0)), String(Math.max(...xs.map((x) => x.bytes)))];
  });
  assert.equal(grouped.rows.slice(1), expect);
  const range = await ask(on, STATEMENTS[3] as string);
  assert.is((range.rows[1] as unknown[]).length, 2);
});

e2e('times of SELECT count(*) FROM flows and the GROUP BY, pushdown on and off (printed, not asserted)', async () => {
  const best = async (sql: Sql, text: string): Promise<number> => {
    let ms = Infinity;
    for (let i = 0; i < 3; i++) ms = Math.min(ms, (await ask(sql, text)).ms);
    return ms;
  };
  for (const [name, text] of [['SELECT count(*) FROM flows', STATEMENTS[0] as string], ['GROUP BY proto with an IN filter', GROUP_BY]] as const) {
    const [pushed, records] = [await best(on, text), await best(off, text)];
    console.log(`aggregateEndToEnd: ${name} over ${all.length} flows in ${BATCHES} batches: pushdown on ${pushed.toFixed(1)} ms, off ${records.toFixed(1)} ms (best of 3, through pgwire)`);
  }
});

e2e('top records (ORDER BY <field> LIMIT n): the same rows with HD_SQL_TOP_PUSHDOWN=true and false, the first sending a few records a batch', async () => {
  const tops = [
    `SELECT ts, dst_port, bytes FROM flows WHERE ${WINDOW} AND proto = 'udp' ORDER BY bytes DESC, ts, dst_port LIMIT 5`,
    `SELECT ts, bytes FROM flows WHERE ${WINDOW} ORDER BY ts DESC, bytes LIMIT 3 OFFSET 4`,
    // Ties on the first key (7 values of duration_ms): every tied record comes, the second key decides.
    `SELECT duration_ms, ts, bytes FROM flows WHERE ${WINDOW} AND dst_port = 443 ORDER BY duration_ms, bytes DESC, ts LIMIT 4`,
  ];
  for (const text of tops) {
    const [a, b] = [await ask(on, text), await ask(off, text)];
    assert.equal(a.rows, b.rows, text);
    assert.ok(a.notices.some((n) => /flows: pushed down: .*, top \d+ by \w+ (DESC|ASC) a batch/.test(n)), `${text}: ${a.notices.join('; ')}`);
    assert.not.ok(b.notices.some((n) => /, top \d+ by/.test(n)), `${text}: ${b.notices.join('; ')}`);
  }
  // Against what was ingested: the five largest udp flows.
  const udp = all.filter((x) => x.proto === 'udp').sort((x, y) => y.bytes - x.bytes || x.ts - y.ts || x.dst_port - y.dst_port).slice(0, 5);
  assert.equal((await ask(on, tops[0] as string)).rows.slice(1), udp.map((x) => [String(x.ts), x.dst_port, String(x.bytes)]));
});

e2e("the fetcher against the nodes: merged partials listing every batch once, and a node's refusal (unknown field, too many groups) rejects so the engine falls back", async () => {
  const client = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  client.setSccTargets([{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }]);
  try {
    const fetcher = new QueryClientFetcher(client);
    const read = { schema, startTime: T0, endTime: T0 + BATCHES * 60 - 1, subQueries: [] };
    const opts = () => ({ deadline: Date.now() + 30_000, qos: 1 });
    const partials: AggregatePartial[] = [];
    const spec = (over: Partial<AggregateSpec> = {}): AggregateSpec => ({ version: 1, group_by: [], measures: [{ fn: 'count' }], max_groups: 65_536, ...over });
    const out = await fetcher.fetchAggregate(read, spec(), (p) => void partials.push(p), opts());
    assert.equal(out.batchErrors, []);
    // Merged partials (docs/query.md "Merged partials"): a node answers its batches in v2 frames that
    // together list every batch exactly once, fewer frames than batches.
    const listed = (ps: readonly AggregatePartial[]): string[] => ps.flatMap((p) => (p as { batches?: [string, number][] }).batches?.map((b) => b[0]) ?? []);
    assert.ok(partials.every((p) => p.v === 2));
    assert.is(new Set(listed(partials)).size, BATCHES, 'every batch listed once');
    assert.is(listed(partials).length, BATCHES);
    assert.ok(partials.length < BATCHES, `${partials.length} frames for ${BATCHES} batches`);
    assert.is(partials.reduce((s, p) => s + Number(p.groups[0]?.m[0] ?? 0), 0), all.length);

    const refused = async (s: AggregateSpec, why: RegExp): Promise<void> => {
      const started = Date.now();
      try {
        await fetcher.fetchAggregate(read, s, () => undefined, opts());
        assert.unreachable('should have been refused');
      } catch (err) {
        assert.instance(err, SqlError);
        assert.is((err as SqlError).kind, 'query_failed', (err as Error).message);
        assert.match((err as Error).message, why);
      }
      assert.ok(Date.now() - started < 20_000, 'refused promptly, not at the deadline');
    };
    await refused(spec({ measures: [{ fn: 'sum', field: 'no_such_field' }] }), /refused the aggregate of flows: .*aggregate\.measures\[0\]\.field/);
    await refused(spec({ group_by: [{ field: 'ts' }], max_groups: 1 }), /refused the aggregate of flows: .*max_groups/);
    // Straight to the SCCs a window of 29 million intervals goes as time_window; this SCC knows no
    // observability port of its nodes (no SN_OBSERVABILITY_PORTS, no DMS), so it cannot name the
    // window's batches and refuses it (FAILED_PRECONDITION), saying what to set — never an empty answer.
    try {
      await fetcher.fetchAggregate({ ...read, startTime: 1 }, spec(), () => undefined, opts());
      assert.unreachable('a window the SCC cannot resolve should be refused');
    } catch (err) {
      assert.instance(err, SqlError);
      assert.is((err as SqlError).kind, 'upstream_unavailable', (err as Error).message);
      assert.match((err as Error).message, /the SCC could not name the batches of flows in \[0, \d+\]: time_window \[0, \d+\] of 'flows': scc-test knows no observability address of its healthy replicas \(sn1, sn2\).*set SN_OBSERVABILITY_PORTS on the SCC \(e\.g\. sn1:<observability port>,sn2:<observability port>\)/, (err as Error).message);
    }
    // The client is usable again after a refusal.
    partials.length = 0;
    await fetcher.fetchAggregate(read, spec({ group_by: [{ field: 'proto' }] }), (p) => void partials.push(p), opts());
    assert.is(listed(partials).length, BATCHES);
  } finally {
    await client.stop();
  }
});

/** The segment files of batch `id` under a Storage Node's directory. */
function segmentsOf(root: string, id: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.includes(id)) out.push(p);
    }
  };
  walk(root);
  return out;
}

e2e('a batch damaged on every replica is absent from the pushed aggregate exactly as from the rows, with the same notice', async () => {
  const victim = ids[2] as string;
  let damaged = 0;
  for (const sn of cluster.sns) {
    for (const f of segmentsOf(sn.dir, victim)) {
      const bytes = readFileSync(f);
      bytes[0] = (bytes[0] as number) ^ 0x5a; // the segment's header: every read of the batch sees it
      writeFileSync(f, bytes);
      damaged++;
    }
  }
  assert.ok(damaged >= cluster.sns.length, `found ${damaged} segment file(s) of ${victim}`);
  for (const text of [STATEMENTS[0] as string, STATEMENTS[1] as string, GROUP_BY]) {
    const [a, b] = [await ask(on, text), await ask(off, text)];
    assert.equal(a.rows, b.rows, text);
    assert.equal(real(a.notices), real(b.notices), `notices of ${text}`);
    assert.ok(real(a.notices).some((n) => /flows: 1 batch\(es\) failed delivery and are absent from the result/.test(n)), `${text}: ${a.notices.join('; ')}`);
    assert.ok(a.notices.some((n) => /aggregate pushed to the Storage Nodes/.test(n)), `${text}: ${a.notices.join('; ')}`);
  }
  const count = await ask(on, STATEMENTS[0] as string);
  assert.equal(count.rows.slice(1), [[String(all.length - PER_BATCH)]]);
});

e2e.run();
