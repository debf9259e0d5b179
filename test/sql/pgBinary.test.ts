/**
 * PostgreSQL binary formats on hd_sql's wire door (timestamp, date, numeric, arrays): encoders and
 * decoders against PostgreSQL's own layouts, and binary parameters over a socket — good ones bind,
 * malformed ones answer 22P03 and leave the connection usable after Sync.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { arrayBinary, dateBinary, dateFromBinary, numericBinary, numericFromBinary, PgBinaryError, timestampBinary, timestampFromBinary } from '../../sql/pgwire/pgBinary';
import { paramOf } from '../../sql/pgwire/pgTypes';
import { errorFieldsOf, RawSession, serveDoor, startupMessage, typedMessage } from './pgRawSession';
import { T0 } from './support';

const i16 = (n: number): Buffer => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const i32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

const codec = suite('pgwire binary formats');

codec('numeric: PostgreSQL layout (base 10000, weight, sign, dscale) and round trips', () => {
  // 2.50 is digits [2, 5000], weight 0, dscale 2 in PostgreSQL.
  assert.equal([...numericBinary('2.50')], [...Buffer.concat([i16(2), i16(0), i16(0), i16(2), i16(2), i16(5000)])]);
  assert.equal([...numericBinary('-0.0001')], [...Buffer.concat([i16(1), i16(-1), i16(0x4000), i16(4), i16(1)])]);
  assert.equal([...numericBinary('0')], [...Buffer.concat([i16(0), i16(0), i16(0), i16(0)])]);
  for (const v of ['0', '2.50', '-12.5', '12345678901234567890.123456789', '0.0001', '0.00000025', '10000', '100000000', '-0.5', '1.000', 'NaN', '99999999']) {
    assert.is(numericFromBinary(numericBinary(v)), v, v);
  }
  assert.throws(() => numericFromBinary(Buffer.from([0, 1])), (e: unknown) => e instanceof PgBinaryError && /8-byte header/.test(e.message));
  assert.throws(() => numericFromBinary(Buffer.concat([i16(2), i16(0), i16(0), i16(0), i16(1)])), /bad header/);
  assert.throws(() => numericFromBinary(Buffer.concat([i16(1), i16(0), i16(0x1234), i16(0), i16(1)])), /bad sign/);
  assert.throws(() => numericFromBinary(Buffer.concat([i16(1), i16(0), i16(0), i16(0), i16(10000)])), /bad digit/);
  assert.throws(() => numericBinary('1e5'), /not a decimal/);
});

codec('timestamp and date: microseconds / days since 2000-01-01, both ways', () => {
  const b = timestampBinary(T0 * 1000);
  assert.is(b.readBigInt64BE(0), BigInt(T0 * 1000 - 946_684_800_000) * 1000n);
  assert.is(timestampFromBinary(b, false), '2023-11-14 22:13:20');
  assert.is(timestampFromBinary(b, true), '2023-11-14 22:13:20+00');
  const us = (n: bigint): Buffer => {
    const x = Buffer.alloc(8);
    x.writeBigInt64BE(n);
    return x;
  };
  assert.is(timestampFromBinary(us(-1n), false), '1999-12-31 23:59:59.999999');
  assert.is(timestampFromBinary(us(1_500_000n), false), '2000-01-01 00:00:01.500000');
  assert.is(timestampFromBinary(us(-946_684_800_000_000n - 1n), false), '1969-12-31 23:59:59.999999');
  assert.is(timestampFromBinary(us(0x7fffffffffffffffn), true), 'infinity');
  assert.throws(() => timestampFromBinary(Buffer.alloc(4), true), /must be 8 bytes/);
  assert.is(dateBinary(T0 * 1000).readInt32BE(0), Math.floor((T0 * 1000 - 946_684_800_000) / 86_400_000));
  assert.is(dateFromBinary(dateBinary(T0 * 1000)), '2023-11-14');
  assert.is(dateFromBinary(i32(-1)), '1999-12-31');
  assert.throws(() => dateFromBinary(Buffer.alloc(3)), /must be 4 bytes/);
});

codec('arrays: one dimension, lower bound 1, null flag, element OID; the empty array has no dimensions', () => {
  const a = arrayBinary(23, [i32(1), null]);
  assert.equal([...a], [...Buffer.concat([i32(1), i32(1), i32(23), i32(2), i32(1), i32(4), i32(1), i32(-1)])]);
  assert.equal([...arrayBinary(25, [])], [...Buffer.concat([i32(0), i32(0), i32(25)])]);
});

codec('binary parameters: wrong sizes are PgBinaryErrors; text booleans take PostgreSQL spellings', () => {
  assert.is(paramOf(i32(7), 1, 23), 7);
  assert.throws(() => paramOf(Buffer.alloc(3), 1, 23), (e: unknown) => e instanceof PgBinaryError && /int4 parameter must be 4 bytes/.test(e.message));
  assert.throws(() => paramOf(Buffer.alloc(2), 1, 20), /int8/);
  assert.throws(() => paramOf(Buffer.alloc(0), 1, 16), /bool/);
  assert.is(paramOf(numericBinary('2.5'), 1, 1700), 2.5);
  assert.is(paramOf(timestampBinary(T0 * 1000), 1, 1184), '2023-11-14 22:13:20+00');
  for (const t of ['t', 'TRUE', 'true', 'on', 'yes', '1']) assert.is(paramOf(Buffer.from(t), 0, 16), true, t);
  for (const f of ['f', 'FALSE', 'off', 'no', '0']) assert.is(paramOf(Buffer.from(f), 0, 16), false, f);
});

const wire = suite('pgwire binary parameters over a socket');
const server = serveDoor(wire, 30);

const parse = (name: string, sql: string, oids: number[]): Buffer => typedMessage('P', Buffer.concat([Buffer.from(`${name}\0${sql}\0`), i16(oids.length), ...oids.map(i32)]));
const bind = (statement: string, formats: number[], params: Buffer[]): Buffer =>
  typedMessage('B', Buffer.concat([Buffer.from(`\0${statement}\0`), i16(formats.length), ...formats.map(i16), i16(params.length), ...params.flatMap((p) => [i32(p.length), p]), i16(0)]));
const execute = typedMessage('E', Buffer.from('\0\0\0\0\0'));
const sync = typedMessage('S', Buffer.alloc(0));

wire('good binary parameters bind (int4, timestamptz, numeric); a malformed one answers 22P03 and the connection goes on', async () => {
  const s = await RawSession.open(server.port);
  s.send(startupMessage({ user: 'tester' }));
  assert.ok((await s.until('Z')) !== 'closed');
  s.send(parse('s1', 'SELECT $1::INTEGER + 1 AS n, $2::TIMESTAMPTZ AS t, $3::DECIMAL(5,2) AS d', [23, 1184, 1700]), bind('s1', [1], [i32(7), timestampBinary(T0 * 1000), numericBinary('2.5')]), execute, sync);
  const row = await s.until('D');
  assert.ok(row !== 'closed');
  const cells: string[] = [];
  let at = 2;
  for (let i = 0; i < 3; i++) {
    const len = (row as { body: Buffer }).body.readInt32BE(at);
    cells.push((row as { body: Buffer }).body.toString('utf8', at + 4, at + 4 + len));
    at += 4 + len;
  }
  assert.equal(cells, ['8', '2023-11-14 22:13:20+00', '2.50']);
  assert.ok((await s.until('Z')) !== 'closed');
  s.send(bind('s1', [1], [Buffer.alloc(3), timestampBinary(0), numericBinary('1')]), execute, sync);
  const err = await s.until('E');
  assert.ok(err !== 'closed');
  const f = errorFieldsOf((err as { body: Buffer }).body);
  assert.is(f.C, '22P03');
  assert.match(f.M ?? '', /int4 parameter must be 4 bytes, got 3/);
  assert.ok((await s.until('Z')) !== 'closed', 'ReadyForQuery after Sync');
  s.send(typedMessage('Q', Buffer.from('SELECT 5 AS five\0')));
  const again = await s.until('D');
  assert.ok(again !== 'closed' && again.body.subarray(6).toString() === '5');
  s.end();
});

codec.run();
wire.run();
