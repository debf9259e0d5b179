import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FrameDecoder, HdwpError, encodeFrame } from '../../index';
import type { Frame } from '../../index';
import { BATCH, be, plain, raw, samples } from './hdwpFixtures';

/** Feeds `parts` in order; returns the frames and the first error (frames of its push included). */
function feed(parts: Buffer[], opts?: { maxPayload?: number }): { frames: unknown[]; error?: HdwpError; decoder: FrameDecoder } {
  const decoder = new FrameDecoder(opts);
  const frames: Frame[] = [];
  try {
    for (const p of parts) frames.push(...decoder.push(p));
    decoder.end();
  } catch (e) {
    if (!(e instanceof HdwpError)) throw e;
    frames.push(...e.frames);
    return { frames: frames.map(plain), error: e, decoder };
  }
  return { frames: frames.map(plain), decoder };
}

function chunks(b: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < b.length; i += size) out.push(b.subarray(i, i + size));
  return out;
}

const ID = Buffer.from(BATCH.bytes);

const split = suite('FrameDecoder splits');
split('the same stream cut at every point and in several chunk sizes yields the same frames', () => {
  const frames = samples();
  const stream = Buffer.concat(frames.map(encodeFrame));
  const want = frames.map(plain);
  for (let cut = 0; cut <= stream.length; cut++) {
    const r = feed([stream.subarray(0, cut), stream.subarray(cut)]);
    assert.is(r.error, undefined, `cut at ${cut}`);
    assert.equal(r.frames, want, `cut at ${cut}`);
  }
  for (const size of [1, 2, 3, 7, 16, 17, 100, 4096]) {
    const r = feed(chunks(stream, size));
    assert.equal(r.frames, want, `chunks of ${size}`);
    assert.is(r.decoder.position, stream.length);
  }
});
split('a large records frame in small chunks is joined once and arrives whole', () => {
  const payload = Buffer.alloc(3 * 100_000, 0x33);
  const bytes = encodeFrame({ kind: 'records', batchId: BATCH, recordSize: 3, count: 100_000, payload });
  const d = new FrameDecoder();
  let got: Frame[] = [];
  let pushed = 0;
  for (const c of chunks(bytes, 1000)) {
    got = got.concat(d.push(c));
    pushed += c.length;
    assert.is(d.buffered, got.length === 0 ? pushed : 0, 'partial bytes are held until the frame completes');
  }
  assert.is(got.length, 1);
  assert.is(got[0].kind === 'records' ? got[0].payload.length : -1, payload.length);
});
split.run();

const bad = suite('FrameDecoder malformed input');
const cases: [string, Buffer, string][] = [
  ['bad magic', Buffer.from('XDWP0000000000000000'), 'ERR_HDWP_BAD_MAGIC'],
  ['unsupported version', raw(8, be(1, 8), 0, 2), 'ERR_HDWP_UNSUPPORTED_VERSION'],
  ['unknown kind', raw(0xee, Buffer.alloc(0)), 'ERR_HDWP_UNKNOWN_KIND'],
  ['reserved flag', raw(8, be(1, 8), 0x8000), 'ERR_HDWP_BAD_FLAGS'],
  ['auth flag on a query', raw(5, Buffer.alloc(40, 1), 1), 'ERR_HDWP_BAD_FLAGS'],
  ['payload over the limit', Buffer.concat([Buffer.from('HDWP\x01\x02\x00\x00', 'latin1'), be(16 * 1024 * 1024 + 1, 4), Buffer.alloc(4)]), 'ERR_HDWP_TOO_LARGE'],
  ['checksum', (() => { const b = encodeFrame({ kind: 'credit', bytes: 5 }); b[b.length - 1] ^= 1; return b; })(), 'ERR_HDWP_CHECKSUM_MISMATCH'],
  ['records without count', raw(2, Buffer.concat([ID, be(3, 2)])), 'ERR_HDWP_TRUNCATED_FIELD'],
  ['auth block cut short', raw(8, Buffer.alloc(6, 1), 1), 'ERR_HDWP_TRUNCATED_FIELD'],
  ['records bytes != count x size', raw(2, Buffer.concat([ID, be(4, 2), be(3, 4), Buffer.alloc(11)])), 'ERR_HDWP_INCONSISTENT_LENGTH'],
  ['cancel with trailing bytes', raw(6, Buffer.alloc(21, 1)), 'ERR_HDWP_INCONSISTENT_LENGTH'],
  ['record size 0', raw(2, Buffer.concat([ID, be(0, 2), be(0, 4)])), 'ERR_HDWP_INVALID_VALUE'],
  ['unknown role', raw(1, Buffer.concat([Buffer.from([1, 77]), be(10, 2), Buffer.from('d')])), 'ERR_HDWP_INVALID_VALUE'],
  ['zero token', raw(6, Buffer.alloc(20)), 'ERR_HDWP_INVALID_VALUE'],
  ['credit over 2^53-1', raw(8, be(2n ** 53n, 8)), 'ERR_HDWP_INVALID_VALUE'],
  ['reason not UTF-8', raw(4, Buffer.concat([ID, Buffer.from([0xff, 0xfe])])), 'ERR_HDWP_BAD_UTF8'],
  ['reason over 4096 bytes', raw(4, Buffer.concat([ID, Buffer.alloc(4097, 0x61)])), 'ERR_HDWP_TOO_LARGE'],
  ['query JSON not an object', raw(5, Buffer.concat([be(1, 4), Buffer.alloc(16, 1), Buffer.from('[1]')])), 'ERR_HDWP_BAD_JSON'],
  ['query JSON broken', raw(5, Buffer.concat([be(1, 4), Buffer.alloc(16, 1), Buffer.from('{"a":')])), 'ERR_HDWP_BAD_JSON'],
  ['stream ends mid-frame', encodeFrame({ kind: 'credit', bytes: 5 }).subarray(0, 20), 'ERR_HDWP_TRUNCATED_FRAME'],
];
for (const [name, bytes, code] of cases) {
  bad(`${name}: ${code}, at every split, with the frames before it kept`, () => {
    const good = Buffer.concat(samples().slice(0, 5).map(encodeFrame));
    const want = samples().slice(0, 5).map(plain);
    // A truncated frame can only be the last thing on a stream.
    const stream = Buffer.concat(code === 'ERR_HDWP_TRUNCATED_FRAME' ? [good, bytes] : [good, bytes, good]);
    for (let cut = good.length; cut <= good.length + bytes.length; cut++) {
      const r = feed([stream.subarray(0, cut), stream.subarray(cut)]);
      assert.is(r.error?.code, code, `cut at ${cut}`);
      assert.equal(r.frames, want, `cut at ${cut}: frames before the bad one are kept`);
      assert.is(r.error?.offset, good.length);
    }
  });
}
bad('the error closes the stream: later pushes and end throw the same code', () => {
  const d = new FrameDecoder();
  assert.throws(() => d.push(raw(0xee, Buffer.alloc(0))), (e: unknown) => e instanceof HdwpError && e.code === 'ERR_HDWP_UNKNOWN_KIND');
  const good = encodeFrame({ kind: 'credit', bytes: 1 });
  assert.throws(() => d.push(good), (e: unknown) => e instanceof HdwpError && e.code === 'ERR_HDWP_UNKNOWN_KIND' && e.frames.length === 0);
  assert.throws(() => d.end(), (e: unknown) => e instanceof HdwpError && e.code === 'ERR_HDWP_UNKNOWN_KIND');
});
bad('a configured payload limit applies from the header alone', () => {
  const bytes = encodeFrame({ kind: 'bbn', batchId: BATCH, reason: 'x'.repeat(100) });
  const r = feed([bytes.subarray(0, 16)], { maxPayload: 100 });
  assert.is(r.error?.code, 'ERR_HDWP_TOO_LARGE');
  assert.throws(() => new FrameDecoder({ maxPayload: 0 }), RangeError);
  assert.throws(() => new FrameDecoder({ maxPayload: 2 ** 31 }), RangeError);
});
bad.run();
