/**
 * Issue 9's rebalance requirement with real components: a 2-partition Kafka topic (scripts/kafka.sh),
 * `hd run pipelines/ingester.yaml` as a process, an SCC and a Storage Node (test/support/cluster.ts).
 * Once the ingester has committed the first half of the data, a plain kafkajs consumer joins the
 * same group with `autoCommit: false` — the group rebalances and one partition moves to it — the
 * second half is produced, the foreign consumer reads for 2 s and leaves, and the partition comes
 * back. When every offset is committed the Storage Node holds every record exactly once: the
 * windows open at each rebalance were discarded (bbn) and rebuilt from the commit, and windows did
 * not time out while a partition was away (docs/ingester.md, "Rebalances").
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kafka } from 'kafkajs';
import { RecordCodec, Schema } from '../../engine-rs/index';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { createTopic, groupProgress, installed, kafkaClient, metric, produce, recordHexes, startComponent, storedRecords, waitFor, type Component } from './ingesterKit';
import { filesOn } from './ingestKit';

const data = path.resolve(__dirname, '../../pipelines/examples/data');
const schemaFile = path.join(data, 'flows.schema.json');
const schema = Schema.parse(readFileSync(schemaFile, 'utf8'));
const RS = schema.recordSize;
const lines = readFileSync(path.join(data, 'flows.ndjson'), 'utf8').split('\n').filter((l) => l !== '');

/** The records `good` lines encode to, as sorted hex. */
async function expected(good: readonly string[]): Promise<string[]> {
  const r = await new RecordCodec(schema).parseNdjson(Buffer.from(good.join('\n') + '\n'));
  assert.is(r.errors.length, 0);
  return recordHexes(r.records, RS);
}

/** `n` time-sorted flows, 10 per second of event time from `t0`. */
const flows = (t0: number, n: number): string[] => Array.from({ length: n }, (_, k) => lines[k % lines.length].replace(/"ts":\d+/, `"ts":${t0 + Math.floor(k / 10)}`));

interface Env {
  kafka: Component;
  client: Kafka;
  cluster: Cluster;
  tmp: string;
}
let env: Env | undefined;
/** Every record the tests of this file produced so far (they share the Storage Node). */
let storedSoFar: string[] = [];

async function ingester(topic: string, timeoutMs: number): Promise<{ proc: HdProcess; obs: number }> {
  const e = env as Env;
  const obs = await freePort();
  const proc = startHd(['run', 'pipelines/ingester.yaml', '--quiet'], {
    KAFKA_BROKERS: `127.0.0.1:${e.kafka.port}`,
    KAFKA_TOPICS: topic,
    KAFKA_GROUP: `g-${topic}`,
    SCHEMA_FILE: schemaFile,
    SCC_TARGETS: `127.0.0.1:${e.cluster.scc.productionPort}`,
    OBSERVABILITY_HOST: '127.0.0.1',
    OBSERVABILITY_PORT: String(obs),
    DEAD_LETTER: path.join(e.tmp, `${topic}-dead.ndjson`),
    MAX_OPEN_BATCHES: '16',
    BATCH_TIMEOUT_MS: String(timeoutMs),
    COMMIT_INTERVAL_MS: '200',
  });
  await waitForPort('127.0.0.1', obs, proc);
  return { proc, obs };
}

const rebalance = suite('ingester through consumer-group rebalances (real Kafka, SCC, Storage Node)');
rebalance.before(async () => {
  if (!(await installed('kafka'))) return;
  const k = await startComponent('kafka');
  const cluster = await startCluster({ storageNodes: 1, recordSize: RS });
  env = { kafka: k, client: kafkaClient(k.port), cluster, tmp: mkdtempSync(path.join(os.tmpdir(), 'hd-rebalance-')) };
});
rebalance.after(async () => {
  await env?.cluster.stop();
  await env?.kafka.stop();
  if (env) rmSync(env.tmp, { recursive: true, force: true });
});

/**
 * The reproduction of docs/ingester.md: 3 000 flows in two halves on 2 partitions. After the first
 * half is committed, the first window of the second half is produced and read (with a long batch
 * timeout it is still open when the group rebalances); a foreign consumer takes a partition, the
 * rest of the second half is produced, the foreign consumer reads 2 s without committing and
 * leaves. The halves and the two parts of the second lie in windows of their own, so no record is
 * late for a reason other than the rebalances.
 */
async function throughRebalance(topic: string, timeoutMs: number, start: number): Promise<void> {
  const e = env as Env;
  // On a window boundary (the flows schema's 60 s), so the parts below fill windows of their own.
  const t0 = start - (start % 60);
  const half = 1500;
  const first = flows(t0, half);
  // Ten windows later: the second half opens windows of its own.
  const second = flows(t0 + 600, half);
  const all = [...first, ...second];
  // The second half's first window (60 s of 10 flows a second), then the rest.
  const secondA = second.slice(0, 600);
  const secondB = second.slice(600);
  const want = await expected(all);
  assert.is(new Set(want).size, all.length, 'every flow is a distinct record');
  await createTopic(e.client, topic, 2);
  await produce(e.client, topic, first, 2);
  const ing = await ingester(topic, timeoutMs);
  const foreign = e.client.consumer({ groupId: `g-${topic}`, sessionTimeout: 10_000, heartbeatInterval: 500 });
  try {
    await waitFor(async () => (await groupProgress(e.client, `g-${topic}`, topic)).committed === half, 'the first half committed', ing.proc.output);
    await produce(e.client, topic, secondA, 2);
    await waitFor(async () => (await metric(ing.obs, 'hd_stage_received_total', { stage: 'scc' })) === half + secondA.length, 'the first window of the second half sent', ing.proc.output);

    // A foreign member joins: once it has its assignment, the ingester has rejoined too (the
    // group's sync waits for every member).
    let assigned: number[] = [];
    foreign.on(foreign.events.GROUP_JOIN, (ev) => (assigned = ev.payload.memberAssignment[topic] ?? []));
    await foreign.connect();
    await foreign.subscribe({ topic, fromBeginning: true });
    let readForeign = 0;
    await foreign.run({ autoCommit: false, eachMessage: async () => void readForeign++ });
    await waitFor(() => assigned.length === 1, 'the foreign consumer holds one of the two partitions', ing.proc.output);

    await produce(e.client, topic, secondB, 2);
    await waitFor(() => readForeign > 0, 'the foreign consumer reads its partition', ing.proc.output);
    await new Promise((r) => setTimeout(r, 2000));
    await foreign.disconnect();
    assert.ok(readForeign >= secondB.length / 2, `the foreign consumer read its partition's part of the second half (${readForeign})`);
    const total = all.length;

    await waitFor(async () => (await groupProgress(e.client, `g-${topic}`, topic)).committed === total, 'every offset committed', ing.proc.output);
    if (timeoutMs > 5000) {
      // The second half's first window was open when the foreign consumer joined.
      assert.ok(((await metric(ing.obs, 'hd_stage_dropped_total', { stage: 'scc' })) ?? 0) >= secondA.length, 'the window open at the rebalance was discarded (bbn)');
      assert.ok(((await metric(ing.obs, 'hd_stage_received_total', { stage: 'source' })) ?? 0) >= total + secondA.length, 'and read again from the commit');
    }
    assert.is(await ing.proc.stop(), 0, ing.proc.output());
  } catch (err) {
    process.stderr.write(ing.proc.output());
    throw err;
  } finally {
    await foreign.disconnect().catch(() => undefined);
    await ing.proc.stop();
  }
  storedSoFar = [...storedSoFar, ...want].sort();
  const sn = e.cluster.sns[0];
  const stored = await storedRecords(sn, 'flows', RS);
  const twice = stored.length - new Set(stored).size;
  assert.is(twice, 0, `no record stored twice (${twice} duplicates)`);
  assert.is(stored.length, storedSoFar.length, `every record stored (${stored.length} of ${storedSoFar.length})`);
  assert.equal(stored, storedSoFar);
  assert.equal(filesOn(sn, 'flows').partials, [], 'no partial copy left on the Storage Node');
}

rebalance('BATCH_TIMEOUT_MS=8000: windows open across the rebalances are rebuilt, nothing stored twice', async () => {
  if (!env) return;
  await throughRebalance('rebalance-long', 8000, 1_740_000_000);
});

rebalance('BATCH_TIMEOUT_MS=500 (shorter than the rebalance): nothing dropped as late, nothing stored twice', async () => {
  if (!env) return;
  await throughRebalance('rebalance-short', 500, 1_750_000_000);
});

rebalance.run();
