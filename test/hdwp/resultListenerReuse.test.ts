import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeFrame, encodeRecords, FrameDecoder, type Frame, type QueryAuth } from '../../index';
import { newQueryToken } from '../../query/token';
import { ResultListener, type QueryResult } from '../../hdwp/resultListener';
import { HdwpServer } from '../../hdwp/hdwpServer';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { batch, RawPeer, recordsOf, until } from '../sources/hdwpKit';

const RS = 24;

interface Q {
  auth: QueryAuth;
  results: QueryResult[];
}

async function setup(): Promise<{ listener: ResultListener; port: number; a: Q; b: Q }> {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  const open = (queryId: number): Q => {
    const q: Q = { auth: { queryId, token: newQueryToken() }, results: [] };
    listener.open(q.auth, (r) => void q.results.push(r));
    return q;
  };
  return { listener, port, a: open(41), b: open(42) };
}

const hello = (auth?: QueryAuth, recordSize = RS, role: 'storageNode' | 'ingestClient' = 'storageNode'): Buffer => encodeFrame({ kind: 'hello', version: 1, role, datasetId: 'flows', recordSize, ...(auth ? { auth } : {}) });
const records = (n: number, count: number, auth: QueryAuth, recordSize = RS): Buffer => encodeRecords(batch(n), recordSize, recordsOf(recordSize, count, n), { auth });
const eob = (n: number, count: number, auth: QueryAuth): Buffer => encodeFrame({ kind: 'eob', batchId: batch(n), recordCount: count, closingHash: new Uint8Array(0), auth });
/** A raw peer whose stream to `port` opened for `auth`: hello sent, the listener's credit read. */
async function opened(port: number, auth: QueryAuth): Promise<RawPeer> {
  const peer = await RawPeer.connect(port);
  await peer.write(hello(auth));
  await peer.next('credit');
  return peer;
}
const kinds = (frames: readonly Frame[]): string => frames.map((f) => f.kind).join(',');

const reuse = suite('ResultListener: reused result streams (real sockets)');

reuse('the hello answer carries the query block; a later hello starts the next query on the same connection, credit going on', async () => {
  const { listener, port, a, b } = await setup();
  try {
    const peer = await opened(port, a.auth);
    const first = peer.frames[0];
    assert.ok(first?.kind === 'hello' && first.auth?.queryId === 41, 'the marker: our query block in the answer');
    await peer.write(Buffer.concat([records(1, 4, a.auth), eob(1, 4, a.auth)]));
    await until(() => a.results.length === 1);
    // The next query, another record size: answered with a hello naming it, no new window.
    await peer.write(hello(b.auth, 16));
    await until(() => peer.frames.filter((f) => f.kind === 'hello').length === 2);
    const second = peer.frames.filter((f) => f.kind === 'hello')[1];
    assert.ok(second?.kind === 'hello' && second.auth?.queryId === 42 && second.recordSize === 16);
    assert.is(peer.frames.filter((f) => f.kind === 'credit').length >= 1, true);
    await peer.write(Buffer.concat([records(2, 3, b.auth, 16), eob(2, 3, b.auth)]));
    await until(() => b.results.length === 1);
    const r = b.results[0];
    assert.ok(r.kind === 'batch' && r.count === 3 && r.recordSize === 16 && r.batchId.equals(batch(2)));
    assert.is(a.results.length, 1, 'nothing of the second query reaches the first');
    assert.is(listener.stats.acceptedStreams, 2);
    assert.is(listener.stats.reusedStreams, 1);
    assert.is(listener.streams, 1);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

reuse('credit the previous query\'s last frames freed is granted with the answer to a later hello (a small window does not stall the next query)', async () => {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0, creditWindow: 4096 });
  const { port } = await listener.listen();
  const [a, b] = [51, 52].map((queryId) => ({ queryId, token: newQueryToken() }));
  listener.open(a as QueryAuth, () => undefined);
  listener.open(b as QueryAuth, () => undefined);
  try {
    const peer = await opened(port, a);
    // One records frame under a quarter of the window, then the next hello behind it in the same write.
    const frame = records(1, 30, a as QueryAuth);
    assert.ok(frame.length < 1024);
    await peer.write(Buffer.concat([frame, hello(b)]));
    await until(() => peer.frames.filter((f) => f.kind === 'hello').length === 2);
    const next = Buffer.concat([records(2, 1, b as QueryAuth), eob(2, 1, b as QueryAuth)]);
    await peer.write(next);
    const granted = (): number => peer.frames.reduce((sum, f) => sum + (f.kind === 'credit' ? f.bytes : 0), 0);
    await until(() => granted() === 4096 + frame.length + next.length - eob(2, 1, b as QueryAuth).length);
    // The first query's frame was granted back on its own, before the second query's came (not folded into theirs).
    const credits = peer.frames.filter((f) => f.kind === 'credit').map((f) => (f.kind === 'credit' ? f.bytes : 0));
    assert.equal(credits.slice(0, 2), [4096, frame.length]);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

reuse('a later hello ends the previous query there as a close does: its unfinished batch is dropped; the first query may come back on the connection', async () => {
  const { listener, port, a, b } = await setup();
  try {
    const peer = await opened(port, a.auth);
    await peer.write(Buffer.concat([records(1, 4, a.auth), hello(b.auth), records(2, 2, b.auth), eob(2, 2, b.auth)]));
    await until(() => b.results.length === 1);
    assert.is(listener.stats.partialBatchesDropped, 1);
    // The eob of the first query's batch, under its own block after going back to it: nothing held.
    await peer.write(Buffer.concat([hello(a.auth), eob(1, 4, a.auth)]));
    await until(() => a.results.length === 1);
    const r = a.results[0];
    assert.ok(r.kind === 'batch' && r.count === 0 && r.declaredCount === 4, 'the records sent before the switch are gone');
    assert.is(listener.stats.reusedStreams, 2);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

reuse('a later hello for a query not open here (or a wrong token) is refused with error 3 and the connection closes; nothing after it is taken', async () => {
  const { listener, port, a, b } = await setup();
  try {
    for (const bad of [{ queryId: 99, token: b.auth.token }, { queryId: 42, token: newQueryToken() }]) {
      const peer = await opened(port, a.auth);
      await peer.write(Buffer.concat([hello(bad), records(3, 2, bad), eob(3, 2, bad), records(4, 1, b.auth), eob(4, 1, b.auth)]));
      const e = await peer.errorAndClose();
      assert.is(e.code, 3);
      assert.match(e.message, /is not open here or its token does not match/);
    }
    assert.is(b.results.length, 0);
    assert.is(listener.stats.droppedStreams, 2);
  } finally {
    await listener.close();
  }
});

reuse('malformed later hellos: a role not accepted is error 2, records of the old size after a new hello are error 1, a hello cut short starts nothing', async () => {
  const { listener, port, a, b } = await setup();
  try {
    let peer = await opened(port, a.auth);
    await peer.write(hello(b.auth, RS, 'ingestClient'));
    assert.is((await peer.errorAndClose()).code, 2);

    peer = await opened(port, a.auth);
    await peer.write(Buffer.concat([hello(b.auth, 16), records(5, 2, b.auth, RS)]));
    const sized = await peer.errorAndClose();
    assert.is(sized.code, 1);
    assert.match(sized.message, /records of 24 bytes on a stream opened for 16-byte records/);

    peer = await opened(port, a.auth);
    const cut = hello(b.auth);
    await peer.write(cut.subarray(0, cut.length - 3));
    peer.socket.end();
    await peer.closed;
    assert.is(b.results.length, 0);
    assert.is(listener.stats.acceptedStreams, 4, 'three first hellos and the one later hello that was whole');
  } finally {
    await listener.close();
  }
});

reuse('bytes split at every offset across a later hello give the same batches', async () => {
  const { listener, port, a, b } = await setup();
  try {
    const peer = await opened(port, a.auth);
    const bytes = Buffer.concat([records(1, 2, a.auth), eob(1, 2, a.auth), hello(b.auth), records(2, 3, b.auth), eob(2, 3, b.auth)]);
    for (let i = 0; i < bytes.length; i++) await peer.write(bytes.subarray(i, i + 1));
    await until(() => a.results.length === 1 && b.results.length === 1);
    const [ra, rb] = [a.results[0], b.results[0]];
    assert.ok(ra.kind === 'batch' && ra.count === 2 && rb.kind === 'batch' && rb.count === 3);
    peer.socket.end();
    await peer.closed;
  } finally {
    await listener.close();
  }
});

reuse('a server that does not take later hellos (an ingest server, an older listener) answers without the block and refuses a second hello with error 1', async () => {
  const server = new HdwpServer({ host: '127.0.0.1', port: 0, role: 'queryClient', onConnection: () => ({ onFrame: () => undefined }) });
  const { port } = await server.listen();
  try {
    const auth: QueryAuth = { queryId: 7, token: newQueryToken() };
    const peer = await opened(port, auth);
    assert.is(kinds(peer.frames), 'hello,credit');
    const h = peer.frames[0];
    assert.ok(h?.kind === 'hello' && h.auth === undefined);
    await peer.write(hello(auth));
    const e = await peer.errorAndClose();
    assert.is(e.code, 1);
    assert.match(e.message, /unexpected hello frame on an open stream/);
  } finally {
    await server.close();
  }
});

reuse('HdwpClient.rebind: resolves on the listener\'s answer, frames then carry the new block; a refused one rejects with the code and ends the stream', async () => {
  const { listener, port, a, b } = await setup();
  try {
    const client = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'storageNode', datasetId: 'flows', recordSize: RS, auth: a.auth, acks: false });
    assert.ok(client.reusable && client.idle);
    await client.sendRecords(batch(1), recordsOf(RS, 2));
    await client.sendEob(batch(1), 2);
    await client.rebind({ auth: b.auth, datasetId: 'flows', recordSize: RS });
    await client.sendEob(batch(2), 0);
    await until(() => a.results.length === 1 && b.results.length === 1);
    const err = await client.rebind({ auth: { queryId: 5, token: newQueryToken() }, datasetId: 'flows', recordSize: RS }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof HdwpStreamError && err.frameCode === 3, String(err));
    assert.not.ok(client.idle);
    await client.close();
  } finally {
    await listener.close();
  }
});

reuse('HdwpClient to a server without the marker: not reusable, rebind refuses before sending anything', async () => {
  const server = new HdwpServer({ host: '127.0.0.1', port: 0, role: 'queryClient', onConnection: () => ({ onFrame: () => undefined }) });
  const { port } = await server.listen();
  try {
    const auth: QueryAuth = { queryId: 8, token: newQueryToken() };
    const client = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'storageNode', datasetId: 'flows', recordSize: RS, auth, acks: false });
    assert.not.ok(client.reusable);
    await client.rebind({ auth: { queryId: 9, token: newQueryToken() }, datasetId: 'flows', recordSize: RS }).then(
      () => assert.unreachable('rebind on a stream that is not reusable'),
      (e: unknown) => assert.match(String(e), /not idle and reusable/),
    );
    await client.close();
  } finally {
    await server.close();
  }
});

/** A raw listener: answers the first hello with the marker and a window, every later hello with `later(hello)`'s bytes. */
async function rawListener(later: (h: Frame & { kind: 'hello' }) => Buffer): Promise<{ server: net.Server; port: number }> {
  const server = net.createServer((sock) => {
    const decoder = new FrameDecoder();
    let first = true;
    sock.on('error', () => undefined);
    sock.on('data', (chunk: Buffer) => {
      for (const f of decoder.push(chunk)) {
        if (f.kind !== 'hello') continue;
        if (first) sock.write(Buffer.concat([encodeFrame({ ...f, role: 'queryClient' }), encodeFrame({ kind: 'credit', bytes: 1 << 20 })]));
        else sock.write(later(f));
        first = false;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, port: (server.address() as net.AddressInfo).port };
}

reuse('malformed answers to a later hello reject the rebind and end the stream: another query named, another record size, bytes that are no frame', async () => {
  const cases: [string, (h: Frame & { kind: 'hello' }) => Buffer, RegExp][] = [
    ['another query', (h) => encodeFrame({ ...h, role: 'queryClient', auth: { queryId: 77, token: newQueryToken() } }), /expected hello for query 9 .* got query 77/],
    ['another record size', (h) => encodeFrame({ ...h, role: 'queryClient', recordSize: 5 }), /got query 9 of 'flows' \(5-byte records\)/],
    ['no frame', () => Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n'), /malformed frame from the server: ERR_HDWP_BAD_MAGIC/],
  ];
  for (const [what, later, message] of cases) {
    const { server, port } = await rawListener(later);
    try {
      const client = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'storageNode', datasetId: 'flows', recordSize: RS, auth: { queryId: 8, token: newQueryToken() }, acks: false });
      assert.ok(client.reusable, what);
      const err = await client.rebind({ auth: { queryId: 9, token: newQueryToken() }, datasetId: 'flows', recordSize: RS }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.match(String(err), message, what);
      assert.not.ok(client.idle, what);
      await client.close();
    } finally {
      await new Promise((r) => server.close(r));
    }
  }
});

reuse.run();
