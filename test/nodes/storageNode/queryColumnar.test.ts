/**
 * Columnar results and multithreaded scans on a running Storage Node (docs/query.md "Columnar
 * results", docs/storage-node.md "Queries"): `result_format: "columns"` gives exactly the rows the
 * raw records decode to, sends only the asked columns, applies the field mask before the decode;
 * a node scanning a query's batches on several threads answers with the same result set as one
 * scanning them one at a time, and a damaged batch is still reported for that batch only.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import { readColumnar } from '../../../engine-rs/columnar';
import { decodeRecords } from '../../../engine-rs/decode';
import { Schema } from '../../../engine-rs/schema';
import type { QueryResult } from '../../../hdwp/resultListener';
import { parseBbnReason } from '../../../query/batchNotice';
import { batchOf, ControlPeer, R, SCHEMA, startNode, TestClient, untilOk, type TestNode } from './queryKit';

const schema = Schema.parse(SCHEMA);
const ALL = schema.fields.map((f) => f.name);
const batches = Array.from({ length: 9 }, (_, i) => batchOf(40 + i, 150 + 37 * i));
const DAMAGED = batchOf(60, 300);

function rowsOf(b: arrow.RecordBatch): unknown[] {
  return JSON.parse(JSON.stringify(b.toArray().map((r) => r.toJSON()), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) as unknown[];
}

/** Rows per batch id: columnar bodies read with `fields`, raw records decoded to `fields`. */
async function rowsByBatch(results: readonly QueryResult[], fields: readonly string[]): Promise<Map<string, unknown[]>> {
  const out = new Map<string, unknown[]>();
  for (const r of results) {
    if (r.kind !== 'batch') continue;
    const rows: unknown[] = [];
    if (r.records.length > 0) rows.push(...rowsOf(await decodeRecords(schema, Buffer.concat(r.records), { fields })));
    for (const p of r.columns ?? []) rows.push(...rowsOf(await readColumnar(schema, p.body, { fields, rows: p.rows })));
    out.set(r.batchId.toHex(), rows);
  }
  return out;
}

/** Runs a query on `node`; resolves with the batch ends the SCC got and what reached the client. */
async function run(node: TestNode, client: TestClient, ids: readonly ReturnType<typeof batchOf>[], extra: Parameters<TestClient['query']>[1] = {}): Promise<{ ends: string[]; results: QueryResult[] }> {
  const { auth, json, results } = client.query(
    ids.map((b) => b.id),
    extra,
  );
  const { scc, ends } = await ControlPeer.ask(node.commandPort, auth, json, ids.length);
  const delivered = ends.filter((f) => f.kind === 'eob' || (f.kind === 'bbn' && parseBbnReason(f.reason).code !== 13)).length;
  await untilOk(() => results.filter((r) => r.kind === 'batch' || r.kind === 'batchError').length >= delivered);
  scc.close();
  const named = ends.map((f) => (f.kind === 'eob' || f.kind === 'bbn' ? `${f.batchId.toHex().slice(0, 12)} ${f.kind === 'bbn' ? parseBbnReason(f.reason).code : 'eob'}` : f.kind));
  return { ends: named.sort(), results };
}

function flipByte(file: string): void {
  const s = readFileSync(file);
  const h = s.readUInt32LE(24);
  s[h + R * 40 + 3] ^= 0xff;
  writeFileSync(file, s);
}

const t = suite('Storage Node: columnar results and query_threads');
let one: TestNode;
let many: TestNode;
let client: TestClient;

t.before(async () => {
  one = await startNode({ edit: (y) => y.replace('QUERY_THREADS: 0', 'QUERY_THREADS: 1') });
  many = await startNode({ edit: (y) => y.replace('QUERY_THREADS: 0', 'QUERY_THREADS: 4') });
  for (const n of [one, many]) {
    await n.ingest([...batches, DAMAGED]);
    flipByte(await n.segmentPath(DAMAGED.id));
  }
  client = await TestClient.start();
});
t.after(async () => {
  await client.close();
  await one.stop();
  await many.stop();
});

t('columns and records give the same rows, every field', async () => {
  const raw = await run(one, client, batches);
  const col = await run(one, client, batches, { resultFormat: 'columns' });
  assert.ok(col.results.every((r) => r.kind !== 'batch' || (r.records.length === 0 && (r.count === 0 || (r.columns?.length ?? 0) > 0))), 'columnar batches carry no records frames');
  assert.equal(await rowsByBatch(col.results, ALL), await rowsByBatch(raw.results, ALL));
  assert.equal(col.ends, raw.ends);
});

t('a projection sends only the asked columns, in their order', async () => {
  const fields = ['sym', 'price'];
  const raw = await run(one, client, batches);
  const col = await run(one, client, batches, { resultFormat: 'columns', columns: fields });
  assert.equal(await rowsByBatch(col.results, fields), await rowsByBatch(raw.results, fields));
  const rows = batches.reduce((n, b) => n + b.data.length / R, 0);
  const bytes = col.results.reduce((n, r) => n + (r.kind === 'batch' ? (r.columns ?? []).reduce((m, p) => m + p.body.length, 0) : 0), 0);
  // price: 4 bytes a row; sym: at most 16 bytes + a 4-byte offset a row; plus small headers.
  assert.ok(bytes < rows * (4 + 16 + 4) + 200 * batches.length, `${bytes} bytes for ${rows} rows`);
  assert.ok(bytes < rows * R, 'fewer bytes than the raw records');
  // The body names its columns: read as other columns it is refused.
  const first = col.results.find((r) => r.kind === 'batch' && r.columns?.length)!;
  const part = first.kind === 'batch' ? first.columns![0]! : undefined;
  await readColumnar(schema, part!.body, { fields: ['price', 'sym'] }).then(
    () => assert.unreachable('read as other columns'),
    (err: Error & { code?: string }) => assert.is(err.code, 'ERR_COLUMNAR_PROJECTION'),
  );
});

t('field_mask applies before the decode: a hidden field reads as zeros in the columns too', async () => {
  const mask = Buffer.alloc(R, 0xff);
  mask.fill(0, 16, 20); // price
  mask.fill(0, 24, 40); // sym
  const col = await run(one, client, batches.slice(0, 3), { resultFormat: 'columns', columns: ['price', 'sym', 'id'], fieldMask: mask });
  const rows = [...(await rowsByBatch(col.results, ['price', 'sym', 'id'])).values()].flat() as { price: number; sym: string; id: string }[];
  assert.ok(rows.length > 0);
  assert.ok(rows.every((r) => r.price === 0 && r.sym === ''));
  assert.ok(new Set(rows.map((r) => r.id)).size === rows.length, 'visible fields are as stored');
});

t('an unknown column is a bad query naming `columns`', async () => {
  const { auth, json } = client.query([batches[0]!.id], { resultFormat: 'columns', columns: ['nope'] });
  const scc = await ControlPeer.open(one.commandPort);
  scc.sendQuery(auth, json);
  const e = await scc.errorOf(auth.queryId);
  assert.is(e.code, 11);
  assert.match(e.message, /columns/);
  scc.close();
});

for (const format of ['records', 'columns'] as const) {
  t(`query_threads 4 gives the result set of query_threads 1 (${format}), the damaged batch reported per batch`, async () => {
    const ids = [batches[0]!, DAMAGED, ...batches.slice(1)];
    const extra = format === 'columns' ? { resultFormat: 'columns' as const } : {};
    const a = await run(one, client, ids, extra);
    const b = await run(many, client, ids, extra);
    assert.equal(b.ends, a.ends);
    assert.ok(a.ends.some((e) => e.endsWith(' 13')), 'the flipped batch ends with bbn 13');
    assert.equal(await rowsByBatch(b.results, ALL), await rowsByBatch(a.results, ALL));
    assert.is((await rowsByBatch(b.results, ALL)).size, batches.length);
  });
}

t.run();
