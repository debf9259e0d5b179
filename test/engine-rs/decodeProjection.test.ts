import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { Schema, RecordDecodeError, arrowSchemaFor, decodeRecords, decodeRecordsSync } from '../../engine-rs/index';
import { FLOW, generate } from '../../bench/flows';

const test = suite('decode projection (DecodeOptions.fields)');
const schema = Schema.parse(FLOW);
const small = generate(50); // 7.5 KB: decoded on the calling thread
const large = generate(1000); // 150 KB: decoded by a native task

/** A column's values in a comparable form (bigints, typed arrays and nested vectors as plain values). */
function valuesOf(v: arrow.Vector | null): unknown[] {
  assert.ok(v, 'column present');
  const plain = (x: unknown): unknown => {
    if (typeof x === 'bigint') return `${x}n`;
    if (x instanceof arrow.Vector) return valuesOf(x);
    if (ArrayBuffer.isView(x)) return Array.from(x as unknown as ArrayLike<number>);
    return x;
  };
  return Array.from({ length: v.length }, (_, i) => plain(v.get(i)));
}

function sameColumns(got: arrow.RecordBatch, full: arrow.RecordBatch, names: readonly string[]): void {
  assert.equal(got.schema.fields.map((f) => f.name), [...names], 'columns in the order given');
  assert.is(got.numRows, full.numRows);
  for (const name of names) {
    const want = full.schema.fields.find((f) => f.name === name)!;
    const have = got.schema.fields.find((f) => f.name === name)!;
    assert.is(String(have.type), String(want.type), `${name} type`);
    assert.equal([...have.metadata], [...want.metadata], `${name} metadata`);
    assert.equal(valuesOf(got.getChild(name)), valuesOf(full.getChild(name)), `${name} values`);
  }
  assert.equal([...got.schema.metadata], [...full.schema.metadata], 'schema metadata (hd.dataset)');
}

const projections: readonly (readonly string[])[] = [
  ['ts', 'proto', 'dport', 'bytes', 'packets'],
  ['packets', 'ts'],
  ['src6', 'amount', 'ports', 'tags', 'host', 'score', 'ok', 'dt'],
  FLOW.fields.map((f) => f.name),
];

test('a projection gives the full decode\'s columns, in the order given (sync and task paths)', async () => {
  for (const records of [small, large]) {
    const full = await decodeRecords(schema, records);
    for (const names of projections) {
      sameColumns(await decodeRecords(schema, records, { fields: names }), full, names);
      if (records === small) sameColumns(decodeRecordsSync(schema, records, { fields: names }), full, names);
    }
  }
});

test('raw addresses combine with a projection', async () => {
  const full = await decodeRecords(schema, large, { addresses: 'raw' });
  const got = await decodeRecords(schema, large, { addresses: 'raw', fields: ['dst', 'src6'] });
  sameColumns(got, full, ['dst', 'src6']);
  assert.is(String(got.schema.fields[0]!.type), 'Uint32');
});

test('arrowSchemaFor with fields is the projected batch\'s schema', () => {
  const s = arrowSchemaFor(schema, { fields: ['bytes', 'ts'] });
  assert.equal(s.fields.map((f) => f.name), ['bytes', 'ts']);
  const b = decodeRecordsSync(schema, small, { fields: ['bytes', 'ts'] });
  assert.equal(b.schema.fields.map((f) => String(f.type)), s.fields.map((f) => String(f.type)));
});

test('an empty list gives the row count and no columns', async () => {
  for (const records of [small, large]) {
    const b = await decodeRecords(schema, records, { fields: [] });
    assert.is(b.numRows, records.length / 150);
    assert.is(b.numCols, 0);
  }
});

test('an unknown or repeated field name is ERR_DECODE_SCHEMA naming it', async () => {
  for (const fields of [['ts', 'nope'], ['TS'], ['bytes', 'bytes']]) {
    for (const run of [() => decodeRecordsSync(schema, small, { fields }), () => decodeRecords(schema, large, { fields })]) {
      try {
        await run();
        assert.unreachable(`${fields.join(',')} should fail`);
      } catch (err) {
        assert.instance(err, RecordDecodeError);
        assert.is((err as RecordDecodeError).code, 'ERR_DECODE_SCHEMA');
        const bad = fields[fields.length - 1]!;
        assert.match((err as Error).message, `'${bad}'`);
      }
    }
  }
  try {
    decodeRecordsSync(schema, small, { fields: ['nope'] });
  } catch (err) {
    assert.match((err as Error).message, /no such field \(its fields: ts, proto, src/);
  }
  assert.throws(() => decodeRecordsSync(schema, small, { fields: 'ts' as unknown as string[] }), /array of field names/);
});

test('the record length is still checked under a projection', () => {
  assert.throws(() => decodeRecordsSync(schema, small.subarray(0, 151), { fields: ['ts'] }), (e: unknown) => e instanceof RecordDecodeError && e.code === 'ERR_DECODE_LENGTH');
});

test.run();
