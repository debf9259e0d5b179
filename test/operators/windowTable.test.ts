import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdTime } from '../../engine-rs/batchId';
import { WindowTable } from '../../operators/windowTable';

// timeBatch's window table alone: synchronous, no RxJS, no timers.
const t = suite('WindowTable');
t('admit opens a window per start with its time-form batch id; the same start reuses it', () => {
  const table = new WindowTable(60, 2);
  const a = table.admit(0);
  assert.ok(!a.late && a.evicted === undefined);
  const w = !a.late ? a.window : undefined;
  assert.ok(w && w.id.equals(generateBatchIdTime(0, 60, 60)));
  const again = table.admit(0);
  assert.ok(!again.late && again.window === w);
  assert.is(table.size, 1);
});
t('opening one window more than maxOpen evicts the oldest, and everything below it is late from then on', () => {
  const table = new WindowTable(60, 2);
  table.admit(120);
  table.admit(60);
  const a = table.admit(180);
  assert.ok(!a.late && a.evicted?.windowStart === 60);
  assert.is(table.size, 2);
  assert.ok(table.admit(60).late, 'the evicted window is closed');
  assert.ok(table.admit(0).late, 'older windows too');
  assert.not.ok(table.admit(120).late);
});
t('close marks one window closed (a timeout): its records are late, other windows stay open', () => {
  const table = new WindowTable(10, 5);
  const a = table.admit(10);
  const w = !a.late ? a.window : undefined;
  table.admit(20);
  table.close(w as NonNullable<typeof w>);
  assert.not.ok(table.isOpen(w as NonNullable<typeof w>));
  assert.ok(table.admit(10).late);
  assert.not.ok(table.admit(20).late);
  assert.not.ok(table.admit(0).late, 'a window below one a timeout closed is still open to records');
});
t('closeAll returns the open windows oldest first and closes them', () => {
  const table = new WindowTable(10, 5);
  for (const s of [30, 10, 20]) table.admit(s);
  assert.equal(table.closeAll().map((w) => w.windowStart), [10, 20, 30]);
  assert.is(table.size, 0);
  assert.ok(table.admit(20).late);
});
t('rewind removes the open windows oldest first without closing them: the same ids open again', () => {
  const table = new WindowTable(10, 5);
  for (const s of [20, 10]) {
    const a = table.admit(s);
    if (!a.late) a.window.count += 3;
  }
  const gone = table.rewind();
  assert.equal(gone.map((w) => [w.windowStart, w.count]), [[10, 3], [20, 3]]);
  assert.is(table.size, 0);
  const again = table.admit(10);
  assert.ok(!again.late && again.window.count === 0 && again.window.id.equals(gone[0].id));
});
t('a new window older than every open one is itself the one evicted', () => {
  const table = new WindowTable(10, 1);
  table.admit(50);
  const a = table.admit(40);
  assert.ok(!a.late && a.evicted === a.window, 'the oldest by start is the new one: evicted at once');
  assert.ok(table.admit(40).late);
  assert.not.ok(table.admit(50).late, 'the newer window stays open');
});
t.run();
