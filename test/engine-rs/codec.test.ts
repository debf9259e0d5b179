import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RecordCodec, Schema } from '../../index';

const schema = Schema.parse({
  id: 'all', record_size: 200, time_field: 'ts', byte_order: 'little',
  enums: { proto: { values: { tcp: 6, udp: 17 } } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'u8', offset: 8, size: 1, type: 'uint8' },
    { name: 'u16', offset: 9, size: 2, type: 'uint16' },
    { name: 'i32', offset: 11, size: 4, type: 'int32' },
    { name: 'u64', offset: 15, size: 8, type: 'uint64' },
    { name: 'i128', offset: 23, size: 16, type: 'int128' },
    { name: 'u256', offset: 39, size: 32, type: 'uint256' },
    { name: 'num', offset: 71, size: 8, type: 'numeric', precision: 18, scale: 3 },
    { name: 'f', offset: 79, size: 4, type: 'float' },
    { name: 'd', offset: 83, size: 8, type: 'double' },
    { name: 'b', offset: 91, size: 1, type: 'boolean' },
    { name: 'raw', offset: 92, size: 4, type: 'bytes' },
    { name: 's', offset: 96, size: 8, type: 'string' },
    { name: 'v4', offset: 104, size: 4, type: 'ipv4' },
    { name: 'v6', offset: 108, size: 16, type: 'ipv6' },
    { name: 'key', offset: 124, size: 8, type: 'blob' },
    { name: 'mv', offset: 132, size: 2, type: 'chess_move' },
    { name: 'fen', offset: 134, size: 30, type: 'chess_fen' },
    { name: 'proto', offset: 164, size: 1, type: 'uint8', enum: 'proto' },
    { name: 'dt', offset: 165, size: 4, type: 'uint32', time_reference: { field: 'ts', unit: 'ms' } },
    { name: 'arr', offset: 169, size: 8, type: 'bytes', array: { element: 'uint16', count: 4, enum: 'proto' } },
    { name: 'ts4', offset: 177, size: 4, type: 'timestamp' },
  ],
});
const codec = new RecordCodec(schema);

const START = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';

const convert = suite('convertRecordToBinary');
convert('writes every type into its byte range', () => {
  const rec = codec.convertRecordToBinary({
    ts: '2024-01-01T00:00:00Z', u8: '255', u16: '0x1234', i32: '-2', u64: '18446744073709551615',
    i128: '-170141183460469231731687303715884105728', u256: '0x' + 'ab'.repeat(32), num: '-1.5', f: '1.5', d: '-0.25',
    b: 'true', raw: '0xdeadbeef', s: 'héllo', v4: '192.168.1.2', v6: '2001:db8::1', key: 'obj/1', mv: 'exd8=Q+', fen: START,
    proto: 'udp', dt: '1500', arr: '["tcp", 17, 9]', ts4: '4294967295', unknown: 'skipped',
  });
  assert.equal(codec.lastErrors, []);
  assert.is(rec.length, 200);
  assert.is(rec.readBigInt64LE(0), 1704067200n);
  assert.is(rec[8], 255);
  assert.is(rec.readUInt16LE(9), 0x1234);
  assert.is(rec.readInt32LE(11), -2);
  assert.is(rec.readBigUInt64LE(15), 2n ** 64n - 1n);
  assert.equal([...rec.subarray(23, 39)], [...Array(15).fill(0), 0x80]);
  assert.equal([...rec.subarray(39, 71)], Array(32).fill(0xab));
  assert.is(rec.readBigInt64LE(71), -1500n);
  assert.is(rec.readFloatLE(79), 1.5);
  assert.is(rec.readDoubleLE(83), -0.25);
  assert.is(rec[91], 1);
  assert.is(rec.subarray(92, 96).toString('hex'), 'deadbeef');
  assert.is(rec.subarray(96, 104).toString('utf8'), 'héllo\0\0');
  assert.is(rec.readUInt32LE(104), 0xc0a80102);
  assert.is(rec.subarray(108, 124).toString('hex'), '20010db8000000000000000000000001');
  assert.is(rec.subarray(124, 129).toString(), 'obj/1');
  assert.ok(rec.readUInt16BE(132) !== 0);
  assert.equal([...rec.subarray(134, 142)], [0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff], 'occupancy bitboard');
  assert.is(rec[142], 0b11110, 'white to move, KQkq');
  assert.is(rec[164], 17);
  assert.is(rec.readUInt32LE(165), 1500);
  assert.equal([rec.readUInt16LE(169), rec.readUInt16LE(171), rec.readUInt16LE(173), rec.readUInt16LE(175)], [6, 17, 9, 0]);
  assert.is(rec.readUInt32LE(177), 4294967295);
});
convert('a refused value leaves its field zero and is reported', () => {
  const rec = codec.convertRecordToBinary({ u8: '256', v4: 'localhost', s: 'much too long', ts: '7' });
  assert.equal(codec.lastErrors.map((e) => e.field).sort(), ['s', 'u8', 'v4']);
  assert.match(codec.lastErrors.find((e) => e.field === 'u8')!.reason, /out of range for uint8/);
  assert.is(rec[8], 0);
  assert.is(rec.readBigInt64LE(0), 7n);
});
convert('a Map works; a fresh buffer each call; empty without a schema', () => {
  const a = codec.convertRecordToBinary(new Map([['u8', '1']]));
  const b = codec.convertRecordToBinary(new Map([['u8', '2']]));
  assert.is(a[8], 1);
  assert.is(b[8], 2);
  assert.is(new RecordCodec().convertRecordToBinary({ u8: '1' }).length, 0);
  assert.throws(() => new RecordCodec().parseNdjsonSync(Buffer.from('{}')), /no dataset schema/);
});
convert('big-endian schemas write big-endian', () => {
  const be = new RecordCodec({ id: 'be', record_size: 12, byte_order: 'big', time_field: 'ts', fields: [{ name: 'ts', offset: 0, size: 8, type: 'timestamp' }, { name: 'a', offset: 8, size: 4, type: 'ipv4' }] });
  const rec = be.convertRecordToBinary({ ts: '1', a: '10.0.0.1' });
  assert.is(rec.toString('hex'), '00000000000000010a000001');
});
convert.run();

const nd = suite('parseNdjson');
const good = (i: number) => JSON.stringify({ ts: 1700000000 + i, u8: i % 256, s: `h${i}`, proto: 'tcp', arr: [6, 17], b: true });
nd('good lines kept around bad ones, line numbers from firstLine', () => {
  const text = [
    good(0),
    '{"ts": 1, "u8": 300}',
    '{"ts": 1, "v4": "1.2.3.256"}',
    '{"ts": 1, "proto": "sctp"}',
    '{"ts": 1, "s": "far too long"}',
    '{"ts": 1,',
    '"not an object"',
    '',
    good(1) + '\r',
    '{"s": "caf\\u00e9", "key": "\\ud83d\\ude00"}',
    '{"u8": 1.5}',
  ].join('\n');
  const r = codec.parseNdjsonSync(Buffer.from(text), 100);
  assert.is(r.count, 3);
  assert.is(r.records.length, 600);
  assert.equal(r.errors.map((e) => [e.line, e.field ?? null]), [[101, 'u8'], [102, 'v4'], [103, 'proto'], [104, 's'], [105, null], [106, null], [110, 'u8']]);
  assert.match(r.errors[0].reason, /out of range for uint8/);
  assert.match(r.errors[3].reason, /12 bytes, the field holds 8/);
  assert.match(r.errors[4].reason, /broken JSON at column 10/);
  assert.match(r.errors[5].reason, /not a JSON object/);
  assert.is(r.records.readBigInt64LE(200), 1700000001n);
  assert.is(r.records.subarray(496, 501).toString(), 'café');
  assert.is(r.records.subarray(524, 528).toString(), '😀');
});
nd('async path gives the same answer as the sync path on a large block', async () => {
  const lines: string[] = [];
  for (let i = 0; i < 5000; i++) lines.push(i % 1000 === 7 ? '{"u8": -1}' : good(i));
  const buf = Buffer.from(lines.join('\n') + '\n');
  assert.ok(buf.length > 64 * 1024);
  const a = await codec.parseNdjson(buf, 1);
  const b = codec.parseNdjsonSync(buf, 1);
  assert.is(a.count, 4995);
  assert.ok(a.records.equals(b.records));
  assert.equal(a.errors, b.errors);
  assert.equal(a.errors.map((e) => e.line), [8, 1008, 2008, 3008, 4008]);
});
nd('blocks cut at every line boundary and in several sizes give the same records', () => {
  const text = Buffer.from([good(1), '{"u8":"x"}', '', good(2), '{bad', good(3)].join('\n') + '\n');
  const whole = codec.parseNdjsonSync(text);
  for (const size of [1, 3, 7, 16, 64, text.length]) {
    let carry = Buffer.alloc(0);
    let line = 1;
    const recs: Buffer[] = [];
    const errs: unknown[] = [];
    for (let off = 0; off < text.length; off += size) {
      carry = Buffer.concat([carry, text.subarray(off, off + size)]);
      const cut = carry.lastIndexOf(10) + 1;
      const r = codec.parseNdjsonSync(carry.subarray(0, cut), line);
      for (const b of carry.subarray(0, cut)) if (b === 10) line++;
      carry = carry.subarray(cut);
      recs.push(r.records);
      errs.push(...r.errors);
    }
    assert.ok(Buffer.concat(recs).equals(whole.records), `chunk size ${size}`);
    assert.equal(errs, whole.errors);
  }
});
nd('rejects a bad firstLine', () => {
  assert.throws(() => codec.parseNdjsonSync(Buffer.from('{}'), -1), /firstLine/);
});
nd.run();

const csv = suite('parseCsv');
csv('RFC 4180 quoting, header row, errors with lines', async () => {
  const text = 'ts,s,proto,arr,extra\r\n1,"a,b",tcp,"6,17",x\r\n2,"q""t",udp,,\n3,"two\nl",tcp,,\n4,x,sctp,,\n5,"x"y,tcp,,\n6\n7,ok,,,\n';
  const r = await codec.parseCsv(Buffer.from(text));
  assert.is(r.count, 4);
  assert.equal(r.errors.map((e) => [e.line, e.field ?? null]), [[6, 'proto'], [7, null], [8, null]]);
  assert.is(r.records.subarray(96, 99).toString(), 'a,b');
  assert.is(r.records.readUInt16LE(169 + 2), 17);
  assert.is(r.records.subarray(296, 299).toString(), 'q"t');
  assert.is(r.records.subarray(496, 501).toString(), "two\nl");
});
csv('given header, delimiter and firstLine', () => {
  const r = codec.parseCsvSync(Buffer.from('5;x\n6;"y;z"\nbad;q\n'), { header: ['ts', 's'], delimiter: ';', firstLine: 10 });
  assert.is(r.count, 2);
  assert.equal(r.errors.map((e) => [e.line, e.field]), [[12, 'ts']]);
  assert.is(r.records.subarray(296, 299).toString(), 'y;z');
  assert.throws(() => codec.parseCsvSync(Buffer.from('1'), { header: ['ts'], delimiter: '""' }), /delimiter/);
});
csv('unterminated quote is reported, earlier rows kept', () => {
  const r = codec.parseCsvSync(Buffer.from('ts,s\n1,a\n2,"open\n'));
  assert.is(r.count, 1);
  assert.match(r.errors[0].reason, /unterminated quoted field/);
  assert.is(r.errors[0].line, 3);
});
csv.run();

const win = suite('timeWindows');
win('splits by the schema interval in record order', () => {
  const r = codec.parseNdjsonSync(Buffer.from('{"ts":130}\n{"ts":10}\n{"ts":179}\n{"ts":59}\n'));
  const w = codec.timeWindows(r.records);
  assert.equal(w.map((x) => [x.start, x.count]), [[120, 2], [0, 2]]);
  assert.is(w[0].records.readBigInt64LE(200), 179n);
  assert.equal(codec.timeWindows(r.records, 3600).map((x) => x.count), [4]);
  assert.throws(() => codec.timeWindows(r.records.subarray(1)), /whole number/);
});
win.run();
