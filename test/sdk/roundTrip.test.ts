/**
 * The SDK end to end: PlatformIngestClient → real SCC → two real Storage Nodes, then
 * PlatformQueryClient → gRPC dispatch → pushdown scan on the nodes → result streams → Arrow.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchID } from '../../engine-rs/batchId';
import { segmentFileName } from '../../engine-rs/segment';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { startCluster, type Cluster } from '../support/cluster';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const RS = 64;
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const BATCHES = 4;
const PER_BATCH = 2500;

interface Flow {
  ts: number;
  dst_port: number;
  proto: string;
  bytes: number;
}

function flow(b: number, i: number): Flow {
  return { ts: T0 + b * 60 + (i % 60), dst_port: [443, 80, 53, 22][i % 4] as number, proto: i % 5 === 0 ? 'udp' : 'tcp', bytes: i * 10 + b };
}

const rt = suite('SDK round trip through real SCC and Storage Node processes');
let cluster: Cluster;
const ids: BatchID[] = [];
const client = (): PlatformQueryClient => {
  const q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  q.loadDatasetSchema(schemaJson);
  q.setSccTargets([{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }]);
  return q;
};

rt.before(async () => {
  cluster = await startCluster({ recordSize: RS, schemas: [schemaJson] });
  await using ingest = new PlatformIngestClient();
  ingest.loadDatasetSchema(schemaJson);
  ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  for (let b = 0; b < BATCHES; b++) {
    const id = ingest.generateBatchIdTime(T0 + b * 60, T0 + b * 60 + 60);
    ids.push(id);
    const recs = Array.from({ length: PER_BATCH }, (_, i) => {
      const f = flow(b, i);
      return ingest.convertRecordToBinary({ ts: String(f.ts), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', src_port: '1000', dst_port: String(f.dst_port), proto: f.proto, packets: '1', bytes: String(f.bytes), duration_ms: '5' });
    });
    assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
    assert.ok(await ingest.sendEob(id), String(ingest.lastError));
  }
});
rt.after(async () => {
  await cluster?.stop();
});

rt('a filtered query returns exactly the matching records, decoded, with every batch found', async () => {
  await using q = client();
  const table = await q.executeDataset({ start_time: T0, end_time: T0 + BATCHES * 60 - 1, sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }, { field: 'proto', op: 'eq', value: '6' }] }] });
  const want: Flow[] = [];
  for (let b = 0; b < BATCHES; b++) for (let i = 0; i < PER_BATCH; i++) if (flow(b, i).dst_port === 443 && flow(b, i).proto === 'tcp') want.push(flow(b, i));
  assert.is(table.numRows, want.length);
  const got = table.toArray().map((r) => `${Number(r.ts)}:${r.dst_port}:${r.proto}:${r.bytes}`).sort();
  assert.equal(got, want.map((f) => `${f.ts}:${f.dst_port}:${f.proto}:${f.bytes}`).sort());
  assert.not.ok(q.hadErrors(), JSON.stringify(q.getBatchErrors()));
  const found = q.getFoundBatchIds().map((b) => b.toHex()).sort();
  for (const id of ids) assert.ok(found.includes(id.toHex()), 'every ingested batch is found');
  assert.match(q.getMetrics(), /^queries_executed 1$/m);
});

rt('OR of sub-queries; an empty result is an empty table typed by the schema', async () => {
  await using q = client();
  const t = await q.executeDataset({ batch_ids: ids.map((b) => b.toHex()), sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '53' }] }, { filters: [{ field: 'bytes', op: 'lt', value: '30' }] }] });
  let want = 0;
  for (let b = 0; b < BATCHES; b++) for (let i = 0; i < PER_BATCH; i++) if (flow(b, i).dst_port === 53 || flow(b, i).bytes < 30) want++;
  assert.is(t.numRows, want);
  const none = await q.executeDataset({ batch_ids: ids.map((b) => b.toHex()), sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '9' }] }] });
  assert.is(none.numRows, 0);
  assert.ok(none.schema.fields.some((f) => f.name === 'dst_port'), 'typed by the schema');
});

rt('executeStream hands over each batch as it arrives, one callback at a time across the nodes\' streams', async () => {
  await using q = client();
  const seen: string[] = [];
  let inside = 0;
  let most = 0;
  await q.executeStream({ batch_ids: ids.map((b) => b.toHex()) }, async (batch, batchId) => {
    most = Math.max(most, ++inside);
    assert.is(batch.numRows, PER_BATCH);
    // A slow consumer (hd_sql appends to DuckDB here): the other node's batches must wait.
    await new Promise((r) => setTimeout(r, 20));
    seen.push(batchId);
    inside--;
  });
  assert.equal(seen.sort(), ids.map((b) => b.toHex()).sort());
  assert.is(most, 1, 'onBatch never runs twice at once');
});

rt('a batch nobody stores (an interval nobody ingested) is missing but not an error; the rest arrives', async () => {
  await using q = client();
  const ghost = q.generateBatchIdsTime(T0 + 86_400, T0 + 86_400)[0] as BatchID;
  const t = await q.executeDataset({ batch_ids: [ids[0]?.toHex(), ghost.toHex()] });
  assert.is(t.numRows, PER_BATCH);
  assert.not.ok(q.hadErrors(), JSON.stringify(q.getBatchErrors()));
  assert.equal(q.getMissingBatchIds().map((b) => b.toHex()), [ghost.toHex()]);
  assert.equal(q.getFoundBatchIds().map((b) => b.toHex()), [ids[0]?.toHex()]);
});

rt('a damaged segment on every replica: hadErrors and one BatchError for that batch only', async () => {
  const { readdirSync, readFileSync: read, writeFileSync } = await import('node:fs');
  const victim = ids[BATCHES - 1] as BatchID;
  for (const sn of cluster.sns) {
    const file = readdirSync(sn.dir, { recursive: true }).map(String).find((f) => f.endsWith(segmentFileName(victim)));
    assert.ok(file, `${sn.name} holds the batch`);
    const full = path.join(sn.dir, file as string);
    const bytes = read(full);
    bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    writeFileSync(full, bytes);
  }
  await using q = client();
  const t = await q.executeDataset({ batch_ids: ids.map((b) => b.toHex()), verify_hash: true });
  assert.is(t.numRows, (BATCHES - 1) * PER_BATCH, 'the other batches arrive');
  assert.ok(q.hadErrors());
  const errs = q.getBatchErrors();
  assert.is(errs.length, 1, JSON.stringify(errs));
  assert.is(errs[0]?.batchId, victim.toHex());
});

rt('executeToSql: the query, decoded, then SQL locally (GROUP BY over enum labels); empty SQL is the dataset; a SQL error rejects with the message', async () => {
  await using q = client();
  const input = { batch_ids: ids.slice(0, 2).map((b) => b.toHex()) };
  const t = await q.executeToSql(input, 'SELECT proto, count(*) AS n FROM flows GROUP BY proto ORDER BY proto');
  const rows = t.toArray().map((r) => `${r.proto}=${Number(r.n)}`);
  let udp = 0;
  for (let b = 0; b < 2; b++) for (let i = 0; i < PER_BATCH; i++) if (flow(b, i).proto === 'udp') udp++;
  assert.equal(rows, [`tcp=${2 * PER_BATCH - udp}`, `udp=${udp}`]);
  assert.is((await q.executeToSql(input, '')).numRows, 2 * PER_BATCH);
  const byName = await q.executeToSql(input, 'SELECT count(*) AS n FROM "Network flows"');
  assert.is(Number(byName.toArray()[0]?.n), 2 * PER_BATCH, 'the human-readable name works too');
  const err = await q.executeToSql(input, 'SELECT nope FROM flows').then(() => 'no error', (e: Error) => e.message);
  assert.match(err, /nope/);
  const empty = await q.executeSqlOnEmpty('SELECT count(*) AS n FROM flows');
  assert.is(Number(empty.toArray()[0]?.n), 0);
  q.setLocalAggregations({ group_by: ['dst_port'], aggregates: [{ fn: 'count', as: 'n' }] });
  const agg = await q.executeToSql(input, '');
  assert.is(agg.numRows, 4, 'four dst_ports');
  const g = await q.executeGraph(input, 'dst_port', 'proto', { algorithm: 'degree' });
  assert.ok(g.numRows > 0);
});

rt('streamInsert takes an Arrow record batch (the columnar path): the same bytes as the record path', async () => {
  await using ingest = new PlatformIngestClient();
  ingest.loadDatasetSchema(schemaJson);
  ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
  for (let i = 0; i < 300; i++) {
    const f = flow(9, i);
    ingest.appendRecordToArrow({ ts: String(f.ts), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', src_port: '1000', dst_port: String(f.dst_port), proto: f.proto, packets: '1', bytes: String(f.bytes), duration_ms: '5' });
  }
  const batch = ingest.flushArrowBatch();
  assert.ok(batch);
  const id = ingest.generateBatchIdString('arrow-batch');
  assert.ok(await ingest.streamInsert(id, batch as NonNullable<typeof batch>), String(ingest.lastError));
  assert.ok(await ingest.sendEob(id), String(ingest.lastError));
  assert.match(ingest.getMetrics(), /^records_ingested 300$/m);
  await using q = client();
  const t = await q.executeDataset({ batch_ids: [id.toHex()] });
  assert.is(t.numRows, 300);
  assert.equal(t.toArray().map((r) => Number(r.bytes)).sort((a, b) => a - b), Array.from({ length: 300 }, (_, i) => flow(9, i).bytes).sort((a, b) => a - b));
});

rt.run();
