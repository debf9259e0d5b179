import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { QueryError, ScanFilter, Schema } from '../../engine-rs/index';

const schema = Schema.parse({
  id: 'netflow',
  record_size: 64,
  time_field: 'ts',
  enums: { proto: { values: { tcp: 6, udp: 17 } } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
    { name: 'port', offset: 9, size: 2, type: 'uint16' },
    { name: 'ok', offset: 11, size: 1, type: 'boolean' },
    { name: 'host', offset: 12, size: 16, type: 'string' },
    { name: 'fen', offset: 28, size: 30, type: 'chess_fen' },
    { name: 'ports', offset: 58, size: 4, type: 'bytes', array: { element: 'uint16', count: 2 } },
  ],
});

/** The QueryError a sub_queries JSON text (or value) is refused with. */
function refusal(subQueries: unknown): QueryError {
  const json = typeof subQueries === 'string' ? subQueries : JSON.stringify(subQueries);
  try {
    ScanFilter.compile(schema, json);
  } catch (e) {
    assert.instance(e, QueryError);
    const q = e as QueryError;
    assert.is(q.code, 'ERR_QUERY');
    assert.is(q.message, `${q.path}: ${q.reason}`);
    return q;
  }
  throw new Error(`accepted: ${json}`);
}

const one = (filter: object) => refusal([{ filters: [filter] }]);
const sub = { filters: [{ field: 'port', op: 'eq', value: '443' }] };

const errors = suite('ScanFilter.compile refuses malformed filters with the path of the fault');

errors('not JSON, not an array, not objects', () => {
  assert.is(refusal('[{"filters": [').path, 'sub_queries');
  assert.match(refusal('[{"filters": [').reason, /^not JSON/);
  assert.is(refusal('').path, 'sub_queries');
  assert.is(refusal({ filters: [] }).message, 'sub_queries: expected an array of sub-queries, got an object');
  assert.is(refusal(['x']).message, 'sub_queries[0]: expected an object, got a string');
  assert.is(refusal([sub, { filters: 'port' }]).message, 'sub_queries[1].filters: expected an array of filters, got a string');
  assert.is(refusal([{ filters: [7] }]).message, 'sub_queries[0].filters[0]: expected an object, got an integer');
});

errors('17 branches, an empty sub-query, 65 filters, 1025 values', () => {
  assert.not.throws(() => ScanFilter.compile(schema, JSON.stringify(Array(16).fill(sub))));
  assert.is(refusal(Array(17).fill(sub)).message, 'sub_queries: too many branches: 17 sub-queries, the limit is 16');
  const empty = refusal([sub, { filters: [] }]);
  assert.is(empty.path, 'sub_queries[1].filters');
  assert.match(empty.reason, /empty sub-query is refused/);
  assert.is(refusal([{}]).path, 'sub_queries[0].filters');
  assert.is(refusal([{ filters: Array(65).fill(sub.filters[0]) }]).message, 'sub_queries[0].filters: 65 filters in one sub-query, the limit is 64');
  const values = Array.from({ length: 1025 }, (_, i) => String(i));
  assert.is(one({ field: 'port', op: 'in', values }).message, 'sub_queries[0].filters[0].values: in takes 1 to 1024 values, got 1025');
  assert.not.throws(() => ScanFilter.compile(schema, JSON.stringify([{ filters: [{ field: 'port', op: 'in', values: values.slice(0, 1024) }] }])));
});

errors('keys: unknown, repeated, missing, of the wrong kind', () => {
  assert.is(refusal([{ filters: [sub.filters[0]], limit: 1 }]).path, 'sub_queries[0].limit');
  assert.is(one({ field: 'port', op: 'eq', vlaue: '1' }).message, 'sub_queries[0].filters[0].vlaue: unknown key (did you mean "value"?)');
  assert.is(refusal('[{"filters":[{"field":"port","field":"ok","op":"eq","value":"1"}]}]').message, 'sub_queries[0].filters[0].field: duplicate key');
  assert.is(one({ op: 'eq', value: '1' }).message, 'sub_queries[0].filters[0].field: missing');
  assert.is(one({ field: 'port', value: '1' }).message, 'sub_queries[0].filters[0].op: missing');
  assert.is(one({ field: 7, op: 'eq', value: '1' }).path, 'sub_queries[0].filters[0].field');
  assert.is(one({ field: 'port', op: 'eq', value: 443 }).path, 'sub_queries[0].filters[0].value');
  assert.is(one({ field: 'port', op: 'between', values: ['1', 2] }).path, 'sub_queries[0].filters[0].values[1]');
  assert.match(one({ field: 'port', op: '=', value: '1' }).message, /^sub_queries\[0\]\.filters\[0\]\.op: unknown op "="/);
});

errors('operands each op takes', () => {
  assert.is(one({ field: 'port', op: 'eq' }).reason, 'eq needs a value');
  assert.is(one({ field: 'port', op: 'eq', values: ['1'] }).reason, 'eq takes value, not values');
  assert.is(one({ field: 'port', op: 'between', values: ['1', '2', '3'] }).reason, 'between takes exactly 2 values [lo, hi], got 3');
  assert.is(one({ field: 'port', op: 'in', value: '1' }).reason, 'in takes values, not value');
  assert.is(one({ field: 'host', op: 'is_null', value: '' }).reason, 'is_null takes no value');
  assert.is(one({ field: 'fen', op: 'masked_eq', value: '00' }).path, 'sub_queries[0].filters[0].mask');
  assert.is(one({ field: 'port', op: 'eq', value: '1', mask: 'ff' }).path, 'sub_queries[0].filters[0].mask');
});

errors('fields, types and values the schema refuses', () => {
  assert.is(one({ field: 'prto', op: 'eq', value: '6' }).message, 'sub_queries[0].filters[0].field: no field "prto" in dataset "netflow" (did you mean "proto"?)');
  assert.is(one({ field: 'proto', op: 'eq', value: '300' }).message, 'sub_queries[0].filters[0].value: 300 does not fit uint8');
  assert.is(one({ field: 'proto', op: 'eq', value: 'tcp' }).path, 'sub_queries[0].filters[0].value', 'enums take codes');
  assert.is(one({ field: 'ok', op: 'gt', value: 'true' }).path, 'sub_queries[0].filters[0].op');
  assert.is(one({ field: 'port', op: 'is_null' }).reason, 'is_null is refused on uint16 field "port": zero is a value there, not null');
  assert.is(one({ field: 'port', op: 'list_contains', value: '1' }).path, 'sub_queries[0].filters[0].op');
  assert.is(one({ field: 'ports', op: 'list_contains', value: '65536' }).message, 'sub_queries[0].filters[0].value: 65536 does not fit uint16');
  assert.is(one({ field: 'host', op: 'eq', value: 'x'.repeat(17) }).path, 'sub_queries[0].filters[0].value');
  assert.is(one({ field: 'fen', op: 'eq', value: 'zz' }).path, 'sub_queries[0].filters[0].value');
  assert.is(one({ field: 'ts', op: 'between', values: ['0', '2024-01-01'] }).path, 'sub_queries[0].filters[0].values[1]');
  assert.is(refusal([sub, { filters: [sub.filters[0], { field: 'port', op: 'lt', value: '-1' }] }]).path, 'sub_queries[1].filters[1].value');
});

errors.run();
