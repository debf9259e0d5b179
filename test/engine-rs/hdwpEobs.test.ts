/**
 * The result-stream kinds eobs (several batches ended at once, docs/hdwp.md "eobs") and trace_context
 * through the TypeScript API: encode → decode, every malformed form with its code, every split point of
 * a stream that carries them, which servers accept them, and HdwpClient.sendEobs / sendTraceContext.
 */
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FrameDecoder, HdwpError, decodeDatagram, encodeFrame, generateBatchIdNumber } from '../../index';
import type { Frame } from '../../index';
import { HDWP_MAX_EOBS_BATCHES } from '../../engine-rs/hdwpFrame';
import type { BatchEnd, EobsFrame } from '../../engine-rs/hdwpFrame';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { RawPeer, helloBytes, startServer, until } from '../sources/hdwpKit';
import { AUTH, be, codeOf, decodeAll, plain, raw } from './hdwpFixtures';

const EOBS = 0x0b;
const TRACE = 0x0c;
const TRACEPARENT = '{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"hd=1"}';
const id = generateBatchIdNumber;
/** `n` batch ends for batches `from`, `from + 1`, … */
const ends = (n: number, from = 1): BatchEnd[] => Array.from({ length: n }, (_, i) => ({ batchId: id(from + i), recordCount: i * 3 }));

/** An eobs payload with any count field and any entries `[batch number, record count]` (no query block). */
function eobsPayload(count: number, entries: [number, number | bigint][]): Buffer {
  return Buffer.concat([be(count, 4), ...entries.flatMap(([n, c]) => [Buffer.from(id(n).bytes), be(c, 8)])]);
}

const nest = (n: number): string => `${'{"a":'.repeat(n - 1)}{}${'}'.repeat(n - 1)}`;

/** Every malformed eobs or trace_context frame (checksum right), with the code it must give. */
const MALFORMED: [string, Buffer, string][] = [
  ['no count', raw(EOBS, Buffer.alloc(0)), 'ERR_HDWP_TRUNCATED_FIELD'],
  ['3 count bytes', raw(EOBS, Buffer.from([0, 0, 1])), 'ERR_HDWP_TRUNCATED_FIELD'],
  ['count 0', raw(EOBS, eobsPayload(0, [])), 'ERR_HDWP_INVALID_VALUE'],
  ['count 0, an entry', raw(EOBS, eobsPayload(0, [[1, 1]])), 'ERR_HDWP_INVALID_VALUE'],
  ['count 65536, no entries', raw(EOBS, eobsPayload(65536, [])), 'ERR_HDWP_INVALID_VALUE'],
  ['count 2^32 - 1', raw(EOBS, eobsPayload(2 ** 32 - 1, [[1, 1]])), 'ERR_HDWP_INVALID_VALUE'],
  ['count 2, one entry', raw(EOBS, eobsPayload(2, [[1, 1]])), 'ERR_HDWP_INCONSISTENT_LENGTH'],
  ['count 1, two entries', raw(EOBS, eobsPayload(1, [[1, 1], [2, 1]])), 'ERR_HDWP_INCONSISTENT_LENGTH'],
  ['a byte after the entries', raw(EOBS, Buffer.concat([eobsPayload(1, [[1, 1]]), Buffer.from([0])])), 'ERR_HDWP_INCONSISTENT_LENGTH'],
  ['an entry one byte short', raw(EOBS, eobsPayload(1, [[1, 1]]).subarray(0, 4 + 71)), 'ERR_HDWP_INCONSISTENT_LENGTH'],
  ['record count 2^53', raw(EOBS, eobsPayload(2, [[1, 1], [2, 2n ** 53n]])), 'ERR_HDWP_INVALID_VALUE'],
  ['record count 2^64 - 1', raw(EOBS, eobsPayload(1, [[1, 2n ** 64n - 1n]])), 'ERR_HDWP_INVALID_VALUE'],
  ['a batch twice', raw(EOBS, eobsPayload(3, [[1, 1], [2, 2], [1, 1]])), 'ERR_HDWP_INVALID_VALUE'],
  ['an all-zero token', raw(EOBS, Buffer.concat([be(5, 4), Buffer.alloc(16), eobsPayload(1, [[1, 1]])]), 1), 'ERR_HDWP_INVALID_VALUE'],
  ['a query block cut short', raw(EOBS, Buffer.from([0, 0, 0, 5, 1, 1]), 1), 'ERR_HDWP_TRUNCATED_FIELD'],
  ['trace context: empty', raw(TRACE, Buffer.alloc(0)), 'ERR_HDWP_BAD_JSON'],
  ['trace context: an array', raw(TRACE, Buffer.from('["00-aa"]')), 'ERR_HDWP_BAD_JSON'],
  ['trace context: a string', raw(TRACE, Buffer.from('"traceparent"')), 'ERR_HDWP_BAD_JSON'],
  ['trace context: cut JSON', raw(TRACE, Buffer.from('{"traceparent":')), 'ERR_HDWP_BAD_JSON'],
  ['trace context: not UTF-8', raw(TRACE, Buffer.from([0x7b, 0xff, 0x7d])), 'ERR_HDWP_BAD_UTF8'],
  ['trace context: 65 deep', raw(TRACE, Buffer.from(nest(65))), 'ERR_HDWP_BAD_JSON'],
];

const codec = suite('eobs and trace_context: the frames');
codec('eobs round-trips with and without the query block: kind 0x0B, a big-endian u32 count, then id + u64 per batch', () => {
  for (const auth of [undefined, AUTH]) {
    const f: EobsFrame = { kind: 'eobs', batches: [{ batchId: id(1), recordCount: 0x010203040506 }, { batchId: id(2), recordCount: Number.MAX_SAFE_INTEGER }], ...(auth ? { auth } : {}) };
    const bytes = encodeFrame(f);
    assert.equal([bytes[5], bytes.readUInt16BE(6)], [0x0b, auth ? 1 : 0]);
    const p = bytes.subarray(auth ? 36 : 16);
    assert.equal(p, eobsPayload(2, [[1, 0x010203040506], [2, Number.MAX_SAFE_INTEGER]]), 'no closing hash, nothing after the last entry');
    assert.equal(plain(decodeAll(bytes)[0]), plain(f));
    assert.equal(plain(decodeDatagram(bytes)), plain(f), 'as a datagram');
  }
});
codec('eobs holds up to 65 535 batches, decoded in order', () => {
  const batches = ends(HDWP_MAX_EOBS_BATCHES);
  const bytes = encodeFrame({ kind: 'eobs', batches });
  assert.is(bytes.length, 16 + 4 + 72 * HDWP_MAX_EOBS_BATCHES);
  const f = decodeAll(bytes)[0] as EobsFrame;
  assert.is(f.batches.length, HDWP_MAX_EOBS_BATCHES);
  assert.ok(
    f.batches.every((b, i) => b.batchId.toHex() === batches[i].batchId.toHex() && b.recordCount === batches[i].recordCount),
    'every entry in order',
  );
});
codec('trace_context round-trips; the traceparent layout is the receiver’s to check, not the codec’s', () => {
  for (const auth of [undefined, AUTH]) {
    for (const json of [TRACEPARENT, '{"traceparent":"not checked here"}', '{}', nest(64)]) {
      const f: Frame = { kind: 'traceContext', json, ...(auth ? { auth } : {}) };
      const bytes = encodeFrame(f);
      assert.is(bytes[5], 0x0c);
      assert.is(bytes.toString('utf8', auth ? 36 : 16), json, 'the JSON is the rest of the payload');
      assert.equal(plain(decodeAll(bytes)[0]), plain(f));
    }
  }
});
codec('every malformed eobs and trace_context gives its code, and keeps the frame before it', () => {
  const credit = raw(8, be(1, 8));
  for (const [what, bad, code] of MALFORMED) {
    assert.is(codeOf(() => decodeAll(bad)), code, what);
    assert.is(codeOf(() => decodeDatagram(bad)), code, `${what} (datagram)`);
    try {
      new FrameDecoder().push(Buffer.concat([credit, bad, credit]));
      assert.unreachable(what);
    } catch (e) {
      assert.is((e as HdwpError).frames.length, 1, `${what}: the frame before it is kept`);
    }
  }
  const over = raw(EOBS, eobsPayload(65536, Array.from({ length: 65536 }, (_, i): [number, number] => [i + 1, 1])));
  assert.is(codeOf(() => decodeAll(over)), 'ERR_HDWP_INVALID_VALUE', '65 536 entries with a matching length');
});
codec('encodeFrame refuses what a decoder would reject', () => {
  const eobs = (batches: BatchEnd[], extra: Partial<EobsFrame> = {}): Frame => ({ kind: 'eobs', batches, ...extra });
  const cases: [string, Frame, string][] = [
    ['no batches', eobs([]), 'ERR_HDWP_INVALID_VALUE'],
    ['65 536 batches', eobs(ends(65536)), 'ERR_HDWP_INVALID_VALUE'],
    ['record count 2^53', eobs([{ batchId: id(1), recordCount: 2 ** 53 }]), 'ERR_HDWP_INVALID_VALUE'],
    ['a fractional record count', eobs([{ batchId: id(1), recordCount: 1.5 }]), 'ERR_HDWP_INVALID_VALUE'],
    ['a negative record count', eobs([{ batchId: id(1), recordCount: -1 }]), 'ERR_HDWP_INVALID_VALUE'],
    ['a batch twice', eobs([...ends(3), { batchId: id(2), recordCount: 9 }]), 'ERR_HDWP_INVALID_VALUE'],
    ['an all-zero token', eobs(ends(1), { auth: { queryId: 1, token: Buffer.alloc(16) } }), 'ERR_HDWP_INVALID_VALUE'],
    ['trace context: an array', { kind: 'traceContext', json: '[1]' }, 'ERR_HDWP_BAD_JSON'],
    ['trace context: empty', { kind: 'traceContext', json: '' }, 'ERR_HDWP_BAD_JSON'],
    ['trace context: 65 deep', { kind: 'traceContext', json: nest(65) }, 'ERR_HDWP_BAD_JSON'],
  ];
  for (const [what, f, code] of cases) assert.is(codeOf(() => encodeFrame(f)), code, what);
});
codec.run();

/** Frames (plain) and the error code of `parts` pushed one after another into one decoder. */
function feed(parts: Buffer[]): { frames: unknown[]; error?: string; position: number } {
  const d = new FrameDecoder();
  const frames: unknown[] = [];
  for (const p of parts) {
    try {
      frames.push(...d.push(p).map(plain));
    } catch (e) {
      if (!(e instanceof HdwpError)) throw e;
      frames.push(...e.frames.map(plain));
      return { frames, error: e.code, position: d.position };
    }
  }
  return { frames, position: d.position };
}

/** A result stream: hello, trace_context, records, eobs with and without the query block. */
const STREAM: Frame[] = [
  { kind: 'hello', version: 1, role: 'storageNode', datasetId: 'flows', recordSize: 2, auth: AUTH },
  { kind: 'traceContext', json: TRACEPARENT, auth: AUTH },
  { kind: 'records', batchId: id(1), recordSize: 2, count: 2, payload: Buffer.from([1, 2, 3, 4]), auth: AUTH },
  { kind: 'eobs', batches: ends(5), auth: AUTH },
  { kind: 'eobs', batches: [{ batchId: id(9), recordCount: Number.MAX_SAFE_INTEGER }] },
];

const split = suite('eobs and trace_context: split points');
split('a result stream carrying both kinds decodes the same cut at every byte and in chunks', () => {
  const stream = Buffer.concat(STREAM.map(encodeFrame));
  const want = STREAM.map(plain);
  for (let cut = 0; cut <= stream.length; cut++) {
    const r = feed([stream.subarray(0, cut), stream.subarray(cut)]);
    assert.equal([r.frames, r.error, r.position], [want, undefined, stream.length], `cut at ${cut}`);
  }
  for (const size of [1, 3, 16, 71, 72, 73, 500]) {
    const parts: Buffer[] = [];
    for (let at = 0; at < stream.length; at += size) parts.push(stream.subarray(at, at + size));
    assert.equal(feed(parts).frames, want, `chunks of ${size}`);
  }
});
split('each malformed frame closes the stream at every cut, keeping the frames before it', () => {
  const good = Buffer.concat(STREAM.map(encodeFrame));
  const kinds = STREAM.map((f) => f.kind);
  for (const [what, bad, code] of MALFORMED) {
    const all = Buffer.concat([good, bad, encodeFrame(STREAM[0])]);
    for (let cut = 0; cut <= all.length; cut++) {
      const r = feed([all.subarray(0, cut), all.subarray(cut)]);
      const got = r.frames.map((f) => (f as { kind: string }).kind);
      assert.equal([got, r.error, r.position], [kinds, code, good.length], `${what}: cut at ${cut}`);
    }
  }
});
split.run();

const server = suite('eobs and trace_context: who accepts them');
server('an ingest server refuses both with error 1, as it refuses aggregate', async () => {
  for (const f of [STREAM[1], STREAM[4]]) {
    const { server: s, port } = await startServer({ role: 'storageNode' });
    const peer = await RawPeer.connect(port);
    await peer.write(Buffer.concat([helloBytes('scc', 'flows', 2), encodeFrame(f)]));
    const e = await peer.errorAndClose();
    assert.is(e.code, 1);
    assert.match(e.message, new RegExp(`unexpected ${f.kind} frame`));
    await s.close();
  }
});
server('a query client’s listener hands both to its handler, uncharged, and the stream stays open', async () => {
  const { server: s, port, seen } = await startServer({ role: 'queryClient' });
  const peer = await RawPeer.connect(port);
  await peer.write(Buffer.concat(STREAM.map((f, i) => (i === 0 ? helloBytes('storageNode', 'flows', 2) : encodeFrame(f)))));
  const handled = (): Frame[] => seen.frames.get(seen.conns[0]?.id ?? -1) ?? [];
  await until(() => handled().length >= 4);
  assert.equal(
    handled().map((f) => f.kind),
    ['traceContext', 'records', 'eobs', 'eobs'],
  );
  assert.is(peer.frames.filter((f) => f.kind === 'error').length, 0);
  peer.socket.destroy();
  await s.close();
});
server.run();

/** A plain TCP peer that answers hello with hello and `window` bytes of credit and keeps every other frame. */
async function rawPeer(window: number): Promise<{ port: number; frames: Frame[]; close(): void }> {
  const frames: Frame[] = [];
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    const d = new FrameDecoder();
    s.on('data', (c: Buffer) => {
      for (const f of d.push(c)) {
        if (f.kind !== 'hello') frames.push(f);
        else s.write(Buffer.concat([encodeFrame({ ...f, role: 'queryClient', auth: undefined }), encodeFrame({ kind: 'credit', bytes: window })]));
      }
    });
  });
  const port = await new Promise<number>((r) => srv.listen(0, '127.0.0.1', () => r((srv.address() as net.AddressInfo).port)));
  return {
    port,
    frames,
    close: () => {
      for (const s of sockets) s.destroy();
      srv.close();
    },
  };
}

const connectTo = (port: number, maxFrameBytes?: number): Promise<HdwpClient> =>
  HdwpClient.connect({ host: '127.0.0.1', port, role: 'storageNode', datasetId: 'flows', recordSize: 4, auth: AUTH, acks: false, ...(maxFrameBytes ? { maxFrameBytes } : {}) });

const entries = (frames: Frame[]): string[] => frames.flatMap((f) => (f.kind === 'eobs' ? f.batches.map((b) => `${b.batchId.toHex()}:${b.recordCount}`) : []));

const client = suite('HdwpClient.sendEobs / sendTraceContext');
client('70 000 batches go in two frames of at most 65 535 when the frame limit allows, in order, with the stream’s auth', async () => {
  const peer = await rawPeer(64 << 20);
  const c = await connectTo(peer.port, 16 + (16 << 20));
  const batches = ends(70_000);
  await c.sendEobs(batches);
  await until(() => peer.frames.length >= 2);
  assert.equal(
    peer.frames.map((f) => (f.kind === 'eobs' ? f.batches.length : f.kind)),
    [65_535, 4_465],
  );
  assert.ok(peer.frames.every((f) => f.kind === 'eobs' && f.auth?.queryId === AUTH.queryId && Buffer.from(f.auth.token).equals(AUTH.token)));
  assert.equal(entries(peer.frames), entries([{ kind: 'eobs', batches }]));
  await c.close();
  peer.close();
});
client('with the default 1 MiB frames the same list takes five frames, each within the limit', async () => {
  const peer = await rawPeer(64 << 20);
  const c = await connectTo(peer.port);
  const batches = ends(70_000, 100_000);
  await c.sendEobs(batches);
  await until(() => peer.frames.length >= 5);
  const sizes = peer.frames.map((f) => (f.kind === 'eobs' ? 16 + 20 + 4 + 72 * f.batches.length : -1));
  assert.equal(sizes.length, 5);
  assert.ok(sizes.every((n) => n > 0 && n <= 1024 * 1024), `frame sizes ${sizes.join(', ')}`);
  assert.equal(entries(peer.frames), entries([{ kind: 'eobs', batches }]));
  await c.close();
  peer.close();
});
client('trace context first, then eobs, in call order; refusals send nothing and the stream goes on', async () => {
  const peer = await rawPeer(1 << 20);
  const c = await connectTo(peer.port);
  await c.sendTraceContext(TRACEPARENT);
  await c.sendEobs([]);
  const twice = await c.sendEobs([...ends(2), { batchId: id(1), recordCount: 5 }]).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.is((twice as HdwpError).code, 'ERR_HDWP_INVALID_VALUE');
  const tooMany = await c.sendEobs([{ batchId: id(1), recordCount: 2 ** 53 }]).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.is((tooMany as HdwpError).code, 'ERR_HDWP_INVALID_VALUE');
  const notJson = await c.sendTraceContext('traceparent=00-…').then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.is((notJson as HdwpError).code, 'ERR_HDWP_BAD_JSON');
  await c.sendEobs(ends(3));
  await until(() => peer.frames.length >= 2);
  assert.equal(
    peer.frames.map((f) => f.kind),
    ['traceContext', 'eobs'],
  );
  const [tc] = peer.frames;
  assert.equal(tc.kind === 'traceContext' ? [tc.json, tc.auth?.queryId] : [], [TRACEPARENT, AUTH.queryId]);
  assert.equal(entries(peer.frames), entries([{ kind: 'eobs', batches: ends(3) }]));
  await c.close();
  peer.close();
});
client.run();
