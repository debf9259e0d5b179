/**
 * The Proxy's kept, named batch filters (control/proxy/namedFilterCache.ts): views are apart, the
 * bound holds over all views, the least recently used go first, and a view the cache dropped keeps
 * nothing more.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { NamedFilterCache, viewKey } from '../../control/proxy/namedFilterCache';

const schema = Schema.parse({ id: 'flows', record_size: 8, time_field: 'ts', fields: [{ name: 'ts', type: 'timestamp', offset: 0, size: 8 }] });
const bf = (n: number): { ts: { min: string; max: string } } => ({ ts: { min: String(n), max: String(n) } });

const t = suite('Proxy: NamedFilterCache');

t('views are keyed by dataset, schema layout, hidden ranges and nodes', () => {
  const nodes = [{ name: 'sn0', host: '127.0.0.1', port: 1 }];
  const k = viewKey('flows', schema, [], nodes);
  assert.is(viewKey('flows', Schema.parse(schema.toJSON()), [], [{ ...nodes[0], name: 'sn0' } as (typeof nodes)[0]]), k);
  const other = [
    viewKey('flows2', schema, [], nodes),
    viewKey('flows', Schema.parse({ ...schema.toJSON(), fields: [{ name: 'ts', type: 'timestamp', offset: 0, size: 8 }, { name: 'x', type: 'uint8', offset: 8, size: 1 }], record_size: 9 }), [], nodes),
    viewKey('flows', Schema.parse({ ...schema.toJSON(), byte_order: 'big' }), [], nodes),
    viewKey('flows', schema, [{ offset: 0, size: 1 }], nodes),
    viewKey('flows', schema, [], [{ name: 'sn0', host: '127.0.0.1', port: 2 }]),
    viewKey('flows', schema, [], [...nodes, { name: 'sn1', host: '127.0.0.1', port: 1 }]),
  ];
  assert.is(new Set([k, ...other]).size, other.length + 1);
  const c = new NamedFilterCache(100);
  c.view(k).set('a', bf(1));
  c.view(k).set('b', null);
  assert.equal(c.view(k).get('a'), bf(1));
  assert.is(c.view(k).get('b'), null);
  for (const o of other) assert.is(c.view(o).get('a'), undefined);
});

t('at most capacity entries over all views; least recently used batches and views go first', () => {
  const c = new NamedFilterCache(10);
  const v = c.view('one');
  for (let i = 0; i < 100; i++) {
    v.set(`b${i}`, bf(i));
    // b0 stays in use: it is never dropped.
    assert.equal(v.get('b0'), bf(0));
    assert.ok(c.size <= 10, String(c.size));
  }
  assert.equal(v.get('b99'), bf(99));
  assert.is(v.get('b50'), undefined);
  // Setting an entry again does not count twice.
  v.set('b99', bf(99));
  assert.ok(c.size <= 10);
  // Views: the least recently used one is dropped whole.
  const w = c.view('two');
  for (let i = 0; i < 5; i++) w.set(`w${i}`, bf(i));
  c.view('three').set('x', bf(0));
  assert.ok(c.size <= 10, String(c.size));
  assert.is(c.view('one').get('b0'), undefined);
  assert.equal(c.view('two').get('w4'), bf(4));
  // A dropped view a query still holds keeps nothing more (and does not count).
  v.set('late', bf(1));
  assert.is(c.view('one').get('late'), undefined);
  const before = c.size;
  v.set('later', bf(2));
  assert.is(c.size, before);
});

t.run();
