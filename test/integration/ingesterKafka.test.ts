/**
 * The Message Bus Ingester end to end with real components: an Apache Kafka broker (KRaft, started
 * by scripts/kafka.sh), `hd run pipelines/ingester.yaml` as a process, and an SCC with a Storage
 * Node behind it (test/support/cluster.ts). Records are counted exactly in the Storage Node's
 * segments.
 */
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startCluster } from '../support/cluster';
import { createTopic, expectedHexes as expected, FLOWS, flowsAt, groupProgress, metric, produce, stageCounter as stage, startIngesterEnv, startKafkaIngester, stopIngesterEnv, storedRecords, waitFor, type IngesterEnv, type KafkaIngester } from './ingesterKit';

const RS = FLOWS.recordSize;
const lines = FLOWS.lines;
const BAD = ['not json at all', '{"ts":1700000042,"src_ip":"999.1.1.1","proto":"tcp"}', '{"ts":"yesterday"}'];

let env: IngesterEnv | undefined;
let topicNo = 0;

/** The ingester reading `topic` with this file's settings; `extra` overrides them. */
const ingester = (topic: string, extra: Record<string, string> = {}): Promise<KafkaIngester> =>
  startKafkaIngester(env as IngesterEnv, topic, {
    BATCH_TIMEOUT_MS: '500',
    COMMIT_INTERVAL_MS: '200',
    // Two partitions are read one fetch after the other: keep every window of the data open.
    MAX_OPEN_BATCHES: '16',
    ...extra,
  });

/** The resident memory of a process in bytes (Linux). */
const rss = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

const kafka = suite('ingester: Kafka → SCC → Storage Node (real processes)');
kafka.before(async () => {
  // A short SCC batch timeout settles the batch a killed ingester leaves open (see the kill -9 test).
  env = await startIngesterEnv('hd-ingester-', { sccEnv: { BATCH_TIMEOUT_MS: '1000', TIMEOUT_ACTION: 'EOB' } });
});
kafka.after(() => stopIngesterEnv(env));

kafka('every good line lands once in the segments; bad lines go to the dead letter with reasons; counters add up; offsets reach the end', async () => {
  if (!env) return;
  const topic = `flows${++topicNo}`;
  await createTopic(env.client, topic, 2);
  const values = [...lines.slice(0, 1000), BAD[0], ...lines.slice(1000, 2000), BAD[1], BAD[2], ...lines.slice(2000)];
  await produce(env.client, topic, values, 2);
  const ing = await ingester(topic);
  try {
    await waitFor(async () => (await stage(ing.obs, 'sent', 'scc')) === lines.length, 'every record durable', ing.proc.output).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${(await (await fetch(`http://127.0.0.1:${ing.obs}/metrics`)).text()).split('\n').filter((l) => l.startsWith('hd_stage')).join('\n')}`);
    });
    assert.equal(await storedRecords(env.cluster.sns[0], 'flows', RS), await expected(lines));
    // Counters: the source read every line, encoded the good ones, dropped the bad; the sink made them all durable.
    assert.is(await stage(ing.obs, 'received', 'source'), values.length);
    assert.is(await stage(ing.obs, 'sent', 'source'), lines.length);
    assert.is(await stage(ing.obs, 'dropped', 'source'), BAD.length);
    assert.is(await stage(ing.obs, 'received', 'batch'), lines.length);
    assert.is(await stage(ing.obs, 'received', 'scc'), lines.length);
    assert.is(await stage(ing.obs, 'dropped', 'scc'), 0);
    assert.is(await metric(ing.obs, 'hd_records_ingested_total'), lines.length);
    const dead = readFileSync(ing.deadLetter, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { source: string; reason: string; text: string; line: number });
    assert.equal(dead.map((d) => d.text).sort(), [...BAD].sort());
    for (const d of dead) {
      assert.match(d.source, new RegExp(`^kafka:${topic}/[01]@\\d+$`));
      assert.is(d.line, 1);
      assert.ok(d.reason.length > 0);
    }
    await waitFor(async () => {
      const p = await groupProgress(env!.client, `g-${topic}`, topic);
      return p.committed === p.end;
    }, 'offsets committed to the end', ing.proc.output);
  } finally {
    assert.is(await ing.proc.stop(), 0, ing.proc.output());
  }
});

kafka('SIGTERM stops in order (batches closed, acknowledged, offsets committed); a restart resumes there: every record exactly once', async () => {
  if (!env) return;
  const topic = `flows${++topicNo}`;
  await createTopic(env.client, topic, 1);
  const phase1 = flowsAt(1710000000, 1800);
  const phase2 = flowsAt(1710000000 + 3600, 1800);
  await produce(env.client, topic, phase1);
  let ing = await ingester(topic);
  await waitFor(async () => (await stage(ing.obs, 'sent', 'scc')) === phase1.length, 'phase 1 durable', ing.proc.output);
  assert.is(await ing.proc.stop(), 0, ing.proc.output());
  assert.equal(await groupProgress(env.client, `g-${topic}`, topic), { committed: phase1.length, end: phase1.length });
  await produce(env.client, topic, phase2);
  ing = await ingester(topic);
  try {
    await waitFor(async () => (await stage(ing.obs, 'sent', 'scc')) === phase2.length, 'phase 2 durable', ing.proc.output);
    assert.is(await stage(ing.obs, 'received', 'source'), phase2.length, 'nothing was read twice');
    const stored = await storedRecords(env.cluster.sns[0], 'flows', RS);
    const want = [...(await expected(phase1)), ...(await expected(phase2))].sort();
    assert.equal(stored.filter((h) => want.includes(h)).length, want.length);
  } finally {
    assert.is(await ing.proc.stop(), 0, ing.proc.output());
  }
  assert.equal(await groupProgress(env.client, `g-${topic}`, topic), { committed: 3600, end: 3600 });
});

kafka('a stopped SCC pauses consumption: the lag grows, the ingester reads no more and its memory stays flat; resumed, everything lands', async () => {
  if (!env) return;
  const e = env;
  const topic = `flows${++topicNo}`;
  await createTopic(e.client, topic, 1);
  // timeBatch counts a stall as idleness: its batch timeout must outlast the SCC's pause, or the
  // window open during the pause is closed early and its later records dropped as late.
  // Its own SCC, whose batch timeout outlasts the ingester's: the shared one's 1 s (for the kill -9
  // case) would close the ingester's open windows while it waits for credit.
  const own = await startCluster({ storageNodes: 1, recordSize: RS, sccEnv: { BATCH_TIMEOUT_MS: '120000', TIMEOUT_ACTION: 'EOB' } });
  const ing = await ingester(topic, { KAFKA_GROUP: `g-${topic}`, BATCH_TIMEOUT_MS: '30000', SCC_TARGETS: `127.0.0.1:${own.scc.productionPort}` });
  const scc = own.scc.proc.proc;
  try {
    const warm = flowsAt(1720000000, 600);
    await produce(e.client, topic, warm);
    await waitFor(async () => (await stage(ing.obs, 'sent', 'scc')) === warm.length, 'warm-up durable', ing.proc.output);
    const before = rss(ing.proc.proc.pid as number);
    scc.kill('SIGSTOP');
    // More records than the SCC's credit window and the socket buffers hold (about 50 MB of
    // messages) while the SCC takes nothing. The warm-up batches are closed, so the stopped SCC holds
    // no open batch whose timeout could fire when it resumes.
    const flood = flowsAt(1720000000 + 3600, 250_000, 1000);
    await produce(e.client, topic, flood);
    const read = async (): Promise<number> => (await stage(ing.obs, 'received', 'source')) ?? 0;
    let last = -1;
    await waitFor(async () => {
      const now = await read();
      const still = now === last;
      last = now;
      if (!still) await new Promise((r) => setTimeout(r, 1000));
      return still;
    }, 'the source to stop reading', ing.proc.output);
    assert.ok(last < warm.length + flood.length * 0.9, `read ${last} of ${warm.length + flood.length} while the SCC was stopped`);
    const lag = await groupProgress(e.client, `g-${topic}`, topic);
    assert.ok(lag.end - lag.committed >= flood.length * 0.1, `lag ${lag.end - lag.committed}`);
    const grown = rss(ing.proc.proc.pid as number) - before;
    assert.ok(grown < 64 * 1024 * 1024, `ingester memory grew by ${grown} bytes while ${flood.length - last} messages waited in Kafka`);
  } catch (err) {
    scc.kill('SIGCONT');
    await ing.proc.stop();
    await own.stop();
    throw err;
  }
  scc.kill('SIGCONT');
  try {
    await waitFor(async () => (await stage(ing.obs, 'sent', 'scc')) === 250_600, 'everything durable after the SCC resumed', ing.proc.output, 300_000);
    await waitFor(async () => {
      const p = await groupProgress(e.client, `g-${topic}`, topic);
      return p.committed === p.end;
    }, 'offsets committed to the end', ing.proc.output);
  } finally {
    const code = await ing.proc.stop();
    await own.stop();
    assert.is(code, 0, ing.proc.output());
  }
});

kafka('kill -9 mid-stream: every committed message is durable; the restart re-reads from the commit; nothing is stored twice, and what the SCC refuses is counted', async () => {
  if (!env) return;
  const e = env;
  const topic = `flows${++topicNo}`;
  await createTopic(e.client, topic, 1);
  const all = flowsAt(1730000000, 6000);
  await produce(e.client, topic, all);
  let ing = await ingester(topic);
  await waitFor(async () => (await groupProgress(e.client, `g-${topic}`, topic)).committed >= 1200, 'a first commit', ing.proc.output);
  await ing.proc.kill9();
  const committed = (await groupProgress(e.client, `g-${topic}`, topic)).committed;
  const stored = new Set(await storedRecords(e.cluster.sns[0], 'flows', RS));
  for (const h of await expected(all.slice(0, committed))) assert.ok(stored.has(h), 'a committed message is durable');
  // The SCC settles the batch the killed ingester left open (its BATCH_TIMEOUT_MS) before the restart.
  await new Promise((r) => setTimeout(r, 1500));
  ing = await ingester(topic);
  try {
    await waitFor(async () => {
      const p = await groupProgress(e.client, `g-${topic}`, topic);
      return p.committed === p.end;
    }, 'offsets committed to the end after the restart', ing.proc.output);
    assert.is(await stage(ing.obs, 'received', 'source'), all.length - committed, 'the restart read from the last commit');
    const after = await storedRecords(e.cluster.sns[0], 'flows', RS);
    const mine = new Set(await expected(all));
    const ours = after.filter((h) => mine.has(h));
    assert.is(new Set(ours).size, ours.length, 'no record is stored twice');
    const missing = all.length - ours.length;
    assert.ok(((await stage(ing.obs, 'dropped', 'scc')) ?? 0) >= missing, `${missing} records missing, each counted dropped by the sink`);
  } catch (err) {
    process.stderr.write(ing.proc.output());
    throw err;
  } finally {
    await ing.proc.stop();
  }
});

kafka.run();
