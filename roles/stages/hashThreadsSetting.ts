/**
 * HASH_THREADS (`hash_threads` of the SCC's `hashChain` and the Storage Node's `segmentStore`):
 * how many threads hash records in the process (issue #22, "Hashing on every core"). Record hashes
 * are independent, so engine-rs hashes an update's whole records on this many threads while the
 * chain's own thread chains the block hashes in order; the hashes are the same for any count. Not
 * a reference variable (the reference names none for hashing threads).
 */
import { availableParallelism } from 'node:os';
import { setHashThreads } from '../../engine-rs/hashChain';
import type { Observability } from '../../lib/observability';
import { int, type Setting } from '../../pipelines/settings';

/** The setting: 0 (the default) is one thread per core the process may use. */
export function hashThreadsSetting(): Setting<number> {
  return int({ doc: 'threads hashing records in this process — HASH_THREADS; 0: one per core it may use (os.availableParallelism); 1: each chain on its own thread only', default: 0, min: 0, max: 1024 });
}

/**
 * Sizes the process's hashing pool from the setting and shows the count in /health's `hashing`
 * part. Returns the count in force. The pool is per process: the last stage to start sets it.
 */
export function applyHashThreads(setting: number, observability: Observability): number {
  const threads = setHashThreads(setting > 0 ? setting : availableParallelism());
  observability.addHealthPart('hashing', () => ({ threads }));
  return threads;
}
