import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwpFrame';
import { readBatchStateRefusal } from '../../hdwp/refusals';
import { BatchStateTable, type BatchState } from '../../operators/batchStateTable';

// The SCC's batch state table alone: synchronous, no RxJS, no timers, no sockets.
const b1 = generateBatchIdNumber(1);
const b2 = generateBatchIdNumber(2);
const b3 = generateBatchIdNumber(3);
const withLog = (o: { maxOpenBatches?: number; rememberClosed?: number } = {}) => {
  const log: string[] = [];
  const table = new BatchStateTable({ ...o, onTransition: (id, ds, to: BatchState, why) => log.push(`${ds}/${id.toString().replace(/^0+/, '')} ${to}: ${why}`) });
  return { table, log };
};

const t = suite('BatchStateTable');
t('records open a batch and count; its eob closes it and is forwarded', () => {
  const { table, log } = withLog();
  const r = table.records('ds', b1, 10);
  assert.ok(r.accepted);
  assert.ok(table.records('ds', b1, 5).accepted);
  const v = table.eob('ds', b1);
  assert.is(v.action, 'forward');
  assert.is(v.entry.count, 15);
  assert.is(v.entry.state, 'closed');
  assert.equal(log, ['ds/1 open: first element', 'ds/1 closed: closed by its eob']);
  assert.equal([...table.openBatches()], []);
});
t('batch ids are per dataset', () => {
  const { table } = withLog();
  table.records('a', b1, 1);
  table.records('b', b1, 2);
  assert.is(table.eob('a', b1).entry.count, 1);
  assert.is(table.eob('b', b1).entry.count, 2);
});
t('a closed batch refuses records, a second eob and a bbn; the refusal names what it holds (code 1)', () => {
  const { table } = withLog();
  table.records('ds', b1, 500);
  table.eob('ds', b1);
  const late = table.records('ds', b1, 3);
  assert.not.ok(late.accepted);
  assert.ok(!late.accepted && /3 records for batch 0*1 of 'ds' refused: the batch is closed \(closed by its eob\)/.test(late.message));
  for (const v of [table.eob('ds', b1), table.bbn('ds', b1, 'resend')]) {
    assert.is(v.action, 'refuse');
    if (v.action !== 'refuse') continue;
    assert.is(v.code, HDWP_ERROR_FRAME_CODES.protocol);
    assert.match(v.message, /is closed \(closed by its eob\); its (eob|bbn) is refused; the batch holds 500 records/);
    assert.equal(readBatchStateRefusal(v.code, v.message), { state: 'closed', cause: 'eob', holds: 500 });
  }
});
t('bbn: discards an open batch (forward), then is idempotent (ack); a bbn for a batch never seen is acknowledged', () => {
  const { table, log } = withLog();
  table.records('ds', b1, 4);
  assert.is(table.bbn('ds', b1, 'bad').action, 'forward');
  assert.is(table.bbn('ds', b1, 'again').action, 'ack');
  const unseen = table.bbn('ds', b2, 'never sent');
  assert.is(unseen.action, 'ack');
  assert.is(unseen.entry.state, 'discarded');
  assert.equal(log.slice(1), ['ds/1 discarded: discarded by its bbn: bad', 'ds/2 discarded: discarded by its bbn: never sent']);
});
t('batch replace: after a bbn, the same id opens afresh with its count from zero', () => {
  const { table, log } = withLog();
  table.records('ds', b1, 30);
  table.bbn('ds', b1, 'restart');
  assert.ok(table.records('ds', b1, 7).accepted);
  const v = table.eob('ds', b1);
  assert.is(v.action, 'forward');
  assert.is(v.entry.count, 7);
  assert.ok(log.includes('ds/1 open: sent again after its bbn (batch replaced)'));
});
t('the timeout: expire closes or discards an open batch, code 5 on later refusals; nothing for a batch no longer open', () => {
  const { table } = withLog();
  const e = table.records('ds', b1, 2).entry;
  assert.ok(table.expire(e, 'eob', 'no activity for 10 ms'));
  assert.not.ok(table.expire(e, 'eob', 'again'), 'a closed batch does not expire twice');
  const v = table.eob('ds', b1);
  assert.ok(v.action === 'refuse' && v.code === HDWP_ERROR_FRAME_CODES.timeout);
  assert.ok(v.action === 'refuse' && /is closed \(closed by the batch timeout: no activity for 10 ms\)/.test(v.message));
  const d = table.records('ds', b2, 1).entry;
  assert.ok(table.expire(d, 'bbn', 'idle'));
  const w = table.eob('ds', b2);
  assert.ok(w.action === 'refuse' && w.code === HDWP_ERROR_FRAME_CODES.timeout);
  assert.equal(w.action === 'refuse' && readBatchStateRefusal(w.code, w.message), { state: 'discarded', cause: 'timeout' });
});
t('an eob refused downstream turns the closed batch discarded, so a bbn makes it replaceable', () => {
  const { table, log } = withLog();
  table.records('ds', b1, 3);
  const e = table.eob('ds', b1).entry;
  table.eobAnswered(e, { ok: false, code: HDWP_ERROR_FRAME_CODES.batchMismatch, message: 'count differs' });
  assert.is(e.state, 'discarded');
  assert.is(log[log.length - 1], 'ds/1 discarded: its eob was refused: count differs');
  assert.is(table.bbn('ds', b1, 'resend').action, 'ack');
  assert.ok(table.records('ds', b1, 3).accepted);
  table.eobAnswered(table.eob('ds', b1).entry, { ok: true });
  assert.is(table.eob('ds', b1).action, 'refuse', 'an acknowledged eob leaves the batch closed');
});
t('maxOpenBatches: the batch past the limit is refused as a whole (discarded, code 1)', () => {
  const { table } = withLog({ maxOpenBatches: 2 });
  table.records('ds', b1, 1);
  table.records('ds', b2, 1);
  const r = table.records('ds', b3, 1);
  assert.not.ok(r.accepted);
  const v = table.eob('ds', b3);
  assert.ok(v.action === 'refuse' && v.code === HDWP_ERROR_FRAME_CODES.protocol && /is discarded \(refused: 2 batches are open already\)/.test(v.message));
  assert.is([...table.openBatches()].length, 2);
});
t('rememberClosed: the oldest ended batch is forgotten first (its id may open again)', () => {
  const { table } = withLog({ rememberClosed: 1 });
  table.records('ds', b1, 1);
  table.eob('ds', b1);
  table.records('ds', b2, 1);
  table.eob('ds', b2);
  assert.ok(table.records('ds', b1, 1).accepted, 'batch 1 was forgotten');
  assert.not.ok(table.records('ds', b2, 1).accepted, 'batch 2 is still remembered');
});
t('clear forgets every row', () => {
  const { table } = withLog();
  table.records('ds', b1, 1);
  table.eob('ds', b2);
  table.clear();
  assert.equal([...table.openBatches()], []);
  assert.is(table.eob('ds', b2).action, 'forward');
});
t.run();
