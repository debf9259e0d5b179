import { Observable, type OperatorFunction } from 'rxjs';
import { Flow } from './flow';

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
  return (source) =>
    new Observable<R>((subscriber) => {
      const queue: T[] = [];
      let running = false;
      let sourceDone = false;
      let active = true;

      const drain = async (): Promise<void> => {
        running = true;
        while (active && queue.length > 0) {
          const x = queue.shift() as T;
          let out: readonly R[];
          try {
            out = await fn(x);
          } catch (err) {
            flow.end();
            if (active) subscriber.error(err);
            return;
          }
          if (!active) {
            flow.end();
            return;
          }
          for (const r of out) subscriber.next(r);
          flow.end();
        }
        running = false;
        if (sourceDone && active) subscriber.complete();
      };

      const upstream = source.subscribe({
        next: (x) => {
          flow.begin();
          queue.push(x);
          if (!running) void drain();
        },
        error: (err) => subscriber.error(err),
        complete: () => {
          sourceDone = true;
          if (!running) subscriber.complete();
        },
      });

      return () => {
        active = false;
        upstream.unsubscribe();
        // Release what never ran, so a torn-down pipeline's Flow does not stay blocked.
        for (let i = 0; i < queue.length; i++) flow.end();
        queue.length = 0;
      };
    });
}
