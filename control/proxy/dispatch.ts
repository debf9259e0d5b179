/**
 * How the Proxy hands a rewritten query to the SCCs: one small interface, and its gRPC implementation
 * over the SCC's QueryDispatch service (docs/query.md, "Dispatch"). The first SCC target of the
 * primary cluster gets the query; an SCC that is UNAVAILABLE hands over to the next.
 */
import * as grpc from '@grpc/grpc-js';
import { DispatchError, QueryDispatchClient } from '../../query/dispatchClient';
import { DEFAULT_QUERY_GRPC_PORT } from '../../query/dispatchService';
import { HttpError } from '../http/errors';
import type { SccAddress } from '../dms/topology';

/** What an SCC answered. */
export interface DispatchOutcome {
  /** The SCC that took the query. */
  readonly scc: string;
  readonly batches: number;
  readonly nodes: readonly string[];
  readonly missing_batch_ids: readonly string[];
}

/** Sends HDQuery JSON to one of `targets`. */
export interface SccDispatcher {
  dispatch(targets: readonly SccAddress[], queryJson: string): Promise<DispatchOutcome>;
  close(): void;
}

/** Maps a gRPC failure to the HTTP error the Proxy answers. */
export function httpErrorOf(err: DispatchError, scc: string): HttpError {
  switch (err.code) {
    case grpc.status.INVALID_ARGUMENT:
    case grpc.status.FAILED_PRECONDITION:
      return new HttpError('invalid_query', `${scc}: ${err.details}`);
    case grpc.status.NOT_FOUND:
      return new HttpError('unknown_dataset', `${scc}: ${err.details}`);
    case grpc.status.DEADLINE_EXCEEDED:
      return new HttpError('query_timeout', `${scc} did not answer the dispatch in time: ${err.details}`);
    case grpc.status.RESOURCE_EXHAUSTED:
      return new HttpError('not_ready', `${scc} admits no more queries now: ${err.details}`);
    default:
      return new HttpError('upstream_unavailable', `${scc}: ${err.status}: ${err.details}`);
  }
}

/** {@link SccDispatcher} over gRPC, one channel per SCC address, kept open. */
export class GrpcSccDispatcher implements SccDispatcher {
  private readonly clients = new Map<string, QueryDispatchClient>();

  /** @param opts channel credentials (mTLS when the SCCs serve it) and the per-call deadline */
  constructor(private readonly opts: { credentials?: grpc.ChannelCredentials; deadlineMs: number }) {}

  private client(t: SccAddress): QueryDispatchClient {
    const address = `${t.host}:${t.grpc_port ?? DEFAULT_QUERY_GRPC_PORT}`;
    let c = this.clients.get(address);
    if (!c) {
      c = new QueryDispatchClient(address, { credentials: this.opts.credentials, deadlineMs: this.opts.deadlineMs });
      this.clients.set(address, c);
    }
    return c;
  }

  async dispatch(targets: readonly SccAddress[], queryJson: string): Promise<DispatchOutcome> {
    if (targets.length === 0) throw new HttpError('upstream_unavailable', 'no SCC of the primary cluster is known (the DMS topology names none)');
    const failures: string[] = [];
    for (const t of targets) {
      try {
        const r = await this.client(t).dispatch(queryJson);
        return { scc: t.name, batches: r.batches, nodes: r.nodes, missing_batch_ids: r.missingBatchIds };
      } catch (err) {
        if (!(err instanceof DispatchError)) throw err;
        // Only an SCC that cannot be reached hands over; any other answer is the query's fate.
        if (err.code !== grpc.status.UNAVAILABLE) throw httpErrorOf(err, t.name);
        failures.push(`${t.name} (${t.host}:${t.grpc_port ?? DEFAULT_QUERY_GRPC_PORT}): ${err.details}`);
      }
    }
    throw new HttpError('upstream_unavailable', `no SCC took the query: ${failures.join('; ')}`);
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
