/**
 * HDQuery `field_mask` (docs/query.md): parsed from hex into bytes, written back as lowercase hex,
 * and refused with a QueryError naming `field_mask` when it is not a non-empty even-length hex
 * string of at most 1 MiB.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_FIELD_MASK_BYTES, parseHdQuery, QueryError, serializeHdQuery } from '../../query/hdQuery';

const base = {
  query_id: 7,
  dataset: 'flows',
  batch_ids: ['ab'.repeat(64)],
  return_address: { host: '127.0.0.1', port: 6989 },
  token: '0123456789abcdef0123456789abcdef',
};

function withMask(mask: unknown): string {
  return JSON.stringify({ ...base, field_mask: mask });
}

function refusal(json: string): QueryError {
  try {
    parseHdQuery(json, { maxBytes: 8 * 1024 * 1024 });
  } catch (err) {
    assert.instance(err, QueryError);
    return err as QueryError;
  }
  assert.unreachable('expected a QueryError');
  throw new Error('unreachable');
}

test('absent: no fieldMask, and none written back', () => {
  const q = parseHdQuery(JSON.stringify(base));
  assert.is(q.fieldMask, undefined);
  assert.not.ok('field_mask' in (JSON.parse(serializeHdQuery(q)) as object));
});

test('hex in either case parses to the bytes and serialises back as lowercase hex', () => {
  const q = parseHdQuery(withMask('FFff0000ffFF'));
  assert.ok(q.fieldMask);
  assert.equal([...(q.fieldMask as Uint8Array)], [0xff, 0xff, 0, 0, 0xff, 0xff]);
  const json = serializeHdQuery(q);
  assert.is((JSON.parse(json) as { field_mask: string }).field_mask, 'ffff0000ffff');
  assert.equal(parseHdQuery(json), q);
});

test('a narrowed copy (as the SCC builds its legs) keeps the mask', () => {
  const q = parseHdQuery(withMask('00ff'));
  const leg = JSON.parse(serializeHdQuery({ ...q, batchIds: [] })) as { field_mask?: string };
  assert.is(leg.field_mask, '00ff');
});

test('a view into a larger buffer serialises only its own bytes', () => {
  const big = Buffer.from('aabbccddee', 'hex');
  const q = { ...parseHdQuery(JSON.stringify(base)), fieldMask: big.subarray(1, 3) };
  assert.is((JSON.parse(serializeHdQuery(q)) as { field_mask: string }).field_mask, 'bbcc');
});

test('refused: not a string, empty, odd length, not hex, over 1 MiB', () => {
  for (const bad of [42, null, ['ff'], { hex: 'ff' }, true]) {
    assert.match(refusal(withMask(bad)).message, /^field_mask: expected hex digits/, JSON.stringify(bad));
  }
  assert.match(refusal(withMask('')).message, /^field_mask: expected an even, non-zero number of hex digits/);
  assert.match(refusal(withMask('fff')).message, /^field_mask: expected an even, non-zero number of hex digits \(2 a byte\), got 3$/);
  assert.is(refusal(withMask('ffzz')).message, 'field_mask: expected hex digits only (0-9, a-f)');
  assert.is(refusal(withMask('0x00')).message, 'field_mask: expected hex digits only (0-9, a-f)');
  assert.match(refusal(withMask('ff'.repeat(MAX_FIELD_MASK_BYTES + 1))).message, new RegExp(`^field_mask: ${MAX_FIELD_MASK_BYTES + 1} bytes, the limit is ${MAX_FIELD_MASK_BYTES}$`));
  // Exactly 1 MiB is taken (where the reader allows JSON that large).
  assert.is(parseHdQuery(withMask('ff'.repeat(MAX_FIELD_MASK_BYTES)), { maxBytes: 4 * 1024 * 1024 }).fieldMask?.length, MAX_FIELD_MASK_BYTES);
});

test('serialising refuses an empty mask as a reader would', () => {
  const q = { ...parseHdQuery(JSON.stringify(base)), fieldMask: new Uint8Array(0) };
  assert.throws(() => serializeHdQuery(q), (e: unknown) => e instanceof QueryError && /^field_mask: /.test(e.message));
});

test.run();
