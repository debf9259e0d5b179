/**
 * PlatformQueryClient.executeStream's `columns` option against real SCC and Storage Node processes:
 * the batches carry exactly those columns (in the order given) with the values of a full read, and
 * an unknown column rejects before anything is placed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import { RecordDecodeError } from '../../engine-rs/decode';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { startCluster, type Cluster } from '../support/cluster';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const N = 600;

const test = suite('executeStream { columns } through a real cluster');
let cluster: Cluster;
let q: PlatformQueryClient;
const query = { start_time: T0, end_time: T0 + 59, sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }] }] };

test.before(async () => {
  cluster = await startCluster({ recordSize: 64, schemas: [schemaJson] });
  await using ingest = new PlatformIngestClient();
  ingest.loadDatasetSchema(schemaJson);
  ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  const id = ingest.generateBatchIdTime(T0, T0 + 60);
  const recs = Array.from({ length: N }, (_, i) =>
    ingest.convertRecordToBinary({ ts: String(T0 + (i % 60)), src_ip: `10.0.0.${i % 7}`, dst_ip: '10.0.0.2', src_port: String(1000 + i), dst_port: String([443, 80][i % 2]), proto: ['tcp', 'udp'][i % 2] as string, packets: String(i), bytes: String(i * 10), duration_ms: '5' }),
  );
  assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
  assert.ok(await ingest.sendEob(id), String(ingest.lastError));
  q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  q.loadDatasetSchema(schemaJson);
  q.setSccTargets([{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }]);
});
test.after(async () => {
  await q?.stop();
  await cluster?.stop();
});

/** Every row of the read as text, keyed by src_port (unique), for the named columns. */
async function rows(columns?: readonly string[]): Promise<{ names: string[][]; byPort: Map<string, string> }> {
  const names: string[][] = [];
  const byPort = new Map<string, string>();
  const want = columns ?? ['src_port', 'proto', 'bytes', 'src_ip'];
  await q.executeStream(
    query,
    (b: arrow.RecordBatch) => {
      names.push(b.schema.fields.map((f) => f.name));
      for (let i = 0; i < b.numRows; i++) byPort.set(String(b.getChild('src_port')?.get(i)), want.map((c) => String(b.getChild(c)?.get(i))).join('|'));
    },
    columns ? { columns } : {},
  );
  return { names, byPort };
}

test('only the named columns arrive, in the order given, with the values of a full read', async () => {
  const full = await rows();
  const some = await rows(['src_port', 'proto', 'bytes', 'src_ip']);
  assert.is(full.byPort.size, N / 2);
  assert.equal([...some.byPort].sort(), [...full.byPort].sort());
  assert.ok(some.names.length > 0);
  for (const n of some.names) assert.equal(n, ['src_port', 'proto', 'bytes', 'src_ip']);
  assert.ok(full.names.every((n) => n.length === 9), 'without columns: every field');
});

test('an unknown column rejects before the query is placed; the client stays usable', async () => {
  const executed = (): string | undefined => /queries_executed\S*\s+(\d+)/.exec(q.getMetrics())?.[1];
  const before = executed();
  try {
    await q.executeStream(query, () => undefined, { columns: ['src_port', 'nope'] });
    assert.unreachable('unknown column');
  } catch (err) {
    assert.instance(err, RecordDecodeError);
    assert.match((err as Error).message, /'nope'/);
  }
  assert.ok(before !== undefined, q.getMetrics());
  assert.is(executed(), before, 'nothing was placed');
  assert.is((await rows(['src_port'])).byPort.size, N / 2);
});

test.run();
