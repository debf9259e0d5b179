import { Observable } from 'rxjs';
import type { Flow } from './flow';

/**
 * Turns an async iterable (made afresh for each subscriber) into a pulling Observable: it asks for the next element only after the
 * previous one was emitted and the pipeline's {@link Flow} has at most `maxPending` units of work
 * pending, so a slow sink slows the source instead of filling memory (docs/pipelines.md,
 * "Backpressure"). Unsubscribing stops the loop and calls the iterator's `return()`, which closes
 * whatever the iterable holds open.
 */
export function pull<T>(make: () => AsyncIterable<T>, flow: Flow, maxPending: number): Observable<T> {
  return new Observable<T>((subscriber) => {
    let active = true;
    const it = make()[Symbol.asyncIterator]();
    const loop = async (): Promise<void> => {
      try {
        while (active) {
          const r = await it.next();
          if (!active) return;
          if (r.done) {
            subscriber.complete();
            return;
          }
          subscriber.next(r.value);
          await flow.whenAtMost(maxPending);
        }
      } catch (err) {
        if (active) subscriber.error(err);
      }
    };
    void loop();
    return () => {
      active = false;
      // Async generators queue return() behind a pending next(), so the source closes after its read.
      void it.return?.()?.catch(() => undefined);
    };
  });
}
