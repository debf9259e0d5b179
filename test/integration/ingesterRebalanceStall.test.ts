/**
 * A rebalance in the middle of a stream (docs/ingester.md, "Rebalances"), with real components: a
 * 2-partition Kafka topic, `hd run pipelines/ingester.yaml`, an SCC and a Storage Node. The SCC is
 * stopped (SIGSTOP) while the ingester sends a backlog, so the ingester waits mid-batch with windows
 * half sent; a foreign consumer joins the group meanwhile. When the SCC resumes the ingester rejoins,
 * discards its open windows and reads again from the commit; the foreign consumer reads 2 s and
 * leaves, and the same happens once more. Every record is stored exactly once.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createTopic, foreignMember, expectedHexes as expected, FLOWS, flowsAt, groupProgress, produce, stageCounter, startIngesterEnv, startKafkaIngester, stopIngesterEnv, storedRecords, waitFor, type IngesterEnv } from './ingesterKit';
import { filesOn } from './ingestKit';

const RS = FLOWS.recordSize;

let env: IngesterEnv | undefined;

const stall = suite('ingester: a rebalance while the SCC is stopped mid-stream (real Kafka, SCC, Storage Node)');
stall.before(async () => {
  // The SCC's batch timeout outlasts the stop, so the ingester's half-sent windows stay open there.
  env = await startIngesterEnv('hd-rebalance-stall-', { sccEnv: { BATCH_TIMEOUT_MS: '120000', TIMEOUT_ACTION: 'EOB' } });
});
stall.after(() => stopIngesterEnv(env));

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

  const { proc: ing, obs } = await startKafkaIngester(e, topic, { MAX_OPEN_BATCHES: '16', BATCH_TIMEOUT_MS: '8000', COMMIT_INTERVAL_MS: '200' });
  const stage = async (counter: string, id: string): Promise<number> => (await stageCounter(obs, counter, id)) ?? 0;
  const scc = e.cluster.scc.proc.proc;
  const foreign = foreignMember(e.client, group, topic);
  let resumed = false;
  try {
    await produce(e.client, topic, warm, 2);
    await waitFor(async () => (await stage('received', 'scc')) === warm.length, 'the warm-up handed to the SCC (stream open)', ing.output);
    scc.kill('SIGSTOP');
    await produce(e.client, topic, flood, 2);
    await waitFor(async () => (await stage('received', 'scc')) > warm.length, 'the ingester sending the backlog to the stopped SCC', ing.output);

    await foreign.join();
    // The ingester learns of the rebalance by its heartbeat while it waits for the SCC.
    await new Promise((r) => setTimeout(r, 4000));
    scc.kill('SIGCONT');
    resumed = true;
    await waitFor(() => foreign.assigned().length === 1, 'the foreign consumer holds one of the two partitions', ing.output);
    await waitFor(() => foreign.read() > 0, 'the foreign consumer reads', ing.output);
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
