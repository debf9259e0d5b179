import { Observable, type OperatorFunction, type Subscriber } from 'rxjs';

/**
 * What an operator does with its source's notifications, made afresh for every subscription by
 * the `init` of {@link operate}. `next`, `error` and `complete` run only while the subscription is
 * active; one that throws errors the destination. Without `error` / `complete` the notification is
 * forwarded as is.
 */
export interface OperatorHooks<T> {
  next(value: T): void;
  error?(err: unknown): void;
  complete?(): void;
  /** Frees the subscription's state: runs once, on unsubscribe, error or completion. */
  finalize?(): void;
}

/** What {@link operate}'s `init` gets: the subscriber to emit to, and whether the subscription is still live. */
export interface OperateContext<R> {
  readonly destination: Subscriber<R>;
  /** False once the subscription is torn down (timers and settled promises check it before emitting). */
  isActive(): boolean;
}

/**
 * The one shape of every operator (as rxjs's own `operate`): `init` runs **per subscription** and
 * returns the hooks, so an operator's state lives in that call and a second subscription (a `retry`,
 * a `share()` that resets) gets its own; the helper owns the `active` flag, routes what a hook
 * throws to the destination, forwards error and completion by default and runs `finalize` once at
 * teardown, after unsubscribing from the source.
 *
 * @example
 * const countRecords = (): OperatorFunction<Chunk, number> =>
 *   operate(({ destination }) => {
 *     let n = 0;
 *     return { next: (c) => (n += itemCount(c)), complete: () => (destination.next(n), destination.complete()) };
 *   });
 */
export function operate<T, R>(init: (ctx: OperateContext<R>) => OperatorHooks<T>): OperatorFunction<T, R> {
  return (source) =>
    new Observable<R>((destination) => {
      let active = true;
      const hooks = init({ destination, isActive: () => active });
      const guarded = (f: () => void): void => {
        if (!active) return;
        try {
          f();
        } catch (err) {
          if (active) destination.error(err);
        }
      };
      const upstream = source.subscribe({
        next: (v) => guarded(() => hooks.next(v)),
        error: (err) => guarded(() => (hooks.error ? hooks.error(err) : destination.error(err))),
        complete: () => guarded(() => (hooks.complete ? hooks.complete() : destination.complete())),
      });
      return () => {
        active = false;
        upstream.unsubscribe();
        hooks.finalize?.();
      };
    });
}
