/**
 * The hashing pool (HASH_THREADS, issue #22): an update of many whole records is hashed on several
 * threads, and the chain is the same for every thread count, algorithm and chunking.
 */
import { createHash } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchDigest, generateBatchIdNumber, HashChain, HASH_ALGORITHMS, hashThreads, setHashThreads, type HashAlgorithmName } from '../../engine-rs/index';

const id = generateBatchIdNumber(7n);

function bytes(n: number, seed = 1): Buffer {
  const b = Buffer.alloc(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

/** The chain definition of docs/segment.md written out with node:crypto (sha512). */
function byHand(data: Buffer, recordSize: number, blockSize: number): Buffer {
  const h = (...parts: Buffer[]): Buffer => {
    const c = createHash('sha512');
    for (const p of parts) c.update(p);
    return c.digest();
  };
  let prev = h(Buffer.from(id.bytes));
  const recs: Buffer[] = [];
  for (let i = 0; i < data.length; i += recordSize) recs.push(h(data.subarray(i, i + recordSize)));
  for (let i = 0; i < recs.length; i += blockSize) prev = h(prev, ...recs.slice(i, i + blockSize));
  return prev;
}

/** The chain of `data` fed at `cuts` (update boundaries), all updates issued at once. */
async function chainOf(data: Buffer, cuts: number[], algorithm: HashAlgorithmName, recordSize: number, blockSize: number) {
  const c = new HashChain(id, { algorithm, recordSize, blockSize });
  const parts: Promise<void>[] = [];
  let at = 0;
  for (const cut of [...cuts, data.length]) {
    parts.push(c.update(data.subarray(at, cut)));
    at = cut;
  }
  await Promise.all(parts);
  return c.finish();
}

const threads = suite('setHashThreads');
const before = hashThreads();
threads.after(() => void setHashThreads(before));

threads('sets the count in force; 0 is one per core', () => {
  assert.is(setHashThreads(3), 3);
  assert.is(hashThreads(), 3);
  assert.is(setHashThreads(1), 1);
  assert.is(hashThreads(), 1);
  const all = setHashThreads(0);
  assert.ok(all >= 1);
  assert.is(hashThreads(), all);
});

threads('refuses counts that are not whole numbers 0..1024 with a coded error', () => {
  const code = (c: string) => (e: Error & { code?: string }) => e.code === c;
  assert.throws(() => setHashThreads(1025), code('ERR_RANGE'));
  assert.throws(() => setHashThreads(-1), code('ERR_RANGE'));
  assert.throws(() => setHashThreads(2.5), code('ERR_RANGE'));
  assert.throws(() => setHashThreads(Number.NaN), code('ERR_RANGE'));
});

threads('every thread count gives the chain of one thread, for every algorithm and chunking', async () => {
  // 3 MiB and a bit: updates of 1 MiB (an HDWP frame) go to the pool, a record is split across two.
  const data = bytes(150 * 21_000 + 61, 5);
  const cutsOf = [[], [1 << 20, 2 << 20, 3 << 20], [150 * 7000 + 3, 150 * 7000 + 200]];
  for (const alg of HASH_ALGORITHMS) {
    for (const [r, b] of [
      [150, 64],
      [37, 5],
    ]) {
      setHashThreads(1);
      const want = await chainOf(data, [], alg, r, b);
      for (const n of [2, 4, 7]) {
        setHashThreads(n);
        for (const cuts of cutsOf) {
          const got = await chainOf(data, cuts, alg, r, b);
          assert.equal(got.closingHash, want.closingHash, `${alg} r ${r} b ${b} threads ${n} cuts ${cuts.join(',')}`);
          assert.equal(got.blockHashes, want.blockHashes);
          assert.is(got.records, want.records);
          assert.is(got.tailBytes, want.tailBytes);
        }
      }
    }
  }
  setHashThreads(4);
  assert.equal((await chainOf(data, [1 << 20], 'sha512', 150, 64)).closingHash, byHand(data, 150, 64));
});

threads('a chain with the batch digest gives the same chain and digest on every thread count', async () => {
  const data = bytes(150 * 14_000, 9);
  const digestOf = async (): Promise<Buffer> => {
    const d = new BatchDigest();
    void d.update(data);
    return d.finish();
  };
  setHashThreads(1);
  const want = { chain: (await chainOf(data, [], 'sha512', 150, 64)).closingHash, digest: await digestOf() };
  for (const n of [1, 2, 5]) {
    setHashThreads(n);
    const c = new HashChain(id, { withDigest: true });
    await Promise.all([c.update(data.subarray(0, 1 << 20)), c.update(data.subarray(1 << 20))]);
    const r = c.finish();
    assert.equal(r.closingHash, want.chain, `threads ${n}`);
    assert.equal(r.digest, want.digest, `threads ${n}`);
  }
});

threads.run();
