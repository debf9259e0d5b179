import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Chunk } from '../../stream/chunk';
import { formatProblem, parsePipeline, type Pipeline } from '../../pipelines/load';
import { runPipeline } from '../../pipelines/run';
import { formatCounters } from '../../pipelines/summary';
import { collected, maxPendingSeen, testRegistry } from './testStages';

const dir = mkdtempSync(path.join(tmpdir(), 'hd-run-'));
const input = path.join(dir, 'in.bin');
const bytes = Buffer.alloc(10 * 4096 + 123);
for (let i = 0; i < bytes.length; i++) bytes[i] = i % 251;
writeFileSync(input, bytes);

const pipeline = (stages: string): Pipeline => {
  const r = parsePipeline(`pipeline: t\nstages:\n${stages}`, path.join(dir, 'p.yaml'), { registry: testRegistry(), env: {} });
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  return r.pipeline;
};
const concat = (chunks: Chunk[] | undefined): Buffer => Buffer.concat((chunks ?? []).map((c) => (c.kind === 'bytes' || c.kind === 'records' ? c.buf : Buffer.alloc(0))));

const run = suite('runPipeline');
run('a linear pipeline moves every byte, and the counters add up edge by edge', async () => {
  const p = pipeline(`  src: { type: fileSource, path: in.bin, block_size: 4096 }
  recs: { type: toRecords, inputs: [src] }
  out: { type: recSink, inputs: [recs] }
`);
  const r = await runPipeline(p);
  assert.is(r.status, 'completed');
  assert.equal(r.counterProblems, []);
  assert.ok(concat(collected.get('out')).equals(bytes));
  const c = (id: string) => r.counters.get(id);
  assert.is(c('src')?.received, bytes.length);
  assert.is(c('src')?.sent, c('recs')?.received);
  assert.is(c('recs')?.sent, c('out')?.received);
  assert.is(c('out')?.sent, bytes.length);
  assert.is(collected.get('out')?.length, 11, 'one chunk per block, never per record');
  assert.match(formatCounters(p, r.counters), /src\s+fileSource\s+bytes\s+41,083\s+41,083\s+0/);
});
run('fan-out delivers everything to every consumer; fan-in merges', async () => {
  const p = pipeline(`  src: { type: fileSource, path: in.bin, block_size: 4096 }
  a: { type: bytesSink, inputs: [src] }
  b: { type: bytesSink, inputs: [src], slow: false }
  r1: { type: recSource, chunks: 2, size: 3 }
  r2: { type: recSource, chunks: 4, size: 1 }
  both: { type: recSink, inputs: [r1, r2] }
`);
  const r = await runPipeline(p);
  assert.is(r.status, 'completed');
  assert.ok(concat(collected.get('a')).equals(bytes));
  assert.ok(concat(collected.get('b')).equals(bytes));
  assert.is(r.counters.get('both')?.sent, 10);
  assert.is(collected.get('both')?.length, 6);
});
run('a shared operator runs once for several consumers', async () => {
  const p = pipeline(`  src: { type: fileSource, path: in.bin, block_size: 4096 }
  recs: { type: toRecords, inputs: [src] }
  x: { type: recSink, inputs: [recs] }
  y: { type: recSink, inputs: [recs] }
`);
  const r = await runPipeline(p);
  assert.is(r.status, 'completed');
  assert.is(r.counters.get('recs')?.received, bytes.length, 'not doubled by two consumers');
  assert.ok(concat(collected.get('y')).equals(bytes));
});
run('a failing stage fails the run with its id, and the rest is torn down', async () => {
  const p = pipeline(`  src: { type: fileSource, path: in.bin, block_size: 4096 }
  recs: { type: toRecords, inputs: [src], fail_at: 3 }
  out: { type: recSink, inputs: [recs] }
`);
  const r = await runPipeline(p);
  assert.is(r.status, 'failed');
  assert.is(r.error?.stageId, 'recs');
  assert.match(r.error?.message ?? '', /stage 'recs': failing on chunk 3 as asked/);
  assert.ok((r.counters.get('src')?.received ?? 0) < bytes.length, 'the source stopped reading');
});
run('a missing input file fails the source stage by name', async () => {
  const p = pipeline(`  src: { type: fileSource, path: nothere.bin }
  out: { type: bytesSink, inputs: [src] }
`);
  const r = await runPipeline(p);
  assert.is(r.status, 'failed');
  assert.is(r.error?.stageId, 'src');
  assert.match(r.error?.message ?? '', /ENOENT/);
});
run('abort stops a run and reports counters', async () => {
  const p = pipeline(`  src: { type: fileSource, path: in.bin, block_size: 4096 }
  out: { type: bytesSink, inputs: [src] }
`);
  const ac = new AbortController();
  const done = runPipeline(p, { signal: ac.signal });
  setTimeout(() => ac.abort(), 3);
  const r = await done;
  assert.is(r.status, 'aborted');
  assert.ok((r.counters.get('out')?.sent ?? 0) < bytes.length);
  const pre = new AbortController();
  pre.abort();
  assert.is((await runPipeline(p, { signal: pre.signal })).status, 'aborted');
});
run('backpressure: pending work at the sink stays within the source limit', async () => {
  const p = pipeline(`  src: { type: fileSource, path: in.bin, block_size: 4096, max_pending: 1 }
  out: { type: bytesSink, inputs: [src] }
`);
  const r = await runPipeline(p);
  assert.is(r.status, 'completed');
  assert.ok((maxPendingSeen.get('out') ?? 99) <= 2, `pending reached ${maxPendingSeen.get('out')}`);
  // The same measure with a looser limit does grow, so the bound above is the limit's doing.
  const loose = pipeline(`  src: { type: fileSource, path: in.bin, block_size: 4096, max_pending: 8 }
  out: { type: bytesSink, inputs: [src] }
`);
  await runPipeline(loose);
  assert.ok((maxPendingSeen.get('out') ?? 0) > 2, `pending reached only ${maxPendingSeen.get('out')}`);
});
run('progress hears about bytes and records', async () => {
  const p = pipeline(`  src: { type: fileSource, path: in.bin }
  out: { type: bytesSink, inputs: [src], slow: false }
`);
  const seen = { total: 0, bytes: 0, records: 0 };
  await runPipeline(p, {
    progress: { addTotal: (n) => (seen.total += n), addBytes: (n) => (seen.bytes += n), addRecords: (n) => (seen.records += n) },
  });
  assert.equal(seen, { total: bytes.length, bytes: bytes.length, records: bytes.length });
});
run.run();
