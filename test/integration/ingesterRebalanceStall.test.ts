/**
 * A rebalance in the middle of a stream (docs/ingester.md, "Rebalances"), with real components: a
 * 2-partition Kafka topic, `hd run pipelines/ingester.yaml`, an SCC and a Storage Node. The SCC is
 * stopped (SIGSTOP) while the ingester sends a backlog, so the ingester waits mid-batch with windows
 * half sent; a foreign consumer joins the group meanwhile. When the SCC resumes the ingester rejoins,
 * discards its open windows and reads again from the commit; the foreign consumer reads 2 s and
 * leaves, and the same happens once more. Every record is stored exactly once.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kafka } from 'kafkajs';
import { RecordCodec, Schema } from '../../engine-rs/index';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd, waitForPort } from '../support/hdProcess';
import { createTopic, groupProgress, installed, kafkaClient, metric, produce, recordHexes, startComponent, storedRecords, waitFor, type Component } from './ingesterKit';
import { filesOn } from './ingestKit';

const data = path.resolve(__dirname, '../../pipelines/examples/data');
const schemaFile = path.join(data, 'flows.schema.json');
const schema = Schema.parse(readFileSync(schemaFile, 'utf8'));
const RS = schema.recordSize;
const lines = readFileSync(path.join(data, 'flows.ndjson'), 'utf8').split('\n').filter((l) => l !== '');

/** `n` time-sorted flows, `perSecond` per second of event time from `t0`. */
const flowsAt = (t0: number, n: number, perSecond: number): string[] => Array.from({ length: n }, (_, i) => lines[i % lines.length].replace(/"ts":\d+/, `"ts":${t0 + Math.floor(i / perSecond)}`));

async function expected(good: readonly string[]): Promise<string[]> {
  const r = await new RecordCodec(schema).parseNdjson(Buffer.from(good.join('\n') + '\n'));
  assert.is(r.errors.length, 0);
  return recordHexes(r.records, RS);
}

interface Env {
  kafka: Component;
  client: Kafka;
  cluster: Cluster;
  tmp: string;
}
let env: Env | undefined;

const stall = suite('ingester: a rebalance while the SCC is stopped mid-stream (real Kafka, SCC, Storage Node)');
stall.before(async () => {
  if (!(await installed('kafka'))) return;
  const k = await startComponent('kafka');
  // The SCC's batch timeout outlasts the stop, so the ingester's half-sent windows stay open there.
  const cluster = await startCluster({ storageNodes: 1, recordSize: RS, sccEnv: { BATCH_TIMEOUT_MS: '120000', TIMEOUT_ACTION: 'EOB' } });
  env = { kafka: k, client: kafkaClient(k.port), cluster, tmp: mkdtempSync(path.join(os.tmpdir(), 'hd-rebalance-stall-')) };
});
stall.after(async () => {
  await env?.cluster.stop();
  await env?.kafka.stop();
  if (env) rmSync(env.tmp, { recursive: true, force: true });
});

stall('windows half sent when the group rebalances are discarded and rebuilt: every record stored once', async () => {
  if (!env) return;
  const e = env;
  const topic = 'stall';
  const group = `g-${topic}`;
  await createTopic(e.client, topic, 2);
  const warm = flowsAt(1_760_000_000, 600, 10);
  // About 8 windows of 100 flows a second: fewer than MAX_OPEN_BATCHES, so none closes by eviction.
  const flood = flowsAt(1_760_000_000 + 3600, 50_000, 100);
  const want = await expected([...warm, ...flood]);
  assert.is(new Set(want).size, warm.length + flood.length, 'every flow is a distinct record');

  const obs = await freePort();
  const ing = startHd(['run', 'pipelines/ingester.yaml', '--quiet'], {
    KAFKA_BROKERS: `127.0.0.1:${e.kafka.port}`,
    KAFKA_TOPICS: topic,
    KAFKA_GROUP: group,
    SCHEMA_FILE: schemaFile,
    SCC_TARGETS: `127.0.0.1:${e.cluster.scc.productionPort}`,
    OBSERVABILITY_HOST: '127.0.0.1',
    OBSERVABILITY_PORT: String(obs),
    DEAD_LETTER: path.join(e.tmp, 'dead.ndjson'),
    MAX_OPEN_BATCHES: '16',
    BATCH_TIMEOUT_MS: '8000',
    COMMIT_INTERVAL_MS: '200',
  });
  await waitForPort('127.0.0.1', obs, ing);
  const stage = async (counter: string, id: string): Promise<number> => (await metric(obs, `hd_stage_${counter}_total`, { stage: id })) ?? 0;
  const scc = e.cluster.scc.proc.proc;
  const foreign = e.client.consumer({ groupId: group, sessionTimeout: 10_000, heartbeatInterval: 500 });
  let resumed = false;
  try {
    await produce(e.client, topic, warm, 2);
    await waitFor(async () => (await stage('received', 'scc')) === warm.length, 'the warm-up handed to the SCC (stream open)', ing.output);
    scc.kill('SIGSTOP');
    await produce(e.client, topic, flood, 2);
    await waitFor(async () => (await stage('received', 'scc')) > warm.length, 'the ingester sending the backlog to the stopped SCC', ing.output);

    let assigned: number[] = [];
    foreign.on(foreign.events.GROUP_JOIN, (ev) => (assigned = ev.payload.memberAssignment[topic] ?? []));
    await foreign.connect();
    await foreign.subscribe({ topic, fromBeginning: true });
    let readForeign = 0;
    await foreign.run({ autoCommit: false, eachMessage: async () => void readForeign++ });
    // The ingester learns of the rebalance by its heartbeat while it waits for the SCC.
    await new Promise((r) => setTimeout(r, 4000));
    scc.kill('SIGCONT');
    resumed = true;
    await waitFor(() => assigned.length === 1, 'the foreign consumer holds one of the two partitions', ing.output);
    await waitFor(() => readForeign > 0, 'the foreign consumer reads', ing.output);
    await new Promise((r) => setTimeout(r, 2000));
    await foreign.disconnect();

    const total = warm.length + flood.length;
    await waitFor(async () => (await groupProgress(e.client, group, topic)).committed === total, 'every offset committed', ing.output, 120_000);
    assert.ok((await stage('received', 'source')) > total, 'the ingester read part of the data again after the rebalances');
    assert.ok((await stage('dropped', 'scc')) > 0, 'windows open at a rebalance were discarded (bbn) and rebuilt');
    assert.is(await ing.stop(), 0, ing.output());
  } catch (err) {
    process.stderr.write(ing.output());
    throw err;
  } finally {
    if (!resumed) scc.kill('SIGCONT');
    await foreign.disconnect().catch(() => undefined);
    await ing.stop();
  }
  const sn = e.cluster.sns[0];
  const stored = await storedRecords(sn, 'flows', RS);
  const twice = stored.length - new Set(stored).size;
  assert.is(twice, 0, `no record stored twice (${twice} duplicates)`);
  assert.is(stored.length, want.length, `every record stored (${stored.length} of ${want.length})`);
  assert.equal(stored, want);
  assert.equal(filesOn(sn, 'flows').partials, [], 'no partial copy left on the Storage Node');
});

stall.run();
