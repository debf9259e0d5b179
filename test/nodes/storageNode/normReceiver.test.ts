/**
 * The Storage Node's NORM gate (nodes/storageNode/normReceiver.ts) with a real NORM sender and
 * receiver on a multicast group over loopback: group records are merged in before the TCP eob they
 * belong to; a TCP eob whose batch the group never delivers is answered with a batch mismatch; a
 * batch TCP took over (bbn first) ignores the group's copy, and its eob is a mismatch when the group
 * sent records of it (TCP may hold only part), so the SCC resends it whole over TCP.
 */
import { Subject } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES } from '../../../engine-rs/hdwpFrame';
import { NormSender } from '../../../engine-rs/norm';
import { NormReplication } from '../../../nodes/scc/normReplication';
import { normIngest } from '../../../nodes/storageNode/normReceiver';
import { recordChunk, type AckResult, type BatchedRecordChunk, type ControlElement } from '../../../stream/chunk';

const RS = 10;
const PORT = 21000 + (process.pid % 2000);
const GROUP = '239.192.0.99';
type El = BatchedRecordChunk | ControlElement;

function gate(eobWaitMs: number, port = PORT): { input: Subject<El>; out: El[]; reports: string[]; stop: () => void } {
  const input = new Subject<El>();
  const out: El[] = [];
  const reports: string[] = [];
  const sub = normIngest({ receiver: { address: GROUP, port, nodeId: 7, interface: 'lo' }, eobWaitMs, report: (m) => reports.push(m) })(input).subscribe({ next: (e) => out.push(e) });
  return { input, out, reports, stop: () => sub.unsubscribe() };
}
const until = async (f: () => boolean, ms = 10_000): Promise<void> => {
  for (const end = Date.now() + ms; !f() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
};

const t = suite('normIngest: a Storage Node merging the NORM group with its TCP stream');
t('group records reach the store before the TCP eob, which waits for the group; an undelivered batch is a mismatch; TCP takes a batch over', async () => {
  const g = gate(300);
  await new Promise((r) => setTimeout(r, 300)); // joined before the sender starts
  const scc = new NormReplication({ group: GROUP, port: PORT, interface: 'lo', segmentSize: 1200, txRateBps: 50e6 });
  try {
    const b1 = generateBatchIdNumber(1);
    const data = Buffer.alloc(500 * RS, 3);
    let ack1: AckResult | undefined;
    // The TCP eob comes first here: it waits for the group's copy.
    g.input.next({ kind: 'eob', dataset: 'ds', batchId: b1, recordCount: 500, ack: (r) => (ack1 = r) });
    await scc.records('ds', b1, RS, data);
    await scc.eob('ds', b1, 500);
    await until(() => g.out.some((e) => e.kind === 'eob'));
    const kinds = g.out.map((e) => e.kind);
    assert.is(kinds[kinds.length - 1], 'eob', 'the eob follows the records');
    const got = Buffer.concat(g.out.filter((e): e is BatchedRecordChunk => e.kind === 'records').map((e) => e.buf));
    assert.ok(got.equals(data), "the group's records are the batch's");
    assert.is(ack1, undefined, 'the store answers the eob, not the gate');

    // Never sent on the group: answered with a batch mismatch after eob_wait_ms, nothing passed on.
    const b2 = generateBatchIdNumber(2);
    let ack2: AckResult | undefined;
    const before = g.out.length;
    g.input.next({ kind: 'eob', dataset: 'ds', batchId: b2, recordCount: 5, ack: (r) => (ack2 = r) });
    await until(() => ack2 !== undefined);
    assert.equal(ack2 && !ack2.ok && ack2.code, HDWP_ERROR_FRAME_CODES.batchMismatch);
    assert.match(ack2 && !ack2.ok ? ack2.message : '', /did not deliver this batch within 300 ms; send the batch over TCP/);
    assert.is(g.out.length, before);

    // TCP took batch 3 over while it was open (a catch-up: bbn, then what the SCC's log held): the
    // group's records of it are dropped, so TCP may hold only part of it and its TCP eob is a
    // mismatch; the SCC then resends it whole over TCP (bbn, records, eob), which passes at once.
    const b3 = generateBatchIdNumber(3);
    g.input.next({ kind: 'bbn', dataset: 'ds', batchId: b3, reason: 'SCC catch-up: replacing a partial copy' });
    const head = Buffer.alloc(5 * RS, 8);
    g.input.next(recordChunk('ds', RS, 5, head, b3) as BatchedRecordChunk);
    await scc.records('ds', b3, RS, Buffer.alloc(20 * RS, 9));
    await scc.eob('ds', b3, 25);
    await new Promise((r) => setTimeout(r, 300));
    assert.not.ok(g.out.some((e) => e.kind === 'records' && e.batchId.equals(b3) && e.buf[0] === 9), "the group's records of a batch TCP carries are dropped");
    let ack3: AckResult | undefined;
    g.input.next({ kind: 'eob', dataset: 'ds', batchId: b3, recordCount: 25, ack: (r) => (ack3 = r) });
    assert.equal(ack3 && !ack3.ok && ack3.code, HDWP_ERROR_FRAME_CODES.batchMismatch);
    assert.match(ack3 && !ack3.ok ? ack3.message : '', /went to the multicast group while TCP carried the rest \(a catch-up began while it was open\); send the batch over TCP/);
    g.input.next({ kind: 'bbn', dataset: 'ds', batchId: b3, reason: 'SCC: resending over TCP what the multicast group lost' });
    g.input.next(recordChunk('ds', RS, 25, Buffer.alloc(25 * RS, 7), b3) as BatchedRecordChunk);
    g.input.next({ kind: 'eob', dataset: 'ds', batchId: b3, recordCount: 25 });
    assert.is(g.out[g.out.length - 1].kind, 'eob', "the resent batch's eob passes");
    assert.ok(scc.health().bytes_sent as number > data.length);
  } finally {
    scc.close();
    g.stop();
  }
});
t('bytes on the group that are no replication stream count as lost: a waiting eob is answered with a mismatch at once', async () => {
  const g = gate(60_000, PORT + 1);
  await new Promise((r) => setTimeout(r, 300));
  const stranger = new NormSender({ address: GROUP, port: PORT + 1, nodeId: 1, interface: 'lo', segmentSize: 1200, txRateBps: 10e6 });
  try {
    let ack: AckResult | undefined;
    g.input.next({ kind: 'eob', dataset: 'ds', batchId: generateBatchIdNumber(9), recordCount: 1, ack: (r) => (ack = r) });
    await stranger.writeMessage(Buffer.from([0xff, 0xff, 0xff, 0xff, 1, 2, 3]), true);
    await until(() => ack !== undefined);
    assert.equal(ack && !ack.ok && ack.code, HDWP_ERROR_FRAME_CODES.batchMismatch);
    assert.match(ack && !ack.ok ? ack.message : '', /lost on the multicast group beyond repair/);
    assert.ok(g.reports.some((m) => /not an HD replication stream/.test(m)), g.reports.join('\n'));
  } finally {
    stranger.close();
    g.stop();
  }
});
t.run();
