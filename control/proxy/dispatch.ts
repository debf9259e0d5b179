/**
 * How the Proxy hands a rewritten query to the SCCs: one small interface, and its gRPC implementation
 * over the SCC's QueryDispatch service (docs/query.md, "Dispatch"). The first SCC target of the
 * primary cluster gets the query; an SCC that is UNAVAILABLE hands over to the next. An SCC the DMS
 * lists as registered (`mtls`) is called over mutual TLS with the Proxy's certificate, its own
 * certificate checked to name it; channels are remade when the Proxy's certificate renews.
 */
import * as grpc from '@grpc/grpc-js';
import { DispatchChannels } from '../../query/dispatch/dispatchChannels';
import { DispatchError, type QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import { DEFAULT_QUERY_GRPC_PORT } from '../../query/dispatch/dispatchService';
import { HttpError } from '../http/errors';
import { dispatchCredentials } from '../../net/grpcTls';
import type { MtlsIdentity, TlsMaterial } from '../../net/mtls';
import type { SccAddress } from '../api';

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
  /** Relays a gRPC CancelQuery to `target`; rejects with the {@link DispatchError} it got. */
  cancel(target: SccAddress, queryId: number, token: string): Promise<{ cancelled: boolean; nodes: number }>;
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

/** Options of {@link GrpcSccDispatcher}. */
export interface GrpcDispatcherOptions {
  /** Deadline of one call. */
  readonly deadlineMs: number;
  /** The Proxy's identity: needed for SCCs serving mutual TLS. */
  readonly identity?: MtlsIdentity;
  /** Mutual TLS to every SCC, not only those the DMS lists as registered (PROXY_DISPATCH_TLS). */
  readonly forceTls?: boolean;
}

/**
 * {@link SccDispatcher} over gRPC, one channel per SCC address, kept open (query/dispatchChannels.ts).
 * A renewed certificate or a new revocation list makes new channels for the calls after it; the
 * old ones close once any call on them has had its deadline.
 */
export class GrpcSccDispatcher implements SccDispatcher {
  private readonly channels: DispatchChannels;
  /** Counts the identity's updates: part of each channel's identity, so an update means new channels. */
  private generation = 0;
  private readonly onRenewed = (): void => void this.generation++;

  /** @param opts the per-call deadline and the identity mutual TLS is made with */
  constructor(private readonly opts: GrpcDispatcherOptions) {
    this.channels = new DispatchChannels(opts.deadlineMs + 1000);
    // A channel keeps the material it was made with; a renewed certificate (or CRL) needs new ones.
    opts.identity?.on('update', this.onRenewed);
  }

  private client(t: SccAddress): QueryDispatchClient {
    const address = `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.grpc_port ?? DEFAULT_QUERY_GRPC_PORT}`;
    const tls = this.opts.forceTls === true || t.mtls === true;
    const material: TlsMaterial | undefined = this.opts.identity?.material;
    if (tls && !material) throw new HttpError('upstream_unavailable', `${t.name} serves mutual TLS, and this Proxy has no certificate to present`);
    return this.channels.client(address, tls ? `tls ${t.name} ${this.generation}` : '', () => ({
      // The handshake names the SCC (SNI), whose certificate must carry that name.
      ...(tls && material && { credentials: dispatchCredentials(material, t.name), channelOptions: { 'grpc.ssl_target_name_override': t.name, 'grpc.default_authority': t.name } }),
      deadlineMs: this.opts.deadlineMs,
    }));
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

  async cancel(target: SccAddress, queryId: number, token: string): Promise<{ cancelled: boolean; nodes: number }> {
    const r = await this.client(target).cancelQuery(queryId, token);
    return { cancelled: r.cancelled, nodes: r.nodes };
  }

  close(): void {
    this.opts.identity?.off('update', this.onRenewed);
    this.channels.close();
  }
}
