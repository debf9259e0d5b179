/**
 * The stage registry: per stage type, its kind, the element types it takes and gives, its settings
 * and a factory. Sources and sinks are nouns (`fileSource`, `hdwpFileSink`), operators verbs
 * (`parse`, `timeBatch`).
 */
import type { Observable, OperatorFunction } from 'rxjs';
import type { Chunk, ElementType } from '../stream/chunk';
import type { Flow } from '../stream/flow';
import type { CounterSnapshot, CounterUnit, StageCounters } from '../stream/stageCounters';
import type { ConfigOf, SettingsSpec } from './settings';

/** Where a stage sits in a graph. */
export type StageKind = 'source' | 'operator' | 'sink';

/** Progress a stage reports to `hd run`'s progress display. */
export interface ProgressReporter {
  /** More input of known size is expected (a source adds its file size). */
  addTotal(bytes: number): void;
  /** Source bytes consumed. */
  addBytes(bytes: number): void;
  /** Records fully written by a sink. */
  addRecords(records: number): void;
}

/** What the runner hands a stage factory. */
export interface StageContext {
  /** The stage's id in the pipeline file. */
  readonly id: string;
  /** The stage's counters; the stage keeps them by the rule of docs/specs/stage.md. */
  readonly counters: StageCounters;
  /** The pipeline's pending-work accounting (backpressure). */
  readonly flow: Flow;
  readonly progress: ProgressReporter;
  /** Reports a data problem that does not stop the stage (a malformed line, a late record). */
  report(message: string): void;
  /**
   * Hands the runner asynchronous work the stage's teardown started (closing a server, aborting
   * files, sending goodbyes): the run ends only once it has settled, or the run's stop timeout ran
   * out. Teardown itself is synchronous in RxJS; this is how a stage finishes it properly.
   */
  trackTeardown(work: Promise<unknown>): void;
  /**
   * Every stage's counters now, by stage id in file order, with the stage type's name: for a stage
   * that publishes the whole pipeline's counters (the ingester's /metrics). Absent outside a run.
   */
  readonly pipelineCounters?: () => ReadonlyMap<string, { readonly type: string; readonly counters: CounterSnapshot }>;
}

/** A sink consumes its input and completes once everything is durably written. */
export type SinkFunction = (input: Observable<Chunk>) => Observable<never>;

interface StageTypeBase<S extends SettingsSpec> {
  /** The name written as `type:` in pipeline files. */
  readonly name: string;
  /** One sentence for `hd` listings and docs. */
  readonly doc: string;
  /** What the stage's counters count. */
  readonly unit: CounterUnit;
  readonly settings: S;
}

/** A stage type with no inputs that produces elements. */
export interface SourceType<S extends SettingsSpec = SettingsSpec> extends StageTypeBase<S> {
  readonly kind: 'source';
  readonly output: ElementType;
  create(config: ConfigOf<S>, ctx: StageContext): Observable<Chunk>;
}

/** A stage type that transforms its inputs' elements. */
export interface OperatorType<S extends SettingsSpec = SettingsSpec> extends StageTypeBase<S> {
  readonly kind: 'operator';
  readonly input: ElementType;
  readonly output: ElementType;
  create(config: ConfigOf<S>, ctx: StageContext): OperatorFunction<Chunk, Chunk>;
}

/** A stage type that writes its inputs' elements somewhere and emits nothing. */
export interface SinkType<S extends SettingsSpec = SettingsSpec> extends StageTypeBase<S> {
  readonly kind: 'sink';
  readonly input: ElementType;
  /**
   * A service (the DMS, the Proxy) that may stand alone, without inputs: its input then carries no
   * elements and completes when the run stops, which is the service's signal to shut down.
   */
  readonly standalone?: boolean;
  create(config: ConfigOf<S>, ctx: StageContext): SinkFunction;
}

/** Any registered stage type. */
export type StageType = SourceType | OperatorType | SinkType;

/** The element type a stage type takes, or undefined for a source. */
export function inputOf(t: StageType): ElementType | undefined {
  return t.kind === 'source' ? undefined : t.input;
}

/** The element type a stage type gives, or undefined for a sink. */
export function outputOf(t: StageType): ElementType | undefined {
  return t.kind === 'sink' ? undefined : t.output;
}

/** A set of stage types by name. */
export class Registry {
  private readonly types = new Map<string, StageType>();

  /** Adds a stage type; a name can be registered once. */
  register<S extends SettingsSpec>(t: SourceType<S> | OperatorType<S> | SinkType<S>): this {
    if (this.types.has(t.name)) throw new Error(`stage type '${t.name}' is already registered`);
    this.types.set(t.name, t as unknown as StageType);
    return this;
  }

  /** The stage type called `name`, if registered. */
  get(name: string): StageType | undefined {
    return this.types.get(name);
  }

  /** Registered names, sorted. */
  names(): string[] {
    return [...this.types.keys()].sort();
  }

  /** Registered types, sorted by name. */
  all(): StageType[] {
    return this.names().map((n) => this.types.get(n) as StageType);
  }
}
