/**
 * Kafka → HD end to end (issue #9's benchmark), beside kafkajs's own consume rate of the same topic in
 * the same run: a real Apache Kafka broker (scripts/kafka.sh, KRaft, loopback), `hd run
 * pipelines/ingester.yaml` as a process, an SCC replicating to two Storage Nodes (fsync at each
 * end-of-batch). HD's figure counts a message only once its offset is committed, which the ingester
 * does after the SCC acknowledged the batch holding it: records durable on both replicas per second.
 *
 *   npx tsx bench/kafkaIngest.bench.ts [messages] [runs]     (default 200000 messages, 3 runs)
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Kafka } from 'kafkajs';
import { startCluster } from '../test/support/cluster';
import { freePort, startHd, waitForPort } from '../test/support/hdProcess';
import { createTopic, groupProgress, installed, kafkaClient, produce, startComponent } from '../test/integration/ingesterKit';

const N = Number(process.argv[2] ?? 200_000);
const RUNS = Number(process.argv[3] ?? 3);
const PARTITIONS = 2;
const data = path.resolve(__dirname, '../pipelines/examples/data');
const schemaFile = path.join(data, 'flows.schema.json');
const lines = readFileSync(path.join(data, 'flows.ndjson'), 'utf8').split('\n').filter((l) => l !== '');

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `n` flows, 100 per second of event time: a 60 s window holds 6 000 of them. */
function messages(n: number, t0: number): string[] {
  return Array.from({ length: n }, (_, i) => (lines[i % lines.length] as string).replace(/"ts":\d+/, `"ts":${t0 + Math.floor(i / 100)}`));
}

/** Seconds kafkajs alone takes to consume every message of the topic as a new group (eachBatch, no processing). */
async function kafkajsConsume(kafka: Kafka, topic: string, group: string): Promise<number> {
  const consumer = kafka.consumer({ groupId: group, maxBytes: 16 << 20 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  let first = 0;
  const done = new Promise<number>((resolve) => {
    void consumer.run({
      eachBatch: async ({ batch }) => {
        if (first === 0) first = performance.now();
        seen += batch.messages.length;
        if (seen >= N) resolve((performance.now() - first) / 1000);
      },
    });
  });
  const s = await done;
  await consumer.disconnect();
  return s;
}

/** Seconds from the ingester's first commit to the last: every message durable in HD. */
async function hdIngest(kafka: Kafka, kafkaPort: number, sccPort: number, topic: string, group: string): Promise<number> {
  const obs = await freePort();
  const proc = startHd(['run', 'pipelines/ingester.yaml', '--quiet'], {
    KAFKA_BROKERS: `127.0.0.1:${kafkaPort}`,
    KAFKA_TOPICS: topic,
    KAFKA_GROUP: group,
    SCHEMA_FILE: schemaFile,
    SCC_TARGETS: `127.0.0.1:${sccPort}`,
    OBSERVABILITY_HOST: '127.0.0.1',
    OBSERVABILITY_PORT: String(obs),
    BATCH_TIMEOUT_MS: '500',
    COMMIT_INTERVAL_MS: '100',
    MAX_OPEN_BATCHES: '8',
  });
  try {
    await waitForPort('127.0.0.1', obs, proc);
    const start = performance.now();
    for (;;) {
      if (proc.proc.exitCode !== null) throw new Error(`the ingester exited:\n${proc.output()}`);
      const p = await groupProgress(kafka, group, topic);
      if (p.committed >= N) return (performance.now() - start) / 1000;
      await sleep(100);
    }
  } finally {
    await proc.stop();
  }
}

async function main(): Promise<void> {
  if (!(await installed('kafka'))) process.exit(1);
  const broker = await startComponent('kafka');
  const schema = JSON.parse(readFileSync(schemaFile, 'utf8')) as { record_size?: number; recordSize?: number };
  const cluster = await startCluster({ storageNodes: 2, recordSize: schema.record_size ?? schema.recordSize ?? 150, sccEnv: { BATCH_TIMEOUT_MS: '2000', TIMEOUT_ACTION: 'EOB' } });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hd-kafka-bench-'));
  try {
    const kafka = kafkaClient(broker.port);
    const kj: number[] = [];
    const hd: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      // A fresh topic per run with event times of its own: each run's batches are new to HD.
      const topic = `flows-bench-${r}`;
      await createTopic(kafka, topic, PARTITIONS);
      await produce(kafka, topic, messages(N, 1_700_000_000 + r * 86_400), PARTITIONS);
      kj.push(await kafkajsConsume(kafka, topic, `kafkajs-${r}`));
      hd.push(await hdIngest(kafka, broker.port, cluster.scc.productionPort, topic, `hd-${r}`));
      console.log(`run ${r + 1}: kafkajs consume ${(N / (kj[r] as number)).toFixed(0)} msg/s, HD durable ingest ${(N / (hd[r] as number)).toFixed(0)} records/s`);
    }
    const kjRate = N / median(kj);
    const hdRate = N / median(hd);
    console.log(`\nKafka → HD, ${N.toLocaleString('en-US')} NDJSON flow messages, ${PARTITIONS} partitions, median of ${RUNS}`);
    console.log('| path | records/s | vs kafkajs consume |');
    console.log('|---|---|---|');
    console.log(`| kafkajs consume only (eachBatch, no work) | ${kjRate.toFixed(0)} | 1.00 |`);
    console.log(`| ingester → SCC → 2 Storage Nodes, committed | ${hdRate.toFixed(0)} | ${(hdRate / kjRate).toFixed(2)} |`);
  } finally {
    await cluster.stop();
    await broker.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
