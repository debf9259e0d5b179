/**
 * The Proxy's StorageNodeFilters against plain HTTP servers standing in for Storage Nodes: how
 * layouts become field names (kind, size and byte order must match the schema; enums, time
 * references and floats never), replicas joined, requests split at 64 ids, and every malformed or
 * failed answer leaving the batches unknown. (Real nodes: batchFilterVerdict.test.ts.)
 */
import http from 'node:http';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { StorageNodeFilters, FILTER_IDS_PER_CALL } from '../../control/proxy/storageNodeFilters';

const schema = Schema.parse({
  id: 'flows',
  record_size: 32,
  time_field: 'ts',
  enums: { proto: { values: { tcp: 6 } } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'port', offset: 8, size: 2, type: 'uint16' },
    { name: 'proto', offset: 10, size: 1, type: 'uint8', enum: 'proto' },
    { name: 'delta', offset: 12, size: 4, type: 'int32', time_reference: { field: 'ts', unit: 'ms' } },
    { name: 'temp', offset: 16, size: 4, type: 'int32' },
    { name: 'ratio', offset: 20, size: 4, type: 'float' },
    { name: 'small', offset: 24, size: 1, type: 'int8' },
  ],
});

const id = (n: number): string => n.toString(16).padStart(128, '0');
const range = (offset: number, size: number, kind: string, min: string, max: string, big_endian = false): Record<string, unknown> => ({ offset, size, kind, big_endian, min, max, empty: false });

/** A stand-in node: `answer(batchIds)` gives status and body text; requests are recorded. */
async function stub(answer: (ids: string[], url: URL) => { status: number; body: string } | 'hang'): Promise<{ port: number; urls: URL[]; close(): Promise<void> }> {
  const urls: URL[] = [];
  const srv = http.createServer((req, res) => {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://x');
    urls.push(url);
    const a = answer((url.searchParams.get('batch_ids') ?? '').split(','), url);
    if (a !== 'hang') res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as { port: number }).port,
    urls,
    close: () =>
      new Promise((r) => {
        srv.close(() => r());
        srv.closeAllConnections();
      }),
  };
}

const ok = (filters: Record<string, unknown>, dataset = 'flows'): { status: number; body: string } => ({ status: 200, body: JSON.stringify({ dataset, filters }) });

function source(ports: number[], logs: string[] = [], timeoutMs = 2000): StorageNodeFilters {
  return new StorageNodeFilters({
    nodes: () => ports.map((port, i) => ({ name: `sn${i}`, host: '127.0.0.1', port })),
    schema: (d) => (d === 'flows' ? schema : undefined),
    timeoutMs,
    log: (m) => logs.push(m),
  });
}

const t = suite('Proxy: StorageNodeFilters');

t('layouts become the schema fields of the same offset, size, kind and byte order; others are left out', async () => {
  const node = await stub(() =>
    ok({
      [id(1)]: {
        records: 3,
        fields: [
          range(0, 8, 'signed', '100', '200'),
          range(8, 2, 'unsigned', '22', '443'),
          range(10, 1, 'unsigned', '6', '6'),
          range(12, 4, 'signed', '-5', '5'),
          range(16, 4, 'unsigned', '1', '2'),
          range(24, 1, 'signed', '-1', '1', true),
        ],
      },
      // Only a float-like layout: nothing to name, so the batch stays unknown.
      [id(2)]: { records: 1, fields: [range(20, 4, 'unsigned', '1', '2')] },
      [id(3)]: { records: 1, fields: [range(0, 8, 'signed', '5', '6', true)] },
    }),
  );
  try {
    const got = await source([node.port]).filters('flows', [id(1), id(2), id(3), id(4)]);
    // proto is an enum, delta a time reference, temp kept as unsigned (not its kind), ratio a float;
    // a one-byte field has no byte order.
    assert.equal(Object.fromEntries(got), { [id(1)]: { ts: { min: '100', max: '200' }, port: { min: '22', max: '443' }, small: { min: '-1', max: '1' } } });
    assert.equal(node.urls[0]?.searchParams.get('dataset'), 'flows');
    // Unknown dataset, no ids: no call.
    assert.is((await source([node.port]).filters('nope', [id(1)])).size, 0);
    assert.is((await source([node.port]).filters('flows', [])).size, 0);
    assert.is(node.urls.length, 1);
  } finally {
    await node.close();
  }
});

t('replicas are joined (min of mins, max of maxes); the caller spelling of ids is kept; 64 ids per request', async () => {
  const a = await stub((ids) => ok(Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '10', '20')] }]))));
  const b = await stub((ids) => ok(Object.fromEntries(ids.filter((i) => i === id(1)).map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '5', '15'), range(0, 8, 'signed', '-9', '9')] }]))));
  try {
    const ids = Array.from({ length: FILTER_IDS_PER_CALL + 3 }, (_, i) => id(i + 1));
    const asked = [id(1).toUpperCase(), ...ids.slice(1)];
    const got = await source([a.port, b.port]).filters('flows', asked);
    assert.is(got.size, ids.length);
    assert.equal(got.get(asked[0] as string), { port: { min: '5', max: '20' }, ts: { min: '-9', max: '9' } });
    assert.equal(got.get(id(2)), { port: { min: '10', max: '20' } });
    assert.equal(a.urls.map((u) => (u.searchParams.get('batch_ids') ?? '').split(',').length).sort((x, y) => x - y), [3, FILTER_IDS_PER_CALL]);
    assert.ok(a.urls.every((u) => (u.searchParams.get('batch_ids') ?? '') === (u.searchParams.get('batch_ids') ?? '').toLowerCase()));
  } finally {
    await a.close();
    await b.close();
  }
});

t('a failed, hung or malformed answer leaves that node’s batches unknown, logged once per failing spell', async () => {
  const good = { records: 1, fields: [range(8, 2, 'unsigned', '1', '2')] };
  const cases: [string, (ids: string[]) => { status: number; body: string } | 'hang', RegExp][] = [
    ['500', () => ({ status: 500, body: '{"error":"boom"}' }), /HTTP 500 \{"error":"boom"\}/],
    ['400', () => ({ status: 400, body: '{"error":"too many"}' }), /HTTP 400/],
    ['not JSON', () => ({ status: 200, body: '<html>' }), /not JSON: <html>/],
    ['array', () => ({ status: 200, body: '[]' }), /not \{dataset: 'flows', filters/],
    ['other dataset', () => ok({ [id(1)]: good }, 'other'), /not \{dataset: 'flows'/],
    ['filters a list', () => ({ status: 200, body: '{"dataset":"flows","filters":[]}' }), /not \{dataset/],
    ['no fields', () => ok({ [id(1)]: { records: 1 } }), /batch 0000000000000000… is malformed/],
    ['bad kind', () => ok({ [id(1)]: { records: 1, fields: [{ ...range(8, 2, 'float', '1', '2') }] } }), /malformed/],
    ['min not an integer', () => ok({ [id(1)]: { records: 1, fields: [range(8, 2, 'unsigned', '1.5', '2')] } }), /malformed/],
    ['max a number', () => ok({ [id(1)]: { records: 1, fields: [{ ...range(8, 2, 'unsigned', '1', '2'), max: 2 }] } }), /malformed/],
    ['no byte order', () => ok({ [id(1)]: { records: 1, fields: [{ offset: 8, size: 2, kind: 'unsigned', min: '1', max: '2' }] } }), /malformed/],
    ['one good, one bad', () => ok({ [id(1)]: good, [id(2)]: { fields: [null] } }), /malformed/],
    ['hang', () => 'hang', /could not be read: .*(aborted|timeout)/i],
  ];
  for (const [name, answer, re] of cases) {
    const node = await stub(answer);
    const logs: string[] = [];
    try {
      const src = source([node.port], logs, 300);
      assert.is((await src.filters('flows', [id(1), id(2)])).size, 0, name);
      assert.is((await src.filters('flows', [id(2), id(1)])).size, 0, name);
      assert.is(logs.length, 1, name);
      assert.match(logs[0] as string, /Storage Node 'sn0' \(127\.0\.0\.1:\d+\)/);
      assert.match(logs[0] as string, re);
      assert.match(logs[0] as string, /its batches are not excluded/);
    } finally {
      await node.close();
    }
  }
  // A batch not asked for is ignored; a node that recovers is believed again.
  let broken = true;
  const node = await stub(() => (broken ? { status: 503, body: '{}' } : ok({ [id(1)]: good, [id(7)]: good })));
  const logs: string[] = [];
  try {
    const src = source([node.port], logs);
    assert.is((await src.filters('flows', [id(1)])).size, 0);
    broken = false;
    assert.equal([...(await src.filters('flows', [id(1)])).keys()], [id(1)]);
    assert.is(logs.length, 1);
  } finally {
    await node.close();
  }
  // A node that cannot be reached.
  const closed = await stub(() => ok({}));
  await closed.close();
  const l2: string[] = [];
  assert.is((await source([closed.port], l2).filters('flows', [id(1)])).size, 0);
  assert.match(l2[0] as string, /could not be read/);
});

t('answers are kept: a later call asks a node only for the batches it did not answer, per hidden ranges', async () => {
  const node = await stub((ids) => ok(Object.fromEntries(ids.filter((i) => i !== id(3)).map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '1', '9')] }]))));
  try {
    const src = source([node.port]);
    const first = await src.filters('flows', [id(1), id(2), id(3)]);
    assert.equal([...first.keys()], [id(1), id(2)]);
    assert.is(node.urls.length, 1);
    // Batch 3 was not held then: asked again, alone; 1 and 2 come from what was kept.
    const again = await src.filters('flows', [id(1), id(2), id(3)]);
    assert.equal(Object.fromEntries(again), Object.fromEntries(first));
    assert.is(node.urls.length, 2);
    assert.equal(node.urls[1]?.searchParams.get('batch_ids'), id(3));
    // Other hidden ranges are another question: asked again.
    const hidden = await src.filters('flows', [id(1)], [{ offset: 0, size: 8 }]);
    assert.equal(hidden.get(id(1)), { port: { min: '1', max: '9' } });
    assert.is(node.urls.length, 3);
    assert.equal(node.urls[2]?.searchParams.get('hidden'), '0:8');
  } finally {
    await node.close();
  }
});

t('joined, named filters are kept per view: a hit answers the same without asking; a changed schema, hidden ranges or topology is named anew', async () => {
  const a = await stub((ids) => ok(Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(0, 8, 'signed', '100', '200'), range(8, 2, 'unsigned', '10', '20')] }]))));
  const b = await stub((ids) => ok(Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '5', '15')] }]))));
  const c = await stub((ids) => ok(Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '0', '99')] }]))));
  try {
    let current = schema;
    let ports = [a.port, b.port];
    const src = new StorageNodeFilters({ nodes: () => ports.map((port, i) => ({ name: `sn${i}`, host: '127.0.0.1', port })), schema: () => current });
    const first = await src.filters('flows', [id(1), id(2)]);
    const want = { ts: { min: '100', max: '200' }, port: { min: '5', max: '20' } };
    assert.equal(first.get(id(1)), want);
    const again = await src.filters('flows', [id(2), id(1).toUpperCase()]);
    assert.equal(again.get(id(1).toUpperCase()), want);
    assert.equal(again.get(id(2)), want);
    assert.is(a.urls.length + b.urls.length, 2);
    // The same schema parsed again (a topology refresh) is the same layout: still kept.
    current = Schema.parse(schema.toJSON());
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), want);
    // A new schema version names the same layouts differently: named anew from the nodes' kept answers.
    const json = schema.toJSON();
    current = Schema.parse({ ...json, fields: json.fields.map((f) => (f.name === 'port' ? { ...f, name: 'dst_port' } : f)) });
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), { ts: { min: '100', max: '200' }, dst_port: { min: '5', max: '20' } });
    assert.is(a.urls.length + b.urls.length, 2);
    current = schema;
    // Other hidden ranges: the nodes are asked, and the hidden field has no range though it was kept without.
    const hidden = await src.filters('flows', [id(1)], [{ offset: 0, size: 1 }]);
    assert.equal(hidden.get(id(1)), { port: { min: '5', max: '20' } });
    assert.is(a.urls.length + b.urls.length, 4);
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), want);
    // A third node: its range is joined in (only it is asked).
    ports = [a.port, b.port, c.port];
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), { ts: { min: '100', max: '200' }, port: { min: '0', max: '99' } });
    assert.is(a.urls.length + b.urls.length, 4);
    assert.is(c.urls.length, 1);
    // Back to two nodes: the third node's range is no longer part of the join.
    ports = [a.port, b.port];
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), want);
  } finally {
    await a.close();
    await b.close();
    await c.close();
  }
});

t('a batch one replica does not hold yet is joined again each time, so its later answer counts', async () => {
  let lagging = true;
  const a = await stub((ids) => ok(Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '10', '20')] }]))));
  const b = await stub((ids) => ok(lagging ? {} : Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '5', '50')] }]))));
  try {
    const src = source([a.port, b.port]);
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), { port: { min: '10', max: '20' } });
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), { port: { min: '10', max: '20' } });
    // The lagging node is asked every time; the one that answered, once.
    assert.is(a.urls.length, 1);
    assert.is(b.urls.length, 2);
    lagging = false;
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), { port: { min: '5', max: '50' } });
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), { port: { min: '5', max: '50' } });
    assert.is(b.urls.length, 3);
  } finally {
    await a.close();
    await b.close();
  }
});

t('a node that fails later still counts with what it answered before; only new batches miss its ranges', async () => {
  let broken = false;
  const a = await stub((ids) => ok(Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '10', '20')] }]))));
  const b = await stub((ids) => (broken ? { status: 503, body: '{}' } : ok(Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', '5', '50')] }])))));
  const logs: string[] = [];
  try {
    const src = source([a.port, b.port], logs);
    assert.equal((await src.filters('flows', [id(1)])).get(id(1)), { port: { min: '5', max: '50' } });
    broken = true;
    const got = await src.filters('flows', [id(1), id(2)]);
    assert.equal(got.get(id(1)), { port: { min: '5', max: '50' } });
    assert.equal(got.get(id(2)), { port: { min: '10', max: '20' } });
    assert.is(logs.length, 1);
    // Batch 2 lacks the failing node's answer, so it is not kept joined: asked again once the node is back.
    broken = false;
    assert.equal((await src.filters('flows', [id(2)])).get(id(2)), { port: { min: '5', max: '50' } });
  } finally {
    await a.close();
    await b.close();
  }
});

t('the kept filters are bounded: past the bound the least recently used batches are asked again, with the same answer', async () => {
  const node = await stub((ids) => ok(Object.fromEntries(ids.map((i) => [i, { records: 1, fields: [range(8, 2, 'unsigned', String(parseInt(i, 16)), '99')] }]))));
  try {
    const src = new StorageNodeFilters({ nodes: () => [{ name: 'sn0', host: '127.0.0.1', port: node.port }], schema: () => schema, cacheEntries: 4 });
    const ids = Array.from({ length: 10 }, (_, i) => id(i + 1));
    const first = await src.filters('flows', ids);
    assert.is(node.urls.length, 1);
    const again = await src.filters('flows', ids);
    assert.equal(Object.fromEntries(again), Object.fromEntries(first));
    // Not all ten could be kept: some were asked again.
    assert.is(node.urls.length, 2);
    const asked = (node.urls[1]?.searchParams.get('batch_ids') ?? '').split(',');
    assert.ok(asked.length >= 6, asked.join());
    // The most recently used one (the last asked and joined) is kept.
    await src.filters('flows', [id(8)]);
    assert.is(node.urls.length, 2);
  } finally {
    await node.close();
  }
});

t.run();
