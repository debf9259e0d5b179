import * as grpc from '@grpc/grpc-js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DispatchChannels } from '../../../query/dispatch/dispatchChannels';
import { DispatchError, type QueryDispatchClientOptions } from '../../../query/dispatch/dispatchClient';

const t = suite('DispatchChannels');

/** A call's error on a client, or undefined when it succeeded (no server listens: UNAVAILABLE is expected). */
async function callError(c: { cancelQuery(id: number, token: string): Promise<unknown> }): Promise<string> {
  try {
    await c.cancelQuery(1, '00'.repeat(16));
    return 'ok';
  } catch (err) {
    return err instanceof DispatchError ? err.status : (err as Error).message;
  }
}

t('one channel per address and credentials; new credentials replace it, the old one closes after its grace', async () => {
  const ch = new DispatchChannels(50);
  let built = 0;
  const plain = (): QueryDispatchClientOptions => {
    built++;
    return {};
  };
  const a = ch.client('127.0.0.1:1', '', plain);
  assert.is(ch.client('127.0.0.1:1', '', plain), a, 'kept across calls');
  assert.is(built, 1, 'credentials built once');
  const b = ch.client('127.0.0.1:2', '', plain);
  assert.is.not(b, a);
  assert.is(ch.size, 2);
  const renewed = ch.client('127.0.0.1:1', 'cert v2', () => ({ credentials: grpc.credentials.createInsecure() }));
  assert.is.not(renewed, a, 'new credentials get a new channel');
  assert.is(ch.size, 2);
  // The replaced channel still serves calls in flight for the grace period, then is closed.
  assert.is(await callError(a), 'UNAVAILABLE');
  await new Promise((r) => setTimeout(r, 120));
  assert.match(await callError(a), /shut ?down|closed/i);
  ch.close();
  assert.match(await callError(renewed), /shut ?down|closed/i);
  assert.match(await callError(b), /shut ?down|closed/i);
  assert.throws(() => ch.client('127.0.0.1:1', '', plain), /closed/);
});

t('close() also closes channels still in their grace period', async () => {
  const ch = new DispatchChannels(60_000);
  const old = ch.client('127.0.0.1:3', 'v1', () => ({}));
  ch.client('127.0.0.1:3', 'v2', () => ({}));
  ch.close();
  assert.match(await callError(old), /shut ?down|closed/i);
});

t.run();
