/**
 * Reusing a LocalSqlSession across statements: `reuseOrRegister` keeps a table registered with the
 * same Schema object (emptied), `park` empties or drops it, a parked table lends no metadata, and
 * `begin`/`rollback` discard a statement's rows.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { LocalSql } from '../../local/localSql';
import { LocalSqlError } from '../../local/localSqlError';

const local = new LocalSql({ threads: 1 });
const test = suite('LocalSqlSession reuse: reuseOrRegister and park');

const field = (name: string, type: arrow.DataType, meta: Record<string, string>): arrow.Field => new arrow.Field(name, type, true, new Map(Object.entries(meta)));
const schemaA = new arrow.Schema([field('v', new arrow.Int32(), { 'hd.type': 'int32' })]);
const schemaB = new arrow.Schema([field('v', new arrow.Int32(), { 'hd.type': 'uint16' })]);
const rows = (schema: arrow.Schema, xs: number[]): arrow.RecordBatch => new arrow.Table(schema, { v: arrow.vectorFromArray(xs, new arrow.Int32()) } as never).batches[0]!;
const count = async (s: Awaited<ReturnType<LocalSql['openSession']>>, t: string): Promise<number> => Number((await s.query(`SELECT count(*) AS n FROM ${t}`)).getChildAt(0)?.get(0));

test('the same schema object reuses the table emptied; another schema replaces it', async () => {
  const s = await local.openSession();
  try {
    await s.reuseOrRegister('t', schemaA, { aliases: ['T alias'] });
    await s.append('t', rows(schemaA, [1, 2, 3]));
    assert.is(await count(s, 't'), 3);
    await s.reuseOrRegister('t', schemaA, { aliases: ['T alias'] });
    assert.is(await count(s, 't'), 0, 'rows of the last use are gone');
    assert.is(await count(s, '"T alias"'), 0, 'the alias view still works');
    await s.append('t', rows(schemaA, [4]));
    assert.is(await count(s, '"T alias"'), 1);
    await s.reuseOrRegister('t', schemaB);
    await s.append('t', rows(schemaB, [5, 6]));
    assert.is(await count(s, 't'), 2);
  } finally {
    await s.close();
  }
});

test('park empties a small table (kept) and drops a large one', async () => {
  const s = await local.openSession();
  try {
    await s.reuseOrRegister('small', schemaA);
    await s.append('small', rows(schemaA, [1, 2]));
    await s.reuseOrRegister('large', schemaB);
    await s.append('large', rows(schemaB, [1, 2, 3, 4, 5]));
    await s.park('small', { dropAbove: 4 });
    await s.park('large', { dropAbove: 4 });
    await s.park('never-registered');
    assert.is(await count(s, 'small'), 0);
    assert.is(s.parkedRows, 2);
    assert.equal(s.tableNames, ['small']);
    try {
      await s.query('SELECT * FROM large');
      assert.unreachable('a dropped table is gone');
    } catch (err) {
      assert.instance(err, LocalSqlError);
      assert.match((err as Error).message, /large/);
    }
  } finally {
    await s.close();
  }
});

test('a parked table lends no metadata to results; registered again it does', async () => {
  const s = await local.openSession();
  try {
    await s.reuseOrRegister('a', schemaA);
    await s.append('a', rows(schemaA, [1]));
    await s.park('a');
    await s.reuseOrRegister('b', schemaB);
    await s.append('b', rows(schemaB, [7]));
    const out = await s.query('SELECT v FROM b');
    assert.is(out.schema.fields[0]!.metadata.get('hd.type'), 'uint16', "b's field, not the parked a's");
    await s.park('b');
    await s.reuseOrRegister('a', schemaA);
    assert.is((await s.query('SELECT v FROM a')).schema.fields[0]!.metadata.get('hd.type'), 'int32');
  } finally {
    await s.close();
  }
});

test('rows appended between begin and rollback are discarded; tables registered inside are forgotten', async () => {
  const s = await local.openSession();
  try {
    await s.reuseOrRegister('t', schemaA);
    await s.append('t', rows(schemaA, [1]));
    await s.begin();
    assert.ok(s.inTransaction);
    await s.append('t', rows(schemaA, [2, 3, 4]));
    assert.is(await count(s, 't'), 4, 'the transaction sees its rows');
    await s.reuseOrRegister('inside', schemaB);
    await s.append('inside', rows(schemaB, [9]));
    await s.rollback();
    assert.is(s.inTransaction, false);
    assert.is(await count(s, 't'), 1, 'only the committed row is left');
    assert.equal(s.tableNames, ['t'], 'the table created inside the transaction is forgotten');
    await s.park('t');
    assert.is(s.parkedRows, 1, 'rolled-back rows are not counted as emptied');
    await s.rollback(); // no transaction: nothing
    await s.begin();
    try {
      await s.begin();
      assert.unreachable('nested begin');
    } catch (err) {
      assert.match((err as Error).message, /already open/);
    }
    await s.rollback();
  } finally {
    await s.close();
  }
});

test('a closed session says so', async () => {
  const s = await local.openSession();
  assert.is(s.isClosed, false);
  await s.close();
  assert.is(s.isClosed, true);
  try {
    await s.reuseOrRegister('t', schemaA);
    assert.unreachable();
  } catch (err) {
    assert.is((err as LocalSqlError).code, 'ERR_SQL_CLOSED');
  }
});

test.after(() => local.close());
test.run();
