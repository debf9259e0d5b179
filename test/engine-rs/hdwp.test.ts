import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  MTU_JUMBO,
  MTU_STANDARD,
  decodeDatagram,
  encodeFrame,
  encodeRecords,
  generateBatchIdNumber,
  splitRecordsForMtu,
} from '../../index';
import type { Frame } from '../../index';
import { HDWP_KINDS } from '../../engine-rs/hdwpFrame';
import { AUTH, BATCH, TOKEN, codeOf, crc32c, decodeAll, plain, samples } from './hdwpFixtures';

const encode = suite('encodeFrame');
encode('every kind round-trips through the decoder', () => {
  const frames = samples();
  assert.equal(new Set(frames.map((f) => f.kind)).size, HDWP_KINDS.length, 'samples cover every kind');
  for (const f of frames) {
    const bytes = encodeFrame(f);
    assert.equal(plain(decodeAll(bytes)[0]), plain(f), f.kind);
    assert.equal(plain(decodeDatagram(bytes, MTU_JUMBO)), plain(f), `${f.kind} as a datagram`);
  }
});
encode('header: magic, version, kind, flags, big-endian length, CRC-32C over header and payload', () => {
  const b = encodeFrame({ kind: 'credit', bytes: 0x010203040506, auth: AUTH });
  assert.is(b.toString('latin1', 0, 4), 'HDWP');
  assert.equal([b[4], b[5], b.readUInt16BE(6), b.readUInt32BE(8)], [1, 8, 1, 28]);
  assert.is(b.readUInt32BE(16), AUTH.queryId);
  assert.equal(b.subarray(20, 36), TOKEN);
  assert.equal(Array.from(b.subarray(36)), [0, 0, 1, 2, 3, 4, 5, 6]);
  assert.is(b.readUInt32BE(12), crc32c(b.subarray(0, 12), b.subarray(16)));
  assert.is(crc32c(Buffer.from('123456789')), 0xe3069283, 'the test CRC is CRC-32C');
});
encode('decoded records payloads are views of the pushed bytes, not copies', () => {
  const bytes = encodeFrame({ kind: 'records', batchId: BATCH, recordSize: 2, count: 2, payload: Buffer.from([1, 2, 3, 4]) });
  const f = decodeAll(bytes)[0];
  assert.is(f.kind, 'records');
  if (f.kind !== 'records') return;
  assert.is((f.payload as Buffer).buffer, bytes.buffer);
  bytes[bytes.length - 1] = 9;
  assert.is(f.payload[3], 9);
});
encode('refuses what a decoder would reject', () => {
  const cases: [Frame, string][] = [
    [{ kind: 'records', batchId: BATCH, recordSize: 4, count: 2, payload: Buffer.alloc(7) }, 'ERR_HDWP_INCONSISTENT_LENGTH'],
    [{ kind: 'records', batchId: BATCH, recordSize: 0, count: 0, payload: Buffer.alloc(0) }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'records', batchId: BATCH, recordSize: 70000, count: 1, payload: Buffer.alloc(1) }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'hello', version: 2, role: 'scc', datasetId: 'd', recordSize: 1 }, 'ERR_HDWP_UNSUPPORTED_VERSION'],
    [{ kind: 'hello', version: 1, role: 'scc', datasetId: '', recordSize: 1 }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'hello', version: 1, role: 'nobody' as 'scc', datasetId: 'd', recordSize: 1 }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'query', queryId: 1, token: TOKEN, json: '[1]' }, 'ERR_HDWP_BAD_JSON'],
    [{ kind: 'query', queryId: 1, token: Buffer.alloc(16), json: '{}' }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'query', queryId: 2 ** 32, token: TOKEN, json: '{}' }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'cancel', queryId: 1, token: Buffer.alloc(15, 1) }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'bbn', batchId: BATCH, reason: 'r'.repeat(4097) }, 'ERR_HDWP_TOO_LARGE'],
    [{ kind: 'error', code: 65536, message: '' }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'eob', batchId: BATCH, recordCount: 1, closingHash: Buffer.alloc(65) }, 'ERR_HDWP_TOO_LARGE'],
    [{ kind: 'eob', batchId: BATCH, recordCount: 2 ** 53, closingHash: Buffer.alloc(0) }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'credit', bytes: 0 }, 'ERR_HDWP_INVALID_VALUE'],
    [{ kind: 'credit', bytes: 1.5 }, 'ERR_HDWP_INVALID_VALUE'],
  ];
  for (const [f, code] of cases) assert.is(codeOf(() => encodeFrame(f)), code, JSON.stringify(plain(f)).slice(0, 80));
});
encode.run();

const records = suite('encodeRecords');
records('packs whole records into frames no larger than the limit', () => {
  const data = Buffer.alloc(150 * 1000);
  for (let i = 0; i < data.length; i++) data[i] = i % 251;
  for (const max of [MTU_STANDARD, 4096, 1 << 20]) {
    const bytes = encodeRecords(BATCH, 150, data, { maxFrameBytes: max, auth: AUTH });
    const frames = decodeAll(bytes);
    const joined = Buffer.concat(frames.map((f) => (f.kind === 'records' ? f.payload : Buffer.alloc(0))));
    assert.equal(joined, data, `limit ${max}`);
    for (const f of frames) {
      assert.is(f.kind, 'records');
      if (f.kind !== 'records') continue;
      assert.ok(16 + 20 + 70 + f.payload.length <= max);
      assert.equal((plain(f) as { auth?: unknown }).auth, (plain({ kind: 'credit', bytes: 1, auth: AUTH }) as { auth?: unknown }).auth);
    }
  }
});
records('one frame for a chunk under the default limit; nothing for no records', () => {
  const frames = decodeAll(encodeRecords(BATCH, 10, Buffer.alloc(10 * 5000)));
  assert.is(frames.length, 1);
  assert.is(encodeRecords(BATCH, 10, Buffer.alloc(0)).length, 0);
});
records('rejects partial records and bad sizes', () => {
  assert.is(codeOf(() => encodeRecords(BATCH, 10, Buffer.alloc(25))), 'ERR_HDWP_INCONSISTENT_LENGTH');
  assert.is(codeOf(() => encodeRecords(BATCH, 0, Buffer.alloc(0))), 'ERR_HDWP_INVALID_VALUE');
  assert.is(codeOf(() => encodeRecords(BATCH, 10, Buffer.alloc(10), { maxFrameBytes: 50 })), 'ERR_HDWP_TOO_LARGE');
});
records.run();

const mtu = suite('splitRecordsForMtu');
mtu('standard and jumbo: one frame per datagram, within the MTU, records whole and in order', () => {
  const id = generateBatchIdNumber(9);
  const data = Buffer.alloc(150 * 333);
  for (let i = 0; i < data.length; i++) data[i] = (i * 7) % 256;
  for (const [m, per] of [
    [MTU_STANDARD, 7],
    [MTU_JUMBO, 56],
  ]) {
    const grams = splitRecordsForMtu(m, id, 150, data);
    assert.is(grams.length, Math.ceil(333 / per), `mtu ${m}`);
    const payloads = grams.map((g) => {
      assert.ok(g.length <= m);
      const f = decodeDatagram(g, m);
      assert.is(f.kind, 'records');
      return f.kind === 'records' ? f.payload : Buffer.alloc(0);
    });
    assert.is(payloads[0].length, per * 150);
    assert.equal(Buffer.concat(payloads), data);
  }
});
mtu('the query block costs room; a record too big for the MTU is refused', () => {
  assert.is(splitRecordsForMtu(MTU_STANDARD, BATCH, 1114, Buffer.alloc(1114 * 3)).length, 3);
  assert.is(codeOf(() => splitRecordsForMtu(MTU_STANDARD, BATCH, 1114, Buffer.alloc(1114), AUTH)), 'ERR_HDWP_TOO_LARGE');
  assert.is(codeOf(() => splitRecordsForMtu(MTU_STANDARD, BATCH, 1200, Buffer.alloc(1200))), 'ERR_HDWP_TOO_LARGE');
  assert.is(codeOf(() => splitRecordsForMtu(70000, BATCH, 10, Buffer.alloc(10))), 'ERR_HDWP_INVALID_VALUE');
  assert.equal(splitRecordsForMtu(MTU_STANDARD, BATCH, 10, Buffer.alloc(0)), []);
});
mtu('decodeDatagram wants exactly one frame within the MTU', () => {
  const one = encodeFrame({ kind: 'cancel', queryId: 1, token: TOKEN });
  assert.is(codeOf(() => decodeDatagram(Buffer.concat([one, one]))), 'ERR_HDWP_INCONSISTENT_LENGTH');
  assert.is(codeOf(() => decodeDatagram(one.subarray(0, 20))), 'ERR_HDWP_TRUNCATED_FRAME');
  const big = encodeFrame({ kind: 'bbn', batchId: BATCH, reason: 'x'.repeat(1200) });
  assert.is(codeOf(() => decodeDatagram(big)), 'ERR_HDWP_TOO_LARGE');
  assert.is(decodeDatagram(big, MTU_JUMBO).kind, 'bbn');
});
mtu.run();
