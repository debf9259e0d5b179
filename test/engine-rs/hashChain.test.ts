import { createHash } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber, HashChain, HASH_ALGORITHMS } from '../../engine-rs/index';

const id = generateBatchIdNumber(42n);

function bytes(n: number, seed = 1): Buffer {
  const b = Buffer.alloc(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

/** The chain definition of docs/segment.md written out with node:crypto. */
function byHand(alg: 'sha512' | 'sha256', data: Buffer, recordSize: number, blockSize: number): Buffer {
  const h = (...parts: Buffer[]) => {
    const c = createHash(alg);
    for (const p of parts) c.update(p);
    return c.digest();
  };
  let prev = h(Buffer.from(id.bytes));
  const recs: Buffer[] = [];
  for (let i = 0; i < data.length; i += recordSize) recs.push(h(data.subarray(i, i + recordSize)));
  for (let i = 0; i < recs.length; i += blockSize) prev = h(prev, ...recs.slice(i, i + blockSize));
  return prev;
}

async function run(data: Buffer, chunk: number, algorithm: (typeof HASH_ALGORITHMS)[number] = 'sha512', recordSize = 150, blockSize = 64) {
  const c = new HashChain(id, { algorithm, recordSize, blockSize });
  for (let i = 0; i < data.length; i += chunk) await c.update(data.subarray(i, i + chunk));
  return c.finish();
}

const chain = suite('HashChain');

chain('sha512 and sha256 closing hashes match the definition computed by hand', async () => {
  const data = bytes(150 * 200 + 40);
  for (const alg of ['sha512', 'sha256'] as const) {
    const r = await run(data, 1 << 20, alg);
    assert.equal(r.closingHash, byHand(alg, data, 150, 64), alg);
    assert.is(r.records, 201);
    assert.is(r.blocks, 4);
    assert.is(r.tailBytes, 40);
    assert.is(r.blockHashes.length, 4 * r.closingHash.length);
  }
});

chain('every split point and chunk size gives the same hash', async () => {
  const data = bytes(13 * 9 + 4, 7);
  for (const alg of HASH_ALGORITHMS) {
    const whole = (await run(data, data.length, alg, 13, 4)).closingHash;
    for (let cut = 0; cut <= data.length; cut++) {
      const c = new HashChain(id, { algorithm: alg, recordSize: 13, blockSize: 4 });
      await c.update(data.subarray(0, cut));
      await c.update(data.subarray(cut));
      assert.equal(c.finish().closingHash, whole, `${alg} cut ${cut}`);
    }
    for (const size of [1, 3, 13, 50]) assert.equal((await run(data, size, alg, 13, 4)).closingHash, whole);
  }
});

chain('updates issued without awaiting are hashed in call order', async () => {
  const data = bytes(150 * 300, 3);
  const c = new HashChain(id);
  const parts: Promise<void>[] = [];
  for (let i = 0; i < data.length; i += 1000) parts.push(c.update(data.subarray(i, i + 1000)));
  assert.ok(c.pending > 0);
  await Promise.all(parts);
  assert.equal(c.finish().closingHash, byHand('sha512', data, 150, 64));
});

chain('the caller may reuse its buffer as soon as update returns', async () => {
  const data = bytes(1500, 9);
  const c = new HashChain(id);
  const scratch = Buffer.from(data);
  const p = c.update(scratch);
  scratch.fill(0);
  await p;
  assert.equal(c.finish().closingHash, byHand('sha512', data, 150, 64));
});

chain('an empty batch closes with the hash of its id', () => {
  const r = new HashChain(id, { algorithm: 'sha256' }).finish();
  assert.equal(r.closingHash, createHash('sha256').update(id.bytes).digest());
  assert.is(r.records, 0);
});

chain('finish refuses while an update is in flight, and twice', async () => {
  const c = new HashChain(id);
  const p = c.update(bytes(1 << 20));
  assert.throws(() => c.finish(), /in flight/);
  await p;
  c.finish();
  assert.throws(() => c.finish(), /twice/);
});

chain('bad settings are refused with a coded error', () => {
  assert.throws(() => new HashChain(id, { recordSize: 0 }), (e: Error & { code?: string }) => e.code === 'ERR_HASH_CHAIN_CONFIG');
  assert.throws(() => new HashChain(id, { blockSize: 0 }), (e: Error & { code?: string }) => e.code === 'ERR_HASH_CHAIN_CONFIG');
  assert.throws(() => new HashChain(id, { recordSize: 1.5 }), (e: Error & { code?: string }) => e.code === 'ERR_RANGE');
  assert.throws(() => new HashChain(new Uint8Array(10)), /64 bytes/);
  // @ts-expect-error: an unknown algorithm name is a type error and a runtime error
  assert.throws(() => new HashChain(id, { algorithm: 'md5' }), /unknown hash algorithm/);
});

chain.run();
