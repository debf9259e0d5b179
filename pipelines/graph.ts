/**
 * The stage graph: structural and type checks at load, and the RxJS wiring at run. Fan-out shares
 * one subscription among several consumers; fan-in merges inputs. Sources are connectable and are
 * connected only after every sink has subscribed, so no consumer misses an early element.
 */
import { catchError, connectable, merge, share, Subject, takeUntil, throwError, type Connectable, type Observable } from 'rxjs';
import type { Chunk } from '../stream/chunk';
import type { InputRef, LoadedStage } from './load';
import { inputOf, outputOf, type StageContext, type StageType } from './registry';
import type { Pos } from './settings';
import { closest } from '../lib/suggest';

/** What the graph checks need of a stage (its type may be unknown when the file named a bad one). */
export interface GraphNode {
  readonly id: string;
  readonly pos: Pos;
  readonly type: StageType | undefined;
  readonly inputs: readonly InputRef[];
  /** The service ids the stage lists in `uses:` (checked by the loader, not here). */
  readonly uses?: readonly InputRef[];
}

/** An error raised inside a stage, carrying the stage's id. */
export class StageError extends Error {
  /** @param stageId the stage that failed; @param cause what it threw */
  constructor(
    readonly stageId: string,
    override readonly cause: unknown,
  ) {
    super(`stage '${stageId}': ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'StageError';
  }
}

/**
 * Reports dangling inputs, sources with inputs, operators and sinks without, sinks used as inputs,
 * element type mismatches, unused outputs and cycles.
 */
export function checkGraph(nodes: ReadonlyMap<string, GraphNode>, report: (pos: Pos, message: string) => void): void {
  const ids = [...nodes.keys()];
  const consumers = new Map<string, number>();
  for (const n of nodes.values()) {
    const t = n.type;
    if (t?.kind === 'source' && n.inputs.length > 0) {
      report(n.inputs[0].pos, `stage '${n.id}' is a source (${t.name}) and takes no inputs; remove 'inputs'`);
    }
    if (t && t.kind !== 'source' && n.inputs.length === 0) {
      report(n.pos, `stage '${n.id}' is ${t.kind === 'sink' ? 'a sink' : 'an operator'} (${t.name}) and needs inputs: a list of stage ids giving '${t.input}'`);
    }
    for (const ref of n.inputs) {
      const up = nodes.get(ref.id);
      if (!up) {
        const hint = closest(ref.id, ids);
        report(ref.pos, `stage '${n.id}': input '${ref.id}' is not a stage in this pipeline${hint ? ` (did you mean '${hint}'?)` : ''}`);
        continue;
      }
      consumers.set(ref.id, (consumers.get(ref.id) ?? 0) + 1);
      if (ref.id === n.id) continue; // reported as a cycle below
      if (!up.type || !t || t.kind === 'source') continue;
      const gives = outputOf(up.type);
      const takes = inputOf(t);
      if (gives === undefined) report(ref.pos, `stage '${n.id}': input '${ref.id}' is a sink (${up.type.name}) and gives no output`);
      else if (gives !== takes) {
        report(ref.pos, `stage '${n.id}' (${t.name}) takes '${takes}' but its input '${ref.id}' (${up.type.name}) gives '${gives}'`);
      }
    }
  }
  for (const n of nodes.values()) {
    if (n.type && n.type.kind !== 'sink' && !consumers.has(n.id)) {
      report(n.pos, `stage '${n.id}' gives '${outputOf(n.type)}' but no stage takes it as an input; connect it to a sink`);
    }
  }
  for (const cycle of findCycles(nodes)) {
    const first = nodes.get(cycle[0]) as GraphNode;
    report(first.pos, `cycle: ${[...cycle, cycle[0]].map((id) => `'${id}'`).join(' → ')}; a pipeline is a graph without loops`);
  }
}

/** Each elementary cycle found by a depth-first walk, once, as the list of stage ids on it. */
function findCycles(nodes: ReadonlyMap<string, GraphNode>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const order = new Map([...nodes.keys()].map((id, i) => [id, i]));
  // Follows edges downstream → upstream (a stage's inputs); cycles read the same either way.
  const visit = (id: string): void => {
    state.set(id, 'open');
    stack.push(id);
    for (const ref of nodes.get(id)?.inputs ?? []) {
      if (!nodes.has(ref.id)) continue;
      const s = state.get(ref.id);
      if (s === 'open') {
        // Reversed, the stack runs in data-flow order; rotate it to start at the stage written first.
        const cyc = stack.slice(stack.indexOf(ref.id)).reverse();
        const first = cyc.reduce((best, id, i) => (order.get(id) ?? 0) < (order.get(cyc[best]) ?? 0) ? i : best, 0);
        cycles.push([...cyc.slice(first), ...cyc.slice(0, first)]);
      }
      else if (s === undefined) visit(ref.id);
    }
    stack.pop();
    state.set(id, 'done');
  };
  for (const id of nodes.keys()) if (!state.has(id)) visit(id);
  return cycles;
}

/** The wired graph: one completion Observable per sink and the sources to connect. */
export interface BuiltGraph {
  /** Each sink's Observable; the run is over when all complete. */
  readonly sinks: ReadonlyMap<string, Observable<never>>;
  /** Start the sources (after subscribing to the sinks). */
  readonly sources: readonly Connectable<Chunk>[];
  /**
   * Stops every source (its teardown runs) and completes its output, so the rest of the graph
   * drains what it holds and the sinks complete: the graceful half of a stop.
   */
  stopSources(): void;
}

/** Wires the stages of a checked pipeline; `context(id)` gives each stage its context. */
export function buildGraph(stages: ReadonlyMap<string, LoadedStage>, context: (id: string) => StageContext): BuiltGraph {
  const consumerCount = new Map<string, number>();
  for (const s of stages.values()) for (const r of s.inputs) consumerCount.set(r.id, (consumerCount.get(r.id) ?? 0) + 1);
  const outputs = new Map<string, Observable<Chunk>>();
  const sinks = new Map<string, Observable<never>>();
  const sources: Connectable<Chunk>[] = [];
  const stopping = new Subject<void>();
  const tag = <T>(id: string) => catchError<T, Observable<never>>((err: unknown) => throwError(() => (err instanceof StageError ? err : new StageError(id, err))));

  const outputOfStage = (id: string): Observable<Chunk> => {
    const have = outputs.get(id);
    if (have) return have;
    const s = stages.get(id) as LoadedStage;
    const t = s.type;
    let out: Observable<Chunk>;
    if (t.kind === 'source') {
      const src$ = t.create(s.config as never, context(id)).pipe(tag<Chunk>(id), takeUntil(stopping));
      const c = connectable(src$, { connector: () => new Subject<Chunk>(), resetOnDisconnect: false });
      sources.push(c);
      out = c;
    } else if (t.kind === 'operator') {
      const op = t.create(s.config as never, context(id));
      out = inputOfStage(s).pipe(op, tag<Chunk>(id));
      // Several consumers share one run of the operator; a single one subscribes directly.
      if ((consumerCount.get(id) ?? 0) > 1) out = out.pipe(share());
    } else {
      throw new Error(`stage '${id}' is a sink and has no output`);
    }
    outputs.set(id, out);
    return out;
  };
  const inputOfStage = (s: LoadedStage): Observable<Chunk> => {
    const ins = s.inputs.map((r) => outputOfStage(r.id));
    return ins.length === 1 ? ins[0] : merge(...ins);
  };

  for (const s of stages.values()) {
    if (s.type.kind !== 'sink') continue;
    const fn = s.type.create(s.config as never, context(s.id));
    sinks.set(s.id, fn(inputOfStage(s)).pipe(tag<never>(s.id)));
  }
  const stopSources = (): void => {
    stopping.next();
    stopping.complete();
  };
  return { sinks, sources, stopSources };
}
