import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkReachable, ReachabilityCache } from '../../lib/reachability';

const r = suite('reachability');

/** A listening server on a free loopback port, and a way to close it. */
async function listening(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = net.createServer((s) => s.destroy());
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const port = (server.address() as net.AddressInfo).port;
  return { port, close: () => new Promise<void>((ok) => server.close(() => ok())) };
}

r('checkReachable says why an address does not answer', async () => {
  const s = await listening();
  assert.is(await checkReachable('127.0.0.1', s.port), undefined);
  await s.close();
  assert.match((await checkReachable('127.0.0.1', s.port)) ?? '', /ECONNREFUSED/);
});

r('ReachabilityCache trusts a success for its ttl, then probes again', async () => {
  const s = await listening();
  const cache = new ReachabilityCache(150);
  assert.is(await cache.check('127.0.0.1', s.port), undefined);
  await s.close();
  // Within the ttl the closed listener is not probed.
  assert.is(await cache.check('127.0.0.1', s.port), undefined);
  await new Promise((ok) => setTimeout(ok, 200));
  assert.match((await cache.check('127.0.0.1', s.port)) ?? '', /ECONNREFUSED/);
  // Failures are not remembered: a listener back on the port answers at once.
  const back = net.createServer((c) => c.destroy());
  await new Promise<void>((ok) => back.listen(s.port, '127.0.0.1', () => ok()));
  try {
    assert.is(await cache.check('127.0.0.1', s.port), undefined);
  } finally {
    await new Promise<void>((ok) => back.close(() => ok()));
  }
});

r('ReachabilityCache with ttl 0 probes every time', async () => {
  const s = await listening();
  const cache = new ReachabilityCache(0);
  assert.is(await cache.check('127.0.0.1', s.port), undefined);
  await s.close();
  assert.match((await cache.check('127.0.0.1', s.port)) ?? '', /ECONNREFUSED/);
});

r('ReachabilityCache keeps at most maxEntries addresses', async () => {
  const a = await listening();
  const b = await listening();
  const cache = new ReachabilityCache(60_000, 1);
  assert.is(await cache.check('127.0.0.1', a.port), undefined);
  assert.is(await cache.check('127.0.0.1', b.port), undefined);
  await a.close();
  await b.close();
  // a was dropped to make room for b: it is probed again and refused; b is still trusted.
  assert.match((await cache.check('127.0.0.1', a.port)) ?? '', /ECONNREFUSED/);
  assert.is(await cache.check('127.0.0.1', b.port), undefined);
});

r.run();
