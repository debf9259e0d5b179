/**
 * hd_sql's reads run side by side: QueryClientFetcher over query clients that share one result
 * listener (PlatformQueryClient's `shareListenerOf`), against real SCC and Storage Node processes.
 * A read whose consumer is stalled must not hold up another statement's read; with one client the
 * second read waits its turn; each read's accounting is its own.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type * as arrow from 'apache-arrow';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { ingestMinutes } from '../support/ingestMinutes';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { QueryClientFetcher } from '../../sql/datasetFetcher';
import type { DatasetRead } from '../../sql/planner';
import { startCluster, type Cluster } from '../support/cluster';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const schema = Schema.parse(schemaJson);
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const PER_BATCH = 200;

let cluster: Cluster;
const clients: PlatformQueryClient[] = [];

/** `n` query clients on one listener (the first owns it). */
function pool(n: number): PlatformQueryClient[] {
  const owner = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  const out = [owner];
  for (let i = 1; i < n; i++) out.push(new PlatformQueryClient('', '127.0.0.1', '', { log: () => undefined, shareListenerOf: owner }));
  for (const c of out) c.setSccTargets([{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }]);
  clients.push(...out);
  return out;
}

/** A read of batch `b` (a window naming its interval only), optionally only dst_port 443. */
const read = (b: number, port443 = false): DatasetRead => ({
  schema,
  startTime: T0 + b * 60,
  endTime: T0 + b * 60,
  subQueries: port443 ? [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }] }] : [],
});
const opts = () => ({ deadline: Date.now() + 60_000, qos: 1 });

/** A consumer that holds every batch until `open()` is called; counts rows. */
function gate(): { onBatch: (b: arrow.RecordBatch) => Promise<void>; open(): void; rows: number; entered: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let entered!: () => void;
  const g = {
    rows: 0,
    entered: new Promise<void>((r) => (entered = r)),
    open: () => open(),
    onBatch: async (b: arrow.RecordBatch) => {
      entered();
      await opened;
      g.rows += b.numRows;
    },
  };
  return g;
}

const fp = suite('QueryClientFetcher: reads side by side on one results port');
fp.before(async () => {
  cluster = await startCluster({ recordSize: schema.recordSize, schemas: [schemaJson] });
  await ingestMinutes(cluster, schemaJson, T0, 2, (b) => Array.from({ length: PER_BATCH }, (_, i) => ({ ts: String(T0 + b * 60 + (i % 60)), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', src_port: '1000', dst_port: i % 4 === 0 ? '443' : '80', proto: 'tcp', packets: '1', bytes: String(i), duration_ms: '5' })));
});
fp.after(async () => {
  for (const c of clients.reverse()) await c.stop();
  await cluster?.stop();
});

fp('two clients: a read stalled in its consumer does not hold up the next read; both complete with their own rows', async () => {
  const f = new QueryClientFetcher(pool(2));
  const slow = gate();
  const first = f.fetch(read(0), slow.onBatch, opts());
  await slow.entered; // the first read is running and its consumer is stalled
  let second = 0;
  const out = await f.fetch(read(1, true), async (b) => void (second += b.numRows), opts());
  assert.is(second, PER_BATCH / 4, 'the second read finished while the first was stalled');
  assert.equal(out, { batchErrors: [], missingBatches: 0 });
  slow.open();
  assert.equal(await first, { batchErrors: [], missingBatches: 0 });
  assert.is(slow.rows, PER_BATCH);
});

fp('one client: the second read waits for the first and then runs', async () => {
  const f = new QueryClientFetcher(pool(1));
  const slow = gate();
  const first = f.fetch(read(0), slow.onBatch, opts());
  await slow.entered;
  let secondDone = false;
  const second = f.fetch(read(1), async () => undefined, opts()).then((o) => {
    secondDone = true;
    return o;
  });
  // However long the first is stalled, the second cannot start: there is no free client.
  await new Promise((r) => setTimeout(r, 300));
  assert.not.ok(secondDone);
  slow.open();
  await first;
  assert.equal(await second, { batchErrors: [], missingBatches: 0 });
});

fp('a shared listener is closed by its owner only; the other clients stop without closing it', async () => {
  const [owner, other] = pool(2) as [PlatformQueryClient, PlatformQueryClient];
  owner.loadDatasetSchema(schemaJson);
  other.loadDatasetSchema(schemaJson);
  const { port } = await owner.ready();
  assert.is((await other.ready()).port, port, 'one port');
  await other.stop();
  const t = await owner.executeDataset({ start_time: T0, end_time: T0 + 119 });
  assert.is(t.numRows, 2 * PER_BATCH, 'the owner still receives');
});

fp.run();
