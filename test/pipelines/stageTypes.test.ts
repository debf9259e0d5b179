/**
 * Typed stage types (docs/pipelines.md, "Stage types"): a stage type's `input` and `output` names
 * fix the TypeScript types of its factory through `ElementOf`, so a factory whose stream disagrees
 * with its names fails `npm run typecheck` (each `@ts-expect-error` below must stay an error). At run
 * time the loader still checks the same names between connected stages, with the file's line.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EMPTY, map, type Observable } from 'rxjs';
import { recordChunk, type ByteChunk, type RecordChunk } from '../../stream/chunk';
import type { QueryElement } from '../../stream/queryElement';
import { parsePipeline } from '../../pipelines/load';
import { defineOperator, defineSink, defineSource, Registry, type Elements } from '../../pipelines/registry';
import { builtinRegistry } from '../../roles/builtins';

const t = suite('stage types');

const base = { doc: 'test', unit: 'records', settings: {} } as const;

/** Gives records, as its output says. */
const recs = defineSource({ ...base, name: 'recs', kind: 'source', output: 'records', create: (): Observable<RecordChunk> => EMPTY });

/** Bytes → records, as its names say. */
const toRecords = defineOperator({
  ...base,
  name: 'toRecords',
  kind: 'operator',
  input: 'bytes',
  output: 'records',
  create: () => map((b: ByteChunk) => recordChunk('d', 1, b.buf.length, b.buf)),
});

/** Takes batched records and their eob / bbn. */
const batchedSink = defineSink({ ...base, name: 'batchedSink', kind: 'sink', input: 'batched-records', create: () => (input$: Elements<'batched-records'>) => input$.pipe(map(() => undefined as never)) });

// --- Mismatches TypeScript refuses (checked by `npm run typecheck`). ---

// A source that says 'bytes' but gives records.
// @ts-expect-error Observable<RecordChunk> is not Elements<'bytes'>
defineSource({ ...base, name: 'badSource', kind: 'source', output: 'bytes', create: (): Observable<RecordChunk> => EMPTY });

defineOperator({
  ...base,
  name: 'badOutput',
  kind: 'operator',
  input: 'bytes',
  output: 'batched-records',
  // @ts-expect-error gives RecordChunk (no batch id) where 'batched-records' was declared
  create: () => map((b: ByteChunk) => recordChunk('d', 1, b.buf.length, b.buf)),
});

defineOperator({
  ...base,
  name: 'badInput',
  kind: 'operator',
  input: 'records',
  output: 'records',
  // @ts-expect-error reads ByteChunks where 'records' was declared
  create: () => map((b: ByteChunk) => recordChunk('d', 1, b.buf.length, b.buf)),
});

defineSink({
  ...base,
  name: 'badSink',
  kind: 'sink',
  input: 'query-results',
  // @ts-expect-error consumes queries where 'query-results' was declared
  create: () => (input$: Observable<QueryElement>) => input$.pipe(map(() => undefined as never)),
});

// @ts-expect-error 'rows' is not an element type
defineSource({ ...base, name: 'badName', kind: 'source', output: 'rows', create: (): Observable<RecordChunk> => EMPTY });

t('the built-in stage types keep their element type names', () => {
  const r = builtinRegistry();
  const names = (n: string): [string | undefined, string | undefined] => {
    const s = r.get(n);
    assert.ok(s, n);
    return [s.kind === 'source' ? undefined : s.input, s.kind === 'sink' ? undefined : s.output];
  };
  assert.equal(names('fileSource'), [undefined, 'bytes']);
  assert.equal(names('parse'), ['bytes', 'records']);
  assert.equal(names('timeBatch'), ['records', 'batched-records']);
  assert.equal(names('hashChain'), ['batched-records', 'batched-records']);
  assert.equal(names('scan'), ['queries', 'query-results']);
  assert.equal(names('resultStream'), ['query-results', undefined]);
  assert.equal(names('sccSink'), ['batched-records', undefined]);
});

t('the loader still refuses mismatched names at run time, with the line', () => {
  const registry = new Registry().register(recs).register(toRecords).register(batchedSink);
  const text = ['pipeline: typed', 'stages:', '  src:', '    type: recs', '  out:', '    type: batchedSink', '    inputs: [src]', ''].join('\n');
  const r = parsePipeline(text, 'typed.yaml', { registry, env: {} });
  assert.ok(!r.ok);
  assert.ok(
    r.problems.some((p) => /stage 'out' \(batchedSink\) takes 'batched-records' but its input 'src' \(recs\) gives 'records'/.test(p.message)),
    JSON.stringify(r.problems),
  );
});

t.run();
