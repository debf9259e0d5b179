/**
 * UserNicSocket's stream semantics, driven as its NIC drives it (the NIC's events are method calls;
 * what it asks of the NIC is recorded). The NIC itself runs in test/transport/userSpaceNic.test.ts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { UserNicSocket, type UserNicLink } from '../../transport/userNicSocket';

function socket(connecting = false): { s: UserNicSocket; asked: string[]; written: Buffer[] } {
  const asked: string[] = [];
  const written: Buffer[] = [];
  const link: UserNicLink = {
    write: (_id, b) => written.push(Buffer.from(b)),
    control: (_id, what) => asked.push(what),
  };
  return { s: new UserNicSocket(link, 7, { host: '10.0.0.1', port: 6987 }, connecting), asked, written };
}

const t = suite('UserNicSocket');

t('a write completes once the stack has taken all its bytes', async () => {
  const { s, written } = socket();
  let done = 0;
  s.write(Buffer.alloc(1000), () => done++);
  s.write(Buffer.alloc(500), () => done++);
  await new Promise((r) => setImmediate(r));
  // One write at a time reaches the NIC (a Writable's order); what queues meanwhile goes as one.
  assert.equal(written.map((b) => b.length), [1000]);
  s.onSent(999);
  assert.is(done, 0);
  s.onSent(1);
  assert.is(done, 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(written.map((b) => b.length), [1000, 500]);
  s.onSent(500);
  assert.is(done, 2);
  s.destroy();
});

t('a reader that stops taking data pauses the connection; reading again resumes it', async () => {
  const { s, asked } = socket();
  s.pause();
  for (let i = 0; i < 40; i++) s.onData(Buffer.alloc(1024));
  assert.equal(asked, ['pause'], 'paused once the buffer is over its high-water mark');
  const got: Buffer[] = [];
  s.on('data', (b: Buffer) => got.push(b));
  s.resume();
  await new Promise((r) => setImmediate(r));
  assert.is(Buffer.concat(got).length, 40 * 1024);
  assert.equal(asked, ['pause', 'resume']);
  s.destroy();
});

t('the peer ending, then an orderly close: end before close, no error', async () => {
  const { s, asked } = socket();
  const events: string[] = [];
  s.on('data', () => undefined);
  s.on('end', () => events.push('end'));
  s.on('close', () => events.push('close'));
  s.on('error', () => events.push('error'));
  s.onEnded();
  await new Promise((r) => setImmediate(r));
  assert.ok(asked.includes('end'), 'allowHalfOpen false: our side ends too');
  s.onClosed(undefined);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(events, ['end', 'close']);
});

t('a socket that ended both ways goes without a reset: the NIC closes it in order', async () => {
  const { s, asked } = socket();
  s.on('data', () => undefined);
  s.end();
  s.onEnded();
  await new Promise((r) => setTimeout(r, 10));
  assert.ok(s.destroyed, 'both sides ended: the stream is done');
  assert.equal(asked, ['end'], 'no abort: the last bytes and the FIN are still the stack\'s to send');
});

t('a reset fails the socket with ECONNRESET, a refused connect with ECONNREFUSED, pending writes with it', async () => {
  const reset = socket();
  let writeErr: Error | null | undefined;
  reset.s.write(Buffer.alloc(10), (e) => (writeErr = e));
  const err = await new Promise<NodeJS.ErrnoException>((r) => {
    reset.s.once('error', r);
    reset.s.onClosed('the connection was reset by the peer or timed out');
  });
  assert.is(err.code, 'ECONNRESET');
  assert.ok(writeErr instanceof Error);
  assert.not.ok(reset.asked.includes('abort'), 'a connection already gone is not aborted');

  const refused = socket(true);
  const e2 = await new Promise<NodeJS.ErrnoException>((r) => {
    refused.s.once('error', r);
    refused.s.onClosed('no connection to 10.0.0.1:6987: refused or unanswered');
  });
  assert.is(e2.code, 'ECONNREFUSED');
});

t('destroying an open socket aborts its connection; connect and timeout events as net.Socket has them', async () => {
  const { s, asked } = socket(true);
  let connected = false;
  s.once('connect', () => (connected = true));
  s.onConnected();
  assert.ok(connected);
  assert.is(s.connecting, false);
  const timedOut = new Promise<void>((r) => s.setTimeout(20, () => r()));
  await timedOut;
  assert.is(s.destroyed, false, 'a timeout leaves the socket open');
  s.setTimeout(0);
  s.destroy();
  assert.equal(asked, ['abort']);
});

t.run();
