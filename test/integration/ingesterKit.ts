/**
 * Real components for the ingester's tests: an Apache Kafka broker (KRaft) started by
 * scripts/kafka.sh, moto's S3 server started by scripts/s3.sh, and helpers to read what landed in a
 * cluster's segments. A component that cannot be installed makes its tests skip with a loud message;
 * one that installs but fails to start fails them. The Kafka ingester suites share their setup
 * here too: the example flows, a Kafka broker with a cluster ({@link startIngesterEnv}) and
 * `hd run pipelines/ingester.yaml` reading one topic ({@link startKafkaIngester}).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import * as assert from 'uvu/assert';
import { readSegment, RecordCodec, Schema } from '../../engine-rs/index';
import { startCluster, type Cluster, type ClusterOptions, type ClusterSn } from '../support/cluster';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';

const run = promisify(execFile);
const root = path.resolve(__dirname, '..', '..');

/** Installs a component with its script; false (after a loud message) when it cannot be installed. */
export async function installed(script: 'kafka' | 's3'): Promise<boolean> {
  try {
    await run('bash', [path.join(root, 'scripts', `${script}.sh`), 'install'], { cwd: root, timeout: 600_000 });
    return true;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    process.stderr.write(`\n!!! SKIPPED: scripts/${script}.sh could not install its component, so the ${script === 'kafka' ? 'Kafka' : 'S3'} ingester tests do not run:\n!!! ${(e.stderr ?? e.message).trim().split('\n').slice(-5).join('\n!!! ')}\n\n`);
    return false;
  }
}

/** A running local component started by a script. */
export interface Component {
  readonly port: number;
  readonly dir: string;
  stop(): Promise<void>;
}

/** Two consecutive free ports (Kafka's broker and controller listeners). */
async function freePortPair(): Promise<number> {
  for (;;) {
    const p = await freePort();
    if (p < 65535 && (await freePort().then(() => true))) {
      const net = await import('node:net');
      const ok = await new Promise<boolean>((resolve) => {
        const s = net.createServer();
        s.once('error', () => resolve(false));
        s.listen(p + 1, '127.0.0.1', () => s.close(() => resolve(true)));
      });
      if (ok) return p;
    }
  }
}

/** Starts a component with `scripts/<script>.sh start DIR PORT`. */
export async function startComponent(script: 'kafka' | 's3'): Promise<Component> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `hd-${script}-`));
  const port = script === 'kafka' ? await freePortPair() : await freePort();
  const sh = path.join(root, 'scripts', `${script}.sh`);
  await run('bash', [sh, 'start', dir, String(port)], { cwd: root, timeout: 120_000 });
  return {
    port,
    dir,
    async stop() {
      await run('bash', [sh, 'stop', dir], { cwd: root, timeout: 60_000 }).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A kafkajs client of the local broker. */
export function kafkaClient(port: number): Kafka {
  return new Kafka({ clientId: 'hd-test', brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING });
}

/** Creates `topic` with `partitions` partitions. */
export async function createTopic(kafka: Kafka, topic: string, partitions = 1): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

/** Produces `values` to `topic` in order (round-robin over partitions when `partitions` > 1), in sends of 500. */
export async function produce(kafka: Kafka, topic: string, values: readonly (string | Buffer)[], partitions = 1): Promise<void> {
  const p = kafka.producer({ allowAutoTopicCreation: false });
  await p.connect();
  try {
    for (let i = 0; i < values.length; i += 500) {
      await p.send({ topic, acks: -1, messages: values.slice(i, i + 500).map((value, j) => ({ value, partition: (i + j) % partitions })) });
    }
  } finally {
    await p.disconnect();
  }
}

/** The group's committed offsets and the topic's end offsets, summed over partitions. */
export async function groupProgress(kafka: Kafka, group: string, topic: string): Promise<{ committed: number; end: number }> {
  const admin: Admin = kafka.admin();
  await admin.connect();
  try {
    const [offsets] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    const ends = await admin.fetchTopicOffsets(topic);
    const committed = offsets.partitions.reduce((s, p) => s + Math.max(0, Number(p.offset)), 0);
    return { committed, end: ends.reduce((s, p) => s + Number(p.high), 0) };
  } finally {
    await admin.disconnect();
  }
}

/** Every record in a dataset's committed segments on `sn`, as hex strings of `recordSize` bytes, sorted. */
export async function storedRecords(sn: ClusterSn, dataset: string, recordSize: number): Promise<string[]> {
  const dir = path.join(sn.dir, 'd0', dataset);
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.hdseg'))) {
    const recs = await readSegment(path.join(dir, name));
    for (let at = 0; at < recs.length; at += recordSize) out.push(recs.subarray(at, at + recordSize).toString('hex'));
  }
  return out.sort();
}

/** Records as sorted hex strings (to compare with {@link storedRecords}). */
export function recordHexes(records: Buffer, recordSize: number): string[] {
  const out: string[] = [];
  for (let at = 0; at < records.length; at += recordSize) out.push(records.subarray(at, at + recordSize).toString('hex'));
  return out.sort();
}

/** One value of a Prometheus text exposition (`name{labels}`), or undefined. */
export async function metric(port: number, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** Resolves once `cond()` is true (checked every 100 ms); fails after `ms` with `what` and `output()`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, output: () => string = () => '', ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const flowsData = path.join(root, 'pipelines', 'examples', 'data');
const flowsSchemaFile = path.join(flowsData, 'flows.schema.json');
const flowsSchema = Schema.parse(readFileSync(flowsSchemaFile, 'utf8'));

/** The example flows (pipelines/examples/data) the Kafka ingester tests produce: schema and NDJSON lines. */
export const FLOWS: {
  readonly schemaFile: string;
  readonly schema: Schema;
  readonly recordSize: number;
  readonly lines: readonly string[];
} = {
  schemaFile: flowsSchemaFile,
  schema: flowsSchema,
  recordSize: flowsSchema.recordSize,
  lines: readFileSync(path.join(flowsData, 'flows.ndjson'), 'utf8').split('\n').filter((l) => l !== ''),
};

/** The records `good` flow lines encode to, as sorted hex (to compare with {@link storedRecords}); every line must encode. */
export async function expectedHexes(good: readonly string[]): Promise<string[]> {
  const r = await new RecordCodec(FLOWS.schema).parseNdjson(Buffer.from(good.join('\n') + '\n'));
  assert.is(r.errors.length, 0);
  return recordHexes(r.records, FLOWS.recordSize);
}

/**
 * `n` time-sorted copies of the flow lines, `perSecond` per second of event time from `t0` (so a
 * new 60 s window of the flows schema every `60 * perSecond` lines).
 */
export const flowsAt = (t0: number, n: number, perSecond = 10): string[] =>
  Array.from({ length: n }, (_, i) => FLOWS.lines[i % FLOWS.lines.length].replace(/"ts":\d+/, `"ts":${t0 + Math.floor(i / perSecond)}`));

/** What a Kafka ingester suite runs against: a broker, a client of it, an SCC with Storage Nodes, a scratch folder. */
export interface IngesterEnv {
  readonly kafka: Component;
  readonly client: Kafka;
  readonly cluster: Cluster;
  readonly tmp: string;
}

/**
 * Starts a suite's environment: installs and starts Kafka, then a cluster (one Storage Node of
 * the flows' record size unless `clusterOptions` says otherwise) and a scratch folder named
 * `<tmpPrefix>XXXXXX`. Undefined (after {@link installed}'s loud message) when Kafka cannot be
 * installed: the suite's tests then skip.
 */
export async function startIngesterEnv(tmpPrefix: string, clusterOptions: ClusterOptions = {}): Promise<IngesterEnv | undefined> {
  if (!(await installed('kafka'))) return undefined;
  const kafka = await startComponent('kafka');
  let cluster: Cluster;
  try {
    cluster = await startCluster({ storageNodes: 1, recordSize: FLOWS.recordSize, ...clusterOptions });
  } catch (err) {
    // The suite's `after` sees no environment: stop the broker here so the suite still exits.
    await kafka.stop();
    throw err;
  }
  return { kafka, client: kafkaClient(kafka.port), cluster, tmp: mkdtempSync(path.join(os.tmpdir(), tmpPrefix)) };
}

/** Stops what {@link startIngesterEnv} started (nothing when it is undefined) and removes the scratch folder. */
export async function stopIngesterEnv(env: IngesterEnv | undefined): Promise<void> {
  if (!env) return;
  await env.cluster.stop();
  await env.kafka.stop();
  rmSync(env.tmp, { recursive: true, force: true });
}

/** A running `hd run pipelines/ingester.yaml`. */
export interface KafkaIngester {
  readonly proc: HdProcess;
  /** Its observability port (GET /metrics). */
  readonly obs: number;
  /** Its dead-letter file. */
  readonly deadLetter: string;
}

/**
 * Starts `hd run pipelines/ingester.yaml` reading `topic` of the environment's broker as group
 * `g-<topic>`, with the flows schema, sending to the environment's SCC, dead-lettering to
 * `<tmp>/<topic>-dead.ndjson` and committing every 200 ms; `settings` add to or override those
 * variables (BATCH_TIMEOUT_MS, MAX_OPEN_BATCHES, ...). Resolves once its observability port listens.
 */
export async function startKafkaIngester(env: IngesterEnv, topic: string, settings: Record<string, string>): Promise<KafkaIngester> {
  const obs = await freePort();
  const deadLetter = path.join(env.tmp, `${topic}-dead.ndjson`);
  const proc = startHd(['run', 'pipelines/ingester.yaml', '--quiet'], {
    KAFKA_BROKERS: `127.0.0.1:${env.kafka.port}`,
    KAFKA_TOPICS: topic,
    KAFKA_GROUP: `g-${topic}`,
    SCHEMA_FILE: FLOWS.schemaFile,
    SCC_TARGETS: `127.0.0.1:${env.cluster.scc.productionPort}`,
    OBSERVABILITY_HOST: '127.0.0.1',
    OBSERVABILITY_PORT: String(obs),
    DEAD_LETTER: deadLetter,
    COMMIT_INTERVAL_MS: '200',
    ...settings,
  });
  await waitForPort('127.0.0.1', obs, proc);
  return { proc, obs, deadLetter };
}

/** A pipeline stage's counter (`hd_stage_<counter>_total{stage="<stageId>"}`), or undefined before it is set. */
export const stageCounter = (obs: number, counter: string, stageId: string): Promise<number | undefined> => metric(obs, `hd_stage_${counter}_total`, { stage: stageId });

/**
 * A plain kafkajs member of `group` on `topic` that reads without committing: joining makes the
 * group rebalance and take partitions from the ingester; leaving gives them back.
 */
export interface ForeignMember {
  /** Joins the group and reads from the beginning (without committing). */
  join(): Promise<void>;
  /** The partitions of `topic` its last join assigned it. */
  assigned(): number[];
  /** How many messages it has read. */
  read(): number;
  /** Leaves the group. */
  disconnect(): Promise<void>;
}

/** A {@link ForeignMember} of `group` (created, not yet joined). */
export function foreignMember(kafka: Kafka, group: string, topic: string): ForeignMember {
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10_000, heartbeatInterval: 500 });
  let assigned: number[] = [];
  let read = 0;
  return {
    async join() {
      consumer.on(consumer.events.GROUP_JOIN, (ev) => (assigned = ev.payload.memberAssignment[topic] ?? []));
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({ autoCommit: false, eachMessage: async () => void read++ });
    },
    assigned: () => assigned,
    read: () => read,
    disconnect: () => consumer.disconnect(),
  };
}
