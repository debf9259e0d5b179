import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema, SchemaError } from '../../index';
import type { SchemaJson } from '../../index';

const netflow: SchemaJson = {
  id: 'netflow', name: 'Network flows', record_size: 150, byte_order: 'little', time_field: 'ts', time_index_interval: 60,
  enums: { proto: { values: { icmp: 1, tcp: 6, udp: 17 }, default_label: 'other' } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
    { name: 'src', offset: 9, size: 4, type: 'ipv4' },
    { name: 'src6', offset: 13, size: 16, type: 'ipv6' },
    { name: 'amount', offset: 29, size: 8, type: 'numeric', precision: 18, scale: 4 },
    { name: 'dt', offset: 37, size: 4, type: 'uint32', time_reference: { field: 'ts', unit: 'ms' } },
    { name: 'ports', offset: 41, size: 8, type: 'bytes', array: { element: 'uint16', count: 4 } },
    { name: 'host', offset: 49, size: 32, type: 'string' },
  ],
};

/** The issues of a schema that must be refused. */
function issues(json: string | object): string[] {
  try {
    Schema.parse(json);
  } catch (e) {
    assert.instance(e, SchemaError);
    const err = e as SchemaError;
    assert.is(err.code, 'ERR_SCHEMA');
    return err.issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('schema was accepted');
}

function withField(f: object): SchemaJson {
  return { ...netflow, fields: [...netflow.fields, f as SchemaJson['fields'][number]] };
}

const parse = suite('Schema.parse');
parse('reads the contract example', () => {
  const s = Schema.parse(netflow);
  assert.is(s.id, 'netflow');
  assert.is(s.name, 'Network flows');
  assert.is(s.recordSize, 150);
  assert.is(s.byteOrder, 'little');
  assert.is(s.timeField, 'ts');
  assert.is(s.timeIndexInterval, 60);
  assert.equal(s.field('amount'), { name: 'amount', offset: 29, size: 8, type: 'numeric', precision: 18, scale: 4 });
  assert.equal(s.field('dt')?.timeReference, { field: 'ts', unit: 'ms' });
  assert.equal(s.field('ports')?.array, { element: 'uint16', count: 4 });
  assert.equal(s.enums.proto, { values: { icmp: 1, tcp: 6, udp: 17 }, defaultLabel: 'other' });
});
parse('text and object forms agree; toJSON round-trips', () => {
  const a = Schema.parse(JSON.stringify(netflow));
  const b = Schema.parse(a.toJSON());
  assert.equal(b.fields, a.fields);
  assert.equal(JSON.parse(JSON.stringify(b)), a.toJSON());
});
parse('defaults are spelled out', () => {
  const s = Schema.parse({ id: 't', record_size: 4, time_field: 'ts', fields: [{ name: 'ts', offset: 0, size: 4, type: 'timestamp' }] });
  assert.is(s.name, 't');
  assert.is(s.byteOrder, 'little');
  assert.is(s.timeIndexInterval, 60);
});
parse('enum codes up to 2^64-1 stay exact (bigint in, bigint out)', () => {
  const s = Schema.parse({
    id: 'b', record_size: 16, time_field: 'ts',
    enums: { e: { values: { max: 2n ** 64n - 1n, str: '9007199254740993', small: 3 } } },
    fields: [{ name: 'ts', offset: 0, size: 8, type: 'timestamp' }, { name: 'c', offset: 8, size: 8, type: 'uint64', enum: 'e' }],
  });
  assert.is(s.enums.e.values.max, 2n ** 64n - 1n);
  assert.is(s.enums.e.values.str, 9007199254740993n);
  assert.is(s.enums.e.values.small, 3);
  assert.is(Schema.parse(s.toJSON()).enums.e.values.max, 2n ** 64n - 1n);
});
parse.run();

const bad = suite('Schema.parse refuses');
bad('broken JSON and missing keys', () => {
  assert.match(issues('{"id": ')[0], /not valid JSON/);
  assert.equal(issues({ id: 'x' }), ['record_size: missing required key', 'time_field: missing required key', 'fields: missing required key']);
});
bad('unknown type with a suggestion', () => {
  assert.equal(issues(withField({ name: 'x', offset: 81, size: 4, type: 'unit32' })), ['fields[8].type: unknown type "unit32" (did you mean "uint32"?)']);
});
bad('overlapping ranges unless declared overlay', () => {
  const l = issues(withField({ name: 'x', offset: 10, size: 4, type: 'uint32' }));
  assert.match(l[0], /^fields\[8\]\.offset: bytes 10\.\.14 of "x" overlap "src"/);
  Schema.parse(withField({ name: 'x', offset: 10, size: 4, type: 'uint32', overlay: true }));
});
bad('ranges outside the record and sizes wrong for the type', () => {
  assert.match(issues(withField({ name: 'x', offset: 148, size: 4, type: 'uint32' }))[0], /fields\[8\]\.offset: bytes 148\.\.152 lie outside the record/);
  assert.match(issues(withField({ name: 'x', offset: 81, size: 2, type: 'ipv4' }))[0], /fields\[8\]\.size: size 2 is wrong for ipv4/);
});
bad('enum problems', () => {
  assert.match(issues(withField({ name: 'x', offset: 81, size: 4, type: 'float', enum: 'proto' }))[0], /fields\[8\]\.enum: enum on a non-integer field/);
  assert.match(issues(withField({ name: 'x', offset: 81, size: 1, type: 'uint8', enum: 'protocol' }))[0], /unknown enum "protocol" \(did you mean "proto"\?\)/);
  const big = { ...netflow, enums: { proto: { values: { a: 1, b: 256 } } } };
  assert.match(issues(big)[0], /fields\[1\]\.enum: enum "proto" has code 256 .*too big for uint8/);
  assert.match(issues('{"id":"x","record_size":8,"time_field":"ts","enums":{"e":{"values":{"a":1,"a":2,"b":1}}},"fields":[{"name":"ts","offset":0,"size":8,"type":"timestamp"}]}').join('\n'), /duplicate label "a"[\s\S]*duplicate code 1/);
});
bad('duplicate names, numeric range, time problems, arrays, unknown keys, interval 0', () => {
  assert.match(issues(withField({ name: 'host', offset: 81, size: 1, type: 'uint8' }))[0], /fields\[8\]\.name: duplicate field name "host" \(also fields\[7\]\)/);
  assert.match(issues(withField({ name: 'x', offset: 81, size: 4, type: 'numeric', precision: 12 }))[0], /precision 12 is out of range: 1\.\.9/);
  assert.match(issues({ ...netflow, time_field: 'host' })[0], /^time_field: field "host" \(fields\[7\]\) is not a timestamp/);
  assert.match(issues(withField({ name: 'x', offset: 81, size: 4, type: 'uint32', time_reference: { field: 'src', unit: 'ms' } }))[0], /time_reference\.field: field "src"/);
  assert.match(issues(withField({ name: 'x', offset: 81, size: 4, type: 'string', time_reference: { field: 'ts', unit: 's' } }))[0], /time_reference on a non-integer field/);
  assert.match(issues(withField({ name: 'x', offset: 81, size: 4, type: 'string', array: { element: 'uint8', count: 4 } }))[0], /array on a non-bytes field/);
  assert.match(issues(withField({ name: 'x', offset: 81, size: 4, type: 'bytes', array: { element: 'uint16', count: 3 } }))[0], /3 × 2 bytes does not fit/);
  assert.match(issues(withField({ name: 'x', offset: 81, size: 4, type: 'bytes', colour: 'red' }))[0], /fields\[8\]\.colour: unknown key/);
  assert.equal(issues({ ...netflow, time_index_interval: 0 }), ['time_index_interval: interval 0: must be at least 1 second']);
});
bad('reports every problem at once', () => {
  const l = issues({ id: '1x', record_size: 4, time_field: 'nope', fields: [{ name: 'a', offset: 0, size: 8, type: 'int64' }, { name: 'b', offset: 2, size: 1, type: 'uint9' }] });
  assert.ok(l.length >= 4, l.join('\n'));
  assert.ok(l.some((m) => m.startsWith('id:')));
  assert.ok(l.some((m) => m.startsWith('fields[0].offset:')));
  assert.ok(l.some((m) => m.startsWith('fields[1].type:')));
  assert.ok(l.some((m) => m.startsWith('time_field:')));
});
bad('the error message lists the issues', () => {
  try {
    Schema.parse({ id: 'x' });
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, /3 problems[\s\S]*record_size: missing required key/);
  }
});
bad.run();
