/**
 * HDQuery `top` (docs/query.md "Top records") and `merge_batches` ("Merged results"): parsed and
 * written back, and refused with a QueryError naming the key when malformed (`top` also with
 * `limit` or `aggregate`).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_TOP_K, parseHdQuery, type QueryError, serializeHdQuery } from '../../query/hdQuery';
import { parseRefusal } from './hdQueryRefusal';

const base = {
  query_id: 7,
  dataset: 'flows',
  batch_ids: ['ab'.repeat(64)],
  return_address: { host: '127.0.0.1', port: 6989 },
  token: '0123456789abcdef0123456789abcdef',
};

/** The QueryError `base` with `extra`'s keys is refused with. */
function refusal(extra: Record<string, unknown>): QueryError {
  return parseRefusal({ ...base, ...extra });
}

test('top parses and is written back as it came', () => {
  const q = parseHdQuery(JSON.stringify({ ...base, top: { field: 'bytes', k: 5, desc: true } }));
  assert.equal(q.top, { field: 'bytes', k: 5, desc: true });
  assert.equal((JSON.parse(serializeHdQuery(q)) as { top: unknown }).top, { field: 'bytes', k: 5, desc: true });
  assert.is(parseHdQuery(JSON.stringify(base)).top, undefined);
});

test('a malformed top, or one with limit or aggregate, is refused naming the key', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ top: 'bytes' }, 'top'],
    [{ top: { field: 'bytes', k: 5 } }, 'top.desc'],
    [{ top: { field: '', k: 5, desc: true } }, 'top.field'],
    [{ top: { field: 'bytes', k: 0, desc: true } }, 'top.k'],
    [{ top: { field: 'bytes', k: MAX_TOP_K + 1, desc: true } }, 'top.k'],
    [{ top: { field: 'bytes', k: 1.5, desc: true } }, 'top.k'],
    [{ top: { field: 'bytes', k: 5, desc: true, nulls: 'last' } }, 'top.nulls'],
    [{ top: { field: 'bytes', k: 5, desc: true }, limit: 5 }, 'limit'],
    [{ top: { field: 'bytes', k: 5, desc: true }, aggregate: { version: 1, measures: [{ fn: 'count' }] } }, 'limit'],
  ];
  for (const [extra, path] of cases) {
    const e = refusal(extra);
    assert.ok(e.path === path || (path === 'limit' && e.path === 'top'), `${JSON.stringify(extra)}: ${e.path} ${e.message}`);
  }
});

test('merge_batches is an optional boolean, written back as given', () => {
  const q = parseHdQuery(JSON.stringify({ ...base, merge_batches: true }));
  assert.is(q.mergeBatches, true);
  assert.is((JSON.parse(serializeHdQuery(q)) as { merge_batches: unknown }).merge_batches, true);
  assert.is(parseHdQuery(JSON.stringify(base)).mergeBatches, undefined);
  assert.is(refusal({ merge_batches: 'yes' }).path, 'merge_batches');
});

test.run();
