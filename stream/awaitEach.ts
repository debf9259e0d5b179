import type { OperatorFunction } from 'rxjs';
import { Flow } from './flow';
import { operate } from './operate';

/**
 * Runs `fn` on each element, one at a time in arrival order, awaiting it before the next, and emits
 * the elements it returns. This is `concatMap` with the pipeline's {@link Flow} accounting: an element
 * holds one unit of pending work from arrival until its results have been emitted, so pulling sources
 * wait for it. Elements still queued when the subscriber unsubscribes are released, never run.
 *
 * @example
 * source$.pipe(awaitEach(async (chunk) => [await transform(chunk)], flow))
 */
export function awaitEach<T, R>(fn: (x: T) => Promise<readonly R[]> | readonly R[], flow: Flow = new Flow()): OperatorFunction<T, R> {
  return awaitEachOf(() => ({ step: fn }), flow);
}

/** The steps of {@link awaitEachOf}: made per subscription, so state they close over is that subscription's. */
export interface EachSteps<T, R> {
  /** Handles one element; what it returns is emitted before the next element runs. */
  step(x: T): Promise<readonly R[]> | readonly R[];
  /** Runs once after the last element (in the same queue, holding a unit of the Flow); what it returns is emitted before completion. */
  end?(): Promise<readonly R[]> | readonly R[];
}

/**
 * {@link awaitEach} whose step is built by `init` on every subscription ({@link operate}): an operator
 * keeps its state (carried bytes, open batches, queue figures) inside `init`, never in the operator
 * function, so two subscriptions never share it.
 *
 * @example
 * awaitEachOf(() => { let n = 0; return { step: (c) => [++n], end: () => [n] }; }, flow)
 */
export function awaitEachOf<T, R>(init: () => EachSteps<T, R>, flow: Flow = new Flow()): OperatorFunction<T, R> {
  /** The queue's marker for the end of input. */
  const END = Symbol('end');
  return operate<T, R>(({ destination, isActive }) => {
    const steps = init();
    const queue: (T | typeof END)[] = [];
    let running = false;
    let sourceDone = false;

    const drain = async (): Promise<void> => {
      running = true;
      while (isActive() && queue.length > 0) {
        const x = queue.shift() as T | typeof END;
        let out: readonly R[];
        try {
          out = x === END ? await (steps.end as () => Promise<readonly R[]> | readonly R[])() : await steps.step(x);
        } catch (err) {
          flow.end();
          if (isActive()) destination.error(err);
          return;
        }
        if (!isActive()) {
          flow.end();
          return;
        }
        for (const r of out) destination.next(r);
        flow.end();
      }
      running = false;
      if (sourceDone && isActive()) destination.complete();
    };
    const enqueue = (x: T | typeof END): void => {
      flow.begin();
      queue.push(x);
      if (!running) void drain();
    };

    return {
      next: enqueue,
      complete: () => {
        sourceDone = true;
        if (steps.end) enqueue(END);
        else if (!running) destination.complete();
      },
      // Release what never ran, so a torn-down pipeline's Flow does not stay blocked.
      finalize: () => {
        for (let i = 0; i < queue.length; i++) flow.end();
        queue.length = 0;
      },
    };
  });
}
