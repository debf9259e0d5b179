/**
 * A filtered aggregate over many small batches (the `hd up` demo's shape: ~1 440 one-minute batches
 * of a few hundred records): an SCC and two Storage Nodes (`hd run`), `--batches` batches of
 * `--per-batch` 150-byte flow records ingested (one minute each), then a count(*) with predicates
 * no batch summary answers (`proto = 'tcp' AND dport = 443`, so every batch's records are scanned),
 * its fetch alone timed `--runs` times (QueryClientFetcher.fetchAggregate, merged partials, as
 * hd_sql sends it). What a Storage Node pays per batch shows here: the open / step / close of each
 * batch, or one native call for a group of them (operators/summaryGroup.ts).
 *
 * Run: `npx tsx bench/smallBatches.bench.ts [--batches 1000] [--per-batch 300] [--runs 200] [--debug]`
 * (`--debug` prints the counts of the statement and of its wider forms first). The median and p90
 * leave out the first quarter of the runs (JIT warm-up).
 */
import { PlatformIngestClient } from '../sdk/platformIngestClient';
import { Schema } from '../engine-rs/schema';
import { Catalog } from '../sql/catalog';
import { QueryClientFetcher } from '../sql/datasetFetcher';
import { SqlEngine } from '../sql/sqlEngine';
import { queryClientFor } from '../sql/upstream';
import { LocalSql } from '../local/localSql';
import { startCluster } from '../test/support/cluster';
import { freePort } from '../test/support/hdProcess';
import { generate } from './flows';
import { FLOWS_SCHEMA } from './peers/hd';
import { median, percentile, since } from './peers/workload';

const R = 150;
/** Minute-aligned (batches cover whole time_index_interval minutes). */
const T0 = 1_699_999_980;

const arg = (name: string, d: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
};

async function main(): Promise<void> {
  const batches = arg('batches', 1000);
  const per = arg('per-batch', 300);
  const runs = arg('runs', 200);
  const records = generate(batches * per);
  // Batch k holds minute k: its records' ts within [T0 + 60k, T0 + 60k + 60).
  for (let i = 0; i < batches * per; i++) records.writeBigInt64LE(BigInt(T0 + Math.floor(i / per) * 60 + Math.floor(((i % per) * 60) / per)), i * R);
  const cluster = await startCluster({ recordSize: R, schemas: [FLOWS_SCHEMA] });
  const client = queryClientFor({ kind: 'scc', targets: [{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }] }, '127.0.0.1', await freePort(), () => undefined);
  const local = new LocalSql({ threads: 2 });
  try {
    {
      await using ingest = new PlatformIngestClient();
      ingest.loadDatasetSchema(FLOWS_SCHEMA);
      ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
      for (let k = 0; k < batches; k++) {
        const start = T0 + k * 60;
        const id = ingest.generateBatchIdTime(start, start + 60);
        if (!(await ingest.streamInsert(id, records.subarray(k * per * R, (k + 1) * per * R)))) throw new Error(String(ingest.lastError));
        if (!(await ingest.sendEob(id))) throw new Error(String(ingest.lastError));
      }
    }
    await client.ready();
    const engine = new SqlEngine(new Catalog([Schema.parse(FLOWS_SCHEMA)]), local, new QueryClientFetcher([client], { resultFormat: 'columns' }), { lookbackSec: 3600, timeoutMs: 600_000, maxRows: 0, qos: 1 });
    const sql = `SELECT count(*) AS n FROM flows WHERE ts >= ${T0} AND ts < ${T0 + batches * 60} AND proto = 'tcp' AND dport = 443`;
    // Every record queryable before the timing starts (a count short of it fails the bench).
    const all = `SELECT count(*) FROM flows WHERE ts >= ${T0} AND ts < ${T0 + batches * 60}`;
    for (let t = Date.now(); Number((await engine.execute(all)).table.getChildAt(0)?.get(0)) < batches * per; ) {
      if (Date.now() - t > 60_000) throw new Error('the ingested records are not all queryable after 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    if (process.argv.includes('--debug')) for (const q of [all, `${all} AND proto = 'tcp'`, sql]) console.log(q, String((await engine.execute(q)).table.getChildAt(0)?.get(0)));
    const plan = await engine.plan(sql);
    const read = plan.reads[0];
    if (!plan.aggregate || !read) throw new Error('the statement does not split');
    const fetcher = new QueryClientFetcher([client], { resultFormat: 'columns' });
    const times: number[] = [];
    let answer = '';
    for (let i = 0; i < runs; i++) {
      const parts: string[] = [];
      const t = process.hrtime.bigint();
      await fetcher.fetchAggregate(read, plan.aggregate.spec, (p) => void parts.push(JSON.stringify(p)), { deadline: Date.now() + 60_000, qos: 1 });
      times.push(since(t));
      if (i === 0) {
        const r = await engine.execute(sql);
        answer = `${String(r.table.getChildAt(0)?.get(0))} (pushed: ${String(r.aggregatePushed)}; ${parts.length} partials)`;
      }
    }
    const late = times.slice(Math.floor(runs / 4));
    console.log(`${batches} batches x ${per} records: fetchAggregate median ${median(late).toFixed(2)} ms, p90 ${percentile(late, 90).toFixed(2)} ms (runs ${Math.floor(runs / 4)}..${runs - 1}); answer ${answer}`);
  } finally {
    await client.stop();
    await local.close();
    await cluster.stop();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
