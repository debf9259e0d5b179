/**
 * The body of a standalone service stage (the DMS, the Proxy): starts the service when the run
 * starts, and closes it when the stage's input completes (the run stops) or on teardown. A service
 * that fails to start fails the run with its message.
 */
import { Observable } from 'rxjs';
import type { Chunk } from '../../stream/chunk';
import type { SinkFunction, StageContext } from '../../pipelines/registry';

/** A running service. */
export interface RunningService {
  close(): Promise<void>;
}

/** A sink function that runs the service `start` makes for the lifetime of the run. */
export function serviceSink(start: () => Promise<RunningService>, ctx: StageContext): SinkFunction {
  return (input: Observable<Chunk>) =>
    new Observable<never>((subscriber) => {
      let service: RunningService | undefined;
      let closing: Promise<void> | undefined;
      let stopRequested = false;
      const close = (): Promise<void> => (closing ??= service ? service.close() : Promise.resolve());
      const finish = (): void => {
        close().then(
          () => subscriber.complete(),
          (err: unknown) => subscriber.error(err),
        );
      };
      start().then(
        (s) => {
          service = s;
          // The run was stopped while the service was starting.
          if (stopRequested) finish();
        },
        (err: unknown) => subscriber.error(err),
      );
      // Elements are not expected (the stage stands alone); completion is the stop signal.
      const sub = input.subscribe({
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          stopRequested = true;
          if (service) finish();
        },
      });
      return () => {
        stopRequested = true;
        sub.unsubscribe();
        if (service) ctx.trackTeardown(close());
      };
    });
}
