/**
 * Real components for the ingester's tests: an Apache Kafka broker (KRaft) started by
 * scripts/kafka.sh, moto's S3 server started by scripts/s3.sh, and helpers to read what landed in a
 * cluster's segments. A component that cannot be installed makes its tests skip with a loud message;
 * one that installs but fails to start fails them.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { readSegment } from '../../engine-rs/index';
import type { ClusterSn } from '../support/cluster';
import { freePort } from '../support/hdProcess';

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
