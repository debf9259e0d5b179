import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { bbnReason, parseBbnReason } from '../../query/batchNotice';
import { clampQos, MAX_BRANCHES, parseHdQuery, QueryError, serializeHdQuery, type HdQuery } from '../../query/hdQuery';
import { isZeroToken, newQueryId, newQueryToken, sameToken } from '../../query/token';

const B1 = 'ab'.repeat(64);
const B2 = '01'.repeat(64);
const TOKEN = '0123456789abcdef0123456789abcdef';

/** A valid query's JSON object, with `patch` applied (undefined removes a key). */
function q(patch: Record<string, unknown> = {}): string {
  const base: Record<string, unknown> = {
    query_id: 7,
    dataset: 'flows',
    batch_ids: [B1, B2],
    sub_queries: [{ filters: [{ field: 'port', op: 'eq', value: '443' }] }],
    return_address: { host: '127.0.0.1', port: 6989 },
    token: TOKEN,
  };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return JSON.stringify(base);
}

/** The QueryError `fn` throws (fails the test when it does not). */
function refusal(fn: () => unknown): QueryError {
  try {
    fn();
  } catch (err) {
    assert.instance(err, QueryError);
    return err as QueryError;
  }
  assert.unreachable('expected a QueryError');
  throw new Error('unreachable');
}

const parse = suite('parseHdQuery');
parse('a valid query comes back typed, defaults filled', () => {
  const p = parseHdQuery(q());
  assert.is(p.queryId, 7);
  assert.is(p.dataset, 'flows');
  assert.equal(p.batchIds, [B1, B2]);
  assert.equal(p.subQueries, [{ filters: [{ field: 'port', op: 'eq', value: '443' }] }]);
  assert.equal(p.targets, []);
  assert.is(p.verifyHash, false);
  assert.is(p.queryQos, 1);
  assert.equal(p.returnAddress, { host: '127.0.0.1', port: 6989 });
  assert.is(Buffer.from(p.token).toString('hex'), TOKEN);
  assert.is(p.limit, undefined);
});
parse('every operator with its operands', () => {
  const filters = [
    { field: 'a', op: 'ne', value: '1' },
    { field: 'a', op: 'lt', value: '1' },
    { field: 'a', op: 'le', value: '1' },
    { field: 'a', op: 'gt', value: '1' },
    { field: 'a', op: 'ge', value: '1' },
    { field: 'a', op: 'between', values: ['1', '9'] },
    { field: 'a', op: 'in', values: ['1', '2', '3'] },
    { field: 's', op: 'is_null' },
    { field: 's', op: 'is_not_null' },
    { field: 's', op: 'prefix', value: 'ab' },
    { field: 'fen', op: 'masked_eq', value: '00FF', mask: '0F0F' },
    { field: 'tags', op: 'list_contains', value: 'x' },
    { field: 'tags', op: 'not_list_contains', value: 'y' },
  ];
  const p = parseHdQuery(q({ sub_queries: [{ filters }], targets: [{ host: 'scc1', port: 6987, grpc_port: 6990 }], verify_hash: true, limit: 10 }));
  assert.is(p.subQueries[0].filters.length, filters.length);
  assert.equal(p.subQueries[0].filters[10], { field: 'fen', op: 'masked_eq', value: '00ff', mask: '0f0f' });
  assert.equal(p.targets, [{ host: 'scc1', port: 6987, grpcPort: 6990 }]);
  assert.is(p.verifyHash, true);
  assert.is(p.limit, 10);
});
parse('return_address.tls (ours) survives a round trip; absent or false it is left out of the wire form', () => {
  const tlsQuery = parseHdQuery(q({ return_address: { host: 'h', port: 7, tls: true } }));
  assert.equal(tlsQuery.returnAddress, { host: 'h', port: 7, tls: true });
  assert.equal((JSON.parse(serializeHdQuery(tlsQuery)) as { return_address: unknown }).return_address, { host: 'h', port: 7, tls: true });
  const plain = parseHdQuery(q({ return_address: { host: 'h', port: 7, tls: false } }));
  assert.equal(plain.returnAddress, { host: 'h', port: 7 });
  assert.equal((JSON.parse(serializeHdQuery(plain)) as { return_address: unknown }).return_address, { host: 'h', port: 7 });
});

parse('unknown keys are refused, naming the key and the closest known one', () => {
  assert.match(refusal(() => parseHdQuery(q({ querry_qos: 3 }))).message, /^querry_qos: unknown key \(did you mean 'query_qos'\?\)/);
  assert.match(refusal(() => parseHdQuery(q({ sub_queries: [{ filters: [{ field: 'a', op: 'eq', value: '1', valus: ['2'] }] }] }))).message, /^sub_queries\[0\]\.filters\[0\]\.valus: unknown key \(did you mean 'value'\?\)/);
  assert.match(refusal(() => parseHdQuery(q({ return_address: { host: 'h', port: 1, secure: true } }))).message, /^return_address\.secure: unknown key/);
  assert.match(refusal(() => parseHdQuery(q({ sub_queries: [{ filters: [{ field: 'a', op: 'eq', value: '1' }], not: true }] }))).message, /^sub_queries\[0\]\.not: unknown key/);
});
parse('batch ids in any case read as their lower-case hex, in order', () => {
  const mixed = `${'AbCdEf'.repeat(21)}09`;
  assert.equal(parseHdQuery(q({ batch_ids: [B1.toUpperCase(), mixed, '0'.repeat(128)] })).batchIds, [B1, mixed.toLowerCase(), '0'.repeat(128)]);
});
parse('many ascending lower-case ids (checked in bulk) are kept as sent; a bad or repeated one among them is still named', () => {
  const ids = Array.from({ length: 300 }, (_, i) => `${'0'.repeat(120)}${i.toString(16).padStart(8, '0')}`);
  assert.equal(parseHdQuery(q({ batch_ids: ids })).batchIds, ids);
  const at = (i: number, id: string): string[] => ids.map((x, k) => (k === i ? id : x));
  // Non-hex characters that sort after every digit, so the ids stay ascending.
  assert.match(refusal(() => parseHdQuery(q({ batch_ids: at(299, `${ids[299]?.slice(0, 127)}g`) }))).message, /^batch_ids\[299\]: expected a batch id as 128 hex digits/);
  assert.match(refusal(() => parseHdQuery(q({ batch_ids: at(150, `${ids[150]?.slice(0, 100)}~${ids[150]?.slice(101)}`) }))).message, /^batch_ids\[150\]: expected a batch id as 128 hex digits/);
  assert.match(refusal(() => parseHdQuery(q({ batch_ids: at(200, ids[199] as string) }))).message, /^batch_ids\[200\]: the same batch as batch_ids\[199\]/);
  // Upper case among ascending ids: folded, and a repeat in another case refused.
  assert.equal(parseHdQuery(q({ batch_ids: [ids[0], B1.toUpperCase()] })).batchIds, [ids[0], B1]);
  assert.match(refusal(() => parseHdQuery(q({ batch_ids: [B1, B1.toUpperCase().replace(/^AB/, 'ab')] }))).message, /^batch_ids\[1\]: the same batch as batch_ids\[0\]/);
});
parse('bad types name the key', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ query_id: -1 }, /^query_id: expected an integer 0\.\.4294967295, got number -1/],
    [{ query_id: 4294967296 }, /^query_id: expected an integer/],
    [{ query_id: '7' }, /^query_id: expected an integer 0\.\.4294967295, got string "7"/],
    [{ query_id: 1.5 }, /^query_id: expected an integer/],
    [{ query_id: undefined }, /^query_id: required/],
    [{ dataset: '' }, /^dataset: expected a dataset id/],
    [{ dataset: 5 }, /^dataset: expected a dataset id/],
    [{ batch_ids: 'x' }, /^batch_ids: expected an array/],
    [{ batch_ids: [B1, 'zz'] }, /^batch_ids\[1\]: expected a batch id as 128 hex digits/],
    [{ batch_ids: [B1, B2, B1.toUpperCase()] }, /^batch_ids\[2\]: the same batch as batch_ids\[0\]/],
    // Every character is checked, at the edges of the hex ranges too, and the length exactly.
    ...['g', 'G', '@', '`', '/', ':', ' '].map((c): [Record<string, unknown>, RegExp] => [{ batch_ids: [`${B1.slice(0, 127)}${c}`] }, /^batch_ids\[0\]: expected a batch id as 128 hex digits/]),
    [{ batch_ids: [B1.slice(1)] }, /^batch_ids\[0\]: expected a batch id as 128 hex digits/],
    [{ batch_ids: [`${B1}0`] }, /^batch_ids\[0\]: expected a batch id as 128 hex digits/],
    [{ batch_ids: [B1, 7] }, /^batch_ids\[1\]: expected a batch id as 128 hex digits \(its 64 bytes\), got number 7/],
    [{ sub_queries: {} }, /^sub_queries: expected an array of SubQuery/],
    [{ sub_queries: [[]] }, /^sub_queries\[0\]: expected a SubQuery object/],
    [{ sub_queries: [{ filters: 'a' }] }, /^sub_queries\[0\]\.filters: expected an array of Filter/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'equals', value: '1' }] }] }, /^sub_queries\[0\]\.filters\[0\]\.op: expected one of eq, ne/],
    [{ sub_queries: [{ filters: [{ field: '', op: 'eq', value: '1' }] }] }, /^sub_queries\[0\]\.filters\[0\]\.field: expected a field name/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'eq', value: 1 }] }] }, /^sub_queries\[0\]\.filters\[0\]\.value: 'eq' takes a string here/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'eq' }] }] }, /^sub_queries\[0\]\.filters\[0\]\.value: 'eq' needs a 'value'/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'eq', value: '1', values: ['1'] }] }] }, /\.values: 'eq' takes no 'values'/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'between', values: ['1'] }] }] }, /\.values: 'between' takes exactly 2 values/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'between', value: '1' }] }] }, /\.value: 'between' takes no 'value'; use 'values'/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'in', values: [] }] }] }, /\.values: 'in' takes 1\.\.1024 values, got 0/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'in', values: Array(1025).fill('1') }] }] }, /'in' takes 1\.\.1024 values, got 1025/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'in', values: ['1', 2] }] }] }, /\.values\[1\]: 'in' takes a string/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'is_null', value: '0' }] }] }, /\.value: 'is_null' takes no 'value'/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'masked_eq', value: '00' }] }] }, /\.mask: 'masked_eq' needs a 'mask'/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'masked_eq', value: '00', mask: 'ffff' }] }] }, /\.mask: 'masked_eq' must be as long as the value \(1 bytes\), got 2/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'masked_eq', value: 'xy', mask: 'ff' }] }] }, /\.value: 'masked_eq' takes hex/],
    [{ sub_queries: [{ filters: [{ field: 'a', op: 'eq', value: '1', mask: 'ff' }] }] }, /\.mask: 'eq' takes no 'mask'/],
    [{ sub_queries: [{ filters: Array(65).fill({ field: 'a', op: 'eq', value: '1' }) }] }, /^sub_queries\[0\]\.filters: 65 filters, the limit is 64/],
    [{ targets: [{ host: 'h' }] }, /^targets\[0\]\.port: expected an integer 1\.\.65535/],
    [{ targets: [{ host: 'h', port: 1, grpc_port: 0 }] }, /^targets\[0\]\.grpc_port: expected an integer 1\.\.65535/],
    [{ verify_hash: 'yes' }, /^verify_hash: expected true or false/],
    [{ return_address: undefined }, /^return_address: required/],
    [{ return_address: { host: '', port: 1 } }, /^return_address\.host: expected a host name/],
    [{ return_address: { host: 'h', port: 70000 } }, /^return_address\.port: expected an integer 1\.\.65535/],
    [{ return_address: { host: 'h', port: 1, tls: 'yes' } }, /^return_address\.tls: expected true or false, got string/],
    [{ token: 'abc' }, /^token: expected 32 hex digits/],
    [{ token: '0'.repeat(32) }, /^token: an all-zero token is refused/],
    [{ limit: -1 }, /^limit: expected an integer 0\.\./],
  ];
  for (const [patch, want] of cases) {
    const e = refusal(() => parseHdQuery(q(patch)));
    assert.match(e.message, want, `${JSON.stringify(patch).slice(0, 80)} → ${e.message}`);
  }
});
parse('not JSON, not an object, too large', () => {
  assert.match(refusal(() => parseHdQuery('{"query_id": ')).message, /^not JSON: /);
  assert.match(refusal(() => parseHdQuery('[1]')).message, /^an HDQuery is a JSON object, got an array/);
  assert.match(refusal(() => parseHdQuery(q(), { maxBytes: 10 })).message, /^the query JSON is \d+ bytes, the limit is 10$/);
  assert.is(parseHdQuery(Buffer.from(q())).queryId, 7, 'bytes are read as UTF-8');
});
parse('17 branches are refused with the contract message; 16 pass', () => {
  const sq = { filters: [{ field: 'a', op: 'eq', value: '1' }] };
  const e = refusal(() => parseHdQuery(q({ sub_queries: Array(17).fill(sq) })));
  assert.is(e.message, 'too many branches: 17 sub-queries, the limit is 16');
  assert.is(e.path, 'sub_queries');
  assert.is(parseHdQuery(q({ sub_queries: Array(MAX_BRANCHES).fill(sq) })).subQueries.length, 16);
  assert.is(parseHdQuery(q({ sub_queries: [{ filters: [{ field: 'a', op: 'in', values: Array(1024).fill('1') }] }] })).subQueries.length, 1, 'an in list is one branch');
});
parse('an empty sub-query is refused', () => {
  const e = refusal(() => parseHdQuery(q({ sub_queries: [{ filters: [{ field: 'a', op: 'eq', value: '1' }] }, { filters: [] }] })));
  assert.is(e.path, 'sub_queries[1].filters');
  assert.match(e.message, /an empty sub-query is refused/);
  assert.equal(parseHdQuery(q({ sub_queries: [] })).subQueries, [], 'no sub-queries at all reads everything');
});
parse('query_qos: absent or invalid is 1, integers are clamped to 1..255', () => {
  const cases: [unknown, number][] = [[undefined, 1], [1, 1], [8, 8], [255, 255], [256, 255], [100000, 255], [0, 1], [-3, 1], [2.5, 1], ['8', 1], [null, 1], [true, 1], [[8], 1]];
  for (const [v, want] of cases) assert.is(parseHdQuery(q({ query_qos: v === undefined ? undefined : v })).queryQos, want, `query_qos ${JSON.stringify(v)}`);
  assert.is(clampQos(Number.NaN), 1);
  assert.is(clampQos(Number.POSITIVE_INFINITY), 1);
});

const ser = suite('serializeHdQuery');
const sample = (patch: Partial<HdQuery> = {}): HdQuery => ({ ...parseHdQuery(q()), ...patch });
ser('round trip, and QoS is clamped on serialisation', () => {
  const p = sample();
  assert.equal(parseHdQuery(serializeHdQuery(p)), p);
  for (const [qos, want] of [[0, 1], [-1, 1], [300, 255], [77, 77], [1.5, 1], [Number.NaN, 1]] as const) {
    const json = JSON.parse(serializeHdQuery(sample({ queryQos: qos }))) as { query_qos: number };
    assert.is(json.query_qos, want, `queryQos ${qos}`);
  }
});
ser('refuses before sending what a reader would refuse', () => {
  const sq = { filters: [{ field: 'a', op: 'eq' as const, value: '1' }] };
  assert.is(refusal(() => serializeHdQuery(sample({ subQueries: Array(17).fill(sq) }))).message, 'too many branches: 17 sub-queries, the limit is 16');
  assert.match(refusal(() => serializeHdQuery(sample({ subQueries: [{ filters: [] }] }))).message, /^sub_queries\[0\]\.filters: an empty sub-query is refused/);
  assert.match(refusal(() => serializeHdQuery(sample({ token: Buffer.alloc(16) }))).message, /^token: an all-zero token/);
  assert.match(refusal(() => serializeHdQuery(sample({ token: Buffer.alloc(4, 1) }))).message, /^token: expected 16 bytes, got 4/);
  assert.match(refusal(() => serializeHdQuery(sample({ queryId: 2 ** 32 }))).message, /^query_id: /);
  assert.match(refusal(() => serializeHdQuery(sample(), { maxBytes: 100 })).message, /the limit is 100$/);
});

const tok = suite('query tokens');
tok('tokens are 16 random bytes, never all zero, compared in constant time', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const t = newQueryToken();
    assert.is(t.length, 16);
    assert.not.ok(isZeroToken(t));
    seen.add(t.toString('hex'));
  }
  assert.is(seen.size, 200);
  const t = newQueryToken();
  assert.ok(sameToken(t, Buffer.from(t)));
  assert.not.ok(sameToken(t, Buffer.alloc(16)));
  assert.not.ok(sameToken(t, t.subarray(0, 8)));
  const id = newQueryId();
  assert.ok(Number.isInteger(id) && id >= 0 && id <= 0xffffffff);
});

const notice = suite('bbn reasons');
notice('the code opens the reason and reads back', () => {
  assert.is(bbnReason(13, 'segment missing'), '13 batch unreadable: segment missing');
  assert.equal(parseBbnReason('13 batch unreadable: segment missing'), { code: 13, message: '13 batch unreadable: segment missing' });
  assert.equal(parseBbnReason('12: mismatch'), { code: 12, message: '12: mismatch' });
  assert.is(parseBbnReason('no code here').code, 0);
  assert.is(parseBbnReason('99999999 x').code, 0);
  assert.is(Buffer.byteLength(bbnReason(12, 'é'.repeat(5000))) <= 4096, true);
});

parse.run();
ser.run();
tok.run();
notice.run();
