import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeFrame, encodeRecords } from '../../index';
import type { Frame } from '../../index';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError, batchErrorFrame } from '../../hdwp/hdwpStreamError';
import { HdwpServer, recordsFrameCost } from '../../hdwp/hdwpServer';
import { RawPeer, batch, gate, helloBytes, recordsOf, startServer, until } from '../sources/hdwpKit';

const connect = (port: number, recordSize = 100, role: 'scc' | 'ingestClient' = 'scc') =>
  HdwpClient.connect({ host: '127.0.0.1', port, role, datasetId: 'flows', recordSize });

const payloadOf = (frames: Frame[]): Buffer => Buffer.concat(frames.flatMap((f) => (f.kind === 'records' ? [f.payload] : [])));

const handshake = suite('HdwpServer handshake');
handshake('hello is answered with the server hello and the initial credit; the handler sees the client hello', async () => {
  const { server, port, seen } = await startServer({ creditWindow: 65536 });
  const client = await connect(port, 64);
  assert.equal({ ...client.serverHello }, { kind: 'hello', version: 1, role: 'storageNode', datasetId: 'flows', recordSize: 64 });
  assert.is(client.creditAvailable, 65536);
  assert.is(server.connections, 1);
  assert.is(seen.conns[0].hello.role, 'scc');
  assert.is(seen.conns[0].hello.datasetId, 'flows');
  assert.is(seen.conns[0].hello.recordSize, 64);
  await client.close();
  await until(() => server.connections === 0);
  assert.is(seen.closes.get(seen.conns[0].id), undefined, 'a clean close reports no error');
  await server.close();
});
handshake('a role the server does not accept is refused with error 2', async () => {
  const { server, port, seen } = await startServer();
  const err = await connect(port, 8, 'ingestClient').then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(err, HdwpStreamError);
  assert.is((err as HdwpStreamError).frameCode, 2);
  assert.match((err as HdwpStreamError).message, /role ingestClient is not accepted/);
  assert.is(seen.conns.length, 0, 'no handler is built for a refused hello');
  await server.close();
});
handshake('onConnection throwing an HdwpStreamError refuses with its frame code', async () => {
  const server = new HdwpServer({
    host: '127.0.0.1',
    port: 0,
    role: 'scc',
    onConnection: (conn) => {
      throw new HdwpStreamError('ERR_HDWP_REFUSED', `dataset ${conn.hello.datasetId} is not served here`, { frameCode: 2 });
    },
  });
  const { port } = await server.listen();
  const err = (await HdwpClient.connect({ host: '127.0.0.1', port, role: 'ingestClient', datasetId: 'nope', recordSize: 4 }).catch((e: unknown) => e)) as HdwpStreamError;
  assert.is(err.code, 'ERR_HDWP_PEER_ERROR');
  assert.is(err.frameCode, 2);
  assert.match(err.message, /dataset nope is not served here/);
  await server.close();
});
handshake('no hello within the handshake timeout: error 5 and close', async () => {
  const { server, port } = await startServer({ handshakeTimeoutMs: 30 });
  const peer = await RawPeer.connect(port);
  const e = await peer.errorAndClose();
  assert.is(e.code, 5);
  assert.match(e.message, /no hello within 30 ms/);
  await server.close();
});
handshake('an idle connection with nothing in flight is closed with error 5; one waiting for an ack is not', async () => {
  const held: Frame[] = [];
  const { server, port, seen } = await startServer({ idleTimeoutMs: 20, handle: (_c, f) => void held.push(f) });
  const waiting = await connect(port, 4);
  const eob = waiting.sendEob(batch(1), 0);
  const idle = await RawPeer.connect(port);
  await idle.write(helloBytes('scc', 'flows', 4));
  const e = await idle.errorAndClose();
  assert.is(e.code, 5);
  assert.match(e.message, /idle for 20 ms/);
  await until(() => server.connections === 1);
  assert.is(seen.conns.length, 2);
  assert.is(seen.closes.has(seen.conns[0].id), false, 'the connection waiting for its eob ack stays');
  const conn = seen.conns[0];
  await until(() => held.length === 1);
  await conn.send(held[0]);
  assert.is((await eob).recordCount, 0);
  await waiting.close();
  await server.close();
});
handshake.run();

const flow = suite('HdwpServer records, acks and credit');
flow('records arrive in frames of at most the client frame size, whole records, in order; eob is acknowledged', async () => {
  const { server, port, seen } = await startServer();
  const client = await connect(port);
  const data = recordsOf(100, 30_000); // 3 MB: several frames and two encoding slices
  await client.sendRecords(batch(7), data);
  const ack = await client.sendEob(batch(7), 30_000, Buffer.alloc(64, 9));
  assert.ok(ack.batchId.equals(batch(7)));
  assert.is(ack.recordCount, 30_000);
  assert.ok(Buffer.from(ack.closingHash).equals(Buffer.alloc(64, 9)));
  const frames = seen.frames.get(seen.conns[0].id) ?? [];
  assert.ok(payloadOf(frames).equals(data));
  const records = frames.filter((f) => f.kind === 'records');
  assert.ok(records.length >= 3);
  for (const f of records) assert.ok(f.kind === 'records' && recordsFrameCost(f) <= 1024 * 1024 && f.payload.length % 100 === 0);
  assert.is(frames[frames.length - 1].kind, 'eob');
  await client.close();
  await server.close();
});
flow('bbn is echoed; a refused batch rejects its eob and the stream goes on', async () => {
  const { server, port } = await startServer({
    handle: (conn, f) => {
      if (f.kind === 'bbn') return conn.send(f);
      if (f.kind === 'eob' && f.recordCount === 13) return conn.send(batchErrorFrame(f.batchId, 7, 'closing hash mismatch'));
      if (f.kind === 'eob') return conn.send(f);
      return undefined;
    },
  });
  const client = await connect(port, 4);
  await client.sendBbn(batch(1), 'source crashed');
  const refused = (await client.sendEob(batch(2), 13).catch((e: unknown) => e)) as HdwpStreamError;
  assert.instance(refused, HdwpStreamError);
  assert.is(refused.frameCode, 7);
  assert.ok(refused.batchId?.equals(batch(2)));
  assert.match(refused.message, /closing hash mismatch/);
  await client.sendRecords(batch(3), recordsOf(4, 10));
  assert.is((await client.sendEob(batch(3), 10)).recordCount, 10, 'the connection stays open after a batch refusal');
  await client.close();
  await server.close();
});
flow('a slow handler holds the client back: records in flight never exceed the window', async () => {
  const window = 16 * 1024;
  const g = gate();
  let consumed = 0;
  let client: HdwpClient | undefined;
  let worst = 0;
  const { server, port } = await startServer({
    creditWindow: window,
    handle: async (conn, f) => {
      if (client) worst = Math.max(worst, client.stats.recordsBytesSent - consumed);
      await g.promise;
      if (f.kind === 'records') consumed += recordsFrameCost(f);
      if (f.kind === 'eob') await conn.send(f);
    },
  });
  client = await connect(port, 100);
  const data = recordsOf(100, 2000); // 200 kB: twelve windows
  let sent = false;
  const sending = client.sendRecords(batch(1), data).then(() => (sent = true));
  await until(() => client !== undefined && client.creditAvailable < 200);
  assert.ok(client.stats.recordsBytesSent <= window, `sent ${client.stats.recordsBytesSent} with the handler stuck`);
  assert.is(sent, false, 'sendRecords waits for credit');
  g.open();
  await sending;
  assert.is((await client.sendEob(batch(1), 2000)).recordCount, 2000);
  assert.ok(worst <= window, `in flight reached ${worst}`);
  assert.ok(client.stats.creditGranted >= client.stats.recordsBytesSent);
  await client.close();
  await server.close();
});
flow('an idle connection holds back a small grant for a moment; a sender that needs it still gets it', async () => {
  const window = 4096;
  const { server, port, seen } = await startServer({ creditWindow: window });
  const client = await connect(port, 100);
  await client.sendRecords(batch(1), recordsOf(100, 1));
  const cost = window - client.creditAvailable;
  assert.ok(cost > 0 && cost < window / 4, `one record costs ${cost}`);
  await until(() => (seen.frames.get(seen.conns[0].id) ?? []).length === 1);
  // Handled and idle: the grant comes a moment later (IDLE_GRANT_MS) without another frame...
  await until(() => client.creditAvailable === window);
  // ...and a frame larger than what is left after a small one waits for that grant, not for
  // another frame of its own (39 records: 3 986 bytes).
  await client.sendRecords(batch(2), recordsOf(100, 1));
  await client.sendRecords(batch(2), recordsOf(100, 39));
  assert.is((await client.sendEob(batch(2), 40)).recordCount, 40);
  await client.close();
  await server.close();
});
flow('the same frames arrive whatever the TCP chunking', async () => {
  const stream = Buffer.concat([
    helloBytes('scc', 'flows', 3),
    encodeRecords(batch(1), 3, recordsOf(3, 50), { maxFrameBytes: 200 }),
    encodeFrame({ kind: 'bbn', batchId: batch(2), reason: 'void' }),
    encodeFrame({ kind: 'eob', batchId: batch(1), recordCount: 50, closingHash: Buffer.alloc(32, 1) }),
  ]);
  const plain = (fs: Frame[]) => fs.map((f) => JSON.stringify(f, (_k, v: unknown) => (v && typeof v === 'object' && 'bytes' in v ? String(v) : v)));
  let want: string[] | undefined;
  for (const size of [1, 5, 16, 17, 100, stream.length]) {
    const { server, port, seen } = await startServer();
    const peer = await RawPeer.connect(port);
    for (let at = 0; at < stream.length; at += size) await peer.write(stream.subarray(at, at + size));
    await peer.next('eob');
    const got = plain(seen.frames.get(seen.conns[0].id) ?? []);
    want ??= got;
    assert.equal(got.map((f) => JSON.parse(f).kind), ['records', 'records', 'bbn', 'eob'], `chunks of ${size}`);
    assert.equal(got, want, `chunks of ${size}`);
    peer.socket.end();
    await server.close();
  }
});
flow('the same frames arrive whatever the point a stream is cut at', async () => {
  const stream = Buffer.concat([
    helloBytes('scc', 'flows', 3),
    encodeRecords(batch(1), 3, recordsOf(3, 20)),
    encodeFrame({ kind: 'eob', batchId: batch(1), recordCount: 20, closingHash: Buffer.alloc(8, 1) }),
  ]);
  const { server, port, seen } = await startServer();
  for (let cut = 1; cut < stream.length; cut++) {
    const peer = await RawPeer.connect(port);
    await peer.write(stream.subarray(0, cut));
    await new Promise((r) => setImmediate(r));
    await peer.write(stream.subarray(cut));
    await peer.next('eob');
    const conn = seen.conns[seen.conns.length - 1];
    const frames = seen.frames.get(conn.id) ?? [];
    assert.equal(frames.map((f) => f.kind), ['records', 'eob'], `cut at ${cut}`);
    assert.ok(payloadOf(frames).equals(recordsOf(3, 20)), `cut at ${cut}`);
    peer.socket.end();
  }
  await server.close();
});
flow.run();

const broken = suite('HdwpServer broken streams');
/** Runs a bad peer beside a good client; the good one must finish its batch. */
async function beside(bad: (port: number) => Promise<{ code: number; message: string }>): Promise<{ code: number; message: string }> {
  const { server, port } = await startServer({ maxPayload: 4096 });
  const good = await connect(port, 4);
  await good.sendRecords(batch(1), recordsOf(4, 10));
  const e = await bad(port);
  await good.sendRecords(batch(1), recordsOf(4, 10));
  assert.is((await good.sendEob(batch(1), 20)).recordCount, 20, 'the other connection keeps working');
  assert.is(server.connections, 1);
  await good.close();
  await server.close();
  return e;
}
const rawAfterHello = async (port: number, bytes: Buffer): Promise<{ code: number; message: string }> => {
  const peer = await RawPeer.connect(port);
  await peer.write(Buffer.concat([helloBytes('scc', 'flows', 4), bytes]));
  return peer.errorAndClose();
};
broken('malformed bytes: error 1 naming the decoder code, and close', async () => {
  const e = await beside((port) => rawAfterHello(port, Buffer.from('GET / HTTP/1.1\r\n\r\n')));
  assert.is(e.code, 1);
  assert.match(e.message, /ERR_HDWP_BAD_MAGIC/);
});
broken('an oversize frame is refused from its header alone', async () => {
  const header = encodeFrame({ kind: 'bbn', batchId: batch(1), reason: 'x'.repeat(4000) }).subarray(0, 16);
  header.writeUInt32BE(5000, 8);
  const e = await beside((port) => rawAfterHello(port, header));
  assert.is(e.code, 1);
  assert.match(e.message, /ERR_HDWP_TOO_LARGE/);
});
broken('a frame before hello', async () => {
  const e = await beside(async (port) => {
    const peer = await RawPeer.connect(port);
    await peer.write(encodeRecords(batch(1), 4, recordsOf(4, 2)));
    return peer.errorAndClose();
  });
  assert.is(e.code, 1);
  assert.match(e.message, /expected hello first, got records/);
});
broken('records of another size than the hello said', async () => {
  const e = await beside((port) => rawAfterHello(port, encodeRecords(batch(1), 8, recordsOf(8, 2))));
  assert.is(e.code, 1);
  assert.match(e.message, /records of 8 bytes on a stream opened for 4-byte records/);
});
broken('records beyond the granted credit: error 8', async () => {
  const { server, port } = await startServer({ creditWindow: 4096, handle: () => new Promise(() => undefined) });
  const e = await rawAfterHello(port, encodeRecords(batch(1), 4, recordsOf(4, 2000), { maxFrameBytes: 1000 }));
  assert.is(e.code, 8);
  assert.match(e.message, /granted 4096/);
  await server.close();
});
broken('a connection dropped mid-frame: frames before it are handled, the handler learns why', async () => {
  const { server, port, seen } = await startServer();
  const whole = encodeRecords(batch(1), 4, recordsOf(4, 5));
  const peer = await RawPeer.connect(port);
  await peer.write(Buffer.concat([helloBytes('scc', 'flows', 4), whole, whole.subarray(0, 30)]));
  peer.socket.end();
  await until(() => seen.closes.size === 1);
  const conn = seen.conns[0];
  assert.is(seen.frames.get(conn.id)?.length, 1);
  assert.match(String(seen.closes.get(conn.id)?.message), /ERR_HDWP_TRUNCATED_FRAME/);
  await server.close();
});
broken('a handler that throws closes its connection with error 7', async () => {
  const { server, port } = await startServer({
    handle: () => {
      throw new Error('disk on fire');
    },
  });
  const client = await connect(port, 4);
  const eob = client.sendEob(batch(1), 0).catch((e: unknown) => e);
  const err = (await eob) as HdwpStreamError;
  assert.is(err.frameCode, 7);
  assert.match(err.message, /disk on fire/);
  assert.instance(await client.closed, HdwpStreamError);
  await server.close();
});
broken('closing the server rejects what clients wait for with error 9', async () => {
  const { server, port } = await startServer({ handle: () => undefined });
  const client = await connect(port, 4);
  const eob = client.sendEob(batch(1), 0).catch((e: unknown) => e);
  await until(() => server.connections === 1);
  await server.close();
  const err = (await eob) as HdwpStreamError;
  assert.is(err.code, 'ERR_HDWP_PEER_ERROR');
  assert.is(err.frameCode, 9);
  assert.match(err.message, /shutting down/);
  assert.is(server.connections, 0);
});
broken.run();
