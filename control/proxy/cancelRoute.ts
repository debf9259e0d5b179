/**
 * `POST /v1/query/cancel` (ours; the reference's `POST /v1/query/stop` answers 410 and cancels
 * nothing): a client in Proxy mode cancels a query it placed through the Proxy. The Proxy relays
 * the gRPC CancelQuery to the SCC that took the query (the result event's `dispatch.scc`), or to
 * every SCC of the primary cluster when the body names none, over the Proxy's own mutual TLS. So a
 * client that holds no DMS-CA certificate, or cannot reach the SCCs' gRPC ports, can still stop
 * its query on every Storage Node.
 *
 * Body: `{ "query_id": 42, "token": "<32 hex digits>", "scc": "scc-1" }` (`scc` optional). The query
 * id and its 128-bit token are the proof: only the client that placed the query holds the token.
 * Answers `{ "cancelled": true, "scc": "scc-1", "nodes": 2 }`; 404 `not_found` when no SCC runs a
 * query of that id and token.
 */
import * as grpc from '@grpc/grpc-js';
import { DispatchError } from '../../query/dispatch/dispatchClient';
import { DEFAULT_QUERY_GRPC_PORT } from '../../query/dispatch/dispatchService';
import { asObject, onlyKeys, optString, reqString } from '../http/body';
import { HttpError } from '../http/errors';
import type { SccAddress } from '../api';
import { httpErrorOf, type SccDispatcher } from './dispatch';

/** What a cancel answered. */
export interface CancelOutcome {
  readonly cancelled: boolean;
  /** The SCC that had the query. */
  readonly scc: string;
  /** Storage Nodes told to stop. */
  readonly nodes: number;
}

/** What the route works with. */
export interface CancelRouteDeps {
  readonly targets: () => readonly SccAddress[];
  readonly dispatcher: Pick<SccDispatcher, 'cancel'>;
}

const TOKEN = /^[0-9a-fA-F]{32}$/;

/** Validates a cancel body and relays it; see the module doc. */
export async function handleCancel(body: unknown, deps: CancelRouteDeps): Promise<CancelOutcome> {
  const o = asObject(body);
  onlyKeys(o, ['query_id', 'token', 'scc']);
  const id = o.query_id;
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffff_ffff) throw new HttpError('invalid_request', `'query_id' must be an integer 0..4294967295 (the id the query was placed with), got ${JSON.stringify(id)}`);
  const token = reqString(o, 'token', { pattern: TOKEN, patternDoc: "the query's token: 32 hex digits" });
  const named = optString(o, 'scc', { max: 256 });
  const all = deps.targets();
  if (all.length === 0) throw new HttpError('upstream_unavailable', 'no SCC of the primary cluster is known (the DMS topology names none)');
  const targets = named === undefined ? all : all.filter((t) => t.name === named);
  if (targets.length === 0) throw new HttpError('not_found', `no SCC named '${named}' in the primary cluster (known: ${all.map((t) => t.name).join(', ')})`);
  const failures: string[] = [];
  for (const t of targets) {
    try {
      const r = await deps.dispatcher.cancel(t, id, token);
      return { cancelled: r.cancelled, scc: t.name, nodes: r.nodes };
    } catch (err) {
      if (!(err instanceof DispatchError)) throw err;
      if (err.code === grpc.status.NOT_FOUND) continue;
      if (err.code !== grpc.status.UNAVAILABLE) throw httpErrorOf(err, t.name);
      failures.push(`${t.name} (${t.host}:${t.grpc_port ?? DEFAULT_QUERY_GRPC_PORT}): ${err.details}`);
    }
  }
  if (failures.length > 0) throw new HttpError('upstream_unavailable', `could not reach ${failures.join('; ')} to cancel query ${id}`);
  throw new HttpError('not_found', `no query ${id} with that token runs on ${targets.map((t) => t.name).join(', ')} (it may have finished)`);
}
