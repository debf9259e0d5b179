import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BoundedMap } from '../../lib/boundedMap';

const t = suite('BoundedMap');

t('keeps at most max entries, dropping the oldest; setting a key again makes it the newest', () => {
  const m = new BoundedMap<string, number>(2);
  m.set('a', 1).set('b', 2).set('c', 3);
  assert.equal([...m.keys()], ['b', 'c']);
  m.set('b', 20);
  m.set('d', 4);
  assert.equal([...m.entries()], [['b', 20], ['d', 4]]);
});

t('touch reads as least-recently-used: the touched key survives the next eviction', () => {
  const m = new BoundedMap<string, number>(2);
  m.set('a', 1).set('b', 2);
  assert.is(m.touch('a'), 1);
  assert.is(m.touch('zz'), undefined);
  m.set('c', 3);
  assert.equal([...m.keys()], ['a', 'c']);
  // get() does not reorder.
  m.get('a');
  m.set('d', 4);
  assert.equal([...m.keys()], ['c', 'd']);
});

t('a bound below 1 is refused', () => {
  assert.throws(() => new BoundedMap(0), /max must be an integer ≥ 1, got 0/);
  assert.throws(() => new BoundedMap(1.5), /got 1.5/);
});

t.run();
