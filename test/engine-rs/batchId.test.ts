import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchID, generateBatchIdNumber, generateBatchIdString, generateBatchIdTime, generateBatchIdsTime } from '../../index';
import { generateBatchIdHexesTime } from '../../engine-rs/batchId';

const str = suite('generateBatchIdString');
str('right-aligns with zero padding on the left', () => {
  const id = generateBatchIdString('abc');
  assert.is(id.bytes.length, 64);
  assert.equal(Array.from(id.bytes.subarray(61)), [0x61, 0x62, 0x63]);
  assert.ok(id.bytes.subarray(0, 61).every((b) => b === 0));
});
str('keeps the first 64 bytes of the UTF-8 encoding', () => {
  const s = 'é'.repeat(40); // 80 bytes
  const id = generateBatchIdString(s);
  assert.equal(Buffer.from(id.bytes), Buffer.from(s, 'utf8').subarray(0, 64));
});
str('empty string is all zeros', () => {
  assert.ok(generateBatchIdString('').bytes.every((b) => b === 0));
});
str.run();

const num = suite('generateBatchIdNumber');
num('big-endian in the final 8 bytes, deterministic', () => {
  const id = generateBatchIdNumber(0x0102030405060708n);
  assert.is(id.toHex().slice(112), '0102030405060708');
  assert.ok(id.equals(generateBatchIdNumber(0x0102030405060708n)));
  assert.is(generateBatchIdNumber(2n ** 64n - 1n).toHex().slice(112), 'ffffffffffffffff');
});
num('rejects negative and too-wide numbers', () => {
  assert.throws(() => generateBatchIdNumber(-1n), /0\.\.2\^64-1/);
  assert.throws(() => generateBatchIdNumber(2n ** 64n), /0\.\.2\^64-1/);
});
num.run();

const time = suite('generateBatchIdTime');
time('floors the start and ceils the end', () => {
  const id = generateBatchIdTime(125, 130, 60);
  assert.is(id.timeStart, 120);
  assert.is(id.timeEnd, 180);
  assert.is(id.toHex().slice(96, 112), (120).toString(16).padStart(16, '0'));
});
time('an end on a boundary stays; interval 0 means one second', () => {
  assert.is(generateBatchIdTime(120, 180, 60).timeEnd, 180);
  const one = generateBatchIdTime(5, 7, 0);
  assert.is(one.timeStart, 5);
  assert.is(one.timeEnd, 7);
});
time('negative times floor toward minus infinity', () => {
  assert.is(generateBatchIdTime(-1, -1, 60).timeStart, -60);
});
time('rejects fractional seconds', () => {
  assert.throws(() => generateBatchIdTime(1.5, 2, 60), /integer/);
});
time.run();

const range = suite('generateBatchIdsTime');
range('one id per interval, inclusive to the rounded end', () => {
  const ids = generateBatchIdsTime(125, 250, 60);
  assert.equal(ids.map((i) => i.timeStart), [120, 180, 240, 300]);
  assert.ok(ids.every((i) => i.timeEnd - i.timeStart === 60));
});
range('an inverted range is empty', () => {
  assert.equal(generateBatchIdsTime(100, 0, 60), []);
});
range('refuses ranges that would need too many ids', () => {
  assert.throws(() => generateBatchIdsTime(0, 1e12, 1), /limit/);
});
range.run();

const cls = suite('BatchID');
cls('round-trips through hex and refuses wrong sizes', () => {
  const id = generateBatchIdString('x');
  assert.ok(BatchID.fromHex(id.toHex()).equals(id));
  assert.throws(() => new BatchID(new Uint8Array(63)), /64 bytes/);
  assert.throws(() => BatchID.fromHex('zz'), /128 hex/);
});
cls.run();

const hexes = suite('generateBatchIdHexesTime');
hexes('names the same ids as generateBatchIdsTime, as lower-case hex, and checks its arguments the same way', () => {
  for (const [s, e, i] of [[1_700_000_000, 1_700_000_100, 0], [1_700_000_000, 1_700_003_600, 60], [5, 5, 0], [0, 86_400, 3600]] as const) {
    assert.equal(generateBatchIdHexesTime(s, e, i), generateBatchIdsTime(s, e, i).map((b) => b.toHex()));
  }
  assert.throws(() => generateBatchIdHexesTime(0.5, 10), /integer/);
});
hexes('a BatchID copies its bytes: changing the source leaves the id as it was', () => {
  const src = new Uint8Array(64).fill(7);
  const id = new BatchID(src);
  src[0] = 1;
  assert.is(id.bytes[0], 7);
});
hexes.run();
