/**
 * Where one hd_sql statement's time goes, in process: an SCC and two Storage Nodes (`hd run`), N
 * flow records ingested, then the peers bench's queries (bench/peers/workload.ts) run through an
 * in-process SqlEngine built as hd_sql builds it (direct SCC mode), each timed whole and its fetch
 * alone. `npx tsx bench/sqlPath.bench.ts [--records N] [--runs R]`; add `--cpu-prof` to node for a profile.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { AggregatePlan, ScanFilter, SegmentScanner } from '../engine-rs/scan';
import { Schema } from '../engine-rs/schema';
import { filterJson } from '../query/filter';
import { LocalSql } from '../local/localSql';
import { PlatformIngestClient } from '../sdk/platformIngestClient';
import { Catalog } from '../sql/catalog';
import { QueryClientFetcher } from '../sql/datasetFetcher';
import { SqlEngine } from '../sql/sqlEngine';
import { queryClientFor } from '../sql/upstream';
import { startCluster } from '../test/support/cluster';
import { startOtlpReceiver } from '../test/support/otlpReceiver';
import { startTracing } from '../lib/tracing/tracingSetup';
import { freePort } from '../test/support/hdProcess';
import { makeDataset, type Dataset } from './peers/dataset';
import { FLOWS_SCHEMA } from './peers/hd';
import { median, percentile, since, tsBound, workload } from './peers/workload';

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
    const only = process.argv.includes('--only') ? (process.argv[process.argv.indexOf('--only') + 1] ?? '').split(',') : undefined;
    const time = async (name: string, sqls: readonly string[], k: number): Promise<void> => {
      if (only && !only.includes(name)) return;
      const ms: number[] = [];
      let rows = 0;
      for (let i = 0; i < k; i++) {
        const t = process.hrtime.bigint();
        rows = (await engine.execute(sqls[i % sqls.length] as string)).table.numRows;
        ms.push(since(t));
      }
      console.log(`${name}: p50 ${percentile(ms, 50).toFixed(2)} ms, median ${median(ms).toFixed(2)}, p99 ${percentile(ms, 99).toFixed(2)} ms (${k} runs, last ${rows} rows)`);
    };
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
    await time('Q2', [w.q2], runs);
    await time('Q3', w.q3, 200);
    await time('Q4a', [w.q4group], runs);
    await time('Q5', [q5], runs);
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
