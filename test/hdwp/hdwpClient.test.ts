import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FrameDecoder, encodeFrame } from '../../index';
import type { Frame } from '../../index';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError, batchErrorFrame } from '../../hdwp/hdwpStreamError';
import { batch, recordsOf, startServer, until } from '../sources/hdwpKit';

/** A plain TCP server that runs `onFrames` on what a client sends, for server misbehaviour the real one never shows. */
async function fakeServer(onFrames: (socket: net.Socket, frames: Frame[]) => void): Promise<{ port: number; close(): void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    const d = new FrameDecoder();
    s.on('data', (c: Buffer) => onFrames(s, d.push(c)));
  });
  const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
  return {
    port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
const helloAndCredit = (datasetId: string, recordSize: number, credit: number): Buffer =>
  Buffer.concat([encodeFrame({ kind: 'hello', version: 1, role: 'scc', datasetId, recordSize }), encodeFrame({ kind: 'credit', bytes: credit })]);

const opts = (port: number, extra: Partial<Parameters<typeof HdwpClient.connect>[0]> = {}) => ({ host: '127.0.0.1', port, role: 'ingestClient' as const, datasetId: 'flows', recordSize: 4, ...extra });
const rejection = async (p: Promise<unknown>): Promise<HdwpStreamError> => {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  assert.instance(e, HdwpStreamError, `expected an HdwpStreamError, got ${String(e)}`);
  return e as HdwpStreamError;
};

const connect = suite('HdwpClient.connect');
connect('a refused port: ERR_HDWP_DISCONNECTED', async () => {
  const fake = await fakeServer(() => undefined);
  fake.close();
  const e = await rejection(HdwpClient.connect(opts(fake.port)));
  assert.is(e.code, 'ERR_HDWP_DISCONNECTED');
  assert.match(e.message, /ECONNREFUSED/);
});
connect('a server that never answers hello: ERR_HDWP_TIMEOUT', async () => {
  const fake = await fakeServer(() => undefined);
  const e = await rejection(HdwpClient.connect(opts(fake.port, { connectTimeoutMs: 30 })));
  assert.is(e.code, 'ERR_HDWP_TIMEOUT');
  assert.match(e.message, /no HDWP handshake within 30 ms/);
  fake.close();
});
connect('a server hello for another dataset or record size is refused', async () => {
  const fake = await fakeServer((s, frames) => {
    if (frames.some((f) => f.kind === 'hello')) s.write(helloAndCredit('other', 4, 65536));
  });
  const e = await rejection(HdwpClient.connect(opts(fake.port)));
  assert.is(e.code, 'ERR_HDWP_REFUSED');
  assert.match(e.message, /expected hello for 'flows' \(4-byte records\), got hello for 'other'/);
  fake.close();
});
connect('a window too small for one record frame is refused', async () => {
  const fake = await fakeServer((s, frames) => {
    if (frames.some((f) => f.kind === 'hello')) s.write(helloAndCredit('flows', 1000, 500));
  });
  const e = await rejection(HdwpClient.connect(opts(fake.port, { recordSize: 1000 })));
  assert.match(e.message, /cannot hold one 1000-byte record/);
  fake.close();
});
connect('options are checked before connecting', async () => {
  const e = await HdwpClient.connect(opts(1, { recordSize: 0 })).catch((x: unknown) => x);
  assert.instance(e, RangeError);
});
connect.run();

const send = suite('HdwpClient sending');
send('records frames respect maxFrameBytes; calls keep their order without awaiting each other', async () => {
  const { server, port, seen } = await startServer({ roles: ['ingestClient'] });
  const c = await HdwpClient.connect(opts(port, { maxFrameBytes: 16 + 70 + 4 * 10 }));
  const a = c.sendRecords(batch(1), recordsOf(4, 25, 1));
  const b = c.sendRecords(batch(1), recordsOf(4, 5, 2));
  const eob = c.sendEob(batch(1), 30);
  await Promise.all([a, b]);
  assert.is((await eob).recordCount, 30);
  const frames = seen.frames.get(seen.conns[0].id) ?? [];
  assert.equal(
    frames.map((f) => (f.kind === 'records' ? f.count : f.kind)),
    [10, 10, 5, 5, 'eob'],
  );
  const payload = Buffer.concat(frames.flatMap((f) => (f.kind === 'records' ? [f.payload] : [])));
  assert.ok(payload.equals(Buffer.concat([recordsOf(4, 25, 1), recordsOf(4, 5, 2)])));
  assert.is(c.stats.recordsFramesSent, 4);
  assert.is(c.stats.recordsBytesSent, 4 * 86 + 30 * 4);
  await c.close();
  await server.close();
});
send('partial records are refused; empty ones are a no-op', async () => {
  const { server, port } = await startServer({ roles: ['ingestClient'] });
  const c = await HdwpClient.connect(opts(port));
  const e = await c.sendRecords(batch(1), Buffer.alloc(7)).catch((x: unknown) => x);
  assert.instance(e, RangeError);
  await c.sendRecords(batch(1), Buffer.alloc(0));
  assert.is(c.stats.recordsFramesSent, 0);
  await c.close();
  await server.close();
});
send('a refusal that arrives before the eob is sent still rejects that eob', async () => {
  const fake = await fakeServer((s, frames) => {
    for (const f of frames) {
      if (f.kind === 'hello') s.write(helloAndCredit('flows', 4, 65536));
      if (f.kind === 'records') s.write(encodeFrame(batchErrorFrame(f.batchId, 10, 'unknown batch')));
      if (f.kind === 'eob') s.write(encodeFrame(f));
    }
  });
  const c = await HdwpClient.connect(opts(fake.port));
  await c.sendRecords(batch(5), recordsOf(4, 2));
  await c.sendEob(batch(6), 0); // a round trip: the refusal of batch 5 has arrived by now
  const e = await rejection(c.sendEob(batch(5), 2));
  assert.is(e.frameCode, 10);
  assert.ok(e.batchId?.equals(batch(5)));
  await c.close();
  fake.close();
});
send.run();

const failures = suite('HdwpClient failures');
failures('close() rejects what still waits with ERR_HDWP_CLOSED and resolves closed with undefined', async () => {
  const { server, port } = await startServer({ roles: ['ingestClient'], handle: () => undefined });
  const c = await HdwpClient.connect(opts(port));
  const eob = rejection(c.sendEob(batch(1), 0));
  await until(() => server.connections === 1);
  await c.close();
  const e = await eob;
  assert.is(e.code, 'ERR_HDWP_CLOSED');
  assert.is(await c.closed, undefined);
  assert.is((await rejection(c.sendRecords(batch(1), recordsOf(4, 1)))).code, 'ERR_HDWP_CLOSED', 'sends after close fail at once');
  await server.close();
});
failures('a malformed frame from the server fails every pending call', async () => {
  const fake = await fakeServer((s, frames) => {
    for (const f of frames) {
      if (f.kind === 'hello') s.write(helloAndCredit('flows', 4, 65536));
      if (f.kind === 'eob') s.write(Buffer.from('not a frame at all'));
    }
  });
  const c = await HdwpClient.connect(opts(fake.port));
  const [x, y] = [rejection(c.sendEob(batch(1), 0)), rejection(c.sendBbn(batch(2), 'r'))];
  const e = await x;
  assert.is(e.code, 'ERR_HDWP_REFUSED');
  assert.match(e.message, /ERR_HDWP_BAD_MAGIC/);
  assert.is(await y, e);
  assert.is(await c.closed, e);
  fake.close();
});
failures('the server vanishing without an error frame: ERR_HDWP_DISCONNECTED', async () => {
  const fake = await fakeServer((s, frames) => {
    for (const f of frames) {
      if (f.kind === 'hello') s.write(helloAndCredit('flows', 4, 65536));
      if (f.kind === 'eob') s.destroy();
    }
  });
  const c = await HdwpClient.connect(opts(fake.port));
  const e = await rejection(c.sendEob(batch(1), 0));
  assert.is(e.code, 'ERR_HDWP_DISCONNECTED');
  fake.close();
});
failures('records waiting for credit are rejected when the stream fails', async () => {
  let sock: net.Socket | undefined;
  const fake = await fakeServer((s, frames) => {
    sock = s;
    if (frames.some((f) => f.kind === 'hello')) s.write(helloAndCredit('flows', 4, 1000));
  });
  const c = await HdwpClient.connect(opts(fake.port));
  const sending = rejection(c.sendRecords(batch(1), recordsOf(4, 1000))); // 4 kB against 1000 bytes of credit, never granted more
  await until(() => c.creditAvailable < 90);
  sock?.write(encodeFrame({ kind: 'error', code: 6, message: 'overloaded' }));
  const e = await sending;
  assert.is(e.frameCode, 6);
  assert.is(e.code, 'ERR_HDWP_PEER_ERROR');
  assert.ok(c.stats.recordsBytesSent <= 1000);
  fake.close();
});
failures.run();
