/**
 * Issue 9's crash test with real components: a Kafka broker (scripts/kafka.sh), `hd run
 * pipelines/ingester.yaml` as a process, an SCC and a Storage Node (test/support/cluster.ts). The
 * ingester is killed with SIGKILL while time windows are half sent to the SCC (open there and on the
 * Storage Node), then restarted: every message lands exactly once. The restart sends each batch
 * with a bbn first (batch replace, docs/ingester.md), so the half-sent copies are dropped and the
 * batches sent again whole; records of a batch that was durable but not yet committed are refused
 * by the SCC as duplicates and counted dropped — bounded by what was read after the last commit.
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

/** Start of a 60 s window (the flows schema's interval). */
const T0 = 1_740_000_000;
/** Lines per window: 10 flows per second of event time. */
const PER_WINDOW = 600;
/** `n` time-sorted flows from line `from` on, 10 per second from T0. */
const flows = (from: number, n: number): string[] => Array.from({ length: n }, (_, k) => lines[(from + k) % lines.length].replace(/"ts":\d+/, `"ts":${T0 + Math.floor((from + k) / 10)}`));

interface Env {
  kafka: Component;
  client: Kafka;
  cluster: Cluster;
  tmp: string;
}
let env: Env | undefined;

async function ingester(topic: string): Promise<{ proc: HdProcess; obs: number }> {
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
    // Windows close only when a newer one evicts them (or at SIGTERM), never on idleness: the
    // windows open when the ingester is killed are known exactly.
    BATCH_TIMEOUT_MS: '600000',
    MAX_OPEN_BATCHES: '2',
    COMMIT_INTERVAL_MS: '200',
  });
  await waitForPort('127.0.0.1', obs, proc);
  return { proc, obs };
}

const stage = (obs: number, counter: string, stageId: string): Promise<number | undefined> => metric(obs, `hd_stage_${counter}_total`, { stage: stageId });

const crash = suite('ingester killed with SIGKILL mid-stream and restarted (real Kafka, SCC, Storage Node)');
crash.before(async () => {
  if (!(await installed('kafka'))) return;
  const k = await startComponent('kafka');
  // The SCC's default batch timeout (60 s) keeps the killed ingester's half-sent batches open.
  const cluster = await startCluster({ storageNodes: 1, recordSize: RS });
  env = { kafka: k, client: kafkaClient(k.port), cluster, tmp: mkdtempSync(path.join(os.tmpdir(), 'hd-crash-')) };
});
crash.after(async () => {
  await env?.cluster.stop();
  await env?.kafka.stop();
  if (env) rmSync(env.tmp, { recursive: true, force: true });
});

crash('SIGKILL with two windows half sent, restart: every message stored exactly once; duplicates refused by the SCC, at most what was read after the commit', async () => {
  if (!env) return;
  const e = env;
  const topic = 'crash1';
  await createTopic(e.client, topic, 1);
  const M = 3000;
  const all = flows(0, M);
  // Phase 1: windows 0 and 1 whole, window 2 half. Window 2 evicts window 0 (durable, committed or
  // about to be); windows 1 and 2 stay open in the ingester, so they are half sent when it dies.
  const phase1 = 2.5 * PER_WINDOW;
  await produce(e.client, topic, all.slice(0, phase1));
  let ing = await ingester(topic);
  await waitFor(async () => (await stage(ing.obs, 'received', 'scc')) === phase1 && (await stage(ing.obs, 'sent', 'scc')) === PER_WINDOW, 'phase 1 handed to the SCC, window 0 durable', ing.proc.output);
  const sn = e.cluster.sns[0];
  await waitFor(() => filesOn(sn, 'flows').partials.length === 2, 'windows 1 and 2 open (half sent) on the Storage Node', ing.proc.output);
  await ing.proc.kill9();

  const committed = (await groupProgress(e.client, `g-${topic}`, topic)).committed;
  assert.ok(committed <= PER_WINDOW, `nothing past window 0 is committed (${committed})`);
  assert.equal(await storedRecords(sn, 'flows', RS), await expected(all.slice(0, PER_WINDOW)), 'before the restart only window 0 is stored');

  // Phase 2: the rest of window 2 and two more windows; the restart re-reads from the commit.
  await produce(e.client, topic, all.slice(phase1));
  ing = await ingester(topic);
  try {
    // Read again: window 0 from the commit on, then windows 1..4. Window 0 is closed at the SCC
    // (its records are refused there as duplicates); windows 1 and 2 replace their half-sent
    // copies and become durable once windows 3 and 4 evict them.
    const dup = PER_WINDOW - committed;
    await waitFor(
      async () => (await stage(ing.obs, 'received', 'scc')) === M - committed && (await stage(ing.obs, 'sent', 'scc')) === 2 * PER_WINDOW && (await stage(ing.obs, 'dropped', 'scc')) === dup,
      'windows 1 and 2 durable, the re-read part of window 0 refused as duplicates',
      ing.proc.output,
    );
    assert.is(await stage(ing.obs, 'received', 'source'), M - committed, 'the restart read from the last commit');
    // SIGTERM closes the open windows, waits for their acknowledgement and commits.
    assert.is(await ing.proc.stop(), 0, ing.proc.output());
    assert.equal(await groupProgress(e.client, `g-${topic}`, topic), { committed: M, end: M });
  } catch (err) {
    process.stderr.write(ing.proc.output());
    throw err;
  } finally {
    await ing.proc.stop();
  }
  const stored = await storedRecords(sn, 'flows', RS);
  assert.is(stored.length, M, `exactly ${M} records stored: nothing lost, nothing twice`);
  assert.equal(stored, await expected(all));
  assert.equal(filesOn(sn, 'flows').partials, [], 'no partial copy left on the Storage Node');
});

crash.run();
