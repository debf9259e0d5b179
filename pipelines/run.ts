/**
 * Runs a loaded pipeline: wires the graph, starts the sources once every sink listens, and resolves
 * when all sinks complete, when a stage fails (the error names the stage), or when the abort signal
 * fires (SIGINT / SIGTERM in `hd run`) and the graph has stopped in order: sources stopped, what the
 * stages held drained, every stage's asynchronous teardown settled, all within a bound. Every
 * stage's counters come back in all three cases.
 */
import { Subscription } from 'rxjs';
import { Flow } from '../stream/flow';
import { StageCounters, type CounterSnapshot } from '../stream/stageCounters';
import { buildGraph, StageError, type BuiltGraph } from './graph';
import type { Pipeline } from './load';
import type { ProgressReporter, StageContext } from './registry';

/** How a run ended. */
export type RunStatus = 'completed' | 'failed' | 'aborted';

/** The outcome of a run. */
export interface RunResult {
  readonly status: RunStatus;
  /** The failing stage's error when `status` is 'failed'. */
  readonly error?: StageError;
  /** Every stage's counters, in file order. */
  readonly counters: ReadonlyMap<string, CounterSnapshot>;
  /** Stages whose counters break the rule of docs/specs/stage.md (a bug in that stage). */
  readonly counterProblems: readonly string[];
  /**
   * True when the run ended in order: after an abort, the graph drained and every stage's teardown
   * settled within `stopTimeoutMs`; otherwise, the teardown settled within it. False: something was
   * cut off.
   */
  readonly clean: boolean;
}

/** Options for {@link runPipeline}. */
export interface RunOptions {
  /**
   * Aborting stops the run: the sources stop (their teardown runs) and complete, the other stages
   * drain what they hold, the sinks complete, every stage's teardown settles; then the run resolves
   * with status 'aborted'. What has not finished within `stopTimeoutMs` is cut off.
   */
  readonly signal?: AbortSignal;
  /** How long a stop (drain and teardown) or the teardown after completion may take; default 10 s. */
  readonly stopTimeoutMs?: number;
  readonly progress?: ProgressReporter;
  /** Data problems stages report (malformed lines and the like); default: dropped. */
  readonly onReport?: (stageId: string, message: string) => void;
}

/** Default bound on a stop: drain plus teardown. */
export const DEFAULT_STOP_TIMEOUT_MS = 10_000;

const NO_PROGRESS: ProgressReporter = { addTotal: () => undefined, addBytes: () => undefined, addRecords: () => undefined };

/** True once every promise settled, false if `ms` ran out first. */
async function settledWithin(work: readonly Promise<unknown>[], ms: number): Promise<boolean> {
  if (work.length === 0) return true;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), Math.max(0, ms))));
  const all = Promise.allSettled(work).then(() => true);
  const ok = await Promise.race([all, timeout]);
  clearTimeout(timer);
  return ok;
}

/** Runs `pipeline` to completion, failure or abort. */
export function runPipeline(pipeline: Pipeline, opts: RunOptions = {}): Promise<RunResult> {
  const flow = new Flow();
  const stopTimeoutMs = opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
  const counters = new Map<string, StageCounters>();
  const teardowns: Promise<unknown>[] = [];
  const context = (id: string): StageContext => {
    const c = new StageCounters(pipeline.stages.get(id)?.type.unit ?? 'records');
    counters.set(id, c);
    return {
      id,
      counters: c,
      flow,
      progress: opts.progress ?? NO_PROGRESS,
      report: (message) => opts.onReport?.(id, message),
      pipelineCounters: () => {
        const out = new Map<string, { type: string; counters: CounterSnapshot }>();
        for (const [sid, s] of pipeline.stages) {
          const sc = counters.get(sid);
          if (sc) out.set(sid, { type: s.type.name, counters: sc.snapshot() });
        }
        return out;
      },
      trackTeardown: (work) => {
        teardowns.push(work.catch((err: unknown) => opts.onReport?.(id, `teardown failed: ${err instanceof Error ? err.message : String(err)}`)));
      },
    };
  };
  const snapshot = (): Map<string, CounterSnapshot> => {
    const out = new Map<string, CounterSnapshot>();
    for (const id of pipeline.stages.keys()) {
      const c = counters.get(id);
      if (c) out.set(id, c.snapshot());
    }
    return out;
  };
  const problems = (complete: boolean): string[] => {
    const out: string[] = [];
    for (const [id, c] of counters) for (const p of c.check(complete)) out.push(`stage '${id}': ${p}`);
    return out;
  };

  return new Promise<RunResult>((resolve) => {
    if (opts.signal?.aborted) {
      resolve({ status: 'aborted', counters: snapshot(), counterProblems: [], clean: true });
      return;
    }
    const subs = new Subscription();
    let phase: 'running' | 'stopping' | 'done' = 'running';
    /** When a stop must be over. */
    let deadline = 0;
    let stopTimer: NodeJS.Timeout | undefined;
    let drained = true;

    const finish = (status: RunStatus, error?: StageError): void => {
      if (phase === 'done') return;
      const stopping = phase === 'stopping';
      phase = 'done';
      clearTimeout(stopTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      // Stage teardown runs here (synchronously); the async work it starts is tracked and awaited.
      subs.unsubscribe();
      const left = stopping ? deadline - Date.now() : stopTimeoutMs;
      void settledWithin(teardowns, left).then((settled) => {
        resolve({ status, error, counters: snapshot(), counterProblems: problems(status === 'completed'), clean: settled && drained });
      });
    };
    const onAbort = (): void => {
      if (phase !== 'running') return;
      phase = 'stopping';
      deadline = Date.now() + stopTimeoutMs;
      stopTimer = setTimeout(() => {
        drained = false;
        finish('aborted');
      }, stopTimeoutMs);
      // The sinks complete once what the stages hold has drained; then finish() runs.
      graph?.stopSources();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    let graph: BuiltGraph | undefined;
    try {
      graph = buildGraph(pipeline.stages, context);
    } catch (err) {
      finish('failed', err instanceof StageError ? err : new StageError('(graph)', err));
      return;
    }
    let open = graph.sinks.size;
    for (const [id, sink$] of graph.sinks) {
      subs.add(
        sink$.subscribe({
          error: (err: unknown) => finish('failed', err instanceof StageError ? err : new StageError(id, err)),
          complete: () => {
            if (--open === 0) finish(phase === 'stopping' ? 'aborted' : 'completed');
          },
        }),
      );
    }
    for (const src of graph.sources) {
      if (phase !== 'running') break;
      subs.add(src.connect());
    }
  });
}
