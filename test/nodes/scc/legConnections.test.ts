import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeFrame } from '../../../engine-rs/hdwp';
import { FrameDecoder } from '../../../engine-rs/hdwpDecoder';
import { legConnectionKey, LegConnectionPool, type LegConnection } from '../../../nodes/scc/legConnections';

/** A loopback server that keeps every accepted socket, so a test can write to or close them. */
interface Peer {
  port: number;
  sockets: net.Socket[];
  close(): Promise<void>;
}

async function peer(): Promise<Peer> {
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    sockets.push(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  return {
    port: (server.address() as net.AddressInfo).port,
    sockets,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

async function connection(p: Peer, key: string, openedAt = Date.now()): Promise<LegConnection> {
  const socket = net.connect({ host: '127.0.0.1', port: p.port });
  await new Promise<void>((ok) => socket.once('connect', () => ok()));
  return { socket, decoder: new FrameDecoder(), key, openedAt };
}

const until = async (cond: () => boolean): Promise<void> => {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`condition not met: ${cond.toString()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

const node = { name: 'sn1', host: '127.0.0.1', controlPort: 7000 };
const t = suite('LegConnectionPool');

t('keys differ by node, dataset, record size and the certificate presented', () => {
  const plain = legConnectionKey(node, 'flows', 150, undefined);
  assert.is.not(plain, legConnectionKey({ ...node, name: 'sn2' }, 'flows', 150, undefined));
  assert.is.not(plain, legConnectionKey(node, 'other', 150, undefined));
  assert.is.not(plain, legConnectionKey(node, 'flows', 64, undefined));
  const a = legConnectionKey(node, 'flows', 150, { cert: 'CERT A' });
  assert.is.not(a, plain);
  assert.is.not(a, legConnectionKey(node, 'flows', 150, { cert: 'CERT B' }), 'a renewed certificate gets new connections');
  assert.is(a, legConnectionKey(node, 'flows', 150, { cert: 'CERT A' }));
});

t('a connection given back is taken again, except by the query it last carried', async () => {
  const p = await peer();
  const pool = new LegConnectionPool();
  try {
    const c = await connection(p, 'k');
    c.lastQueryId = 7;
    pool.give(c);
    assert.is(pool.stats.idle, 1);
    assert.is(pool.take('other', 1), undefined, 'another key');
    assert.is(pool.take('k', 7), undefined, 'the same query goes on another connection');
    const again = pool.take('k', 8);
    assert.is(again, c);
    assert.equal({ ...pool.stats }, { reused: 1, opened: 0, returned: 1, closedIdle: 0, idle: 0 });
    again?.socket.destroy();
  } finally {
    pool.close();
    await p.close();
  }
});

t('an idle connection is dropped when the node closes it, sends anything but hello or credit, or sends garbage', async () => {
  const p = await peer();
  const pool = new LegConnectionPool();
  try {
    for (let i = 0; i < 4; i++) pool.give(await connection(p, `k${i}`));
    await until(() => p.sockets.length === 4);
    p.sockets[0]?.write(encodeFrame({ kind: 'hello', version: 1, role: 'storageNode', datasetId: 'flows', recordSize: 150 }));
    p.sockets[0]?.write(encodeFrame({ kind: 'credit', bytes: 4096 }));
    p.sockets[1]?.write(encodeFrame({ kind: 'error', code: 9, message: 'shutting down' }));
    p.sockets[2]?.write(Buffer.from('this is not a frame at all, not even close to one'));
    p.sockets[3]?.end();
    await until(() => pool.stats.idle === 1);
    // hello and credit were read and dropped: that connection stays and is taken with its decoder.
    const kept = pool.take('k0', 1);
    assert.ok(kept && !kept.socket.destroyed);
    for (const k of ['k1', 'k2', 'k3']) assert.is(pool.take(k, 1), undefined);
    kept?.socket.destroy();
  } finally {
    pool.close();
    await p.close();
  }
});

t('connections close after idleMs; none is reused past maxAgeMs; close() ends the idle ones', async () => {
  const p = await peer();
  const pool = new LegConnectionPool({ idleMs: 40, maxAgeMs: 60_000 });
  try {
    pool.give(await connection(p, 'k'));
    await until(() => pool.stats.closedIdle === 1);
    assert.is(pool.stats.idle, 0);
    const aged = new LegConnectionPool({ idleMs: 60_000, maxAgeMs: 1000 });
    const old = await connection(p, 'k', Date.now() - 5000);
    aged.give(old);
    assert.is(aged.stats.idle, 0, 'too old to keep');
    const young = await connection(p, 'k');
    aged.give(young);
    assert.is(aged.stats.idle, 1);
    aged.close();
    assert.is(aged.stats.idle, 0);
    await until(() => young.socket.destroyed || young.socket.writableEnded);
    const late = await connection(p, 'k');
    aged.give(late);
    assert.is(aged.stats.idle, 0, 'a closed pool keeps nothing');
  } finally {
    pool.close();
    await p.close();
  }
});

t.run();
