/**
 * What the SCC's in-process query dispatch tests share (queryDispatcher.test.ts,
 * queryWindow.test.ts): the {@link QueryDispatchFailure} a dispatch is refused with, and a bounded
 * wait for what the stand-in nodes and the listener report.
 */
import * as assert from 'uvu/assert';
import { QueryDispatchFailure } from '../../../nodes/scc/queryDispatcher';

/** The {@link QueryDispatchFailure} `p` (a promise, or a call that throws or rejects) ends with; fails the test on anything else. */
export async function failure(p: Promise<unknown> | (() => unknown)): Promise<QueryDispatchFailure> {
  const e = await (typeof p === 'function' ? Promise.resolve().then(p) : p).then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.instance(e, QueryDispatchFailure, String(e));
  return e as QueryDispatchFailure;
}

/** Waits for `cond`; fails the test (instead of hanging it) after 20 s. */
export async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`condition not met within 20 s: ${cond.toString()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
