/**
 * Runs a loaded pipeline: starts its services (each after the services it uses), wires the graph
 * with them injected, starts the sources once every sink listens, and resolves when all sinks
 * complete, when a stage or service fails (the error names it), or when the abort signal fires
 * (SIGINT / SIGTERM in `hd run`) and the graph has stopped in order: sources stopped, what the
 * stages held drained, every stage's asynchronous teardown settled, then the services stopped in
 * reverse start order, all within a bound. Every stage's counters come back in all three cases. A
 * pipeline of services alone (the DMS) runs until it is aborted or a service fails.
 */
import { Subscription } from 'rxjs';
import type { LogLevel } from '../lib/logging';
import { Flow } from '../stream/flow';
import { StageCounters, type CounterSnapshot } from '../stream/stageCounters';
import { buildGraph, StageError, type BuiltGraph } from './graph';
import type { LoadedService, Pipeline } from './load';
import type { ProgressReporter, RunningService, StageContext } from './registry';

/** How a run ended. */
export type RunStatus = 'completed' | 'failed' | 'aborted';

/** The outcome of a run. */
export interface RunResult {
  readonly status: RunStatus;
  /** The failing stage's (or service's) error when `status` is 'failed'. */
  readonly error?: StageError;
  /** Every stage's counters, in file order. */
  readonly counters: ReadonlyMap<string, CounterSnapshot>;
  /** Stages whose counters break the rule of docs/specs/stage.md (a bug in that stage). */
  readonly counterProblems: readonly string[];
  /**
   * True when the run ended in order: after an abort, the graph drained and every stage's teardown
   * and every service's stop settled within `stopTimeoutMs`; otherwise, the teardown and the stops
   * settled within it. False: something was cut off.
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
  /**
   * Lines the stages and services report, with the level each call site gave: a stage's data
   * problems (malformed lines and the like) and failed teardowns and stops are `warn`; a service
   * states its own. Default: dropped.
   */
  readonly onReport?: (stageId: string, message: string, level: LogLevel) => void;
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

/** The failure a service reported, as the run's error. */
const serviceError = (id: string, err: unknown): StageError => (err instanceof StageError ? err : new StageError(id, err));

/** The started services of a run, in start order; stopped in reverse. */
class StartedServices {
  private readonly running: { id: string; service: RunningService<unknown> }[] = [];

  /** What started service `id` gives its users. */
  value(id: string): unknown {
    return this.running.find((r) => r.id === id)?.service.value;
  }

  /** The values of the services `uses` names (slot → service id), by slot. */
  valuesFor(uses: ReadonlyMap<string, string>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [slot, id] of uses) out[slot] = this.value(id);
    return out;
  }

  add(id: string, service: RunningService<unknown>): void {
    this.running.push({ id, service });
  }

  /** Stops every started service, the last started first, each once its users have; failures are reported. */
  async stopAll(report: (id: string, message: string, level: LogLevel) => void): Promise<void> {
    while (this.running.length > 0) {
      const r = this.running.pop() as { id: string; service: RunningService<unknown> };
      try {
        await r.service.stop();
      } catch (err) {
        report(r.id, `stop failed: ${err instanceof Error ? err.message : String(err)}`, 'warn');
      }
    }
  }
}

/** Runs `pipeline` to completion, failure or abort. */
export function runPipeline(pipeline: Pipeline, opts: RunOptions = {}): Promise<RunResult> {
  const flow = new Flow();
  const stopTimeoutMs = opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
  const counters = new Map<string, StageCounters>();
  const teardowns: Promise<unknown>[] = [];
  const services = new StartedServices();
  /** Set once the graph runs: how a service that breaks later fails the run. */
  let failRun: ((error: StageError) => void) | undefined;
  /** A service failure reported while the services were still starting. */
  let startFailure: StageError | undefined;
  const context = (id: string): StageContext => {
    const c = new StageCounters(pipeline.stages.get(id)?.type.unit ?? 'records');
    counters.set(id, c);
    return {
      services: services.valuesFor(pipeline.stages.get(id)?.uses ?? new Map()),
      id,
      counters: c,
      flow,
      progress: opts.progress ?? NO_PROGRESS,
      // A stage reports data problems only: warnings.
      report: (message) => opts.onReport?.(id, message, 'warn'),
      pipelineCounters: () => {
        const out = new Map<string, { type: string; counters: CounterSnapshot }>();
        for (const [sid, s] of pipeline.stages) {
          const sc = counters.get(sid);
          if (sc) out.set(sid, { type: s.type.name, counters: sc.snapshot() });
        }
        return out;
      },
      trackTeardown: (work) => {
        teardowns.push(work.catch((err: unknown) => opts.onReport?.(id, `teardown failed: ${err instanceof Error ? err.message : String(err)}`, 'warn')));
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

  const startService = async (s: LoadedService): Promise<void> => {
    const running = await s.type.start(s.config as never, {
      id: s.id,
      flow,
      services: services.valuesFor(s.uses),
      report: (message, level) => opts.onReport?.(s.id, message, level),
      fail: (err) => {
        const e = serviceError(s.id, err);
        if (failRun) failRun(e);
        else startFailure ??= e;
      },
    });
    services.add(s.id, running);
  };
  /** Stops the services within what is left of `ms`; true when they all stopped in time. */
  const stopServices = (ms: number): Promise<boolean> => settledWithin([services.stopAll((id, m, level) => opts.onReport?.(id, m, level))], ms);

  if (opts.signal?.aborted) return Promise.resolve({ status: 'aborted', counters: snapshot(), counterProblems: [], clean: true });
  if (pipeline.services.size === 0) return new Promise<RunResult>((resolve) => runGraph(resolve));
  // Services start one at a time in start order (each after those it uses); a failure, or an
  // abort, stops what already started and ends the run before any stage is created.
  return (async (): Promise<RunResult> => {
    for (const s of pipeline.services.values()) {
      let failed: StageError | undefined;
      try {
        await startService(s);
      } catch (err) {
        failed = serviceError(s.id, err);
      }
      failed ??= startFailure;
      if (failed || opts.signal?.aborted) {
        const clean = await stopServices(stopTimeoutMs);
        return failed ? { status: 'failed', error: failed, counters: snapshot(), counterProblems: [], clean } : { status: 'aborted', counters: snapshot(), counterProblems: [], clean };
      }
    }
    return new Promise<RunResult>((resolve) => runGraph(resolve));
  })();

  function runGraph(resolve: (r: RunResult) => void): void {
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
      const end = stopping ? deadline : Date.now() + stopTimeoutMs;
      // The services outlive their users: they stop once every stage's teardown settled.
      void settledWithin(teardowns, end - Date.now())
        .then(async (settled) => (await stopServices(end - Date.now())) && settled)
        .then((settled) => {
          resolve({ status, error, counters: snapshot(), counterProblems: problems(status === 'completed'), clean: settled && drained });
        });
    };
    failRun = (e) => finish('failed', e);
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
      // Services alone: nothing to drain.
      if (graph?.sinks.size === 0) finish('aborted');
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
    // Services alone (no sink): the run lasts until it is aborted or a service fails.
  }
}
