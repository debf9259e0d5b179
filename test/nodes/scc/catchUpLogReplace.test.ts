/**
 * The SCC's catch-up log under batch replace (nodes/scc/catchUpLog.ts, docs/scc.md "Batch
 * replace"): a batch that ended with a bbn and is sent again gets a new entry, owed to every
 * replica that was owed the old one; a batch that ended with an eob is never replaced.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import { CatchUpLog } from '../../../nodes/scc/catchUpLog';

const id = generateBatchIdNumber(42);
const log = suite('catch-up log: batch replace');

log('a batch discarded by bbn and sent again is a new entry: old records gone, bytes accounted, still owed to a replica that missed the bbn', () => {
  const l = new CatchUpLog({ maxBytes: 1 << 20 });
  const old = l.open('ds', id, 4, ['sn1', 'sn2']);
  l.append(old, Buffer.alloc(40, 1));
  l.end(old, { kind: 'bbn', reason: 'ingester: sending the batch afresh' });
  l.done(old, 'sn1'); // sn2 (down) has not seen the bbn
  assert.is(l.get('ds', id), old);
  const fresh = l.open('ds', id, 4, ['sn1']);
  assert.is.not(fresh, old);
  assert.is(fresh.end, undefined);
  assert.equal(fresh.chunks, []);
  assert.equal([...fresh.waitingFor].sort(), ['sn1', 'sn2'], 'the replica owed the bbn is owed the new batch (its catch-up starts with a bbn)');
  assert.is(l.bytes, 0, "the old copy's records are no longer held");
  l.append(fresh, Buffer.alloc(8, 2));
  assert.is(l.bytes, 8);
  assert.is(l.size, 1);
  // The old entry's late acknowledgement does not drop the new one.
  l.done(old, 'sn2');
  assert.is(l.get('ds', id), fresh);
  l.end(fresh, { kind: 'eob', recordCount: 2 });
  l.done(fresh, 'sn1');
  l.done(fresh, 'sn2');
  assert.is(l.size, 0);
  assert.is(l.bytes, 0);
});

log('an open batch or one that ended with an eob is returned as it is (never replaced)', () => {
  const l = new CatchUpLog({ maxBytes: 1 << 20 });
  const b = l.open('ds', id, 4, ['sn1']);
  assert.is(l.open('ds', id, 4, ['sn1']), b);
  l.end(b, { kind: 'eob', recordCount: 0 });
  l.done(b, 'sn1');
  assert.is(l.size, 0);
  const c = l.open('ds', id, 4, ['sn1', 'sn2']);
  l.end(c, { kind: 'eob', recordCount: 0 });
  l.done(c, 'sn1');
  assert.is(l.open('ds', id, 4, ['sn1']), c, 'still waited for by sn2: the same entry');
});

log.run();
