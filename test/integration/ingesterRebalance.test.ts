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
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createTopic, foreignMember, expectedHexes as expected, FLOWS, flowsAt as flows, groupProgress, metric, produce, startIngesterEnv, startKafkaIngester, stopIngesterEnv, storedRecords, waitFor, type IngesterEnv, type KafkaIngester } from './ingesterKit';
import { filesOn } from './ingestKit';

const RS = FLOWS.recordSize;

let env: IngesterEnv | undefined;
/** Every record the tests of this file produced so far (they share the Storage Node). */
let storedSoFar: string[] = [];

const ingester = (topic: string, timeoutMs: number): Promise<KafkaIngester> =>
  startKafkaIngester(env as IngesterEnv, topic, { MAX_OPEN_BATCHES: '16', BATCH_TIMEOUT_MS: String(timeoutMs), COMMIT_INTERVAL_MS: '200' });

const rebalance = suite('ingester through consumer-group rebalances (real Kafka, SCC, Storage Node)');
rebalance.before(async () => {
  env = await startIngesterEnv('hd-rebalance-');
});
rebalance.after(() => stopIngesterEnv(env));

/**
 * The reproduction of docs/ingester.md: 3 000 flows in two halves on 2 partitions. After the first
 * half is committed, the first window of the second half is produced and read (with a long batch
 * timeout it is still open when the group rebalances); a foreign consumer takes a partition, the
 * rest of the second half is produced, the foreign consumer reads 2 s without committing and
 * leaves. The halves and the two parts of the second lie in windows of their own, so no record is
 * late for a reason other than the rebalances.
 */
async function throughRebalance(topic: string, timeoutMs: number, start: number): Promise<void> {
  const e = env as IngesterEnv;
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
  const foreign = foreignMember(e.client, `g-${topic}`, topic);
  try {
    await waitFor(async () => (await groupProgress(e.client, `g-${topic}`, topic)).committed === half, 'the first half committed', ing.proc.output);
    await produce(e.client, topic, secondA, 2);
    await waitFor(async () => (await metric(ing.obs, 'hd_stage_received_total', { stage: 'scc' })) === half + secondA.length, 'the first window of the second half sent', ing.proc.output);

    // A foreign member joins: once it has its assignment, the ingester has rejoined too (the
    // group's sync waits for every member).
    await foreign.join();
    await waitFor(() => foreign.assigned().length === 1, 'the foreign consumer holds one of the two partitions', ing.proc.output);

    await produce(e.client, topic, secondB, 2);
    await waitFor(() => foreign.read() > 0, 'the foreign consumer reads its partition', ing.proc.output);
    await new Promise((r) => setTimeout(r, 2000));
    await foreign.disconnect();
    assert.ok(foreign.read() >= secondB.length / 2, `the foreign consumer read its partition's part of the second half (${foreign.read()})`);
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
