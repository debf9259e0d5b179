/**
 * `sccSink` when a window is rewound at a rebalance (docs/ingester.md, "Rebalances"), against a
 * real SCC and Storage Node (test/support/cluster.ts): records of a batch, its bbn, then the batch
 * sent again under the same id and closed by its eob. The Storage Node holds exactly the second
 * copy, and a checkpoint taken after the second copy's records waits for its eob's acknowledgement
 * even though the first copy's bbn was answered first.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Subject } from 'rxjs';
import type { Chunk } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import { StageCounters } from '../../stream/stageCounters';
import { sccSink } from '../../sinks/sccSink';
import type { DurabilityTracker } from '../../stream/deliveryLedger';
import { REWIND_REASON } from '../../operators/windowRewind';
import { startCluster, type Cluster } from '../support/cluster';
import { batch, closingHashOf, filesOn, recordsOf, RS, sleep, until, verifiedClosingHash } from './ingestKit';

const DS = 'flows';
let cluster: Cluster;

const s = suite('sccSink: a batch discarded at a rebalance and sent again (real SCC + Storage Node)');
s.before(async () => {
  cluster = await startCluster({ storageNodes: 1, recordSize: RS });
});
s.after(async () => {
  await cluster?.stop();
});

s('bbn then the same batch id again: the second copy is stored alone, and checkpoints wait for its eob', async () => {
  const id = batch(7);
  const first = recordsOf(300, 1);
  const second = recordsOf(500, 2);
  const input = new Subject<Chunk>();
  const counters = new StageCounters('records');
  const flow = new Flow();
  const reports: string[] = [];
  let tracker: DurabilityTracker | undefined;
  let done = false;
  const sub = sccSink({ targets: [{ host: cluster.host, port: cluster.scc.productionPort }], flow, counters, report: (m) => reports.push(m), onTracker: (t) => (tracker = t) })(input).subscribe({
    complete: () => (done = true),
    error: (e: unknown) => assert.unreachable(String(e)),
  });
  const records = (buf: Buffer): Chunk => ({ kind: 'records', dataset: DS, batchId: id, count: buf.length / RS, recordSize: RS, buf });
  input.next(records(first));
  await until(() => filesOn(cluster.sns[0], DS).partials.length === 1);
  input.next({ kind: 'bbn', dataset: DS, batchId: id, reason: `${REWIND_REASON} (generation 2)`, cause: 'rewind' });
  input.next(records(second));
  await flow.whenAtMost(0);
  let durable = false;
  const checkpoint = (tracker as DurabilityTracker).durableNow().then(() => (durable = true));
  // The bbn is answered long before this (its records counted dropped): the checkpoint still waits for the second copy.
  await until(() => counters.dropped === 300);
  await sleep(200);
  assert.not.ok(durable, 'the second copy is not durable before its eob');
  input.next({ kind: 'eob', dataset: DS, batchId: id, recordCount: 500 });
  await checkpoint;
  input.complete();
  await until(() => done);
  sub.unsubscribe();
  assert.equal({ sent: counters.sent, dropped: counters.dropped, received: counters.received }, { sent: 500, dropped: 300, received: 800 });
  assert.equal(reports, [], 'a window discarded at a rebalance is not reported by the sink (the source reports the rebalance)');
  const sn = cluster.sns[0];
  assert.equal(filesOn(sn, DS), { segments: [`${id.toHex()}.hdseg`], partials: [] }, 'one segment, no partial left');
  assert.ok((await verifiedClosingHash(sn, DS, id)).equals(await closingHashOf(id, second)), 'the Storage Node holds exactly the second copy');
});

s.run();
