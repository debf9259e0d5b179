/**
 * corkForTick (hdwp/tickCork.ts): writes of one tick stay corked until the tick ends, then leave
 * together and in order; a later tick corks afresh.
 */
import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { corkForTick } from '../../hdwp/tickCork';

test('writes of one tick are held until the tick ends, then arrive whole and in order', async () => {
  const got: Buffer[] = [];
  const server = net.createServer((s) => s.on('data', (d: Buffer) => got.push(d)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const c = net.connect(port, '127.0.0.1');
  await new Promise<void>((r) => c.once('connect', r));
  for (let tick = 0; tick < 2; tick++) {
    for (let i = 0; i < 3; i++) {
      corkForTick(c);
      c.write(Buffer.from(`t${tick}f${i};`));
    }
    assert.is(c.writableCorked, 1, 'corked once for the whole tick');
    assert.is(c.writableLength > 0, true, 'held while the tick runs');
    await new Promise((r) => process.nextTick(r));
    assert.is(c.writableCorked, 0, 'uncorked at the end of the tick');
  }
  const want = 't0f0;t0f1;t0f2;t1f0;t1f1;t1f2;';
  for (let k = 0; k < 100 && Buffer.concat(got).length < want.length; k++) await new Promise((r) => setTimeout(r, 10));
  assert.is(Buffer.concat(got).toString(), want);
  c.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

test.run();
