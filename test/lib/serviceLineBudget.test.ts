/** ServiceLineBudget (lib/logging/serviceLineBudget.ts): lines per service per minute, the rest counted and said when the minute ends. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ServiceLineBudget } from '../../lib/logging/serviceLineBudget';

test('a service prints up to its budget a minute, the rest is said once the minute is over; services are apart', () => {
  const said: [string, number][] = [];
  const b = new ServiceLineBudget(3, (id, n) => said.push([id, n]));
  const t0 = 1_000_000;
  assert.equal([1, 2, 3, 4, 5].map((i) => b.take('scc', t0 + i)), [true, true, true, false, false]);
  assert.ok(b.take('sn1', t0 + 6), 'another service has its own budget');
  assert.equal(said, []);
  // The next minute: the two suppressed lines are said, and lines print again.
  assert.ok(b.take('scc', t0 + 60_001));
  assert.equal(said, [['scc', 2]]);
  // A minute without suppressed lines says nothing.
  assert.ok(b.take('sn1', t0 + 120_000));
  assert.equal(said, [['scc', 2]]);
});

test.run();
