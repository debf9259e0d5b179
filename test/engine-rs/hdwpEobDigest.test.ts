/**
 * The eob's batch digest (docs/hdwp.md, "eob"): the optional digest field after the closing hash,
 * old eobs without it, every malformed form, and the engine-rs digest the senders compute.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchDigest, FrameDecoder, HashChain, HdwpError, encodeFrame, generateBatchIdNumber } from '../../engine-rs/index';
import type { EobFrame } from '../../engine-rs/index';
import { be, codeOf, decodeAll, raw } from './hdwpFixtures';

const ID = generateBatchIdNumber(42);

/** An eob payload: batch id, count, closing hash, then `tail` as given (the digest part). */
const eobPayload = (count: number, hash: Buffer, tail: Buffer): Buffer => Buffer.concat([ID.bytes, be(count, 8), Buffer.from([hash.length]), hash, tail]);

const frame = suite('eob batch digest: the frame');
frame('an eob with a digest round-trips; its bytes are kind 1 and the 32 digest bytes after the closing hash', () => {
  const digest = Buffer.alloc(32, 0xab);
  const hash = Buffer.alloc(64, 7);
  const bytes = encodeFrame({ kind: 'eob', batchId: ID, recordCount: 150, closingHash: hash, digest });
  assert.equal(bytes.subarray(16), eobPayload(150, hash, Buffer.concat([Buffer.from([1]), digest])));
  const f = decodeAll(bytes)[0] as EobFrame;
  assert.is(f.kind, 'eob');
  assert.is(f.recordCount, 150);
  assert.equal(Buffer.from(f.closingHash), hash);
  assert.equal(Buffer.from(f.digest as Uint8Array), digest);
});
frame('an eob without the field (written before it existed) is still read, with no digest', () => {
  const old = raw(3, eobPayload(5, Buffer.alloc(0), Buffer.alloc(0)));
  const f = decodeAll(old)[0] as EobFrame;
  assert.is(f.recordCount, 5);
  assert.is(f.digest, undefined);
  assert.equal(encodeFrame({ kind: 'eob', batchId: ID, recordCount: 5, closingHash: Buffer.alloc(0) }), old, 'no digest: the old bytes');
  assert.equal(encodeFrame({ kind: 'eob', batchId: ID, recordCount: 5, closingHash: Buffer.alloc(0), digest: Buffer.alloc(0) }), old, 'an empty digest: none');
});
frame('malformed digests are refused with a named decoder error, and never encoded', () => {
  const d = Buffer.alloc(32, 1);
  const cases: [string, Buffer, string][] = [
    ['the kind byte alone', Buffer.from([1]), 'ERR_HDWP_TRUNCATED_FIELD'],
    ['a truncated digest (31 bytes)', Buffer.concat([Buffer.from([1]), d.subarray(0, 31)]), 'ERR_HDWP_TRUNCATED_FIELD'],
    ['an oversized digest (33 bytes)', Buffer.concat([Buffer.from([1]), d, Buffer.from([9])]), 'ERR_HDWP_INCONSISTENT_LENGTH'],
    ['an unknown digest kind', Buffer.concat([Buffer.from([2]), d]), 'ERR_HDWP_INVALID_VALUE'],
    ['kind 0 with bytes', Buffer.concat([Buffer.from([0]), d]), 'ERR_HDWP_INVALID_VALUE'],
  ];
  for (const [what, tail, code] of cases) {
    const bytes = raw(3, eobPayload(3, Buffer.alloc(64, 2), tail));
    assert.is(codeOf(() => decodeAll(bytes)), code, what);
    // The frames before a bad eob are kept, none after it.
    const credit = raw(8, be(1, 8));
    try {
      new FrameDecoder().push(Buffer.concat([credit, bytes, credit]));
      assert.unreachable(what);
    } catch (e) {
      assert.is((e as HdwpError).frames.length, 1, `${what}: the frame before it is kept`);
    }
  }
  for (const n of [1, 31, 33, 64]) {
    assert.is(codeOf(() => encodeFrame({ kind: 'eob', batchId: ID, recordCount: 1, closingHash: Buffer.alloc(0), digest: Buffer.alloc(n) })), 'ERR_HDWP_INVALID_VALUE', `${n}-byte digest`);
  }
});
frame.run();

const digest = suite('eob batch digest: BatchDigest (engine-rs)');
digest('the digest does not depend on how the bytes were split, and changes with any byte, order or count', async () => {
  const data = Buffer.alloc(150 * 100);
  for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 8)) & 0xff;
  const of = async (parts: Buffer[]): Promise<Buffer> => {
    const d = new BatchDigest();
    for (const p of parts) void d.update(p);
    return d.finish();
  };
  const whole = await of([data]);
  assert.is(whole.length, 32);
  assert.equal(await of([data.subarray(0, 7), data.subarray(7, 9000), data.subarray(9000)]), whole);
  assert.not.equal(await of([data.subarray(0, 150 * 50)]), whole, 'half of the records');
  assert.not.equal(await of([data.subarray(7500), data.subarray(0, 7500)]), whole, 'the same records in another order');
  const flipped = Buffer.from(data);
  flipped[1234] ^= 1;
  assert.not.equal(await of([flipped]), whole, 'one bit');
  // The SCC's chain computes the same digest of the same bytes (HashChain withDigest).
  const chain = new HashChain(ID, { recordSize: 150, withDigest: true });
  await chain.update(data.subarray(0, 1000));
  await chain.update(data.subarray(1000));
  assert.equal(chain.finish().digest, whole);
  const plain = new HashChain(ID, { recordSize: 150 });
  await plain.update(data);
  assert.is(plain.finish().digest, undefined, 'no digest unless asked');
});
digest('update after finish and a second finish are refused', async () => {
  const d = new BatchDigest();
  await d.finish();
  let refused = false;
  await d.update(Buffer.alloc(1)).catch(() => (refused = true));
  assert.ok(refused);
  let threw = false;
  await d.finish().catch(() => (threw = true));
  assert.ok(threw);
});
digest.run();
