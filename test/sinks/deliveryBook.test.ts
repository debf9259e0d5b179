import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../engine-rs/batchId';
import { DeliveryBook } from '../../sinks/deliveryBook';

// sccSink's delivery bookkeeping alone: no RxJS, no sockets.
const b1 = generateBatchIdNumber(1);
const b2 = generateBatchIdNumber(2);
const settledNow = async (p: Promise<void>): Promise<'resolved' | 'rejected' | 'pending'> => {
  let state: 'resolved' | 'rejected' | 'pending' = 'pending';
  p.then(
    () => (state = 'resolved'),
    () => (state = 'rejected'),
  );
  await new Promise((r) => setImmediate(r));
  return state;
};

const t = suite('DeliveryBook');
t('records add up per batch; the first records of a copy say so', () => {
  const book = new DeliveryBook();
  const a = book.records('ds', b1, 10, 1500);
  const b = book.records('ds', b1, 5, 750);
  assert.ok(a.first);
  assert.not.ok(b.first);
  assert.is(a.batch, b.batch);
  assert.equal([b.batch.records, b.batch.bytes], [15, 2250]);
  assert.ok(book.records('other', b1, 1, 150).first, 'batch ids are per dataset');
  assert.is(book.pending, 2);
});
t('close moves the batch to closing; records of the same id after it are a new copy', () => {
  const book = new DeliveryBook();
  const first = book.records('ds', b1, 3, 30).batch;
  assert.is(book.close('ds', b1), first);
  assert.is(book.current('ds', b1), undefined);
  const again = book.records('ds', b1, 4, 40);
  assert.ok(again.first);
  assert.is.not(again.batch, first);
  assert.is(book.pending, 2);
  book.forget(first);
  assert.is(book.pending, 1);
});
t('closing a batch with no records gives an empty one that still settles', async () => {
  const book = new DeliveryBook();
  const b = book.close('ds', b2);
  assert.equal([b.records, b.bytes], [0, 0]);
  book.settle(b);
  assert.is(await settledNow(b.settled), 'resolved');
});
t('durableNow waits for every batch pending at the time, and fails when one failed', async () => {
  const book = new DeliveryBook();
  const x = book.records('ds', b1, 1, 10).batch;
  const y = book.close('ds', b2);
  const check = book.durableNow();
  book.close('ds', b1);
  book.settle(x);
  assert.is(await settledNow(check), 'pending');
  book.settle(y);
  assert.is(await settledNow(check), 'resolved');
  const z = book.records('ds', b2, 1, 10).batch;
  const failing = book.durableNow();
  book.settle(z, new Error('refused'));
  assert.is(await settledNow(failing), 'rejected');
});
t('abandon rejects everything pending and returns the records they held', async () => {
  const book = new DeliveryBook();
  const x = book.records('ds', b1, 7, 70).batch;
  book.close('ds', b1);
  const y = book.records('ds', b2, 5, 50).batch;
  assert.is(book.abandon('stopped'), 12);
  assert.is(book.pending, 0);
  assert.equal([await settledNow(x.settled), await settledNow(y.settled)], ['rejected', 'rejected']);
  assert.is(book.abandon('again'), 0);
});
t.run();
