import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import { QueryDispatchClient } from '../../../query/dispatch/dispatchClient';
import type { HdQuery } from '../../../query/hdQuery';
import { newQueryToken } from '../../../query/token';
import { HdwpClient } from '../../../hdwp/hdwpClient';
import { ResultListener, type BatchResult, type QueryResult } from '../../../hdwp/resultListener';
import { startCluster, type Cluster } from '../../support/cluster';

const RS = 150;
const BATCHES = 16;
const PER_BATCH = 400;

/** Records of batch `n`: recognisable bytes. */
function recordsOf(n: number): Buffer {
  const b = Buffer.alloc(PER_BATCH * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 31 + n * 7) & 0xff;
  return b;
}

/** A promise opened from outside. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

const until = async (cond: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** One Prometheus metric's value from a Storage Node's /metrics (0 when absent). */
async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

let cluster: Cluster;
let client: QueryDispatchClient;
const ids = Array.from({ length: BATCHES }, (_, i) => generateBatchIdNumber(9000 + i));
let nextId = 1;

function query(listenPort: number): HdQuery {
  return { queryId: nextId++, dataset: 'e2e', batchIds: ids.map((b) => b.toHex()), subQueries: [], targets: [], verifyHash: false, queryQos: 4, returnAddress: { host: '127.0.0.1', port: listenPort }, token: newQueryToken() };
}

const e2e = suite('query end to end: SCC → two real Storage Nodes → client listener');
e2e.before(async () => {
  cluster = await startCluster({ storageNodes: 2, recordSize: RS });
  const ingest = await HdwpClient.connect({ host: cluster.host, port: cluster.scc.productionPort, role: 'ingestClient', datasetId: 'e2e', recordSize: RS });
  for (const [n, id] of ids.entries()) {
    await ingest.sendRecords(id, recordsOf(n));
    await ingest.sendEob(id, PER_BATCH);
  }
  await ingest.close();
  client = new QueryDispatchClient(`${cluster.host}:${cluster.scc.queryGrpcPort}`);
});
e2e.after(async () => {
  client?.close();
  await cluster?.stop();
});

e2e('every batch arrives once, byte-identical, read from both replicas', async () => {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  try {
    const q = query(port);
    const results: QueryResult[] = [];
    const open = listener.open({ queryId: q.queryId, token: q.token }, (r) => void results.push(r));
    const reply = await client.dispatch(q);
    assert.is(reply.batches, BATCHES);
    assert.equal([...reply.nodes].sort(), ['sn1', 'sn2']);
    await until(() => open.completed.size === BATCHES, 'every batch');
    assert.equal(open.batchErrors(), []);
    const byBatch = new Map(results.filter((r): r is BatchResult => r.kind === 'batch').map((r) => [r.batchId.toHex(), r]));
    for (const [n, id] of ids.entries()) assert.ok(Buffer.concat(byBatch.get(id.toHex())?.records ?? []).equals(recordsOf(n)), `batch ${n} byte-identical`);
    assert.is(new Set([...byBatch.values()].map((r) => r.node)).size, 2, 'two nodes streamed');
  } finally {
    await listener.close();
  }
});

e2e('cancel reaches both nodes: their queries end and their reads stop', async () => {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0, creditWindow: 16 * 1024 });
  const { port } = await listener.listen();
  const hold = gate();
  let entered = 0;
  const streamErrors: number[] = [];
  try {
    const q = query(port);
    listener.open({ queryId: q.queryId, token: q.token }, async (r) => {
      if (r.kind === 'streamError') streamErrors.push(r.code);
      if (r.kind !== 'batch') return;
      entered++;
      await hold.promise;
    });
    await client.dispatch(q);
    await until(() => entered >= 2, 'both nodes blocked on the client');
    const active = async (): Promise<number> => (await metric(cluster.sns[0].observabilityPort, 'hd_sn_queries_active')) + (await metric(cluster.sns[1].observabilityPort, 'hd_sn_queries_active'));
    assert.is(await active(), 2, 'one query scanning on each node');
    assert.equal(await client.cancelQuery(q.queryId, q.token), { cancelled: true, nodes: 2 });
    await until(async () => (await active()) === 0, 'the nodes end the query');
    const reads = async (): Promise<number> => (await metric(cluster.sns[0].observabilityPort, 'hd_sn_query_blocks_read_total')) + (await metric(cluster.sns[1].observabilityPort, 'hd_sn_query_blocks_read_total'));
    const before = await reads();
    hold.open();
    await new Promise((r) => setTimeout(r, 300));
    assert.is(await reads(), before, 'read counters stop moving after the cancel');
  } finally {
    hold.open();
    await listener.close();
  }
});

e2e('a node killed mid-query: its unfinished batches come from the other replica', async () => {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0, creditWindow: 16 * 1024 });
  const { port } = await listener.listen();
  const hold = gate();
  let entered = 0;
  const results: BatchResult[] = [];
  try {
    const q = query(port);
    const open = listener.open({ queryId: q.queryId, token: q.token }, async (r) => {
      if (r.kind !== 'batch') return;
      results.push(r);
      entered++;
      await hold.promise;
    });
    await client.dispatch(q);
    await until(() => entered >= 2, 'both nodes streaming');
    await cluster.sns[0].proc.kill9();
    hold.open();
    await until(() => open.completed.size === BATCHES, 'every batch, the killed node’s from the other replica');
    assert.match(cluster.scc.proc.output(), new RegExp(`query ${q.queryId}: leg on sn1 ended: connection to sn1 .* batch\\(es\\) go to another replica`));
    assert.equal(open.batchErrors(), []);
    const byBatch = new Map(results.map((r) => [r.batchId.toHex(), r]));
    assert.is(byBatch.size, BATCHES);
    for (const [n, id] of ids.entries()) assert.ok(Buffer.concat(byBatch.get(id.toHex())?.records ?? []).equals(recordsOf(n)), `batch ${n} byte-identical`);
  } finally {
    hold.open();
    await listener.close();
  }
});

e2e.run();
