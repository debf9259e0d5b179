/**
 * Where one hd_sql statement's time goes, in process: an SCC and two Storage Nodes (`hd run`), N
 * flow records ingested, then the peers bench's queries (bench/peers/workload.ts) run through an
 * in-process SqlEngine built as hd_sql builds it (direct SCC mode), each timed whole and its fetch
 * alone. `npx tsx bench/sqlPath.bench.ts [--records N] [--runs R]`; add `--cpu-prof` to node for a profile.
 * `--fresh-literals`: every Q2, Q3 and Q5 run sends a text never sent before (its time bounds
 * shifted by whole seconds, answers comparable), as dashboards do: what a new statement text costs.
 * `--first N [--rounds R]`: R fresh engines (new DuckDB, warmed up as hd_sql does) per query, with
 * and without SqlEngine.warmUpPlans alternately (hd_sql runs it once its doors are open), their
 * first N runs timed one by one: what the first statements after a start cost. `--compare-shapes`: fresh
 * texts run alternately on the engine and on one without the shape caches (`shapeTrees: false`).
 * `--fresh-fetch`: the fetch alone of a known window and of a new one, alternately. `--steps`: each timed query's
 * DuckDB round trips, by kind (parse, the statement over empty tables, ...), per statement.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { AggregatePlan, ScanFilter, SegmentScanner } from '../engine-rs/scan';
import { Schema } from '../engine-rs/schema';
import { filterJson } from '../query/filter';
import { LocalSql } from '../local/localSql';
import { LocalSqlSession } from '../local/localSqlSession';
import { PlatformIngestClient } from '../sdk/platformIngestClient';
import { Catalog } from '../sql/catalog';
import { QueryClientFetcher } from '../sql/datasetFetcher';
import { SqlEngine } from '../sql/sqlEngine';
import { queryClientFor } from '../sql/upstream';
import { startCluster } from '../test/support/cluster';
import { startOtlpReceiver } from '../test/support/otlpReceiver';
import { startTracing } from '../lib/tracing/tracingSetup';
import { freePort } from '../test/support/hdProcess';
import { INTERVAL, makeDataset, type Dataset } from './peers/dataset';
import { FLOWS_SCHEMA } from './peers/hd';
import { median, percentile, since, tsBound, workload } from './peers/workload';

/** Times every session query by the kind of its text (a step of a statement), from now on. */
function stepTimes(): Map<string, { n: number; ms: number }> {
  const times = new Map<string, { n: number; ms: number }>();
  const kind = (sql: string): string => {
    if (sql.includes('json_serialize_sql')) return 'parse';
    if (sql.includes('json_deserialize_sql')) return 'deserialize';
    return 'statement';
  };
  const query = LocalSqlSession.prototype.query;
  LocalSqlSession.prototype.query = async function (this: LocalSqlSession, sql, opts) {
    const t = process.hrtime.bigint();
    try {
      return await query.call(this, sql, opts);
    } finally {
      const k = kind(sql);
      const e = times.get(k) ?? { n: 0, ms: 0 };
      times.set(k, { n: e.n + 1, ms: e.ms + since(t) });
    }
  };
  return times;
}

/** Segment files under `dir`. */
function findSegments(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.hdseg')).map((f) => path.join(dir, f));
}

const arg = (name: string, d: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
};

async function ingest(d: Dataset, scc: string): Promise<void> {
  await using client = new PlatformIngestClient();
  client.loadDatasetSchema(FLOWS_SCHEMA);
  client.setSccTargets([scc]);
  for (const b of d.batches) {
    const id = client.generateBatchIdTime(b.start, b.start + 60);
    if (!(await client.streamInsert(id, d.records.subarray(b.from * 150, b.to * 150)))) throw new Error(String(client.lastError));
    if (!(await client.sendEob(id))) throw new Error(String(client.lastError));
  }
}

async function main(): Promise<void> {
  const n = arg('records', 1_000_000);
  const runs = arg('runs', 21);
  const d = makeDataset(n);
  // --otlp: every process traced to an OTLP/gRPC receiver in this process (docs/observability.md, "Traces").
  const receiver = process.argv.includes('--otlp') ? await startOtlpReceiver() : undefined;
  await using _tracing = startTracing({ service: 'hd-bench', env: { OTEL_GRPC_URL: receiver?.url } });
  const cluster = await startCluster({ recordSize: 150, schemas: [FLOWS_SCHEMA], ...(receiver && { env: { OTEL_GRPC_URL: receiver.url } }) });
  const client = queryClientFor({ kind: 'scc', targets: [{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }] }, '127.0.0.1', await freePort(), () => undefined);
  const local = new LocalSql({ threads: 2 });
  try {
    await ingest(d, `${cluster.host}:${cluster.scc.productionPort}`);
    await client.ready();
    const engine = new SqlEngine(new Catalog([Schema.parse(FLOWS_SCHEMA)]), local, new QueryClientFetcher([client], { resultFormat: 'columns' }), { lookbackSec: 3600, timeoutMs: 600_000, maxRows: 0, qos: 1 });
    await engine.warmUp();
    const w = workload(d, tsBound);
    const q5 = `SELECT count(*) FROM flows WHERE ${tsBound(d.first, d.end)}`;
    const fresh = process.argv.includes('--fresh-literals');
    // Fresh texts: run i shifts the bounds by i seconds (Q3: its minute k = i mod 200 by i mod INTERVAL
    // seconds, distinct for 600 runs; Q5 narrows its window inside the data: i mod 400 seconds from its start, i / 400 from its end).
    const q2Fresh = (i: number): string => w.q2.replace(tsBound(w.q2Window[0], w.q2Window[1]), tsBound(w.q2Window[0] + i, w.q2Window[1] + i));
    const q3Fresh = (i: number): string => {
      const m = d.batches[((i % 200) * 7919) % d.batches.length]!.start;
      const s = i % INTERVAL;
      return (w.q3[i % w.q3.length] as string).replace(tsBound(m, m + INTERVAL), tsBound(m + s, m + INTERVAL + s));
    };
    const q5Fresh = (i: number): string => `SELECT count(*) FROM flows WHERE ${tsBound(d.first + (i % 400), d.end - Math.floor(i / 400))}`;
    const only = process.argv.includes('--only') ? (process.argv[process.argv.indexOf('--only') + 1] ?? '').split(',') : undefined;
    const steps = process.argv.includes('--steps') ? stepTimes() : undefined;
    const time = async (name: string, sqls: readonly string[] | ((i: number) => string), k: number): Promise<void> => {
      if (only && !only.includes(name)) return;
      const ms: number[] = [];
      let rows = 0;
      steps?.clear();
      for (let i = 0; i < k; i++) {
        const sql = typeof sqls === 'function' ? sqls(i) : (sqls[i % sqls.length] as string);
        const t = process.hrtime.bigint();
        rows = (await engine.execute(sql)).table.numRows;
        ms.push(since(t));
      }
      console.log(`${name}${typeof sqls === 'function' ? ' (fresh literals)' : ''}: p50 ${percentile(ms, 50).toFixed(2)} ms, median ${median(ms).toFixed(2)}, p99 ${percentile(ms, 99).toFixed(2)} ms (${k} runs, last ${rows} rows)`);
      if (steps) console.log(`  DuckDB round trips per statement: ${[...steps.entries()].map(([kind, t]) => `${kind} ${(t.n / k).toFixed(2)} x ${(t.ms / Math.max(1, t.n)).toFixed(3)} ms`).join('; ') || 'none'}`);
    };
    // The first statements after a start: a new LocalSql and engine per query, warmed up as hd_sql warms up.
    const firstN = arg('first', 0);
    if (firstN > 0) {
      // A new LocalSql and engine per start, warmed up as hd_sql warms up: warmUp before the doors
      // open, warmUpPlans after (sql/server.ts) — or without warmUpPlans, alternately, `--rounds` starts each.
      const rounds = arg('rounds', 1);
      const started = async (make: (i: number) => string, plans: boolean, base: number): Promise<{ warm: number; plans: number; ms: number[] }> => {
        const sql = new LocalSql({ threads: 2 });
        try {
          const e = new SqlEngine(new Catalog([Schema.parse(FLOWS_SCHEMA)]), sql, new QueryClientFetcher([client], { resultFormat: 'columns' }), { lookbackSec: 3600, timeoutMs: 600_000, maxRows: 0, qos: 1 });
          let t = process.hrtime.bigint();
          await e.warmUp();
          const warm = since(t);
          const p = plans ? await e.warmUpPlans() : 0;
          const ms: number[] = [];
          for (let i = 0; i < firstN; i++) {
            t = process.hrtime.bigint();
            await e.execute(make(base + i));
            ms.push(since(t));
          }
          return { warm, plans: p, ms };
        } finally {
          await sql.close();
        }
      };
      for (const [name, make] of [['Q5', q5Fresh], ['Q2', q2Fresh], ['Q3', q3Fresh], ['Q4a', () => w.q4group]] as const) {
        if (only && !only.includes(name)) continue;
        const by = { with: [] as { warm: number; plans: number; ms: number[] }[], without: [] as { warm: number; plans: number; ms: number[] }[] };
        for (let r = 0; r < rounds; r++) {
          const order = process.argv.includes('--no-warm-plans') ? [false] : r % 2 === 0 ? [true, false] : [false, true];
          for (const plans of order) (plans ? by.with : by.without).push(await started(make, plans, 100_000 + r * 100 + (plans ? 50 : 0)));
        }
        for (const [label, xs] of Object.entries(by)) {
          if (xs.length === 0) continue;
          const at = (i: number): string => median(xs.map((x) => x.ms[i] as number)).toFixed(1);
          console.log(`${name} first ${firstN} after start, ${label} warmUpPlans (median of ${xs.length} starts; warmUp ${median(xs.map((x) => x.warm)).toFixed(1)} ms, warmUpPlans ${median(xs.map((x) => x.plans)).toFixed(1)} ms): ${Array.from({ length: firstN }, (_, i) => at(i)).join(', ')} ms`);
        }
      }
    }
    // One Storage Node's native work per batch, on this thread: open, aggregate from the summary, close.
    if (!only || only.includes('node')) {
      const files = cluster.sns.flatMap((sn) => findSegments(sn.dir));
      const schema = Schema.parse(FLOWS_SCHEMA);
      const plan5 = await engine.plan(q5);
      const read5 = plan5.reads[0];
      if (!plan5.aggregate || !read5) throw new Error('Q5 does not split');
      const filter = ScanFilter.compile(schema, JSON.stringify(read5.subQueries.map((s) => ({ filters: s.filters.map(filterJson) }))));
      const agg = AggregatePlan.compile(schema, JSON.stringify(plan5.aggregate.spec));
      const per = { open: [] as number[], next: [] as number[], close: [] as number[] };
      for (let r = 0; r < 20; r++) {
        for (const f of files) {
          let t = process.hrtime.bigint();
          const sc = await SegmentScanner.open(f, filter);
          sc.setAggregate(agg);
          per.open.push(since(t));
          t = process.hrtime.bigint();
          let st = await sc.next(256);
          while (!st.done) st = await sc.next(256);
          per.next.push(since(t));
          t = process.hrtime.bigint();
          sc.close();
          per.close.push(since(t));
        }
      }
      console.log(`node, per batch (${files.length} segment files): open+setAggregate ${median(per.open).toFixed(3)} ms, steps ${median(per.next).toFixed(3)} ms, close ${median(per.close).toFixed(3)} ms`);
    }
    // The fetch alone of each aggregate statement: dispatch to the last partial, and to the first.
    const fetcher = new QueryClientFetcher([client], { resultFormat: 'columns' });
    for (const [name, sql] of [['Q2', w.q2], ['Q4a', w.q4group], ['Q5', q5]] as const) {
      if (only && !only.includes(name)) continue;
      const plan = await engine.plan(sql);
      const read = plan.reads[0];
      if (!plan.aggregate || !read) throw new Error(`${name} does not split`);
      const all: number[] = [];
      const first: number[] = [];
      let partials = 0;
      for (let i = 0; i < runs; i++) {
        partials = 0;
        const t = process.hrtime.bigint();
        let f: number | undefined;
        await fetcher.fetchAggregate(read, plan.aggregate.spec, () => {
          f ??= since(t);
          partials++;
        }, { deadline: Date.now() + 60_000, qos: 1 });
        all.push(since(t));
        first.push(f ?? 0);
      }
      console.log(`${name} fetchAggregate alone: median ${median(all).toFixed(2)} ms, first partial at ${median(first).toFixed(2)} ms (${partials} partials)`);
    }
    // --compare-shapes: fresh texts on this engine and on one without the shape caches (sql/parseTrees.ts), run by run alternately.
    if (process.argv.includes('--compare-shapes')) {
      const plain = new SqlEngine(new Catalog([Schema.parse(FLOWS_SCHEMA)]), local, new QueryClientFetcher([client], { resultFormat: 'columns' }), { lookbackSec: 3600, timeoutMs: 600_000, maxRows: 0, qos: 1, shapeTrees: false });
      for (const [name, make] of [['Q2', q2Fresh], ['Q3', q3Fresh], ['Q5', q5Fresh]] as const) {
        if (only && !only.includes(name)) continue;
        const on: number[] = [];
        const off: number[] = [];
        for (let i = 0; i < runs; i++) {
          for (const [e, into] of [[engine, on], [plain, off]] as const) {
            const t = process.hrtime.bigint();
            await e.execute(make(1000 + i));
            into.push(since(t));
          }
        }
        console.log(`${name} fresh literals, alternately: shape caches median ${median(on).toFixed(2)} ms (p99 ${percentile(on, 99).toFixed(2)}), without ${median(off).toFixed(2)} ms (p99 ${percentile(off, 99).toFixed(2)}) (${runs} runs each)`);
      }
    }
    // --fresh-fetch: the fetch alone, alternately of one window and of a window never asked before
    // (planning excluded): what a new window costs beyond hd_sql (the SCC's and nodes' own caches).
    if (process.argv.includes('--fresh-fetch')) {
      for (const [name, make] of [['Q2', q2Fresh], ['Q5', q5Fresh]] as const) {
        if (only && !only.includes(name)) continue;
        const same = await engine.plan(make(0));
        const known: number[] = [];
        const fresh: number[] = [];
        const plan: number[] = [];
        for (let i = 0; i < runs; i++) {
          let t = process.hrtime.bigint();
          const p = await engine.plan(make(5000 + i));
          plan.push(since(t));
          for (const [x, into] of [[same, known], [p, fresh]] as const) {
            t = process.hrtime.bigint();
            await fetcher.fetchAggregate(x.reads[0]!, x.aggregate!.spec, () => undefined, { deadline: Date.now() + 60_000, qos: 1 });
            into.push(since(t));
          }
        }
        console.log(`${name} fetchAggregate alone, alternately: the same window median ${median(known).toFixed(2)} ms, a new window ${median(fresh).toFixed(2)} ms; planning the new text ${median(plan).toFixed(3)} ms (${runs} runs)`);
      }
    }
    await time('Q2', fresh ? q2Fresh : [w.q2], runs);
    await time('Q3', fresh ? q3Fresh : w.q3, fresh ? runs : 200);
    await time('Q4a', [w.q4group], runs);
    await time('Q5', fresh ? q5Fresh : [q5], runs);
    await time('Q4b', [w.q4rows], 3);
  } finally {
    await client.stop();
    await local.close();
    await cluster.stop();
    if (receiver) console.log(`tracing on: ${receiver.spans.length} spans received`);
    await receiver?.close();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
