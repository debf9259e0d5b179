/** Stage types for runner tests: small, synchronous or asynchronous, and able to fail on demand. */
import { Observable, map } from 'rxjs';
import { awaitEach } from '../../stream/awaitEach';
import { recordChunk, type Chunk } from '../../stream/chunk';
import { builtinRegistry } from '../../roles/builtins';
import type { OperatorType, Registry, SinkType, SourceType } from '../../pipelines/registry';
import { bool, int, str } from '../../pipelines/settings';

/** Everything the test sinks received, by stage id. */
export const collected = new Map<string, Chunk[]>();
/** The highest pending count each test sink saw at a write. */
export const maxPendingSeen = new Map<string, number>();

const recSourceSettings = { chunks: int({ doc: 'chunks to emit', default: 3, min: 0 }), size: int({ doc: 'records per chunk', default: 2, min: 1 }) };
/** Emits `chunks` record chunks of `size` 4-byte records synchronously. */
export const recSource: SourceType<typeof recSourceSettings> = {
  name: 'recSource',
  kind: 'source',
  doc: 'test records',
  unit: 'records',
  output: 'records',
  settings: recSourceSettings,
  create: (c, ctx) =>
    new Observable<Chunk>((sub) => {
      for (let i = 0; i < c.chunks; i++) {
        ctx.counters.received += c.size;
        ctx.counters.sent += c.size;
        sub.next(recordChunk('t', 4, c.size, Buffer.alloc(4 * c.size, i)));
      }
      sub.complete();
    }),
};

const toRecordsSettings = { fail_at: int({ doc: 'throw on this chunk (1-based); 0 never', default: 0, min: 0 }) };
/** Turns each byte chunk into records of 1 byte each; throws on chunk `fail_at`. */
export const toRecords: OperatorType<typeof toRecordsSettings> = {
  name: 'toRecords',
  kind: 'operator',
  doc: 'test bytes → records',
  unit: 'bytes',
  input: 'bytes',
  output: 'records',
  settings: toRecordsSettings,
  create: (c, ctx) => {
    let n = 0;
    return map((chunk: Chunk) => {
      if (chunk.kind !== 'bytes') throw new Error('expected bytes');
      if (++n === c.fail_at) throw new Error(`failing on chunk ${n} as asked`);
      ctx.counters.received += chunk.buf.length;
      ctx.counters.sent += chunk.buf.length;
      return recordChunk('t', 1, chunk.buf.length, chunk.buf);
    });
  },
};

const passSettings = { label: str({ doc: 'unused label', default: 'x' }) };
/** Passes records through unchanged. */
export const pass: OperatorType<typeof passSettings> = {
  name: 'pass',
  kind: 'operator',
  doc: 'test pass-through',
  unit: 'records',
  input: 'records',
  output: 'records',
  settings: passSettings,
  create: (_c, ctx) =>
    map((chunk: Chunk) => {
      const n = chunk.kind === 'records' ? chunk.count : 0;
      ctx.counters.received += n;
      ctx.counters.sent += n;
      return chunk;
    }),
};

const sinkSettings = { slow: bool({ doc: 'await a macrotask per write', default: true }) };
function collectSink(name: string, input: 'bytes' | 'records'): SinkType<typeof sinkSettings> {
  return {
    name,
    kind: 'sink',
    doc: 'test sink collecting what it receives',
    unit: input === 'bytes' ? 'bytes' : 'records',
    input,
    settings: sinkSettings,
    create: (c, ctx) => (input$) => {
      const got: Chunk[] = [];
      collected.set(ctx.id, got);
      return new Observable<never>((sub) =>
        input$
          .pipe(
            awaitEach(async (chunk: Chunk) => {
              const n = chunk.kind === 'records' ? chunk.count : chunk.kind === 'bytes' ? chunk.buf.length : 0;
              ctx.counters.received += n;
              maxPendingSeen.set(ctx.id, Math.max(maxPendingSeen.get(ctx.id) ?? 0, ctx.flow.pending));
              if (c.slow) await new Promise((r) => setTimeout(r, 1));
              got.push(chunk);
              ctx.counters.sent += n;
              ctx.progress.addRecords(n);
              return [];
            }, ctx.flow),
          )
          .subscribe({ error: (e) => sub.error(e), complete: () => sub.complete() }),
      );
    },
  };
}

/** Sink of byte chunks. */
export const bytesSink = collectSink('bytesSink', 'bytes');
/** Sink of record chunks. */
export const recSink = collectSink('recSink', 'records');

const ackSinkSettings = { refuse: int({ doc: 'refuse batches whose eob counts this many records (error code 10); -1 never', default: -1, min: -1 }) };
/** Collects batched records and answers every eob / bbn through its `ack` hook once it has them (a stand-in for a durable store). */
export const ackSink: SinkType<typeof ackSinkSettings> = {
  name: 'ackSink',
  kind: 'sink',
  doc: 'test sink acknowledging batches',
  unit: 'records',
  input: 'batched-records',
  settings: ackSinkSettings,
  create: (c, ctx) => (input$) => {
    const got: Chunk[] = [];
    collected.set(ctx.id, got);
    return new Observable<never>((sub) =>
      input$
        .pipe(
          awaitEach(async (chunk: Chunk) => {
            const n = chunk.kind === 'records' ? chunk.count : 0;
            ctx.counters.received += n;
            await new Promise((r) => setImmediate(r));
            got.push(chunk);
            ctx.counters.sent += n;
            if (chunk.kind === 'eob' && chunk.recordCount === c.refuse) chunk.ack?.({ ok: false, code: 10, message: 'refused as asked' });
            else if (chunk.kind === 'eob' || chunk.kind === 'bbn') chunk.ack?.({ ok: true });
            if (chunk.kind === 'eob' || chunk.kind === 'bbn') ctx.counters.controls++;
            return [];
          }, ctx.flow),
        )
        .subscribe({ error: (e) => sub.error(e), complete: () => sub.complete() }),
    );
  },
};

/** The built-in registry plus the test stages. */
export function testRegistry(): Registry {
  return builtinRegistry().register(recSource).register(toRecords).register(pass).register(bytesSink).register(recSink).register(ackSink);
}
