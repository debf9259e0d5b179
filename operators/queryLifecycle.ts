/**
 * The lifecycle every {@link RunningQuery} shares: stopped once (the first reason wins, through an
 * AbortSignal the scan and the result stream watch), ended once.
 */
import type { QueryStop, RunningQuery } from '../stream/queryElement';

/** Stop and end of a running query; subclasses add where it came from and where replies go. */
export abstract class QueryLifecycle implements Pick<RunningQuery, 'signal' | 'ended' | 'stop' | 'end'> {
  private readonly controller = new AbortController();
  private done = false;
  private resolveFinished!: () => void;
  /** Resolves once the query ended. */
  readonly finished = new Promise<void>((resolve) => (this.resolveFinished = resolve));

  /** Aborts (with a {@link QueryStop} as its reason) when the query is stopped. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True once {@link end} was called. */
  get ended(): boolean {
    return this.done;
  }

  /** Stops the query; the first reason wins. */
  stop(reason: QueryStop): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** The query is over on this node; later calls do nothing. */
  end(): void {
    if (this.done) return;
    this.done = true;
    this.onEnd();
    this.resolveFinished();
  }

  /** Called once, when the query ends. */
  protected onEnd(): void {
    // Nothing by default.
  }
}
