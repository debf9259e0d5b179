/**
 * Catching up a replica that was down (docs/scc.md, "Catch-up"): once it answers again it is sent,
 * oldest first, every batch of the {@link CatchUpLog} it has not acknowledged, and counts as healthy
 * only when none is left. Each batch starts with a bbn so a partial copy from before the failure is
 * dropped, which makes a retry after another failure safe.
 */
import type { LogLevel } from '../../lib/logging';
import type { HdwpClient } from '../../hdwp/hdwpClient';
import type { CatchUpLog, LoggedBatch } from './catchUpLog';
import { isBatchRefusal, TIMEOUT, within, type Replica } from './replica';

/** What catch-up needs of the replica set it works for. */
export interface CatchUpContext {
  readonly log: CatchUpLog;
  /** How long one bbn / eob answer may take. */
  readonly ackTimeoutMs: number;
  /** The reconnect delay a replica starts again from once it is healthy. */
  readonly minBackoffMs: number;
  /** True once the replica set is closing: nothing more is started. */
  closed(): boolean;
  /** The replica's stream for a dataset, opened on demand. */
  client(r: Replica, dataset: string, recordSize: number): Promise<HdwpClient>;
  /** Marks the replica down (it is retried later). */
  fail(r: Replica, reason: string): void;
  /** Gives up on the replica: it missed a batch the log no longer holds. */
  outOfSync(r: Replica, reason: string): void;
  /** Reports the replica's lag after a change. */
  lag(r: Replica): void;
  /** State changes worth a log line. */
  event(message: string, level: LogLevel): void;
  /** Whether the node reports cold-boot synchronisation (false when nobody can tell). */
  syncing(r: Replica): Promise<boolean>;
}

/**
 * Reconnects a `down` replica and gives it every batch it is behind on, oldest first; marks it
 * healthy once none is left, or down again on any failure. Work of an older failure generation
 * (the replica failed again meanwhile) stops quietly.
 */
export async function catchUpReplica(ctx: CatchUpContext, r: Replica): Promise<void> {
  if (ctx.closed() || r.state !== 'down') return;
  const epoch = r.epoch;
  r.state = 'catching-up';
  r.reason = `catching up ${r.behind.size} batch(es)`;
  try {
    // Probe: a replica with nothing to catch up still has to answer before it counts as healthy.
    for (const [dataset, size] of r.datasets) await ctx.client(r, dataset, size);
    for (;;) {
      if (r.epoch !== epoch) return;
      const next = ctx.log.waitingFor(r.target.name).find((b) => r.behind.has(b.key));
      if (!next) break;
      await catchUpBatch(ctx, r, next, epoch);
    }
  } catch (err) {
    if (r.epoch === epoch) ctx.fail(r, `catch-up failed: ${(err as Error).message}`);
    return;
  }
  if (r.epoch !== epoch) return;
  // A node back from a restart may still be copying what it missed from its peers (cold-boot
  // synchronisation): it stays out of queries and acknowledgements until it reports ready.
  if (await ctx.syncing(r)) {
    if (r.epoch !== epoch) return;
    r.state = 'syncing';
    r.reason = 'caught up from the log; the node reports cold-boot synchronisation: no queries, its acknowledgements do not count until it is ready';
    r.since = Date.now();
    r.backoff = ctx.minBackoffMs;
    ctx.event(`replica ${r.target.name} is syncing (cold-boot synchronisation)`, 'info');
    return;
  }
  if (r.epoch !== epoch) return;
  r.state = 'healthy';
  r.reason = 'caught up';
  r.since = Date.now();
  r.backoff = ctx.minBackoffMs;
  ctx.lag(r);
  ctx.event(`replica ${r.target.name} is healthy again (caught up)`, 'info');
}

/**
 * One batch for a returning replica: a bbn first, so a partial copy from before the failure is
 * dropped (a Storage Node answers it with an echo, or refuses it when the batch is durable there
 * already — then the eob alone confirms it), then the records and the batch's end. A batch still
 * open goes live for the replica once its records so far are sent.
 */
async function catchUpBatch(ctx: CatchUpContext, r: Replica, b: LoggedBatch, epoch: number): Promise<void> {
  if (b.truncated) {
    ctx.outOfSync(r, `batch ${b.batchId.toString()} of '${b.dataset}' it missed is no longer in the catch-up log`);
    return;
  }
  const c = await ctx.client(r, b.dataset, b.recordSize);
  const limit = <T>(p: Promise<T>, what: string): Promise<T> =>
    within(p, ctx.ackTimeoutMs).then((x) => {
      if (x === TIMEOUT) throw new Error(`${what} of batch ${b.batchId.toString()} not answered within ${ctx.ackTimeoutMs} ms`);
      return x;
    });
  let durableThere = false;
  try {
    await limit(c.sendBbn(b.batchId, 'SCC catch-up: replacing a partial copy'), 'bbn');
  } catch (err) {
    if (!isBatchRefusal(err)) throw err;
    durableThere = true;
  }
  if (b.end?.kind === 'bbn') {
    ctx.log.done(b, r.target.name);
    // Unless the batch was sent again meanwhile (batch replace): the new copy is still owed.
    const now = ctx.log.get(b.dataset, b.batchId);
    if (now === undefined || now === b) r.behind.delete(b.key);
    return;
  }
  if (!durableThere) {
    for (let i = 0; i < b.chunks.length; i++) {
      await c.sendRecords(b.batchId, b.chunks[i]);
      if (r.epoch !== epoch) return;
      if (b.truncated) throw new Error(`batch ${b.batchId.toString()} was truncated in the catch-up log while being sent`);
    }
  }
  if (!b.end) {
    // Still open: from here on its records reach this replica live, in order after these.
    r.behind.delete(b.key);
    return;
  }
  try {
    await limit(c.sendEob(b.batchId, b.end.recordCount, b.end.closingHash), 'eob');
    r.acked++;
  } catch (err) {
    if (!isBatchRefusal(err)) throw err;
    // Left as it is: the sender already had its answer, and resending would repeat the refusal.
    ctx.event(`replica ${r.target.name} refused caught-up batch ${b.batchId.toString()}: ${err.message}`, 'warn');
  }
  r.behind.delete(b.key);
  ctx.log.done(b, r.target.name);
}
