/**
 * Stopping a run (SIGINT / SIGTERM in `hd run`): sources stop and complete, the stages drain what
 * they hold, the sinks complete, and the stages' asynchronous teardown is awaited within a bound.
 */
import path from 'node:path';
import { tmpdir } from 'node:os';
import { Observable } from 'rxjs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { awaitEach } from '../../stream/awaitEach';
import { recordChunk, type Chunk } from '../../stream/chunk';
import { formatProblem, parsePipeline, type Pipeline } from '../../pipelines/load';
import { Registry, type SinkType, type SourceType } from '../../pipelines/registry';
import { runPipeline } from '../../pipelines/run';
import { bool, int } from '../../pipelines/settings';

/** What the test stages saw, in order. */
const events: string[] = [];
let releaseSink: (() => void) | undefined;

const endlessSettings = { teardown_ms: int({ doc: 'async teardown length; -1 never settles', default: 20, min: -1 }) };
/** Emits one record chunk at once, then nothing until stopped; its teardown takes `teardown_ms`. */
const endless: SourceType<typeof endlessSettings> = {
  name: 'endless',
  kind: 'source',
  doc: 'test source that never completes',
  unit: 'records',
  output: 'records',
  settings: endlessSettings,
  create: (c, ctx) =>
    new Observable<Chunk>((sub) => {
      ctx.counters.received += 1;
      ctx.counters.sent += 1;
      sub.next(recordChunk('t', 4, 1, Buffer.alloc(4)));
      return () => {
        events.push('source torn down');
        const work =
          c.teardown_ms < 0
            ? new Promise<void>(() => undefined)
            : new Promise<void>((r) => setTimeout(r, c.teardown_ms)).then(() => {
                events.push('source teardown settled');
              });
        ctx.trackTeardown(work);
      };
    }),
};

const holdingSettings = { hold: bool({ doc: 'each write waits for releaseSink()', default: true }) };
/** Writes each chunk only once the test releases it; on completion, closes asynchronously. */
const holding: SinkType<typeof holdingSettings> = {
  name: 'holding',
  kind: 'sink',
  doc: 'test sink that finishes its writes and closes asynchronously',
  unit: 'records',
  input: 'records',
  settings: holdingSettings,
  create: (c, ctx) => (input$) =>
    new Observable<never>((sub) => {
      const s = input$
        .pipe(
          awaitEach(async (chunk: Chunk) => {
            const n = chunk.kind === 'records' ? chunk.count : 0;
            ctx.counters.received += n;
            if (c.hold) await new Promise<void>((r) => (releaseSink = r));
            ctx.counters.sent += n;
            events.push('sink wrote');
            return [];
          }, ctx.flow),
        )
        .subscribe({
          error: (e: unknown) => sub.error(e),
          complete: () => {
            events.push('sink input complete');
            void new Promise((r) => setTimeout(r, 10)).then(() => {
              events.push('sink closed');
              sub.complete();
            });
          },
        });
      return () => s.unsubscribe();
    }),
};

const registry = new Registry().register(endless).register(holding);
const pipeline = (stages: string): Pipeline => {
  const r = parsePipeline(`pipeline: stop\nstages:\n${stages}`, path.join(tmpdir(), 'stop.yaml'), { registry, env: {} });
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  return r.pipeline;
};
const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const stop = suite('runPipeline: stopping in order');
stop.before.each(() => {
  events.length = 0;
  releaseSink = undefined;
});
stop('abort stops the source, lets the sink finish the write in hand and close, awaits the source teardown', async () => {
  const p = pipeline(`  src: { type: endless }
  out: { type: holding, inputs: [src] }
`);
  const ac = new AbortController();
  const done = runPipeline(p, { signal: ac.signal });
  while (!releaseSink) await tick(1);
  ac.abort();
  await tick(5);
  assert.equal(events, ['source torn down'], 'the source stops at once; the sink still holds its write');
  releaseSink();
  const r = await done;
  assert.is(r.status, 'aborted');
  assert.ok(r.clean);
  assert.equal(events.slice(0, 3), ['source torn down', 'sink wrote', 'sink input complete']);
  assert.ok(events.includes('sink closed'), 'the run waited for the sink to close');
  assert.ok(events.includes('source teardown settled'), 'the run waited for the source teardown');
  assert.is(r.counters.get('out')?.sent, 1, 'the write in hand was finished, not dropped');
});
stop('a teardown that never settles is cut off after stopTimeoutMs and the result says so', async () => {
  const p = pipeline(`  src: { type: endless, teardown_ms: -1 }
  out: { type: holding, inputs: [src], hold: false }
`);
  const ac = new AbortController();
  const done = runPipeline(p, { signal: ac.signal, stopTimeoutMs: 50 });
  await tick(5);
  ac.abort();
  const r = await done;
  assert.is(r.status, 'aborted');
  assert.is(r.clean, false);
  assert.ok(events.includes('sink closed'), 'the sink still completed');
});
stop('a sink that never completes is cut off after stopTimeoutMs', async () => {
  const p = pipeline(`  src: { type: endless }
  out: { type: holding, inputs: [src] }
`);
  const ac = new AbortController();
  const done = runPipeline(p, { signal: ac.signal, stopTimeoutMs: 50 });
  while (!releaseSink) await tick(1);
  ac.abort();
  const r = await done;
  assert.is(r.status, 'aborted');
  assert.is(r.clean, false);
  assert.not.ok(events.includes('sink wrote'));
  releaseSink();
});
stop.run();
