/**
 * What a Storage Node's scan source keeps per query shape (nodes/storageNode/compiledPlans.ts,
 * queryScan.ts): a repeated query (new id, same filter, aggregate, mask and columns) compiles
 * nothing again; another schema object, JSON or mask compiles afresh; a refused compile is not
 * kept; the cache is a bounded LRU. And the source's summary groups over real segments: batches not
 * held here are left to their own open, the others answered with the partial of one-by-one folds;
 * and its rows groups (merged rows), whose matches are those of one-by-one reads.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AggregateAccumulator, generateBatchIdNumber, HashChain, Schema, SegmentWriter, zoneFieldsOf, type BatchID } from '../../../engine-rs/index';
import { CompiledPlans } from '../../../nodes/storageNode/compiledPlans';
import type { StorageNode } from '../../../nodes/storageNode/node';
import { nodeScanSource } from '../../../nodes/storageNode/queryScan';
import { QuerySchemas } from '../../../nodes/storageNode/querySchemas';
import { QueryError } from '../../../query/queryError';
import type { QuerySpec } from '../../../stream/queryElement';
import { specOf } from '../../support/testQuery';

const R = 16;
const schemaJson = JSON.stringify({
  id: 'grp',
  record_size: R,
  time_field: 'ts',
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'port', offset: 8, size: 2, type: 'uint16' },
    { name: 'amount', offset: 12, size: 4, type: 'int32' },
  ],
});
const schema = Schema.parse(schemaJson);

let dir: string;
const held = new Map<string, string>();
const ids = [1n, 2n, 3n].map((n) => generateBatchIdNumber(n));

/** A node that holds the batches of `held` (no recovery to wait for). */
const location = (id: BatchID): { path: string; tier: string } | undefined => (held.has(id.toHex()) ? { path: held.get(id.toHex()) as string, tier: 'core' } : undefined);
const node = { started: Promise.resolve(), config: { nodeName: 'sn-test' }, readLocation: async (_ds: string, id: BatchID) => location(id), readLocations: async (_ds: string, batchIds: readonly BatchID[]) => batchIds.map(location) } as unknown as StorageNode;

function schemas(s: Schema): QuerySchemas {
  const q = new QuerySchemas(undefined);
  q.setDms(new Map([['grp', s]]));
  return q;
}

const AGG = JSON.stringify({ version: 1, measures: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }] });
const spec = (extra: Partial<QuerySpec> = {}): QuerySpec => specOf(1, ids, { dataset: 'grp', aggregateJson: AGG, mergeBatches: true, ...extra });

const t = suite('Storage Node: compiled plans per query shape, summary groups');
t.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-plans-'));
  for (const [i, id] of ids.slice(0, 2).entries()) {
    const data = Buffer.alloc(40 * R);
    for (let r = 0; r < 40; r++) {
      data.writeBigInt64LE(BigInt(1000 + i * 100 + r), r * R);
      data.writeInt32LE(r * (i + 1) - 7, r * R + 12);
    }
    const w = SegmentWriter.create({ dir, name: `${id.toHex()}.hdseg`, datasetId: 'grp', batchId: id, recordSize: R, blockSize: 16, algorithm: 'sha256', fields: zoneFieldsOf(schema) });
    await w.append(data);
    const c = new HashChain(id, { algorithm: 'sha256', recordSize: R, blockSize: 16 });
    await c.update(data);
    held.set(id.toHex(), (await w.finish(c.finish().closingHash)).path);
  }
});
t.after(() => rmSync(dir, { recursive: true, force: true }));

t('a repeated query shape compiles nothing again; another schema, JSON or mask does', async () => {
  const plans = new CompiledPlans();
  const src = nodeScanSource({ node, schemas: schemas(schema), blockSize: 16, plans });
  await src.compile(spec(), R);
  const first = plans.size;
  assert.is(first, 2, 'the filter and the aggregate');
  await src.compile({ ...spec(), queryId: 2 }, R);
  assert.is(plans.size, first);
  assert.is(plans.hits, 2, 'both from the cache');
  await src.compile(spec({ aggregateJson: JSON.stringify({ version: 1, measures: [{ fn: 'count' }] }) }), R);
  assert.is(plans.size, 3, 'another aggregate');
  await src.compile(spec({ fieldMask: Buffer.alloc(R, 0xff) }), R);
  assert.is(plans.size, 4, 'the aggregate with a mask is another plan (the filter is the same)');
  // A schema read again (a new object) compiles afresh.
  await nodeScanSource({ node, schemas: schemas(Schema.parse(schemaJson)), blockSize: 16, plans }).compile(spec(), R);
  assert.is(plans.size, 6);
});

t('a refused compile is not kept, and is refused again', async () => {
  const plans = new CompiledPlans();
  const src = nodeScanSource({ node, schemas: schemas(schema), blockSize: 16, plans });
  const bad = spec({ aggregateJson: JSON.stringify({ version: 1, measures: [{ fn: 'sum', field: 'nope' }] }) });
  for (let i = 0; i < 2; i++) {
    await src.compile(bad, R).then(
      () => assert.unreachable('compiled'),
      (e: unknown) => assert.ok(e instanceof QueryError && /aggregate\.measures\[0\]\.field/.test(e.message), String(e)),
    );
  }
  assert.is(plans.size, 1, 'only the filter is kept');
});

t('the cache keeps at most its bound, the least recently used going first', () => {
  const plans = new CompiledPlans(2);
  let compiles = 0;
  const get = (k: string): string => plans.get(schema, k, () => `${k}${++compiles}`);
  get('a');
  get('b');
  get('a');
  get('c');
  assert.is(plans.size, 2);
  assert.is(get('a'), 'a1', 'a was used last: kept');
  assert.is(get('b'), 'b4', 'b went first: compiled again');
  assert.throws(() => new CompiledPlans(0), /≥ 1/);
});

t('a summary group answers the batches held here; one not held is left to its own open', async () => {
  const src = nodeScanSource({ node, schemas: schemas(schema), blockSize: 16 });
  const compiled = await src.compile(spec(), R);
  assert.ok(compiled.fromSummaries && compiled.newAccumulator);
  const a = await compiled.fromSummaries(ids);
  assert.equal([...a.records], [40, 40, -1]);
  const acc = compiled.newAccumulator();
  assert.ok(a.partial.foldInto(acc));
  // The same as each batch opened, answered and folded one by one.
  const one = compiled.newAccumulator();
  for (const id of ids.slice(0, 2)) {
    const b = await compiled.open(id, false);
    assert.ok('foldInto' in b && b.foldInto);
    assert.ok(b.foldInto(one));
    b.close();
  }
  assert.is((acc as AggregateAccumulator).take(), (one as AggregateAccumulator).take());
  const missing = await compiled.open(ids[2] as BatchID, false);
  assert.ok('code' in missing && missing.code === 13, 'its own open says it is not held');
  // A records query has no group (a verify_hash read is never grouped by the scan: operators/queryReads.ts).
  assert.is((await src.compile(spec({ aggregateJson: undefined }), R)).fromSummaries, undefined);
});

t('a rows group (merged rows) scans the small batches held here whole: the matches their own reads send, in order', async () => {
  const src = nodeScanSource({ node, schemas: schemas(schema), blockSize: 16 });
  const rowsSpec = spec({ aggregateJson: undefined, subQueriesJson: '[{"filters":[{"field":"amount","op":"gt","value":"10"}]}]' });
  const compiled = await src.compile(rowsSpec, R);
  assert.ok(compiled.fromRows);
  const g = await compiled.fromRows(ids);
  assert.equal([...g.records], [40, 40, -1], 'the third is not held here: left to its own open');
  // Each batch read on its own, step by step.
  const own: Buffer[] = [];
  for (const id of ids.slice(0, 2)) {
    const b = await compiled.open(id, false);
    assert.ok(!('code' in b));
    let st = await b.next();
    own.push(st.records);
    while (!st.done) own.push((st = await b.next()).records);
    b.close();
  }
  const want = Buffer.concat(own);
  assert.ok(want.length > 0);
  assert.equal([...g.matched].slice(0, 2).reduce((a, n) => a + n, 0) * R, want.length);
  assert.ok(g.rows.equals(want), 'the same records, in batch order');
  // Not without merged rows (each batch then answers on its own).
  assert.is((await src.compile({ ...rowsSpec, mergeBatches: false }, R)).fromRows, undefined);
  // With a top, each batch keeps only its best (as its own read's selectTop keeps them).
  const topped = await src.compile({ ...rowsSpec, top: { field: 'amount', k: 3, desc: true } }, R);
  assert.ok(topped.fromRows && topped.selectTop);
  const t3 = await topped.fromRows(ids);
  const best = own.map((o) => (topped.selectTop as (b: Buffer) => Buffer)(o));
  assert.equal([...t3.kept], [...best.map((b) => b.length / R), -1]);
  assert.equal([...t3.matched].slice(0, 2), [...g.matched].slice(0, 2), 'every match counted');
  assert.ok(t3.rows.equals(Buffer.concat(best)));
});

t('a group scans small batches with the filter and the field-masked aggregate their own reads use', async () => {
  // amount's low bytes hidden: the aggregate reads the masked value on both paths; the filter reads the stored one.
  const fieldMask = Buffer.alloc(R, 0xff).fill(0, 12, 14);
  const filtered = spec({ subQueriesJson: '[{"filters":[{"field":"amount","op":"gt","value":"10"}]}]', fieldMask });
  const src = nodeScanSource({ node, schemas: schemas(schema), blockSize: 16 });
  const compiled = await src.compile(filtered, R);
  assert.ok(compiled.fromSummaries && compiled.newAccumulator);
  const a = await compiled.fromSummaries(ids);
  assert.equal([...a.records], [40, 40, -1], 'both held batches scanned in the group');
  const acc = compiled.newAccumulator();
  assert.ok(a.partial.foldInto(acc));
  const one = compiled.newAccumulator();
  const counts: number[][] = [];
  for (const id of ids.slice(0, 2)) {
    const b = await compiled.open(id, false);
    assert.ok('foldInto' in b && b.foldInto);
    let matched = 0;
    let scanned = 0;
    for (;;) {
      const st = await b.next();
      matched += st.matched;
      scanned += st.scanned;
      if (st.done) break;
    }
    counts.push([matched, scanned]);
    assert.ok(b.foldInto(one));
    b.close();
  }
  assert.equal(counts, [0, 1].map((i) => [a.matched[i], a.scanned[i]]), 'counted as their own reads');
  assert.ok((a.matched[1] as number) > 0 && (a.matched[1] as number) < 40, 'the filter matches some');
  assert.is((acc as AggregateAccumulator).take(), (one as AggregateAccumulator).take());
  // Without a group scan budget only summaries answer: this filter leaves both to their own reads.
  const summariesOnly = nodeScanSource({ node, schemas: schemas(schema), blockSize: 16, groupBatchBytes: 0 });
  const b = await (await summariesOnly.compile(filtered, R)).fromSummaries?.(ids);
  assert.equal([...(b?.records ?? [])], [-1, -1, -1]);
});

t.run();
