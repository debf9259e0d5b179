/**
 * The query client's two {@link QueryRoute}s: direct SCC mode (gRPC Dispatch to the first SCC
 * target) and Proxy mode (`POST /v1/query` at the Proxy, which rewrites and dispatches; the client
 * cancels at the SCC the Proxy names, or at every SCC the topology names).
 */
import type * as grpc from '@grpc/grpc-js';
import { DEFAULT_QUERY_GRPC_PORT } from '../query/dispatch/dispatchService';
import { QueryDispatchClient } from '../query/dispatch/dispatchClient';
import { serializeHdQuery, type HdQuery } from '../query/hdQuery';
import type { ProxyResultEvent } from './proxyClient';
import type { QueryAccounting } from './queryAccounting';
import type { QueryRoute } from './queryRun';
import { targetName, type SccTarget } from './sccTargets';

/** `host:port` of an SCC target's QueryDispatch service. */
export function dispatchAddressOf(t: SccTarget): string {
  return `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.grpcPort ?? DEFAULT_QUERY_GRPC_PORT}`;
}

/** A gRPC QueryDispatch client for an SCC target; `credentials` for mutual TLS (sdk/grpcCredentials.ts), else plain. */
export function dispatchClientFor(t: SccTarget, credentials?: grpc.ChannelCredentials): QueryDispatchClient {
  return new QueryDispatchClient(dispatchAddressOf(t), credentials ? { credentials } : {});
}

/** Code of a BatchError for a batch the SCC found on no healthy replica. */
const NO_REPLICA = 13;

/**
 * Direct SCC mode: the query goes to the first target's gRPC port over `scc` (a channel the
 * caller keeps open across queries, query/dispatchChannels.ts); without an expectation, the
 * query's own batches are waited for — for a `time_window`, the batches the SCC resolved it to
 * (the reply's `batch_ids`), as Proxy mode waits for the result event's.
 */
export function directRoute(target: SccTarget, accounting: QueryAccounting, scc: QueryDispatchClient): QueryRoute {
  /** Whether the run waits for exactly the query's batches (no expectation set by the caller). */
  let ownExpectation = false;
  return {
    async dispatch(query) {
      const callerExpects = accounting.hasExpectation;
      const windowed = query.timeWindow !== undefined;
      ownExpectation = !callerExpects && !windowed;
      if (ownExpectation) accounting.expect(query.batchIds);
      const reply = await scc.dispatch(query);
      // Batches may have arrived before the reply: the accounting keeps them, and counts them against this list.
      if (windowed && !callerExpects) accounting.expect(reply.batchIds ?? []);
      for (const b of reply.missingBatchIds) accounting.batchFailed({ batchId: b, code: NO_REPLICA, message: 'no healthy replica holds this batch' });
    },
    async cancel(query) {
      await scc.cancelQuery(query.queryId, query.token);
      return targetName(target);
    },
    close: () => undefined,
    // Batches no replica holds are settled only by the answer: with every batch of the query settled, it names none.
    answerAddsNothingOnceComplete: () => ownExpectation,
  };
}

/** Records a result event's dispatch failures: batches no healthy replica holds. */
export function recordMissing(accounting: QueryAccounting, event: ProxyResultEvent): void {
  for (const b of event.dispatch.missing_batch_ids) accounting.batchFailed({ batchId: b.toLowerCase(), code: NO_REPLICA, message: `no healthy replica holds this batch (SCC ${event.dispatch.scc})`, node: event.dispatch.scc });
}

/**
 * The body of `POST /v1/query`: the query's wire form without the client-side target list; a
 * `start_time`/`end_time` window is sent as `start`/`end`, so the Proxy names the batches with the
 * DMS's schema.
 */
export function proxyQueryBody(query: HdQuery, window: { start: number; end: number } | undefined): Record<string, unknown> {
  const body = JSON.parse(serializeHdQuery(query)) as Record<string, unknown>;
  delete body.targets;
  if (window) {
    delete body.batch_ids;
    Object.assign(body, window);
  }
  return body;
}

/** What Proxy mode needs from the client. */
export interface ProxyRouteDeps {
  /** Places the query at the Proxy and records verdict and expected batches (submitQueryToProxy). */
  submit(query: HdQuery): Promise<ProxyResultEvent>;
  /** Asks the Proxy to cancel (POST /v1/query/cancel) at `scc`, or at every SCC when undefined; resolves with the SCC that had it. */
  cancelAtProxy(query: HdQuery, scc: string | undefined): Promise<string>;
  /** The SCCs to cancel at directly when the Proxy cannot: the one named `scc` when known, else every SCC of the topology. */
  cancelTargets(scc: string | undefined): Promise<SccTarget[]>;
  /** Mutual TLS toward the SCCs (the cancel goes there); absent: plain gRPC. */
  readonly credentials?: grpc.ChannelCredentials;
}

/**
 * Proxy mode: the Proxy places the query, and cancels it (POST /v1/query/cancel relays CancelQuery
 * to the SCC with the Proxy's certificate, so a client without one can cancel at a registered
 * SCC). When the Proxy cannot (an older Proxy without the route, or no answer), the cancel goes
 * straight to the SCCs.
 */
export function proxyRoute(deps: ProxyRouteDeps): QueryRoute {
  let event: ProxyResultEvent | undefined;
  return {
    async dispatch(query) {
      event = await deps.submit(query);
    },
    async cancel(query) {
      let viaProxy: string;
      try {
        return `${await deps.cancelAtProxy(query, event?.dispatch.scc)} (through the Proxy)`;
      } catch (err) {
        viaProxy = (err as Error).message;
      }
      const targets = await deps.cancelTargets(event?.dispatch.scc);
      if (targets.length === 0) throw new Error('the Proxy names no SCC to cancel at (GET /v1/topology has no scc_targets)');
      const results = await Promise.allSettled(
        targets.map(async (t) => {
          const c = dispatchClientFor(t, deps.credentials);
          try {
            await c.cancelQuery(query.queryId, query.token);
          } finally {
            c.close();
          }
        }),
      );
      const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [`${targetName(targets[i] as SccTarget)}: ${(r.reason as Error).message}`] : []));
      if (failed.length === targets.length) throw new Error(`${viaProxy}; then directly: ${failed.join('; ')}`);
      return targets.map(targetName).join(', ');
    },
    close: () => undefined,
  };
}
