/**
 * Issue 9's crash test with real components: a Kafka broker (scripts/kafka.sh), `hd run
 * pipelines/ingester.yaml` as a process, an SCC and a Storage Node (test/support/cluster.ts). The
 * ingester is killed with SIGKILL while time windows are half sent to the SCC (open there and on the
 * Storage Node), then restarted: every message lands exactly once. The restart sends each batch
 * with a bbn first (batch replace, docs/ingester.md), so the half-sent copies are dropped and the
 * batches sent again whole; records of a batch that was durable but not yet committed are refused
 * by the SCC as duplicates and counted dropped — bounded by what was read after the last commit.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createTopic, expectedHexes as expected, FLOWS, flowsAt, groupProgress, produce, stageCounter as stage, startIngesterEnv, startKafkaIngester, stopIngesterEnv, storedRecords, waitFor, type IngesterEnv, type KafkaIngester } from './ingesterKit';
import { filesOn } from './ingestKit';

const RS = FLOWS.recordSize;

/** Start of a 60 s window (the flows schema's interval). */
const T0 = 1_740_000_000;
/** Lines per window: 10 flows per second of event time. */
const PER_WINDOW = 600;

let env: IngesterEnv | undefined;

const ingester = (topic: string): Promise<KafkaIngester> =>
  startKafkaIngester(env as IngesterEnv, topic, {
    // Windows close only when a newer one evicts them (or at SIGTERM), never on idleness: the
    // windows open when the ingester is killed are known exactly.
    BATCH_TIMEOUT_MS: '600000',
    MAX_OPEN_BATCHES: '2',
    COMMIT_INTERVAL_MS: '200',
  });

const crash = suite('ingester killed with SIGKILL mid-stream and restarted (real Kafka, SCC, Storage Node)');
crash.before(async () => {
  // The SCC's default batch timeout (60 s) keeps the killed ingester's half-sent batches open.
  env = await startIngesterEnv('hd-crash-');
});
crash.after(() => stopIngesterEnv(env));

crash('SIGKILL with two windows half sent, restart: every message stored exactly once; duplicates refused by the SCC, at most what was read after the commit', async () => {
  if (!env) return;
  const e = env;
  const topic = 'crash1';
  await createTopic(e.client, topic, 1);
  const M = 3000;
  const all = flowsAt(T0, M);
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
