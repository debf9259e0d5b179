/**
 * runQuery and the placing's answer: in direct SCC mode a run whose batches all arrived before the
 * SCC's Dispatch answer ends without waiting for it; a route whose answer counts (Proxy mode), or a
 * query of no batches, still waits. Results are handled in order, partials given to onPartial.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchID } from '../../engine-rs/batchId';
import { Schema } from '../../engine-rs/schema';
import type { QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import type { DispatchReply } from '../../query/dispatch/dispatchService';
import type { AggregatePartial, HdQuery } from '../../query/hdQuery';
import type { QueryResultHandler, ResultListener } from '../../hdwp/resultListener';
import { QueryAccounting } from '../../sdk/queryAccounting';
import { directRoute } from '../../sdk/queryRoutes';
import { runQuery, type QueryRoute, type RunContext } from '../../sdk/queryRun';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const schema = Schema.parse(readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8'));
const B = (n: number): string => n.toString(16).padStart(128, '0');
const query = (batchIds: string[]): HdQuery => ({ queryId: 9, dataset: 'flows', batchIds, subQueries: [], targets: [], verifyHash: false, queryQos: 1, returnAddress: { host: '127.0.0.1', port: 1 }, token: Buffer.alloc(16, 1) });

/** A listener that hands every batch of the query to the run's handler as soon as it is opened. */
function deliveringListener(ids: string[], partial?: AggregatePartial): ResultListener {
  return {
    open: (_auth: unknown, handler: QueryResultHandler) => {
      void (async () => {
        for (const [i, hex] of ids.entries()) {
          await handler({ kind: 'batch', queryId: 9, batchId: BatchID.fromHex(hex), recordSize: 150, count: 0, declaredCount: 1, records: [], ...(partial && i === 0 ? { aggregate: partial } : {}), node: 'sn' });
        }
      })();
      return { queryId: 9, completed: new Set<string>(), batchErrors: () => [], close: () => undefined };
    },
  } as unknown as ResultListener;
}

function context(listener: ResultListener, accounting: QueryAccounting, partials: string[]): RunContext {
  return {
    listener,
    accounting,
    counters: { queries: 0, batches: 0, records: 0, bytes: 0, batchErrors: 0 },
    schema,
    onPartial: (p, hex) => void partials.push(`${hex.slice(-1)}:${p.groups.length}`),
    timeoutMs: 0,
    log: () => undefined,
    onStart: () => undefined,
  };
}

/** A dispatch client whose answer comes only when `answer` is called. */
function heldScc(): { scc: QueryDispatchClient; answer: (r: DispatchReply) => void; calls: () => number } {
  let answer!: (r: DispatchReply) => void;
  let calls = 0;
  const scc = {
    dispatch: () => {
      calls++;
      return new Promise<DispatchReply>((resolve) => (answer = resolve));
    },
  } as unknown as QueryDispatchClient;
  return { scc, answer: (r) => answer(r), calls: () => calls };
}

const t = suite('runQuery and the Dispatch answer');

t('direct mode: every batch arrived before the answer, so the run ends without it', async () => {
  const ids = [B(1), B(2), B(3)];
  const accounting = new QueryAccounting();
  const held = heldScc();
  const partials: string[] = [];
  const partial: AggregatePartial = { v: 2, groups: [{ k: [], m: ['3'] }], batches: ids.map((h) => [h, 1] as const) };
  const run = runQuery(context(deliveringListener(ids, partial), accounting, partials), query(ids), directRoute({ host: 'h', port: 1 }, accounting, held.scc), async () => undefined);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([run, new Promise((r) => (timer = setTimeout(() => r('still waiting for the answer'), 2000)))]);
  clearTimeout(timer);
  assert.is(outcome, 'complete');
  assert.is(held.calls(), 1);
  assert.equal(accounting.foundBatchIds(), ids);
  assert.equal(partials, ['1:1'], 'the partial once, under its first batch');
  held.answer({ queryId: 9, batches: 3, nodes: ['sn'], missingBatchIds: [] });
});

t('a route whose answer counts is waited for, even with every batch in', async () => {
  const ids = [B(1), B(2)];
  const accounting = new QueryAccounting();
  let answer!: () => void;
  const route: QueryRoute = {
    dispatch: () => {
      accounting.expect(ids);
      return new Promise<void>((resolve) => (answer = resolve));
    },
    cancel: async () => 'x',
    close: () => undefined,
  };
  let ended = false;
  const run = runQuery(context(deliveringListener(ids), accounting, []), query(ids), route, async () => undefined).then((o) => {
    ended = true;
    return o;
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.is(ended, false, 'still waiting for the answer');
  answer();
  assert.is(await run, 'complete');
});

t('direct mode with expectations set by the caller: the answer is waited for (it may name batches outside them)', async () => {
  const ids = [B(1)];
  const accounting = new QueryAccounting();
  accounting.expect(ids);
  const held = heldScc();
  let ended = false;
  const run = runQuery(context(deliveringListener(ids), accounting, []), query([B(1), B(2)]), directRoute({ host: 'h', port: 1 }, accounting, held.scc), async () => undefined).then((o) => {
    ended = true;
    return o;
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.is(ended, false);
  held.answer({ queryId: 9, batches: 1, nodes: ['sn'], missingBatchIds: [B(2)] });
  assert.is(await run, 'complete');
  assert.equal(accounting.batchErrors().map((e) => e.batchId), [B(2)], 'the answer still counts');
});

t.run();
