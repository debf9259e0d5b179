/**
 * The stage registry: per stage type, its kind, the element types it takes and gives, its settings,
 * the services it uses and a factory; per service type, its settings, the services it uses and how
 * it starts. Sources and sinks are nouns (`fileSource`, `hdwpFileSink`), operators verbs (`parse`,
 * `timeBatch`). Stage and service types share one namespace of names.
 */
import type { Observable, OperatorFunction } from 'rxjs';
import type { LogLevel } from '../lib/logging';
import type { ElementOf, ElementType } from '../stream/chunk';
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

/**
 * A service a stage or service type uses: the service type it takes and whether the file may leave
 * it out. `T` is what the started service gives its users (phantom: carried by the type only).
 */
export interface ServiceUse<T> {
  /** The service type's name (`nodeIdentity`, `storageNode`). */
  readonly service: string;
  /** When true, a file may leave the service out; the user then gets undefined. */
  readonly optional: boolean;
  /** What the service is for, to the user (named in load problems). */
  readonly doc: string;
  /** Phantom, never set: ties `T` to the use. */
  readonly __value?: T;
}

/** The services a stage or service type uses, by slot name. */
export type ServiceUses = Readonly<Record<string, ServiceUse<unknown>>>;

/** What the started services of a {@link ServiceUses} give, by slot name. */
export type ServicesOf<U extends ServiceUses> = { readonly [K in keyof U]: U[K] extends ServiceUse<infer T> ? T : never };

/** A service the file must declare and the stage list in `uses:`. */
export function needs<T>(service: string, doc: string): ServiceUse<T> {
  return { service, optional: false, doc };
}

/** A service the file may declare and the stage list in `uses:`; without it the user gets undefined. */
export function mayUse<T>(service: string, doc: string): ServiceUse<T | undefined> {
  return { service, optional: true, doc };
}

/** What the runner hands a stage factory. */
export interface StageContext<V = Readonly<Record<string, unknown>>> {
  /**
   * The started services the stage listed in `uses:`, by the slot names of its type's `uses`
   * (undefined for an optional one the file left out). They outlive the stage: the runner stops
   * them only after every stage's teardown.
   */
  readonly services: V;
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

/**
 * A stream of the elements an {@link ElementType} names (`Elements<'records'>` is an
 * `Observable<RecordChunk>`): how a stage type's `input` and `output` names become the TypeScript
 * types of its factory, through {@link ElementOf}.
 */
export type Elements<T extends ElementType> = Observable<ElementOf[T]>;

/** A sink consumes its input and completes once everything is durably written. */
export type SinkFunction<In extends ElementType = ElementType> = (input: Elements<In>) => Observable<never>;

interface StageTypeBase<S extends SettingsSpec, U extends ServiceUses> {
  /** The name written as `type:` in pipeline files. */
  readonly name: string;
  /** One sentence for `hd` listings and docs. */
  readonly doc: string;
  /** What the stage's counters count. */
  readonly unit: CounterUnit;
  readonly settings: S;
  /** The services the stage uses, by slot name (listed in the file as `uses: [service id, ...]`). */
  readonly uses?: U;
}

/**
 * A stage type with no inputs that produces elements. `Out` is its `output` name; its factory gives
 * `Elements<Out>`, so a factory whose stream disagrees with the name fails to compile (the loader
 * checks the same names between stages at load time).
 */
export interface SourceType<S extends SettingsSpec = SettingsSpec, U extends ServiceUses = ServiceUses, Out extends ElementType = ElementType> extends StageTypeBase<S, U> {
  readonly kind: 'source';
  readonly output: Out;
  create(config: ConfigOf<S>, ctx: StageContext<ServicesOf<U>>): Elements<Out>;
}

/** A stage type that transforms its inputs' elements: an operator from `Elements<In>` to `Elements<Out>`. */
export interface OperatorType<S extends SettingsSpec = SettingsSpec, U extends ServiceUses = ServiceUses, In extends ElementType = ElementType, Out extends ElementType = ElementType>
  extends StageTypeBase<S, U> {
  readonly kind: 'operator';
  readonly input: In;
  readonly output: Out;
  create(config: ConfigOf<S>, ctx: StageContext<ServicesOf<U>>): OperatorFunction<ElementOf[In], ElementOf[Out]>;
}

/** A stage type that writes its inputs' elements (`Elements<In>`) somewhere and emits nothing. */
export interface SinkType<S extends SettingsSpec = SettingsSpec, U extends ServiceUses = ServiceUses, In extends ElementType = ElementType> extends StageTypeBase<S, U> {
  readonly kind: 'sink';
  readonly input: In;
  create(config: ConfigOf<S>, ctx: StageContext<ServicesOf<U>>): SinkFunction<In>;
}

/**
 * Any registered stage type, its element types erased to any element type: what the registry holds
 * and the graph runs. The loader has checked that connected stages agree on the names, so the graph
 * may hand each stage the stream of its inputs as it is.
 */
export type StageType = SourceType | OperatorType | SinkType;

/**
 * Defines a source type, taking its element type from `output`: `create` must give
 * `Elements<typeof output>`, its settings and services are typed from `settings` and `uses`.
 *
 * @example
 * export const fileSourceStage = defineSource({ name: 'fileSource', kind: 'source', output: 'bytes', ..., create: (c, ctx) => fileSource(...) });
 */
export function defineSource<Out extends ElementType, S extends SettingsSpec, U extends ServiceUses = ServiceUses>(t: SourceType<S, U, Out>): SourceType<S, U, Out> {
  return t;
}

/**
 * Defines an operator type, taking its element types from `input` and `output`: `create` must give an
 * `OperatorFunction<ElementOf[typeof input], ElementOf[typeof output]>`.
 *
 * @example
 * export const parseStage = defineOperator({ name: 'parse', kind: 'operator', input: 'bytes', output: 'records', ..., create: (c, ctx) => parse(...) });
 */
export function defineOperator<In extends ElementType, Out extends ElementType, S extends SettingsSpec, U extends ServiceUses = ServiceUses>(
  t: OperatorType<S, U, In, Out>,
): OperatorType<S, U, In, Out> {
  return t;
}

/** Defines a sink type, taking its element type from `input`: `create` must give a `SinkFunction<typeof input>`. */
export function defineSink<In extends ElementType, S extends SettingsSpec, U extends ServiceUses = ServiceUses>(t: SinkType<S, U, In>): SinkType<S, U, In> {
  return t;
}

/** What the runner hands a service when it starts it. */
export interface ServiceContext<V = Readonly<Record<string, unknown>>> {
  /** The service's id in the pipeline file. */
  readonly id: string;
  /** The run's pending-work accounting (the one every stage of the run shares). */
  readonly flow: Flow;
  /** The started services this one listed in `uses:`, by slot name; started before it, stopped after it. */
  readonly services: V;
  /**
   * Logs a line about the service at the level the caller states: a problem that does not stop it
   * (`warn`), or a state change worth knowing (`info`).
   */
  report(message: string, level: LogLevel): void;
  /** Fails the run: the service broke after it started (a server that stopped listening). */
  fail(err: unknown): void;
}

/** A started service: what its users get, and how it stops. */
export interface RunningService<T> {
  readonly value: T;
  /** Stops the service; the runner calls it once, after every user has stopped. */
  stop(): Promise<void>;
}

/**
 * A service type: a named, typed, lifecycle-managed object a pipeline file declares under
 * `services:` (a node's identity, a replica set, a Storage Node, a server) and stages `use`. The
 * runner starts services before the stages (a service after the services it uses), injects them,
 * and stops them after every stage has stopped, in reverse order, also when the run failed.
 */
export interface ServiceType<S extends SettingsSpec = SettingsSpec, U extends ServiceUses = ServiceUses, T = unknown> {
  readonly kind: 'service';
  /** The name written as `type:` in a `services:` entry. */
  readonly name: string;
  /** One sentence for `hd` listings and docs. */
  readonly doc: string;
  readonly settings: S;
  /** The services this one uses, by slot name. */
  readonly uses?: U;
  /**
   * A server (the DMS, the Proxy, hd_sql, the SCC's query dispatch) works for clients outside the
   * pipeline, so no stage needs to use it. Any other service that nothing uses is a load problem.
   */
  readonly server?: boolean;
  /** Starts the service; a rejection fails the run before any stage starts. */
  start(config: ConfigOf<S>, ctx: ServiceContext<ServicesOf<U>>): Promise<RunningService<T>>;
}

/** What a service type gives its users. */
export type ServiceValueOf<X> = X extends ServiceType<SettingsSpec, ServiceUses, infer T> ? T : never;

/** The element type a stage type takes, or undefined for a source. */
export function inputOf(t: StageType): ElementType | undefined {
  return t.kind === 'source' ? undefined : t.input;
}

/** The element type a stage type gives, or undefined for a sink. */
export function outputOf(t: StageType): ElementType | undefined {
  return t.kind === 'sink' ? undefined : t.output;
}

/** A set of stage and service types by name. */
export class Registry {
  private readonly types = new Map<string, StageType>();
  private readonly serviceTypes = new Map<string, ServiceType>();

  /** Adds a stage or service type; a name can be registered once (stages and services share names). */
  register<S extends SettingsSpec, U extends ServiceUses, Out extends ElementType>(t: SourceType<S, U, Out>): this;
  register<S extends SettingsSpec, U extends ServiceUses, In extends ElementType, Out extends ElementType>(t: OperatorType<S, U, In, Out>): this;
  register<S extends SettingsSpec, U extends ServiceUses, In extends ElementType>(t: SinkType<S, U, In>): this;
  register<S extends SettingsSpec, U extends ServiceUses, T>(t: ServiceType<S, U, T>): this;
  register(t: { readonly kind: StageKind | 'service'; readonly name: string }): this {
    if (this.types.has(t.name) || this.serviceTypes.has(t.name)) throw new Error(`stage or service type '${t.name}' is already registered`);
    if (t.kind === 'service') this.serviceTypes.set(t.name, t as unknown as ServiceType);
    else this.types.set(t.name, t as unknown as StageType);
    return this;
  }

  /** The service type called `name`, if registered. */
  service(name: string): ServiceType | undefined {
    return this.serviceTypes.get(name);
  }

  /** Registered service type names, sorted. */
  serviceNames(): string[] {
    return [...this.serviceTypes.keys()].sort();
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
