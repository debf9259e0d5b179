/**
 * pushableSubQueries remembers each filter's check per schema: asked again, it answers the same
 * (kept or refused with the same reason) without compiling the filter again, and a schema that
 * cannot encode a value is not answered from another schema's check.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ScanFilter } from '../../engine-rs/scan';
import { Schema } from '../../engine-rs/schema';
import type { SubQuery } from '../../query/filter';
import { pushableSubQueries } from '../../sdk/pushableFilters';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const t = suite('pushableSubQueries');

/** Counts ScanFilter.compile calls while `fn` runs. */
function compiles<T>(fn: () => T): { value: T; compiled: number } {
  const real = ScanFilter.compile.bind(ScanFilter);
  let compiled = 0;
  ScanFilter.compile = ((schema, json) => {
    compiled++;
    return real(schema, json);
  }) as typeof ScanFilter.compile;
  try {
    return { value: fn(), compiled };
  } finally {
    ScanFilter.compile = real;
  }
}

const good = { field: 'dst_port', op: 'eq', value: '443' } as const;
const bad = { field: 'src_port', op: 'eq', value: '70000' } as const;
const sq: SubQuery[] = [{ filters: [good, bad] }];

t('the same filters asked again: the same answer, without compiling them again', () => {
  const schema = Schema.parse(schemaJson);
  const first = compiles(() => pushableSubQueries(schema, sq));
  assert.is(first.compiled, 2);
  assert.equal(first.value.subQueries, [{ filters: [good] }]);
  assert.is(first.value.notes.length, 1);
  const again = compiles(() => pushableSubQueries(schema, sq));
  assert.is(again.compiled, 0, 'answered from the checks made before');
  assert.equal(again.value, first.value, 'the same filters kept, the same note');
});

t('checks are per schema: another schema checks the filters itself', () => {
  const a = Schema.parse(schemaJson);
  const b = Schema.parse(schemaJson);
  compiles(() => pushableSubQueries(a, sq));
  const other = compiles(() => pushableSubQueries(b, sq));
  assert.is(other.compiled, 2);
  assert.equal(other.value.subQueries, [{ filters: [good] }]);
});

t.run();
